"""bugcontext as a Model Context Protocol server (``bugcontext mcp``), over standard I/O.

Built on the official ``mcp`` Python SDK (2.x, ``MCPServer``). Two tools:

* ``context_for_failure``: the context job for a failing test of a repository
  (:meth:`bugcontext.Workspace.context`): the repository folder, the test output (its text,
  or a file holding it), optionally a JUnit XML report (text or file) and the node id of the
  failing test to build for; or the node id alone, when the server was started with
  ``allow_run`` (the server then runs that test with pytest first); the budget and the cost
  (unit, encoding, template, line numbers);
* ``build``: ``bugcontext build`` on a JSON input (candidates, budget, cost, failing files).

Each returns the rendered section as its text content, and the structured result as its
structured content. One :class:`bugcontext.Workspace` per repository folder is kept (the
``Limits.mcp_workspaces`` most recently used), so a call after the first reuses what was
derived (and the on-disk cache serves the first call of a new server or workspace).

The client is untrusted (a language model steered by whatever text it reads), so the server
gives it no more than its configuration allows (the threat model: ``docs/mcp.md``):

* **Roots.** Every path a tool receives (``repository``, ``log_file``, ``junit_file``, the
  file part of a test id to run) is resolved (``os.path.realpath``: symbolic links, ``..``)
  and must lie inside one of the server's roots (``roots=``, ``--root DIR``; default the
  current folder), compared by whole path components (:meth:`pathlib.PurePath.is_relative_to`
  on resolved paths), and, when the client declares the ``roots`` capability, inside one of
  the client's ``file://`` roots too (the intersection: the client can narrow the server's
  roots, never widen them). Anything else is the tool error :data:`OUTSIDE` (the same words
  whether the path exists or not).
* **Files.** Only regular files are read (a folder, a named pipe, a device or a socket is
  refused before it is opened, and the opened file is checked again), each at most
  ``Limits.max_log_bytes`` / ``max_junit_bytes`` bytes, within the call's time limit.
* **Test runs.** Running a test runs the repository's code: only with ``allow_run=True``
  (``--allow-run``). The interpreter is the server's ``python=`` (``--python PATH``), else
  the ``bin/python`` of the repository's own ``.venv`` or ``venv`` (a virtual environment
  inside the repository), else the call is a tool error; never the server's own
  interpreter, never a tool argument. The test id is passed after ``--``, may not start
  with ``-`` or ``@``, and its file part must name a test file (``test_*.py``,
  ``*_test.py``, not a link) or a folder without links leading out, inside the repository
  (:func:`_check_test_id`); doctests are not collected. The run is killed (its whole process
  group, and on Linux every process it left behind: :data:`bugcontext.job._run._REAPER`) after
  ``Limits.test_run_seconds`` or when the call's time limit passes.
* **Time.** A call has one time limit, ``Limits.mcp_call_seconds``, over the client's roots
  request, the tool's work and the making of its result (rendering, JSON, the screen), all
  blocking work in worker threads; past it the call returns a tool error, the worker is
  abandoned and the workspace it holds let go (a test run or a file read stops at the same
  deadline, and the context job stops at the next deadline check inside the long loops of
  its stages: :mod:`bugcontext.job._deadline`).
* **Size.** A result is at most ``Limits.max_result_bytes``; the client's roots at most
  ``Limits.mcp_client_roots``; an argument the tool does not take is refused.
* **Secrets.** Every tool result (its text and every string of its structured content) and
  every error text passes through :func:`bugcontext.core.secrets.redact`; the structured result
  lists what was replaced under ``"redacted"``. An error never holds a system error's file
  name, and echoes an argument cut short. Every JSON-RPC error (message and data) and every
  other reply is screened by the server's middleware (:func:`_screen_requests`), and again on
  its way out over standard I/O (:meth:`_Answers.send`); a request whose id holds a secret is
  refused (:func:`_line_reply`); the log is one screened line per record, never a traceback
  (:func:`_screened_logs`, :func:`_screen_loggers`).
* **Arguments.** An argument of the wrong type is one line naming it and what it takes
  (:func:`_argument_problems`), never pydantic's text.

A tool argument that names a path (now or in a later tool: a coverage report, a source map)
goes through ``_Scope.confine`` (a folder) or ``_read_regular`` (a file), and one that reaches
another program's command line is passed after ``--`` and refused if it starts with ``-`` or
``@`` (``_check_test_id``).

Nothing else in the package imports this module: it needs the ``mcp`` extra
(``pip install 'bugcontext[mcp]'``).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import fnmatch
import json
import logging
import os
import re
import stat
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from bugcontext.core._extras import needs

with needs("mcp"):
    import anyio
    import anyio.to_thread
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.context import Context
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp.server.mcpserver.resolve import ListRoots, Resolve
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage
    from mcp_types import (
        CallToolResult,
        ErrorData,
        InputRequiredResult,
        JSONRPCError,
        JSONRPCNotification,
        JSONRPCRequest,
        JSONRPCResponse,
        ListRootsResult,
        TextContent,
        jsonrpc_message_adapter,
    )
    from pydantic import StrictBool, StrictInt, StrictStr, ValidationError

from bugcontext import reference
from bugcontext.core import builder as native
from bugcontext.core._cut import shorten
from bugcontext.core._io import path_argument, redact_names, resolved_folder
from bugcontext.core.composer import header_path, render, render_markdown
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import DEFAULT_LIMITS, Limits, limit_error, over, resolve, utf8_length
from bugcontext.core.secrets import redact_json, redact_text
from bugcontext.job._run import (
    DeadlineReached,
    OutputTooLarge,
    StartError,
    TimedOut,
    repository_python,
    run_bounded,
)
from bugcontext.job.sources.execution import ExecutionRecord
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.paths import PATH_MAX
from bugcontext.job.sources.rerun import RERUN_MODES, RerunReport, log_failing_tests
from bugcontext.job.sources.reruns import rerun_for_log
from bugcontext.job.sources.runs import UnknownTestError
from bugcontext.job.sources.toolchain_rerun import toolchain_tests
from bugcontext.job.workspace import ContextResult, Workspace

__all__ = ["OUTSIDE", "create_server", "run"]

#: The tool error for a path outside the roots, after the argument's name
#: (``"log_file: the path is outside the server's roots"``): the same words whether the path
#: exists or not.
OUTSIDE = "the path is outside the server's roots"

_INSTRUCTIONS = (
    "bugcontext selects the code a model should see about a failing test. Call "
    "context_for_failure with the repository folder and the test output (pytest, unittest, a "
    "traceback or JUnit XML): it returns the prompt section, ranked and packed into the budget, "
    "and a structured result saying what was selected and what was left out and why. Every "
    "path must lie inside the server's roots."
)

_RUN_ENABLED = (
    "With a node id and no test output, the test is run first: running a repository's tests "
    "runs that repository's code. The server runs ``python -m pytest -rA --tb=long -p "
    "no:cacheprovider -p no:doctest -- NODEID`` (NODEID: a test file named test_*.py or "
    "*_test.py, or a folder, inside the repository) in the repository with the interpreter of its own "
    "configuration (--python, else the repository's .venv or venv), at most "
    "{seconds} seconds."
)
_RUN_DISABLED = (
    "Running tests is disabled on this server (it was started without --allow-run, because "
    "running a repository's tests runs that repository's code): give the test output."
)

_CONTEXT_DESCRIPTION = """Build the code context for a failing test.

repository: the folder the tests ran in. test_log: the test output (pytest in any --tb style,
unittest, a traceback; vitest, jest, mocha, node --test (spec or TAP); go test (plain, -v,
-json); cargo test or nextest; JUnit 4/5, Maven Surefire or Gradle; any log with stack traces;
or a JUnit XML report), its format told from its content; or log_file: a file holding it.
test: the id (or name) of the failing test to build for (default: the first failure; a
parametrised test's base id covers every failed parametrisation).
junit_xml: the run's JUnit XML report, if any (alone, without test_log, it is the test
output); or junit_file: a file holding it. coverage_file: a coverage
report of the failing tests (coverage.py's .coverage data file, its JSON report, LCOV or
Cobertura XML): the code they executed is failure evidence. rerun: true (or "failing"; "files"
for every test of their files) re-runs the failing tests under a tracer for that evidence (only
on a server started with --allow-run). query: extra search words.
budget: in the cost's unit (default 16000 characters or 4000 tokens). unit: "chars" or
"tokens"; encoding: "o200k_base" (default) or "cl100k_base"; template: "markdown" or "xml"
(the budget counts the rendered section); line_numbers: number the lines.

{run}

Every path (repository, log_file, junit_file, coverage_file) must be a path inside the server's
roots (symbolic links resolved); log_file, junit_file and coverage_file must be regular files.

Returns the section (text: it opens with the failure, one block per failing test used, then
the code) and, structured, the section, the result (ContextResult.to_dict(): the build result's
JSON form, the policy omissions, the failure and its failure blocks), the report (Markdown),
the timings in seconds and "redacted" (secrets the server replaced in this result).
"""

_BUILD_DESCRIPTION = """Rank, de-duplicate and pack candidates: the input of bugcontext build
(a JSON object: "candidates", "max_chars" or "budget" and "cost", "failure_files").
engine: "native" (Rust) or "reference" (pure Python).

Returns the section (text: the cost's template, else the Markdown section) and, structured,
the section, the build result's JSON form and "redacted" (secrets the server replaced in this
result).
"""

#: pytest's options before ``--`` and the node id: every result reported, long tracebacks,
#: no cache written into the repository, no doctest collection (only test files run).
PYTEST_OPTIONS = ("-rA", "--tb=long", "-p", "no:cacheprovider", "-p", "no:doctest")

#: The default of ``Limits.test_run_seconds``: the longest a test run started by
#: ``context_for_failure`` may take, in seconds (600).
PYTEST_TIMEOUT = DEFAULT_LIMITS.test_run_seconds

_CHUNK = 1 << 16
_T = TypeVar("_T")

#: The end of the current tool call's time limit (``time.monotonic()``), set where every
#: call passes (``_ScreenedServer.call_tool``) and read by the tool's worker.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("_DEADLINE", default=None)

#: The current tool call's arguments, set where every call passes (``_ScreenedServer.call_tool``):
#: an error text echoes any of their strings cut short (:func:`_message`).
_ARGUMENTS: contextvars.ContextVar[object] = contextvars.ContextVar("_ARGUMENTS", default=None)

#: The longest text of a tool argument echoed in an error, in characters.
_ECHO = 200

#: The longest error text a tool call returns, in characters.
_MESSAGE = 2000

#: The longest test id the server hands pytest, in characters.
MAX_TEST_ID = 65_536

#: The names pytest collects as test files by default (``python_files``).
TEST_FILES = ("test_*.py", "*_test.py")

#: Folders pytest never enters by default (``norecursedirs``), not walked when a test folder
#: is checked for links leading out; a virtual environment (``pyvenv.cfg``) neither.
_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")


def _cut(text: str) -> str:
    """``text`` cut to at most :data:`_ECHO` characters (then ``...``): the one cut of every
    argument echoed in an error."""
    return shorten(text, _ECHO)


def _shown(text: str) -> str:
    """``text`` as echoed in an error: cut (:func:`_cut`), control characters escaped
    (:func:`bugcontext.core.composer.header_path`)."""
    return header_path(_cut(text))


#: The most values of a call's arguments looked at for long strings to cut in an error text.
_ECHO_WALK = 10_000


def _long_strings(arguments: object) -> list[str]:
    """The strings (keys too) of the JSON value ``arguments`` longer than :data:`_ECHO`, the
    longest first (at most :data:`_ECHO_WALK` values looked at)."""
    found: set[str] = set()
    pending = [arguments]
    seen = 0
    while pending and seen < _ECHO_WALK:
        item = pending.pop()
        seen += 1
        if isinstance(item, str):
            if len(item) > _ECHO:
                found.add(item)
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
    return sorted(found, key=len, reverse=True)


def _cut_echoes(text: str, arguments: object) -> str:
    """``text`` with every echo of a long string of the call's ``arguments`` (as it is, or as
    Python's ``repr`` quotes it, as the library's errors do) cut (:func:`_cut`)."""
    for value in _long_strings(arguments):
        quoted = repr(value)
        if quoted in text:
            text = text.replace(quoted, repr(_cut(value)))
        if value in text:
            text = text.replace(value, _cut(value))
    return text


def _too_long(path: str) -> bool:
    return len(path) > PATH_MAX or len(path.encode("utf-8", "surrogatepass")) > PATH_MAX


class _Expired(Exception):
    """The call's deadline passed inside the worker."""


def _call_expired(limits: Limits) -> ToolError:
    return ToolError(f"the call took {over('mcp_call_seconds', 0, limits.mcp_call_seconds, exact=False)}")


class _Scope:
    """Where a call may reach: the server's roots and, when the client declared some, the
    client's roots (``None``: the client declared none), every one a resolved folder."""

    def __init__(self, server: tuple[Path, ...], client: tuple[Path, ...] | None) -> None:
        self.server = server
        self.client = client

    def contains(self, real: Path) -> bool:
        def inside(folders: Iterable[Path]) -> bool:
            return any(real.is_relative_to(folder) for folder in folders)

        return inside(self.server) and (self.client is None or inside(self.client))

    def confine(self, path: str, field: str) -> Path:
        """``path`` resolved (relative to the server's working folder), if it lies inside the
        scope; else the tool error ``"{field}: the path is outside the server's roots"`` (for
        a path longer than ``PATH_MAX`` bytes too, which names nothing, without resolving it)."""
        if _too_long(path):
            raise ToolError(f"{field}: {OUTSIDE}")
        try:
            real = Path(os.path.realpath(path))
        except (ValueError, OSError):  # a NUL byte; a path the system cannot take
            raise ToolError(f"{field}: {OUTSIDE}") from None
        if not self.contains(real):
            raise ToolError(f"{field}: {OUTSIDE}")
        return real


def _file_root(uri: str) -> Path | None:
    """The resolved folder of a ``file://`` root URI (``None`` for another scheme or host)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    try:
        return Path(os.path.realpath(urllib.request.url2pathname(parts.path)))
    except (ValueError, OSError):
        return None


def _client_roots(ctx: Context[Any, Any]) -> ListRoots | ListRootsResult | None:
    """The client's roots (``roots/list``) when it declared the ``roots`` capability, else
    ``None`` (the resolver of the tools' hidden ``client_roots`` parameter)."""
    try:
        capabilities = ctx.client_capabilities
    except ValueError:  # called outside a request (MCPServer.call_tool directly): no client
        return None
    if capabilities is None or capabilities.roots is None:
        return None
    return ListRoots()


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _opened_path(fd: int) -> Path | None:
    """The path the system says the open file ``fd`` has (Linux ``/proc``; ``None`` where
    there is no such view)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


#: Why a file argument naming a secret by its name is refused.
SECRET_FILE = "is a secret by its name (.env*, a private key, a credential file, a command history): not read"


def _refuse_secret_file(real: Path, path: str, arg: str, shown: str) -> None:
    """The tool error ``"{arg}: PATH is a secret by its name ..."`` when the file ``path``
    (resolved: ``real``) has the name of a file the repository's reader withholds whole
    (:func:`bugcontext.job.sources.files.secret_name`: ``.env``, ``id_rsa``, ``.netrc``, ...),
    as written or once links are resolved: such a file is never read as a log or report."""
    from bugcontext.job.sources.files import secret_name

    given = path.replace(os.sep, "/").rstrip("/")
    if secret_name(real.as_posix()) or secret_name(given):
        raise ToolError(f"{arg}: {shown} {SECRET_FILE}")


def _read_regular(
    scope: _Scope, path: str, arg: str, limit: str, field: str, limits: Limits, deadline: float
) -> bytes:
    """The bytes of the regular file ``path`` (the tool argument ``arg``) inside ``scope``, at
    most the setting ``limit`` of ``limits`` (``ResourceLimitError`` for ``field``), read
    before ``deadline`` (``time.monotonic()``). A folder, pipe, device or socket is refused
    before it is opened (``os.stat``) and again on the opened file (``os.fstat``: the open
    neither follows a link nor blocks), so reading never waits on a writer."""
    real = scope.confine(path, arg)
    shown = _shown(path)
    _refuse_secret_file(real, path, arg, shown)
    try:
        info = os.stat(real)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{arg}: {shown} is {_kind(info.st_mode)}, not a regular file")
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
        fd = os.open(real, flags)
    except OSError as exc:
        raise ToolError(f"{arg}: cannot read {shown}: {exc.strerror or type(exc).__name__}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{arg}: {shown} is {_kind(info.st_mode)}, not a regular file")
        opened = _opened_path(fd)
        if opened is not None and not scope.contains(opened):
            raise ToolError(f"{arg}: {OUTSIDE}")  # replaced by a link after the check
        if opened is not None:
            _refuse_secret_file(opened, path, arg, shown)
        maximum: int = getattr(limits, limit)
        if info.st_size > maximum:
            raise limit_error(field, limit, shown, info.st_size, maximum)
        chunks: list[bytes] = []
        total = 0
        while True:
            if time.monotonic() > deadline:
                raise _Expired
            try:
                chunk = handle.read(min(_CHUNK, maximum + 1 - total))
            except OSError as exc:
                raise ToolError(f"{arg}: cannot read {shown}: {exc.strerror or type(exc).__name__}") from None
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > maximum:
                raise limit_error(field, limit, shown, total, maximum, exact=False)


def _interpreter(root: Path, configured: Path | None) -> Path:
    """The interpreter that runs a test of the repository ``root``: ``configured`` (the
    server's ``python=``), else the ``bin/python`` of the repository's ``.venv`` or ``venv``,
    a virtual environment (``pyvenv.cfg``) inside the repository (resolved); a tool error if
    there is none."""
    if configured is not None:
        return configured
    found = repository_python(root)
    if found is not None:
        return found
    raise ToolError(
        "test: no interpreter to run the test with: the repository has no virtual environment "
        "(.venv or venv, with pyvenv.cfg and bin/python), and the server was started without --python"
    )


def _check_test_id(root: Path, node_id: str, limits: Limits, deadline: float | None = None) -> None:
    """A tool error unless ``node_id`` is a test id to hand pytest: at most
    :data:`MAX_TEST_ID` characters, not an option or an argument file (a leading ``-`` or
    ``@``), and its file part (before the first ``::``, at most ``PATH_MAX`` bytes) inside
    the repository ``root`` once resolved, itself not a symbolic link, and either a regular
    file named as pytest names test files (:data:`TEST_FILES`) or a folder holding no
    symbolic link that leads out of the repository (walked without following links, folders
    pytest does not enter by default left out, at most ``limits.max_files`` entries, before
    ``deadline``, a ``time.monotonic()`` value, else ``_Expired``)."""
    shown = _shown(node_id)
    if not node_id:
        raise ToolError("test: the node id is empty")
    if node_id[0] in "-@":
        raise ToolError(f"test: not a test node id: {shown} (it may not start with '-' or '@')")
    part = node_id.split("::", 1)[0]
    if len(node_id) > MAX_TEST_ID or _too_long(part):
        raise ToolError(f"test: not a test node id: {shown} (longer than a test id can be)")
    given = root / part
    try:
        real = Path(os.path.realpath(given))
        if not real.is_relative_to(root):
            raise ToolError(f"test: the test's path is outside the repository: {shown}")
        info = os.lstat(given)
    except (ValueError, OSError):
        raise ToolError(f"test: no such test file or folder in the repository: {_shown(part)}") from None
    if stat.S_ISLNK(info.st_mode):
        raise ToolError(f"test: the test's path is a symbolic link: {_shown(part)}")
    if stat.S_ISREG(info.st_mode):
        if not any(fnmatch.fnmatchcase(real.name, pattern) for pattern in TEST_FILES):
            raise ToolError(f"test: not a test file (named {' or '.join(TEST_FILES)}): {_shown(part)}")
        return
    if not stat.S_ISDIR(info.st_mode):
        raise ToolError(f"test: no such test file or folder in the repository: {_shown(part)}")
    found = _link_leading_out(root, real, limits.max_files, deadline)
    if found is not None:
        raise ToolError(f"test: the folder {_shown(part)} {found}")


def _link_leading_out(root: Path, folder: Path, maximum: int, deadline: float | None = None) -> str | None:
    """Why the test folder ``folder`` may not be run (words after its name), or ``None``: it
    holds a symbolic link whose target lies outside the repository ``root`` (pytest would
    collect a test file there), or more than ``maximum`` entries to check."""
    pending = [folder]
    seen = 0
    while pending:
        here = pending.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue  # pytest cannot enter it either
        if deadline is not None and time.monotonic() > deadline:
            raise _Expired
        for entry in entries:
            seen += 1
            if seen > maximum:
                return f"holds more than {maximum} entries to check (the limit max_files)"
            if entry.is_symlink():
                if not Path(os.path.realpath(entry.path)).is_relative_to(root):
                    rel = Path(entry.path).relative_to(root).as_posix()
                    return f"holds a symbolic link leading out of the repository: {_shown(rel)}"
            elif entry.is_dir(follow_symlinks=False):
                name = entry.name
                if not any(fnmatch.fnmatchcase(name, pattern) for pattern in _NORECURSE) and not (
                    os.path.exists(os.path.join(entry.path, "pyvenv.cfg"))
                ):
                    pending.append(Path(entry.path))
    return None


def _run_test(
    root: Path,
    node_id: str,
    python: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    deadline: float | None = None,
) -> str:
    """The output of ``python -m pytest -rA --tb=long -p no:cacheprovider -p no:doctest --
    NODE_ID`` run in
    ``root`` (standard output and standard error, as they come), at most
    ``limits.max_log_bytes`` of it (``limits`` default: ``DEFAULT_LIMITS``).

    The run is its own process group (a new session, standard input the null device); the
    whole group is killed when the run ends, writes more than the limit, takes more than
    ``limits.test_run_seconds`` or reaches ``deadline`` (``time.monotonic()``: the call's).
    On Linux the run goes under :data:`bugcontext.job._run._REAPER`, a child subreaper, which
    kills every process the run left behind, also one that started a session of its own
    (:func:`bugcontext.job._run.run_bounded`).
    The node id is passed after ``--`` and is not checked here (:func:`_check_test_id`).

    Raises ``ToolError`` if the interpreter cannot be started, ``ToolError`` naming
    ``test_run_seconds`` after that many seconds, ``_Expired`` at ``deadline``,
    ``ResourceLimitError`` for more output than ``max_log_bytes``."""
    limits = resolve(limits)
    maximum = limits.max_log_bytes
    command = [os.fspath(python), "-m", "pytest", *PYTEST_OPTIONS, "--", node_id]
    try:
        done = run_bounded(
            command, root, seconds=limits.test_run_seconds, max_output=maximum, deadline=deadline
        )
    except StartError as exc:
        raise ToolError(f"test: cannot start the interpreter: {exc}") from None
    except DeadlineReached:
        raise _Expired from None
    except TimedOut:
        words = over("test_run_seconds", 0, limits.test_run_seconds, exact=False)
        raise ToolError(f"test: the test run took {words}: {_shown(node_id)}") from None
    except OutputTooLarge:
        raise limit_error(
            "test", "max_log_bytes", "the test output", maximum + 1, maximum, exact=False
        ) from None
    return done.output.decode("utf-8", errors="replace")


def _rerun_mode(rerun: bool | str | None, allow_run: bool, coverage_file: str | None) -> str | None:
    """The re-run mode of the ``rerun`` argument (``None``: no re-run); a tool error for an
    unknown mode, a re-run on a server without ``--allow-run``, or with ``coverage_file``."""
    if rerun is None or rerun is False:
        return None
    mode = "failing" if rerun is True else rerun
    if mode not in RERUN_MODES:
        raise ToolError(f"rerun: must be true or one of {', '.join(RERUN_MODES)}, got {_shown(str(rerun))!r}")
    if not allow_run:
        raise ToolError(
            "rerun: running tests is disabled: the server was started without --allow-run "
            "(running a repository's tests runs its code)"
        )
    if coverage_file is not None:
        raise ToolError("rerun: give coverage_file or rerun, not both")
    return str(mode)


def _rerun_python(
    root: Path, configured: Path | None, text: str, junit: str | bytes | None, test: str | None
) -> Path | None:
    """The interpreter of a re-run of the log ``text``'s failing tests (:func:`_interpreter`),
    ``configured`` (possibly ``None``) for Go or Node tests: those run under their toolchain
    from ``PATH`` (:mod:`bugcontext.job.sources.toolchain_rerun`)."""
    if toolchain_tests(log_failing_tests(text, junit_xml=junit, test=test)) is not None:
        return configured
    return _interpreter(root, configured)


def _traced_rerun(
    root: Path,
    text: str,
    junit: str | bytes | None,
    test: str | None,
    mode: str,
    python: Path | None,
    limits: Limits,
    deadline: float,
) -> tuple[ExecutionRecord, RerunReport]:
    """The traced re-run of the failing tests of the log ``text`` (``test`` alone when
    given) with the server's interpreter ``python``: every test id passes the rule of a test
    the server runs (:func:`_check_test_id`; one that does not is left out and noted). The
    report names the interpreter ``python`` only (not its path on the server's machine)."""

    def check(node_id: str) -> str | None:
        try:
            _check_test_id(root, node_id, limits, deadline)
        except ToolError as exc:
            return str(exc).removeprefix("test: ")
        return None

    record, found = rerun_for_log(
        Repository(root, limits=limits),
        text,
        junit_xml=junit,
        test=test,
        mode=mode,
        python=python,
        current=False,
        limits=limits,
        deadline=deadline,
        check=check,
    )
    shown = found.python
    # (a Go or Node re-run names its toolchain by its name only)
    name = "python" if python is not None and shown == os.fspath(python) else Path(shown).name
    found = dataclasses.replace(
        found,
        python=name,
        command=(name, *found.command[1:]),
        notes=tuple(note.replace(shown, name) for note in found.notes),
    )
    return record, found


#: Last lines of a test run's output quoted when the run reported no failing test.
RUN_TAIL_LINES = 5


def _no_failure_in_run(node_id: str, output: str) -> str:
    """Why a test run gave no failure to build for: the node id and the last
    :data:`RUN_TAIL_LINES` non-blank lines of its output (each echoed as :func:`_shown` does),
    which say what went wrong (no tests collected, pytest missing, a crash)."""
    tail = [line for line in output.splitlines() if line.strip()][-RUN_TAIL_LINES:]
    said = " | ".join(_shown(line.strip()) for line in tail) if tail else "(no output)"
    return f"test: the run of {_shown(node_id)} reported no failing test; its output ends: {said}"


def _os_error(exc: OSError) -> str:
    """The words for an ``OSError`` met reading the repository: its reason only, never the
    file name it carries (an absolute path of the server's machine)."""
    if isinstance(exc, NotADirectoryError) and exc.strerror is None:
        return "the repository is not a folder"
    return f"cannot read the repository: {exc.strerror or type(exc).__name__}"


def _message(text: str) -> str:
    """An error text as the client gets it: every echo of the call's arguments cut
    (:func:`_cut_echoes`), then at most :data:`_MESSAGE` characters."""
    text = _cut_echoes(text, _ARGUMENTS.get())
    return shorten(text, _MESSAGE)


async def _in_worker(
    job: Callable[[float], _T],
    limits: Limits,
    *,
    abandoned: Callable[[], None] | None = None,
) -> _T:
    """``job(deadline)`` in a worker thread, ``deadline`` (``time.monotonic()``) the end of
    the call's time limit (the one :class:`_ScreenedServer` set for the call, else
    ``limits.mcp_call_seconds`` from now): past it the call is a tool error, the worker is
    abandoned and ``abandoned()`` is called (the workspace it holds is let go). An error of
    the input (a bad candidate, budget or cost, a folder or file that cannot be read, an
    unknown test) becomes a tool error whose message reaches the client (an ``OSError`` by
    its reason only, never a path of the server's machine; at most 2,000 characters)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        deadline = time.monotonic() + limits.mcp_call_seconds
    expired = True
    try:
        with anyio.move_on_after(max(0.0, deadline - time.monotonic())):
            try:
                result = await anyio.to_thread.run_sync(job, deadline, abandon_on_cancel=True)
                expired = False
                return result
            except ToolError as exc:
                expired = False
                raise ToolError(_message(str(exc))) from exc.__cause__
            except (_Expired, TimeoutError):
                raise _call_expired(limits) from None
            except OSError as exc:
                expired = False
                raise ToolError(_os_error(exc)) from None
            except (InvalidInputError, ValueError, LookupError, TypeError) as exc:
                expired = False
                raise ToolError(_message(str(exc))) from exc
        raise _call_expired(limits)
    finally:
        if expired and abandoned is not None:
            abandoned()


def _sized(text: str, structured: dict[str, Any], limits: Limits) -> CallToolResult:
    """The tool result of ``text`` and ``structured`` (made JSON: a JSON round trip), if its
    UTF-8 JSON is at most ``limits.max_result_bytes``; else ``ResourceLimitError`` (field
    ``"result"``)."""
    encoded = json.dumps(structured, allow_nan=False, ensure_ascii=False)
    maximum = limits.max_result_bytes
    size, exact = utf8_length(encoded, maximum)
    if exact:
        more, exact = utf8_length(text, maximum)
        size += more
    if size > maximum:
        raise limit_error("result", "max_result_bytes", "the result", size, maximum, exact=exact)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=json.loads(encoded)
    )


def _screened(result: CallToolResult) -> CallToolResult:
    """``result`` with every secret of its text content and of its structured content
    replaced (:func:`bugcontext.core.secrets.redact`); a structured dict gets ``"redacted"``,
    the records of what was replaced (:func:`bugcontext.core.secrets.redact_json`)."""
    content = [
        item.model_copy(update={"text": redact_text(item.text)}) if isinstance(item, TextContent) else item
        for item in result.content
    ]
    structured = result.structured_content
    if structured is not None:
        structured, found = redact_json(structured)
        if isinstance(structured, dict):
            structured["redacted"] = found
    return result.model_copy(update={"content": content, "structured_content": structured})


def _has_surrogate(value: object) -> bool:
    """Whether a string of the JSON value ``value`` (its keys included) holds a lone
    surrogate (``"\\udcff"``: an escape JSON allows that names no character)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not item.isascii() and any("\ud800" <= ch <= "\udfff" for ch in item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


#: The most problems of the client's ``roots/list`` answer an error lists.
_ROOT_PROBLEMS = 3


def _bad_roots(error: BaseException) -> str | None:
    """What is wrong with the client's ``roots/list`` answer, when ``error`` (the SDK's bare
    tool error) comes from the SDK refusing it: each problem's place and reason (pydantic's
    words, which hold no value of the answer), e.g. ``roots.0.uri: URL scheme should be
    'file'``; else ``None``."""
    cause = error.__cause__
    if not isinstance(cause, ValidationError) or cause.title != "ListRootsResult":
        return None
    found = cause.errors(include_url=False, include_input=False)
    listed = [
        f"{'.'.join(str(part) for part in problem['loc']) or 'the answer'}: {problem['msg']}"
        for problem in found[:_ROOT_PROBLEMS]
    ]
    more = f" and {len(found) - _ROOT_PROBLEMS} more" if len(found) > _ROOT_PROBLEMS else ""
    return f"roots: the client's roots/list answer is not a list of file:// roots ({'; '.join(listed)}{more})"


#: The JSON-RPC error codes of a line the server cannot take (JSON-RPC 2.0).
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]|[^"\[\]{}]+')


def _shallow(line: str) -> str:
    """The JSON text ``line`` with every array or object inside a member of its top-level
    value replaced by ``null``: a line too deep to read whole read for its request id."""
    out: list[str] = []
    depth = 0
    for token in _TOKENS.findall(line):
        if token in ("[", "{"):
            depth += 1
            if depth <= 2:
                out.append(token if depth == 1 else "null")
        elif token in ("]", "}"):
            if depth == 1:
                out.append(token)
            depth -= 1
        elif depth <= 1:
            out.append(token)
    return "".join(out)


def _error_reply(request: object, code: int, message: str) -> SessionMessage:
    """The JSON-RPC error reply ``code`` to the request ``request`` (its id; ``null`` when it
    has no usable one: not a string or an integer, or a string holding a lone surrogate or a
    secret, :func:`_secret_id`)."""
    usable = isinstance(request, (str, int)) and not isinstance(request, bool)
    if isinstance(request, str) and (_has_surrogate(request) or _secret_id(request)):
        usable = False
    return SessionMessage(
        JSONRPCError(
            jsonrpc="2.0",
            id=request if usable else None,  # type: ignore[arg-type]
            error=ErrorData(code=code, message=message),
        )
    )


def _line_reply(line: str, read: object, error: Exception | None) -> SessionMessage | None:
    """The JSON-RPC error reply to the line ``line`` of standard input, or ``None`` when it
    gets none (a message the SDK read, ``read``; a notification; a client's response). The
    SDK failed to read it with ``error`` (``None``: it did not fail). A line that is not JSON
    is a parse error (``-32700``, id ``null``); JSON nested deeper than the SDK's reader takes
    (201 levels) or that is not a JSON-RPC request is an invalid request (``-32600``, with
    the request's id when it has one); a lone surrogate escape is invalid params
    (``-32602``); a request whose id is neither a string nor an integer (``1e999``), which the
    SDK takes for a notification, is an invalid request with id ``null``; so is a request
    whose id holds a secret (:func:`_secret_id`: its reply would echo it), never handed to
    the SDK."""
    if error is None and isinstance(read, JSONRPCRequest) and _secret_id(read.id):
        return _error_reply(None, INVALID_REQUEST, _SECRET_ID)
    if error is None and (not isinstance(read, JSONRPCNotification) or '"id"' not in line):
        return None
    deep = error is not None and "recursion limit exceeded" in str(error)
    try:
        message = json.loads(_shallow(line) if deep else line)
    except (ValueError, RecursionError):
        if deep:
            return _error_reply(None, INVALID_REQUEST, _TOO_DEEP)
        return _error_reply(None, PARSE_ERROR, "parse error: the line is not JSON")
    if not isinstance(message, dict):
        return _error_reply(None, INVALID_REQUEST, "not a JSON-RPC request: the line is not a JSON object")
    request = message.get("id")
    if "method" not in message:
        if "result" in message or "error" in message:
            return None  # a response of the client: never answered
        return _error_reply(request, INVALID_REQUEST, "not a JSON-RPC request: it has no method")
    if "id" not in message:
        return None  # a notification: never answered
    if error is None:
        return _error_reply(None, INVALID_REQUEST, "the request id must be a string or an integer")
    if deep:
        return _error_reply(request, INVALID_REQUEST, _TOO_DEEP)
    if _has_surrogate(message):
        return _error_reply(
            request,
            INVALID_PARAMS,
            "a string of the request holds a lone surrogate (\\ud800-\\udfff), which is not text",
        )
    return _error_reply(request, INVALID_REQUEST, "the request is not valid JSON-RPC 2.0")


#: The words of a request nested too deep.
_TOO_DEEP = "the request is nested deeper than the server reads (at most 201 levels of arrays and objects)"


def _stdin_lines(limit: int) -> tuple[Any, Callable[[], None]]:
    """Standard input as lines (an asynchronous iterator: each line as text, UTF-8, errors
    replaced; a line longer than ``limit`` bytes as :class:`_TooLong`, read to its end and
    dropped, never held whole), read from a private copy of descriptor 0, which meanwhile
    names the null device (as the SDK's transport does: nothing else in the process reads the
    client's messages); and the function that puts descriptor 0 back."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    handle = open(private, "rb", closefd=True)

    def read() -> str | _TooLong | None:
        line = handle.readline(limit + 1)
        if not line:
            return None
        if len(line) <= limit or (line.endswith(b"\n") and len(line) == limit + 1):
            return line.decode("utf-8", errors="replace")
        size = len(line)
        while not line.endswith(b"\n"):
            line = handle.readline(1 << 20)
            if not line:
                break
            size += len(line)
        return _TooLong(size - line.endswith(b"\n"))

    async def lines() -> Any:
        while True:
            line = await anyio.to_thread.run_sync(read)
            if line is None:
                return
            yield line

    def restore() -> None:
        os.dup2(handle.fileno(), 0)
        handle.close()

    return lines(), restore


class _TooLong:
    """A line of standard input longer than the server reads: ``size`` bytes (its newline
    not counted)."""

    def __init__(self, size: int) -> None:
        self.size = size


#: The JSON types as an argument error names them.
_JSON_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}

#: The JSON type each of pydantic's type errors expects.
_TYPE_ERRORS = {
    "string_type": "string",
    "int_type": "integer",
    "int_from_float": "integer",
    "int_parsing": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "list_type": "array",
    "tuple_type": "array",
    "set_type": "array",
    "frozen_set_type": "array",
    "none_required": "null",
}

#: The most wrong arguments (or places inside one) an argument error names.
_ARGUMENT_PROBLEMS = 5


def _schema_types(schema: object) -> list[str] | None:
    """The JSON types the JSON schema ``schema`` of a tool argument admits (``"type"``, or the
    types of its ``anyOf``/``oneOf`` members), ``None`` when the schema says it otherwise
    (a reference, an enumeration)."""
    if not isinstance(schema, dict):
        return None
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_WORDS:
        return [kind]
    if isinstance(kind, list) and kind and all(k in _JSON_WORDS for k in kind):
        return [str(k) for k in kind]
    members = schema.get("anyOf", schema.get("oneOf"))
    if kind is None and isinstance(members, list) and members:
        found: list[str] = []
        for member in members:
            types = _schema_types(member)
            if types is None:
                return None
            found.extend(t for t in types if t not in found)
        return found
    return None


def _either(types: Sequence[str]) -> str:
    """``["boolean", "string", "null"]`` as ``"a boolean, a string or null"``."""
    words = [_JSON_WORDS[kind] for kind in types]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _given(value: object) -> str:
    """The JSON value ``value`` a client gave, as an argument error names it: its type, and a
    scalar itself (a string cut and escaped: :func:`_shown`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"the integer {_cut(str(value))}" if value.bit_length() < 4096 else "an integer"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {_shown(value)!r}"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _inner_path(value: object, loc: Sequence[object], missing: bool) -> str:
    """The place inside the argument ``value`` that pydantic's error location ``loc`` (after
    the argument's name) names, as ``candidates[0].path`` (``""``: the argument itself). A
    part that does not lead into the value is the tag of a union member pydantic tried, and
    left out; the last part of a ``missing`` error is the key that is missing."""
    out = ""
    for at, part in enumerate(loc):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, (list, tuple)) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
            out += f"[{part}]"
            continue
        elif not (missing and at == len(loc) - 1):
            continue
        out += f".{_shown(str(part))}" if out else _shown(str(part))
    return out


def _argument_problems(errors: Sequence[Any], arguments: dict[str, Any], schema: dict[str, Any]) -> str:
    """pydantic's ``errors`` (``ValidationError.errors()``) of a call's ``arguments`` (as the
    SDK validates them: a JSON text given for an array or object read as JSON) as one line
    naming each wrong argument (or the place inside it) and what was expected, e.g.
    ``argument 'budget': expected an integer or null, got the string 'x'``, at most
    :data:`_ARGUMENT_PROBLEMS` of them; ``schema`` is the tool's input schema (the types an
    argument takes, null included)."""
    places: dict[tuple[str, str], dict[str, Any]] = {}
    for error in errors:
        loc = tuple(error.get("loc", ()))
        kind = str(error.get("type", ""))
        name = str(loc[0]) if loc else ""
        inner = _inner_path(arguments.get(name), loc[1:], kind == "missing") if loc else ""
        place = places.setdefault(
            (name, inner), {"types": [], "other": [], "missing": False, "input": error.get("input")}
        )
        if kind == "missing":
            place["missing"] = True
        elif kind in _TYPE_ERRORS:
            if _TYPE_ERRORS[kind] not in place["types"]:
                place["types"].append(_TYPE_ERRORS[kind])
        elif error.get("msg"):
            said = str(error["msg"])
            if said.startswith("Input should be "):  # a value the type does not take
                said = f"expected {said.removeprefix('Input should be ')}, got {_given(error.get('input'))}"
            if said not in place["other"]:
                place["other"].append(said)
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    listed = []
    for (name, inner), place in list(places.items())[:_ARGUMENT_PROBLEMS]:
        label = f"argument {_shown(name)!r}" if name else "the arguments"
        if inner:
            label += f" at {inner}"
        if place["missing"]:
            listed.append(f"{label} is required and was not given")
            continue
        words = []
        if place["types"]:
            types = place["types"]
            if not inner and not place["other"]:
                types = _schema_types(properties.get(name)) or types
            words.append(f"expected {_either(types)}, got {_given(place['input'])}")
        words.extend(place["other"])
        listed.append(f"{label}: {'; '.join(words)}")
    more = len(places) - _ARGUMENT_PROBLEMS
    return "; ".join(listed) + (f"; and {more} more" if more > 0 else "")


def _one_line(text: str) -> str:
    """``text`` on one line: its line breaks as blanks."""
    return " ".join(text.splitlines())


def _screened_text(text: str, echoed: object = None) -> str:
    """An error text the client gets outside a tool result (a JSON-RPC error's message): every
    echo of a long string of ``echoed`` (the request's params) cut (:func:`_cut_echoes`), at
    most :data:`_MESSAGE` characters, its secrets replaced (:func:`redact_text`, on its lines
    and again on the one line it becomes)."""
    text = redact_text(shorten(_cut_echoes(text, echoed), _MESSAGE))
    return redact_text(_one_line(text))


def _cut_strings(value: object) -> object:
    """The JSON value ``value`` with each of its strings (keys too) cut (:func:`_cut`)."""
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, dict):
        return {_cut(str(key)): _cut_strings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cut_strings(item) for item in value]
    return value


def _screened_error(error: ErrorData, echoed: object = None) -> ErrorData:
    """The JSON-RPC error ``error`` as the client gets it: its message one line, its echoes of
    the request's params (``echoed``) cut, its secrets replaced (:func:`_screened_text`); its
    data with every string cut and screened (:func:`redact_json`)."""
    data = error.data
    if data is not None:
        data = redact_json(_cut_strings(data))[0]
    message = _screened_text(error.message, echoed)
    if message == error.message and data == error.data:
        return error
    return ErrorData(code=error.code, message=message, data=data)


def _secret_id(request: object) -> bool:
    """Whether the request id ``request`` holds a secret (:func:`redact_text` changes it): a
    reply would echo it."""
    return isinstance(request, str) and redact_text(request) != request


#: The words of a request whose id holds a secret.
_SECRET_ID = "the request id holds a secret, which the server does not echo: give another id"


async def _screen_requests(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """The middleware of every request the server serves, whichever transport: an error (the
    SDK's, "Unknown prompt: NAME", "Method not found" with the method as its data, or any
    exception of a handler) leaves as a JSON-RPC error whose message and data are screened
    (:func:`_screened_error`); a result other than a tool call's (screened where every call
    passes: :meth:`_ScreenedServer.call_tool`) has its secrets replaced
    (:func:`redact_json`)."""
    if ctx.request_id is None:  # a notification: nothing is answered
        return await call_next(ctx)
    try:
        result = await call_next(ctx)
    except MCPError as exc:
        raise MCPError.from_error_data(_screened_error(exc.error, ctx.params)) from exc
    except ValidationError:
        raise  # the SDK's "Invalid request parameters", which echoes nothing
    except Exception as exc:
        _LOG.error("the %s request failed", _shown(ctx.method), exc_info=exc)
        # The SDK's own reply to a handler's exception: code 0, its text (screened here).
        raise MCPError(0, _screened_text(str(exc) or type(exc).__name__, ctx.params)) from exc
    if ctx.method != "tools/call" and isinstance(result, dict):
        screened, found = redact_json(result)
        if found:
            return dict(screened)
    return result


# --- the server's log: one screened line per record --------------------------------------------

#: The server's own logger.
_LOG = logging.getLogger("bugcontext.mcp")

#: The longest log line the server writes, in characters.
_LOG_LINE = 4000

#: The most exceptions of a chain (``raise ... from``) a log line names.
_CHAIN = 3


def _exception_words(error: BaseException) -> str:
    """``error`` as a log line names it: its type and text, where it was raised (the file's
    name and line of its innermost frame), and the exceptions it came from (``caused by``,
    at most :data:`_CHAIN` in all), never its traceback."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and len(parts) < _CHAIN and id(current) not in seen:
        seen.add(id(current))
        try:
            text = str(current)
        except Exception:  # a __str__ that fails
            text = ""
        words = f"{type(current).__name__}: {text}" if text else type(current).__name__
        tb = current.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            words += f" ({os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})"
        parts.append(words)
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return "; caused by ".join(parts)


def _log_line(text: str) -> str:
    """A log text as the server writes it: at most :data:`_LOG_LINE` characters (a cut never
    inside a secret), its secrets replaced (:func:`bugcontext.core._io.redact_names`, also those
    glued to a name by ``_``), on one line."""
    text = redact_names(shorten(text, _LOG_LINE))
    return redact_names(_one_line(text))


def _screen_record(record: logging.LogRecord) -> None:
    """Make the log record ``record`` one screened line: its message formatted, its exception
    (``exc_info``) named in one line (:func:`_exception_words`), its stack dropped, then
    :func:`_log_line` (once: a record screened already is left as it is)."""
    if getattr(record, "_bugcontext_screened", False):
        return
    try:
        text = record.getMessage()
    except Exception:  # a message whose arguments do not fit it
        text = f"{record.msg!s} (its arguments did not fit it)"
    try:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            text += f": {_exception_words(error)}"
        record.msg = _log_line(text)
    except Exception:  # never fail the call that logs
        record.msg = "a log message that could not be screened (left out)"
    record.args = None
    record.exc_info = None
    record.exc_text = None
    record.stack_info = None
    record.__dict__["_bugcontext_screened"] = True


class _ScreenFilter(logging.Filter):
    """The filter of the SDK's loggers and the server's own (:func:`_screen_loggers`): every
    record they make is screened (:func:`_screen_record`) before any handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        _screen_record(record)
        return True


_SCREEN_FILTER = _ScreenFilter()


def _screen_loggers() -> None:
    """Screen the records of the SDK's loggers (``mcp`` and every ``mcp.*`` logger made so
    far: a logger's filter sees the records made on it) and the server's own
    (``bugcontext.mcp``), wherever they are handled, also in a program that runs the server
    in process (:func:`create_server`)."""
    names = [name for name in list(logging.root.manager.loggerDict) if name.startswith("mcp.")]
    for name in ("mcp", _LOG.name, *names):
        logger = logging.getLogger(name)
        if _SCREEN_FILTER not in logger.filters:
            logger.addFilter(_SCREEN_FILTER)


def _screened_record_factory(
    previous: Callable[..., logging.LogRecord],
) -> Callable[..., logging.LogRecord]:
    """The log record factory that screens every record of any logger, for any handler, as it
    is made (:func:`_screen_record`)."""

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        _screen_record(record)
        return record

    return make


def _log_exception(words: str, error: BaseException | None) -> None:
    """Log ``words`` and the exception ``error`` (one screened line: :func:`_screened_logs`)."""
    _LOG.error("%s", words, exc_info=error)


def _thread_hook(args: Any) -> None:
    """``threading.excepthook``: an exception that ended a thread, logged as one line."""
    if args.exc_type is SystemExit:
        return
    _log_exception(f"the thread {getattr(args.thread, 'name', '?')} ended on an error", args.exc_value)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning``: a warning, logged as one line (``py.warnings``, as
    ``logging.captureWarnings`` does; without the source line)."""
    name = os.path.basename(filename)
    logging.getLogger("py.warnings").warning("%s:%s: %s: %s", name, lineno, category.__name__, message)


def _unraisable_hook(unraisable: Any) -> None:
    """``sys.unraisablehook``: an exception Python could not raise (a ``__del__``, a
    finalizer), logged as one line (without the object, whose text could be anything)."""
    _log_exception(unraisable.err_msg or "Exception ignored", unraisable.exc_value)


@contextlib.contextmanager
def _screened_logs() -> Iterator[None]:
    """While serving, everything the process writes to its log (standard error) passes the
    secret screen, one line per record: every log record (the SDK's loggers, asyncio's,
    anyio's, ours, whichever handler writes it: :func:`_screened_record_factory`), warnings
    (``warnings.showwarning``: :func:`_show_warning`), an exception that ends a thread
    (``threading.excepthook``) or that Python cannot raise (``sys.unraisablehook``); a handler
    that fails to write says nothing (``logging.raiseExceptions``: its report would quote the
    record). All put back as they were at the end."""
    factory = logging.getLogRecordFactory()
    import warnings

    hooks = (threading.excepthook, sys.unraisablehook, logging.raiseExceptions, warnings.showwarning)
    logging.setLogRecordFactory(_screened_record_factory(factory))
    warnings.showwarning = _show_warning
    threading.excepthook = _thread_hook
    sys.unraisablehook = _unraisable_hook
    logging.raiseExceptions = False
    try:
        yield
    finally:
        threading.excepthook, sys.unraisablehook, logging.raiseExceptions, warnings.showwarning = hooks
        logging.setLogRecordFactory(factory)


class _ScreenedServer(MCPServer[Any]):
    """``MCPServer`` whose every tool call runs under one time limit (the client's
    ``roots/list`` answer, the tool's work and the screen), refuses arguments the tool does
    not take, and whose every tool result and tool error (the SDK's own argument errors, and
    protocol errors raised during a call, included) passes the secret screen, the result's
    in a worker thread."""

    def __init__(self, name: str, *, instructions: str, limits: Limits) -> None:
        super().__init__(name, instructions=instructions)
        self._limits = limits
        self.middleware.insert(0, _screen_requests)  # outermost: it sees every error

    def _check_arguments(self, name: str, arguments: dict[str, Any]) -> None:
        """``ToolError`` for a call of the tool ``name`` with an argument it does not take
        (naming those it takes), or an argument of the wrong type: one line naming each wrong
        argument and what it takes (:func:`_argument_problems`, from the tool's own argument
        model, never pydantic's text)."""
        tool = self._tool_manager.get_tool(name)
        if tool is None or not isinstance(arguments, dict):
            return  # the SDK's own error
        known = list(tool.parameters.get("properties", {}))
        unknown = [key for key in arguments if key not in known]
        if unknown:
            listed = ", ".join(_shown(str(key)) for key in unknown[:10])
            more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
            raise ToolError(
                f"Error executing tool {name}: unknown argument {listed}{more} "
                f"(the tool takes {', '.join(known)})"
            )
        try:
            tool.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_context=False)
            read = tool.fn_metadata.pre_parse_json(arguments)
            problems = _argument_problems(errors, read, tool.parameters)
            raise ToolError(f"Error executing tool {name}: {problems}") from None
        except Exception:  # a validator that fails otherwise: the SDK's own error
            pass

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        limits = self._limits
        deadline = time.monotonic() + limits.mcp_call_seconds
        token = _DEADLINE.set(deadline)
        given = _ARGUMENTS.set(arguments)
        try:
            self._check_arguments(name, arguments)
            with anyio.move_on_after(limits.mcp_call_seconds):  # the roots request too
                result = await super().call_tool(name, arguments, context)
                if isinstance(result, CallToolResult):
                    return await _in_worker(lambda _: _screened(result), limits)
                return result
            raise ToolError(f"Error executing tool {name}: {_call_expired(limits)}")
        except UnexpectedToolError as exc:
            roots = _bad_roots(exc)
            if roots is not None:
                raise ToolError(redact_text(_message(f"Error executing tool {name}: {roots}"))) from None
            raise UnexpectedToolError(redact_text(_message(str(exc)))) from exc.__cause__
        except ToolError as exc:
            raise ToolError(redact_text(_message(str(exc)))) from exc.__cause__
        except MCPError as exc:  # a protocol error (the client failed to list its roots)
            data = None if exc.data is None else redact_json(exc.data)[0]
            raise MCPError(exc.code, redact_text(_message(exc.message)), data) from exc
        finally:
            _ARGUMENTS.reset(given)
            _DEADLINE.reset(token)

    async def run_stdio_async(self) -> None:
        """Serve over standard I/O: the SDK's transport writes, the server reads the lines
        itself, so that every line the SDK cannot read (or misreads) gets its JSON-RPC error
        reply (:func:`_line_reply`) and the client never waits for a reply that does not come."""
        lines, restore = _stdin_lines(self._limits.max_input_bytes)
        done = anyio.Event()

        async def none() -> Any:  # the SDK's reader gets no line
            await done.wait()
            return
            yield  # pragma: no cover

        try:
            async with stdio_server(stdin=none()) as (_, write_stream):
                sender, receiver = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                answers = _Answers(write_stream)

                async def forward() -> None:
                    async with sender:
                        async for line in lines:
                            if isinstance(line, _TooLong):
                                words = over("max_input_bytes", line.size, self._limits.max_input_bytes)
                                message = f"the request line is {words}"
                                await answers.send(_error_reply(None, INVALID_REQUEST, message))
                            else:
                                await _take_line(line, sender, answers)
                        # The end of input: the requests read are answered before the server
                        # stops (the SDK cancels what is in flight when its input ends); each
                        # call ends within its time limit, the wait with it.
                        with anyio.move_on_after(self._limits.mcp_call_seconds + _ANSWER_GRACE):
                            await answers.all_answered()

                async with anyio.create_task_group() as group:
                    group.start_soon(forward)
                    await self._lowlevel_server.run(
                        receiver, answers, self._lowlevel_server.create_initialization_options()
                    )
                    group.cancel_scope.cancel()
                done.set()
        finally:
            restore()


#: Seconds a server whose input has ended waits, beyond a call's time limit, for the
#: replies to the requests it read (the screen of a call's result runs after its limit).
_ANSWER_GRACE = 5.0


class _Answers:
    """The server's write stream, which keeps count of the client's requests read and not yet
    answered (by id: a response or an error sent), so that the end of the client's input
    waits for their replies (:meth:`all_answered`). A request the client cancels
    (``notifications/cancelled``) is no longer waited for: the server does not answer it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._open: Counter[tuple[bool, object]] = Counter()
        self._idle = anyio.Event()
        self._idle.set()

    def read(self, message: object) -> None:
        """Note the message ``message`` handed to the server."""
        if isinstance(message, JSONRPCRequest):
            self._open[_id_key(message.id)] += 1
            if self._idle.is_set():
                self._idle = anyio.Event()
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, dict) else {}
            self._answered(params.get("requestId"))

    def _answered(self, request: object) -> None:
        key = _id_key(request)
        if self._open[key] > 1:
            self._open[key] -= 1
        else:
            self._open.pop(key, None)
        if not self._open:
            self._idle.set()

    async def all_answered(self) -> None:
        """Return once every request read has its reply (or was cancelled)."""
        await self._idle.wait()

    async def send(self, item: SessionMessage) -> None:
        """Write ``item``, screened: a JSON-RPC error's message and data
        (:func:`_screened_error`: one line, echoes cut, secrets replaced), the params of a
        notification or request of the server (:func:`redact_json`); a response (a result)
        is screened where it is made (:func:`_screen_requests`,
        :meth:`_ScreenedServer.call_tool`)."""
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCError):
            error = _screened_error(message.error)
            if error is not message.error:
                item = SessionMessage(message.model_copy(update={"error": error}), metadata=item.metadata)
        elif isinstance(message, (JSONRPCNotification, JSONRPCRequest)) and message.params:
            params, found = redact_json(message.params)
            if found:
                item = SessionMessage(message.model_copy(update={"params": params}), metadata=item.metadata)
        await self._stream.send(item)
        if isinstance(message, (JSONRPCResponse, JSONRPCError)):
            self._answered(message.id)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Answers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _id_key(request: object) -> tuple[bool, object]:
    """A request id as a key: ``1`` and ``"1"`` are different ids."""
    return (isinstance(request, str), request)


async def _take_line(line: str, sender: Any, write_stream: _Answers) -> None:
    """Hand the server the message of the line ``line``, or answer it with its error."""
    read: object = None
    error: Exception | None = None
    try:
        read = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        error = exc
    reply = _line_reply(line, read, error)
    if reply is not None:
        await write_stream.send(reply)
    elif error is None:
        write_stream.read(read)
        await sender.send(SessionMessage(read))  # type: ignore[arg-type]


def _folders(roots: Sequence[str | os.PathLike[str]] | None) -> tuple[Path, ...]:
    listed: list[object] = [os.getcwd()] if roots is None else list(roots)
    if not listed:
        raise InvalidInputError("root", "give at least one root folder")
    folders = []
    for root in listed:
        try:  # (a name too long, a loop of links: InvalidInputError naming the field)
            real = resolved_folder("root", root)
        except NotADirectoryError:
            shown = header_path(os.fspath(root))  # type: ignore[call-overload]
            raise InvalidInputError("root", f"not a folder: {shown}") from None
        folders.append(real)
    return tuple(folders)


def _interpreter_option(python: str | os.PathLike[str] | None) -> Path | None:
    if python is None:
        return None
    path = Path(os.path.abspath(python))
    if "\0" in os.fspath(python) or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise InvalidInputError("python", f"not an executable file: {header_path(os.fspath(python))}")
    return path


def _call_scope(folders: tuple[Path, ...], found: ListRootsResult | None, limits: Limits) -> _Scope:
    """The folders a call may reach: the server's ``folders``, within the client's roots
    (``found``) when it listed any."""
    if found is None:
        return _Scope(folders, None)
    count = len(found.roots)
    if count > limits.mcp_client_roots:
        raise limit_error(
            "roots", "mcp_client_roots", "the client's list of roots", count, limits.mcp_client_roots
        )
    client = (_file_root(str(root.uri)) for root in found.roots)
    return _Scope(folders, tuple(folder for folder in client if folder is not None))


class _Workspaces:
    """The server's workspaces, by repository root, shared by its calls (under a lock)."""

    def __init__(self, cache_dir: str | os.PathLike[str] | None, cache: bool, limits: Limits) -> None:
        self._cache_dir = cache_dir
        self._cache = cache
        self._limits = limits
        self._kept: OrderedDict[Path, Workspace] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, root: Path) -> Workspace:
        """The workspace of ``root``: kept for later calls, the ``mcp_workspaces`` most
        recently used at most (an older one is let go; its cache stays on disk)."""
        with self._lock:
            found = self._kept.get(root)
            if found is None:
                found = Workspace(root, cache_dir=self._cache_dir, cache=self._cache, limits=self._limits)
                self._kept[root] = found
            self._kept.move_to_end(root)
            while len(self._kept) > self._limits.mcp_workspaces:
                self._kept.popitem(last=False)
            return found

    def forget(self, root: Path, used: list[Workspace]) -> None:
        """Let go of the workspace a call given up on holds (its worker may hold its lock
        until it reaches its deadline check): the next call on ``root`` gets a new one."""
        with self._lock:
            if used and self._kept.get(root) is used[0]:
                del self._kept[root]


def _check_context_call(
    test_log: str | None,
    log_file: str | None,
    test: str | None,
    junit_xml: str | None,
    junit_file: str | None,
    allow_run: bool,
) -> None:
    """Raise ``ToolError`` for a ``context_for_failure`` call without test output (and no
    test to run, or running disabled), or with both forms of one input."""
    reported = junit_xml is not None or junit_file is not None
    if test_log is None and log_file is None and test is None and not reported:
        raise ToolError(
            "give test_log (the test output), log_file, junit_xml, junit_file, or test (a node id to run)"
        )
    if test_log is not None and log_file is not None:
        raise ToolError("give test_log or log_file, not both")
    if junit_xml is not None and junit_file is not None:
        raise ToolError("give junit_xml or junit_file, not both")
    if test_log is None and log_file is None and not reported and not allow_run:
        raise ToolError(
            "test: running tests is disabled: the server was started without --allow-run "
            "(running a repository's tests runs its code); give test_log or log_file"
        )


def _call_inputs(
    allowed: _Scope,
    test_log: str | None,
    log_file: str | None,
    junit_xml: str | None,
    junit_file: str | None,
    coverage_file: str | None,
    limits: Limits,
    deadline: float,
) -> tuple[str | None, str | bytes | None, bytes | ExecutionRecord | None]:
    """The test output, JUnit report and coverage report of a ``context_for_failure`` call:
    given inline, or read from the files the call names (inside ``allowed``)."""
    text = test_log
    if text is None and log_file is not None:
        data = _read_regular(allowed, log_file, "log_file", "max_log_bytes", "log_file", limits, deadline)
        text = data.decode("utf-8", errors="replace")
    report: str | bytes | None = junit_xml
    if junit_file is not None:
        report = _read_regular(
            allowed, junit_file, "junit_file", "max_junit_bytes", "junit_file", limits, deadline
        )
    coverage: bytes | ExecutionRecord | None = None
    if coverage_file is not None:
        coverage = _read_regular(
            allowed,
            coverage_file,
            "coverage_file",
            "max_coverage_bytes",
            "coverage_file",
            limits,
            deadline,
        )
    return text, report, coverage


#: The arguments of ``context_for_failure`` (``client_roots`` is the server's, not the client's).
_CONTEXT_ARGUMENTS = frozenset(
    "repository test_log log_file test junit_xml junit_file coverage_file query budget unit "
    "encoding template line_numbers rerun".split()
)

#: The library's input fields named by the ``context_for_failure`` arguments they come from.
_CONTEXT_FIELDS = {
    "coverage": "coverage_file",
    "cost.unit": "unit",
    "cost.encoding": "encoding",
    "cost.template": "template",
    "cost.line_numbers": "line_numbers",
    "log_text": "test_log",
}


def _argument_error(exc: InvalidInputError, fields: dict[str, str]) -> Exception:
    """``exc`` as the tool error ``"ARG: problem"`` naming the ``context_for_failure``
    argument ``ARG`` its input field came from (``fields``, then :data:`_CONTEXT_FIELDS`, else
    the field itself when it is an argument's name); ``exc`` itself otherwise."""
    name = fields.get(exc.field, _CONTEXT_FIELDS.get(exc.field, exc.field))
    if exc.index is not None or name not in _CONTEXT_ARGUMENTS:
        return exc
    return ToolError(f"{name}: {exc.problem}")


def _context_fields(test_log: str | None, log_file: str | None, junit_file: str | None) -> dict[str, str]:
    """The ``context_for_failure`` arguments that the library's input fields of a call come
    from: the test output from ``test_log``, ``log_file`` or the run of ``test``, the JUnit
    report from ``junit_xml`` or ``junit_file``."""
    log = "log_file" if log_file is not None else "test_log" if test_log is not None else "test"
    return {"pytest_log": log, "junit_xml": "junit_xml" if junit_file is None else "junit_file"}


def _naming_arguments(job: Callable[[float], _T], fields: dict[str, str]) -> Callable[[float], _T]:
    """``job`` whose input errors name the tool arguments (:func:`_argument_error`)."""

    from bugcontext.job.sources.reports import LogFormatError

    def named(deadline: float) -> _T:
        try:
            return job(deadline)
        except InvalidInputError as exc:
            raise _argument_error(exc, fields) from None
        except LogFormatError as exc:
            name = fields.get(exc.field or "")
            if name is None:
                raise
            raise ToolError(f"{name}: {exc}") from None

    return named


def create_server(
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    cache: bool = True,
    limits: Limits | None = None,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    allow_run: bool = False,
    python: str | os.PathLike[str] | None = None,
) -> MCPServer[Any]:
    """The MCP server with the ``context_for_failure`` and ``build`` tools.

    ``cache_dir`` and ``cache`` configure the workspaces' on-disk cache
    (:class:`bugcontext.Workspace`); ``limits`` (default
    :data:`bugcontext.core.limits.DEFAULT_LIMITS`, read when the server is made) bound every tool
    call: the test output read, the repository walked, the build, the call's time
    (``mcp_call_seconds``) and a test run's (``test_run_seconds``). A call over a limit is a
    tool error naming it. ``roots``: the folders every path of a call must lie in (default:
    the current folder); ``allow_run``: whether ``context_for_failure`` may run a test (it runs
    the repository's code); ``python``: the interpreter of those runs (default: the
    repository's ``.venv``/``venv``, else a run is a tool error). See the module's
    documentation for what a call can reach.

    Raises:
        InvalidInputError: a root that is not a folder (``field`` ``"root"``; also one with a
            NUL character, a name too long, a loop of symbolic links), no root, a ``python``
            that is not an executable file (``"python"``), or a ``cache_dir`` that is not a
            ``str`` or ``os.PathLike`` or holds a NUL character (``"cache_dir"``).
    """
    limits = resolve(limits)
    folders = _folders(roots)
    interpreter = _interpreter_option(python)
    if cache_dir is not None:
        path_argument("cache_dir", cache_dir, "a folder")
    server = _ScreenedServer("bugcontext", instructions=_INSTRUCTIONS, limits=limits)
    _screen_loggers()
    workspaces = _Workspaces(cache_dir, cache, limits)

    _add_context_tool(server, folders, workspaces, limits, allow_run, interpreter)
    _add_build_tool(server, limits)
    return server


def _add_context_tool(
    server: MCPServer[Any],
    folders: tuple[Path, ...],
    workspaces: _Workspaces,
    limits: Limits,
    allow_run: bool,
    interpreter: Path | None,
) -> None:
    """Register the ``context_for_failure`` tool (:func:`create_server`)."""
    run_words = _RUN_ENABLED.format(seconds=limits.test_run_seconds) if allow_run else _RUN_DISABLED

    @server.tool(description=_CONTEXT_DESCRIPTION.format(run=run_words))
    async def context_for_failure(
        repository: str,
        client_roots: Annotated[ListRootsResult | None, Resolve(_client_roots)],
        test_log: str | None = None,
        log_file: str | None = None,
        test: str | None = None,
        junit_xml: str | None = None,
        junit_file: str | None = None,
        coverage_file: str | None = None,
        query: str | None = None,
        budget: StrictInt | None = None,
        unit: str = "chars",
        encoding: str | None = None,
        template: str = "markdown",
        line_numbers: StrictBool = False,
        rerun: StrictBool | StrictStr | None = None,
    ) -> CallToolResult:
        mode = _rerun_mode(rerun, allow_run, coverage_file)
        _check_context_call(test_log, log_file, test, junit_xml, junit_file, allow_run)
        cost = {"unit": unit, "encoding": encoding, "template": template, "line_numbers": line_numbers}
        used: list[Workspace] = []
        confined: list[Path] = []

        fields = _context_fields(test_log, log_file, junit_file)

        def job(deadline: float) -> CallToolResult:
            allowed = _call_scope(folders, client_roots, limits)
            root = allowed.confine(repository, "repository")
            confined.append(root)
            text, report, coverage = _call_inputs(
                allowed, test_log, log_file, junit_xml, junit_file, coverage_file, limits, deadline
            )
            ws = workspaces.get(root)
            used.append(ws)
            ran = text is None and report is None
            text = _test_output(ws, text, report, test, interpreter, limits, deadline)
            rerun_report: RerunReport | None = None
            if mode is not None:
                rerun_with = _rerun_python(ws.root, interpreter, text, report, test)
                coverage, rerun_report = _traced_rerun(
                    ws.root, text, report, test, mode, rerun_with, limits, deadline
                )
            try:
                outcome = ws.context(
                    text,
                    junit_xml=report,
                    test=test,
                    query=query,
                    budget=budget,
                    cost=cost,
                    coverage=coverage,
                    deadline=deadline,
                )
            except UnknownTestError as exc:
                if not ran or exc.known:
                    raise
                raise ToolError(_no_failure_in_run(str(test), text)) from None
            if rerun_report is not None:
                outcome = dataclasses.replace(outcome, rerun=rerun_report)
            if time.monotonic() > deadline:
                raise _Expired
            return _context_result(outcome, limits)

        return await _in_worker(
            _naming_arguments(job, fields),
            limits,
            abandoned=lambda: workspaces.forget(confined[0], used) if confined else None,
        )


def _test_output(
    ws: Workspace,
    text: str | None,
    report: str | bytes | None,
    test: str | None,
    interpreter: Path | None,
    limits: Limits,
    deadline: float,
) -> str:
    """The test output of a call: ``text``; ``""`` when the JUnit ``report`` alone is the test
    output; else the output of running the node id ``test`` in the repository."""
    if text is None and report is not None:
        text = ""  # the JUnit report alone is the test output
    if text is None:
        node_id = str(test)
        _check_test_id(ws.root, node_id, limits, deadline)
        python_path = _interpreter(ws.root, interpreter)
        text = _run_test(ws.root, node_id, python_path, limits=limits, deadline=deadline)
    return text


def _context_result(outcome: ContextResult, limits: Limits) -> CallToolResult:
    """The tool result of ``context_for_failure``: the section, and the result, report and
    timings as structured content."""
    structured = {
        "section": outcome.section,
        "result": outcome.to_dict(),
        "report": outcome.summary(),
        "timings": dict(outcome.timings),
    }
    return _sized(outcome.section, structured, limits)


def _add_build_tool(server: MCPServer[Any], limits: Limits) -> None:
    """Register the ``build`` tool (:func:`create_server`)."""

    @server.tool(description=_BUILD_DESCRIPTION)
    async def build(input: dict[str, Any], engine: str = "native") -> CallToolResult:
        engines = {
            "native": native.ContextBuilder(limits=limits).build,
            "reference": reference.ContextBuilder(limits=limits).build,
        }
        if engine not in engines:
            raise ToolError(f"engine must be 'native' or 'reference', got {_shown(engine)!r}")

        def job(deadline: float) -> CallToolResult:
            result = engines[engine](input)
            if time.monotonic() > deadline:
                raise _Expired
            section = (
                render(result)
                if result.cost.template is not None
                else render_markdown(result, order=result.cost.order)
            )
            if time.monotonic() > deadline:
                raise _Expired
            return _sized(section, {"section": section, "result": result.to_dict()}, limits)

        return await _in_worker(job, limits)


def run(
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    cache: bool = True,
    limits: Limits | None = None,
    roots: Sequence[str | os.PathLike[str]] | None = None,
    allow_run: bool = False,
    python: str | os.PathLike[str] | None = None,
) -> None:
    """Serve over standard input and output until the client closes them (arguments as for
    :func:`create_server`), the log screened (:func:`_screened_logs`: one line per record on
    standard error, no secret of the client's, no traceback).

    Raises:
        InvalidInputError: as :func:`create_server`.
    """
    with _screened_logs():
        create_server(
            cache_dir=cache_dir, cache=cache, limits=limits, roots=roots, allow_run=allow_run, python=python
        ).run()
