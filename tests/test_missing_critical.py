"""``missing_critical``: the failing files whose failure windows were all left out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import Candidate, MissingEvidence, Omission
from bugcontext.integrations.cli import main
from conftest import DIFF_EXAMPLES, Drawn, build_inputs, failing_list
from hypothesis import HealthCheck, given, settings
from test_cli import cli, failing_repo  # noqa: F401  (a fixture)

SETTINGS = settings(
    max_examples=DIFF_EXAMPLES // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

BIG = "x = 1\n" * 200  # 1,200 characters
CANDS = [
    Candidate("src/app.py", 10, 210, BIG, "failure", 9.0),
    Candidate("src/util.py", 1, 3, "def g():\n    pass\n", "reference", 1.0),
    Candidate("src/app.py", 300, 301, "def h(): ...\n", "search", 0.5),
    Candidate("src/app.py", 100, 120, "y = 2\n" * 20, "failure", 5.0),
]


def test_failure_windows_too_big_for_the_budget_are_reported(engine: Any) -> None:
    result = engine({"candidates": CANDS, "max_chars": 100, "failure_file": "./src//app.py"})
    # The failing file's search hit and the reference fit; both failure windows do not.
    assert result.selected == (2, 1)
    assert result.missing_critical == (
        MissingEvidence("src/app.py", (Omission(0, 0, "budget"), Omission(3, 1, "budget"))),
    )
    assert result.to_dict()["missing_critical"] == [
        {
            "path": "src/app.py",
            "omitted": [
                {"index": 0, "rank": 0, "reason": "budget"},
                {"index": 3, "rank": 1, "reason": "budget"},
            ],
        }
    ]


def test_an_overlap_omission_is_reported_with_its_blocker(engine: Any) -> None:
    cands = [
        Candidate("a.py", 1, 50, "s" * 10, "search", 100.0),  # the failing file: ranked by score
        Candidate("a.py", 40, 60, "f" * 10, "failure", 1.0),
    ]
    result = engine({"candidates": cands, "max_chars": 1000, "failure_files": ["a.py"]})
    assert result.missing_critical == (MissingEvidence("a.py", (Omission(1, 1, "overlap", 0),)),)


def test_nothing_is_reported_when_one_failure_window_is_kept_or_there_is_none(engine: Any) -> None:
    kept = engine({"candidates": CANDS, "max_chars": 200, "failure_file": "src/app.py"})
    assert 3 in kept.selected and kept.missing_critical == ()
    # util.py has no failure window: nothing is missing there, whatever was omitted.
    none = engine({"candidates": CANDS, "max_chars": 0, "failure_files": ["src/util.py"]})
    assert none.missing_critical == ()
    # Failure windows of a file that is not failing are not critical.
    other = engine({"candidates": CANDS, "max_chars": 100})
    assert other.missing_critical == ()


def test_several_failing_files_in_error_order(engine: Any) -> None:
    cands = [
        Candidate("b.py", 1, 2, "b" * 50, "failure", 1.0),
        Candidate("a.py", 1, 2, "a" * 50, "failure", 1.0),
        Candidate("c.py", 1, 2, "c" * 5, "failure", 1.0),
    ]
    result = engine({"candidates": cands, "max_chars": 10, "failure_files": ["a.py", "c.py", "b.py"]})
    assert [m.path for m in result.missing_critical] == ["a.py", "b.py"]


def test_a_rendered_section_that_drops_the_failure_window_reports_it() -> None:
    # With tokens, the section is counted whole after packing; whatever the engines drop there
    # is reported too. Here the budget fits the failure window's block only without the
    # section's joins, so it is dropped by the final check or never selected: either way, missing.
    cands = [Candidate("a.py", 1, 3, "def f():\n    return 1\n", "failure", 1.0)]
    cost = {"unit": "tokens", "template": "markdown"}
    results = []
    for module in (bugcontext, reference):
        fits = module.build({"candidates": cands, "budget": 10_000, "cost": cost, "failure_file": "a.py"})
        assert fits.missing_critical == ()
        small = module.build(
            {"candidates": cands, "budget": fits.used - 1, "cost": cost, "failure_file": "a.py"}
        )
        results.append(small)
    native, ref = results
    assert native == ref
    assert native.missing_critical == (MissingEvidence("a.py", (Omission(0, 0, "budget"),)),)


def test_missing_evidence_is_immutable_and_pickles() -> None:
    import pickle

    m = MissingEvidence("a.py", (Omission(0, 0, "budget"),))
    assert pickle.loads(pickle.dumps(m)) == m and hash(m) == hash(MissingEvidence("a.py", m.omitted))
    with pytest.raises(AttributeError):
        m.path = "b.py"  # type: ignore[misc]


@SETTINGS
@given(drawn=build_inputs())
def test_missing_critical_follows_the_contract_in_both_engines(drawn: Drawn) -> None:
    inp = drawn.make()
    native, ref = bugcontext.build(inp), reference.build(inp)
    assert native.missing_critical == ref.missing_critical
    # The contract, restated: each failing file with failure windows none of which is selected.
    specs = drawn.specs  # (path, start, end, content, reason, score)
    canon = [_canon(spec[0]) for spec in specs]
    reasons = [str.__str__(spec[4]) for spec in specs]
    ranks = {o.index: o for o in native.omitted}
    expected = []
    for f in failing_list(drawn.failure_file):
        windows = [i for i in range(len(specs)) if canon[i] == f and reasons[i] == "failure"]
        if windows and not set(windows) & set(native.selected):
            expected.append(
                MissingEvidence(f, tuple(sorted((ranks[i] for i in windows), key=lambda o: o.rank)))
            )
    assert native.missing_critical == tuple(expected)


def _canon(path: str) -> str:
    return "/".join(p for p in str.__str__(path).split("/") if p not in ("", "."))


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _input_file(tmp_path: Any) -> str:
    data = {"candidates": [c.to_dict() for c in CANDS], "max_chars": 100, "failure_file": "src/app.py"}
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_cli_build_warns_and_require_failure_exits_5(tmp_path: Any, capsys: Any) -> None:
    file = _input_file(tmp_path)
    assert main(["build", file]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["missing_critical"][0]["path"] == "src/app.py"
    assert data["digest"] == bugcontext.build(json.loads((tmp_path / "in.json").read_text())).digest
    assert err == ""  # build is JSON in, JSON out: the result carries it
    assert main(["build", file, "--require-failure"]) == 5
    out, err = capsys.readouterr()
    assert json.loads(out) == data
    assert err == (
        "bugcontext build: warning: missing failure evidence: src/app.py: all failure windows left "
        "out (window 0 budget, window 3 budget)\n"
    )


def test_cli_require_failure_is_0_when_the_evidence_is_there(tmp_path: Any, capsys: Any) -> None:
    data = {"candidates": [c.to_dict() for c in CANDS], "max_chars": 10_000, "failure_file": "src/app.py"}
    (tmp_path / "in.json").write_text(json.dumps(data))
    assert main(["build", str(tmp_path / "in.json"), "--require-failure"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_context_reports_the_digest_and_missing_evidence(failing_repo: tuple[Path, Path]) -> None:  # noqa: F811
    repo, log = failing_repo
    args = ["context", "--repo", str(repo), "--pytest-log", str(log)]
    roomy = cli(*args, "--require-failure")
    assert roomy.returncode == 0, roomy.stderr
    assert b"missing failure evidence" not in roomy.stdout + roomy.stderr
    # The section is on standard output, the report (with the digest) on standard error.
    digest = re.search(rb"^- digest: ([0-9a-f]{64})$", roomy.stderr, re.MULTILINE)
    assert digest is not None
    # The Markdown form costs the markdown section: the same cost model in the JSON form.
    as_json = json.loads(cli(*args, "--format", "json", "--template", "markdown").stdout)
    assert as_json["digest"].encode() == digest.group(1)
    assert as_json["missing_critical"] == []

    tight = cli(*args, "--max-chars", "40")
    assert tight.returncode == 0
    assert b"- missing failure evidence: " in tight.stderr
    # 40 characters hold no failure block either: that is said first, then the missing evidence.
    left_out = b"bugcontext context: warning: the failure block of tests/test_ratios.py::test_mean_ratio "
    warning = b"\nbugcontext context: warning: missing failure evidence: "
    assert tight.stderr.startswith(left_out) and warning in tight.stderr, tight.stderr
    required = cli(*args, "--max-chars", "40", "--require-failure", "--format", "json")
    assert required.returncode == 5
    data = json.loads(required.stdout)
    assert data["missing_critical"] and all(
        o["reason"] == "budget" for m in data["missing_critical"] for o in m["omitted"]
    )
    assert {m["path"] for m in data["missing_critical"]} <= set(data["failure_files"])
