"""The MCP server, driven in-process by the SDK's own client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import bugcontext
from bugcontext.core.secrets import SECRET_REDACTED
from bugcontext.integrations.mcp_server import create_server
from builders import ratios_log, ratios_repo
from mcp import Client
from mcp_types import TextContent


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return ratios_repo(tmp_path)


def _text(result: Any) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    return str(result.content[0].text)


def test_tools_over_the_sdk_client(repo: Path, tmp_path: Path) -> None:
    server = create_server(
        cache_dir=tmp_path / "cache", roots=[tmp_path], allow_run=True, python=sys.executable
    )
    log_file = tmp_path / "failing.log"
    log_file.write_text(ratios_log(), encoding="utf-8")
    expected = bugcontext.Workspace(repo, cache=False).context(ratios_log(), budget=700)
    expected_tokens = bugcontext.Workspace(repo, cache=False).context(
        ratios_log(),
        test="tests/test_ratios.py::test_other",
        budget=90,
        cost={"unit": "tokens", "template": "xml"},
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
                "context_for_failure", {"repository": str(repo), "test_log": ratios_log(), "budget": 700}
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
            result = bugcontext.build(build_input)
            assert _text(built) == bugcontext.core.composer.render_markdown(result)
            assert built.structured_content["result"] == json.loads(json.dumps(result.to_dict()))

            # Bad input is a tool error with the reason, not a crash of the server.
            bad = await client.call_tool("context_for_failure", {"repository": str(repo)})
            assert bad.is_error and "give test_log" in _text(bad)
            missing = await client.call_tool(
                "context_for_failure", {"repository": str(tmp_path / "nowhere"), "test_log": ratios_log()}
            )
            # The reason, never the server's absolute path.
            assert missing.is_error
            assert _text(missing) == (
                "Error executing tool context_for_failure: the repository is not a folder"
            )
            invalid = await client.call_tool(
                "build", {"input": {"candidates": [{"path": "a.py"}], "max_chars": 5}}
            )
            assert invalid.is_error and "candidate 0: field 'start'" in _text(invalid)

    anyio.run(session)


def test_the_servers_limits_bound_every_tool_call(repo: Path, tmp_path: Path) -> None:
    # create_server(limits=...) (bugcontext mcp --limit NAME=N): a call over a limit is a
    # tool error naming the limit, in the build tool and in the context tool.
    server = create_server(
        cache=False, limits=bugcontext.Limits(max_candidates=1, max_log_bytes=100), roots=[tmp_path]
    )
    log_file = tmp_path / "failing.log"
    log_file.write_text(ratios_log(), encoding="utf-8")
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


# --- confinement: roots, regular files, test runs, secrets, time ------------------------------

ERROR = "Error executing tool context_for_failure: "
OUTSIDE = "the path is outside the server's roots"
# A GitHub token, assembled here so that the file itself holds none.
TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
REDACTED = "[REDACTED: GitHubTokenDetector]"


def _calls(server: Any, *calls: tuple[str, dict[str, Any]], **client: Any) -> list[Any]:
    """The results of ``calls`` (tool name, arguments), in order, over one in-process client
    (``client``: the client's options, such as ``list_roots_callback``)."""

    async def session() -> list[Any]:
        async with Client(server, **client) as connected:
            return [await connected.call_tool(name, arguments) for name, arguments in calls]

    results: list[Any] = anyio.run(session)
    return results


def _error(result: Any) -> str:
    assert result.is_error, result
    return _text(result)


def _context(repo: Path, **arguments: Any) -> tuple[str, dict[str, Any]]:
    return "context_for_failure", {"repository": str(repo), **arguments}


def test_a_path_outside_the_roots_is_refused_without_saying_whether_it_exists(
    repo: Path, tmp_path: Path
) -> None:
    server = create_server(cache=False, roots=[repo])
    outside = tmp_path / "outside.log"
    outside.write_text(ratios_log(), encoding="utf-8")
    (repo / "failing.log").write_text(ratios_log(), encoding="utf-8")
    candidates = [
        str(outside),  # exists
        str(tmp_path / "missing.log"),  # does not
        str(repo / ".." / "outside.log"),  # exists, through ..
        str(repo / ".." / "missing.log"),
        str(repo / "nowhere" / ".." / ".." / "outside.log"),
        "/etc/passwd",
        "/no/such/folder/x.log",
        "../outside.log",  # relative: to the server's working folder
        "bad\x00path",
    ]
    results = _calls(
        server,
        *(_context(repo, log_file=path) for path in candidates),
        *(_context(repo, test_log=ratios_log(), junit_file=path) for path in candidates),
        *(_context(Path(path), test_log=ratios_log()) for path in (tmp_path, tmp_path / "nowhere", "/")),
        _context(repo, log_file=str(repo / "failing.log")),
        _context(repo, log_file=str(repo / "missing.log")),
    )
    texts = [_error(result) for result in results[:-2]]
    n = len(candidates)
    assert (
        texts
        == [ERROR + f"log_file: {OUTSIDE}"] * n
        + [ERROR + f"junit_file: {OUTSIDE}"] * n
        + [ERROR + f"repository: {OUTSIDE}"] * 3
    )
    # Inside the roots, the file is read; a missing one may say so.
    assert not results[-2].is_error, results[-2]
    assert results[-2].structured_content["result"]["failure"]["failure_file"] == "lib/ratios.py"
    assert _error(results[-1]) == (
        ERROR + f"log_file: cannot read {repo / 'missing.log'}: No such file or directory"
    )


def test_a_sibling_folder_with_the_roots_name_as_prefix_is_outside(repo: Path, tmp_path: Path) -> None:
    evil = tmp_path / "repo-evil"
    (evil / "lib").mkdir(parents=True)
    (evil / "lib" / "ratios.py").write_text(bugcontext_lib(), encoding="utf-8")
    (evil / "failing.log").write_text(ratios_log(), encoding="utf-8")
    # The root given with a trailing separator is the same root.
    server = create_server(cache=False, roots=[str(repo) + "/"])
    results = _calls(
        server,
        _context(repo, log_file=str(evil / "failing.log")),
        _context(evil, test_log=ratios_log()),
        _context(repo, test_log=ratios_log(), junit_file=str(evil / "failing.log")),
    )
    assert [_error(r) for r in results] == [
        ERROR + f"log_file: {OUTSIDE}",
        ERROR + f"repository: {OUTSIDE}",
        ERROR + f"junit_file: {OUTSIDE}",
    ]


def bugcontext_lib() -> str:
    from builders import LIB as lib

    return lib


def test_a_link_inside_a_root_pointing_out_is_refused(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "lib").mkdir(parents=True)
    (outside / "secret.log").write_text(ratios_log(), encoding="utf-8")
    (repo / "escape.log").symlink_to(outside / "secret.log")
    (repo / "escape_dir").symlink_to(outside)
    (repo / "loop.log").symlink_to(repo / "loop.log")
    (repo / "failing.log").write_text(ratios_log(), encoding="utf-8")
    (repo / "inside.log").symlink_to(repo / "failing.log")  # a link that stays inside is followed
    linked_root = tmp_path / "linked-root"
    linked_root.symlink_to(repo)
    server = create_server(cache=False, roots=[linked_root])  # a root is resolved too
    results = _calls(
        server,
        _context(repo, log_file=str(repo / "escape.log")),
        _context(repo, log_file=str(repo / "escape_dir" / "secret.log")),
        _context(repo / "escape_dir", test_log=ratios_log()),
        _context(repo, test_log=ratios_log(), junit_file=str(repo / "escape.log")),
        _context(repo, log_file=str(repo / "loop.log")),
        _context(repo, log_file=str(repo / "inside.log")),
        _context(linked_root, log_file=str(linked_root / "inside.log")),
    )
    assert [_error(r) for r in results[:4]] == [
        ERROR + f"log_file: {OUTSIDE}",
        ERROR + f"log_file: {OUTSIDE}",
        ERROR + f"repository: {OUTSIDE}",
        ERROR + f"junit_file: {OUTSIDE}",
    ]
    assert _error(results[4]) == (
        ERROR + f"log_file: cannot read {repo / 'loop.log'}: Too many levels of symbolic links"
    )
    for result in results[5:]:
        assert not result.is_error, result
        assert result.structured_content["result"]["failure"]["failure_file"] == "lib/ratios.py"


def test_only_regular_files_are_read_and_a_pipe_never_blocks(repo: Path, tmp_path: Path) -> None:
    import os
    import time

    pipe = repo / "pipe.log"
    os.mkfifo(pipe)  # no writer: opening it for reading would wait forever
    server = create_server(cache=False, roots=[repo, "/dev"])
    started = time.monotonic()
    results = _calls(
        server,
        *(_context(repo, log_file=str(pipe)) for _ in range(50)),
        _context(repo, test_log=ratios_log(), junit_file=str(pipe)),
        _context(repo, log_file=str(repo / "lib")),
        _context(repo, test_log=ratios_log(), junit_file=str(repo)),
        _context(repo, log_file="/dev/zero"),
        _context(repo, log_file="/dev/null"),
        _context(repo, test_log=ratios_log(), junit_file="/dev/urandom"),
    )
    assert time.monotonic() - started < 30
    assert [_error(r) for r in results] == [
        *[ERROR + f"log_file: {pipe} is a named pipe, not a regular file"] * 50,
        ERROR + f"junit_file: {pipe} is a named pipe, not a regular file",
        ERROR + f"log_file: {repo / 'lib'} is a folder, not a regular file",
        ERROR + f"junit_file: {repo} is a folder, not a regular file",
        ERROR + "log_file: /dev/zero is a device, not a regular file",
        ERROR + "log_file: /dev/null is a device, not a regular file",
        ERROR + "junit_file: /dev/urandom is a device, not a regular file",
    ]

    # The server still answers, also after 60 such calls at once.
    async def at_once() -> list[Any]:
        found: list[Any] = []
        async with Client(server) as client:

            async def one() -> None:
                found.append(await client.call_tool(*_context(repo, log_file=str(pipe))))

            async with anyio.create_task_group() as group:
                for _ in range(60):
                    group.start_soon(one)
            found.append(await client.call_tool(*_context(repo, test_log=ratios_log())))
        return found

    *piped, ok = anyio.run(at_once)
    assert [_error(r) for r in piped] == [
        ERROR + f"log_file: {pipe} is a named pipe, not a regular file"
    ] * 60
    assert not ok.is_error, ok


def test_an_oversized_log_or_report_is_refused_before_it_is_read(repo: Path) -> None:
    log = repo / "failing.log"
    log.write_text(ratios_log(), encoding="utf-8")
    size = log.stat().st_size
    server = create_server(
        cache=False, roots=[repo], limits=bugcontext.Limits(max_log_bytes=100, max_junit_bytes=10)
    )
    results = _calls(
        server,
        _context(repo, log_file=str(log)),
        _context(repo, test_log="x", junit_file=str(log)),
    )
    assert [_error(r) for r in results] == [
        ERROR + f"log_file: {log} is {size} bytes, over the limit max_log_bytes = 100 bytes",
        ERROR + f"junit_file: {log} is {size} bytes, over the limit max_junit_bytes = 10 bytes",
    ]


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="1">
<testcase classname="tests.test_ratios" name="test_other" file="tests/test_ratios.py" line="8">
<failure message="assert 4 == 5">def test_other():
&gt;       assert unrelated(2) == 5
E       assert 4 == 5

tests/test_ratios.py:9: AssertionError</failure></testcase></testsuite></testsuites>
"""


def test_a_junit_report_file_inside_the_roots_is_read(repo: Path) -> None:
    report = repo / "junit.xml"
    report.write_text(JUNIT, encoding="utf-8")
    expected = bugcontext.Workspace(repo, cache=False).context(ratios_log(), junit_xml=JUNIT, budget=800)
    server = create_server(cache=False, roots=[repo])
    from_file, from_text = _calls(
        server,
        _context(repo, test_log=ratios_log(), junit_file=str(report), budget=800),
        _context(repo, test_log=ratios_log(), junit_xml=JUNIT, budget=800),
    )
    assert not from_file.is_error, from_file
    for key in ("section", "result", "report", "redacted"):
        assert from_file.structured_content[key] == from_text.structured_content[key], key
    assert from_file.structured_content["result"] == json.loads(json.dumps(expected.to_dict()))
    assert _text(from_file) == expected.section


def test_tests_run_only_when_the_server_allows_it(repo: Path) -> None:
    closed = create_server(cache=False, roots=[repo])
    (refused,) = _calls(closed, _context(repo, test="tests/test_ratios.py::test_other"))
    assert _error(refused) == ERROR + (
        "test: running tests is disabled: the server was started without --allow-run "
        "(running a repository's tests runs its code); give test_log or log_file"
    )
    opened = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)

    async def descriptions(server: Any) -> dict[str, Any]:
        async with Client(server) as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    closed_tools = anyio.run(descriptions, closed)
    opened_tools = anyio.run(descriptions, opened)
    closed_words = closed_tools["context_for_failure"].description
    opened_words = opened_tools["context_for_failure"].description
    assert (
        "Running tests is disabled on this server (it was started without --allow-run, because "
        "running a repository's tests runs that repository's code): give the test output."
    ) in closed_words
    assert (
        "With a node id and no test output, the test is run first: running a repository's tests "
        "runs that repository's code."
    ) in opened_words
    assert "at most 600 seconds" in opened_words
    # The interpreter is never a tool argument.
    for tools in (closed_tools, opened_tools):
        assert "python" not in tools["context_for_failure"].input_schema["properties"]
        assert "client_roots" not in tools["context_for_failure"].input_schema["properties"]


def test_the_interpreter_is_the_configured_one_or_the_repositorys_own(repo: Path, tmp_path: Path) -> None:
    import os

    server = create_server(cache=False, roots=[repo], allow_run=True)
    run = _context(repo, test="tests/test_ratios.py::test_other", budget=600)
    (none,) = _calls(server, run)
    no_interpreter = ERROR + (
        "test: no interpreter to run the test with: the repository has no virtual environment "
        "(.venv or venv, with pyvenv.cfg and bin/python), and the server was started without --python"
    )
    assert _error(none) == no_interpreter
    # The repository's own environment: a script that notes it ran, then runs pytest.
    mark = tmp_path / "used"
    for env in ("venv", ".venv"):
        python = repo / env / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text(f'#!/bin/sh\necho {env} >> "{mark}"\nexec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
        # Not a virtual environment without its pyvenv.cfg (for .venv: venv is used).
        (without,) = _calls(server, run)
        if env == "venv":
            assert _error(without) == no_interpreter
        (repo / env / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
        (ran,) = _calls(server, run)
        for result in (ran, without) if env == ".venv" else (ran,):
            assert not result.is_error, result
            assert (
                result.structured_content["result"]["failure"]["test_id"]
                == "tests/test_ratios.py::test_other"
            )
    assert mark.read_text() == "venv\nvenv\n.venv\n"  # .venv first when both are there
    # --python wins over the repository's environment.
    configured = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    (ran,) = _calls(configured, run)
    assert not ran.is_error, ran
    assert mark.read_text() == "venv\nvenv\n.venv\n"
    # An environment that is a link out of the repository is not the repository's own.
    elsewhere = tmp_path / "elsewhere"
    (repo / ".venv").rename(elsewhere)
    (repo / "venv").rename(tmp_path / "elsewhere2")
    (repo / ".venv").symlink_to(elsewhere)
    (refused,) = _calls(server, run)
    assert _error(refused) == no_interpreter
    (repo / ".venv").unlink()
    (repo / ".venv").symlink_to(repo / "lib")  # a link inside, but no environment
    (refused,) = _calls(server, run)
    assert _error(refused) == no_interpreter
    with pytest.raises(bugcontext.InvalidInputError) as info:
        create_server(roots=[repo], python=tmp_path / "no-python")
    assert str(info.value) == f"input field 'python': not an executable file: {tmp_path / 'no-python'}"
    with pytest.raises(bugcontext.InvalidInputError) as info:
        create_server(roots=[repo], python=tmp_path)
    assert str(info.value) == f"input field 'python': not an executable file: {tmp_path}"
    os.chmod(mark, 0o644)
    with pytest.raises(bugcontext.InvalidInputError) as info:
        create_server(roots=[repo], python=mark)  # not executable
    assert str(info.value) == f"input field 'python': not an executable file: {mark}"


def test_a_test_id_never_becomes_an_option_or_an_argument_file(repo: Path, tmp_path: Path) -> None:
    report = tmp_path / "written-by-pytest.xml"
    (repo / "args.txt").write_text(f"--junitxml={report}\ntests/test_ratios.py\n", encoding="utf-8")
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    ids = ["--version", "-p", f"--junitxml={report}", "@args.txt", f"@{repo / 'args.txt'}", "-"]
    results = _calls(server, *(_context(repo, test=node) for node in ids), _context(repo, test=""))
    assert [_error(r) for r in results] == [
        *(ERROR + f"test: not a test node id: {node} (it may not start with '-' or '@')" for node in ids),
        ERROR + "test: the node id is empty",
    ]
    assert not report.exists()


def test_a_test_id_must_name_a_test_path_inside_the_repository(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_x.py").write_text("def test_x():\n    assert False\n", encoding="utf-8")
    (repo / "tests" / "test_link.py").symlink_to(outside / "test_x.py")
    # The server's roots hold the outside folder too: the test must still be in the repository.
    server = create_server(cache=False, roots=[tmp_path], allow_run=True, python=sys.executable)
    escaping = [
        "../outside/test_x.py::test_x",  # exists
        "../outside/test_y.py::test_y",  # does not
        f"{outside / 'test_x.py'}::test_x",
        "tests/test_link.py::test_x",
        "tests/../../outside/test_x.py",
    ]
    results = _calls(
        server,
        *(_context(repo, test=node) for node in escaping),
        _context(repo, test="tests/test_none.py::test_none"),
        _context(repo, test="test_other"),
    )
    assert [_error(r) for r in results] == [
        *(ERROR + f"test: the test's path is outside the repository: {node}" for node in escaping),
        ERROR + "test: no such test file or folder in the repository: tests/test_none.py",
        ERROR + "test: no such test file or folder in the repository: test_other",
    ]


def test_every_result_and_error_passes_the_secret_screen(repo: Path) -> None:
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    build_input = {
        "candidates": [
            {
                "path": "settings.py",
                "start": 1,
                "end": 2,
                "content": f"GITHUB = '{TOKEN}'\nDEBUG = True\n",
                "reason": "search",
                "score": 1.0,
            }
        ],
        "max_chars": 200,
    }
    built, node, log_path, validation = _calls(
        server,
        ("build", {"input": build_input}),
        _context(repo, test=f"@{TOKEN}"),
        _context(repo, log_file=str(repo / f"{TOKEN}.log")),
        _context(repo, test_log=ratios_log(), budget=TOKEN),
    )
    result = bugcontext.build(build_input)
    section = bugcontext.core.composer.render_markdown(result)
    assert TOKEN in section  # the engine itself keeps the content ...
    expected, records = bugcontext.core.secrets.redact_json(
        {"section": section, "result": json.loads(json.dumps(result.to_dict()))}
    )
    assert not built.is_error, built
    # ... the server's result does not.
    assert _text(built) == section.replace(TOKEN, REDACTED)
    assert built.structured_content == {**expected, "redacted": records}
    assert [(r["where"], r["kind"]) for r in records] == [
        ("$.section", "GitHubTokenDetector"),
        ("$.result.items[0].content", "GitHubTokenDetector"),
    ]
    assert TOKEN not in json.dumps(built.structured_content)
    assert _error(node) == ERROR + f"test: not a test node id: @{REDACTED} (it may not start with '-' or '@')"
    assert (
        _error(log_path) == ERROR + f"log_file: cannot read {repo}/{REDACTED}.log: No such file or directory"
    )
    # The SDK's own argument check echoes the value given: screened too.
    text = _error(validation)
    assert TOKEN not in text and REDACTED in text and text.startswith(ERROR)


def test_an_echo_cut_short_never_keeps_the_start_of_a_secret(repo: Path) -> None:
    """An argument echoed in an error is cut at 200 characters; a token across the cut once
    left its first characters (``ghp_A1b2C3``), which the screen did not know for a secret."""
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    node = "@" + "a" * 180 + " " + TOKEN
    key = "k" * 190 + " " + TOKEN
    test, unknown = _calls(server, _context(repo, test=node), ("build", {"input": {}, key: 1}))
    shown = "@" + "a" * 180 + " ..."
    assert _error(test) == ERROR + f"test: not a test node id: {shown} (it may not start with '-' or '@')"
    text = _error(unknown)
    assert "k" * 190 + " ..." in text and "ghp_" not in text, text


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it was read
        return False


SLOW_TEST = """\
import pathlib, subprocess, sys, time


def test_slow():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    here = pathlib.Path(__file__).parent
    (here / "pids.txt").write_text(f"{child.pid}")
    time.sleep(120)
"""


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            {"test_run_seconds": 4},
            "test: the test run took more than 4 seconds, over the limit test_run_seconds = 4 seconds: "
            "tests/test_slow.py::test_slow",
        ),
        (
            {"mcp_call_seconds": 4},
            "the call took more than 4 seconds, over the limit mcp_call_seconds = 4 seconds",
        ),
    ],
)
def test_a_call_never_holds_a_worker_past_its_time_limit(
    repo: Path, limits: dict[str, int], message: str
) -> None:
    import time

    (repo / "tests" / "test_slow.py").write_text(SLOW_TEST, encoding="utf-8")
    server = create_server(
        cache=False, roots=[repo], allow_run=True, python=sys.executable, limits=bugcontext.Limits(**limits)
    )
    started = time.monotonic()
    slow, quick = _calls(
        server,
        _context(repo, test="tests/test_slow.py::test_slow"),
        ("build", {"input": {"candidates": [], "max_chars": 10}}),
    )
    assert time.monotonic() - started < 15
    assert _error(slow) == ERROR + message
    assert not quick.is_error, quick
    # The run's whole process group is killed: the test's own child too.
    child = int((repo / "tests" / "pids.txt").read_text())
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)


def test_the_clients_roots_narrow_the_servers_roots(repo: Path, tmp_path: Path) -> None:
    import mcp_types

    outer = tmp_path / "failing.log"
    outer.write_text(ratios_log(), encoding="utf-8")
    inner = repo / "failing.log"
    inner.write_text(ratios_log(), encoding="utf-8")
    spaced = repo / "my logs"
    spaced.mkdir()
    (spaced / "failing.log").write_text(ratios_log(), encoding="utf-8")

    def client_roots(*folders: Path | str) -> Any:
        async def callback(context: Any) -> mcp_types.ListRootsResult:
            roots = [
                mcp_types.Root(uri=folder.as_uri() if isinstance(folder, Path) else folder)
                for folder in folders
            ]
            return mcp_types.ListRootsResult(roots=roots)

        return callback

    server = create_server(cache=False, roots=[tmp_path])
    calls = (
        _context(repo, log_file=str(outer)),
        _context(repo, log_file=str(inner)),
        _context(repo, log_file=str(spaced / "failing.log")),
    )
    # Without the roots capability, the server's roots alone.
    assert [r.is_error for r in _calls(server, *calls)] == [False, False, False]
    narrowed = _calls(server, *calls, list_roots_callback=client_roots(repo))
    assert _error(narrowed[0]) == ERROR + f"log_file: {OUTSIDE}"
    assert [r.is_error for r in narrowed[1:]] == [False, False]
    # A root URI with an escaped character (a space) names its folder.
    escaped = _calls(server, *calls, list_roots_callback=client_roots(spaced))
    assert [_error(r) for r in escaped[:2]] == [ERROR + f"repository: {OUTSIDE}"] * 2
    assert _error(escaped[2]) == ERROR + f"repository: {OUTSIDE}"
    # The client cannot widen the server's roots.
    confined = create_server(cache=False, roots=[repo])
    widened = _calls(confined, *calls, list_roots_callback=client_roots(Path("/"), tmp_path))
    assert _error(widened[0]) == ERROR + f"log_file: {OUTSIDE}"
    assert not widened[1].is_error, widened[1]
    # A client that declares roots but lists none (or no local file:// root) reaches nothing.
    for roots in ((), (f"file://elsewhere.example{repo}",)):
        nothing = _calls(server, *calls, list_roots_callback=client_roots(*roots))
        assert [_error(r) for r in nothing] == [ERROR + f"repository: {OUTSIDE}"] * 3


def test_the_scope_compares_whole_path_components() -> None:
    from bugcontext.integrations.mcp_server import _Scope

    scope = _Scope((Path("/srv/repo"),), None)
    assert [
        scope.contains(Path(p)) for p in ("/srv/repo", "/srv/repo/a.log", "/srv/repo-evil/a.log", "/srv", "/")
    ] == [True, True, False, False, False]
    both = _Scope((Path("/srv"),), (Path("/srv/repo"), Path("/home")))
    assert [both.contains(Path(p)) for p in ("/srv/repo/x", "/srv/other", "/home/x")] == [True, False, False]
    assert _Scope((Path("/srv"),), ()).contains(Path("/srv/x")) is False


def test_the_command_line_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bugcontext.integrations.cli import _parser, main

    args = _parser().parse_args(["mcp", "--root", "a", "--root", "b", "--allow-run", "--python", "py"])
    assert (args.root, args.allow_run, args.python) == (["a", "b"], True, "py")
    args = _parser().parse_args(["mcp"])
    assert (args.root, args.allow_run, args.python) == (None, False, None)
    assert main(["mcp", "--root", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == (
        f"bugcontext mcp: input field 'root': not a folder: {tmp_path / 'nowhere'}\n"
    )
    assert main(["mcp", "--root", str(tmp_path), "--python", str(tmp_path / "py")]) == 2
    assert capsys.readouterr().err == (
        f"bugcontext mcp: input field 'python': not an executable file: {tmp_path / 'py'}\n"
    )


def test_the_screen_covers_every_tool_and_protocol_errors(repo: Path) -> None:
    # The screen sits where every call passes (MCPServer.call_tool), not in each tool: a tool
    # added later is screened too, its result, its errors and a protocol error it raises.
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError

    server = create_server(cache=False, roots=[repo])

    @server.tool()
    async def echo(text: str, fail: str = "") -> str:
        if fail == "tool":
            raise ToolError(f"cannot echo {text}")
        if fail == "protocol":
            raise MCPError(-32602, f"bad {text}", {"text": text})
        if fail == "crash":
            raise RuntimeError(f"crashed on {text}")
        return text

    results = _calls(
        server,
        ("echo", {"text": f"say {TOKEN}"}),
        ("echo", {"text": TOKEN, "fail": "tool"}),
        ("echo", {"text": TOKEN, "fail": "crash"}),
    )
    assert _text(results[0]) == f"say {REDACTED}"
    assert results[0].structured_content == {
        "result": f"say {REDACTED}",
        "redacted": [
            {"where": "$.result", "kind": "GitHubTokenDetector", "reason": "policy", "why": SECRET_REDACTED}
        ],
    }
    assert _error(results[1]) == f"Error executing tool echo: cannot echo {REDACTED}"
    assert _error(results[2]) == "Error executing tool echo"
    # In process, the protocol error reaches the client's task group as it was raised.
    with pytest.raises(Exception) as info:
        _calls(server, ("echo", {"text": TOKEN, "fail": "protocol"}))
    (error,) = [leaf for leaf in _leaves(info.value) if isinstance(leaf, MCPError)]
    assert (error.code, error.message, error.data) == (-32602, f"bad {REDACTED}", {"text": REDACTED})


def _leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``, exception groups opened."""
    inner = getattr(error, "exceptions", None)
    return [error] if inner is None else [leaf for each in inner for leaf in _leaves(each)]


LINGERING_TEST = """\
import pathlib, subprocess, sys

# Holds the run's output open for two minutes (and, with WRITES set, writes to it).
CHILD = '''
import os, time
for _ in range(12000):
    print(os.environ.get("WRITES", ""), end="", flush=True)
    time.sleep(0.01)
'''


def test_leaves_a_child():
    child = subprocess.Popen([sys.executable, "-c", CHILD])
    (pathlib.Path(__file__).parent / "pids.txt").write_text(f"{child.pid}")
    assert False
"""


def test_a_child_left_behind_by_the_test_run_is_killed(repo: Path) -> None:
    import time

    (repo / "tests" / "test_lingering.py").write_text(LINGERING_TEST, encoding="utf-8")
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    started = time.monotonic()
    (ran,) = _calls(server, _context(repo, test="tests/test_lingering.py::test_leaves_a_child"))
    # The child holds the run's output open: the server does not wait for it.
    assert time.monotonic() - started < 30
    assert not ran.is_error, ran
    assert ran.structured_content["result"]["failure"]["test"] == "test_leaves_a_child"
    child = int((repo / "tests" / "pids.txt").read_text())
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)


def test_a_file_replaced_by_a_link_after_the_check_is_refused(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The opened file's own path (/proc/self/fd) is checked again: here it is made to say the
    # file opened lies outside, as if a link had been swapped in between the check and the open.
    from bugcontext.integrations import mcp_server

    log = repo / "failing.log"
    log.write_text(ratios_log(), encoding="utf-8")
    with open(log, "rb") as handle:  # on Linux, the path of an open file
        assert mcp_server._opened_path(handle.fileno()) == log.resolve()
    monkeypatch.setattr(mcp_server, "_opened_path", lambda fd: tmp_path / "elsewhere.log")
    server = create_server(cache=False, roots=[repo])
    (swapped,) = _calls(server, _context(repo, log_file=str(log)))
    assert _error(swapped) == ERROR + f"log_file: {OUTSIDE}"


def test_a_call_made_in_process_without_a_client_has_the_servers_roots(repo: Path, tmp_path: Path) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    (repo / "failing.log").write_text(ratios_log(), encoding="utf-8")
    (tmp_path / "outside.log").write_text(ratios_log(), encoding="utf-8")
    server = create_server(cache=False, roots=[repo])

    async def direct() -> Any:
        with pytest.raises(ToolError) as info:
            await server.call_tool(
                "context_for_failure", {"repository": str(repo), "log_file": str(tmp_path / "outside.log")}
            )
        assert str(info.value) == ERROR + f"log_file: {OUTSIDE}"
        return await server.call_tool(
            "context_for_failure", {"repository": str(repo), "log_file": str(repo / "failing.log")}
        )

    result = anyio.run(direct)
    assert not result.is_error, result
    assert result.structured_content["result"]["failure"]["failure_file"] == "lib/ratios.py"


def test_a_child_that_keeps_writing_after_the_run_does_not_hold_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from bugcontext.integrations.mcp_server import _run_test

    (repo / "tests" / "test_lingering.py").write_text(LINGERING_TEST, encoding="utf-8")
    monkeypatch.setenv("WRITES", "x")
    started = time.monotonic()
    output = _run_test(repo, "tests/test_lingering.py::test_leaves_a_child", sys.executable)
    assert time.monotonic() - started < 30
    assert "test_leaves_a_child" in output
    child = int((repo / "tests" / "pids.txt").read_text())
    for _ in range(100):
        if not _alive(child):
            break
        time.sleep(0.05)
    assert not _alive(child)


def test_calls_past_their_time_limit_leave_the_server_its_workers(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # More slow calls at once than the worker pool has threads (anyio's default: 40): each
    # returns at its time limit, and the server answers the next call at once.
    import threading
    import time

    from bugcontext.job import workspace as workspace_module

    release = threading.Event()
    real_context = workspace_module.Workspace.context

    def slow(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not release.is_set():
            release.wait(30)  # work that outlives the call (a long walk of a repository)
        return real_context(self, *args, **kwargs)

    monkeypatch.setattr(workspace_module.Workspace, "context", slow)
    server = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(mcp_call_seconds=2))

    async def session() -> tuple[list[Any], Any, float, float]:
        found: list[Any] = []
        async with Client(server) as client:

            async def one() -> None:
                found.append(await client.call_tool(*_context(repo, test_log=ratios_log())))

            started = time.monotonic()
            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(one)
            slow_done = time.monotonic() - started
            release.set()
            started = time.monotonic()
            after = await client.call_tool(*_context(repo, test_log=ratios_log()))
            return found, after, slow_done, time.monotonic() - started

    try:
        slow_results, after, slow_seconds, after_seconds = anyio.run(session)
    finally:
        release.set()
    assert [_error(r) for r in slow_results] == [
        ERROR + "the call took more than 2 seconds, over the limit mcp_call_seconds = 2 seconds"
    ] * 50
    assert slow_seconds < 10
    assert not after.is_error, after
    assert after_seconds < 10


def test_a_result_over_max_result_bytes_is_a_tool_error(repo: Path) -> None:
    build_input = {
        "candidates": [
            {"path": "a.py", "start": 1, "end": 1, "content": "x = 1\n", "reason": "search", "score": 1.0}
        ],
        "max_chars": 100,
    }
    result = bugcontext.ContextBuilder().build(build_input)
    section = bugcontext.core.composer.render_markdown(result)
    structured = {"section": section, "result": result.to_dict()}
    size = len(json.dumps(structured, ensure_ascii=False).encode()) + len(section.encode())
    fits = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(max_result_bytes=size))
    over = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(max_result_bytes=size - 1))
    (kept,) = _calls(fits, ("build", {"input": build_input}))
    assert not kept.is_error and _text(kept) == section
    (refused,) = _calls(over, ("build", {"input": build_input}))
    assert _error(refused) == (
        f"Error executing tool build: input field 'result': the result is {size} bytes, "
        f"over the limit max_result_bytes = {size - 1} bytes"
    )


def test_unknown_arguments_are_refused_with_the_known_ones(repo: Path) -> None:
    server = create_server(cache=False, roots=[repo])
    typo, many = _calls(
        server,
        ("build", {"input": {"candidates": [], "max_chars": 10}, "engnie": "reference"}),
        _context(repo, test_log=ratios_log(), **{f"x{i}": i for i in range(12)}),
    )
    assert _error(typo) == (
        "Error executing tool build: unknown argument engnie (the tool takes input, engine)"
    )
    assert _error(many) == (
        ERROR + "unknown argument " + ", ".join(f"x{i}" for i in range(10)) + " and 2 more (the tool "
        "takes repository, test_log, log_file, test, junit_xml, junit_file, coverage_file, query, "
        "budget, unit, encoding, template, line_numbers, rerun)"
    )


def test_the_clients_roots_are_capped(repo: Path) -> None:
    import mcp_types

    def listing(count: int) -> Any:
        async def callback(context: Any) -> mcp_types.ListRootsResult:
            return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=repo.as_uri())] * count)

        return callback

    server = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(mcp_client_roots=3))
    (refused,) = _calls(server, _context(repo, test_log=ratios_log()), list_roots_callback=listing(4))
    assert _error(refused) == (
        ERROR + "input field 'roots': the client's list of roots is 4 roots, "
        "over the limit mcp_client_roots = 3 roots"
    )
    (served,) = _calls(server, _context(repo, test_log=ratios_log()), list_roots_callback=listing(3))
    assert not served.is_error, served


def test_the_clients_roots_request_is_under_the_calls_time_limit(repo: Path) -> None:
    import mcp_types

    async def stalled(context: Any) -> mcp_types.ListRootsResult:
        # Longer than the call may take; the in-process client answers nothing else meanwhile.
        await anyio.sleep(4)
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=repo.as_uri())])

    server = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(mcp_call_seconds=1))
    # Were the roots request outside the limit, the call would succeed once they came.
    # The initialize handshake: the server asks for the roots (roots/list) and waits.
    (slow,) = _calls(
        server, _context(repo, test_log=ratios_log()), list_roots_callback=stalled, mode="legacy"
    )
    assert _error(slow) == (
        ERROR + "the call took more than 1 seconds, over the limit mcp_call_seconds = 1 seconds"
    )


def test_a_test_id_is_a_test_file_or_a_folder_without_links_leading_out(repo: Path, tmp_path: Path) -> None:
    from bugcontext.integrations import mcp_server

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_x.py").write_text("def test_x():\n    assert False\n", encoding="utf-8")
    (repo / "doc.txt").write_text(">>> 1 + 1\n3\n", encoding="utf-8")
    (repo / "notatest.py").write_text("print('imported')\n", encoding="utf-8")
    (repo / "tests" / "test_alias.py").symlink_to("test_ratios.py")
    (repo / "suite" / "deep").mkdir(parents=True)
    (repo / "suite" / "deep" / "test_out.py").symlink_to(outside / "test_x.py")
    (repo / ".venv").mkdir()  # pytest does not enter it: its links are not looked at
    (repo / ".venv" / "python").symlink_to(sys.executable)
    long_id = "tests/" + "a" * 300_000 + ".py::test_x"
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    results = _calls(
        server,
        *(
            _context(repo, test=node)
            for node in (long_id, "doc.txt", "notatest.py", "tests/conftest.py", "tests/test_alias.py")
        ),
        _context(repo, test="suite"),
        _context(repo, test="."),
    )
    assert [_error(r) for r in results] == [
        ERROR + f"test: not a test node id: {long_id[:200]}... (longer than a test id can be)",
        ERROR + "test: not a test file (named test_*.py or *_test.py): doc.txt",
        ERROR + "test: not a test file (named test_*.py or *_test.py): notatest.py",
        ERROR + "test: no such test file or folder in the repository: tests/conftest.py",
        ERROR + "test: the test's path is a symbolic link: tests/test_alias.py",
        ERROR + "test: the folder suite holds a symbolic link leading out of the repository: "
        "suite/deep/test_out.py",
        ERROR + "test: the folder . holds a symbolic link leading out of the repository: "
        "suite/deep/test_out.py",
    ]
    root = repo.resolve()
    limits = bugcontext.DEFAULT_LIMITS
    assert mcp_server._check_test_id(root, "tests", limits) is None
    assert mcp_server._check_test_id(root, "tests/test_ratios.py::test_other", limits) is None
    few = limits.replace(max_files=2)
    with pytest.raises(mcp_server.ToolError) as info:
        mcp_server._check_test_id(root, "lib", few)
    assert str(info.value) == (
        "test: the folder lib holds more than 2 entries to check (the limit max_files)"
    )
    assert mcp_server.PYTEST_OPTIONS[-2:] == ("-p", "no:doctest")


def test_a_call_given_up_on_lets_go_of_its_workspace(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first call's worker holds its workspace (the lock of its repository) past the
    # call's limit; the next call on the same repository is served by a new workspace.
    import threading

    from bugcontext.job import workspace as workspace_module

    release = threading.Event()
    first = threading.Event()
    real_refresh = workspace_module.Workspace._refresh

    def refresh(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not first.is_set():
            first.set()
            release.wait(60)  # inside the workspace's lock
        return real_refresh(self, *args, **kwargs)

    monkeypatch.setattr(workspace_module.Workspace, "_refresh", refresh)
    server = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(mcp_call_seconds=3))
    try:
        given_up, served = _calls(
            server, _context(repo, test_log=ratios_log()), _context(repo, test_log=ratios_log())
        )
    finally:
        release.set()
    assert _error(given_up) == (
        ERROR + "the call took more than 3 seconds, over the limit mcp_call_seconds = 3 seconds"
    )
    assert not served.is_error, served
    assert served.structured_content["result"]["failure"]["failure_file"] == "lib/ratios.py"


def test_a_request_the_sdk_cannot_read_gets_an_error_reply() -> None:
    import mcp_types
    from bugcontext.integrations import mcp_server

    def reply(line: str) -> Any:
        try:
            read = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # what the SDK's reader makes of the line
            return mcp_server._line_reply(line, None, exc)
        return mcp_server._line_reply(line, read, None)

    call = (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        '"params":{"name":"build","arguments":{"engine":"\\udcff"}}}'
    )
    found = reply(call)
    assert found.message.model_dump(mode="json", exclude_none=True) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32602,
            "message": "a string of the request holds a lone surrogate (\\ud800-\\udfff), which is not text",
        },
    }
    key = reply('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"\\ud800":1}}')
    assert key.message.id == "a" and key.message.error.code == -32602
    # A notification (no id) has no reply, nor has a response of the client.
    assert reply('{"jsonrpc":"2.0","method":"notifications/x","params":{"a":"\\udcff"}}') is None
    assert reply('{"jsonrpc":"2.0","id":3,"result":"\\udcff"}') is None
    # Text that is not JSON is a parse error (id null); JSON that is not a request, invalid.
    parse = {"code": -32700, "message": "parse error: the line is not JSON"}
    for line in ("not json", '{"jsonrpc":"2.0","id":77,"method":"tools/li'):
        found = reply(line).message
        assert found.id is None and found.error.model_dump(exclude_none=True) == parse
    assert reply("[]").message.error.code == -32600 and reply("[]").message.id is None
    # An id the SDK drops (1e999: the request read as a notification) is an invalid request.
    dropped = reply('{"jsonrpc":"2.0","id":1e999,"method":"tools/list"}').message
    assert (dropped.id, dropped.error.code) == (None, -32600)
    assert dropped.error.message == "the request id must be a string or an integer"
    assert reply('{"jsonrpc":"2.0","id":1,"method":"tools/list"}') is None


def test_no_os_error_text_carries_a_path_of_the_server(repo: Path, tmp_path: Path) -> None:
    from bugcontext.integrations import mcp_server

    missing = OSError(2, "No such file or directory", str(tmp_path / "secret" / "place"))
    assert mcp_server._os_error(missing) == "cannot read the repository: No such file or directory"
    assert mcp_server._os_error(NotADirectoryError(f"not a directory: {tmp_path}")) == (
        "the repository is not a folder"
    )
    broken = tmp_path / "broken-python"
    broken.write_bytes(b"\x00\x01\x02\x03")
    broken.chmod(0o755)
    server = create_server(cache=False, roots=[repo], allow_run=True, python=broken)
    (failed,) = _calls(server, _context(repo, test="tests/test_ratios.py::test_other"))
    assert _error(failed) == ERROR + "test: cannot start the interpreter: Exec format error"


ESCAPING_TEST = """\
import pathlib, subprocess


def test_escapes():
    child = subprocess.Popen(["sleep", "301"], start_new_session=True)
    (pathlib.Path(__file__).parent / "escaped.txt").write_text(f"{child.pid}")
    assert child.pid < 0
"""


@pytest.mark.skipif(sys.platform != "linux", reason="child subreapers are Linux's")
def test_a_process_that_leaves_the_runs_session_is_killed_too(repo: Path) -> None:
    import time

    (repo / "tests" / "test_escapes.py").write_text(ESCAPING_TEST, encoding="utf-8")
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    (ran,) = _calls(server, _context(repo, test="tests/test_escapes.py::test_escapes"))
    assert not ran.is_error, ran
    escaped = int((repo / "tests" / "escaped.txt").read_text())
    for _ in range(100):
        if not _alive(escaped):
            break
        time.sleep(0.05)
    assert not _alive(escaped)


@pytest.mark.parametrize(("kept", "made"), [(1, 3), (2, 2)])
def test_the_server_keeps_at_most_mcp_workspaces_workspaces(
    repo: Path, monkeypatch: pytest.MonkeyPatch, kept: int, made: int
) -> None:
    from bugcontext.integrations import mcp_server

    created: list[Path] = []

    class Counted(mcp_server.Workspace):
        def __init__(self, root: Any, **options: Any) -> None:
            created.append(Path(root))
            super().__init__(root, **options)

    monkeypatch.setattr(mcp_server, "Workspace", Counted)
    server = create_server(cache=False, roots=[repo], limits=bugcontext.Limits(mcp_workspaces=kept))
    # Every folder is a repository of its own: lib, then tests, then lib again.
    results = _calls(
        server,
        _context(repo / "lib", test_log=ratios_log()),
        _context(repo / "tests", test_log=ratios_log()),
        _context(repo / "lib", test_log=ratios_log()),
    )
    assert [r.is_error for r in results] == [False, False, False]
    root = repo.resolve()
    expected = [root / "lib", root / "tests", root / "lib"][:made]
    assert created == expected


@pytest.mark.parametrize("depth", [200, 500, 990, 3000, 50_000])
def test_a_line_nested_too_deep_to_read_gets_an_error_reply(tmp_path: Path, depth: int) -> None:
    """A request line of 990 nested arrays once ended the stdio server with a RecursionError,
    then went unanswered (3,000 or 50,000 levels too; 500 got "not valid JSON-RPC"): it gets
    the invalid request error naming the depth limit, with its id, and the next request is
    answered."""
    import mcp_types

    deep = '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"x":' + "[" * depth + "]" * depth + "}}"
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    given = "".join(json.dumps(line) + "\n" for line in lines) + deep + "\n"
    given += json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}) + "\n"
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "mcp", "--root", str(tmp_path), "--no-cache"],
        input=given,
        capture_output=True,
        text=True,
        timeout=120,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [r.get("id") for r in replies] == [1, 9, 10], proc.stderr[-2000:]
    assert replies[1]["error"] == {
        "code": -32600,
        "message": "the request is nested deeper than the server reads "
        "(at most 201 levels of arrays and objects)",
    }
    assert {t["name"] for t in replies[2]["result"]["tools"]} >= {"build"}
    assert "RecursionError" not in proc.stderr and proc.returncode == 0


def test_every_request_read_before_the_input_ends_is_answered(tmp_path: Path) -> None:
    """A client that writes its requests and closes its end (a pipe) gets every reply: the
    SDK cancels the calls in flight when its input ends, and replies went missing (the
    tools/list after a line nested too deep, most runs). A request the client cancels is not
    waited for."""
    import mcp_types

    candidate = {"path": "a.py", "start": 1, "end": 1, "content": "x = 1\n", "reason": "search", "score": 1.0}
    build = {"candidates": [candidate], "max_chars": 100}
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        *(
            {
                "jsonrpc": "2.0",
                "id": f"b{n}",
                "method": "tools/call",
                "params": {"name": "build", "arguments": {"input": build}},
            }
            for n in range(5)
        ),
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nothing", "arguments": {}}},
        {"jsonrpc": "2.0", "id": "1", "method": "tools/list"},
    ]
    given = "".join(json.dumps(line) + "\n" for line in lines)
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "mcp", "--root", str(tmp_path), "--no-cache"],
        input=given,
        capture_output=True,
        text=True,
        timeout=120,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert sorted(map(str, (r["id"] for r in replies))) == sorted(
        ["1", "2", "b0", "b1", "b2", "b3", "b4", "3", "1"]
    )
    assert {r["id"] for r in replies if "result" in r and "tools" in r["result"]} == {2, "1"}
    built = [r for r in replies if str(r["id"]).startswith("b")]
    assert [r["result"]["isError"] for r in built] == [False] * 5
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_request_line_over_the_input_limit_is_refused_unread(tmp_path: Path) -> None:
    """A line longer than max_input_bytes is read to its end in pieces, never held whole, and
    answered with the invalid request error naming the limit (the SDK read any line whole,
    however long); the lines after it are served."""
    import mcp_types

    first = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    fits = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    limit = 3000
    exact = fits[:-1] + " " * (limit - len(fits)) + "}"
    assert len(exact) == limit
    long = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"x": "y" * 5000}})
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    given = json.dumps(first) + "\n" + json.dumps(ready)
    given += "\n" + long + "\n" + exact + "\n" + '{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}' + "\n"
    command = [sys.executable, "-m", "bugcontext", "mcp", "--root", str(tmp_path), "--no-cache"]
    proc = subprocess.run(
        [*command, "--limit", f"max_input_bytes={limit}"],
        input=given,
        capture_output=True,
        text=True,
        timeout=120,
    )
    replies = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [r.get("id") for r in replies] == [1, None, 2, 4], proc.stderr[-2000:]
    assert replies[1]["error"] == {
        "code": -32600,
        "message": f"the request line is {len(long)} bytes, over the limit max_input_bytes = {limit} bytes",
    }
    assert proc.returncode == 0


def test_a_cancelled_request_is_not_waited_for() -> None:
    from bugcontext.integrations.mcp_server import _Answers
    from mcp_types import JSONRPCNotification, JSONRPCRequest

    async def main() -> list[bool]:
        sent: list[object] = []

        class Stream:
            async def send(self, item: object) -> None:
                sent.append(item)

            async def aclose(self) -> None:
                pass

        answers = _Answers(Stream())
        seen = []
        answers.read(JSONRPCRequest(jsonrpc="2.0", id=5, method="tools/list"))
        answers.read(JSONRPCRequest(jsonrpc="2.0", id="5", method="tools/list"))
        with anyio.move_on_after(0.05):
            await answers.all_answered()
            seen.append(True)
        seen.append(False)
        cancel = {"requestId": 5}
        answers.read(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=cancel))
        with anyio.move_on_after(0.05):
            await answers.all_answered()
            seen.append(True)  # "5" (a string) is still open
        answers.read(
            JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": "5"})
        )
        with anyio.move_on_after(5):
            await answers.all_answered()
            seen.append(True)
        return seen

    assert anyio.run(main) == [False, True]


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"budget": True}, "budget"),
        ({"budget": "300"}, "budget"),
        ({"budget": 300.5}, "budget"),
        ({"line_numbers": "yes"}, "line_numbers"),
        ({"line_numbers": 1}, "line_numbers"),
        ({"rerun": 1}, "rerun"),
    ],
)
def test_tool_arguments_are_not_coerced(repo: Path, arguments: dict[str, Any], name: str) -> None:
    """``"budget": true`` once ran with a budget of 1 and ``"budget": "300"`` with 300: the
    tools take JSON's own types (an integer, a boolean), as the command line and the API do."""
    server = create_server(cache=False, roots=[repo])
    (result,) = _calls(server, _context(repo, test_log=ratios_log(), **arguments))
    assert name in _error(result)


@pytest.mark.parametrize("test", ["tests/test_ratios.py", "tests", "tests/", "./tests", "."])
def test_a_test_file_or_folder_runs_and_selects_the_first_failing_test_under_it(
    repo: Path, test: str
) -> None:
    # The server runs the file or folder with pytest, and builds for its first failing test.
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    (result,) = _calls(server, _context(repo, test=test))
    assert not result.is_error, _text(result)
    assert _text(result).splitlines()[0] == "### Failure: tests/test_ratios.py::test_mean_ratio"
    assert (
        result.structured_content["result"]["failure"]["test_id"] == "tests/test_ratios.py::test_mean_ratio"
    )


def test_a_test_file_with_no_failing_test_says_what_the_run_reported(repo: Path) -> None:
    (repo / "tests" / "test_fine.py").write_text("def test_fine():\n    pass\n", encoding="utf-8")
    server = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    (result,) = _calls(server, _context(repo, test="tests/test_fine.py"))
    assert _error(result).startswith(
        ERROR + "test: the run of tests/test_fine.py reported no failing test; its output ends: "
    )


NESTED_LOG = """\
=================================== FAILURES ===================================
__________________________________ test_calls __________________________________

    def test_calls():
>       assert calls() == 2

tests/test_calls.py:5:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

x = 1

    def calls(x=1):
>       return f(f(f(x)))
E       ValueError: deep

calls.py:6: ValueError
=========================== short test summary info ============================
FAILED tests/test_calls.py::test_calls - ValueError: deep
"""


LIMIT_2 = ("--limit", "mcp_call_seconds=2")


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) the process ``pid`` has used, from /proc/PID/stat."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc/PID/stat")
def test_work_abandoned_at_the_time_limit_stops_computing(tmp_path: Path) -> None:
    # Reading and indexing 6,000 modules (300,000 lines, no cache) takes seconds of pure
    # Python: past the call's limit its worker stops within a bounded time, and the server
    # goes back to idle.
    import time

    import mcp_types

    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "pkg").mkdir()
    body = "".join(
        f"def helper_{i}(value):\n    total = value + {i}\n    return total * 2\n\n\n" for i in range(10)
    )
    for n in range(6000):
        (root / "pkg" / f"mod_{n}.py").write_text(f'"""Module {n}."""\n\n' + body, encoding="utf-8")
    nested = "f(f(f(x)))"
    (root / "calls.py").write_text(f"def f(x):\n    return x\n\n\ndef calls(x=1):\n    return {nested}\n")
    (root / "tests" / "test_calls.py").write_text(
        "from calls import calls\n\n\ndef test_calls():\n    assert calls() == 2\n", encoding="utf-8"
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "bugcontext", "mcp", "--root", str(root), "--no-cache", *LIMIT_2],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, Any]) -> None:
        assert server.stdin is not None
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()

    def reply(request: int) -> dict[str, Any]:
        assert server.stdout is not None
        while True:
            line = server.stdout.readline()
            assert line, "the server stopped"
            found: dict[str, Any] = json.loads(line)
            if found.get("id") == request:
                return found

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        reply(1)
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        arguments = {"repository": str(root), "test_log": NESTED_LOG.replace("f(f(f(x)))", nested)}
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "context_for_failure", "arguments": arguments},
            }
        )
        answer = reply(2)["result"]
        assert answer["isError"] is True
        assert answer["content"][0]["text"] == (
            ERROR + "the call took more than 2 seconds, over the limit mcp_call_seconds = 2 seconds"
        )
        time.sleep(1.5)  # the grace: the abandoned worker reaches its next check
        before = _cpu_seconds(server.pid)
        time.sleep(2)
        used = _cpu_seconds(server.pid) - before
        assert used < 0.5, f"the server used {used:.2f} s of CPU in the 2 s after the call's limit"
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=30)
        finally:
            server.kill()
            server.stdout.close()
