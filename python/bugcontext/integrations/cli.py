"""The ``bugcontext`` command line.

``bugcontext build [FILE | -] [--engine native|reference] [--format json|markdown] [--verify-root DIR]``
    Read a build input as JSON (``{"candidates": [...], "max_chars": N, "failure_file":
    ...}``; an object that repeats a key is invalid) from ``FILE`` or standard input, and
    print the result: its JSON form (ASCII only: every non-ASCII character, lone surrogates
    included, is written as a ``\\uXXXX`` escape, so any result prints and reads back
    exactly) or, with ``--format markdown``, the selected items as a Markdown prompt
    section (with a cost model that has a template, the section exactly as it was costed,
    ``bugcontext.render(result)``). With ``--verify-root DIR``, every candidate is
    checked against the file at its path under ``DIR`` (verified provenance,
    :mod:`bugcontext.core.provenance`): a candidate whose file is missing, whose
    ``source_sha256`` is not that file's, or whose content is not the file's lines is omitted
    with reason ``stale``.

``bugcontext build --jsonl FILE|- [--engine ...] [--threads N]``
    Many inputs, one JSON input per line (JSON Lines) from ``FILE`` or standard input; one
    result per line on standard output, in input order: the result's JSON form, or for a line
    that cannot be built (invalid JSON, an invalid input or candidate) ``{"error": {"type",
    "message", "problem", "field", "index", "line"}}`` (``type`` the exception class, e.g.
    ``"InvalidCandidateError"``; ``index`` the candidate index or ``null``; ``line`` the
    1-based line number in the input). Blank lines (only whitespace) are skipped and give no
    output line. The input is streamed: lines are read and built in chunks of
    ``JSONL_CHUNK`` with ``build_many`` (parallel, ``--threads``, default every core), each
    chunk written before the next is read, so memory is bounded by a chunk, not the file. With
    standard error a terminal, a progress bar (tqdm) counts the lines there.

``bugcontext context --repo DIR --log FILE [--junit-xml FILE] [--test NODEID]
[--query TEXT] [--issue FILE] [--budget N | --max-chars N] [--cost ...] [--template ...]
[--format markdown|json] [--report FILE] [--cache-dir DIR | --no-cache] [--engine native|reference]``
    Gather failure, reference and search windows for one failing test (``--test``, by
    default the first of the short test summary) in a test log (``FILE``, or ``-`` for
    standard input; ``--pytest-log`` is the same option; any format
    :mod:`bugcontext.job.sources.logs` reads, told from the content; ``--junit-xml`` alone
    serves as the log) of a run made in ``DIR`` (with ``--issue``, also the definitions an issue
    text names and its own search, ranked after the log's evidence:
    ``bugcontext.job.sources.gather(issue=...)``), build the context (through a
    ``bugcontext.Workspace``: what is derived from the repository is cached in ``DIR`` of
    ``--cache-dir``, by default under the user cache directory) and print exactly the prompt
    section on standard output: with Markdown output the budget counts the rendered section
    (the Markdown template unless ``--template`` says otherwise), so what is printed, counted in
    the budget's unit, is within the budget. The failure and omission report goes to standard
    error, or to ``--report FILE``. With ``--format json``, print one JSON document instead
    (``ContextResult.to_dict``): the build result's JSON form with more top-level keys,
    ``"policy_omitted"``: the windows the sources took and the safe reader withheld, whatever
    their priority (a file that is a secret by name, even the failure file; a window that no
    longer matches its file), each ``{"path", "start", "end", "source", "reason": "policy",
    "why"}`` (``why`` such as ``"policy: secret name"``; an empty list when none);
    ``"failure"``; ``"failing_tests"``: every failing test found, each
    ``{"test", "name", "status", "phase", "exception", "message", "selected"}``; and
    ``"policy_redacted"``; ``"failure_blocks"``; ``"schema"`` (1). The section opens with the
    failure: one block per failing test used (test id, exception, message, redacted, a long
    message cut with ``[... N characters cut]``), costed inside the budget
    (:mod:`bugcontext.job._failure_block`).

``bugcontext cache info|clear [--cache-dir DIR] [--format text|json]``
    Show the index cache's folder, size, entries and databases (``info``; ``--format json``:
    ``CacheInfo.to_dict``, with ``"schema": 1``), or remove its files (``clear``; nothing else
    in the folder). The cache keeps itself within ``Limits.max_cache_bytes`` by removing the
    least recently used entries (:mod:`bugcontext.job._cache_admin`).

``bugcontext mcp [--root DIR]... [--allow-run] [--python PATH] [--cache-dir DIR] [--limit NAME=N]``
    Serve the ``context_for_failure`` and ``build`` tools over the Model Context Protocol
    (standard I/O); needs the ``mcp`` extra (:mod:`bugcontext.integrations.mcp_server`). Every path a
    call names must lie inside a ``--root`` (repeatable; default the current folder); tests
    are run only with ``--allow-run``, with ``--python`` or the repository's own virtual
    environment.

Secrets never leave the program: every text printed (the Markdown context and report, the
failure's test name and message, every string of the JSON output, warnings and error
messages, the names in messages checked piece by piece between ``_`` too:
:func:`bugcontext.core._io.redact_names`) passes through ``bugcontext.core.secrets.redact``, which
replaces each secret with
``[REDACTED: kind]``. The report then ends with a line saying how many secrets of which kinds
were redacted; ``context``'s JSON lists them under ``"policy_redacted"``, each
``{"where": JSONPath, "kind", "reason": "policy", "why": "policy: secret in the output"}``
(an empty list when none), after the secrets the reader replaced in the selected windows'
file lines (``{"where", "path", "lines", "kind", "reason": "policy", "why": "policy: secret
in the file"}``); ``build`` says so on standard error.

Exit status: 0 on success; 2 for invalid input (bad JSON, an invalid candidate or field,
an unreadable file or folder, a path option the system refuses: a name too long, a loop of
symbolic links, a permission, each one line, never a traceback; a bad option or command
line, an input over a resource limit:
``bugcontext.core.limits.Limits``, set with ``--limit NAME=N``; an output file, ``--report`` or
``--trace``, that is the same file as an input or as the other output, the file or pipe the
command's standard output or error goes to, or, for ``context`` (``build --verify-root``), an
existing file anywhere under ``--repo`` (the folder), whether the reader reads it or not, or any
path inside its git folder: refused before any work; a subcommand whose extra is not installed,
such as ``context`` without ``[context]``: the line names the extra), with one line on
standard error and nothing on standard output; 1 if the output cannot
be written (a full disk, a closed pipe, a closed standard output; an output file that is a
folder or read-only, or whose folder does not exist: ``cannot write PATH: reason``), with one
line on standard error. Output files are written by :mod:`bugcontext.core._writer`. A
closed pipe is such a failure like any other (``SIGPIPE`` stays ignored, as Python sets it,
and the write fails with ``EPIPE``): the command never reports success for output that was
cut short; 3 (``build --jsonl`` only) if some lines could not be built: every line still
has its output line, the failed ones an ``{"error": ...}`` object, and standard error
summarises them (their count, then the first few line numbers with their errors); 5 with
``--require-failure`` when a failing file's failure evidence was all left out
(``missing_critical``) or, for ``context``, the log has no failing test (said on standard
error either way); 130 when stopped by
Ctrl-C (SIGINT), with the one line ``bugcontext COMMAND: interrupted``. Markdown output writes
characters its stream cannot encode (lone surrogates) as backslash escapes. Every name printed
(a path, a test id), in the output or in a message, has its line breaks and other control
characters written as ``\\uXXXX`` (:func:`bugcontext.core.composer.header_path`), so no name can
start a line of its own.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from bugcontext import BuildResult, InvalidInputError, ResourceLimitError, reference
from bugcontext import build as native_build
from bugcontext.batch.rerank import add_rerank_parser
from bugcontext.core import builder as native
from bugcontext.core._arguments import add_unit_options, json_int, unique_keys, whole_number
from bugcontext.core._cut import shorten
from bugcontext.core._extras import MissingExtraError
from bugcontext.core._io import (
    OutputError,
    open_input,
    read_capped,
    redact_names,
    reserve_standard_fds,
    screen_names,
    warn,
    write_stream,
)
from bugcontext.core._writer import (
    OutputConflictError,
    check_output,
    refuse_same_files,
    repository_output_problem,
    write_file,
)
from bugcontext.core.composer import header_path, missing_lines, render, render_markdown
from bugcontext.core.cost import Cost
from bugcontext.core.limits import Limits, add_limit_option, limit_error
from bugcontext.core.provenance import folder_reader
from bugcontext.core.secrets import SECRET_REDACTED, redact_json
from bugcontext.core.secrets import redaction_note as _redaction_note
from bugcontext.core.trace import replay
from bugcontext.job._run import RERUN_MODES

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from bugcontext.job.workspace import ContextResult as ContextReport
    from bugcontext.job.workspace import failing_tests_json

__all__ = [
    "DEFAULT_MAX_CHARS",
    "EXIT_SOME_FAILED",
    "JSONL_CHUNK",
    "SECRET_REDACTED",
    "ContextReport",
    "context_json",
    "error_json",
    "failing_tests_json",
    "main",
    "redact_json",
    "result_json",
    "run_context",
]

#: Exit status of ``build``/``context --require-failure`` when a failing file's failure evidence
#: was all left out (``missing_critical``).
EXIT_MISSING_EVIDENCE = 5
#: Exit status of a command stopped by SIGINT (Ctrl-C), as a shell reports it: 128 + 2.
EXIT_INTERRUPTED = 130
#: Exit status of ``replay`` when a rebuild does not reproduce its recorded digest.
EXIT_NOT_REPRODUCED = 4

#: Default budget of ``bugcontext context``, in characters (code points).
DEFAULT_MAX_CHARS = 16_000
#: Default budget of ``bugcontext context --cost tokens``, in tokens of the encoding.
DEFAULT_MAX_TOKENS = 4_000

#: Exit status of ``build --jsonl`` when some lines could not be built (each has an error line).
EXIT_SOME_FAILED = 3
#: Lines of ``build --jsonl`` read and built at a time (one ``build_many`` call).
JSONL_CHUNK = 256

_ENGINES: dict[str, Callable[[object], BuildResult]] = {
    "native": native_build,
    "reference": reference.build,
}


class _UsageError(Exception):
    """Invalid input found by the command line itself (exit status 2)."""


#: The output could not be written (exit status 1).
_OutputError = OutputError


class _ArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on standard error (exit 2), and
    whose help is written like any other output (a failure raises ``OutputError``)."""

    def error(self, message: str) -> NoReturn:
        # ``prog`` is the command as typed so far: ``bugcontext context``, ``bugcontext cache clear``.
        self.exit(2, redact_names(f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n"))

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message:
            return
        if file is None or file is sys.stdout:
            write_stream(sys.stdout, message)
        else:
            warn(message.rstrip("\n"))


def _version() -> str:
    """The installed distribution's version (``importlib.metadata``), or ``unknown`` when the
    package runs from a source tree without its metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bugcontext")
    except PackageNotFoundError:
        return "unknown"


def _one_line(text: str) -> str:
    """``text`` on one line: its line breaks as blanks."""
    return " ".join(text.splitlines())


def _markdown_section(result: BuildResult) -> str:
    """The Markdown output of ``result``: the section exactly as costed when the cost model
    renders one (it has a template), else the legacy Markdown section in the cost's order."""
    if result.cost.template is not None:
        return render(result)
    return render_markdown(result, order=result.cost.order)


def result_json(result: BuildResult) -> str:
    """The JSON form of ``result`` on one line, ASCII only (``\\uXXXX`` escapes)."""
    return json.dumps(result.to_dict(), ensure_ascii=True, allow_nan=False)


def __getattr__(name: str) -> Any:
    # ``ContextReport``, the outcome of ``bugcontext context`` (:class:`bugcontext.ContextResult`),
    # and ``failing_tests_json`` come from the context job, imported on first use: ``build``
    # needs only the core.
    if name in ("ContextReport", "failing_tests_json"):
        from bugcontext.job import workspace

        return getattr(workspace, "ContextResult" if name == "ContextReport" else name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _warn_missing(command: str, result: BuildResult, required: bool) -> int:
    """Warn about each failing file without failure evidence; the exit status:
    ``EXIT_MISSING_EVIDENCE`` when some evidence is missing and ``required``
    (``--require-failure``), else 0."""
    for line in missing_lines(result):
        warn(f"bugcontext {command}: warning: missing failure evidence: {line}")
    return EXIT_MISSING_EVIDENCE if required and result.missing_critical else 0


def context_json(report: ContextReport) -> str:
    """The JSON output of ``bugcontext context``: ``ContextResult.to_dict()`` (the build
    result's JSON form, ``"policy_omitted"``, ``"failure"``, ``"failing_tests"`` and
    ``"policy_redacted"``), on one line, ASCII only."""
    return json.dumps(report.to_dict(), ensure_ascii=True, allow_nan=False)


def run_context(
    repo: str | Path,
    pytest_log: str | Path,
    *,
    query: str | None = None,
    max_chars: int | None = None,
    engine: str = "native",
    cost: object = None,
    junit_xml: str | Path | None = None,
    test: str | None = None,
    issue: str | None = None,
    limits: Limits | None = None,
) -> ContextReport:
    """Gather candidates for the failing test in ``pytest_log`` (a file, read as UTF-8
    with undecodable bytes replaced; a JUnit XML report is recognised as such) in the
    repository folder ``repo`` and build the context with ``engine`` (``"native"`` or
    ``"reference"``) in ``max_chars`` characters of content (default ``DEFAULT_MAX_CHARS``),
    or, with a ``cost`` model (a ``Cost`` or its mapping form), in that many units of it.
    ``junit_xml`` is the run's JUnit XML report (``pytest --junitxml``), if any: it fills
    and is the authority for the failures and their frames. ``test`` chooses the failing
    test (a pytest node id, a dotted id or a test name) when the log has several; by
    default the first failing test in the order of the short test summary. Nothing is
    cached on disk (``bugcontext.Workspace`` keeps and caches what it derives).
    ``issue`` is the issue text (the bug report), if any (``gather(issue=...)``). ``limits``
    are the resource limits (:class:`bugcontext.core.limits.Limits`; default ``DEFAULT_LIMITS``).

    Raises ``OSError`` if the log cannot be read, ``NotADirectoryError`` if ``repo`` is not
    a folder, ``InvalidInputError`` for an invalid budget, ``ResourceLimitError`` (an
    ``InvalidInputError``) for a log over ``limits.max_log_bytes``, a report over
    ``max_junit_bytes`` or any other input over its limit, ``LogFormatError`` (a ``ValueError``) for
    unreadable JUnit XML, ``UnknownTestError`` (a ``LookupError``) if ``test`` names no
    failing test of the log.
    """
    log = read_capped(pytest_log, "max_log_bytes", field="pytest_log", limits=limits)
    report = (
        read_capped(junit_xml, "max_junit_bytes", field="junit_xml", limits=limits)
        if junit_xml is not None
        else None
    )
    from bugcontext.job.workspace import Workspace

    budget = DEFAULT_MAX_CHARS if max_chars is None else max_chars
    return Workspace(repo, cache=False, limits=limits).context(
        _log_text(log),
        junit_xml=report,
        test=test,
        query=query,
        issue=issue,
        budget=budget,
        cost={"unit": "chars"} if cost is None else cost,
        engine=engine,
    )


def _builder(engine: str, limits: Limits) -> native.ContextBuilder | reference.ContextBuilder:
    """A builder of ``engine`` with ``limits``."""
    if engine == "native":
        return native.ContextBuilder(limits=limits)
    return reference.ContextBuilder(limits=limits)


def _build_with(
    engine: str, data: object, trace: str | None, limits: Limits, verify_root: str | None = None
) -> BuildResult:
    """Build with ``engine``, appending the trace line to the file ``trace`` when given, and
    verifying the candidates against the folder ``verify_root`` when given."""
    verify = None if verify_root is None else folder_reader(verify_root)
    builder = _builder(engine, limits)
    if trace is None:
        return builder.build(data, verify=verify)
    return builder.build(data, trace=trace, verify=verify)  # OutputError if it cannot be written


def _cmd_replay(args: argparse.Namespace) -> int:
    build = _builder(args.engine, args.limits).build
    lines: list[str] = []
    all_reproduced = True
    try:
        for turn in replay(args.trace, build, limits=args.limits):
            state = "reproduced" if turn.reproduced else f"NOT reproduced (recorded {turn.recorded})"
            all_reproduced = all_reproduced and turn.reproduced
            lines.append(f"turn {turn.number}: digest {turn.rebuilt} {state}")
            for c in turn.changes:
                where = header_path(f"{c.path}:{c.start}-{c.end}")
                if c.kind == "moved":
                    lines.append(f"  moved   {where} #{c.before} -> #{c.after} ({c.why})")
                else:
                    lines.append(f"  {c.kind:<7} {where} ({header_path(c.why)})")
            if turn.number > 1 and not turn.changes:
                lines.append("  no change in the selected items")
    except OSError as exc:
        raise _UsageError(f"cannot read {header_path(args.trace)}: {exc.strerror or exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise _UsageError(f"{header_path(args.trace)}: {exc}") from exc
    if not lines:
        raise _UsageError(
            f"{header_path(args.trace)}: no trace records (an empty trace has nothing to replay)"
        )
    # The trace holds the builds' inputs as they were: what is printed of them is screened.
    _write(sys.stdout, "".join(redact_names(line) + "\n" for line in lines))
    return 0 if all_reproduced else EXIT_NOT_REPRODUCED


def _shown(file: str) -> str:
    """How the input ``file`` (``-``: standard input) is named in a message."""
    return "standard input" if file == "-" else header_path(file)


def _read_input(file: str, limit: str, field: str, limits: Limits) -> bytes:
    """The bytes of ``file`` (``-``: standard input), at most the setting ``limit`` of
    ``limits`` allows (``ResourceLimitError`` beyond); ``_UsageError`` if it cannot be read."""
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    try:
        return read_capped(stdin if file == "-" else file, limit, field=field, limits=limits)
    except OSError as exc:
        raise _UsageError(f"cannot read {_shown(file)}: {exc.strerror or exc}") from exc


def _log_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _read_json(file: str, limits: Limits) -> Any:
    data = _read_input(file, "max_input_bytes", "input", limits)
    try:
        return json.loads(data, object_pairs_hook=unique_keys, parse_int=json_int)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a repeated key
        raise _UsageError(f"invalid JSON in {_shown(file)}: {exc}") from exc


def _read_log(file: str, limits: Limits) -> str:
    """The pytest log at ``file`` (``-``: standard input) as text: UTF-8, undecodable bytes
    replaced; at most ``limits.max_log_bytes``."""
    return _log_text(_read_input(file, "max_log_bytes", "pytest_log", limits))


def _write(stream: TextIO | None, text: str) -> None:
    """Write all of ``text`` to ``stream`` (standard output; ``OutputError`` if it cannot be
    written, see :func:`bugcontext.core._io.write_stream`)."""
    write_stream(stream, text)


def _cost_options(args: argparse.Namespace, base: object = None) -> dict[str, Any] | None:
    """The cost model named on the command line (JSON form), merged over ``base`` (the input's
    own cost, if any: only the fields given as options change), or ``None`` if no option names
    a field and there is no base."""
    given = {
        "unit": args.cost,
        "encoding": args.encoding,
        "template": args.template,
        "line_numbers": args.line_numbers or None,
        "order": args.order,
    }
    chosen = {key: value for key, value in given.items() if value is not None}
    if base is None or not chosen:
        return chosen or None
    merged = dict(Cost.parse(base).to_dict())
    if "unit" in chosen and chosen["unit"] != merged["unit"]:
        merged["encoding"] = None  # the encoding belongs to the unit it came with
    merged.update(chosen)
    return merged


def _add_cost_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "budget and cost",
        "The budget's unit and what a candidate costs: characters or tokens, of the content or "
        "of the rendered block. For build, each option given replaces that field of the input's "
        "own cost (and --budget its budget); the other fields are kept.",
    )
    group.add_argument("--budget", type=whole_number(), metavar="N", help="budget in the cost's unit")
    add_unit_options(group, None)
    group.add_argument(
        "--template",
        choices=["markdown", "xml"],
        default=None,
        help="cost each candidate as its rendered block, and fit the rendered section to the budget",
    )
    group.add_argument(
        "--line-numbers", action="store_true", help="render (and count) line numbers; needs --template"
    )
    group.add_argument(
        "--order", choices=["rank", "file"], default=None, help="render order of the section (default rank)"
    )


def _with_options(data: Any, args: argparse.Namespace) -> Any:
    """The build input ``data`` with the command line's cost and budget options applied."""
    cost = _cost_options(args, data.get("cost") if isinstance(data, dict) else None)
    if isinstance(data, dict) and (cost is not None or args.budget is not None):
        data = dict(data)
        if cost is not None:
            data["cost"] = cost
        if args.budget is not None:
            data.pop("max_chars", None)
            data.pop("maxChars", None)
            data["budget"] = args.budget
    return data


def error_json(exc: Exception, line: int) -> str:
    """The output line of a ``build --jsonl`` input line that could not be built: ``{"error":
    {"type", "message", "problem", "field", "index", "line"}}`` on one line, ASCII only."""
    error = {
        "type": type(exc).__name__,
        "message": _one_line(str(exc)),
        "problem": getattr(exc, "problem", None),
        "field": getattr(exc, "field", None),
        "index": getattr(exc, "index", None),
        "line": line,
    }
    return json.dumps({"error": error}, ensure_ascii=True, allow_nan=False)


def _jsonl_lines(file: str, limits: Limits) -> Iterator[tuple[int, bytes | ResourceLimitError]]:
    """The non-blank lines of ``file`` (``-``: standard input) with their 1-based numbers; a
    line longer than ``limits.max_input_bytes`` is not kept in memory: it is skipped to its end
    and given as the ``ResourceLimitError`` that names the limit."""
    maximum = limits.max_input_bytes
    try:
        stream = sys.stdin.buffer if file == "-" else open_input(file)
    except OSError as exc:
        raise _UsageError(f"cannot read {_shown(file)}: {exc.strerror or exc}") from exc
    try:
        number = 0
        while raw := stream.readline(maximum + 1):
            number += 1
            if len(raw) > maximum and not raw.endswith(b"\n"):
                while (rest := stream.readline(1 << 20)) and not rest.endswith(b"\n"):
                    pass
                yield (
                    number,
                    limit_error(
                        "input", "max_input_bytes", f"line {number}", maximum + 1, maximum, exact=False
                    ),
                )
            elif raw.strip():
                yield number, raw
    except OSError as exc:
        raise _UsageError(f"cannot read {_shown(file)}: {exc.strerror or exc}") from exc
    finally:
        if file != "-":
            stream.close()


def _jsonl_chunk(
    chunk: list[tuple[int, bytes | ResourceLimitError]],
    args: argparse.Namespace,
    kinds: list[str],
    failed: list[tuple[int, str]] | None = None,
) -> tuple[list[str], bool]:
    """Build one chunk of ``--jsonl`` lines; return their output lines (secrets redacted, their
    kinds added to ``kinds``) and whether all built. Each line that failed is appended to
    ``failed`` (when given) as its number and ``"Type: message"`` (redacted)."""
    parsed: list[Any] = []
    for _, raw in chunk:
        if isinstance(raw, ResourceLimitError):
            parsed.append(raw)
            continue
        try:
            data = json.loads(raw, object_pairs_hook=unique_keys, parse_int=json_int)
            parsed.append(_with_options(data, args))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a repeated key
            parsed.append(InvalidInputError("input", f"invalid JSON: {_one_line(str(exc))}"))
    to_build = [p for p in parsed if not isinstance(p, InvalidInputError)]
    builder = _builder(args.engine, args.limits)
    built = iter(builder.build_many(to_build, threads=args.threads, errors="return"))
    out: list[str] = []
    ok = True
    for (number, _), data in zip(chunk, parsed, strict=True):
        result = data if isinstance(data, InvalidInputError) else next(built)
        if isinstance(result, Exception):
            ok = False
            shown, found = redact_json(json.loads(error_json(result, number)))
            if failed is not None:
                failed.append((number, f"{shown['error']['type']}: {shown['error']['message']}"))
        else:
            shown, found = redact_json(result.to_dict())
        kinds += [record["kind"] for record in found]
        out.append(json.dumps(shown, ensure_ascii=True, allow_nan=False))
    return out, ok


def _cmd_build_jsonl(args: argparse.Namespace) -> int:
    if args.format != "json":
        raise _UsageError("--jsonl prints JSON lines: --format markdown is not available with it")
    if args.threads is not None and args.threads < 1:
        raise _UsageError(f"--threads must be >= 1, got {args.threads}")
    from tqdm import tqdm  # imported here: the other commands do not draw it

    # Updated once per chunk, so every update is drawn (mininterval=0).
    progress = tqdm(
        unit=" lines", disable=not sys.stderr.isatty(), file=sys.stderr, leave=False, mininterval=0
    )
    all_ok = True
    kinds: list[str] = []
    failed: list[tuple[int, str]] = []
    total = 0
    try:
        chunk: list[tuple[int, bytes | ResourceLimitError]] = []
        lines = _jsonl_lines(args.jsonl, args.limits)
        while True:
            chunk = list(itertools.islice(lines, JSONL_CHUNK))
            if not chunk:
                break
            out, ok = _jsonl_chunk(chunk, args, kinds, failed)
            all_ok = all_ok and ok
            total += len(chunk)
            _write(sys.stdout, "".join(line + "\n" for line in out))
            progress.update(len(chunk))
    finally:
        progress.close()
    if kinds:
        _warn("build", _redaction_note(kinds))
    if failed:
        _jsonl_failures(failed, total)
    return 0 if all_ok else EXIT_SOME_FAILED


#: Failed lines of ``build --jsonl`` named one by one in its summary on standard error.
JSONL_FAILURES_SHOWN = 5


def _jsonl_failures(failed: list[tuple[int, str]], total: int) -> None:
    """The summary of ``build --jsonl``'s failed lines on standard error: one line with their
    count, then one line for each of the first :data:`JSONL_FAILURES_SHOWN` (its number and
    error, cut to 200 characters), and how many more there are."""
    lines = ", ".join(str(number) for number, _ in failed[:JSONL_FAILURES_SHOWN])
    more = f" and {len(failed) - JSONL_FAILURES_SHOWN} more" if len(failed) > JSONL_FAILURES_SHOWN else ""
    warn(
        f"bugcontext build: {len(failed)} of {total} lines could not be built (lines {lines}{more}); "
        'each has an {"error": ...} output line'
    )
    for number, error in failed[:JSONL_FAILURES_SHOWN]:
        shown = shorten(error, 197)
        warn(f"  line {number}: {_one_line(shown)}")


def _cmd_build(args: argparse.Namespace) -> int:
    if args.jsonl is not None:
        if args.file != "-":
            raise _UsageError("give FILE or --jsonl FILE, not both")
        if args.trace is not None or args.require_failure or args.verify_root is not None:
            raise _UsageError("--trace, --require-failure and --verify-root are for one input, not --jsonl")
        return _cmd_build_jsonl(args)
    if args.threads is not None:
        raise _UsageError("--threads is only for --jsonl")
    if args.verify_root is not None and not _is_folder("--verify-root", args.verify_root):
        raise _UsageError(f"--verify-root: {header_path(args.verify_root)} is not a folder")
    read = None if args.verify_root is None else (args.verify_root, "--verify-root folder")
    _check_outputs([("--trace", args.trace)], [("the input", args.file)], read)
    data = _with_options(_read_json(args.file, args.limits), args)
    result = _build_with(args.engine, data, args.trace, args.limits, args.verify_root)
    if args.format == "json":
        redacted_data, found = redact_json(result.to_dict())
        kinds = [record["kind"] for record in found]
        out = json.dumps(redacted_data, ensure_ascii=True, allow_nan=False) + "\n"
    else:
        out, screened = screen_names(_markdown_section(result))
        kinds = list(screened)
    if kinds:
        _warn("build", _redaction_note(kinds))
    _write(sys.stdout, out)
    # The JSON form carries missing_critical; the warning only with --require-failure.
    return _warn_missing("build", result, args.require_failure) if args.require_failure else 0


def _refused(option: str, value: str) -> _UsageError | None:
    """The usage error for the path ``value`` of ``option`` when the system refuses it for a
    reason other than its absence: a name too long, a loop of symbolic links, a permission, a
    NUL character (``--repo: cannot read PATH: File name too long``); ``None`` otherwise."""
    try:
        os.stat(value)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return _UsageError(f"{option}: cannot read {header_path(value)}: {exc.strerror or exc}")
    except ValueError:  # a NUL character (a call of main(), not a command line)
        return _UsageError(f"{option}: {header_path(value)} cannot name a file (it holds a NUL character)")
    return None


def _is_folder(option: str, value: str) -> bool:
    """Whether the path ``value`` of ``option`` names a folder (``False`` for ``""``, a missing
    path, a file); ``_UsageError`` for a path the system refuses (:func:`_refused`)."""
    refused = _refused(option, value) if value else None
    if refused is not None:
        raise refused
    return value != "" and os.path.isdir(value)


def _warn(command: str, message: str) -> None:
    """One warning line on standard error (secrets redacted by :func:`warn`)."""
    warn(f"bugcontext {command}: warning: {_one_line(message)}")


def _check_outputs(
    outputs: list[tuple[str, str | None]],
    inputs: list[tuple[str, str | None]],
    read: tuple[str, str] | None = None,
) -> None:
    """Before any work: refuse an output that is an input or another output (exit 2), one
    that would damage the folder the run reads (``read``: ``(folder, what)``, see
    :func:`_refuse_repository_files`; exit 2), and one that cannot be written (a folder, a
    read-only file, a missing folder: exit 1). ``-`` is refused as an output (exit 2): it
    names standard input where an input is read (``--log -``), and a file called ``-``
    written in the current folder is not what it asks for."""
    for label, path in outputs:
        if path == "-":
            raise OutputConflictError(
                f"{label} -: '-' is standard input (as in --log -), not an output; give a file path"
            )
        if path is not None and "\0" in path:  # (a call of main(): no command line holds one)
            raise OutputConflictError(f"{label}: {header_path(path)}: a path cannot hold a NUL character")
    refuse_same_files(outputs, inputs)
    if read is not None:
        _refuse_repository_files(read[0], outputs, read[1])
    for _, path in outputs:
        if path is not None:
            check_output(path)


def _refuse_repository_files(
    repo: str, outputs: list[tuple[str, str | None]], what: str = "repository"
) -> None:
    """Refuse (``OutputConflictError``, exit 2) an output that would damage the folder ``repo``
    the run reads: an existing file anywhere under it, whether the reader reads it or not
    (ignored files, hidden folders and ``.git`` included; links resolved, or a file with
    other hard links that is one of them by device and inode), or any path, new or
    existing, inside its git folder (``.git``, a ``.git`` file's gitdir):
    :func:`bugcontext.core._writer.repository_output_problem`, the check
    ``Workspace.context(trace=...)`` and ``build(trace=..., verify=folder_reader(root))``
    make too. A new file elsewhere inside ``repo`` is allowed. Needs only the core."""
    for label, path in outputs:
        problem = None if path is None else repository_output_problem(repo, path, what)
        if problem is not None:
            raise OutputConflictError(f"{label} {problem}")


def _rerun_environment(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``--rerun-env NAME=VALUE`` variables (``None`` without any); a usage error for
    one without ``=`` or a name, and for ``--python`` or ``--rerun-env`` without ``--rerun``."""
    if args.rerun is None and (args.python is not None or args.rerun_env):
        raise _UsageError("--python and --rerun-env are for --rerun")
    if not args.rerun_env:
        return None
    env: dict[str, str] = {}
    for item in args.rerun_env:
        name, sep, value = item.partition("=")
        if not sep or not name or "\0" in item:
            raise _UsageError(f"--rerun-env must be NAME=VALUE, got {header_path(item)}")
        env[name] = value
    return env


def _context_budget(args: argparse.Namespace, cost: dict[str, Any]) -> int:
    """The budget of ``context``: ``--budget``, else ``--max-chars``, else the default of the
    cost's unit; raises :class:`_UsageError` for both, or ``--max-chars`` with another unit."""
    if args.max_chars is not None and args.budget is not None:
        raise _UsageError("give --budget or --max-chars, not both")
    if args.max_chars is not None and cost.get("unit", "chars") != "chars":
        raise _UsageError(f"--max-chars is a character budget; with --cost {cost['unit']} give --budget")
    budget: int
    if args.budget is not None:
        budget = args.budget
    elif args.max_chars is not None:
        budget = args.max_chars
    else:
        budget = DEFAULT_MAX_TOKENS if cost.get("unit") == "tokens" else DEFAULT_MAX_CHARS
    return budget


def _warn_context(args: argparse.Namespace, report: ContextReport, log_text: str) -> None:
    """Warn (on standard error) of a log without a failing test, frames that name no file of
    the repository, and the re-run's notes."""
    from bugcontext.job._failure_block import cut_message

    failure = report.gathered.failure
    unit = "characters" if report.result.cost.unit == "chars" else "tokens"
    for block in report.failure_blocks_left_out:
        shown = header_path(cut_message(block.test or "(unnamed)", 300)[0])
        _warn(
            "context",
            f"the failure block of {shown} ({block.cost} {unit}) does not fit the budget of "
            f"{report.budget}: the section does not say that this test failed"
            + (" (exit 5: --require-failure)" if args.require_failure and not report.failure_blocks else ""),
        )
    if failure is None:
        why = "the log is empty" if not log_text.strip() else "no failing test found in the log"
        _warn(
            "context",
            f"{why}: the context has no failure evidence"
            + (" (exit 5: --require-failure)" if args.require_failure else ""),
        )
    elif failure.frames and not any(pf.frame in failure.frames for pf in report.gathered.frames):
        # (a frame found from the test id alone does not count: the log's paths matched nothing)
        _warn(
            "context",
            f"no traceback frame of the log is a file of {header_path(args.repo)} "
            "(relative paths are taken from there)",
        )
    if report.rerun is not None:
        for note in report.rerun.notes:
            _warn("context", f"re-run: {note}")


def _cmd_context(args: argparse.Namespace) -> int:
    from bugcontext.job.sources.reports import LogFormatError
    from bugcontext.job.sources.runs import UnknownTestError
    from bugcontext.job.workspace import Workspace

    if not _is_folder("--repo", args.repo):
        raise _UsageError(f"not a directory: {header_path(args.repo)}")
    outputs = [("--report", args.report), ("--trace", args.trace)]
    inputs = [("--log", args.pytest_log), ("--junit-xml", args.junit_xml), ("--issue", args.issue)]
    _check_outputs(outputs, [*inputs, ("--coverage", args.coverage)], (args.repo, "repository"))
    limits: Limits = args.limits
    log_text = _read_log(args.pytest_log, limits) if args.pytest_log is not None else ""
    junit_xml: bytes | None = None
    if args.junit_xml is not None:
        junit_xml = _read_input(args.junit_xml, "max_junit_bytes", "junit_xml", limits)
    issue: str | None = None
    if args.issue is not None:
        issue = _log_text(_read_input(args.issue, "max_issue_bytes", "issue", limits))
    cost = _cost_options(args) or {}
    budget = _context_budget(args, cost)
    if args.format == "markdown":
        # The budget covers what is printed: the section in its template, Markdown by default.
        cost.setdefault("template", "markdown")
    rerun_env = _rerun_environment(args)
    try:
        cache_dir = _cache_dir(args.cache_dir)
        workspace = Workspace(args.repo, cache_dir=cache_dir, cache=not args.no_cache, limits=limits)
        report = workspace.context(
            log_text,
            junit_xml=junit_xml,
            query=args.query,
            budget=budget,
            cost=cost,
            engine=args.engine,
            test=args.test,
            issue=issue,
            trace=args.trace,
            coverage=Path(args.coverage) if args.coverage is not None else None,
            rerun=args.rerun,
            python=args.python,
            rerun_env=rerun_env,
        )
    except OSError as exc:  # (a trace that cannot be written is OutputError, not OSError)
        where = header_path(str(exc.filename or args.repo))
        raise _UsageError(f"cannot read {where}: {exc.strerror or exc}") from exc
    except LogFormatError as exc:
        option = {"pytest_log": "--log", "junit_xml": "--junit-xml"}.get(exc.field or "")
        raise _UsageError(f"{option}: {exc}" if option else str(exc)) from exc
    except UnknownTestError as exc:
        raise _UsageError(str(exc)) from exc
    failure = report.gathered.failure
    _warn_context(args, report, log_text)
    # Warnings come before the output and the report; the status after printing them.
    status = _warn_missing("context", report.result, args.require_failure)
    unshown = bool(report.failure_blocks_left_out) and not report.failure_blocks
    if args.require_failure and (failure is None or unshown):
        status = EXIT_MISSING_EVIDENCE  # no failure, or none of its blocks fits the budget
    if args.format == "json":
        _write(sys.stdout, context_json(report) + "\n")
    else:
        # Standard output holds exactly the budgeted section; the report goes elsewhere.
        section, kinds = screen_names(report.section)
        if kinds:
            _warn("context", _redaction_note(kinds))
        _write(sys.stdout, section)
    if args.report is not None:
        write_file(args.report, redact_names(report.summary()))
    elif args.format != "json":
        _write(sys.stderr, redact_names(report.summary()))
    return status


def _add_engine(parser: argparse.ArgumentParser, words: str) -> None:
    """``--engine native|reference`` (default ``native``)."""
    parser.add_argument("--engine", choices=sorted(_ENGINES), default="native", help=words)


def _add_trace(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trace",
        metavar="FILE",
        default=None,
        help="append one JSON line describing the build (cache key, digest, input, every decision) to FILE",
    )


def _add_require_failure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--require-failure",
        action="store_true",
        help="warn and exit 5 (after printing the result) when a failing file's failure windows "
        "were all left out (missing_critical), or the log has no failing test",
    )


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="bugcontext",
        description="Rank, de-duplicate and pack code-context candidates for coding agents.",
    )
    parser.add_argument("--version", action="version", version=f"bugcontext {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_build_parser(commands)
    _add_context_parser(commands)
    _add_mcp_parser(commands)
    _add_replay_parser(commands)
    _add_eval_parser(commands)
    add_rerank_parser(commands)
    _add_cache_parser(commands)
    return parser


def _add_build_parser(commands: Any) -> None:
    """The ``build`` subcommand."""
    build = commands.add_parser(
        "build",
        help="build a context from a JSON input",
        description="Read a build input (JSON) and print the build result.",
    )
    build.add_argument(
        "file",
        nargs="?",
        default="-",
        metavar="FILE",
        help="JSON input file, or - for standard input (default)",
    )
    _add_engine(build, "the Rust engine (default) or the pure-Python reference")
    build.add_argument(
        "--format",
        choices=["json", "markdown"],
        default="json",
        help="print the result as JSON (default) or as a Markdown section",
    )
    build.add_argument(
        "--jsonl",
        metavar="FILE",
        default=None,
        help="many inputs, one JSON object per line (- for standard input); one result "
        "(or error) JSON object per line out, in order; exit 3 if some lines failed",
    )
    build.add_argument(
        "--threads",
        type=whole_number(-(2**63)),  # (a count below 1: the command's own line)
        metavar="N",
        default=None,
        help="with --jsonl: at most N threads rank and pack at once (default: every core)",
    )
    build.add_argument(
        "--verify-root",
        metavar="DIR",
        default=None,
        help="check every candidate against the file at its path under DIR; omit the stale "
        "ones (reason stale)",
    )
    _add_require_failure(build)
    add_limit_option(build)
    _add_trace(build)
    _add_cost_options(build)
    build.set_defaults(run=_cmd_build)


def _add_context_parser(commands: Any) -> None:
    """The ``context`` subcommand."""
    context = commands.add_parser(
        "context",
        help="build a context for a failing test run in a repository",
        description="Gather failure, reference and search windows for the first failing "
        "test of a test run's output (pytest, unittest, go test, cargo test, jest, vitest, mocha, "
        "node --test, JUnit, ...) and build the context.",
    )
    _add_context_inputs(context)
    context.add_argument(
        "--max-chars",
        type=whole_number(),
        default=None,
        metavar="N",
        help=f"budget in characters (default {DEFAULT_MAX_CHARS}; with --cost tokens, --budget "
        f"defaults to {DEFAULT_MAX_TOKENS})",
    )
    context.add_argument(
        "--format",
        choices=["markdown", "json"],
        default="markdown",
        help="the Markdown section on standard output and the report on standard error "
        "(default), or one JSON document with the result and the omissions",
    )
    _add_engine(context, "the Rust engine (default) or the pure-Python reference")
    context.add_argument(
        "--report",
        metavar="FILE",
        default=None,
        help="write the failure and omission report to FILE (default: standard error)",
    )
    context.add_argument(
        "--cache-dir",
        metavar="DIR",
        default=None,
        help="folder of the index cache (default: bugcontext in the user cache directory)",
    )
    context.add_argument(
        "--no-cache", action="store_true", help="keep the derived index in memory only, nothing on disk"
    )
    _add_require_failure(context)
    add_limit_option(context)
    _add_trace(context)
    _add_cost_options(context)
    context.set_defaults(run=_cmd_context)


def _add_context_inputs(context: argparse.ArgumentParser) -> None:
    """The inputs of ``context``: the repository, the test output and the other evidence."""
    context.add_argument(
        "--repo", required=True, metavar="DIR", help="the repository folder the tests ran in"
    )
    context.add_argument(
        "--log",
        "--pytest-log",
        dest="pytest_log",
        default=None,
        metavar="FILE",
        help="test output, or - for standard input: pytest (any --tb style), unittest, a "
        "traceback; vitest, jest, mocha, node --test (spec, TAP); go test (plain, -v, -json); "
        "cargo test or nextest; JUnit 4/5, Maven Surefire, Gradle; any log with stack traces; "
        "or a JUnit XML report (the format is told from the content)",
    )
    context.add_argument(
        "--junit-xml",
        metavar="FILE",
        default=None,
        help="the run's JUnit XML report (pytest --junitxml, Surefire, Gradle, jest-junit, "
        "go-junit-report, nextest, ...): fills in tracebacks the log lacks; alone, it is the "
        "test output",
    )
    context.add_argument(
        "--coverage",
        metavar="FILE",
        default=None,
        help="a coverage report of the failing tests (coverage.py's .coverage data file, its JSON "
        "report, LCOV or Cobertura XML, told apart by content): the code they executed is "
        "failure evidence, ranked by suspiciousness",
    )
    context.add_argument(
        "--rerun",
        nargs="?",
        const="failing",
        default=None,
        choices=RERUN_MODES,
        help="re-run the log's failing tests (or --test) under a tracer in the repository, as "
        "execution evidence: the lines and calls they ran; --rerun=files runs every test of "
        "their files too (a spectrum). This runs the repository's code",
    )
    context.add_argument(
        "--python",
        metavar="PATH",
        default=None,
        help="the interpreter of --rerun (default: the repository's .venv or venv, else this one)",
    )
    context.add_argument(
        "--rerun-env",
        metavar="NAME=VALUE",
        action="append",
        default=None,
        help="an environment variable for --rerun (repeatable), e.g. PYTHONPATH=src",
    )
    context.add_argument(
        "--test",
        metavar="NODEID",
        default=None,
        help="the failing test to build the context for, when the log has several (default: "
        "the first failing test of the log's summary; a parametrised test's base id covers "
        "every failed parametrisation)",
    )
    context.add_argument("--query", metavar="TEXT", default=None, help="extra words for the search source")
    context.add_argument(
        "--issue",
        metavar="FILE",
        default=None,
        help="the issue text (bug report): the definitions it names and its own search are "
        "added after the log's evidence",
    )


def _add_mcp_parser(commands: Any) -> None:
    """The ``mcp`` subcommand."""
    mcp = commands.add_parser(
        "mcp",
        help="run the Model Context Protocol server over standard I/O",
        description="Serve the context_for_failure and build tools over MCP (stdio); needs the "
        "mcp extra (pip install 'bugcontext[mcp]').",
    )
    mcp.add_argument("--cache-dir", metavar="DIR", default=None, help="folder of the index cache")
    mcp.add_argument("--no-cache", action="store_true", help="keep the derived index in memory only")
    mcp.add_argument(
        "--root",
        metavar="DIR",
        action="append",
        default=None,
        help="a folder every path of a tool call must lie in (repeatable; default: the current folder)",
    )
    mcp.add_argument(
        "--allow-run",
        action="store_true",
        help="let context_for_failure run a test (running a repository's tests runs its code)",
    )
    mcp.add_argument(
        "--python",
        metavar="PATH",
        default=None,
        help="the interpreter of those test runs (default: the repository's .venv or venv)",
    )
    add_limit_option(mcp)
    mcp.set_defaults(run=_cmd_mcp)


def _add_replay_parser(commands: Any) -> None:
    """The ``replay`` subcommand."""
    replayer = commands.add_parser(
        "replay",
        help="rebuild every build of a trace and show what changed between turns",
        description="Rebuild each line of a trace (--trace) from its saved input, check the digest, "
        "and list the items added, dropped (and why) and moved between consecutive turns. Exit 4 "
        "when a rebuild does not reproduce its recorded digest.",
    )
    replayer.add_argument("trace", metavar="TRACE", help="the trace file")
    _add_engine(replayer, "the engine that rebuilds")
    add_limit_option(replayer)
    replayer.set_defaults(run=_cmd_replay)


def _add_eval_parser(commands: Any) -> None:
    """The ``eval`` subcommand, as a stand-in that takes any arguments: the evaluation (and the
    context job under it) is imported, and its parser built, only when ``eval`` runs, so that
    the other subcommands start without it; without the ``eval`` extra, the one line naming
    the extra (exit 2)."""
    stand_in = commands.add_parser(
        "eval",
        help="compare context strategies on real bugs (bugcontext eval --help)",
        add_help=False,
        prefix_chars="\0",  # every argument, --help included, is the evaluation's
    )
    stand_in.add_argument("arguments", nargs=argparse.REMAINDER)
    stand_in.set_defaults(run=_cmd_eval)


def _cmd_eval(args: argparse.Namespace) -> int:
    from bugcontext.evaluation.command import add_eval_parser  # MissingExtraError without [eval]

    parser = _ArgumentParser(prog="bugcontext")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    try:
        real = parser.parse_args(["eval", *args.arguments])
    except SystemExit as exc:  # --help (0) or a usage error (2), already reported
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    status: int = real.run(real)
    return status


def _add_cache_parser(commands: Any) -> None:
    """The ``cache info`` and ``cache clear`` subcommands."""
    cache = commands.add_parser(
        "cache",
        help="show or clear the on-disk index cache",
        description="Show where the index cache is, its size and entries (info), or remove its "
        "files (clear). The cache stays within the limit max_cache_bytes (default 1 GiB): past "
        "it the least recently used entries are removed.",
    )
    actions = cache.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, words in (("info", "show the cache's folder, size and entries"), ("clear", "remove its files")):
        action = actions.add_parser(name, help=words, description=words[0].upper() + words[1:] + ".")
        action.add_argument(
            "--cache-dir",
            metavar="DIR",
            default=None,
            help="folder of the index cache (default: bugcontext in the user cache directory)",
        )
        if name == "info":
            action.add_argument(
                "--format", choices=["text", "json"], default="text", help="lines of text (default) or JSON"
            )
            add_limit_option(action)
        action.set_defaults(run=_cmd_cache)


def _cmd_cache(args: argparse.Namespace) -> int:
    from bugcontext.job._cache import rules_version
    from bugcontext.job._cache_admin import clear, info
    from bugcontext.job.workspace import default_cache_dir

    folder = _cache_dir(args.cache_dir) or default_cache_dir()
    if args.action == "clear":
        _refuse_foreign_folder(folder)
        try:
            count, size = clear(folder)
        except OSError as exc:
            raise _UsageError(f"cannot clear {header_path(str(folder))}: {exc.strerror or exc}") from exc
        _print_screened("cache", [f"removed {count} files ({size} bytes) from {header_path(str(folder))}"])
        return 0
    limits: Limits = args.limits
    found = info(folder, limits.max_cache_bytes, f"derived-{rules_version()}.sqlite3")
    if args.format == "json":
        shown, kinds = _screened_json(found.to_dict())
        if kinds:
            _warn("cache", _redaction_note(list(kinds)))
        _write(sys.stdout, json.dumps(shown, ensure_ascii=True) + "\n")
        return 0
    lines = [
        f"folder: {header_path(str(found.folder))}",
        f"size: {found.size} bytes (limit {found.limit} bytes: max_cache_bytes)",
        f"entries: {found.entries}",
        f"databases: {len(found.databases)}"
        + (f" (this version's: {header_path(found.current.name)})" if found.current else ""),
    ]
    _print_screened("cache", lines)
    return 0


def _print_screened(command: str, lines: list[str]) -> None:
    """Print ``lines`` on standard output, each screened for secrets as every printed name is
    (:func:`bugcontext.core._io.screen_names`), with the redaction note on standard error
    when one was replaced."""
    kinds: list[str] = []
    shown = []
    for line in lines:
        text, found = screen_names(line)
        shown.append(text)
        kinds.extend(found)
    if kinds:
        _warn(command, _redaction_note(kinds))
    _write(sys.stdout, "".join(line + "\n" for line in shown))


def _screened_json(value: Any) -> tuple[Any, tuple[str, ...]]:
    """``value`` (a JSON value) with every string, keys included, screened as a printed name
    is (:func:`bugcontext.core._io.screen_names`), and the kinds of the secrets replaced."""
    kinds: list[str] = []

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            text, found = screen_names(item)
            kinds.extend(found)
            return text
        if isinstance(item, dict):
            return {walk(k): walk(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v) for v in item]
        return item

    return walk(value), tuple(kinds)


def _cache_dir(value: str | None) -> Path | None:
    """The folder of ``--cache-dir`` (``None`` when not given); ``_UsageError`` when it is not
    a folder, or cannot become one (a file stands where it or a folder above it would be)."""
    if value is None:
        return None
    refused = _refused("--cache-dir", value)
    if refused is not None:
        raise refused
    folder = Path(value)
    probe = folder
    while not os.path.lexists(probe) and probe.parent != probe:
        probe = probe.parent
    if os.path.lexists(probe) and not probe.is_dir():
        where = header_path(str(probe))
        also = "" if probe == folder else f" (so {header_path(value)} cannot be made)"
        raise _UsageError(f"--cache-dir: {where} is not a folder{also}")
    return folder


def _refuse_foreign_folder(folder: Path) -> None:
    """``_UsageError`` unless ``folder`` is absent, empty, or holds a cache file of this
    program (a ``derived-*.sqlite3`` database, a ``secret-rules-*.json`` rules file):
    ``cache clear`` is refused on any other folder."""
    from bugcontext.job._cache_admin import cache_files

    try:
        with os.scandir(folder) as entries:
            empty = next(entries, None) is None
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _UsageError(f"cannot read {header_path(str(folder))}: {exc.strerror or exc}") from exc
    if not empty and not cache_files(folder):
        raise _UsageError(
            f"--cache-dir: {header_path(str(folder))} is not a bugcontext cache (it holds no "
            "derived-*.sqlite3 database); nothing removed"
        )


def _cmd_mcp(args: argparse.Namespace) -> int:
    """``bugcontext mcp``: 0 when the client closed its input; 1, with one line on standard
    error (its secrets redacted, no traceback), when the server stopped on an unexpected
    error."""
    from bugcontext.integrations.mcp_server import run  # MissingExtraError without the mcp extra

    try:
        run(
            cache_dir=_cache_dir(args.cache_dir),
            cache=not args.no_cache,
            limits=args.limits,
            roots=args.root,
            allow_run=args.allow_run,
            python=args.python,
        )
    except (InvalidInputError, _UsageError, MissingExtraError):
        raise
    except Exception as exc:  # the server stopped: one line, never a traceback of its state
        said = shorten(_one_line(str(exc)), 2000)
        warn(f"bugcontext mcp: the server stopped on an unexpected error: {type(exc).__name__}: {said}")
        return 1
    return 0


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; a usage error is reported by the (sub)command it belongs to
    (``bugcontext context: error: ...``), as ``SystemExit``."""
    args, unknown = parser.parse_known_args(argv)
    chosen = _chosen(parser, args)
    if unknown:
        chosen.error(f"unrecognized arguments: {' '.join(unknown)}")
    if getattr(args, "run", None) is _cmd_context and args.pytest_log is None and args.junit_xml is None:
        chosen.error("one of the arguments --log (--pytest-log) --junit-xml is required")
    return args


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` ran: ``parser``, or its subcommand's, down to
    the last subcommand given."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[name]


def _limits(args: argparse.Namespace) -> Limits:
    """The resource limits of ``--limit NAME=N`` (``_UsageError`` naming the option)."""
    try:
        return Limits.parse(getattr(args, "limit", None) or ())
    except InvalidInputError as exc:
        raise _UsageError(f"--limit {exc.field}: {exc.problem}") from exc


#: The command line's option for each top-level input field, by subcommand: an error in a
#: field is reported with the option the user typed (the first alias typed, else the first).
_FIELD_OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "context": {
        "repo": ("--repo",),
        "pytest_log": ("--log", "--pytest-log"),
        "log_text": ("--log", "--pytest-log"),
        "junit_xml": ("--junit-xml",),
        "issue": ("--issue",),
        "coverage": ("--coverage",),
        "query": ("--query",),
        "test": ("--test",),
        "rerun": ("--rerun",),
        "python": ("--python",),
        "budget": ("--budget", "--max-chars"),
    },
    "build": {"budget": ("--budget",)},
    "rerank": {"budget": ("--budget",), "threads": ("--threads",)},
}


def _as_typed(exc: Exception, args: argparse.Namespace, typed: Sequence[str]) -> str:
    """The message of ``exc``; for an input error in a top-level field that an option of the
    command gave, in the words of the command line: ``--max-chars: must be >= 0, got -5``."""
    if not isinstance(exc, InvalidInputError) or exc.index is not None:
        return str(exc)
    options = _FIELD_OPTIONS.get(str(args.command), {}).get(exc.field, ())
    given = [o for o in options if any(t == o or t.startswith(o + "=") for t in typed)]
    if not given and args.command == "context":
        given = list(options[:1])  # (build's budget may be its input's field, not the option)
    return f"{given[0]}: {exc.problem}" if given else str(exc)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``bugcontext`` command line with ``argv`` (default ``sys.argv[1:]``) and
    return the exit status: 0; 2 for invalid input or a bad command line, 1 if the output
    cannot be written or the ``mcp`` server stopped on an unexpected error (either with one
    line on standard error), 2 also for a subcommand whose
    extra is not installed (the line names it: ``install bugcontext with the [context]
    extra``); 3 if some lines of
    ``build --jsonl`` could not be built (each has its ``{"error": ...}`` output line); 4 when
    ``replay`` does not reproduce a digest; 5 with ``--require-failure`` when a failing file's
    failure evidence was all left out, or ``context``'s log has no failing test; 130 when
    interrupted (SIGINT: one line, no traceback).
    ``--help`` prints the help and returns 0 (1 if it cannot be written). A standard stream
    closed when the program starts gets the null device, so no file opened later takes its
    place; output for a closed standard output fails (status 1)."""
    reserve_standard_fds()
    typed = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parse(_parser(), typed)
    except SystemExit as exc:  # --help (0) or a usage error (2), already reported
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    except OutputError as exc:  # --help could not be written
        warn(f"bugcontext: {_one_line(str(exc))}")
        return 1
    except KeyboardInterrupt:  # Ctrl-C before a command started
        warn("bugcontext: interrupted")
        return EXIT_INTERRUPTED
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        args.limits = _limits(args)
        return run(args)
    except KeyboardInterrupt:  # Ctrl-C: outputs being written were already removed
        warn(f"bugcontext {args.command}: interrupted")
        return EXIT_INTERRUPTED
    except MissingExtraError as exc:  # a subcommand of an extra that is not installed
        warn(f"bugcontext {args.command}: {_one_line(str(exc))}")
        return 2
    except (_UsageError, InvalidInputError, OutputConflictError) as exc:
        warn(f"bugcontext {args.command}: {_one_line(_as_typed(exc, args, typed))}")
        return 2
    except OutputError as exc:
        warn(f"bugcontext {args.command}: {_one_line(str(exc))}")
        return 1
    except OSError as exc:  # a path no check above named: still one line, never a traceback
        where = f"cannot read {header_path(os.fspath(exc.filename))}: " if exc.filename else ""
        warn(f"bugcontext {args.command}: {where}{_one_line(exc.strerror or str(exc))}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
