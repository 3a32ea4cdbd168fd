"""The MCP server's error texts: echoes of an argument cut, the client's argument names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import bugcontext
import pytest
from bugcontext.integrations.mcp_server import create_server
from builders import ratios_log, ratios_repo
from pydantic import BaseModel
from test_mcp_server import ERROR, _calls, _context, _error


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return ratios_repo(tmp_path)


def test_every_echo_of_an_argument_is_cut_to_200_characters(repo: Path) -> None:
    """A 1,500-character ``test`` or ``encoding`` once came back whole in the error."""
    log = repo / "failing.log"
    log.write_text(ratios_log(), encoding="utf-8")
    server = create_server(cache=False, roots=[repo])
    results = _calls(
        server,
        _context(repo, log_file=str(log), test="t" * 1500),
        _context(repo, log_file=str(log), unit="tokens", encoding="x" * 1500),
        _context(repo, test_log=ratios_log(), template="m" * 5000),
    )
    assert [_error(r) for r in results] == [
        ERROR + f"no failing test {'t' * 200 + '...'!r} in the log (failing tests: "
        "tests/test_ratios.py::test_mean_ratio, tests/test_ratios.py::test_other)",
        ERROR + f"encoding: must be one of 'o200k_base', 'cl100k_base', got {'x' * 200 + '...'!r}",
        ERROR + f"template: must be one of 'markdown', 'xml' or None, got {'m' * 200 + '...'!r}",
    ]


def test_errors_name_the_arguments_the_client_gave(repo: Path) -> None:
    """A ``test_log`` over ``max_log_bytes`` was once named ``input field 'pytest_log'``."""
    log = repo / "failing.log"
    log.write_text(ratios_log(), encoding="utf-8")
    size = log.stat().st_size
    limits = bugcontext.Limits(max_log_bytes=100, max_junit_bytes=10, max_query_chars=5)
    server = create_server(cache=False, roots=[repo], limits=limits)
    results = _calls(
        server,
        _context(repo, test_log=ratios_log()),
        _context(repo, test_log="x", junit_xml="y" * 20),
        _context(repo, test_log="x", query="q" * 8),
        _context(repo, test_log="x", unit="zz"),
        _context(repo, test_log="x", budget=-1),
        _context(repo, test_log="x", encoding="cl100k_base"),
        _context(repo, test_log="x", coverage_file=str(log)),
    )
    errors = [_error(r) for r in results]
    assert errors[:6] == [
        ERROR + f"test_log: the log is {size} bytes, over the limit max_log_bytes = 100 bytes",
        ERROR + "junit_xml: the report is 20 bytes, over the limit max_junit_bytes = 10 bytes",
        ERROR + "query: the query is 8 characters, over the limit max_query_chars = 5 characters",
        ERROR + "unit: must be one of 'chars', 'tokens', got 'zz'",
        ERROR + "budget: must be >= 0, got -1",
        ERROR + "encoding: is only for unit 'tokens'",
    ]
    assert errors[6].startswith(ERROR + "coverage_file: unknown format")


def _stdio_call(root: Path, arguments: dict[str, Any], roots: object) -> dict[str, Any]:
    """The reply to one ``context_for_failure`` call over ``bugcontext mcp --root root`` (its
    standard I/O), from a client declaring the ``roots`` capability that answers
    ``roots/list`` with ``{"roots": roots}``, as it is."""
    import mcp_types

    hello = {
        "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
        "capabilities": {"roots": {"listChanged": False}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    call = {"name": "context_for_failure", "arguments": arguments}
    with subprocess.Popen(
        [sys.executable, "-m", "bugcontext", "mcp", "--root", str(root), "--no-cache"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None

        def send(message: dict[str, Any]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
            proc.stdin.flush()

        send({"id": 1, "method": "initialize", "params": hello})
        assert json.loads(proc.stdout.readline())["id"] == 1
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": call})
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("method") != "roots/list":
                break
            send({"id": message["id"], "result": {"roots": roots}})
        proc.stdin.close()
        proc.wait(60)
    assert message["id"] == 2, message
    result: dict[str, Any] = message["result"]
    return result


@pytest.mark.parametrize(
    ("roots", "problem"),
    [
        ([{"uri": "https://example.com/repo"}], "roots.0.uri: URL scheme should be 'file'"),
        ("nope", "roots: Input should be a valid list"),
        ([{"uri": 5}], "roots.0.uri: Input should be a valid string"),
        (
            [{"uri": "file:///"}, {"uri": 5}, {}, {"uri": 6}, {"uri": 7}],
            "roots.1.uri: Input should be a valid string; roots.2.uri: Field required; "
            "roots.3.uri: Input should be a valid string and 1 more",
        ),
    ],
)
def test_a_roots_answer_the_sdk_refuses_says_what_is_wrong(repo: Path, roots: object, problem: str) -> None:
    """A root that is not a ``file://`` URI, roots that are not a list or a ``uri`` of 5
    once gave the bare tool error ``Error executing tool context_for_failure``."""
    result = _stdio_call(repo, {"repository": str(repo), "test_log": ratios_log()}, roots)
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        ERROR + f"roots: the client's roots/list answer is not a list of file:// roots ({problem})"
    )


def test_unreadable_junit_xml_names_the_argument_it_came_from(repo: Path) -> None:
    """Malformed JUnit XML was ``invalid JUnit XML: ...`` whichever argument held it."""
    bad = repo / "bad.xml"
    bad.write_text("<testsuite><testcase", encoding="utf-8")
    server = create_server(cache=False, roots=[repo])
    results = _calls(
        server,
        _context(repo, junit_file=str(bad)),
        _context(repo, test_log=ratios_log(), junit_xml="<a"),
        _context(repo, log_file=str(bad)),
        _context(repo, test_log='<?xml version="1.0"?><testsuite><testcase'),
    )
    names = ["junit_file", "junit_xml", "log_file", "test_log"]
    for name, result in zip(names, results, strict=True):
        assert _error(result).startswith(ERROR + f"{name}: invalid JUnit XML: "), _error(result)


@pytest.mark.parametrize("option", ["--log", "--junit-xml"])
def test_the_command_line_names_the_option_of_unreadable_junit_xml(
    repo: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from bugcontext.integrations.cli import main

    bad = repo / "bad.xml"
    bad.write_text("<testsuite><testcase", encoding="utf-8")
    assert main(["context", "--repo", str(repo), "--no-cache", option, str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bugcontext context: {option}: invalid JUnit XML: ") and err.count("\n") == 1


@pytest.mark.parametrize("name", [".env", ".env.local", "id_rsa", ".netrc", "deploy.pem", ".bash_history"])
@pytest.mark.parametrize("argument", ["log_file", "junit_file", "coverage_file"])
def test_a_file_argument_that_is_a_secret_by_its_name_is_not_read(
    repo: Path, name: str, argument: str
) -> None:
    """``log_file: .env`` was read as a test output: its lines shaped as a failure (a summary
    line, a traceback) came back in the failure block, where the repository's reader withholds
    the file whole."""
    secret = repo / name
    secret.write_text(
        "FAILED tests/test_ratios.py::test_mean_ratio - ValueError: DB_PASS=correcthorse\n", encoding="utf-8"
    )
    link = repo / "innocent.log"
    link.symlink_to(name)
    server = create_server(cache=False, roots=[repo])
    extra = {"test_log": ratios_log()} if argument == "coverage_file" else {}
    for path in (secret, link):
        (result,) = _calls(server, _context(repo, **extra, **{argument: str(path)}))
        error = _error(result)
        assert error.startswith(ERROR + f"{argument}: ") and "is a secret by its name" in error, error
        assert "correcthorse" not in error
    link.unlink()


# --- the screen outside tool results: JSON-RPC errors, other replies, the log ---------------------

# A GitHub token, assembled here so that the file itself holds none.
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HIDDEN = "[REDACTED: GitHubTokenDetector]"


def test_the_fake_token_is_a_secret_to_the_screen() -> None:
    from bugcontext.core.secrets import find_secrets

    assert [(s.start, s.end, s.kind) for s in find_secrets(SECRET)] == [(0, 40, "GitHubTokenDetector")]


def _serve(root: Path, *messages: dict[str, Any] | str) -> tuple[dict[Any, dict[str, Any]], str]:
    """The replies (by id; ``None`` for those with id null, the last of them) of ``bugcontext
    mcp --root root`` to ``messages`` (after the initialize handshake; a string is a line as
    it is), and its standard error."""
    import mcp_types

    hello = {
        "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        *(m if isinstance(m, str) else json.dumps({"jsonrpc": "2.0", **m}) for m in messages),
        json.dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/list"}),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "mcp", "--root", str(root), "--no-cache"],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert SECRET not in proc.stdout and "ghp_" not in proc.stdout
    replies = {}
    for line in proc.stdout.splitlines():
        reply = json.loads(line)
        replies[reply.get("id")] = reply
    assert {tool["name"] for tool in replies["last"]["result"]["tools"]} == {"build", "context_for_failure"}
    return replies, proc.stderr


def test_no_json_rpc_error_or_reply_echoes_a_secret(tmp_path: Path) -> None:
    """An unknown method named after a token came back in the error's data, ``prompts/get``
    of a token as "Unknown prompt: <token>", ``resources/read`` of a URI holding one in the
    message and the data (the SDK's errors, made outside any tool call)."""
    replies, _ = _serve(
        tmp_path,
        {"id": 1, "method": f"x/{SECRET}", "params": {"t": SECRET}},
        {"id": 2, "method": "prompts/get", "params": {"name": SECRET}},
        {"id": 3, "method": "resources/read", "params": {"uri": f"file:///{SECRET}"}},
        {"id": 4, "method": "logging/setLevel", "params": {"level": SECRET}},
        {
            "id": 5,
            "method": "completion/complete",
            "params": {
                "ref": {"type": "ref/prompt", "name": SECRET},
                "argument": {"name": SECRET, "value": SECRET},
            },
        },
        {"id": 6, "method": "prompts/list", "params": {"cursor": SECRET}},
        {"id": 7, "method": "resources/list", "params": {"cursor": SECRET}},
        {
            "id": 8,
            "method": "initialize",
            "params": {"protocolVersion": SECRET, "capabilities": {"x": SECRET}},
        },
        {"id": 9, "method": "prompts/get", "params": {"name": "p" * 5000}},
        {"id": 10, "method": "tools/call", "params": {"name": f"evil_{SECRET}", "arguments": {}}},
    )
    assert replies[1]["error"] == {"code": -32601, "message": "Method not found", "data": f"x/{HIDDEN}"}
    assert replies[2]["error"] == {"code": 0, "message": f"Unknown prompt: {HIDDEN}"}
    assert replies[3]["error"] == {
        "code": -32602,
        "message": f"Unknown resource: file:///{HIDDEN}",
        "data": {"uri": f"file:///{HIDDEN}"},
    }
    invalid = {"code": -32602, "message": "Invalid request parameters", "data": ""}
    assert replies[4]["error"] == invalid and replies[8]["error"] == invalid
    assert replies[5]["error"] == {
        "code": -32601,
        "message": "Method not found",
        "data": "completion/complete",
    }
    assert replies[6]["result"]["prompts"] == [] and replies[7]["result"]["resources"] == []
    # An echo of a long name is cut as in a tool error (200 characters).
    assert replies[9]["error"] == {"code": 0, "message": f"Unknown prompt: {'p' * 200}..."}
    assert replies[10]["result"]["content"][0]["text"] == f"Unknown tool: evil_{HIDDEN}"


def test_a_request_whose_id_is_a_secret_is_refused_without_its_id(tmp_path: Path) -> None:
    """A reply carries its request's id: one holding a token came back whole, in the SDK's
    reply and in the server's own reply to a line it could not read."""
    replies, _ = _serve(
        tmp_path,
        {"id": SECRET, "method": "tools/list"},
        {"id": 7, "method": "tools/list"},
        '{"jsonrpc":"2.0","id":"' + SECRET + '","method":"tools/list","params":5}',
        {
            "id": f"call-{SECRET}",
            "method": "tools/call",
            "params": {"name": "build", "arguments": {"input": {}}},
        },
    )
    assert replies[None]["error"] == {
        "code": -32600,
        "message": "the request id holds a secret, which the server does not echo: give another id",
    }
    assert "tools" in replies[7]["result"]


def test_errors_and_replies_outside_tool_calls_are_screened_in_process(repo: Path) -> None:
    """The screen is the server's middleware, so a client in process (any transport) gets
    the same: an error of a prompt or resource, a prompt's text, one line each."""
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    server = create_server(cache=False, roots=[repo])

    @server.prompt()
    def hello(name: str) -> str:
        return f"hi {name}, the key is {SECRET}"

    @server.prompt()
    def broken() -> str:
        raise ValueError(f"first line\nsecond {SECRET}")

    async def session() -> list[Any]:
        found: list[Any] = []
        async with Client(server) as client:
            found.append((await client.get_prompt("hello", {"name": "bob"})).messages[0].content.text)
            for name in (SECRET, "broken", f"a\nb {SECRET}"):
                try:
                    await client.get_prompt(name)
                except MCPError as exc:
                    found.append(exc.error.message)
            try:
                await client.read_resource(f"file:///x/{SECRET}")
            except MCPError as exc:
                found.append((exc.error.message, exc.error.data))
        return found

    assert anyio.run(session) == [
        f"hi bob, the key is {HIDDEN}",
        f"Unknown prompt: {HIDDEN}",
        "Error rendering prompt broken",
        f"Unknown prompt: a b {HIDDEN}",
        (f"Unknown resource: file:///x/{HIDDEN}", {"uri": f"file:///x/{HIDDEN}"}),
    ]


def test_the_servers_log_holds_no_secret_and_no_traceback(tmp_path: Path) -> None:
    """``tools/call`` of the tool ``evil_<token>`` logged ``Tool 'evil_<token>' failed``, and
    ``prompts/get`` of a token the SDK's traceback with the token in it, on standard error."""
    replies, err = _serve(
        tmp_path,
        {"id": 1, "method": "tools/call", "params": {"name": f"evil_{SECRET}", "arguments": {}}},
        {"id": 2, "method": "prompts/get", "params": {"name": SECRET}},
        {"id": 3, "method": "resources/read", "params": {"uri": f"file:///{SECRET}"}},
        {"id": 4, "method": "tools/call", "params": {"name": "build", "arguments": {"input": SECRET}}},
        {"method": "notifications/cancelled", "params": {"requestId": SECRET, "reason": SECRET}},
        {"method": "notifications/roots/list_changed", "params": {"x": SECRET}},
    )
    assert SECRET not in err and "ghp_" not in err
    assert "Traceback" not in err and 'File "' not in err
    lines = err.splitlines()
    assert f"Tool 'evil_{HIDDEN}' failed: 'Unknown tool: evil_{HIDDEN}'" in lines
    (prompt,) = [line for line in lines if "prompts/get" in line]
    assert prompt.startswith(f"the prompts/get request failed: ValueError: Unknown prompt: {HIDDEN} (")
    assert replies[1]["result"]["isError"] and replies[2]["error"]["code"] == 0


def test_every_log_record_passes_the_screen_while_serving() -> None:
    """Any logger, any handler, a warning, an exception that ends a thread: one line each,
    the token replaced, no traceback; everything put back afterwards."""
    import io
    import logging
    import threading
    import warnings

    from bugcontext.integrations.mcp_server import _screened_logs

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("anyio.test-screen")
    logger.addHandler(handler)
    logger.propagate = False
    warnings_logger = logging.getLogger("py.warnings")
    warnings_logger.addHandler(handler)
    factory = logging.getLogRecordFactory()
    hook = threading.excepthook
    shown = warnings.showwarning
    try:
        with _screened_logs():
            logger.warning("key %s\nnext line", SECRET)
            try:
                raise RuntimeError(f"failed on {SECRET}") from KeyError(SECRET)
            except RuntimeError:
                logger.exception("a call failed_%s", SECRET)
            logger.error("stack", stack_info=True)
            with warnings.catch_warnings():
                warnings.simplefilter("always")
                warnings.warn(f"odd {SECRET}", stacklevel=1)

            def crash() -> None:
                raise ValueError(f"thread saw {SECRET}")

            worker = threading.Thread(target=crash, name="w1")
            with _captured_log("bugcontext.mcp", handler):
                worker.start()
                worker.join()
        assert logging.getLogRecordFactory() is factory and threading.excepthook is hook
        assert warnings.showwarning is shown
    finally:
        logger.removeHandler(handler)
        warnings_logger.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert SECRET not in stream.getvalue() and "Traceback" not in stream.getvalue()
    assert lines[0] == f"key {HIDDEN} next line"
    assert lines[1].startswith(
        f"a call failed_{HIDDEN}: RuntimeError: failed on {HIDDEN} (test_mcp_errors.py:"
    )
    assert f"; caused by KeyError: '{HIDDEN}'" in lines[1]
    assert lines[2] == "stack"
    assert lines[3].startswith("test_mcp_errors.py:") and lines[3].endswith(f": UserWarning: odd {HIDDEN}")
    assert lines[4].startswith(f"the thread w1 ended on an error: ValueError: thread saw {HIDDEN} (")
    assert len(lines) == 5


class _captured_log:
    """While in the block, the logger ``name`` also writes to ``handler``."""

    def __init__(self, name: str, handler: Any) -> None:
        import logging

        self.logger = logging.getLogger(name)
        self.handler = handler

    def __enter__(self) -> None:
        self.logger.addHandler(self.handler)

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self.handler)


def test_the_sdks_log_records_are_screened_in_process_too(
    repo: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A program running the server in process keeps its own logging; the records of the
    SDK's loggers and the server's are screened before any of its handlers sees them."""
    import logging

    server = create_server(cache=False, roots=[repo])
    with caplog.at_level(logging.INFO):
        (result,) = _calls(server, (f"evil_{SECRET}", {}))
    assert result.is_error
    assert f"Tool 'evil_{HIDDEN}' failed" in caplog.text
    assert SECRET not in caplog.text
    assert all(record.exc_info is None for record in caplog.records)


def test_a_server_that_stops_on_an_unexpected_error_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bugcontext.integrations import mcp_server
    from bugcontext.integrations.cli import main

    async def crash(self: Any) -> None:
        raise RuntimeError(f"lost the stream\nholding {SECRET}")

    monkeypatch.setattr(mcp_server._ScreenedServer, "run_stdio_async", crash)
    assert main(["mcp", "--root", str(tmp_path), "--no-cache"]) == 1
    assert capsys.readouterr().err == (
        "bugcontext mcp: the server stopped on an unexpected error: RuntimeError: lost the stream "
        f"holding {HIDDEN}\n"
    )


# --- argument types: one line naming the argument and what it takes -------------------------------

CONTEXT = "Error executing tool context_for_failure: "
BUILD = "Error executing tool build: "


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ({"repository": 123}, "argument 'repository': expected a string, got the integer 123"),
        ({"budget": "x"}, "argument 'budget': expected an integer or null, got the string 'x'"),
        ({"budget": True}, "argument 'budget': expected an integer or null, got true"),
        ({"budget": 300.5}, "argument 'budget': expected an integer or null, got the number 300.5"),
        ({"line_numbers": "yes"}, "argument 'line_numbers': expected a boolean, got the string 'yes'"),
        ({"line_numbers": 1}, "argument 'line_numbers': expected a boolean, got the integer 1"),
        ({"rerun": 1}, "argument 'rerun': expected a boolean, a string or null, got the integer 1"),
        ({"rerun": [SECRET]}, "argument 'rerun': expected a boolean, a string or null, got an array"),
        ({"test_log": {"a": 1}}, "argument 'test_log': expected a string or null, got an object"),
        ({"unit": None}, "argument 'unit': expected a string, got null"),
        ({"query": ["a"]}, "argument 'query': expected a string or null, got an array"),
        (
            {"repository": 1, "budget": "x"},
            "argument 'repository': expected a string, got the integer 1; "
            "argument 'budget': expected an integer or null, got the string 'x'",
        ),
    ],
)
def test_a_context_argument_of_the_wrong_type_is_one_line(
    repo: Path, call: dict[str, Any], expected: str
) -> None:
    """``{"repository": 123}`` gave pydantic's text ("1 validation error for
    context_for_failureArguments ... For further information visit https://errors.pydantic.dev/")."""
    server = create_server(cache=False, roots=[repo])
    (result,) = _calls(server, _context(repo, **{"test_log": ratios_log(), **call}))
    assert _error(result) == CONTEXT + expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"input": [1]}, "argument 'input': expected an object, got an array"),
        ({"input": "[1, 2]"}, "argument 'input': expected an object, got an array"),
        ({"input": SECRET}, f"argument 'input': expected an object, got the string '{HIDDEN}'"),
        ({"input": "x" * 5000}, f"argument 'input': expected an object, got the string '{'x' * 200}...'"),
        ({"input": {}, "engine": 3}, "argument 'engine': expected a string, got the integer 3"),
        ({}, "argument 'input' is required and was not given"),
        ({"engine": "native"}, "argument 'input' is required and was not given"),
    ],
)
def test_a_build_argument_of_the_wrong_type_is_one_line(
    repo: Path, arguments: dict[str, Any], expected: str
) -> None:
    server = create_server(cache=False, roots=[repo])
    (result,) = _calls(server, ("build", arguments))
    assert _error(result) == BUILD + expected


def test_no_context_argument_is_required_in_vain(repo: Path) -> None:
    server = create_server(cache=False, roots=[repo])
    (result,) = _calls(server, ("context_for_failure", {"test_log": "x"}))
    assert _error(result) == CONTEXT + "argument 'repository' is required and was not given"


class Point(BaseModel):
    x: int
    tags: list[str] = []


def test_an_argument_error_inside_a_nested_argument_names_its_place(repo: Path) -> None:
    """Every tool, every argument type (a list, a mapping, a model, a choice): the argument,
    the place inside it, what was expected and what was given, on one line."""
    server = create_server(cache=False, roots=[repo])

    @server.tool()
    async def shapes(
        items: list[int],
        point: Point | None = None,
        table: dict[str, int] | None = None,
        mode: Literal["a", "b"] = "a",
    ) -> str:
        return "ok"

    calls = [
        {"items": [1, "x", 3]},
        {"items": '[1, "y"]'},
        {"items": [], "point": {"x": "a"}},
        {"items": [], "point": {}},
        {"items": [], "point": {"x": 1, "tags": [1]}},
        {"items": [], "table": {f"k {SECRET}": "v"}},
        {"items": [], "mode": "c"},
        {"items": 5, "point": 3},
        {"items": [f"v{n}" for n in range(8)]},
    ]
    results = _calls(server, *(("shapes", call) for call in calls))
    errors = [_error(result).removeprefix("Error executing tool shapes: ") for result in results]
    assert errors == [
        "argument 'items' at [1]: expected an integer, got the string 'x'",
        "argument 'items' at [1]: expected an integer, got the string 'y'",
        "argument 'point' at x: expected an integer, got the string 'a'",
        "argument 'point' at x is required and was not given",
        "argument 'point' at tags[0]: expected a string, got the integer 1",
        f"argument 'table' at k {HIDDEN}: expected an integer, got the string 'v'",
        "argument 'mode': expected 'a' or 'b', got the string 'c'",
        "argument 'items': expected an array, got the integer 5; argument 'point': expected an object, "
        "got the integer 3",
        "argument 'items' at [0]: expected an integer, got the string 'v0'; "
        "argument 'items' at [1]: expected an integer, got the string 'v1'; "
        "argument 'items' at [2]: expected an integer, got the string 'v2'; "
        "argument 'items' at [3]: expected an integer, got the string 'v3'; "
        "argument 'items' at [4]: expected an integer, got the string 'v4'; and 3 more",
    ]
    assert all("\n" not in e and "pydantic" not in e and "validation error" not in e for e in errors)


def test_every_error_and_notification_is_screened_where_it_leaves() -> None:
    """Over standard I/O every message passes ``_Answers.send``: an error made anywhere (also
    outside the middleware), a notification of the server, screened there once more."""
    import anyio
    from bugcontext.integrations.mcp_server import _Answers
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification

    sent: list[Any] = []

    class Stream:
        async def send(self, item: Any) -> None:
            sent.append(item.message.model_dump(mode="json", exclude_none=True))

        async def aclose(self) -> None:
            pass

    async def main() -> None:
        answers = _Answers(Stream())
        error = ErrorData(code=0, message=f"bad\n{SECRET}", data={"name": SECRET, "long": "d" * 500})
        await answers.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=3, error=error)))
        params = {"level": "info", "data": f"saw {SECRET}"}
        note = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params=params)
        await answers.send(SessionMessage(note))

    anyio.run(main)
    assert sent == [
        {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {
                "code": 0,
                "message": f"bad {HIDDEN}",
                "data": {"name": HIDDEN, "long": "d" * 200 + "..."},
            },
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": f"saw {HIDDEN}"},
        },
    ]
