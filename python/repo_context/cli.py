"""The ``repo-context`` command line.

``repo-context build [FILE | -] [--engine native|reference] [--format json|markdown]``
    Read a build input as JSON (``{"candidates": [...], "max_chars": N, "failure_file":
    ...}``; an object that repeats a key is invalid) from ``FILE`` or standard input, and
    print the result: its JSON form (ASCII only: every non-ASCII character, lone surrogates
    included, is written as a ``\\uXXXX`` escape, so any result prints and reads back
    exactly) or, with ``--format markdown``, the selected items as a Markdown prompt
    section (with a cost model that has a template, the section exactly as it was costed,
    ``repo_context.render(result)``).

``repo-context context --repo DIR --pytest-log FILE [--junit-xml FILE] [--query TEXT]
[--max-chars N] [--format markdown|json] [--engine native|reference]``
    Gather failure, reference and search windows for the first failing test in a pytest
    log (``FILE``, or ``-`` for standard input) of a run made in ``DIR``, build the context
    and print it in Markdown (the section as costed when the cost model has a template)
    followed by a summary of what was omitted and why; with ``--format json``, print the
    build result's JSON form with one more top-level key, ``"policy_omitted"``: the windows
    the sources took and the safe reader withheld, whatever their priority (a file that
    looks like a secret, even the failure file; a window that no longer matches its file),
    each ``{"path", "start", "end", "source", "reason": "policy", "why"}`` (``why`` such as
    ``"policy: secret name"`` or ``"policy: secret content"``); an empty list when none.

Exit status: 0 on success; 2 for invalid input (bad JSON, an invalid candidate or field,
an unreadable file or folder, a bad option or command line, an input larger than its limit:
``MAX_INPUT_BYTES``, ``MAX_LOG_BYTES``, ``MAX_JUNIT_BYTES`` in ``repo_context._io``), with one
line on standard error and nothing on standard output; 1 if the output cannot be written (a
full disk, a closed pipe, a closed standard output), with one line on standard error. A
closed pipe is such a failure like any other (``SIGPIPE`` stays ignored, as Python sets it,
and the write fails with ``EPIPE``): the command never reports success for output that was
cut short. Markdown output writes characters its stream cannot encode (lone surrogates) as
backslash escapes. Every name printed (a path, a test id), in the output or in a message,
has its line breaks and other control characters written as ``\\uXXXX``
(:func:`repo_context.composer.header_path`), so no name can start a line of its own.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from . import BuildResult, InvalidInputError, reference
from . import build as native_build
from ._io import (
    MAX_INPUT_BYTES,
    MAX_JUNIT_BYTES,
    MAX_LOG_BYTES,
    OutputError,
    read_capped,
    reserve_standard_fds,
    warn,
    write_stream,
)
from .composer import header_path, render, render_markdown, render_omitted
from .cost import Cost
from .evaluation.command import add_eval_parser
from .sources import Gathered, gather
from .sources.pytest_log import LogFormatError
from .trace import replay

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

__all__ = ["DEFAULT_MAX_CHARS", "ContextReport", "context_json", "main", "result_json", "run_context"]

#: Exit status of ``build``/``context --require-failure`` when a failing file's failure evidence
#: was all left out (``missing_critical``).
EXIT_MISSING_EVIDENCE = 5
#: Exit status of ``replay`` when a rebuild does not reproduce its recorded digest.
EXIT_NOT_REPRODUCED = 4

#: Default budget of ``repo-context context``, in characters (code points).
DEFAULT_MAX_CHARS = 16_000
#: Default budget of ``repo-context context --cost tokens``, in tokens of the encoding.
DEFAULT_MAX_TOKENS = 4_000

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
        self.exit(2, f"repo-context: {_one_line(message)} (see --help)\n")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        if not message:
            return
        if file is None or file is sys.stdout:
            write_stream(sys.stdout, message)
        else:
            warn(message.rstrip("\n"))


def _one_line(text: str) -> str:
    """``text`` on one line: its line breaks as blanks."""
    return " ".join(text.splitlines())


def _markdown_section(result: BuildResult) -> str:
    """The Markdown output of ``result``: the section exactly as costed when the cost model
    renders one (it has a template), else the legacy Markdown section."""
    if result.cost.template is not None:
        return render(result)
    return render_markdown(result)


def result_json(result: BuildResult) -> str:
    """The JSON form of ``result`` on one line, ASCII only (``\\uXXXX`` escapes)."""
    return json.dumps(result.to_dict(), ensure_ascii=True, allow_nan=False)


@dataclass(frozen=True)
class ContextReport:
    """The outcome of ``repo-context context``: what was gathered, and the build result.

    ``max_chars`` is the budget used, in characters (code points).
    """

    gathered: Gathered
    result: BuildResult
    max_chars: int

    @property
    def failure_file(self) -> str | None:
        """The repository-relative failure file, or ``None`` if no frame is in the repo."""
        return self.gathered.failure_file

    def markdown(self) -> str:
        """The context as Markdown, then the failure and omission summary."""
        failure = self.gathered.failure
        about = ["## Failure", ""]
        if failure is None:
            about.append("No failing test found in the log.")
        else:
            exc = failure.exception_type or "failure"
            message = f"{exc}: {failure.message}" if failure.message else exc
            about.append(f"- test: {header_path(failure.name) if failure.name else '(unnamed)'}")
            about.append(f"- error: {header_path(message)}")
        where = header_path(self.failure_file) if self.failure_file else "(none in the repository)"
        about.append(f"- failure file: {where}")
        cost = self.result.cost
        unit = "characters" if cost.unit == "chars" else f"{cost.encoding} tokens"
        counted = "the content" if cost.template is None else f"the {cost.template} section"
        about.append(f"- budget: {self.result.used} of {self.result.budget} {unit} used ({counted})")
        about.append(f"- digest: {self.result.digest}")
        about.extend(f"- missing failure evidence: {line}" for line in missing_lines(self.result))
        summary = "\n\n".join(
            [
                "\n".join(about),
                render_omitted(self.result, self.gathered.candidates).rstrip("\n"),
                *_policy_summary(self.gathered),
            ]
        )
        if cost.template is not None:
            # The section exactly as costed, then one empty line before the summary.
            section = render(self.result)
            gap = "" if section == "" or section.endswith("\n\n") else "\n"
            return section + gap + summary + "\n"
        return render_markdown(self.result).rstrip("\n") + "\n\n" + summary + "\n"


def missing_lines(result: BuildResult) -> list[str]:
    """One line per failing file whose failure windows were all left out: the file and why
    each window was left out (``a.py: window 3 (lines 10-80) budget``)."""
    lines = []
    for missing in result.missing_critical:
        whys = ", ".join(
            f"window {o.index} {o.reason}" + (f" of window {o.overlaps}" if o.overlaps is not None else "")
            for o in missing.omitted
        )
        lines.append(f"{header_path(missing.path)}: all failure windows left out ({whys})")
    return lines


def _warn_missing(command: str, result: BuildResult, required: bool) -> int:
    """Warn about each failing file without failure evidence; the exit status:
    ``EXIT_MISSING_EVIDENCE`` when some evidence is missing and ``required``
    (``--require-failure``), else 0."""
    for line in missing_lines(result):
        warn(f"repo-context {command}: warning: missing failure evidence: {line}")
    return EXIT_MISSING_EVIDENCE if required and result.missing_critical else 0


def _policy_summary(gathered: Gathered) -> list[str]:
    """The Markdown lines about the windows the reader withheld (none: no lines)."""
    withheld = gathered.policy_omissions
    if not withheld:
        return []
    files = len({w.path for w in withheld})
    lines = [
        f"{len(withheld)} window{'s' if len(withheld) != 1 else ''} of {files} "
        f"file{'s' if files != 1 else ''} withheld by the reader (reason policy, before any ranking):",
        "",
    ]
    for w in withheld:
        where = header_path(f"{w.path}:{w.start}-{w.end}")
        ticks = "`" * (max((len(run) for run in re.findall("`+", where)), default=0) + 1)
        pad = " " if where.startswith("`") or where.endswith("`") else ""
        lines.append(f"- {ticks}{pad}{where}{pad}{ticks} {w.source}: {w.why}")
    return ["\n".join(lines)]


def context_json(report: ContextReport) -> str:
    """The JSON output of ``repo-context context``: the build result's JSON form and
    ``"policy_omitted"`` (the reader's withheld windows), on one line, ASCII only."""
    data = report.result.to_dict()
    data["policy_omitted"] = [w.to_dict() for w in report.gathered.policy_omissions]
    return json.dumps(data, ensure_ascii=True, allow_nan=False)


def run_context(
    repo: str | Path,
    pytest_log: str | Path,
    *,
    query: str | None = None,
    max_chars: int | None = None,
    engine: str = "native",
    cost: object = None,
    junit_xml: str | Path | None = None,
) -> ContextReport:
    """Gather candidates for the failing test in ``pytest_log`` (a file, read as UTF-8
    with undecodable bytes replaced; a JUnit XML report is recognised as such) in the
    repository folder ``repo`` and build the context with ``engine`` (``"native"`` or
    ``"reference"``) in ``max_chars`` characters (default ``DEFAULT_MAX_CHARS``), or, with a
    ``cost`` model (a ``Cost`` or its mapping form), in that many units of it.
    ``junit_xml`` is the run's JUnit XML report (``pytest --junitxml``), if any: it fills
    in the tracebacks the log lacks.

    Raises ``OSError`` if the log cannot be read, ``NotADirectoryError`` if ``repo`` is not
    a folder, ``InvalidInputError`` for an invalid budget, ``ResourceLimitError`` (an
    ``InvalidInputError``) for a log larger than ``MAX_LOG_BYTES`` or a report larger than
    ``MAX_JUNIT_BYTES`` (``repo_context._io``), ``LogFormatError`` (a ``ValueError``) for
    unreadable JUnit XML.
    """
    log = read_capped(pytest_log, MAX_LOG_BYTES, limit_name="MAX_LOG_BYTES", field="pytest_log")
    log_text = _log_text(log)
    report = (
        read_capped(junit_xml, MAX_JUNIT_BYTES, limit_name="MAX_JUNIT_BYTES", field="junit_xml")
        if junit_xml is not None
        else None
    )
    return _context(
        repo, log_text, query=query, max_chars=max_chars, engine=engine, cost=cost, junit_xml=report
    )


def _context(
    repo: str | Path,
    log_text: str,
    *,
    query: str | None,
    max_chars: int | None,
    engine: str,
    cost: object,
    junit_xml: bytes | None = None,
    trace: str | None = None,
) -> ContextReport:
    """:func:`run_context` on the text of the log (and the bytes of the JUnit report)."""
    budget = DEFAULT_MAX_CHARS if max_chars is None else max_chars
    gathered = gather(repo, log_text, query, junit_xml=junit_xml)
    data = gathered.build_input(budget)
    if cost is not None:
        data = {
            "candidates": data["candidates"],
            "failure_files": data["failure_files"],
            "budget": budget,
            "cost": cost,
        }
    result = _build_with(engine, data, trace)
    return ContextReport(gathered, result, budget)


def _build_with(engine: str, data: object, trace: str | None) -> BuildResult:
    """Build with ``engine``, appending the trace line to the file ``trace`` when given."""
    if trace is None:
        return _ENGINES[engine](data)
    try:
        if engine == "native":
            return native_build(data, trace=trace)
        return reference.build(data, trace=trace)
    except OSError as exc:
        raise _UsageError(f"cannot write the trace {header_path(trace)}: {exc.strerror or exc}") from exc


def _cmd_replay(args: argparse.Namespace) -> int:
    build = _ENGINES[args.engine]
    lines: list[str] = []
    all_reproduced = True
    try:
        for turn in replay(args.trace, build):
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
    _write(sys.stdout, "".join(line + "\n" for line in lines))
    return 0 if all_reproduced else EXIT_NOT_REPRODUCED


def _shown(file: str) -> str:
    """How the input ``file`` (``-``: standard input) is named in a message."""
    return "standard input" if file == "-" else header_path(file)


def _read_input(file: str, limit: int, limit_name: str, field: str) -> bytes:
    """The bytes of ``file`` (``-``: standard input), at most ``limit`` (``ResourceLimitError``
    beyond); ``_UsageError`` if it cannot be read."""
    stdin = sys.stdin.buffer if sys.stdin is not None else None
    try:
        return read_capped(stdin if file == "-" else file, limit, limit_name=limit_name, field=field)
    except OSError as exc:
        raise _UsageError(f"cannot read {_shown(file)}: {exc.strerror or exc}") from exc


def _log_text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _read_json(file: str) -> Any:
    data = _read_input(file, MAX_INPUT_BYTES, "MAX_INPUT_BYTES", "input")
    try:
        return json.loads(data, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a repeated key
        raise _UsageError(f"invalid JSON in {_shown(file)}: {exc}") from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a ``dict``; raises ``ValueError`` naming a key given twice in it."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key)
                if len(shown) > 80:
                    shown = shown[:76] + '..."'
                raise ValueError(f"key {shown} given twice in one object")
            seen.add(key)
    return obj


def _read_log(file: str) -> str:
    """The pytest log at ``file`` (``-``: standard input) as text: UTF-8, undecodable bytes
    replaced; at most ``MAX_LOG_BYTES``."""
    return _log_text(_read_input(file, MAX_LOG_BYTES, "MAX_LOG_BYTES", "pytest_log"))


def _write(stream: TextIO | None, text: str) -> None:
    """Write all of ``text`` to ``stream`` (standard output; ``OutputError`` if it cannot be
    written, see :func:`repo_context._io.write_stream`)."""
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
    group.add_argument("--budget", type=int, metavar="N", help="budget in the cost's unit")
    group.add_argument(
        "--cost", choices=["chars", "tokens"], default=None, help="unit: characters (default) or tokens"
    )
    group.add_argument(
        "--encoding",
        choices=["o200k_base", "cl100k_base"],
        default=None,
        help="token encoding with --cost tokens (default o200k_base)",
    )
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


def _cmd_build(args: argparse.Namespace) -> int:
    data = _read_json(args.file)
    cost = _cost_options(args, data.get("cost") if isinstance(data, dict) else None)
    if isinstance(data, dict) and (cost is not None or args.budget is not None):
        data = dict(data)
        if cost is not None:
            data["cost"] = cost
        if args.budget is not None:
            data.pop("max_chars", None)
            data.pop("maxChars", None)
            data["budget"] = args.budget
    result = _build_with(args.engine, data, args.trace)
    out = result_json(result) + "\n" if args.format == "json" else _markdown_section(result)
    _write(sys.stdout, out)
    # The JSON form carries missing_critical; the warning only with --require-failure.
    return _warn_missing("build", result, args.require_failure) if args.require_failure else 0


def _cmd_context(args: argparse.Namespace) -> int:
    if not Path(args.repo).is_dir():
        raise _UsageError(f"not a directory: {header_path(args.repo)}")
    log_text = _read_log(args.pytest_log)
    junit_xml: bytes | None = None
    if args.junit_xml is not None:
        junit_xml = _read_input(args.junit_xml, MAX_JUNIT_BYTES, "MAX_JUNIT_BYTES", "junit_xml")
    cost = _cost_options(args)
    if args.max_chars is not None and args.budget is not None:
        raise _UsageError("give --budget or --max-chars, not both")
    if args.max_chars is not None and cost is not None and cost.get("unit", "chars") != "chars":
        raise _UsageError(f"--max-chars is a character budget; with --cost {cost['unit']} give --budget")
    if args.budget is not None:
        budget = args.budget
    elif args.max_chars is not None:
        budget = args.max_chars
    else:
        tokens = cost is not None and cost.get("unit") == "tokens"
        budget = DEFAULT_MAX_TOKENS if tokens else DEFAULT_MAX_CHARS
    try:
        report = _context(
            args.repo,
            log_text,
            query=args.query,
            max_chars=budget,
            engine=args.engine,
            cost=cost,
            junit_xml=junit_xml,
            trace=args.trace,
        )
    except OSError as exc:
        where = header_path(str(exc.filename or args.repo))
        raise _UsageError(f"cannot read {where}: {exc.strerror or exc}") from exc
    except LogFormatError as exc:
        raise _UsageError(str(exc)) from exc
    failure = report.gathered.failure
    if failure is None:
        warn("repo-context context: warning: no failing test found in the log")
    elif failure.frames and not any(pf.frame in failure.frames for pf in report.gathered.frames):
        # (a frame found from the test id alone does not count: the log's paths matched nothing)
        warn(
            f"repo-context context: warning: no traceback frame of the log is a file of "
            f"{header_path(args.repo)} (relative paths are taken from there)"
        )
    if args.format == "json":
        _write(sys.stdout, context_json(report) + "\n")
    else:
        _write(sys.stdout, report.markdown())
    return _warn_missing("context", report.result, args.require_failure)


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
        "were all left out (missing_critical)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = _ArgumentParser(
        prog="repo-context",
        description="Rank, de-duplicate and pack code-context candidates for coding agents.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    build.add_argument(
        "--engine",
        choices=sorted(_ENGINES),
        default="native",
        help="the Rust engine (default) or the pure-Python reference",
    )
    build.add_argument(
        "--format",
        choices=["json", "markdown"],
        default="json",
        help="print the result as JSON (default) or as a Markdown section",
    )
    _add_require_failure(build)
    _add_trace(build)
    _add_cost_options(build)
    build.set_defaults(run=_cmd_build)

    context = commands.add_parser(
        "context",
        help="build a context for a failing pytest run in a repository",
        description="Gather failure, reference and search windows for the first failing "
        "test of a pytest log and build the context.",
    )
    context.add_argument(
        "--repo", required=True, metavar="DIR", help="the repository folder the tests ran in"
    )
    context.add_argument(
        "--pytest-log",
        required=True,
        metavar="FILE",
        help="test output (pytest in any --tb style, unittest, a traceback) or a JUnit XML "
        "report, or - for standard input",
    )
    context.add_argument(
        "--junit-xml",
        metavar="FILE",
        default=None,
        help="the run's JUnit XML report (pytest --junitxml): fills in tracebacks the log lacks",
    )
    context.add_argument("--query", metavar="TEXT", default=None, help="extra words for the search source")
    context.add_argument(
        "--max-chars",
        type=int,
        default=None,
        metavar="N",
        help=f"budget in characters (default {DEFAULT_MAX_CHARS}; with --cost tokens, --budget "
        f"defaults to {DEFAULT_MAX_TOKENS})",
    )
    context.add_argument(
        "--format",
        choices=["markdown", "json"],
        default="markdown",
        help="Markdown context and summary (default), or the result JSON",
    )
    context.add_argument(
        "--engine",
        choices=sorted(_ENGINES),
        default="native",
        help="the Rust engine (default) or the pure-Python reference",
    )
    _add_require_failure(context)
    _add_trace(context)
    _add_cost_options(context)
    context.set_defaults(run=_cmd_context)

    replayer = commands.add_parser(
        "replay",
        help="rebuild every build of a trace and show what changed between turns",
        description="Rebuild each line of a trace (--trace) from its saved input, check the digest, "
        "and list the items added, dropped (and why) and moved between consecutive turns. Exit 4 "
        "when a rebuild does not reproduce its recorded digest.",
    )
    replayer.add_argument("trace", metavar="TRACE", help="the trace file")
    replayer.add_argument(
        "--engine", choices=sorted(_ENGINES), default="native", help="the engine that rebuilds"
    )
    replayer.set_defaults(run=_cmd_replay)
    add_eval_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``repo-context`` command line with ``argv`` (default ``sys.argv[1:]``) and
    return the exit status: 0; 5 with ``--require-failure`` when a failing file's failure
    evidence was all left out; 4 when ``replay`` does not reproduce a digest; 2 for invalid
    input or a bad command line, 1 if the output cannot be written (either with one line on
    standard error). ``--help`` prints the help
    and returns 0 (1 if it cannot be written). A standard stream closed when the program
    starts gets the null device, so no file opened later takes its place; output for a
    closed standard output fails (status 1)."""
    reserve_standard_fds()
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already reported
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    except OutputError as exc:  # --help could not be written
        warn(f"repo-context: {_one_line(str(exc))}")
        return 1
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except (_UsageError, InvalidInputError) as exc:
        warn(f"repo-context {args.command}: {_one_line(str(exc))}")
        return 2
    except OutputError as exc:
        warn(f"repo-context {args.command}: {_one_line(str(exc))}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
