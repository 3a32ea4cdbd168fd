"""``bugcontext rerank``: :func:`bugcontext.build_table` over a Parquet file, streamed.

``bugcontext rerank IN.parquet --budget N|COL [--group-by COL] [--failure-files COL]
[--cost chars|tokens] [--encoding NAME] [--threads N] [--batch-rows N] --out OUT.parquet
[--summary OUT2.parquet]``

The file is read in record batches. **A group must be contiguous in the file** (the file
sorted or clustered by the key, as a grouped export writes it): the rows read so far are built
up to the start of the last group seen, and that group's rows are carried over to the next
batch, so a group that spans batch (or row-group) boundaries is built whole. A key that
appears again after its group ended is an error (exit 2). Without ``--group-by`` the whole file
is one build (and is read whole).

``OUT.parquet`` gets the decisions (one row per input row, in file order: ``group``, ``index``,
``rank``, ``selected``, ``order``, ``omission``, ``overlaps``, ``cost``); ``--summary`` writes
the per-group table, with ``first_row`` counted in the whole file. Both are written by
:mod:`bugcontext.core._writer` (a temporary file beside the target, renamed only when every group
was built: on any error or interruption nothing is written; a link is kept, a device or pipe
written in place, a folder or a read-only file refused). ``--out`` or ``--summary`` naming the
input, or both naming one file, is refused before any work (exit 2); an output that cannot be
written exits 1 (``cannot write OUT: reason``). A progress bar (tqdm, if installed) goes to
standard error when it is a terminal."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import TYPE_CHECKING, Any

from bugcontext.batch.table import build_table
from bugcontext.core._arguments import add_unit_options, whole_number
from bugcontext.core._extras import needs
from bugcontext.core._io import warn
from bugcontext.core._writer import AtomicFile, check_output, commit_all, refuse_same_files
from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import add_limit_option

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["add_rerank_parser"]

#: Rows per record batch read from the input file.
DEFAULT_BATCH_ROWS = 65_536


def _budget(text: str) -> int | str:
    """``--budget``: a whole number (:func:`~bugcontext.core._arguments.whole_number`: a number
    too long is an error, not a column name), or the name of a budget column."""
    digits = text.strip().lstrip("+-")
    return whole_number(-(2**63))(text) if digits.isascii() and digits.isdigit() else text


def add_rerank_parser(commands: Any) -> None:
    """Add the ``rerank`` subcommand to the command line's subparsers."""
    rerank = commands.add_parser(
        "rerank",
        help="rank and pack every group of a Parquet table of candidates",
        description="Run build_table over a Parquet file of candidates (columns path, start, end, "
        "content, reason, score), one build per group, and write the decisions as Parquet. "
        "The rows of a group must be contiguous in the file.",
    )
    rerank.add_argument("file", metavar="IN.parquet", help="the candidates, one per row")
    rerank.add_argument("--out", required=True, metavar="OUT.parquet", help="where to write the decisions")
    rerank.add_argument(
        "--summary", metavar="OUT.parquet", default=None, help="where to write the per-group summary"
    )
    rerank.add_argument(
        "--budget",
        required=True,
        type=_budget,
        metavar="N|COL",
        help="a budget, or the name of a budget column",
    )
    rerank.add_argument(
        "--group-by", metavar="COL", default=None, help="the group key column (default: one build)"
    )
    rerank.add_argument(
        "--failure-files",
        metavar="COL",
        default=None,
        help="a list<string> column of failing files per group",
    )
    add_unit_options(rerank, "chars")
    rerank.add_argument(
        "--threads",
        type=whole_number(1),
        default=None,
        metavar="N",
        help="worker threads (default: all cores)",
    )
    rerank.add_argument(
        "--batch-rows",
        type=whole_number(1),
        default=DEFAULT_BATCH_ROWS,
        metavar="N",
        help=f"rows per record batch read (default {DEFAULT_BATCH_ROWS})",
    )
    add_limit_option(rerank)
    rerank.set_defaults(run=_cmd_rerank)


def _shifted(exc: InvalidInputError, offset: int) -> InvalidInputError:
    """The same error with its row counted in the whole file."""
    if exc.index is None or offset == 0:
        return exc
    return type(exc)(exc.field, exc.problem, exc.index + offset)


class _Writer:
    """A Parquet output written by :class:`bugcontext.core._writer.AtomicFile` (a temporary file
    beside the target, put in place only when every group was built; a device or pipe is
    written in place). Every failure to write is ``OutputError`` naming the output."""

    def __init__(self, target: str) -> None:
        self.out = AtomicFile(target)
        self.writer: Any = None

    def write(self, table: pa.Table) -> None:
        with needs("table"):
            import pyarrow as pa
            import pyarrow.parquet as pq

        try:
            if self.writer is None:
                self.writer = pq.ParquetWriter(self.out.file, table.schema)
            self.writer.write_table(table)
        except (OSError, pa.ArrowException) as exc:
            raise self.out.error(exc) from exc

    def finish(self, empty_schema: pa.Schema | None) -> None:
        """Close the Parquet writer (a file with ``empty_schema`` if nothing was written)."""
        with needs("table"):
            import pyarrow as pa
            import pyarrow.parquet as pq

        try:
            if self.writer is None and empty_schema is not None:
                self.writer = pq.ParquetWriter(self.out.file, empty_schema)
            if self.writer is not None:
                writer, self.writer = self.writer, None
                writer.close()
        except (OSError, pa.ArrowException) as exc:
            raise self.out.error(exc) from exc

    def abort(self) -> None:
        """Drop the output (never raises)."""
        if self.writer is not None:
            try:
                self.writer.close()
            except Exception:  # the output is dropped anyway
                pass
            self.writer = None
        self.out.abort()


def _finish(writers: list[_Writer], schemas: list[pa.Schema | None], ok: bool) -> None:
    """Put every output in place when ``ok`` (after closing all of them), else drop them all;
    when one cannot be finished, the others are dropped too."""
    if not ok:
        for writer in writers:
            writer.abort()
        return
    try:
        for writer, schema in zip(writers, schemas, strict=False):
            writer.finish(schema)
        # Every output flushed to disk before any is renamed: a full disk replaces none.
        commit_all([writer.out for writer in writers])
    except BaseException:
        for writer in writers:
            writer.abort()
        raise


class _UsageError(Exception):
    """Bad input found by the command itself: one line on standard error, exit status 2."""


def _cmd_rerank(args: argparse.Namespace) -> int:
    try:
        return _rerank(args)
    except _UsageError as exc:
        warn(f"bugcontext rerank: {' '.join(str(exc).split())}")  # secrets redacted
        return 2


def _source_and_options(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The Parquet input of ``rerank`` and the options of its builds (:func:`build_table`),
    after the arguments and the outputs are checked (before any work)."""
    with needs("table"):
        import pyarrow as pa
        import pyarrow.parquet as pq

    if args.batch_rows < 1:
        raise _UsageError(f"--batch-rows must be >= 1, got {args.batch_rows}")
    # Before any work: no output over the input or the other output, none that cannot be written.
    # (standard output is not written: --out /dev/stdout is the one writer there)
    refuse_same_files(
        [("--out", args.out), ("--summary", args.summary)], [("the input", args.file)], streams=(2,)
    )
    check_output(args.out)
    if args.summary:
        check_output(args.summary)
    try:
        # A Parquet file is read by seeking: only a regular file (a named pipe would block).
        if not stat.S_ISREG(os.stat(args.file).st_mode):
            raise _UsageError(f"cannot read {header_path(args.file)}: not a regular file")
        source = pq.ParquetFile(args.file)
    except (OSError, pa.ArrowException) as exc:
        raise _UsageError(f"cannot read {args.file}: {exc}") from None
    cost: dict[str, Any] = {"unit": args.cost}
    if args.encoding is not None:
        cost["encoding"] = args.encoding
    options: dict[str, Any] = {
        "budget": args.budget,
        "group_by": args.group_by,
        "failure_files": args.failure_files,
        "cost": cost,
        "threads": args.threads,
        "limits": args.limits,
    }
    if args.group_by is not None and args.group_by not in source.schema_arrow.names:
        raise InvalidInputError(args.group_by, "is not a column of the table")
    return source, options


def _rerank(args: argparse.Namespace) -> int:
    with needs("table"):
        import pyarrow as pa
        import pyarrow.compute as pc
    source, options = _source_and_options(args)

    decisions_out = _Writer(args.out)
    try:
        summary_out = _Writer(args.summary) if args.summary else None
    except BaseException:
        decisions_out.abort()
        raise
    writers = [decisions_out] if summary_out is None else [decisions_out, summary_out]
    bar = _progress(source.metadata.num_rows)
    ok = False
    seen: set[Any] = set()  # keys of the groups already built
    schemas: list[pa.Schema | None] = [None, None]

    def flush(pending: pa.Table, offset: int) -> None:
        try:
            result = build_table(pending, **options)
        except InvalidInputError as exc:
            raise _shifted(exc, offset) from None
        if args.group_by is not None:
            for key in _run_keys(pending, args.group_by):
                if key in seen:
                    raise _UsageError(
                        f"the input is not grouped by {args.group_by}: key {key!r} appears again "
                        f"after its group ended (sort the file by {args.group_by})"
                    )
                seen.add(key)
        groups = result.groups.set_column(
            1, "first_row", pc.add(result.groups.column("first_row"), pa.scalar(offset, pa.uint64()))
        )
        decisions_out.write(result.decisions)
        schemas[0] = result.decisions.schema
        if summary_out is not None:
            summary_out.write(groups)
            schemas[1] = groups.schema
        bar.update(pending.num_rows)

    try:
        carried: pa.Table | None = None
        offset = 0  # file row of the first carried row
        try:
            batches = source.iter_batches(batch_size=args.batch_rows)
            for batch in batches:
                pending = pa.Table.from_batches([batch])
                if carried is not None:
                    pending = pa.concat_tables([carried, pending])
                cut = _last_group_start(pending, args.group_by)
                if cut > 0:
                    flush(pending.slice(0, cut), offset)
                    offset += cut
                carried = pending.slice(cut)
        except (OSError, pa.ArrowException) as exc:
            raise _UsageError(f"cannot read {args.file}: {exc}") from None
        if carried is not None and (carried.num_rows or offset == 0):
            flush(carried, offset)
        elif carried is None:
            # An empty file: build the empty table (its schema) for the column checks.
            flush(source.schema_arrow.empty_table(), 0)
        ok = True
    finally:
        bar.close()
        _finish(writers, schemas, ok)
    return 0


def _comparable_keys(keys: pa.ChunkedArray) -> pa.ChunkedArray:
    """A key column of any type :func:`~bugcontext.build_table` accepts (integers; ``utf8``,
    ``large_utf8``, ``string_view`` or dictionary-encoded strings) as one that pyarrow's
    ``equal``, ``not_equal`` and ``take`` compare: a dictionary decoded to its values, a
    ``string_view`` cast to ``large_utf8`` (byte for byte; neither validates UTF-8).

    Raises:
        pyarrow.ArrowException: a dictionary index out of range."""
    with needs("table"):
        import pyarrow as pa
        import pyarrow.compute as pc

    if pa.types.is_dictionary(keys.type):
        keys = pc.cast(keys, keys.type.value_type)
    if pa.types.is_string_view(keys.type):
        keys = pc.cast(keys, pa.large_string())
    return keys


def _run_keys(table: pa.Table, group_by: str) -> list[Any]:
    """The key of every run of equal keys, in order."""
    with needs("table"):
        import pyarrow as pa
        import pyarrow.compute as pc

    keys = _comparable_keys(table.column(group_by))
    if len(keys) == 0:
        return []
    keys = keys.combine_chunks()
    changed = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_pylist()
    starts = [0, *(i + 1 for i, c in enumerate(changed) if c)]
    return list(keys.take(pa.array(starts, pa.int64())).to_pylist())


def _last_group_start(table: pa.Table, group_by: str | None) -> int:
    """The row where the last run of equal keys starts (0 without a key: read everything)."""
    if group_by is None or group_by not in table.column_names or table.num_rows == 0:
        return 0
    with needs("table"):
        import pyarrow as pa
        import pyarrow.compute as pc

    rows: int = table.num_rows
    try:
        keys = _comparable_keys(table.column(group_by))
    except pa.ArrowException:
        # Keys pyarrow cannot decode (a dictionary index out of range): build what was read,
        # which reports the first bad row.
        return rows
    last = keys[rows - 1]
    if not last.is_valid:
        return rows - 1  # a null key: reported by the build
    same = pc.equal(keys, last).to_pylist()
    cut = rows
    while cut > 0 and same[cut - 1]:
        cut -= 1
    return cut


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int) -> Any:
    """A tqdm bar on standard error when it is a terminal and tqdm is installed."""
    if not sys.stderr.isatty():
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, unit="rows", file=sys.stderr, desc="rerank")
