"""The MCP server, driven in-process by the SDK's own client."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import repo_context
from mcp import Client
from mcp_types import TextContent
from repo_context.mcp_server import create_server
from test_workspace import LIB, OTHER, TEST, _log


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (root / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    (root / "lib" / "other.py").write_text(OTHER, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_ratios.py").write_text(TEST, encoding="utf-8")
    return root


def _text(result: Any) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return str(result.content[0].text)


def test_tools_over_the_sdk_client(repo: Path, tmp_path: Path) -> None:
    server = create_server(
        cache_dir=tmp_path / "cache", roots=[tmp_path], allow_run=True, python=sys.executable
    )
    log_file = tmp_path / "failing.log"
    log_file.write_text(_log(), encoding="utf-8")
    expected = repo_context.Workspace(repo, cache=False).context(_log(), budget=700)
    expected_tokens = repo_context.Workspace(repo, cache=False).context(
        _log(), test="tests/test_ratios.py::test_other", budget=90, cost={"unit": "tokens", "template": "xml"}
    )
    build_input = {
        "candidates": [
            {
                "path": "a.py",
                "start": 1,
                "end": 2,
                "content": "x = 1\ny = 2\n",
                "reason": "search",
                "score": 1.0,
            }
        ],
        "max_chars": 100,
    }

    async def session() -> None:
        async with Client(server) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == {"context_for_failure", "build"}

            first = await client.call_tool(
                "context_for_failure", {"repository": str(repo), "test_log": _log(), "budget": 700}
            )
            assert not first.is_error, first
            assert _text(first) == expected.section
            data = first.structured_content
            assert data["section"] == expected.section
            assert data["result"] == json.loads(json.dumps(expected.to_dict()))
            assert data["result"]["failure"]["test"] == "test_mean_ratio"
            assert data["result"]["failure"]["failure_file"] == "lib/ratios.py"
            assert data["report"] == expected.summary()
            assert len(data["section"]) == data["result"]["used"] <= 700

            # The workspace stays warm: the second call reads nothing again.
            second = await client.call_tool(
                "context_for_failure",
                {
                    "repository": str(repo),
                    "log_file": str(log_file),
                    "test": "tests/test_ratios.py::test_other",
                    "budget": 90,
                    "unit": "tokens",
                    "template": "xml",
                },
            )
            assert not second.is_error, second
            assert _text(second) == expected_tokens.section
            assert second.structured_content["result"] == json.loads(json.dumps(expected_tokens.to_dict()))
            assert second.structured_content["result"]["failure"]["test"] == "test_other"

            # A node id alone: the server runs the test, then builds the context for it.
            ran = await client.call_tool(
                "context_for_failure",
                {"repository": str(repo), "test": "tests/test_ratios.py::test_other", "budget": 600},
            )
            assert not ran.is_error, ran
            data = ran.structured_content
            assert data["result"]["failure"]["test_id"] == "tests/test_ratios.py::test_other"
            assert data["result"]["failure"]["failure_file"] == "tests/test_ratios.py"
            assert "def test_other():\n    assert unrelated(2) == 5\n" in _text(ran)
            assert len(_text(ran)) == data["result"]["used"] <= 600
            option = await client.call_tool(
                "context_for_failure", {"repository": str(repo), "test": "--version"}
            )
            assert option.is_error
            assert _text(option) == (
                "Error executing tool context_for_failure: test: not a test node id: --version "
                "(it may not start with '-' or '@')"
            )

            built = await client.call_tool("build", {"input": build_input})
            assert not built.is_error, built
            result = repo_context.build(build_input)
            assert _text(built) == repo_context.composer.render_markdown(result)
            assert built.structured_content["result"] == json.loads(json.dumps(result.to_dict()))

            # Bad input is a tool error with the reason, not a crash of the server.
            bad = await client.call_tool("context_for_failure", {"repository": str(repo)})
            assert bad.is_error and "give test_log" in _text(bad)
            missing = await client.call_tool(
                "context_for_failure", {"repository": str(tmp_path / "nowhere"), "test_log": _log()}
            )
            assert missing.is_error and "not a directory" in _text(missing)
            invalid = await client.call_tool(
                "build", {"input": {"candidates": [{"path": "a.py"}], "max_chars": 5}}
            )
            assert invalid.is_error and "candidate 0: field 'start'" in _text(invalid)

    anyio.run(session)


def test_the_servers_limits_bound_every_tool_call(repo: Path, tmp_path: Path) -> None:
    # create_server(limits=...) (repo-context mcp --limit NAME=N): a call over a limit is a
    # tool error naming the limit, in the build tool and in the context tool.
    server = create_server(
        cache=False, limits=repo_context.Limits(max_candidates=1, max_log_bytes=100), roots=[tmp_path]
    )
    log_file = tmp_path / "failing.log"
    log_file.write_text(_log(), encoding="utf-8")
    two = {
        "candidates": [
            {"path": f"{name}.py", "start": 1, "end": 1, "content": "x\n", "reason": "search", "score": 1}
            for name in "ab"
        ],
        "max_chars": 100,
    }

    async def session() -> None:
        async with Client(server) as client:
            for engine in ("native", "reference"):
                over = await client.call_tool("build", {"input": two, "engine": engine})
                assert over.is_error and "max_candidates" in _text(over), _text(over)
                one = await client.call_tool("build", {"input": {**two, "candidates": two["candidates"][:1]}})
                assert not one.is_error, _text(one)
            log = await client.call_tool(
                "context_for_failure", {"repository": str(repo), "log_file": str(log_file)}
            )
            assert log.is_error and "max_log_bytes" in _text(log), _text(log)

    anyio.run(session)
