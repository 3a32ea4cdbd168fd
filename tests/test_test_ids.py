"""Choosing the failing test: a parametrised test's base id covers all its parametrisations,
a node id whose module could not be collected gives that collection failure, and the MCP
tool says so when a test it ran reported no failure at all."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from bugcontext import Workspace
from bugcontext.integrations.cli import main
from bugcontext.job.sources.runs import (
    FailingTest,
    UnknownTestError,
    failing_tests,
    parse_test_output,
    select_test,
    summary_order,
)

PARAMETRISED = """\
import pytest


@pytest.mark.parametrize("n", [1, 2, 3])
def test_x(n):
    assert n == 2, f"bad n {n}"


def test_y():
    assert False, "y"
"""

UNIMPORTABLE = """\
import no_such_module_anywhere


def test_x():
    pass
"""


def _run(root: Path, node_id: str) -> str:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "--tb=long", "-p", "no:cacheprovider", "--", node_id],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    root = tmp_path_factory.mktemp("ids")
    (root / "tests").mkdir()
    (root / "tests" / "test_p.py").write_text(PARAMETRISED, encoding="utf-8")
    (root / "tests" / "test_i.py").write_text(UNIMPORTABLE, encoding="utf-8")
    return root, _run(root, "tests/test_p.py"), _run(root, "tests/test_i.py::test_x")


def _tests(log: str) -> list[FailingTest]:
    return failing_tests(parse_test_output(log), summary_order(log))


@pytest.mark.parametrize("base", ["tests/test_p.py::test_x", "tests.test_p.test_x", "test_x"])
def test_a_base_id_covers_every_failed_parametrisation(runs: tuple[Path, str, str], base: str) -> None:
    _, log, _ = runs
    tests = _tests(log)
    assert [t.test for t in tests] == [
        "tests/test_p.py::test_x[1]",
        "tests/test_p.py::test_x[3]",
        "tests/test_p.py::test_y",
    ]
    chosen = select_test(tests, base)
    assert chosen is not None
    assert chosen.test == base
    assert chosen.failure is tests[0].failure
    assert chosen.others == (tests[1].failure,)
    # An exact parametrised id still chooses that one alone.
    assert select_test(tests, "tests/test_p.py::test_x[3]") is tests[1]


def test_a_base_id_with_no_failed_parametrisation_is_unknown(runs: tuple[Path, str, str]) -> None:
    _, log, _ = runs
    with pytest.raises(UnknownTestError) as info:
        select_test(_tests(log), "tests/test_p.py::test_z")
    assert str(info.value) == (
        "no failing test 'tests/test_p.py::test_z' in the log (failing tests: tests/test_p.py::test_x[1], "
        "tests/test_p.py::test_x[3], tests/test_p.py::test_y)"
    )


@pytest.mark.parametrize(
    "node_id", ["tests/test_i.py::test_x", "tests/test_i.py::Case::test_q", "tests/test_i.py"]
)
def test_a_node_id_of_an_uncollectable_module_gives_the_collection_failure(
    runs: tuple[Path, str, str], node_id: str
) -> None:
    _, _, log = runs
    tests = _tests(log)
    chosen = select_test(tests, node_id)
    assert chosen is tests[0]
    assert (chosen.test, chosen.failure.phase, chosen.failure.exception_type) == (
        "tests/test_i.py",
        "collect",
        "ModuleNotFoundError",
    )


def test_an_unknown_test_names_a_collection_failure_as_such(runs: tuple[Path, str, str]) -> None:
    _, _, log = runs
    with pytest.raises(UnknownTestError) as info:
        select_test(_tests(log), "tests/test_other.py::test_x")
    assert str(info.value) == (
        "no failing test 'tests/test_other.py::test_x' in the log "
        "(failing tests: tests/test_i.py (collection error))"
    )


def test_the_context_of_a_base_id_uses_every_parametrisation(
    runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, log, _ = runs
    (root.parent / "p.log").write_text(log, encoding="utf-8")
    args = ["context", "--repo", str(root), "--pytest-log", str(root.parent / "p.log"), "--no-cache"]
    assert main([*args, "--test", "tests/test_p.py::test_x", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["failure"]["test_id"] == "tests/test_p.py::test_x[1]"
    assert data["failure_file"] == "tests/test_p.py"
    # One failure block per parametrisation used, at the head of the section.
    blocks = [(b["test"], b["message"]) for b in data["failure_blocks"]]
    assert blocks == [("tests/test_p.py::test_x[1]", "bad n 1"), ("tests/test_p.py::test_x[3]", "bad n 3")]
    # An exact id: that parametrisation alone.
    assert main([*args, "--test", "tests/test_p.py::test_x[3]", "--format", "json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert [b["test"] for b in exact["failure_blocks"]] == ["tests/test_p.py::test_x[3]"]


def test_the_report_says_a_collection_failure_is_one(runs: tuple[Path, str, str]) -> None:
    root, _, log = runs
    result = Workspace(root, cache=False).context(log, test="tests/test_i.py::test_x")
    assert result.failure is not None and result.failure.phase == "collect"
    assert (
        "- phase: collection (the test's module could not be collected: it never ran)\n" in result.summary()
    )


# --- the MCP tool, running the test itself --------------------------------------------------


def test_the_mcp_tool_runs_a_base_id_and_reports_an_import_failure(runs: tuple[Path, str, str]) -> None:
    pytest.importorskip("mcp")
    from bugcontext.integrations.mcp_server import create_server
    from test_mcp_server import ERROR, _calls, _context, _error, _text

    root, _, _ = runs
    (root / "tests" / "test_ok.py").write_text("def test_fine():\n    pass\n", encoding="utf-8")
    server = create_server(cache=False, roots=[root], allow_run=True, python=sys.executable)
    base, unimportable, passing = _calls(
        server,
        _context(root, test="tests/test_p.py::test_x", budget=2000),
        _context(root, test="tests/test_i.py::test_x", budget=2000),
        _context(root, test="tests/test_ok.py::test_fine"),
    )
    assert not base.is_error, _text(base)
    result = base.structured_content["result"]
    assert result["failure"]["test_id"] == "tests/test_p.py::test_x[1]"
    assert [t["test"] for t in result["failing_tests"]] == [
        "tests/test_p.py::test_x[1]",
        "tests/test_p.py::test_x[3]",
    ]
    assert not unimportable.is_error, _text(unimportable)
    failure = unimportable.structured_content["result"]["failure"]
    assert (failure["test_id"], failure["error"]) == ("tests/test_i.py", "ModuleNotFoundError")
    assert "- phase: collection" in unimportable.structured_content["report"]
    said = _error(passing)
    assert said.startswith(
        ERROR + "test: the run of tests/test_ok.py::test_fine reported no failing test; its output ends: "
    )
    assert re.search(r"=+ 1 passed in [0-9.]+s =+$", said), said
