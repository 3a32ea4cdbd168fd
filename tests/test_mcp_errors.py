"""The MCP server's error texts: echoes of an argument cut, the client's argument names."""

from __future__ import annotations

from pathlib import Path

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
