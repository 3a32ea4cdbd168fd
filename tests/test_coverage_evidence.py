"""Coverage reports as execution evidence, on real reports made by coverage.py's own writers.

A tiny repository with a one-line bug, a failing and a passing test, is run under coverage.py
(``dynamic_context = test_function``); its data file, JSON (with and without contexts), LCOV
and Cobertura reports are then read back.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("coverage")

import bugcontext
from bugcontext import InvalidInputError, Limits, ResourceLimitError
from bugcontext.integrations.cli import main
from bugcontext.job.sources import gather
from bugcontext.job.sources.coverage import detect_format, read_coverage, read_coverage_file
from bugcontext.job.sources.execution import (
    EXECUTED_SOURCE,
    NOT_EXECUTED_SOURCE,
    ExecutionRecord,
    TestRun,
    context_test_id,
    run_outcomes,
)
from bugcontext.job.sources.files import Repository

# `scale` is shared by both tests; the bug sits in the branch of `discount` that only the
# failing test reaches, and the failing assertion sits in the test body (no traceback frame
# in the code under test). `legacy_total` is called from the failing test, but never runs.
SHOP = """\
def scale(value, factor):
    result = value * factor
    return result


def discount(total):
    if total > 100:
        return total - total // 5 * 2
    return total


def total(prices):
    summed = 0
    for price in prices:
        summed += scale(price, 1)
    return discount(summed)


def legacy_total(prices):
    out = 0
    for price in prices:
        out = out + price
    return out


def unused():
    return 42
"""

# Imported by the tests, never called: its lines ran at import only.
EXTRA = """\
LIMIT = 3


def never():
    return LIMIT
"""

TESTS = """\
import os

import extra
from shop import legacy_total, total


def test_small():
    assert total([10, 20]) == 30


def test_big():
    if os.environ.get("SHOP_LEGACY"):
        legacy_total([100, 50])
    assert total([100, 50]) == 120
"""

FAILING = "tests/test_shop.py::test_big"


def _cov(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coverage", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "COVERAGE_FILE": str(repo / ".coverage")},
        check=False,
        timeout=300,
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The repository, the test log, and the reports of one coverage.py run."""
    repo = tmp_path_factory.mktemp("cov") / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "shop.py").write_text(SHOP, encoding="utf-8")
    (repo / "extra.py").write_text(EXTRA, encoding="utf-8")
    (repo / "tests" / "test_shop.py").write_text(TESTS, encoding="utf-8")
    (repo / ".coveragerc").write_text(
        "[run]\nsource = .\ndynamic_context = test_function\n", encoding="utf-8"
    )
    run = _cov(repo, "run", "-m", "pytest", "-rA", "-p", "no:randomly", "-p", "no:cacheprovider", "tests")
    assert "1 failed, 1 passed" in run.stdout, run.stdout + run.stderr
    (repo / "failing.log").write_text(run.stdout, encoding="utf-8")
    for args in (
        ("json", "--show-contexts", "-o", "contexts.json"),
        ("json", "-o", "plain.json"),
        ("lcov", "-o", "lcov.info"),
        ("xml", "-o", "cobertura.xml"),
    ):
        done = _cov(repo, *args)
        assert done.returncode == 0, done.stderr
    reports = {
        "coverage-data": repo / ".coverage",
        "coverage-json": repo / "contexts.json",
        "plain-json": repo / "plain.json",
        "lcov": repo / "lcov.info",
        "cobertura": repo / "cobertura.xml",
    }
    executed = json.loads((repo / "plain.json").read_text(encoding="utf-8"))["files"]
    return {"repo": repo, "log": run.stdout, "reports": reports, "executed": executed}


def _lines_of(source: str, *needles: str) -> list[int]:
    lines = source.splitlines()
    return [i for i, text in enumerate(lines, 1) if any(n in text for n in needles)]


def _span(name: str) -> tuple[int, int]:
    """The lines of the function ``name`` of ``SHOP``."""
    lines = SHOP.splitlines()
    start = next(i for i, text in enumerate(lines, 1) if text.startswith(f"def {name}("))
    end = start
    while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return start, end


def test_every_format_gives_the_lines_coverage_py_executed(made: dict[str, Any]) -> None:
    repo = Repository(made["repo"])
    expected = {path: set(entry["executed_lines"]) for path, entry in made["executed"].items()}
    for kind, path in made["reports"].items():
        record = read_coverage_file(path, repo)
        assert record.source == ("coverage-json" if kind == "plain-json" else kind)
        for rel, lines in expected.items():
            assert set(record.executed(rel)) == lines, (kind, rel)
        assert record.per_test == (kind in ("coverage-data", "coverage-json")), kind
        assert record.unmapped == ()
    # The buggy branch ran; the function no test called did not.
    assert _lines_of(SHOP, "return total - total")[0] in expected["shop.py"]
    assert _span("unused")[1] not in expected["shop.py"]


def test_the_format_is_told_by_content_not_by_name(made: dict[str, Any], tmp_path: Path) -> None:
    repo = Repository(made["repo"])
    for kind, path in made["reports"].items():
        renamed = tmp_path / f"{kind}.report"
        renamed.write_bytes(path.read_bytes())
        want = "coverage-json" if kind == "plain-json" else kind
        assert detect_format(renamed.read_bytes()) == want
        assert read_coverage_file(renamed, repo).source == want
        assert read_coverage(path.read_bytes(), repo).source == want
    # A JSON report named like LCOV is still JSON.
    lying = tmp_path / "lcov.info"
    lying.write_bytes(made["reports"]["coverage-json"].read_bytes())
    assert read_coverage_file(lying, repo).source == "coverage-json"


def test_per_test_contexts_name_the_failing_and_passing_tests(made: dict[str, Any]) -> None:
    repo = Repository(made["repo"])
    gathered = gather(made["repo"], made["log"])
    assert [t.test for t in gathered.failing_tests] == [FAILING]
    for kind in ("coverage-data", "coverage-json"):
        record = read_coverage_file(made["reports"][kind], repo)
        outcomes = dict(
            zip((r.test for r in record.runs), run_outcomes(record, gathered.failing_tests), strict=True)
        )
        assert outcomes == {None: None, "test_shop.test_big": True, "test_shop.test_small": False}, kind
    assert context_test_id("tests/test_shop.py::test_big[1]|run") == "tests/test_shop.py::test_big[1]"
    assert context_test_id("test_shop.TestC.test_x") == "test_shop.TestC.test_x"
    assert context_test_id("") is None


def _coverage_windows(gathered: Any) -> list[Any]:
    return [w for w in gathered.candidates if w.source is not None and w.source.startswith("coverage:")]


def test_the_buggy_function_is_proposed_and_ranked_first_by_ochiai(made: dict[str, Any]) -> None:
    without = gather(made["repo"], made["log"])
    bug = _span("discount")
    assert not any(
        w.path == "shop.py" and (w.start, w.end) == bug and w.reason == "failure" for w in without.candidates
    )
    for kind in ("coverage-data", "coverage-json"):
        found = gather(made["repo"], made["log"], coverage=made["reports"][kind])
        executed = _coverage_windows(found)
        assert executed, kind
        assert (executed[0].path, executed[0].start, executed[0].end) == ("shop.py", *bug), kind
        assert executed[0].reason == "failure" and executed[0].source == EXECUTED_SOURCE
        # Ochiai: the buggy branch ran in the failing test alone (1.0); `scale` in both (1/sqrt 2).
        scale = next(w for w in executed if (w.start, w.end) == _span("scale"))
        assert executed[0].score > scale.score
        assert not any((w.start, w.end) == _span("unused") for w in executed)
        # On the sources' one scale: in the failure tier, below the deepest frame's window.
        tier_top = max(w.score for w in found.candidates if w.source == "failure")
        assert all(tier_top - 1 < w.score <= tier_top for w in executed)


def test_without_contexts_the_executed_code_is_still_proposed(made: dict[str, Any]) -> None:
    for kind in ("plain-json", "lcov", "cobertura"):
        found = gather(made["repo"], made["log"], coverage=made["reports"][kind])
        spans = {(w.path, w.start, w.end) for w in _coverage_windows(found)}
        assert ("shop.py", *_span("discount")) in spans, kind
        assert ("shop.py", *_span("unused")) not in spans, kind
        # A file whose executed lines all ran at import (a constant, a def line) gives none.
        assert not any(path == "extra.py" for path, _, _ in spans), kind
    record = read_coverage_file(made["reports"]["lcov"], Repository(made["repo"]))
    assert set(record.executed("extra.py")) == {1, 4}


def test_a_reference_the_failing_test_never_ran_scores_below_executed_code(made: dict[str, Any]) -> None:
    legacy = ("shop.py", *_span("legacy_total"))
    without = gather(made["repo"], made["log"])
    before = [w for w in without.candidates if (w.path, w.start, w.end) == legacy]
    assert before and before[0].reason == "reference"
    result = bugcontext.Workspace(made["repo"], cache=False).context(
        made["log"], coverage=made["reports"]["coverage-json"], budget=100_000
    )
    gathered = result.gathered
    same = [w for w in gathered.candidates if (w.path, w.start, w.end) == legacy]
    assert not any(w.reason == "reference" for w in same)
    moved = [w for w in same if w.source == NOT_EXECUTED_SOURCE]
    assert len(moved) == 1 and moved[0].reason == "search"
    assert moved[0].score < min(w.score for w in gathered.candidates if w.source == "search")
    order = [(i.path, i.start, i.end) for i in result.result.items]
    assert order.index(("shop.py", *_span("discount"))) < order.index(legacy)


def _foreign(path: str) -> str:
    return "/home/ci/work/shop-build/" + path


def test_a_report_made_elsewhere_is_mapped_by_path_tail(made: dict[str, Any], tmp_path: Path) -> None:
    repo = Repository(made["repo"])
    root = str(made["repo"])
    expected = {path: set(entry["executed_lines"]) for path, entry in made["executed"].items()}
    report = json.loads(made["reports"]["coverage-json"].read_text(encoding="utf-8"))
    report["files"] = {_foreign(p): v for p, v in report["files"].items()}
    report["files"]["/usr/lib/python3.11/site-packages/six.py"] = {
        "executed_lines": [1],
        "contexts": {"1": [""]},
    }
    lcov = made["reports"]["lcov"].read_text(encoding="utf-8").replace("SF:", "SF:" + _foreign(""))
    xml = made["reports"]["cobertura"].read_text(encoding="utf-8").replace(root, "/home/ci/work/shop-build")
    assert "/home/ci/work/shop-build" in xml
    from coverage import CoverageData

    original = CoverageData(basename=str(made["reports"]["coverage-data"]))
    original.read()
    copy = CoverageData(basename=str(tmp_path / "elsewhere.coverage"))
    for context in sorted(original.measured_contexts()):
        original.set_query_contexts([context])
        copy.set_context(context)
        copy.add_lines(
            {
                _foreign(os.path.relpath(f, root).replace(os.sep, "/")): original.lines(f) or []
                for f in original.measured_files()
            }
        )
    copy.write()
    for kind, data in (
        ("coverage-json", json.dumps(report).encode()),
        ("lcov", lcov.encode()),
        ("cobertura", xml.encode()),
        ("coverage-data", (tmp_path / "elsewhere.coverage").read_bytes()),
    ):
        record = read_coverage(data, repo)
        assert record.source == kind
        for rel, lines in expected.items():
            assert set(record.executed(rel)) == lines, (kind, rel)
    assert read_coverage(json.dumps(report).encode(), repo).unmapped == (
        "/usr/lib/python3.11/site-packages/six.py",
    )


def test_hostile_reports_are_clear_typed_errors(made: dict[str, Any], tmp_path: Path) -> None:
    repo = Repository(made["repo"])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    for path in (fifo, folder, Path("/dev/null")):
        with pytest.raises(InvalidInputError, match="not a regular file") as caught:
            read_coverage_file(path, repo)
        assert caught.value.field == "coverage"
    with pytest.raises(ResourceLimitError) as limited:
        read_coverage_file(made["reports"]["lcov"], repo, Limits(max_coverage_bytes=10))
    assert (limited.value.field, limited.value.limit, limited.value.maximum) == (
        "coverage",
        "max_coverage_bytes",
        10,
    )
    with pytest.raises(ResourceLimitError):
        read_coverage(b"SF:a.py\n" * 10, repo, limits=Limits(max_coverage_bytes=10))
    not_coverage = tmp_path / "other.db"
    with sqlite3.connect(not_coverage) as db:
        db.execute("create table t (x int)")
    truncated = made["reports"]["coverage-data"].read_bytes()[:200]
    bad = {
        b"\x00\x01garbage": "unknown format",
        b"hello world\n": "unknown format",
        b"": "unknown format",
        not_coverage.read_bytes(): "damaged coverage.py data",
        truncated: "damaged coverage.py data",
        b'{"files": 3}': "damaged coverage.py JSON",
        b'{"files": {"a.py": {"executed_lines": ["x"]}}}': "damaged coverage.py JSON",
        b"{not json": "damaged coverage.py JSON",
        b"<coverage><packages><class/></packages></coverage>": "damaged Cobertura",
        b"<html></html>": "damaged Cobertura",
        b'<!DOCTYPE x [<!ENTITY a "b">]><coverage>&a;</coverage>': "damaged Cobertura",
        b"SF:a.py\nDA:x,1\nend_of_record\n": "damaged LCOV",
        b"SF:a.py\nDA:3\n": "damaged LCOV",
    }
    for data, message in bad.items():
        with pytest.raises(InvalidInputError, match=message) as caught:
            read_coverage(data, repo)
        assert caught.value.field == "coverage"
        assert str(tmp_path) not in str(caught.value)
    with pytest.raises(InvalidInputError, match="must be bytes"):
        read_coverage(3, repo)  # type: ignore[arg-type]


def test_a_tracer_can_hand_in_its_own_record(made: dict[str, Any]) -> None:
    # The record is the seam a traced re-run fills in: runs that know their own outcome.
    bug = _span("discount")
    record = ExecutionRecord(
        "rerun",
        (
            TestRun("anything-failing", {"shop.py": frozenset(range(bug[0], bug[1] + 1))}, failed=True),
            TestRun("anything-passing", {"shop.py": frozenset({bug[0] + 1, bug[1]})}, failed=False),
        ),
        per_test=True,
    )
    found = gather(made["repo"], made["log"], coverage=record)
    assert [(w.path, w.start, w.end) for w in _coverage_windows(found)] == [("shop.py", *bug)]


def test_the_command_line_and_the_api_take_a_report(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, log = made["repo"], made["repo"] / "failing.log"
    report = made["reports"]["coverage-data"]
    args = ["context", "--repo", str(repo), "--pytest-log", str(log), "--format", "json", "--no-cache"]
    assert main([*args, "--coverage", str(report)]) == 0
    printed = json.loads(capsys.readouterr().out)
    api = bugcontext.context(repo, made["log"], coverage=report, cache=False)
    assert printed["items"] == api.to_dict()["items"]
    assert any(c.source == EXECUTED_SOURCE for c in api.gathered.candidates)
    spans = [(item["path"], item["start"], item["end"]) for item in printed["items"]]
    assert spans.index(("shop.py", *_span("discount"))) < spans.index(("shop.py", *_span("legacy_total")))
    assert main(args) == 0
    spans = [(i["path"], i["start"], i["end"]) for i in json.loads(capsys.readouterr().out)["items"]]
    assert spans.index(("shop.py", *_span("discount"))) > spans.index(("shop.py", *_span("legacy_total")))
    assert main([*args, "--coverage", str(repo / "shop.py")]) == 2
    assert "bugcontext context: --coverage: " in capsys.readouterr().err
    assert main([*args, "--coverage", str(repo / "missing")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_the_mcp_tool_reads_a_confined_coverage_file(made: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from bugcontext.integrations.mcp_server import create_server
    from test_mcp_server import _calls, _context, _error

    repo = made["repo"]
    outside = tmp_path / "outside.json"
    outside.write_bytes(made["reports"]["coverage-json"].read_bytes())
    fifo = repo / "cov.fifo"
    os.mkfifo(fifo)
    try:
        server = create_server(cache=False, roots=[repo])
        ok, out, pipe, limited = _calls(
            server,
            _context(repo, test_log=made["log"], coverage_file=str(made["reports"]["coverage-json"])),
            _context(repo, test_log=made["log"], coverage_file=str(outside)),
            _context(repo, test_log=made["log"], coverage_file=str(fifo)),
            _context(repo, test_log=made["log"], coverage_file=str(made["reports"]["lcov"]), budget=10**9),
        )
    finally:
        fifo.unlink()
    assert not ok.is_error
    expected = bugcontext.Workspace(repo, cache=False).context(
        made["log"], coverage=made["reports"]["coverage-json"].read_bytes()
    )
    assert ok.structured_content["result"]["items"] == expected.to_dict()["items"]
    assert any(c.source == EXECUTED_SOURCE for c in expected.gathered.candidates)
    assert "coverage_file" in _error(out) and "outside" in _error(out)
    assert "not a regular file" in _error(pipe)
    assert not limited.is_error
    small = create_server(cache=False, roots=[repo], limits=Limits(max_coverage_bytes=10))
    (over,) = _calls(small, _context(repo, test_log=made["log"], coverage_file=str(made["reports"]["lcov"])))
    assert "max_coverage_bytes" in _error(over)


def test_pytest_cov_contexts_map_to_node_ids(made: dict[str, Any], tmp_path: Path) -> None:
    # pytest-cov's --cov-context=test names contexts `node id|phase`: rewritten with coverage.py's
    # own writer from the real run's data.
    from coverage import CoverageData

    original = CoverageData(basename=str(made["reports"]["coverage-data"]))
    original.read()
    renamed = {
        "test_shop.test_big": FAILING + "|run",
        "test_shop.test_small": "tests/test_shop.py::test_small|run",
    }
    copy = CoverageData(basename=str(tmp_path / "pytest-cov.coverage"))
    for context in sorted(original.measured_contexts()):
        original.set_query_contexts([context])
        copy.set_context(renamed.get(context, context))
        copy.add_lines({f: original.lines(f) or [] for f in original.measured_files()})
    copy.write()
    record = read_coverage_file(tmp_path / "pytest-cov.coverage", Repository(made["repo"]))
    failing = gather(made["repo"], made["log"]).failing_tests
    outcomes = dict(zip((r.test for r in record.runs), run_outcomes(record, failing), strict=True))
    assert outcomes == {None: None, FAILING: True, "tests/test_shop.py::test_small": False}
    found = gather(made["repo"], made["log"], coverage=tmp_path / "pytest-cov.coverage")
    first = _coverage_windows(found)[0]
    assert (first.path, first.start, first.end) == ("shop.py", *_span("discount"))


def test_a_long_executed_function_is_cut_with_a_reference_to_its_whole(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(40))
    (tmp_path / "long.py").write_text(f"def long():\n{body}    return x39\n", encoding="utf-8")
    (tmp_path / "test_long.py").write_text(
        "from long import long\n\n\ndef test_long():\n    assert long() == 0\n", encoding="utf-8"
    )
    log = (
        "=================================== FAILURES ===================================\n"
        "__________________________________ test_long ___________________________________\n\n"
        "    def test_long():\n>       assert long() == 0\nE       assert 39 == 0\n\n"
        "test_long.py:5: AssertionError\n"
        "=========================== short test summary info ============================\n"
        "FAILED test_long.py::test_long - assert 39 == 0\n"
    )
    record = ExecutionRecord(
        "rerun",
        (
            TestRun("test_long.py::test_long", {"long.py": frozenset(range(2, 43))}, failed=True),
            TestRun("test_other", {"long.py": frozenset(range(2, 30))}, failed=False),
        ),
        per_test=True,
    )
    windows = _coverage_windows(gather(tmp_path, log, coverage=record))
    assert [(w.start, w.end) for w in windows][:1] == [(1, 42)]
    parts = [w for w in windows if w.source == f"{EXECUTED_SOURCE} (part of lines 1-42)"]
    assert len(parts) == 1 and 1 <= parts[0].start and parts[0].end <= 42
    assert parts[0].end - parts[0].start + 1 <= 21 and parts[0].start <= 30 <= parts[0].end
