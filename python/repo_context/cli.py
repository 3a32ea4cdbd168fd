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
[--budget N | --max-chars N] [--cost ...] [--template ...] [--format markdown|json]
[--report FILE] [--cache-dir DIR | --no-cache] [--engine native|reference]``
    Gather failure, reference and search windows for the first failing test in a pytest
    log (``FILE``, or ``-`` for standard input) of a run made in ``DIR``, build the context
    (through a ``repo_context.Workspace``: what is derived from the repository is cached in
    ``DIR`` of ``--cache-dir``, by default under the user cache directory) and print exactly
    the prompt section on standard output: with Markdown output the budget counts the rendered
    section (the Markdown template unless ``--template`` says otherwise), so what is printed,
    counted in the budget's unit, is within the budget. The failure and omission report goes
    to standard error, or to ``--report FILE``. With ``--format json``, print one JSON
    document instead: the build result's JSON form with two more top-level keys,
    ``"policy_omitted"``: the windows the sources took and the safe reader withheld, whatever
    their priority (a file that looks like a secret, even the failure file; a window that no
    longer matches its file), each ``{"path", "start", "end", "source", "reason": "policy",
    "why"}`` (``why`` such as ``"policy: secret name"`` or ``"policy: secret content"``; an
    empty list when none), and ``"failure"`` (``ContextResult.to_dict``).

``repo-context mcp [--cache-dir DIR | --no-cache]``
    Serve the ``context_for_failure`` and ``build`` tools over the Model Context Protocol
    (standard I/O); needs the ``mcp`` extra (:mod:`repo_context.mcp_server`).

Exit status: 0 on success; 2 for invalid input (bad JSON, an invalid candidate or field,
an unreadable file or folder, a bad option or command line), with one line on standard error
and nothing on standard output; 1 if the output cannot be written (a full disk, a closed
pipe), with one line on standard error. Markdown output writes characters its stream cannot
encode (lone surrogates) as backslash escapes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from . import BuildResult, InvalidInputError, reference
from . import build as native_build
from .composer import render, render_markdown
from .cost import Cost
from .evaluate import add_eval_parser
from .sources.pytest_log import LogFormatError
from .workspace import ContextResult, Workspace

__all__ = ["DEFAULT_MAX_CHARS", "ContextReport", "context_json", "main", "result_json", "run_context"]

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


class _OutputError(Exception):
    """The output could not be written (exit status 1)."""


class _ArgumentParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on standard error (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"repo-context: {_one_line(message)} (see --help)\n")


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


#: The outcome of ``repo-context context`` (:class:`repo_context.ContextResult`).
ContextReport = ContextResult


def context_json(report: ContextReport) -> str:
    """The JSON output of ``repo-context context``: ``ContextResult.to_dict()`` (the build
    result's JSON form, ``"policy_omitted"`` and ``"failure"``), on one line, ASCII only."""
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
) -> ContextReport:
    """Gather candidates for the failing test in ``pytest_log`` (a file, read as UTF-8
    with undecodable bytes replaced; a JUnit XML report is recognised as such) in the
    repository folder ``repo`` and build the context with ``engine`` (``"native"`` or
    ``"reference"``) in ``max_chars`` characters of content (default ``DEFAULT_MAX_CHARS``),
    or, with a ``cost`` model (a ``Cost`` or its mapping form), in that many units of it.
    ``junit_xml`` is the run's JUnit XML report (``pytest --junitxml``), if any: it fills
    in the tracebacks the log lacks; ``test`` chooses the failing test (default the first).
    Nothing is cached on disk (``repo_context.Workspace`` keeps and caches what it derives).

    Raises ``OSError`` if the log cannot be read, ``NotADirectoryError`` if ``repo`` is not
    a folder, ``InvalidInputError`` for an invalid budget, ``LogFormatError`` (a
    ``ValueError``) for unreadable JUnit XML, ``LookupError`` if ``test`` names no failure.
    """
    log_text = Path(pytest_log).read_text(encoding="utf-8", errors="replace")
    report = Path(junit_xml).read_bytes() if junit_xml is not None else None
    budget = DEFAULT_MAX_CHARS if max_chars is None else max_chars
    return Workspace(repo, cache=False).context(
        log_text,
        junit_xml=report,
        test=test,
        query=query,
        budget=budget,
        cost={"unit": "chars"} if cost is None else cost,
        engine=engine,
    )


def _read_json(file: str) -> Any:
    try:
        data = sys.stdin.buffer.read() if file == "-" else Path(file).read_bytes()
    except OSError as exc:
        raise _UsageError(f"cannot read {file}: {exc.strerror or exc}") from exc
    try:
        return json.loads(data, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a repeated key
        raise _UsageError(f"invalid JSON in {'standard input' if file == '-' else file}: {exc}") from exc


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
    replaced."""
    try:
        if file == "-":
            return sys.stdin.buffer.read().decode("utf-8", errors="replace")
        return Path(file).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _UsageError(f"cannot read {file}: {exc.strerror or exc}") from exc


def _write(stream: TextIO, text: str) -> None:
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    try:
        stream.write(text)
        stream.flush()
    except OSError as exc:  # a full disk, a closed pipe (BrokenPipeError)
        _discard(stream)
        raise _OutputError(f"cannot write the output: {exc.strerror or exc}") from exc


def _discard(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at the null device, so that what is still buffered
    goes nowhere when Python flushes the standard streams at exit, instead of failing a second
    time (the advice of Python's documentation for ``BrokenPipeError``)."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a StringIO, say)
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


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
    result = _ENGINES[args.engine](data)
    out = result_json(result) + "\n" if args.format == "json" else _markdown_section(result)
    _write(sys.stdout, out)
    return 0


def _cmd_context(args: argparse.Namespace) -> int:
    if not Path(args.repo).is_dir():
        raise _UsageError(f"not a directory: {args.repo}")
    log_text = _read_log(args.pytest_log)
    junit_xml: bytes | None = None
    if args.junit_xml is not None:
        try:
            junit_xml = Path(args.junit_xml).read_bytes()
        except OSError as exc:
            raise _UsageError(f"cannot read {args.junit_xml}: {exc.strerror or exc}") from exc
    cost = _cost_options(args) or {}
    if args.max_chars is not None and args.budget is not None:
        raise _UsageError("give --budget or --max-chars, not both")
    if args.max_chars is not None and cost.get("unit", "chars") != "chars":
        raise _UsageError(f"--max-chars is a character budget; with --cost {cost['unit']} give --budget")
    if args.budget is not None:
        budget = args.budget
    elif args.max_chars is not None:
        budget = args.max_chars
    else:
        budget = DEFAULT_MAX_TOKENS if cost.get("unit") == "tokens" else DEFAULT_MAX_CHARS
    if args.format == "markdown":
        # The budget covers what is printed: the section in its template, Markdown by default.
        cost.setdefault("template", "markdown")
    try:
        workspace = Workspace(args.repo, cache_dir=args.cache_dir, cache=not args.no_cache)
        report = workspace.context(
            log_text,
            junit_xml=junit_xml,
            query=args.query,
            budget=budget,
            cost=cost,
            engine=args.engine,
            test=getattr(args, "test", None),
        )
    except OSError as exc:
        raise _UsageError(f"cannot read {exc.filename or args.repo}: {exc.strerror or exc}") from exc
    except (LogFormatError, LookupError) as exc:
        raise _UsageError(str(exc).strip("'\"")) from exc
    failure = report.gathered.failure
    if failure is None:
        print("repo-context context: warning: no failing test found in the log", file=sys.stderr)
    elif failure.frames and not any(pf.frame in failure.frames for pf in report.gathered.frames):
        # (a frame found from the test id alone does not count: the log's paths matched nothing)
        print(
            f"repo-context context: warning: no traceback frame of the log is a file of "
            f"{args.repo} (relative paths are taken from there)",
            file=sys.stderr,
        )
    if args.format == "json":
        _write(sys.stdout, context_json(report) + "\n")
    else:
        # Standard output holds exactly the budgeted section; the report goes elsewhere.
        _write(sys.stdout, report.section)
    if args.report is not None:
        try:
            Path(args.report).write_text(report.summary(), encoding="utf-8", errors="backslashreplace")
        except OSError as exc:
            raise _OutputError(f"cannot write {args.report}: {exc.strerror or exc}") from exc
    elif args.format != "json":
        _write(sys.stderr, report.summary())
    return 0


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
        help="the Markdown section on standard output and the report on standard error "
        "(default), or one JSON document with the result and the omissions",
    )
    context.add_argument(
        "--engine",
        choices=sorted(_ENGINES),
        default="native",
        help="the Rust engine (default) or the pure-Python reference",
    )
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
        help="folder of the index cache (default: repo-context in the user cache directory)",
    )
    context.add_argument(
        "--no-cache", action="store_true", help="keep the derived index in memory only, nothing on disk"
    )
    _add_cost_options(context)
    context.set_defaults(run=_cmd_context)
    mcp = commands.add_parser(
        "mcp",
        help="run the Model Context Protocol server over standard I/O",
        description="Serve the context_for_failure and build tools over MCP (stdio); needs the "
        "mcp extra (pip install 'repo-context[mcp]').",
    )
    mcp.add_argument("--cache-dir", metavar="DIR", default=None, help="folder of the index cache")
    mcp.add_argument("--no-cache", action="store_true", help="keep the derived index in memory only")
    mcp.set_defaults(run=_cmd_mcp)
    add_eval_parser(commands)
    return parser


def _cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from .mcp_server import run
    except ImportError as exc:
        raise _UsageError(f"the MCP server needs the mcp extra (repo-context[mcp]): {exc}") from exc
    run(cache_dir=args.cache_dir, cache=not args.no_cache)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``repo-context`` command line with ``argv`` (default ``sys.argv[1:]``) and
    return the exit status: 0; 2 for invalid input or a bad command line, 1 if the output
    cannot be written (either with one line on standard error). ``--help`` prints the help
    and returns 0."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2), already reported
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except (_UsageError, InvalidInputError) as exc:
        print(f"repo-context {args.command}: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except _OutputError as exc:
        print(f"repo-context {args.command}: {_one_line(str(exc))}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
