"""The re-run of failing Go and Node tests under their toolchain's own coverage (real runs of
``go test`` and ``node --test`` on the small projects of ``tests/data/langs/repos``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import bugcontext
import pytest
from bugcontext.core.limits import DEFAULT_LIMITS
from bugcontext.integrations.cli import main
from bugcontext.job.sources.reruns import rerun_for_log
from bugcontext.job.sources.runs import failing_tests, parse_test_output
from bugcontext.job.sources.toolchain_rerun import toolchain_tests

DATA = Path(__file__).parent / "data" / "langs"
LOGS = DATA / "logs"
GO_LOG = (LOGS / "go-plain.log").read_text(encoding="utf-8")
NODE_LOG = (LOGS / "node-spec.log").read_text(encoding="utf-8")


def _needs(tool: str) -> None:
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} is not installed: the {tool} re-run cannot be tried here")
    if tool == "node":
        # The lcov test reporter came with node 20.11 (and 21.x): an older node cannot report.
        shown = subprocess.run([found, "--version"], capture_output=True, text=True, check=False).stdout
        version = tuple(int(part) for part in shown.strip().lstrip("v").split(".")[:2] if part.isdigit())
        if version < (20, 11):
            pytest.skip(f"node {shown.strip()} has no lcov test reporter (node 20.11 or later has)")


def _copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(DATA / "repos" / name, root)
    return root


def _lines(text: str, start: str, end: str) -> set[int]:
    """The 1-based lines of ``text`` from the first holding ``start`` to the next holding ``end``."""
    rows = text.splitlines()
    first = next(i for i, row in enumerate(rows) if start in row)
    last = next(i for i in range(first, len(rows)) if end in rows[i])
    return set(range(first + 1, last + 2))


def _coverage_windows(result: object, path: str) -> list[object]:
    candidates = result.gathered.candidates  # type: ignore[attr-defined]
    return [c for c in candidates if c.path == path and str(c.source).startswith("coverage:")]


@pytest.mark.parametrize(
    ("log_name", "kind"),
    [
        ("go-plain.log", "go"),
        ("go-json.log", "go"),
        ("go-junit.xml", "go"),
        ("node-spec.log", "node"),
        ("node-tap.log", "node"),
        ("node-junit.xml", "node"),
        ("jest.log", None),
        ("vitest.log", None),
        ("cargo-test.log", None),
    ],
)
def test_which_toolchain_reruns_a_log(log_name: str, kind: str | None) -> None:
    text = (LOGS / log_name).read_text(encoding="utf-8")
    if log_name.endswith(".xml"):
        found = failing_tests(parse_test_output("", junit_xml=text), [])
    else:
        found = failing_tests(parse_test_output(text), [])
    assert found and toolchain_tests(found) == kind


# -- Go ------------------------------------------------------------------------------------


@pytest.fixture
def go_repo(tmp_path: Path) -> Path:
    _needs("go")
    return _copy("go", tmp_path)


def test_go_tests_rerun_under_a_cover_profile_one_run_per_test(go_repo: Path) -> None:
    source = (go_repo / "calc" / "calc.go").read_text(encoding="utf-8")
    add = _lines(source, "func Add", "}")
    record, report = rerun_for_log(go_repo, GO_LOG)
    assert report.python == shutil.which("go")
    # A subtest runs with its parent; each test under its own `-run` pattern.
    assert report.tests == ("TestAdd", "TestTable", "TestAt")
    assert report.command[:7] == (
        report.python,
        "test",
        "-json",
        "-count=1",
        "-vet=off",
        "-run",
        "^(?:TestAdd)$",
    )
    assert report.command[-2:] == ("-coverprofile=FILE", "./calc")
    assert set(report.outcomes.values()) == {"failed"}
    assert record.source == "rerun" and record.per_test
    runs = {run.test: run for run in record.runs}
    # TestAt panics: the test binary ends before it writes the profile (no run), and says so.
    assert set(runs) == {"example.com/shop/calc.TestAdd", "example.com/shop/calc.TestTable/case"}
    assert runs["example.com/shop/calc.TestAdd"].failed is True
    assert runs["example.com/shop/calc.TestAdd"].lines == {"calc/calc.go": frozenset(add)}
    assert report.notes == (
        "test TestAt panicked: go test ended before it wrote the cover profile, no execution "
        "evidence from it (its traceback's frames still are)",
    )
    assert record.measured == {"calc/calc.go"}


def test_go_rerun_gives_execution_evidence_through_the_context(go_repo: Path, tmp_path: Path, capsys) -> None:
    source = (go_repo / "calc" / "calc.go").read_text(encoding="utf-8")
    add = _lines(source, "func Add", "}")
    result = bugcontext.context(go_repo, GO_LOG, cache=False, rerun=True)
    assert result.rerun is not None and result.gathered.execution is not None
    windows = _coverage_windows(result, "calc/calc.go")
    assert windows and any(set(range(w.start, w.end + 1)) >= add for w in windows)
    assert "- re-run (failing): 3 test ids, exit 1" in result.summary()

    log_file = tmp_path / "go.log"
    log_file.write_text(GO_LOG, encoding="utf-8")
    argv = [
        "context",
        "--repo",
        str(go_repo),
        "--log",
        str(log_file),
        "--no-cache",
        "--rerun",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rerun"]["outcomes"]["example.com/shop/calc.TestAdd"] == "failed"


def test_go_test_that_no_longer_fails_is_noted(go_repo: Path) -> None:
    calc = go_repo / "calc" / "calc.go"
    calc.write_text(calc.read_text(encoding="utf-8").replace("a - b", "a + b"), encoding="utf-8")
    record, report = rerun_for_log(go_repo, GO_LOG, test="example.com/shop/calc.TestAdd")
    assert report.outcomes == {"example.com/shop/calc.TestAdd": "passed"}
    assert report.notes == ("test TestAdd no longer fails (passed)",)
    assert [run.failed for run in record.runs] == [False]


def test_go_package_that_does_not_build_is_noted_and_files_mode_says_what_it_ran(go_repo: Path) -> None:
    calc = go_repo / "calc" / "calc.go"
    calc.write_text(calc.read_text(encoding="utf-8").replace("return a - b", "return a -"), encoding="utf-8")
    record, report = rerun_for_log(go_repo, GO_LOG, test="example.com/shop/calc.TestAdd", mode="files")
    assert report.returncode not in (None, 0)
    assert report.outcomes == {"example.com/shop/calc.TestAdd": "not run"}
    assert report.notes == (
        "--rerun=files is for pytest: only the failing go tests were re-run",
        f"test TestAdd was not run (go test ended with status {report.returncode})",
        "go test -run TestAdd executed no line: no execution evidence from it",
    )
    assert record.runs == ()


def test_go_missing_from_path_is_a_note(go_repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    record, report = rerun_for_log(go_repo, GO_LOG, env={"PATH": str(empty)})
    assert record.runs == () and report.command == ()
    assert report.notes == ("go is not on PATH: the failing tests were not re-run, no execution evidence",)


@pytest.mark.parametrize("name", ["TestAdd|.*", "TestAdd$(touch${IFS}x)", "-test.run=x", "TestA\\dd"])
def test_go_names_a_test_cannot_have_are_refused(go_repo: Path, name: str) -> None:
    log = f"--- FAIL: {name} (0.00s)\n    calc_test.go:7: boom\nFAIL\texample.com/shop/calc\t0.005s\nFAIL\n"
    record, report = rerun_for_log(go_repo, log)
    assert record.runs == () and report.command == ()
    assert report.notes[0].endswith(
        "left out: not a Go test name (an identifier starting with Test, Example or Fuzz)"
    )
    assert report.notes[-1] == "no failing Go test to re-run"
    assert not (go_repo / "calc" / "x").exists()


def test_a_go_package_outside_the_module_is_refused(go_repo: Path) -> None:
    log = "--- FAIL: TestAdd (0.00s)\n    x_test.go:7: boom\nFAIL\texample.com/other/calc\t0.005s\nFAIL\n"
    _, report = rerun_for_log(go_repo, log)
    assert report.command == ()
    assert report.notes[0] == (
        "test example.com/other/calc.TestAdd left out: its package is not a folder of a Go module "
        "(go.mod) of the repository"
    )


def test_a_go_run_past_its_time_limit_is_killed_and_noted(go_repo: Path) -> None:
    (go_repo / "calc" / "slow_test.go").write_text(
        'package calc\n\nimport (\n\t"testing"\n\t"time"\n)\n\n'
        "func TestSlow(t *testing.T) {\n\ttime.Sleep(60 * time.Second)\n}\n",
        encoding="utf-8",
    )
    log = (
        "--- FAIL: TestSlow (60.00s)\n    slow_test.go:9: slow\nFAIL\texample.com/shop/calc\t60.005s\nFAIL\n"
    )
    limits = DEFAULT_LIMITS.replace(rerun_seconds=3)
    record, report = rerun_for_log(go_repo, log, limits=limits)
    assert report.timed_out and report.returncode is None
    assert record.runs == ()
    assert report.notes == (
        "the run took more than 3 seconds, over the limit rerun_seconds = 3 seconds and was killed: "
        "no execution evidence from it",
    )


# -- Node ----------------------------------------------------------------------------------


@pytest.fixture
def node_repo(tmp_path: Path) -> Path:
    _needs("node")
    return _copy("node", tmp_path)


@pytest.mark.parametrize("log_name", ["node-spec.log", "node-tap.log"])
def test_node_tests_rerun_under_test_coverage(node_repo: Path, log_name: str) -> None:
    source = (node_repo / "src" / "calc.js").read_text(encoding="utf-8")
    divide = next(i for i, row in enumerate(source.splitlines(), 1) if "function divide" in row)
    record, report = rerun_for_log(node_repo, (LOGS / log_name).read_text(encoding="utf-8"))
    assert report.python == shutil.which("node")
    assert report.tests == ("adds two numbers", "divides by zero", "halves")
    assert "--test-name-pattern=^(?:adds two numbers|divides by zero|halves)$" in report.command
    assert report.command[-3:] == ("--", "test/calc.test.js", "test/suite.test.js")
    assert set(report.outcomes.values()) == {"failed"} and report.notes == ()
    assert record.source == "rerun" and not record.per_test
    (run,) = record.runs
    throw = next(i for i, row in enumerate(source.splitlines(), 1) if "throw new RangeError" in row)
    assert throw in run.lines["src/calc.js"] and divide in run.lines["src/calc.js"]
    assert {"src/calc.js", "test/calc.test.js", "test/suite.test.js"} <= record.measured


def test_node_rerun_gives_execution_evidence_through_the_context(node_repo: Path) -> None:
    result = bugcontext.context(node_repo, NODE_LOG, cache=False, rerun=True)
    assert result.rerun is not None and result.rerun.notes == ()
    assert _coverage_windows(result, "src/calc.js")


def test_node_title_is_escaped_and_a_title_with_a_control_character_refused(node_repo: Path) -> None:
    (node_repo / "test" / "odd.test.js").write_text(
        "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { add } = require('../src/calc.js');\n\n"
        "test('a+b (x|y) [1]', () => {\n  assert.strictEqual(add(1, 1), 2);\n});\n\n"
        "test('other', () => {\n  assert.strictEqual(add(1, 1), 2);\n});\n",
        encoding="utf-8",
    )
    log = (
        "\u2716 failing tests:\n\n"
        "test at test/odd.test.js:6:1\n"
        "\u2716 a+b (x|y) [1] (1.0ms)\n  AssertionError [ERR_ASSERTION]: boom\n"
        "      at TestContext.<anonymous> (test/odd.test.js:7:10)\n\n"
        "test at test/odd.test.js:10:1\n"
        "\u2716 bad\x07title (1.0ms)\n  AssertionError [ERR_ASSERTION]: boom\n"
        "      at TestContext.<anonymous> (test/odd.test.js:11:10)\n"
    )
    _, report = rerun_for_log(node_repo, log)
    # The log reader drops control characters (a bell is no text): the second title reaches
    # the runner as "badtitle", escaped like the first, and names no test of the file.
    assert "--test-name-pattern=^(?:a\\+b \\(x\\|y\\) \\[1\\]|badtitle)$" in report.command
    assert report.outcomes == {
        "test/odd.test.js > a+b (x|y) [1]": "failed",
        "test/odd.test.js > badtitle": "not run",
    }
    # A name that still holds one (from a report not read as terminal text) is refused.
    from bugcontext.job.sources.toolchain_rerun import _refused_name

    assert _refused_name("bad\x07title", "node") == "a test name holding a control character"
    assert _refused_name("bad\ntitle", "node") == "a test name holding a control character"


def test_a_node_test_file_outside_the_repository_is_refused(node_repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.test.js"
    outside.write_text("require('node:test')('x', () => { throw new Error('x'); });\n", encoding="utf-8")
    (node_repo / "test" / "link.test.js").symlink_to(outside)
    log = (
        "\u2716 failing tests:\n\ntest at test/link.test.js:1:1\n\u2716 x (1.0ms)\n  Error: x\n"
        "      at TestContext.<anonymous> (test/link.test.js:1:40)\n"
    )
    _, report = rerun_for_log(node_repo, log)
    assert report.command == ()
    assert report.notes == (
        "test test/link.test.js > x left out: its test file is not a JavaScript file of the "
        "repository that uses node:test",
        "no failing node test to re-run",
    )


def test_node_test_that_no_longer_fails_is_noted(node_repo: Path) -> None:
    calc = node_repo / "src" / "calc.js"
    calc.write_text(calc.read_text(encoding="utf-8").replace("a - b", "a + b"), encoding="utf-8")
    record, report = rerun_for_log(node_repo, NODE_LOG, test="test/calc.test.js > adds two numbers")
    assert report.outcomes == {"test/calc.test.js > adds two numbers": "passed"}
    assert report.notes == ("test test/calc.test.js > adds two numbers no longer fails (passed)",)
    assert record.runs and "src/calc.js" in record.runs[0].lines


def test_node_missing_from_path_is_a_note(node_repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    record, report = rerun_for_log(node_repo, NODE_LOG, env={"PATH": str(empty)})
    assert record.runs == () and report.command == ()
    assert report.notes == ("node is not on PATH: the failing tests were not re-run, no execution evidence",)


def test_a_node_run_past_its_time_limit_is_killed_and_noted(node_repo: Path) -> None:
    (node_repo / "test" / "hang.test.js").write_text(
        "'use strict';\nconst test = require('node:test');\n\n"
        "test('hangs', async () => {\n  await new Promise((resolve) => setTimeout(resolve, 60000));\n});\n",
        encoding="utf-8",
    )
    log = (
        "\u2716 failing tests:\n\ntest at test/hang.test.js:4:1\n\u2716 hangs (60000.0ms)\n"
        "  Error: timed out\n      at TestContext.<anonymous> (test/hang.test.js:5:3)\n"
    )
    record, report = rerun_for_log(node_repo, log, limits=DEFAULT_LIMITS.replace(rerun_seconds=3))
    assert report.timed_out and report.returncode is None
    assert record.runs == ()
    assert report.notes == (
        "the run took more than 3 seconds, over the limit rerun_seconds = 3 seconds and was killed: "
        "no execution evidence from it",
    )


def test_the_mcp_server_reruns_go_tests_without_an_interpreter(go_repo: Path) -> None:
    pytest.importorskip("mcp")
    import anyio
    from bugcontext.integrations.mcp_server import create_server
    from mcp import Client

    async def call(server: object) -> object:
        async with Client(server) as client:  # type: ignore[arg-type]
            return await client.call_tool(
                "context_for_failure", {"repository": str(go_repo), "test_log": GO_LOG, "rerun": True}
            )

    # No Python interpreter is needed (the repository has none, the server was given none).
    done = anyio.run(lambda: call(create_server(cache=False, roots=[go_repo], allow_run=True)))
    assert not done.is_error  # type: ignore[attr-defined]
    found = done.structured_content["result"]["rerun"]  # type: ignore[attr-defined]
    # The toolchain is named, not shown with its path on the server's machine.
    assert found["python"] == "go" and found["command"][:2] == ["go", "test"]
    assert found["outcomes"]["example.com/shop/calc.TestAdd"] == "failed"
