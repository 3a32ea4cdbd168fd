"""The MCP server's error texts: echoes of an argument cut, the client's argument names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext.integrations.mcp_server import create_server
from builders import ratios_log, ratios_repo
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
