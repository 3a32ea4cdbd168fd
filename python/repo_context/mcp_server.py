"""repo-context as a Model Context Protocol server (``repo-context mcp``), over standard I/O.

Built on the official ``mcp`` Python SDK (2.x, ``MCPServer``). Two tools:

* ``context_for_failure``: the context job for a failing test of a repository
  (:meth:`repo_context.Workspace.context`): the repository folder, the test output (its text,
  or a file holding it) and optionally the node id of the failing test to build for, or the
  node id alone (the server then runs that test with pytest first), the budget and the cost
  (unit, encoding, template, line numbers);
* ``build``: ``repo-context build`` on a JSON input (candidates, budget, cost, failing files).

Each returns the rendered section as its text content, and the structured result as its
structured content. One :class:`repo_context.Workspace` per repository folder is kept for the
life of the server, so a call after the first reuses what was derived (and the on-disk cache
serves the first call of a new server).

Nothing else in the package imports this module: it needs the ``mcp`` extra
(``pip install 'repo-context[mcp]'``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from . import builder as native
from . import reference
from ._io import read_capped
from .composer import render, render_markdown
from .errors import InvalidInputError
from .limits import Limits, resolve
from .workspace import ContextResult, Workspace

__all__ = ["create_server", "run"]

_INSTRUCTIONS = (
    "repo-context selects the code a model should see about a failing test. Call "
    "context_for_failure with the repository folder and the test output (pytest, unittest, a "
    "traceback or JUnit XML): it returns the prompt section, ranked and packed into the budget, "
    "and a structured result saying what was selected and what was left out and why."
)


def create_server(
    *, cache_dir: str | os.PathLike[str] | None = None, cache: bool = True, limits: Limits | None = None
) -> MCPServer:
    """The MCP server with the ``context_for_failure`` and ``build`` tools; ``cache_dir`` and
    ``cache`` configure the workspaces' on-disk cache (:class:`repo_context.Workspace`);
    ``limits`` (default :data:`repo_context.limits.DEFAULT_LIMITS`, read when the server is
    made) bound every tool call: the test output read, the repository walked, the build. A
    call over a limit is a tool error naming it."""
    limits = resolve(limits)
    server: MCPServer = MCPServer("repo-context", instructions=_INSTRUCTIONS)
    workspaces: dict[Path, Workspace] = {}
    lock = threading.Lock()

    def workspace(repository: str) -> Workspace:
        root = Path(repository).expanduser().resolve()
        with lock:
            if root not in workspaces:
                workspaces[root] = Workspace(root, cache_dir=cache_dir, cache=cache, limits=limits)
            return workspaces[root]

    @server.tool()
    async def context_for_failure(
        repository: str,
        test_log: str | None = None,
        log_file: str | None = None,
        test: str | None = None,
        junit_xml: str | None = None,
        query: str | None = None,
        budget: int | None = None,
        unit: str = "chars",
        encoding: str | None = None,
        template: str = "markdown",
        line_numbers: bool = False,
        python: str | None = None,
    ) -> CallToolResult:
        """Build the code context for a failing test.

        repository: the folder the tests ran in. test_log: the test output (pytest in any
        --tb style, unittest, a traceback, or a JUnit XML report); or log_file: a file holding
        it. test: the node id (or name) of the failing test to build for (default: the first
        failure); with a node id and no test output, the test is run first
        (``python -m pytest -rA --tb=long NODEID`` in the repository, at most
        ``PYTEST_TIMEOUT`` seconds, with ``python``: default the repository's ``.venv`` or
        ``venv`` interpreter if there is one, else the server's). junit_xml: the run's JUnit
        XML report, if any. query: extra search words.
        budget: in the cost's unit (default 16000 characters or 4000 tokens). unit: "chars" or
        "tokens"; encoding: "o200k_base" (default) or "cl100k_base"; template: "markdown" or
        "xml" (the budget counts the rendered section); line_numbers: number the lines.

        Returns the section (text) and, structured, the section, the result
        (``ContextResult.to_dict()``: the build result's JSON form, the policy omissions and
        the failure), the report (Markdown) and the timings in seconds.
        """
        if test_log is None and log_file is None and test is None:
            raise ToolError("give test_log (the test output), log_file, or test (a node id to run)")
        cost = {"unit": unit, "encoding": encoding, "template": template, "line_numbers": line_numbers}

        def run() -> ContextResult:
            text = test_log
            if text is None and log_file is not None:
                data = read_capped(Path(log_file), "max_log_bytes", field="pytest_log", limits=limits)
                text = data.decode("utf-8", errors="replace")
            if text is None:
                text = _run_test(workspace(repository).root, str(test), python, limits=limits)
            return workspace(repository).context(
                text, junit_xml=junit_xml, test=test, query=query, budget=budget, cost=cost
            )

        outcome = await _input_errors(run)
        structured = {
            "section": outcome.section,
            "result": outcome.to_dict(),
            "report": outcome.summary(),
            "timings": dict(outcome.timings),
        }
        return CallToolResult(
            content=[TextContent(type="text", text=outcome.section)], structured_content=structured
        )

    @server.tool()
    async def build(input: dict[str, Any], engine: str = "native") -> CallToolResult:
        """Rank, de-duplicate and pack candidates: the input of ``repo-context build`` (a JSON
        object: "candidates", "max_chars" or "budget" and "cost", "failure_files").
        engine: "native" (Rust) or "reference" (pure Python).

        Returns the section (text: the cost's template, else the Markdown section) and the
        build result's JSON form (structured)."""
        engines = {
            "native": native.RepoContextBuilder(limits=limits).build,
            "reference": reference.RepoContextBuilder(limits=limits).build,
        }
        if engine not in engines:
            raise ToolError(f"engine must be 'native' or 'reference', got {engine!r}")
        result = await _input_errors(lambda: engines[engine](input))
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


#: The longest a test run started by ``context_for_failure`` may take, in seconds.
PYTEST_TIMEOUT = 600

_T = TypeVar("_T")


def _run_test(root: Path, node_id: str, python: str | None, *, limits: Limits | None = None) -> str:
    """The output of ``python -m pytest -rA --tb=long -p no:cacheprovider NODE_ID`` run in
    ``root`` (standard output and standard error, as they come), at most
    ``limits.max_log_bytes`` of it (``limits`` default: ``DEFAULT_LIMITS``): the run is
    stopped once it writes more. Raises ``ValueError`` if the node id looks like an option,
    ``OSError`` if the interpreter cannot be started, ``TimeoutError`` after
    :data:`PYTEST_TIMEOUT` seconds, ``ResourceLimitError`` for more output than the limit."""
    if node_id.startswith("-"):
        raise ValueError(f"not a test node id: {node_id!r}")
    if python is None:
        found = [root / env / "bin" / "python" for env in (".venv", "venv")]
        python = next((str(p) for p in found if p.is_file()), sys.executable)
    command = [python, "-m", "pytest", "-rA", "--tb=long", "-p", "no:cacheprovider", node_id]
    with subprocess.Popen(
        command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    ) as process:
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            process.kill()

        timer = threading.Timer(PYTEST_TIMEOUT, expire)
        timer.start()
        try:
            assert process.stdout is not None
            output = read_capped(
                process.stdout, "max_log_bytes", field="pytest_log", limits=limits, what="the test output"
            )
            process.wait()
        finally:
            timer.cancel()
            if process.poll() is None:
                process.kill()
        if expired.is_set():
            raise TimeoutError(f"the test run took more than {PYTEST_TIMEOUT} s: {node_id}")
    return output.decode("utf-8", errors="replace")


async def _input_errors(job: Callable[[], _T]) -> _T:
    """``job()`` in a worker thread; an error of the input (a bad candidate, budget or cost, a
    folder or file that cannot be read, an unknown test) becomes a tool error whose message
    reaches the client."""
    try:
        return await anyio.to_thread.run_sync(job)
    except (InvalidInputError, ValueError, LookupError, OSError, TypeError, TimeoutError) as exc:
        raise ToolError(str(exc)) from exc


def run(
    *, cache_dir: str | os.PathLike[str] | None = None, cache: bool = True, limits: Limits | None = None
) -> None:
    """Serve over standard input and output until the client closes them (arguments as for
    :func:`create_server`)."""
    create_server(cache_dir=cache_dir, cache=cache, limits=limits).run()
