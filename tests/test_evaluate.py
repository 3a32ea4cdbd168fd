"""``bugcontext eval``: metrics, strategies and the report, on a tiny hand-made case.

The case is a small package with a genuine failing pytest run (made in a temporary folder and
marked prepared, so nothing is downloaded).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from bugcontext import TokenCounter
from bugcontext.core.composer import render_block
from bugcontext.evaluation.command import add_eval_parser, main
from bugcontext.evaluation.evaluate import (
    DEFAULT_CASES,
    STRATEGIES,
    Evaluation,
    Selection,
    evaluate,
    evaluate_candidates,
    measure,
    select,
)
from bugcontext.evaluation.realbugs import GoldRange, gold_ranges, load_cases, select_cases
from bugcontext.evaluation.report import coverage_chart, markdown_report
from bugcontext.job.sources import Repository

CORE = textwrap.dedent(
    '''\
    """Tiny arithmetic."""


    def mean(values):
        total = 0
        for value in values:
            total += value
        return total / (len(values) - 1)


    def spread(values):
        return max(values) - min(values)
    '''
)
TEST = textwrap.dedent(
    """\
    from calc.core import mean


    def test_mean():
        assert mean([1, 2, 3]) == 2
    """
)
GOLD = [{"path": "calc/core.py", "start": 8, "end": 8}]


def make_case(work: Path, case_id: str = "tiny_mean") -> dict[str, Any]:
    """A prepared case under ``work``: the repository, a real failing pytest log, the marker."""
    folder = work / case_id
    repo = folder / "repo"
    (repo / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "calc" / "__init__.py").write_text("")
    (repo / "calc" / "core.py").write_text(CORE)
    (repo / "tests" / "test_core.py").write_text(TEST)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=long", "tests/test_core.py"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(repo), "PATH": ""},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (folder / "failing.log").write_text(proc.stdout)
    (folder / "prepared.json").write_text(json.dumps({"case": case_id, "pytest_exit": 1}))
    return {"id": case_id, "python": "3.11", "gold": GOLD}


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("work")
    make_case(work)
    return work


def w(path: str, start: int, end: int) -> Any:
    return argparse.Namespace(path=path, start=start, end=end)


# --- metrics, computed exactly -------------------------------------------------------------


def test_metrics_of_a_hand_made_selection() -> None:
    gold = [GoldRange("calc/core.py", 3, 6), GoldRange("calc/util.py", 1, 2)]
    selection = Selection(
        (w("calc/core.py", 1, 4), w("./calc/core.py", 4, 8), w("tests/t.py", 1, 3)), 123, 0.5
    )
    run = measure("c", "naive", 2000, selection, gold, "calc/core.py")
    assert run.failure_file_in_context
    assert (run.gold_files, run.gold_files_found, run.file_recall) == (2, 1, 0.5)
    # Gold lines: core 3-6 and util 1-2; core 3-6 are inside windows.
    assert (run.gold_lines, run.covered_lines) == (6, 4)
    assert run.coverage == pytest.approx(4 / 6)
    assert (run.gold_hunks, run.hunks_in_context) == (2, 1)
    # Lines sent 4 + 5 + 3 = 12; line 4 of core.py is in two windows; 11 distinct lines.
    assert (run.lines_sent, run.distinct_lines, run.duplicate_lines) == (12, 11, 1)
    assert run.duplicate_ratio == 1 / 12
    assert (run.windows, run.tokens, run.seconds) == (3, 123, 0.5)


def test_metrics_edge_cases() -> None:
    gold = [GoldRange("a.py", 1, 3), GoldRange("a.py", 2, 4)]  # overlapping hunks: lines count once
    run = measure(
        "c", "top-k", 1, Selection((w("a.py", 3, 3), w("a.py", 1, 5), w("a.py", 2, 6)), 0, 0.0), gold, None
    )
    assert not run.failure_file_in_context
    assert (run.gold_lines, run.covered_lines, run.coverage, run.hunks_in_context) == (4, 4, 1.0, 2)
    # Lines 2-5 in two or three windows (each counted once), 1 and 6 in one: 4 of 1 + 5 + 5 = 11.
    assert (run.lines_sent, run.duplicate_lines, run.distinct_lines) == (11, 4, 6)
    empty = measure("c", "layered", 1, Selection((), 0, 0.0), gold, "a.py")
    assert (empty.coverage, empty.file_recall, empty.duplicate_ratio) == (0.0, 0.0, 0.0)
    assert not empty.failure_file_in_context


# --- strategies -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def repo(work: Path) -> Repository:
    return Repository(work / "tiny_mean" / "repo")


def candidates(repo: Repository) -> list[dict[str, Any]]:
    core = repo.source("calc/core.py")
    test = repo.source("tests/test_core.py")
    assert core is not None and test is not None

    def c(source: Any, start: int, end: int, reason: str, score: float) -> dict[str, Any]:
        content = source.text(start, end)
        return {
            "path": source.path,
            "start": start,
            "end": end,
            "content": content,
            "reason": reason,
            "score": score,
        }

    return [
        c(test, 4, 5, "failure", 3.0),
        c(core, 4, 8, "reference", 2.0),
        c(core, 6, 9, "search", 5.0),
        c(core, 11, 12, "search", 1.0),
    ]


def section_tokens(windows: tuple[Any, ...], failure_file: str | None) -> int:
    blocks = [
        render_block(
            x.path,
            x.start,
            x.end,
            x.content,
            str(x.reason),
            failing=x.path == failure_file,
            template="markdown",
            line_numbers=False,
        )
        for x in windows
    ]
    return TokenCounter("o200k_base").count_one("".join(blocks))


def test_strategies_with_room_for_everything(repo: Repository) -> None:
    cands = candidates(repo)
    ff = "tests/test_core.py"
    picked = {s: select(s, cands, 100_000, ff, repo) for s in STRATEGIES}
    spans = {s: [(x.path, x.start, x.end) for x in sel.windows] for s, sel in picked.items()}
    assert spans["naive"] == [
        ("calc/core.py", 4, 8),
        ("calc/core.py", 6, 9),
        ("calc/core.py", 11, 12),
        ("tests/test_core.py", 4, 5),
    ]
    assert spans["top-k"] == [
        ("calc/core.py", 6, 9),
        ("tests/test_core.py", 4, 5),
        ("calc/core.py", 4, 8),
        ("calc/core.py", 11, 12),
    ]
    # The builder: failure file first, then by reason; the search window 6-9 overlaps 4-8.
    assert spans["layered"] == [
        ("tests/test_core.py", 4, 5),
        ("calc/core.py", 4, 8),
        ("calc/core.py", 11, 12),
    ]
    # Merged: 4-8 and 6-9 are one reference window 4-9 (11-12 is not adjacent: line 10 between).
    assert spans["layered+merge"] == [
        ("tests/test_core.py", 4, 5),
        ("calc/core.py", 4, 9),
        ("calc/core.py", 11, 12),
    ]
    for sel in picked.values():
        assert sel.tokens == section_tokens(sel.windows, ff)
        assert sel.seconds >= 0


def test_baselines_take_while_they_fit(repo: Repository) -> None:
    cands = candidates(repo)
    ff = "tests/test_core.py"
    first = select("naive", cands, 100_000, ff, repo).windows
    need = section_tokens(first[:2], ff)
    # A budget that fits the first two windows in path order but not the third.
    sel = select("naive", cands, need, ff, repo)
    assert [(x.start, x.end) for x in sel.windows] == [(4, 8), (6, 9)]
    assert sel.tokens == need
    # Nothing fits: nothing is taken, and the empty section costs nothing.
    for strategy in STRATEGIES:
        assert select(strategy, cands, 1, ff, repo).windows == ()


def test_evaluate_candidates_runs_every_strategy_and_budget(repo: Repository) -> None:
    cands = candidates(repo)
    gold = [GoldRange("calc/core.py", 8, 8)]
    runs = evaluate_candidates(
        "tiny", cands, repository=repo, failure_file="tests/test_core.py", gold=gold, budgets=(60, 5000)
    )
    assert [(r.budget, r.strategy) for r in runs] == [(b, s) for b in (60, 5000) for s in STRATEGIES]
    for r in runs:
        assert r.tokens <= r.budget
        if r.strategy.startswith("layered"):
            assert r.duplicate_lines == 0
    big = {r.strategy: r for r in runs if r.budget == 5000}
    assert big["naive"].duplicate_lines == 3  # lines 6-8 of core.py in two windows
    assert big["layered+merge"].distinct_lines == 6 + 2 + 2 and big["layered"].distinct_lines == 5 + 2 + 2
    assert all(r.coverage == 1.0 and r.file_recall == 1.0 for r in big.values())


# --- the whole evaluation, the report and the chart --------------------------------------------


def test_evaluate_a_prepared_case(work: Path) -> None:
    cases = [{"id": "tiny_mean", "python": "3.11", "gold": GOLD}]
    evaluation, failed = evaluate(cases, work, budgets=(500, 4000), repeat=2)
    assert failed == []
    (info,) = evaluation.cases
    assert info.failure_file == "tests/test_core.py"  # the assertion sits in the test body
    assert info.gold == (GoldRange("calc/core.py", 8, 8),)
    assert info.candidates >= info.merged_candidates >= 1
    assert len(evaluation.runs) == 2 * len(STRATEGIES)
    at_4k = {r.strategy: r for r in evaluation.runs_of("layered", 4000)}
    assert at_4k["layered"].failure_file_in_context and at_4k["layered"].coverage == 1.0


def test_report_and_chart(work: Path, tmp_path: Path) -> None:
    evaluation, _ = evaluate([{"id": "tiny_mean", "python": "3.11", "gold": GOLD}], work, budgets=(500, 4000))
    report = markdown_report(evaluation)
    assert report.startswith("# Evaluation on real bugs\n")
    for heading in ("## Totals", "## Targets", "## Cases", "## Per case"):
        assert f"\n{heading}\n" in report
    assert "| 4k | layered + RangeMerger | 1/1 |" in report
    # One row in the cases table, one per budget and strategy, one in the recall section's cases.
    assert report.count("| tiny_mean | ") == 1 + 2 * len(STRATEGIES) + 1
    png = tmp_path / "chart.png"
    coverage_chart(evaluation, png)
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_empty_evaluation_report(tmp_path: Path) -> None:
    empty = Evaluation((), (2000,), STRATEGIES, ())
    assert "## Totals" in markdown_report(empty)
    coverage_chart(empty, tmp_path / "empty.png")
    assert (tmp_path / "empty.png").stat().st_size > 0


def test_command_line(work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases_file = tmp_path / "cases.json"
    cases_file.write_text(json.dumps([{"id": "tiny_mean", "python": "3.11", "gold": GOLD}]))
    out = tmp_path / "out"
    argv = ["--cases", str(cases_file), "--work", str(work), "--budgets", "4000,500", "--repeat", "1"]
    assert main([*argv, "--out", str(out), "--case", "tiny_mean"]) == 0
    printed = capsys.readouterr().out
    assert (out / "eval.md").read_text() == printed
    assert "| 500 | naive concatenation |" in printed  # budgets sorted; 500 is not a round thousand
    assert (out / "coverage.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "recall.png").read_bytes().startswith(b"\x89PNG")


def test_add_eval_parser_plugs_into_a_command_line(work: Path, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser(prog="bugcontext")
    commands = parser.add_subparsers(dest="command", required=True)
    add_eval_parser(commands)
    args = parser.parse_args(["eval"])
    assert (args.budgets, args.cases, args.out, args.case, args.variants, args.trees) == (
        (2000, 8000, 32000),
        None,  # both shipped case lists
        None,
        None,
        ("log", "log+issue"),
        None,
    )
    for bad in (["eval", "--budgets", "2000,x"], ["eval", "--budgets", "0"], ["eval", "--repeat", "0"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)


def test_command_line_errors(work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases_file = tmp_path / "cases.json"
    # A case that cannot be prepared (no such Python, checked before any download) fails alone.
    cases_file.write_text(
        json.dumps(
            [
                {"id": "tiny_mean", "python": "3.11", "gold": GOLD},
                {"id": "other", "python": "0.0", "gold": []},
            ]
        )
    )
    base = ["--cases", str(cases_file), "--work", str(work), "--budgets", "4000", "--repeat", "1"]
    assert main(base) == 1
    captured = capsys.readouterr()
    assert "| tiny_mean | " in captured.out
    assert "bugcontext eval: other: preparation failed: this case needs Python 0.0" in captured.err
    assert main([*base, "--case", "nope"]) == 2
    assert "unknown case 'nope'" in capsys.readouterr().err
    assert main(["--cases", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_realbugs_cases_file() -> None:
    # The cases ship as package data, so eval runs from any folder.
    assert DEFAULT_CASES.is_file()
    assert DEFAULT_CASES.parent.name == "evaluation"
    cases = load_cases(DEFAULT_CASES)
    assert len(cases) >= 5
    for case in cases:
        assert gold_ranges(case)
    assert select_cases(cases, [cases[1]["id"]]) == [cases[1]]
    assert select_cases(cases, None) == cases


def fake_run(strategy: str, budget: int, covered: int, tokens: int, duplicate: int = 0) -> Any:
    from bugcontext.evaluation.evaluate import Run

    return Run(
        case="c",
        strategy=strategy,
        budget=budget,
        failure_file_in_context=True,
        gold_files=1,
        gold_files_found=1 if covered else 0,
        gold_lines=2,
        covered_lines=covered,
        gold_hunks=1,
        hunks_in_context=1 if covered == 2 else 0,
        windows=1,
        tokens=tokens,
        lines_sent=10,
        distinct_lines=10 - duplicate,
        duplicate_lines=duplicate,
        seconds=0.001,
    )


def test_targets_verdicts() -> None:
    from bugcontext.evaluation.evaluate import CaseInfo

    runs = (
        fake_run("naive", 8000, 1, 900),
        fake_run("top-k", 8000, 2, 900, duplicate=3),
        fake_run("layered", 8000, 2, 800),
        fake_run("layered+merge", 8000, 2, 800),
    )
    info = CaseInfo("c", "a.py", (GoldRange("a.py", 1, 2),), 4, 3, 0.0)
    report = markdown_report(Evaluation((info,), (8000,), STRATEGIES, runs))
    targets = report.split("## Targets")[1].split("## Cases")[0]
    # Layered beats naive (coverage) and top-k (equal coverage, no duplicate lines).
    assert "| layered, de-dup | 1/1 met | 100.0% met | met | met |" in targets
    # Equal on everything: a tie is not "better".
    assert (
        "| layered + RangeMerger | 1/1 met | 100.0% met | met | not met (tie with: 8k layered, de-dup) |"
        in targets
    )
    totals = report.split("## Totals")[1].split("## Targets")[0]
    assert "| 8k | score-only top-k | 1/1 | 100.0% | 100.0% | 1/1 | 900 | 7 | 30.0% | 1.0 ms |" in totals


# --- SWE-bench-style cases: a tarred tree, fail_to_pass tests, an issue text ------------------


def make_tree_case(tmp_path: Path, case_id: str = "tiny__calc-1") -> tuple[dict[str, Any], Path]:
    """A SWE-bench-style case and its trees folder (``<id>.tar.gz``). The install command
    makes this interpreter's packages (pytest among them) visible in the case's virtual
    environment with a ``.pth`` file, so nothing is downloaded."""
    import site
    import tarfile

    tree = tmp_path / "tree"
    (tree / "calc").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "calc" / "__init__.py").write_text("")
    (tree / "calc" / "core.py").write_text(CORE)
    (tree / "tests" / "test_core.py").write_text(TEST)
    (tree / "pytest.ini").write_text("[pytest]\n")
    trees = tmp_path / "trees"
    trees.mkdir()
    with tarfile.open(trees / f"{case_id}.tar.gz", "w:gz") as tf:
        for path in sorted(tree.rglob("*")):
            tf.add(path, arcname=path.relative_to(tree).as_posix(), recursive=False)
    host = site.getsitepackages()[0]
    pth = f"import site, pathlib; pathlib.Path(site.getsitepackages()[0], 'host.pth').write_text({host!r})"
    case = {
        "id": case_id,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "install": [f'python -c "{pth}"'],
        "pythonpath": "",
        "fail_to_pass": ["tests/test_core.py::test_mean"],
        "expected_exit": 1,
        "gold": GOLD,
        "query": "`mean` divides by the wrong count: calc.core.mean([1, 2, 3]) gives 3.",
    }
    return case, trees


def test_tree_case_preparation_and_evaluation(tmp_path: Path) -> None:
    from bugcontext.evaluation.evaluate import prepare_case, split_of
    from bugcontext.evaluation.realbugs import PreparationError

    case, trees = make_tree_case(tmp_path)
    work = tmp_path / "work"
    with pytest.raises(PreparationError, match="needs the repository tree: pass --trees DIR"):
        prepare_case(case, work)
    with pytest.raises(PreparationError, match=r"missing tree tiny__calc-1\.tar\.gz"):
        prepare_case(case, work, trees=tmp_path)
    prepared = prepare_case(case, work, trees=trees)
    assert prepared.repo == work / "tiny__calc-1" / "repo"
    assert (prepared.repo / "calc" / "core.py").read_text() == CORE
    log = prepared.log.read_text()
    assert "FAILED tests/test_core.py::test_mean" in log
    assert prepared.junit is not None and prepared.junit.is_file()
    stamp = (work / "tiny__calc-1" / "venv" / ".prepare-stamp").read_text()
    assert stamp.endswith("\n" + case["install"][0])
    # Cached: reused without the trees.
    assert prepare_case(case, work).log.read_text() == log

    evaluation, failed = evaluate([case], work, budgets=(4000,), repeat=1, variants=("log", "log+issue"))
    assert failed == []
    assert [(c.variant, c.split, c.has_issue) for c in evaluation.cases] == [
        ("log", split_of("tiny__calc-1"), True),
        ("log+issue", split_of("tiny__calc-1"), True),
    ]
    for info in evaluation.cases:
        assert (info.candidate_hunks, info.candidate_files) == (1, 1)
    report = markdown_report(evaluation)
    assert "## Recall: candidates and selection" in report
    assert "| tiny__calc-1 | 1 → 1 | 1 → 1 |  |" in report
    assert "Cases the issue text lowered: 0; raised (and lowered none): " in report


def test_tree_case_wrong_exit(tmp_path: Path) -> None:
    from bugcontext.evaluation.evaluate import prepare_case
    from bugcontext.evaluation.realbugs import PreparationError

    case, trees = make_tree_case(tmp_path, "tiny__calc-2")
    case["expected_exit"] = 3
    with pytest.raises(PreparationError, match="the failing tests should exit 3, got exit 1"):
        prepare_case(case, tmp_path / "work", trees=trees)
    assert not (tmp_path / "work" / "tiny__calc-2" / "prepared.json").exists()


def test_split_is_fixed() -> None:
    import hashlib

    from bugcontext.evaluation.evaluate import split_of

    for case_id in ("a", "b", "pallets__flask-4992", "ytdl_unescape_html"):
        even = hashlib.sha256(case_id.encode()).digest()[0] % 2 == 0
        assert split_of(case_id) == ("calibration" if even else "held-out")
    assert split_of("pallets__flask-4992") == "calibration"
    assert split_of("ytdl_unescape_html") == "held-out"


def test_shipped_case_lists() -> None:
    from bugcontext.evaluation.evaluate import DEFAULT_CASE_FILES, issue_of
    from bugcontext.evaluation.realbugs2 import DEFAULT_CASES2, is_tree_case

    assert DEFAULT_CASES2 in DEFAULT_CASE_FILES and DEFAULT_CASES2.is_file()
    cases = load_cases(DEFAULT_CASES2)
    assert len(cases) == 24 and all(is_tree_case(c) and gold_ranges(c) and issue_of(c) for c in cases)
    assert not any(is_tree_case(c) for c in load_cases(DEFAULT_CASES))
    ids = [c["id"] for f in DEFAULT_CASE_FILES for c in load_cases(f)]
    assert len(ids) == len(set(ids)) == 29


def test_ablation_of_redundant_sources(work: Path) -> None:
    from bugcontext.evaluation.evaluate import Ablation, ablation
    from bugcontext.evaluation.report import ablation_report

    cases = [{"id": "tiny_mean", "python": "3.11", "gold": GOLD}]
    evaluation, _ = evaluate(cases, work, budgets=(8000,), repeat=1)
    rows = ablation(evaluation, cases, work, sources=("called", "search", "issue-search"))
    # mean() is found by the called code, the references and the search alike: no source alone
    # holds the gold; issue sources are ablated with the issue text only.
    assert rows == [
        Ablation("called", "log", 8000, (), (), ()),
        Ablation("search", "log", 8000, (), (), ()),
    ]
    report = ablation_report(rows)
    assert "| log | called | 8k | 0 | 0 | 0 |" in report
