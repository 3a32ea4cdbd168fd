"""Columnar builds: many independent builds over the rows of one Arrow table.

:func:`build_table` takes candidates as the rows of a table (anything that exports the Arrow
PyCapsule interface: a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, a Polars
``DataFrame``, a DuckDB result) and runs one build per group of rows (a task, a query, a failing
test), in parallel in Rust, without making a Python object per candidate. For every group the
decisions are exactly those of :func:`bugcontext.build` on that group's rows taken in table
order as a list of candidates: a row's position within its group is its candidate index.

:func:`reference_build_table` is the executable specification, in pure Python over pyarrow:
it does literally that (``to_pylist`` per group, then :func:`bugcontext.core.reference.build`);
the differential tests hold the two equal. ``pyarrow`` is needed (imported on first use).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bugcontext import _core
from bugcontext.core._cut import shorten
from bugcontext.core._extras import needs
from bugcontext.core._input import PathProblem, canonical_path, clamp_u64
from bugcontext.core.cost import Cost
from bugcontext.core.errors import InvalidCandidateError, InvalidInputError, ResourceLimitError
from bugcontext.core.limits import Limits, clamp_threads, cores, limit_error, resolve

if TYPE_CHECKING:
    import pyarrow as pa

    from bugcontext.core.types import BuildResult

__all__ = ["CANDIDATE_COLUMNS", "TableResult", "build_table", "reference_build_table"]

#: The columns every input table has: one candidate per row.
CANDIDATE_COLUMNS = ("path", "start", "end", "content", "reason", "score")
_OMISSIONS = ("overlap", "budget")


class TableResult:
    """What :func:`build_table` returns: two ``pyarrow.Table`` objects.

    ``decisions`` has one row per input row, in input order (row ``i`` decides input row
    ``i``; the content is not carried: join on the position, or on ``(group, index)``):

    * ``group``: the row's group key (the ``group_by`` column as given; all null without
      ``group_by``);
    * ``index`` (uint32): the row's position within its group, its candidate index in the
      group's build;
    * ``rank`` (uint32): its 0-based position in the group's ranked order;
    * ``selected`` (bool);
    * ``order`` (uint32 or null): its position in the group's selection order, null if
      omitted;
    * ``omission`` (dictionary string or null): ``"overlap"`` or ``"budget"``, null if
      selected;
    * ``overlaps`` (uint32 or null): for an overlap, the ``index`` of the selected row of the
      same group it hits (the one with the smallest start);
    * ``cost`` (uint64): its cost in the cost model's unit.

    ``groups`` has one row per group, in order of first appearance in the input: ``group``
    (the key), ``first_row`` (uint64, the input row where the group first appears),
    ``candidates``, ``selected``, ``omitted_overlap``, ``omitted_budget`` (uint32 counts),
    ``used`` and ``budget`` (uint64, in the cost's unit; a budget above ``2**64 - 1`` is
    shown as that) and ``truncated`` (something was omitted).

    The result itself exports the decisions through the Arrow PyCapsule interface
    (``__arrow_c_stream__``), so ``pyarrow.table(result)`` and ``polars.DataFrame(result)``
    give the decisions table (``polars.from_arrow(result.decisions)`` too; ``from_arrow`` on the
    result itself makes a Series of structs). Results compare equal when both tables are equal.
    """

    __slots__ = ("decisions", "groups")

    decisions: pa.Table
    groups: pa.Table

    def __init__(self, decisions: pa.Table, groups: pa.Table) -> None:
        self.decisions = decisions
        self.groups = groups

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The decisions table as an Arrow C stream (a PyCapsule)."""
        return self.decisions.__arrow_c_stream__(requested_schema)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TableResult):
            return NotImplemented
        return bool(self.decisions.equals(other.decisions) and self.groups.equals(other.groups))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TableResult({self.decisions.num_rows} decisions, {self.groups.num_rows} groups)"


@dataclass(frozen=True)
class _Args:
    budget: int
    budget_column: str | None
    group_by: str | None
    failure_files: str | None
    cost: Cost
    threads: int | None


def _name(value: object, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidInputError(field, f"must be a column name or None, not {type(value).__name__}")


def _arguments(
    budget: object, group_by: object, failure_files: object, cost: object, threads: object
) -> _Args:
    if isinstance(budget, str):
        amount, column = 0, budget
    elif isinstance(budget, bool):
        raise InvalidInputError("budget", "must be an int or a column name, not bool")
    else:
        try:
            amount = operator.index(budget)  # type: ignore[arg-type]
        except TypeError:
            kind = type(budget).__name__
            raise InvalidInputError("budget", f"must be an int or a column name, not {kind}") from None
        if amount < 0:
            raise InvalidInputError("budget", f"must be >= 0, got {amount}")
        column = None
    model = Cost.parse(cost)
    if model.template is not None:
        raise InvalidInputError(
            "cost.template", "is not supported by build_table: a row costs its content alone"
        )
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise InvalidInputError("threads", f"must be an int or None, not {type(threads).__name__}")
        if threads < 1:
            raise InvalidInputError("threads", f"must be >= 1, got {threads}")
    return _Args(
        amount,
        column,
        _name(group_by, "group_by"),
        _name(failure_files, "failure_files"),
        model,
        threads,
    )


def _as_arrow(table: object) -> pa.Table:
    """The input as a ``pyarrow.Table`` (zero-copy where the exporter allows)."""
    with needs("table"):
        import pyarrow as pa

    if isinstance(table, pa.Table):
        return table
    if isinstance(table, pa.RecordBatch):
        return pa.Table.from_batches([table])
    if isinstance(table, pa.RecordBatchReader):
        return table.read_all()
    if hasattr(table, "__arrow_c_stream__"):
        return pa.table(table)
    if hasattr(table, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(table)])
    raise InvalidInputError(
        "table",
        "must export the Arrow PyCapsule interface (__arrow_c_stream__ or __arrow_c_array__), "
        f"not {type(table).__name__}",
    )


def _is_string(t: pa.DataType) -> bool:
    with needs("table"):
        import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_integer(t: pa.DataType) -> bool:
    with needs("table"):
        import pyarrow as pa

    return bool(pa.types.is_integer(t))


def _is_score(t: pa.DataType) -> bool:
    with needs("table"):
        import pyarrow as pa

    return bool(pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t))


def _is_key(t: pa.DataType) -> bool:
    return _is_integer(t) or _is_string(t)


def _is_string_list(t: pa.DataType) -> bool:
    with needs("table"):
        import pyarrow as pa

    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return False
    value = t.value_type
    return bool(
        pa.types.is_string(value) or pa.types.is_large_string(value) or pa.types.is_string_view(value)
    )


def _check_schema(schema: pa.Schema, args: _Args) -> None:
    """Every needed column is there, once, with a supported type (``InvalidInputError`` naming
    the column, ``index=None``)."""
    checks: list[tuple[str, Any, str]] = [
        ("path", _is_string, "a string"),
        ("start", _is_integer, "an integer"),
        ("end", _is_integer, "an integer"),
        ("content", _is_string, "a string"),
        ("reason", _is_string, "a string"),
        ("score", _is_score, "an integer or float32/float64"),
    ]
    if args.group_by is not None:
        checks.append((args.group_by, _is_key, "an integer or string"))
    if args.budget_column is not None:
        checks.append((args.budget_column, _is_integer, "an integer"))
    if args.failure_files is not None:
        checks.append((args.failure_files, _is_string_list, "a list<string>"))
    for name, accepts, kind in checks:
        found = schema.get_all_field_indices(name)
        if not found:
            raise InvalidInputError(name, "is not a column of the table")
        if len(found) > 1:
            raise InvalidInputError(name, "names more than one column of the table")
        dtype = schema.field(found[0]).type
        if not accepts(dtype):
            raise InvalidInputError(name, f"must be {kind} column, not {dtype}")


# ---------------------------------------------------------------------------------------------
# Arrow data: every string cell a build reads is valid UTF-8 within its column's buffers, and
# every dictionary index in range. A producer can hand any buffers (the C data interface and
# Parquet do not check them), so both engines check every cell they read, with the same
# messages, before reading any (a null cell is never read, and not checked).

_NOT_UTF8 = "is not valid UTF-8"
_OUT_OF_BOUNDS = "is not valid Arrow data: its offsets point outside the column's data"


def _bad_key(key: int, n: int) -> str:
    return f"has dictionary index {key}, out of range for {n} dictionary values"


def _decoded(payload: bytes) -> str | None:
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return _NOT_UTF8
    return None


def _cell_problems(array: pa.Array) -> list[str | None]:
    """Per cell of one chunk: why the cell is not valid Arrow data, or ``None`` (valid, or
    null). Arrow's own full validation first; cell by cell only where it fails (it is
    stricter: it also checks bytes no cell reads)."""
    with needs("table"):
        import pyarrow as pa

    n = len(array)
    try:
        array.validate(full=True)
    except pa.ArrowException:
        pass
    else:
        return [None] * n
    t = array.type
    valid = array.is_valid().to_pylist()
    out: list[str | None] = [None] * n
    if pa.types.is_dictionary(t):
        values = _cell_problems(array.dictionary)
        for i, key in enumerate(array.indices.to_pylist()):
            if key is not None:
                out[i] = values[key] if 0 <= key < len(values) else _bad_key(key, len(values))
        return out
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        offsets = array.offsets.to_pylist()
        items = _cell_problems(array.values)
        for i in range(n):
            start, end = offsets[i], offsets[i + 1]
            if not valid[i]:
                continue
            if start < 0 or start > end or end > len(items):
                out[i] = _OUT_OF_BOUNDS
                continue
            out[i] = next(
                (f"item {j - start}: {items[j]}" for j in range(start, end) if items[j] is not None),
                None,
            )
        return out
    buffers = array.buffers()
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        width = 4 if pa.types.is_string(t) else 8
        first = array.offset
        raw = memoryview(buffers[1] or b"")[first * width : (first + n + 1) * width]
        offsets = (raw.cast("i") if width == 4 else raw.cast("q")).tolist()
        data = memoryview(buffers[2] or b"")
        last = offsets[-1] if offsets else 0
        for i in range(n):
            if not valid[i]:
                continue
            start, end = offsets[i], offsets[i + 1]
            if start < 0 or start > end or end > last or end > len(data):
                out[i] = _OUT_OF_BOUNDS
            else:
                out[i] = _decoded(bytes(data[start:end]))
        return out
    if pa.types.is_string_view(t):
        views = memoryview(buffers[1] or b"")
        datas = [memoryview(b or b"") for b in buffers[2:]]
        for i in range(n):
            if not valid[i]:
                continue
            view = bytes(views[(array.offset + i) * 16 : (array.offset + i + 1) * 16])
            length = int.from_bytes(view[0:4], "little")
            if length <= 12:
                out[i] = _decoded(view[4 : 4 + length])
                continue
            index = int.from_bytes(view[8:12], "little")
            at = int.from_bytes(view[12:16], "little")
            if index >= len(datas) or at + length > len(datas[index]):
                out[i] = _OUT_OF_BOUNDS
            else:
                out[i] = _decoded(bytes(datas[index][at : at + length]))
        return out
    return out


def _first_invalid(column: pa.ChunkedArray) -> tuple[int, str] | None:
    """The first cell (table row, problem) of ``column`` that is not valid Arrow data."""
    base = 0
    for chunk in column.chunks:
        for i, problem in enumerate(_cell_problems(chunk)):
            if problem is not None:
                return base + i, problem
        base += len(chunk)
    return None


def _read_columns(args: _Args) -> list[str]:
    """The columns a build reads, once each: the only ones handed to the engine (the others
    are never imported, whatever their type)."""
    names = [*CANDIDATE_COLUMNS, args.group_by, args.budget_column, args.failure_files]
    return list(dict.fromkeys(name for name in names if name is not None))


def _key_suffix(data: pa.Table, args: _Args, key_row: int | None, local: int | None) -> str:
    """`` (group 'a', row 3 of the group)``: where a row error sits, for a grouped table."""
    if args.group_by is None or key_row is None:
        return ""
    key = data.column(args.group_by)[key_row].as_py()
    where = "" if local is None else f", row {local} of the group"
    return f" (group {key!r}{where})"


class _RowError(Exception):
    """The native engine's first validation error, before the group key is named; ``limit``:
    for a resource limit, the setting's name, the amount found and the setting's value."""

    def __init__(
        self,
        kind: str,
        field: str,
        problem: str,
        row: int | None,
        local: int | None,
        key_row: int | None,
        limit: tuple[str, int, int] | None = None,
    ) -> None:
        super().__init__(kind, field, problem, row, local, key_row, limit)
        self.kind, self.field, self.problem = kind, field, problem
        self.row, self.local, self.key_row = row, local, key_row
        self.limit = limit


def _table_error(
    kind: str,
    field: str,
    problem: str,
    row: int | None,
    local: int | None,
    key_row: int | None,
    limit: tuple[str, int, int] | None = None,
) -> _RowError:
    """Called by the extension to make its error (see ``src/python/table.rs``)."""
    return _RowError(kind, field, problem, row, local, key_row, limit)


def _with_suffix(exc: InvalidInputError, problem: str, row: int | None) -> InvalidInputError:
    """``exc`` again, with ``problem`` and ``row`` (the row in the whole table) in place of its
    own and the rest (a limit's ``limit``, ``value``, ``maximum``) kept."""
    if isinstance(exc, ResourceLimitError):
        return ResourceLimitError(
            exc.field, problem, row, limit=exc.limit, value=exc.value, maximum=exc.maximum
        )
    if row is None:
        return InvalidInputError(exc.field, problem)
    return type(exc)(exc.field, problem, row)


def _raise(data: pa.Table, args: _Args, err: _RowError) -> None:
    problem = err.problem + _key_suffix(data, args, err.key_row, err.local)
    if err.kind == "limit":
        name, value, maximum = err.limit or ("", None, None)
        raise ResourceLimitError(
            err.field, problem, err.row, limit=name or None, value=value, maximum=maximum
        ) from None
    if err.row is None:
        raise InvalidInputError(err.field, problem) from None
    raise InvalidCandidateError(err.field, problem, err.row) from None


def _with_keys(data: pa.Table, args: _Args, decisions: pa.Table, groups: pa.Table) -> TableResult:
    with needs("table"):
        import pyarrow as pa

    if args.group_by is None:
        row_keys: Any = pa.nulls(decisions.num_rows)
        group_keys: Any = pa.nulls(groups.num_rows)
    else:
        row_keys = data.column(args.group_by)
        group_keys = _take(row_keys, groups.column("first_row"))
    return TableResult(decisions.add_column(0, "group", row_keys), groups.add_column(0, "group", group_keys))


def _take(column: Any, indices: Any) -> Any:
    """``column.take(indices)``, also for types pyarrow's ``take`` lacks (``string_view``)."""
    with needs("table"):
        import pyarrow as pa

    try:
        return column.take(indices)
    except pa.ArrowNotImplementedError:
        values = column.to_pylist()
        return pa.array([values[i] for i in indices.to_pylist()], column.type)


def build_table(
    table: object,
    *,
    budget: int | str,
    group_by: str | None = None,
    failure_files: str | None = None,
    cost: object = None,
    threads: int | None = None,
    limits: Limits | None = None,
) -> TableResult:
    """Rank, de-duplicate and pack the candidates of every group of a table (Rust engine).

    Args:
        table: the candidates, one per row, as anything exporting the Arrow PyCapsule
            interface (``__arrow_c_stream__`` or ``__arrow_c_array__``): a ``pyarrow.Table``,
            ``RecordBatch`` or ``RecordBatchReader`` (read whole), a Polars ``DataFrame``, a
            DuckDB result. Columns ``path``, ``content``, ``reason`` (``utf8``, ``large_utf8``,
            ``string_view`` or dictionary-encoded strings), ``start``, ``end`` (any integer
            type; 1-based closed line range) and ``score`` (any integer type, float32 or
            float64); other columns are ignored. Nulls are rejected.
        budget: the budget of every group (an ``int >= 0`` in the cost's unit), or the name of
            an integer column holding each group's budget (the same in every row of a group).
        group_by: the name of the key column (integers or strings; null rejected): one
            independent build per distinct key. ``None``: the whole table is one build.
        failure_files: the name of a ``list<string>`` column of failing files in error order
            (the same in every row of a group), as ``failure_files`` of
            :func:`bugcontext.build`; ``None``: no failing file.
        cost: the cost model (:class:`~bugcontext.Cost` or its mapping form; default:
            characters, i.e. code points, of the content). Token units count exact tokens of
            the named encoding (in parallel). A ``template`` is not supported.
        threads: worker threads (``int >= 1``); ``None`` uses one per core. At most
            ``limits.max_threads``: a larger request is clamped, said once on standard error.
        limits: the resource limits (:class:`~bugcontext.core.limits.Limits`; default
            ``bugcontext.core.limits.DEFAULT_LIMITS``): ``max_candidates`` and
            ``max_total_chars`` apply to each group, ``max_threads`` to the call.

    Returns:
        A :class:`TableResult` (``decisions``: one row per input row in input order;
        ``groups``: one row per group in order of first appearance). For every group the
        decisions equal those of :func:`bugcontext.build` on the group's rows in table order
        (with the same ``max_candidates`` and ``max_total_chars``, per group).

    Raises:
        InvalidInputError: a bad argument, or a missing or mistyped column (``field`` names
            it, ``index`` is ``None``).
        InvalidCandidateError: a bad row: ``index`` is its row in the whole table, ``field``
            its column, and the message ends with its group key and its row within the group.
            Checked in this order, the first in table order reported: group keys that are null
            or not valid Arrow data; the other string cells a build reads (path, content,
            reason, failing files; first by row, then in that column order) that are not valid
            Arrow data (``is not valid UTF-8``, offsets or views outside the column's data, a
            dictionary index out of range: the C data interface and Parquet hand buffers over
            unchecked, so every cell is checked before it is read; null cells are not read);
            the budget and failing-files cells (each valid, and the same within a group); then
            the candidates, exactly as :func:`bugcontext.build` checks them.
        ResourceLimitError: a group over ``limits.max_candidates`` (checked after the Arrow
            data, before any other cell is read) or ``limits.max_total_chars`` (``limit``,
            ``value``, ``maximum`` as for :func:`bugcontext.build`).

    Validation is complete before any build: either everything is decided or nothing is. The
    GIL is released from the end of the import to the end of the builds; content is read in
    place, never copied.
    """
    return _build_table(_native_build, table, budget, group_by, failure_files, cost, threads, limits)


#: An engine: the decisions and groups tables (without the ``group`` column) of the checked
#: table ``data`` for the checked arguments, the limits and the worker threads.
_Engine = Callable[[Any, _Args, Limits, int | None], "tuple[pa.Table, pa.Table]"]


def _build_table(
    engine: _Engine,
    table: object,
    budget: object,
    group_by: object,
    failure_files: object,
    cost: object,
    threads: object,
    limits: Limits | None,
) -> TableResult:
    """:func:`build_table` by ``engine``: the arguments and the table's columns checked, the
    engine run, the group keys added to its tables."""
    args = _arguments(budget, group_by, failure_files, cost, threads)
    chosen = resolve(limits)
    workers = _workers(args.threads, chosen)
    data = _as_arrow(table)
    _check_schema(data.schema, args)
    _check_buffers(data, args)
    decisions, groups = engine(data, args, chosen, workers)
    return _with_keys(data, args, decisions, groups)


def _check_buffers(data: pa.Table, args: _Args) -> None:
    """Arrow's structural check (``Array.validate()``: every buffer as long as the array's
    length and its offsets say) of each chunk of the columns a build reads, before any cell
    is read. An exporter's buffers carry no length across the C data interface, so a string
    column whose last offset points past its data (a corrupted or hostile export) would make
    either engine read outside the column's memory; it is refused here by name. The cells'
    contents (UTF-8, offsets in order, nulls, values) are checked by the engines, row by row.

    Raises :class:`InvalidInputError` naming the column and the chunk."""
    with needs("table"):
        import pyarrow as pa

    for name in _read_columns(args):
        for k, chunk in enumerate(data.column(name).chunks):
            try:
                chunk.validate()
            except pa.ArrowException as err:
                raise InvalidInputError(
                    name, f"chunk {k} is not valid Arrow data: {shorten(str(err), 300, '')}"
                ) from None


def _workers(threads: int | None, chosen: Limits) -> int | None:
    """The engine's worker threads for a request of ``threads`` (clamped to the limit).

    None: rayon's pool of one thread per core, unless the limit is lower."""
    workers: int | None = clamp_threads(threads, chosen)
    if threads is None and workers is not None and workers >= cores():
        workers = None
    return workers


def _native_build(data: Any, args: _Args, chosen: Limits, workers: int | None) -> tuple[pa.Table, pa.Table]:
    """The Rust engine's decisions and groups for the table ``data``; a bad row is raised as
    :func:`build_table` says (:func:`_raise`)."""
    with needs("table"):
        import pyarrow as pa

    try:
        decisions, groups = _core.build_table(
            data.select(_read_columns(args)),
            group_by=args.group_by,
            budget=clamp_u64(args.budget),
            budget_column=args.budget_column,
            failure_files=args.failure_files,
            encoding=args.cost.encoding,
            max_candidates=clamp_u64(chosen.max_candidates),
            max_total_chars=clamp_u64(chosen.max_total_chars),
            threads=workers,
        )
    except _RowError as err:
        _raise(data, args, err)
        raise  # unreachable: _raise always raises
    return pa.table(decisions), pa.table(groups)


# ---------------------------------------------------------------------------------------------
# The reference: the specification, in pure Python over pyarrow.


def reference_build_table(
    table: object,
    *,
    budget: int | str,
    group_by: str | None = None,
    failure_files: str | None = None,
    cost: object = None,
    threads: int | None = None,
    limits: Limits | None = None,
) -> TableResult:
    """:func:`build_table` in pure Python: each group's rows become a list of candidate
    mappings (``to_pylist``) built by :func:`bugcontext.core.reference.build`. Same arguments,
    result and errors; ``threads`` is checked and otherwise ignored."""
    return _build_table(_reference_build, table, budget, group_by, failure_files, cost, threads, limits)


def _reference_build(
    data: Any, args: _Args, chosen: Limits, workers: int | None
) -> tuple[pa.Table, pa.Table]:
    """The reference's decisions and groups for the table ``data`` (``workers`` unused: one
    build after the other)."""
    from bugcontext.core import reference

    n = data.num_rows

    # 1. Group keys: no null; groups in order of first appearance.
    groups, group_of, local_of = _reference_groups(data, args)

    def fail(field: str, problem: str, row: int) -> InvalidCandidateError:
        where = _key_suffix(data, args, row, local_of[row])
        return InvalidCandidateError(field, problem + where, row)

    # 2. The other string columns' Arrow data: the first bad cell in table order, then in the
    # order path, content, reason, failing files.
    _reference_check_strings(data, args, fail)
    # 3. Group sizes.
    for rows in groups:
        if len(rows) > chosen.max_candidates:
            err = limit_error("candidates", "max_candidates", "", len(rows), chosen.max_candidates)
            raise _with_suffix(err, err.problem + _key_suffix(data, args, rows[0], None), None)

    # 4. The budget and failing-files cells, in table order.
    budgets, failing = _reference_group_cells(data, args, group_of, local_of, fail)
    # 5. The builds; the first invalid row in table order is reported.
    outcomes = _reference_builds(reference, data, args, chosen, groups, budgets, failing)
    decisions, summary = _reference_decisions(n, outcomes)
    return decisions, _groups_table(summary)


def _reference_groups(data: Any, args: _Args) -> tuple[list[list[int]], list[int], list[int]]:
    """The groups' rows (in order of first appearance), and per row its group and its row
    within the group. Group keys: no null. A key cell that is not valid Arrow data counts as
    the first bad key from its row on."""
    n = data.num_rows
    members: dict[Any, list[int]] = {}
    if args.group_by is None:
        members[None] = list(range(n))
    else:
        key_column = data.column(args.group_by)
        bad_key = _first_invalid(key_column)
        readable = key_column if bad_key is None else key_column.slice(0, bad_key[0])
        for row, key in enumerate(readable.to_pylist()):
            if key is None:
                raise InvalidCandidateError(args.group_by, "is null", row)
            members.setdefault(key, []).append(row)
        if bad_key is not None:
            raise InvalidCandidateError(args.group_by, bad_key[1], bad_key[0])
    groups = list(members.values())
    group_of = [0] * n
    local_of = [0] * n
    for g, rows in enumerate(groups):
        for local, row in enumerate(rows):
            group_of[row], local_of[row] = g, local

    return groups, group_of, local_of


def _reference_check_strings(
    data: Any, args: _Args, fail: Callable[[str, str, int], InvalidCandidateError]
) -> None:
    """The other string columns' Arrow data: raise for the first bad cell in table order,
    then in the order path, content, reason, failing files."""
    string_columns = ["path", "content", "reason"]
    if args.failure_files is not None:
        string_columns.append(args.failure_files)
    found = [
        (bad[0], k, name, bad[1])
        for k, name in enumerate(string_columns)
        if (bad := _first_invalid(data.column(name))) is not None
    ]
    if found:
        row, _, name, problem = min(found)
        raise fail(name, problem, row)


def _reference_group_cells(
    data: Any,
    args: _Args,
    group_of: list[int],
    local_of: list[int],
    fail: Callable[[str, str, int], InvalidCandidateError],
) -> tuple[dict[int, tuple[int, int]], dict[int, list[str]]]:
    """Per group, its budget (and the row within the group it was first read from) and its
    failing files, from the budget and failing-files cells, checked in table order."""
    n = data.num_rows
    budgets: dict[int, tuple[int, int]] = {}
    failing: dict[int, list[str]] = {}
    budget_cells = None if args.budget_column is None else data.column(args.budget_column).to_pylist()
    failure_cells = None if args.failure_files is None else data.column(args.failure_files).to_pylist()
    for row in range(n):
        g = group_of[row]
        if budget_cells is not None:
            name, value = args.budget_column or "", budget_cells[row]
            if value is None:
                raise fail(name, "is null", row)
            if value < 0:
                raise fail(name, f"must be >= 0, got {value}", row)
            first, first_local = budgets.setdefault(g, (value, local_of[row]))
            if value != first:
                problem = (
                    "must be the same in every row of a group, "
                    f"got {value} here and {first} in row {first_local} of the group"
                )
                raise fail(name, problem, row)
        if failure_cells is not None:
            name, items = args.failure_files or "", failure_cells[row]
            if items is None:
                raise fail(name, "is null", row)
            for j, item in enumerate(items):
                if item is None:
                    raise fail(name, f"item {j}: is null", row)
                try:
                    canonical_path(item)
                except PathProblem as exc:
                    raise fail(name, f"item {j}: {exc}", row) from None
            if failing.setdefault(g, items) != items:
                raise fail(name, "must be the same in every row of a group", row)
    return budgets, failing


def _reference_builds(
    reference: Any,
    data: Any,
    args: _Args,
    chosen: Limits,
    groups: list[list[int]],
    budgets: dict[int, tuple[int, int]],
    failing: dict[int, list[str]],
) -> list[tuple[list[int], BuildResult, list[int], int]]:
    """Each group's build by the reference ``(rows, result, costs, budget)``; raises the
    error of the first invalid row in table order."""
    builder = reference.ContextBuilder(cost=args.cost, limits=chosen)
    counter = builder.counter(args.cost)
    first_error: tuple[int, InvalidInputError] | None = None
    outcomes = []
    cells = {name: data.column(name).to_pylist() for name in CANDIDATE_COLUMNS}
    for g, rows in enumerate(groups):
        # The group's rows as candidate mappings; a null cell is left out, a missing key that
        # is reported as "is null" below.
        candidates = [
            {name: cells[name][row] for name in CANDIDATE_COLUMNS if cells[name][row] is not None}
            for row in rows
        ]
        group_budget = args.budget if args.budget_column is None else budgets.get(g, (0, 0))[0]
        try:
            result = builder.build(
                {
                    "candidates": candidates,
                    "budget": group_budget,
                    "failure_files": failing.get(g, []),
                }
            )
        except InvalidInputError as exc:
            if exc.index is None:
                raise
            row = rows[exc.index]
            problem = "is null" if exc.problem == "is missing" else exc.problem
            made = _with_suffix(exc, problem + _key_suffix(data, args, row, exc.index), row)
            if first_error is None or row < first_error[0]:
                first_error = (row, made)
            continue
        contents = [str(c["content"]) for c in candidates]
        costs = [len(c) for c in contents] if counter is None else list(counter.count(contents))
        outcomes.append((rows, result, costs, clamp_u64(group_budget)))
    if first_error is not None:
        raise first_error[1]
    return outcomes


def _reference_decisions(
    n: int, outcomes: list[tuple[list[int], BuildResult, list[int], int]]
) -> tuple[Any, dict[str, list[Any]]]:
    """The decisions table of the builds' ``outcomes`` (one row per input row) and the
    groups' summary columns."""
    index = [0] * n
    rank = [0] * n
    order: list[int | None] = [None] * n
    omission: list[int | None] = [None] * n
    overlaps: list[int | None] = [None] * n
    cost_of = [0] * n
    summary: dict[str, list[Any]] = {
        k: []
        for k in (
            "first_row",
            "candidates",
            "selected",
            "omitted_overlap",
            "omitted_budget",
            "used",
            "budget",
            "truncated",
        )
    }
    for rows, result, costs, group_budget in outcomes:
        omitted_ranks = set()
        for o in result.omitted:
            row = rows[o.index]
            rank[row], omission[row], overlaps[row] = o.rank, _OMISSIONS.index(o.reason), o.overlaps
            omitted_ranks.add(o.rank)
        # Selection follows rank order: the selected rows take the other ranks, in order.
        free = [r for r in range(len(rows)) if r not in omitted_ranks]
        for position, i in enumerate(result.selected):
            rank[rows[i]], order[rows[i]] = free[position], position
        for local, row in enumerate(rows):
            index[row], cost_of[row] = local, costs[local]
        reasons = [o.reason for o in result.omitted]
        summary["first_row"].append(rows[0] if rows else 0)
        summary["candidates"].append(len(rows))
        summary["selected"].append(len(result.selected))
        summary["omitted_overlap"].append(reasons.count("overlap"))
        summary["omitted_budget"].append(reasons.count("budget"))
        summary["used"].append(result.used)
        summary["budget"].append(group_budget)
        summary["truncated"].append(result.truncated)

    decisions = _decisions_table(index, rank, order, omission, overlaps, cost_of)
    return decisions, summary


def _decisions_table(
    index: Sequence[int],
    rank: Sequence[int],
    order: Sequence[int | None],
    omission: Sequence[int | None],
    overlaps: Sequence[int | None],
    cost: Sequence[int],
) -> pa.Table:
    with needs("table"):
        import pyarrow as pa

    selected = [o is None for o in omission]
    return pa.table(
        {
            "index": pa.array(index, pa.uint32()),
            "rank": pa.array(rank, pa.uint32()),
            "selected": pa.array(selected, pa.bool_()),
            "order": pa.array(order, pa.uint32()),
            "omission": pa.DictionaryArray.from_arrays(
                pa.array(omission, pa.int8()), pa.array(list(_OMISSIONS), pa.string())
            ),
            "overlaps": pa.array(overlaps, pa.uint32()),
            "cost": pa.array(cost, pa.uint64()),
        }
    )


def _groups_table(summary: dict[str, list[Any]]) -> pa.Table:
    with needs("table"):
        import pyarrow as pa

    types = {
        "first_row": pa.uint64(),
        "candidates": pa.uint32(),
        "selected": pa.uint32(),
        "omitted_overlap": pa.uint32(),
        "omitted_budget": pa.uint32(),
        "used": pa.uint64(),
        "budget": pa.uint64(),
        "truncated": pa.bool_(),
    }
    return pa.table({name: pa.array(summary[name], t) for name, t in types.items()})
