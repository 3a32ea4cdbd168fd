"""repo-context as a Model Context Protocol server (``repo-context mcp``), over standard I/O.

Built on the official ``mcp`` Python SDK (2.x, ``MCPServer``). Two tools:

* ``context_for_failure``: the context job for a failing test of a repository
  (:meth:`repo_context.Workspace.context`): the repository folder, the test output (its text,
  or a file holding it), optionally a JUnit XML report (text or file) and the node id of the
  failing test to build for; or the node id alone, when the server was started with
  ``allow_run`` (the server then runs that test with pytest first); the budget and the cost
  (unit, encoding, template, line numbers);
* ``build``: ``repo-context build`` on a JSON input (candidates, budget, cost, failing files).

Each returns the rendered section as its text content, and the structured result as its
structured content. One :class:`repo_context.Workspace` per repository folder is kept for the
life of the server, so a call after the first reuses what was derived (and the on-disk cache
serves the first call of a new server).

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
  with ``-`` or ``@``, and its file part must name a file or folder inside the repository.
  The run is killed (its whole process group) after ``Limits.test_run_seconds`` or when the
  call's time limit passes.
* **Time.** The blocking work of a call runs in a worker thread; after
  ``Limits.mcp_call_seconds`` the call returns a tool error and the worker is abandoned (a
  test run or a file read stops at the same deadline; the repository walk and the build,
  bounded by their own limits, finish on their own).
* **Secrets.** Every tool result (its text and every string of its structured content) and
  every error text passes through :func:`repo_context.secrets.redact`; the structured result
  lists what was replaced under ``"redacted"``.

A tool argument that names a path (now or in a later tool: a coverage report, a source map)
goes through ``_Scope.confine`` (a folder) or ``_read_regular`` (a file), and one that reaches
another program's command line is passed after ``--`` and refused if it starts with ``-`` or
``@`` (``_check_test_id``).

Nothing else in the package imports this module: it needs the ``mcp`` extra
(``pip install 'repo-context[mcp]'``).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import stat
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.resolve import ListRoots, Resolve
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, InputRequiredResult, ListRootsResult, TextContent

from . import builder as native
from . import reference
from .composer import header_path, render, render_markdown
from .errors import InvalidInputError
from .limits import DEFAULT_LIMITS, Limits, limit_error, over, resolve
from .secrets import redact_json, redact_text
from .workspace import ContextResult, Workspace

__all__ = ["OUTSIDE", "create_server", "run"]

#: The tool error for a path outside the roots, after the argument's name
#: (``"log_file: the path is outside the server's roots"``): the same words whether the path
#: exists or not.
OUTSIDE = "the path is outside the server's roots"

_INSTRUCTIONS = (
    "repo-context selects the code a model should see about a failing test. Call "
    "context_for_failure with the repository folder and the test output (pytest, unittest, a "
    "traceback or JUnit XML): it returns the prompt section, ranked and packed into the budget, "
    "and a structured result saying what was selected and what was left out and why. Every "
    "path must lie inside the server's roots."
)

_RUN_ENABLED = (
    "With a node id and no test output, the test is run first: running a repository's tests "
    "runs that repository's code. The server runs ``python -m pytest -rA --tb=long -p "
    "no:cacheprovider -- NODEID`` in the repository with the interpreter of its own "
    "configuration (--python, else the repository's .venv or venv), at most "
    "{seconds} seconds."
)
_RUN_DISABLED = (
    "Running tests is disabled on this server (it was started without --allow-run, because "
    "running a repository's tests runs that repository's code): give the test output."
)

_CONTEXT_DESCRIPTION = """Build the code context for a failing test.

repository: the folder the tests ran in. test_log: the test output (pytest in any --tb style,
unittest, a traceback, or a JUnit XML report); or log_file: a file holding it. test: the node
id (or name) of the failing test to build for (default: the first failure). junit_xml: the
run's JUnit XML report, if any; or junit_file: a file holding it. coverage_file: a coverage
report of the failing tests (coverage.py's .coverage data file, its JSON report, LCOV or
Cobertura XML): the code they executed is failure evidence. query: extra search words.
budget: in the cost's unit (default 16000 characters or 4000 tokens). unit: "chars" or
"tokens"; encoding: "o200k_base" (default) or "cl100k_base"; template: "markdown" or "xml"
(the budget counts the rendered section); line_numbers: number the lines.

{run}

Every path (repository, log_file, junit_file, coverage_file) must be a path inside the server's
roots (symbolic links resolved); log_file, junit_file and coverage_file must be regular files.

Returns the section (text) and, structured, the section, the result (ContextResult.to_dict():
the build result's JSON form, the policy omissions and the failure), the report (Markdown),
the timings in seconds and "redacted" (secrets the server replaced in this result).
"""

_BUILD_DESCRIPTION = """Rank, de-duplicate and pack candidates: the input of repo-context build
(a JSON object: "candidates", "max_chars" or "budget" and "cost", "failure_files").
engine: "native" (Rust) or "reference" (pure Python).

Returns the section (text: the cost's template, else the Markdown section) and, structured,
the section, the build result's JSON form and "redacted" (secrets the server replaced in this
result).
"""

#: The default of ``Limits.test_run_seconds``: the longest a test run started by
#: ``context_for_failure`` may take, in seconds (600).
PYTEST_TIMEOUT = DEFAULT_LIMITS.test_run_seconds

_CHUNK = 1 << 16
_T = TypeVar("_T")


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
        scope; else the tool error ``"{field}: the path is outside the server's roots"``."""
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


def _read_regular(
    scope: _Scope, path: str, arg: str, limit: str, field: str, limits: Limits, deadline: float
) -> bytes:
    """The bytes of the regular file ``path`` (the tool argument ``arg``) inside ``scope``, at
    most the setting ``limit`` of ``limits`` (``ResourceLimitError`` for ``field``), read
    before ``deadline`` (``time.monotonic()``). A folder, pipe, device or socket is refused
    before it is opened (``os.stat``) and again on the opened file (``os.fstat``: the open
    neither follows a link nor blocks), so reading never waits on a writer."""
    real = scope.confine(path, arg)
    shown = header_path(path)
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
    for env in (".venv", "venv"):
        folder = Path(os.path.realpath(root / env))
        candidate = folder / "bin" / "python"
        if (
            folder.is_relative_to(root)  # the repository's own, not a link to another place
            and (folder / "pyvenv.cfg").is_file()  # a virtual environment
            and candidate.is_file()
            and os.access(candidate, os.X_OK)
        ):
            return candidate
    raise ToolError(
        "test: no interpreter to run the test with: the repository has no virtual environment "
        "(.venv or venv, with pyvenv.cfg and bin/python), and the server was started without --python"
    )


def _check_test_id(root: Path, node_id: str) -> None:
    """A tool error unless ``node_id`` is a test id to hand pytest: not an option or an
    argument file (a leading ``-`` or ``@``), its file part (before the first ``::``) a file
    or folder inside the repository ``root`` (resolved)."""
    shown = header_path(node_id)
    if not node_id:
        raise ToolError("test: the node id is empty")
    if node_id[0] in "-@":
        raise ToolError(f"test: not a test node id: {shown} (it may not start with '-' or '@')")
    part = node_id.split("::", 1)[0]
    try:
        real = Path(os.path.realpath(root / part))
    except (ValueError, OSError):
        raise ToolError(f"test: not a test node id: {shown}") from None
    if not real.is_relative_to(root):
        raise ToolError(f"test: the test's path is outside the repository: {shown}")
    if not (real.is_file() or real.is_dir()):
        raise ToolError(f"test: no such test file or folder in the repository: {header_path(part)}")


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill ``process``'s process group (the run and every child it started)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_test(
    root: Path,
    node_id: str,
    python: str | os.PathLike[str],
    *,
    limits: Limits | None = None,
    deadline: float | None = None,
) -> str:
    """The output of ``python -m pytest -rA --tb=long -p no:cacheprovider -- NODE_ID`` run in
    ``root`` (standard output and standard error, as they come), at most
    ``limits.max_log_bytes`` of it (``limits`` default: ``DEFAULT_LIMITS``).

    The run is its own process group (a new session, standard input the null device); the
    whole group is killed when the run ends, writes more than the limit, takes more than
    ``limits.test_run_seconds`` or reaches ``deadline`` (``time.monotonic()``: the call's).
    The node id is passed after ``--`` and is not checked here (:func:`_check_test_id`).

    Raises ``OSError`` if the interpreter cannot be started, ``ToolError`` naming
    ``test_run_seconds`` after that many seconds, ``_Expired`` at ``deadline``,
    ``ResourceLimitError`` for more output than ``max_log_bytes``."""
    limits = resolve(limits)
    started = time.monotonic()
    own = started + limits.test_run_seconds
    stop = own if deadline is None else min(own, deadline)
    maximum = limits.max_log_bytes
    command = [os.fspath(python), "-m", "pytest", "-rA", "--tb=long", "-p", "no:cacheprovider", "--", node_id]
    process = subprocess.Popen(
        command,
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert process.stdout is not None
    fd = process.stdout.fileno()
    chunks: list[bytes] = []
    total = 0
    ended = False
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                if not ended and process.poll() is not None:
                    # The run is over: what it wrote stays in the pipe; a child it left
                    # behind (which may hold the pipe open) is killed.
                    ended = True
                    _kill_group(process)
                left = stop - time.monotonic()
                if left <= 0:
                    if deadline is not None and deadline < own:
                        raise _Expired
                    words = over("test_run_seconds", 0, limits.test_run_seconds, exact=False)
                    raise ToolError(f"test: the test run took {words}: {header_path(node_id)}")
                if not selector.select(min(left, 0.5)):
                    continue
                chunk = os.read(fd, min(_CHUNK, maximum + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total > maximum:
                    raise limit_error(
                        "pytest_log", "max_log_bytes", "the test output", total, maximum, exact=False
                    )
    finally:
        _kill_group(process)
        process.stdout.close()
        process.wait()
    return b"".join(chunks).decode("utf-8", errors="replace")


async def _in_worker(job: Callable[[float], _T], limits: Limits) -> _T:
    """``job(deadline)`` in a worker thread, ``deadline`` (``time.monotonic()``) the end of
    the call's time limit ``limits.mcp_call_seconds``: past it the call is a tool error and
    the worker is abandoned. An error of the input (a bad candidate, budget or cost, a folder
    or file that cannot be read, an unknown test) becomes a tool error whose message reaches
    the client."""
    seconds = limits.mcp_call_seconds
    deadline = time.monotonic() + seconds
    with anyio.move_on_after(seconds):
        try:
            return await anyio.to_thread.run_sync(job, deadline, abandon_on_cancel=True)
        except ToolError:
            raise
        except _Expired:
            raise _call_expired(limits) from None
        except (InvalidInputError, ValueError, LookupError, OSError, TypeError, TimeoutError) as exc:
            raise ToolError(str(exc)) from exc
    raise _call_expired(limits)


def _screened(result: CallToolResult) -> CallToolResult:
    """``result`` with every secret of its text content and of its structured content
    replaced (:func:`repo_context.secrets.redact`); a structured dict gets ``"redacted"``,
    the records of what was replaced (:func:`repo_context.secrets.redact_json`)."""
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


class _ScreenedServer(MCPServer[Any]):
    """``MCPServer`` whose every tool result and tool error (the SDK's own argument errors,
    and protocol errors raised during a call, included) passes the secret screen."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            result = await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            raise UnexpectedToolError(redact_text(str(exc))) from exc.__cause__
        except ToolError as exc:
            raise ToolError(redact_text(str(exc))) from exc.__cause__
        except MCPError as exc:  # a protocol error (the client failed to list its roots)
            data = None if exc.data is None else redact_json(exc.data)[0]
            raise MCPError(exc.code, redact_text(exc.message), data) from exc
        return _screened(result) if isinstance(result, CallToolResult) else result


def _folders(roots: Sequence[str | os.PathLike[str]] | None) -> tuple[Path, ...]:
    listed = [os.getcwd()] if roots is None else [os.fspath(root) for root in roots]
    if not listed:
        raise InvalidInputError("root", "give at least one root folder")
    folders = []
    for root in listed:
        real = Path(os.path.realpath(root))
        if not real.is_dir():
            raise InvalidInputError("root", f"not a folder: {header_path(root)}")
        folders.append(real)
    return tuple(folders)


def _interpreter_option(python: str | os.PathLike[str] | None) -> Path | None:
    if python is None:
        return None
    path = Path(os.path.abspath(python))
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InvalidInputError("python", f"not an executable file: {header_path(os.fspath(python))}")
    return path


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
    (:class:`repo_context.Workspace`); ``limits`` (default
    :data:`repo_context.limits.DEFAULT_LIMITS`, read when the server is made) bound every tool
    call: the test output read, the repository walked, the build, the call's time
    (``mcp_call_seconds``) and a test run's (``test_run_seconds``). A call over a limit is a
    tool error naming it. ``roots``: the folders every path of a call must lie in (default:
    the current folder); ``allow_run``: whether ``context_for_failure`` may run a test (it runs
    the repository's code); ``python``: the interpreter of those runs (default: the
    repository's ``.venv``/``venv``, else a run is a tool error). See the module's
    documentation for what a call can reach.

    Raises:
        InvalidInputError: a root that is not a folder (``field`` ``"root"``), no root, or a
            ``python`` that is not an executable file (``"python"``).
    """
    limits = resolve(limits)
    folders = _folders(roots)
    interpreter = _interpreter_option(python)
    server = _ScreenedServer("repo-context", instructions=_INSTRUCTIONS)
    workspaces: dict[Path, Workspace] = {}
    lock = threading.Lock()

    def scope(found: ListRootsResult | None) -> _Scope:
        if found is None:
            return _Scope(folders, None)
        client = (_file_root(str(root.uri)) for root in found.roots)
        return _Scope(folders, tuple(folder for folder in client if folder is not None))

    def workspace(root: Path) -> Workspace:
        with lock:
            if root not in workspaces:
                workspaces[root] = Workspace(root, cache_dir=cache_dir, cache=cache, limits=limits)
            return workspaces[root]

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
        budget: int | None = None,
        unit: str = "chars",
        encoding: str | None = None,
        template: str = "markdown",
        line_numbers: bool = False,
    ) -> CallToolResult:
        if test_log is None and log_file is None and test is None:
            raise ToolError("give test_log (the test output), log_file, or test (a node id to run)")
        if test_log is not None and log_file is not None:
            raise ToolError("give test_log or log_file, not both")
        if junit_xml is not None and junit_file is not None:
            raise ToolError("give junit_xml or junit_file, not both")
        if test_log is None and log_file is None and not allow_run:
            raise ToolError(
                "test: running tests is disabled: the server was started without --allow-run "
                "(running a repository's tests runs its code); give test_log or log_file"
            )
        allowed = scope(client_roots)
        root = allowed.confine(repository, "repository")
        cost = {"unit": unit, "encoding": encoding, "template": template, "line_numbers": line_numbers}

        def job(deadline: float) -> ContextResult:
            text = test_log
            if text is None and log_file is not None:
                data = _read_regular(
                    allowed, log_file, "log_file", "max_log_bytes", "pytest_log", limits, deadline
                )
                text = data.decode("utf-8", errors="replace")
            report: str | bytes | None = junit_xml
            if junit_file is not None:
                report = _read_regular(
                    allowed, junit_file, "junit_file", "max_junit_bytes", "junit_xml", limits, deadline
                )
            coverage: bytes | None = None
            if coverage_file is not None:
                coverage = _read_regular(
                    allowed,
                    coverage_file,
                    "coverage_file",
                    "max_coverage_bytes",
                    "coverage",
                    limits,
                    deadline,
                )
            ws = workspace(root)
            if text is None:
                node_id = str(test)
                _check_test_id(ws.root, node_id)
                python_path = _interpreter(ws.root, interpreter)
                text = _run_test(ws.root, node_id, python_path, limits=limits, deadline=deadline)
            return ws.context(
                text, junit_xml=report, test=test, query=query, budget=budget, cost=cost, coverage=coverage
            )

        outcome = await _in_worker(job, limits)
        structured = {
            "section": outcome.section,
            "result": outcome.to_dict(),
            "report": outcome.summary(),
            "timings": dict(outcome.timings),
        }
        return CallToolResult(
            content=[TextContent(type="text", text=outcome.section)], structured_content=structured
        )

    @server.tool(description=_BUILD_DESCRIPTION)
    async def build(input: dict[str, Any], engine: str = "native") -> CallToolResult:
        engines = {
            "native": native.RepoContextBuilder(limits=limits).build,
            "reference": reference.RepoContextBuilder(limits=limits).build,
        }
        if engine not in engines:
            raise ToolError(f"engine must be 'native' or 'reference', got {engine!r}")
        result = await _in_worker(lambda deadline: engines[engine](input), limits)
        section = (
            render(result)
            if result.cost.template is not None
            else render_markdown(result, order=result.cost.order)
        )
        data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
        return CallToolResult(
            content=[TextContent(type="text", text=section)],
            structured_content={"section": section, "result": data},
        )

    return server


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
    :func:`create_server`)."""
    create_server(
        cache_dir=cache_dir, cache=cache, limits=limits, roots=roots, allow_run=allow_run, python=python
    ).run()
