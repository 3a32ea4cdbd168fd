"""Traces and replay across two turns of a real bug (more-itertools 9.0.0, ``split_after``).

Turn 1: the regression test fails; ``bugcontext context`` builds the context from its log and
appends the build to a trace. The fix of the 9.1.0 release is applied (``fix.patch``). Turn 2:
the same test passes; the context of that run is appended to the same trace. ``bugcontext
replay`` rebuilds both lines from their saved inputs, reproduces both digests and says what the
second turn dropped and why. The data and its origin: ``tests/data/realbug_more_itertools``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "realbug_more_itertools"
NODE = "tests/test_more.py::SplitAfterTest::test_max_split"
#: The line the real fix changed (``yield list(it)``), from ``fix.patch``.
GOLD = ("more_itertools/more.py", 1394)


def _run_test(repo: Path) -> tuple[int, str]:
    """Run the regression test in ``repo`` as the real-bug cases do (own rootdir, long tracebacks)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", NODE, "-rA", "--tb=long", "-p", "no:cacheprovider",
         "-p", "no:randomly", "--rootdir", str(repo), "-c", os.devnull],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return proc.returncode, proc.stdout


def _apply_fix(repo: Path) -> None:
    """Apply the one-hunk ``fix.patch`` by its exact lines (no ``patch`` program needed)."""
    hunk = (DATA / "fix.patch").read_text().splitlines()[3:]
    before = "".join(line[1:] + "\n" for line in hunk if not line.startswith("+"))
    after = "".join(line[1:] + "\n" for line in hunk if not line.startswith("-"))
    target = repo / "more_itertools" / "more.py"
    text = target.read_text()
    assert text.count(before) == 1
    target.write_text(text.replace(before, after))


def _context(repo: Path, log: Path, trace: Path, cache: Path) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "context", "--repo", str(repo), "--pytest-log",
         str(log), "--format", "json", "--trace", str(trace), "--cache-dir", str(cache)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def test_two_turns_of_a_real_bug_are_traced_and_replayed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(DATA, repo, ignore=shutil.ignore_patterns("fix.patch", "README.md", "LICENSE"))
    trace, cache = tmp_path / "trace.jsonl", tmp_path / "cache"

    code, log1 = _run_test(repo)
    assert code == 1, log1
    assert "AssertionError: Lists differ: [[1], []] != [[1]]" in log1
    (tmp_path / "turn1.log").write_text(log1)
    first = _context(repo, tmp_path / "turn1.log", trace, cache)
    items1 = first["items"]
    assert isinstance(items1, list)
    # The failing test's window first, then the definition it calls, which holds the fixed line.
    assert (items1[0]["path"], items1[0]["reason"]) == ("tests/test_more.py", "failure")
    gold = [i for i in items1 if i["path"] == GOLD[0] and i["start"] <= GOLD[1] <= i["end"]]
    assert [g["reason"] for g in gold] == ["reference"]

    _apply_fix(repo)
    code, log2 = _run_test(repo)
    assert code == 0, log2
    (tmp_path / "turn2.log").write_text(log2)
    second = _context(repo, tmp_path / "turn2.log", trace, cache)
    assert second["items"] == [] and second["failure_files"] == []  # nothing fails any more

    lines = trace.read_text().splitlines()
    assert len(lines) == 2
    records = [json.loads(line) for line in lines]
    assert [r["digest"] for r in records] == [first["digest"], second["digest"]]
    assert records[0]["digest"] != records[1]["digest"]

    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "replay", str(trace)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"turn 1: digest {first['digest']} reproduced"
    # Turn 2 dropped every item of turn 1, each because no source proposes it any more.
    dropped = [line.split() for line in out[2:]]
    assert out[1] == f"turn 2: digest {second['digest']} reproduced"
    expected = [f"{i['path']}:{i['start']}-{i['end']}" for i in items1]
    assert [d[1] for d in dropped] == expected
    assert all(d[0] == "dropped" and d[2:] == ["(no", "longer", "proposed)"] for d in dropped)
    assert f"{GOLD[0]}:{gold[0]['start']}-{gold[0]['end']}" in expected
