"""Resource limits: every cap that guards the work against hostile or accidental input, in one
place.

A :class:`Limits` holds one setting per limit, each an ``int >= 0`` in the unit its
documentation gives; :data:`DEFAULT_LIMITS` holds the defaults. Every function that accepts
limits takes an optional ``limits=`` (:class:`bugcontext.ContextBuilder`,
:func:`bugcontext.build_table`, :class:`bugcontext.Workspace`,
:class:`bugcontext.job.sources.Repository`, :func:`bugcontext.core._io.read_capped`); without it, the
module-level :data:`DEFAULT_LIMITS` is read when the call is made. The command line takes
``--limit NAME=N`` (repeatable), e.g. ``bugcontext context --limit max_log_bytes=1000000``.

Each limit is checked **before** the work it guards: a read is capped at the limit plus one
byte, a count is checked before the next item is allocated or walked. Going over a limit is
one of two things, fixed per setting (:func:`behaviour` tells which):

* **an error**: :class:`~bugcontext.core.errors.ResourceLimitError` (an ``InvalidInputError``),
  whose ``limit`` is the setting's name, ``value`` the amount found (``maximum + 1``, a lower
  bound, when the work stopped at the limit: the message then says "more than") and
  ``maximum`` the configured value; the message names all three. The command line exits with
  status 2 and one line. These are the caller's own inputs: ``max_input_bytes``,
  ``max_log_bytes``, ``max_junit_bytes``, ``max_issue_bytes``, ``max_coverage_bytes``,
  ``max_query_chars``, ``max_candidates``, ``max_total_chars``, and ``max_files`` (a
  repository walk that never ends is most likely the wrong folder). The MCP server's time
  limits are errors too (a tool error naming the setting): ``mcp_call_seconds``,
  ``test_run_seconds``, ``max_result_bytes`` and ``mcp_client_roots``.
* **skipped, not an error**: inside a repository a single oversized file, a folder nested too
  deep, or an unusable ``.gitignore`` is a property of that repository, not of the request, so
  the rest of the repository is still used. The skipped file or folder is recorded in
  :attr:`bugcontext.job.sources.Repository.skipped` with the setting's name and value:
  ``max_file_bytes``, ``max_depth``, ``max_gitignore_bytes``, ``max_gitignore_patterns``,
  ``max_gitignore_pattern_chars``, ``max_frames`` (the frames between the first and last
  halves of a longer traceback), ``max_source_map_bytes`` (a larger source map is not read:
  the frame stays on the compiled file). A cache value over ``max_cache_value_bytes`` is a miss
  (derived again), also not an error. ``mcp_workspaces`` bounds what the MCP server keeps
  in memory: past it the least recently used workspace is dropped, nothing is refused.
  A traced re-run (``--rerun``, :mod:`bugcontext.job.sources.rerun`) that reaches
  ``rerun_seconds`` is killed, and trace records past ``max_trace_bytes`` are cut or left
  out: either is reported with the context (its re-run notes), which is built from what
  remains, not an error.
  ``max_failure_blocks`` bounds the failure blocks of a context section; ``max_cache_bytes``
  the on-disk cache (past it the least recently used entries are removed).
* **clamped, not an error**: a request for more worker threads than ``max_threads`` (the
  ``threads=`` of :func:`bugcontext.build_many` and :func:`bugcontext.build_table`,
  ``--threads`` of ``build --jsonl`` and ``rerank``) runs on ``max_threads`` threads, said once
  on standard error (:func:`clamp_threads`). A failure block's message longer than
  ``max_failure_message_chars`` is cut to it, with a visible marker saying how much was cut,
  and so is a test id a failure block shows longer than ``max_failure_test_chars``.

Caps that shape the ranking's output rather than guard resources (``MAX_CALLERS`` windows per
source, ``MAX_DEFINITIONS``, ``MAX_PER_FILE`` search hits, ...) are tuning and stay with their
sources; the line-number bound ``MAX_LINE`` is part of the build contract's validation.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from bugcontext.core._cut import shorten
from bugcontext.core.errors import InvalidInputError, ResourceLimitError

__all__ = [
    "DEFAULT_LIMITS",
    "Limits",
    "add_limit_option",
    "behaviour",
    "check_context_inputs",
    "check_text",
    "clamp_threads",
    "cores",
    "describe",
    "limit_error",
    "over",
    "resolve",
    "unit",
]

Behaviour = Literal["error", "skip", "clamp"]


def cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask where the system
    has one, else ``os.cpu_count()``; 1 if unknown)."""
    counted = getattr(os, "process_cpu_count", None)
    if counted is not None:
        return int(counted() or 1)
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def _setting(default: int, unit: str, behaviour: Behaviour, guards: str) -> Any:
    return field(default=default, metadata={"unit": unit, "behaviour": behaviour, "guards": guards})


@dataclass(frozen=True)
class Limits:
    """The resource limits, one field per setting (every value an ``int >= 0``; ``bool`` is
    rejected). Make one with keyword arguments, changing only what differs from the defaults:
    ``Limits(max_log_bytes=1 << 20)``; :meth:`replace` derives another.

    Attributes:
        max_input_bytes: bytes of a JSON build input read from a file or standard input
            (``bugcontext build``), of one ``build --jsonl`` line, of an ``eval --cases``
            file and of a trace file read for replay. Error. Default 256 MiB.
        max_log_bytes: bytes (UTF-8) of a test log: ``--log``, the pytest plugin's report
            of one failure, the MCP server's log, the ``log_text`` given to
            :meth:`bugcontext.Workspace.context`. Error. Default 64 MiB.
        max_junit_bytes: bytes (UTF-8) of a JUnit XML report (``--junit-xml``). Error.
            Default 64 MiB.
        max_issue_bytes: bytes (UTF-8) of the issue text (``--issue``, ``issue=``). Error.
            Default 1 MiB (a GitHub issue body holds at most 65,536 characters).
        max_coverage_bytes: bytes of a coverage report (``--coverage``, ``coverage=``, the MCP
            server's ``coverage_file``). Error. Default 256 MiB.
        max_query_chars: characters (code points) of the extra search words (``--query``,
            ``query=``). Error. Default 65,536.
        max_candidates: candidates in one build (per group in ``build_table``). Error.
            Default 4,000,000.
        max_total_chars: content characters (code points) summed over the candidates of one
            build, checked candidate by candidate as they are read. Error. Default ``2**30``.
        max_files: entries (files and folders, skipped folders not entered) one walk of a
            repository visits. Error. Default 1,000,000.
        max_file_bytes: bytes of one repository file; a larger file is skipped, not an error.
            Default 1 MiB.
        max_depth: folders below the repository root; a deeper folder is not entered and a
            file in it not read: skipped, not an error. Default 1,024.
        max_gitignore_bytes: bytes of one ``.gitignore`` or ``.git/info/exclude``; a larger
            one's rules are not applied: skipped, not an error. Default 1 MiB.
        max_gitignore_patterns: lines (patterns, comments and blank lines included) of one
            rules file; a longer one's rules are not applied: skipped, not an error.
            Default 10,000.
        max_gitignore_pattern_chars: characters of one ``.gitignore`` pattern; a longer
            pattern is left out (as one that cannot be compiled): skipped, not an error.
            Default 4,096 (``PATH_MAX`` on Linux).
        mcp_call_seconds: seconds one MCP tool call may take (:mod:`bugcontext.integrations.mcp_server`);
            past it the call returns a tool error and its worker is abandoned. Error.
            Default 900.
        test_run_seconds: seconds a test run started by the MCP server may take; its process
            group is then killed. Error. Default 600.
        max_cache_value_bytes: bytes of one value of a workspace's on-disk cache once
            decompressed (its ``marshal`` form): decompression stops one byte past it and the
            value is taken as damaged (a miss: derived again from the files), and a larger
            value is not stored: skipped, not an error. Default 256 MiB.
        max_threads: worker threads of one call (``threads=`` of ``build_many`` and
            ``build_table``, ``--threads``); a larger request is clamped, not an error: it runs
            on ``max_threads`` threads and says so once on standard error (0 counts as 1).
            Default: the cores this process may run on (:func:`cores`).
        max_frames: traceback frames of one failure whose paths are mapped to repository
            files (and, apart, its frames past every file, ``TestFailure.beyond``); of a
            longer traceback the first and last halves are used and the frames
            between are left out (recorded in :attr:`bugcontext.job.sources.Repository.skipped`
            under ``"<frames>"``): skipped, not an error. Default 1,000 (Python's default
            recursion limit).
        max_result_bytes: bytes (UTF-8 JSON) of one MCP tool result, its text and structured
            content together. Error. Default 64 MiB.
        mcp_workspaces: repositories the MCP server keeps a workspace for; past it the least
            recently used one is dropped (its cache stays on disk): skipped, not an error.
            Default 8.
        mcp_client_roots: roots an MCP client may list (``roots/list``). Error. Default 1,000.
        rerun_seconds: seconds a traced re-run of the failing tests (``--rerun``, ``rerun=``,
            the MCP ``rerun``) may take, and as much again for its untraced timing run; its
            process group is then killed and the timeout reported, skipped, not an error.
            Default 600.
        max_trace_bytes: bytes of the tracer's records of one re-run, every traced process's
            together (each process cuts its own record to it: call edges first, then the
            passing tests' runs); records past it are reported and left out:
            skipped, not an error. Default 64 MiB.
        max_source_map_bytes: bytes of one source map of the repository (``dist/x.js.map``)
            read to map a frame in compiled JavaScript back to its TypeScript source; a larger
            map is not read (the frame stays on the ``.js`` file): skipped, not an error.
            Default 16 MiB.
        max_failure_blocks: failing tests given a failure block at the head of the context
            section (:attr:`bugcontext.ContextResult.failure_blocks`); the tests past it get
            none: skipped, not an error. Default 3.
        max_failure_message_chars: characters (code points) of one failure block's exception
            message, after redaction; a longer message is cut there and ends with a visible
            ``[... N characters cut]`` marker: clamped, not an error. Default 2,000.
        max_failure_test_chars: characters (code points) of the test id a failure block shows,
            after redaction; a longer id is cut there and ends with a visible
            `` [... N characters cut]`` marker on its line (the whole id is kept where it is
            matched: selecting the test, the failing tests list): clamped, not an error.
            Default 1,000.
        max_cache_bytes: bytes of a cache folder's entries on disk (``--cache-dir``, by
            default under the user cache directory); past it the least recently used entries
            are removed (:mod:`bugcontext.job._cache_admin`): skipped, not an error.
            Default 1 GiB.

    Raises:
        InvalidInputError: a value that is not an ``int >= 0`` (``field`` names the setting).
    """

    max_input_bytes: int = _setting(
        256 << 20, "bytes", "error", "build input, --jsonl line, cases, trace, MCP request line"
    )
    max_log_bytes: int = _setting(64 << 20, "bytes", "error", "test log")
    max_junit_bytes: int = _setting(64 << 20, "bytes", "error", "JUnit XML report")
    max_issue_bytes: int = _setting(1 << 20, "bytes", "error", "issue text")
    max_coverage_bytes: int = _setting(256 << 20, "bytes", "error", "coverage report")
    max_query_chars: int = _setting(65_536, "characters", "error", "extra search words")
    max_candidates: int = _setting(4_000_000, "candidates", "error", "candidates in one build")
    max_total_chars: int = _setting(1 << 30, "characters", "error", "content of one build")
    max_files: int = _setting(1_000_000, "entries", "error", "entries of one repository walk")
    max_file_bytes: int = _setting(1 << 20, "bytes", "skip", "one repository file")
    max_depth: int = _setting(1_024, "folders", "skip", "folder depth below the root")
    max_gitignore_bytes: int = _setting(1 << 20, "bytes", "skip", "one .gitignore file")
    max_gitignore_patterns: int = _setting(10_000, "lines", "skip", "lines of one .gitignore file")
    max_gitignore_pattern_chars: int = _setting(4_096, "characters", "skip", "one .gitignore pattern")
    mcp_call_seconds: int = _setting(900, "seconds", "error", "one MCP tool call")
    test_run_seconds: int = _setting(600, "seconds", "error", "a test run of the MCP server")
    max_cache_value_bytes: int = _setting(256 << 20, "bytes", "skip", "one decompressed cache value")
    max_threads: int = _setting(cores(), "threads", "clamp", "worker threads of one call")
    max_frames: int = _setting(1_000, "frames", "skip", "traceback frames of one failure")
    max_result_bytes: int = _setting(64 << 20, "bytes", "error", "one MCP tool result")
    mcp_workspaces: int = _setting(8, "workspaces", "skip", "workspaces kept by the MCP server")
    mcp_client_roots: int = _setting(1_000, "roots", "error", "roots listed by an MCP client")
    rerun_seconds: int = _setting(600, "seconds", "skip", "a traced re-run of the failing tests")
    max_trace_bytes: int = _setting(64 << 20, "bytes", "skip", "the trace records of one re-run")
    max_source_map_bytes: int = _setting(16 << 20, "bytes", "skip", "one source map of the repository")
    max_failure_blocks: int = _setting(3, "blocks", "skip", "failure blocks of one context section")
    max_failure_message_chars: int = _setting(2_000, "characters", "clamp", "one failure block's message")
    max_failure_test_chars: int = _setting(1_000, "characters", "clamp", "one failure block's test id")
    max_cache_bytes: int = _setting(1 << 30, "bytes", "skip", "entries of one cache folder")

    def __post_init__(self) -> None:
        for setting in dataclasses.fields(self):
            value = getattr(self, setting.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidInputError(setting.name, f"must be an int, not {type(value).__name__}")
            if value < 0:
                raise InvalidInputError(setting.name, f"must be >= 0, got {value}")
            object.__setattr__(self, setting.name, int(value))

    def replace(self, **changes: int) -> Limits:
        """A copy with the given settings changed (``InvalidInputError`` for an unknown name
        or a bad value)."""
        for name in changes:
            if name not in _NAMES:
                raise InvalidInputError(name, "is not a resource limit")
        return dataclasses.replace(self, **changes)

    @classmethod
    def parse(cls, assignments: Iterable[str], base: Limits | None = None) -> Limits:
        """``base`` (default :data:`DEFAULT_LIMITS`) with each ``NAME=N`` of ``assignments``
        applied (the ``--limit`` option; ``N`` is ASCII digits, with an optional sign and ``_``
        between digits).

        Raises:
            InvalidInputError: ``field`` ``"limit"`` for text not of the form ``NAME=N``, the
                setting's name for an unknown setting or a bad value.
        """
        changes: dict[str, int] = {}
        for text in assignments:
            name, sep, number = text.partition("=")
            name = name.strip()
            if not sep or not name:
                raise InvalidInputError("limit", f"must be NAME=N, got {text!r}")
            if name not in _NAMES:
                raise InvalidInputError(name, f"is not a resource limit (one of {', '.join(_NAMES)})")
            value = number.strip()
            # ASCII digits (int() would also take other scripts' digits); a long value is shown
            # cut short, and one past int()'s digit limit is refused like any other.
            if not _NUMBER.fullmatch(value) or len(value) > _MAX_DIGITS:
                shown = shorten(value, 40)
                raise InvalidInputError(name, f"must be an int, got {shown!r}")
            changes[name] = int(value)
        return resolve(base).replace(**changes)

    def to_dict(self) -> dict[str, int]:
        """The settings by name, in declaration order."""
        return dataclasses.asdict(self)


_NAMES = tuple(setting.name for setting in dataclasses.fields(Limits))
_NUMBER = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*")
_MAX_DIGITS = 4000
_FIELDS: Mapping[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(Limits)}

#: The defaults, read at call time by every function given no ``limits=``.
DEFAULT_LIMITS = Limits()


def resolve(limits: Limits | None) -> Limits:
    """``limits``, or the module's :data:`DEFAULT_LIMITS` as it is now when ``None``.

    Raises:
        InvalidInputError: ``field`` ``"limits"`` for anything but a :class:`Limits` or ``None``.
    """
    if limits is None:
        return DEFAULT_LIMITS
    if not isinstance(limits, Limits):
        raise InvalidInputError("limits", f"must be a Limits or None, not {type(limits).__name__}")
    return limits


def unit(name: str) -> str:
    """The unit of the setting ``name`` (``"bytes"``, ``"characters"``, ...)."""
    return str(_FIELDS[name].metadata["unit"])


def behaviour(name: str) -> Behaviour:
    """What going over the setting ``name`` does: ``"error"`` (``ResourceLimitError``),
    ``"skip"`` (the file, folder or pattern is left out and recorded) or ``"clamp"`` (the
    request is cut to the limit, said on standard error)."""
    found: Behaviour = _FIELDS[name].metadata["behaviour"]
    return found


_CLAMPED: set[tuple[int, int]] = set()  # (requested, maximum) pairs already said


def clamp_threads(requested: int | None, limits: Limits | None = None) -> int:
    """The worker threads for a request of ``requested`` (an ``int >= 1``, checked by the
    caller; ``None``: one per core): at most ``limits.max_threads`` (at least 1). A request over
    the limit is clamped, said once per process on standard error for each (request, limit)
    pair; ``None`` takes ``min(cores(), max_threads)`` silently."""
    maximum = max(resolve(limits).max_threads, 1)
    if requested is None:
        return min(cores(), maximum)
    if requested <= maximum:
        return requested
    if (requested, maximum) not in _CLAMPED:
        _CLAMPED.add((requested, maximum))
        said = f"over the limit max_threads = {maximum} threads: using {maximum}"
        try:  # two numbers, nothing to redact; a closed standard error has no reader left
            sys.stderr.write(f"bugcontext: {requested} threads asked, {said}\n")
        except (OSError, ValueError):
            pass
    return maximum


def over(name: str, value: int, maximum: int, *, exact: bool = True) -> str:
    """The words for an amount over a limit: ``"12 characters, over the limit max_total_chars
    = 10 characters"``; with ``exact=False`` (the work stopped at the limit) ``"more than 10
    characters, over ..."``."""
    what = unit(name)
    found = f"{value} {what}" if exact else f"more than {maximum} {what}"
    return f"{found}, over the limit {name} = {maximum} {what}"


def describe(name: str, subject: str, value: int, maximum: int, *, exact: bool = True) -> str:
    """``"{subject} is {over(...)}"`` (``over(...)`` alone for an empty ``subject``): the problem
    text of a :class:`ResourceLimitError` and of a skip record."""
    words = over(name, value, maximum, exact=exact)
    return f"{subject} is {words}" if subject else words


def limit_error(
    field: str,
    name: str,
    subject: str,
    value: int,
    maximum: int,
    *,
    exact: bool = True,
    index: int | None = None,
) -> ResourceLimitError:
    """The :class:`ResourceLimitError` for ``field`` (the input it limits) going over the
    setting ``name``: ``value`` found (with ``exact=False`` a lower bound, stored as
    ``maximum + 1``), ``maximum`` configured; ``subject`` names what was measured
    (``"/dev/zero"``, ``"total content"``)."""
    found = value if exact else maximum + 1
    problem = describe(name, subject, value, maximum, exact=exact)
    return ResourceLimitError(field, problem, index, limit=name, value=found, maximum=maximum)


def utf8_length(text: str, stop: int) -> tuple[int, bool]:
    """The length of ``text`` encoded as UTF-8 (a lone surrogate as 3 bytes) and whether it is
    exact: counted in pieces of 1 MiB of text and no further than past ``stop`` (then a lower
    bound above ``stop``), so the count takes a bounded amount of memory whatever the text."""
    if text.isascii():
        return len(text), True
    total = 0
    step = 1 << 20
    for start in range(0, len(text), step):
        total += len(text[start : start + step].encode("utf-8", "surrogatepass"))
        if total > stop and start + step < len(text):
            return total, False
    return total, True


def check_text(text: str | bytes, field: str, name: str, limits: Limits | None, subject: str) -> None:
    """Raise :func:`limit_error` (``field``, the setting ``name``) if ``text`` is longer than
    ``limits`` allows, in the setting's unit (``bytes``: the bytes, or the UTF-8 bytes of a
    ``str``; ``characters``: code points), before anything else is done with it; ``subject``
    names the text in the message."""
    maximum: int = getattr(resolve(limits), name)
    exact = True
    if unit(name) == "bytes" and isinstance(text, str):
        size, exact = utf8_length(text, maximum)
    else:
        size = len(text)
    if size > maximum:
        raise limit_error(field, name, subject, size, maximum, exact=exact)


def check_context_inputs(
    limits: Limits | None,
    log_text: str,
    junit_xml: str | bytes | None = None,
    query: str | None = None,
    issue: str | None = None,
) -> None:
    """The sizes of a context job's inputs against ``limits``, before any is parsed:
    ``log_text`` (``max_log_bytes``, field ``"pytest_log"``), ``junit_xml``
    (``max_junit_bytes``, ``"junit_xml"``), ``issue`` (``max_issue_bytes``, ``"issue"``),
    ``query`` (``max_query_chars``, ``"query"``); :func:`limit_error` for the first over."""
    check_text(log_text, "pytest_log", "max_log_bytes", limits, "the log")
    if junit_xml is not None:
        check_text(junit_xml, "junit_xml", "max_junit_bytes", limits, "the report")
    if issue is not None:
        check_text(issue, "issue", "max_issue_bytes", limits, "the issue text")
    if query is not None:
        check_text(query, "query", "max_query_chars", limits, "the query")


def add_limit_option(parser: Any) -> None:
    """Add ``--limit NAME=N`` (repeatable, into ``args.limit``) to an ``argparse`` parser; the
    command line turns it into ``args.limits`` with :meth:`Limits.parse`."""
    parser.add_argument(
        "--limit",
        metavar="NAME=N",
        action="append",
        default=[],
        help="set a resource limit (repeatable), one of the settings of bugcontext.core.limits.Limits: "
        + ", ".join(_NAMES),
    )
