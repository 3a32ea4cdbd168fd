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
    failing_tests_under,
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


COLLECTIONS = {
    "tests/test_a.py": "def test_ok():\n    pass\n\n\ndef test_bad():\n    assert 1 == 2\n",
    "tests/test_ab.py": "def test_other():\n    assert 'a' == 'b'\n",
    "tests/sub/test_c.py": "class Case:\n    def test_m(self):\n        assert [] == [1]\n",
}


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A repository whose failing tests lie in two files and a sub-folder, its pytest log and
    its JUnit XML report."""
    import subprocess

    root = tmp_path_factory.mktemp("collections")
    for name, text in COLLECTIONS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text.replace("class Case", "class TestCase"), encoding="utf-8")
    junit = root.parent / "collections.xml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-rA",
            "--tb=long",
            "-p",
            "no:cacheprovider",
            f"--junitxml={junit}",
            "tests",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return root, done.stdout + done.stderr, junit.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("selection", "chosen"),
    [
        ("tests/test_a.py", "tests/test_a.py::test_bad"),
        ("./tests/test_a.py", "tests/test_a.py::test_bad"),
        ("tests/test_ab.py", "tests/test_ab.py::test_other"),
        ("tests/sub", "tests/sub/test_c.py::TestCase::test_m"),
        ("tests/sub/", "tests/sub/test_c.py::TestCase::test_m"),
        ("tests/sub/test_c.py", "tests/sub/test_c.py::TestCase::test_m"),
        ("tests/sub/test_c.py::TestCase", "tests/sub/test_c.py::TestCase::test_m"),
    ],
)
def test_a_file_folder_or_class_selects_the_first_failing_test_under_it(
    collections: tuple[Path, str, str], selection: str, chosen: str
) -> None:
    _, log, _ = collections
    tests = _tests(log)
    assert select_test(tests, selection) is next(t for t in tests if t.test == chosen)


def test_a_folder_or_the_repository_selects_the_first_failing_test_of_the_summary(
    collections: tuple[Path, str, str],
) -> None:
    _, log, _ = collections
    tests = _tests(log)
    first = tests[0]
    assert first.test == summary_order(log)[0]
    for selection in ("tests", "tests/", ".", "./"):
        assert select_test(tests, selection) is first
    # Under a file: that file's failing tests only, never a sibling whose name it begins.
    assert [t.test for t in failing_tests_under(tests, "tests/test_a.py")] == ["tests/test_a.py::test_bad"]
    assert len(failing_tests_under(tests, "tests")) == 3


@pytest.mark.parametrize(
    "selection",
    ["tests/test_a.py::test_ok", "tests/test_a.py::TestCase", "tests/nope", "tests/sub/test_c.py::TestOther"],
)
def test_a_collection_with_no_failing_test_under_it_is_unknown(
    collections: tuple[Path, str, str], selection: str
) -> None:
    _, log, _ = collections
    with pytest.raises(UnknownTestError) as info:
        select_test(_tests(log), selection)
    assert str(info.value).startswith(f"no failing test {selection!r} in the log (failing tests: ")


def test_a_file_selects_from_a_junit_report_alone(collections: tuple[Path, str, str]) -> None:
    _, _, junit = collections
    tests = failing_tests(parse_test_output(junit))
    chosen = select_test(tests, "tests/sub/test_c.py")
    assert chosen is not None and chosen.failure.name is not None
    assert chosen.failure.name.endswith("test_m")


def test_the_api_and_the_command_line_take_a_file_or_folder(
    collections: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, log, _ = collections
    result = Workspace(root, cache=False).context(log, test="tests/sub/")
    assert result.failure is not None and result.failure.test_id == "tests/sub/test_c.py::TestCase::test_m"
    (root.parent / "c.log").write_text(log, encoding="utf-8")
    args = ["context", "--repo", str(root), "--pytest-log", str(root.parent / "c.log"), "--no-cache"]
    assert main([*args, "--test", "tests/test_ab.py", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["failure"]["test_id"] == "tests/test_ab.py::test_other"
