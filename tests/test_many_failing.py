"""Several failing tests are evidence together: a real pytest run whose bug fails three tests.

``helper`` holds the bug; two tests reach it through ``first`` and ``second``, a third fails
in ``lonely`` on its own. Without ``test``, the frames of every failing test count and the
unit more of them reach scores higher; ``test=`` narrows the evidence to one test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bugcontext.job.sources import gather
from bugcontext.job.sources.gather import MAX_FAILING_TESTS, _by_reach
from bugcontext.job.sources.window import Window

CALC = """\
def helper(x):
    return 10 // x


def first(x):
    return helper(x) + 1


def second(x):
    return helper(x) + 2


def lonely(x):
    raise ValueError(x)
"""

TESTS = """\
from pkg.calc import first, second, lonely


def test_first():
    assert first(0) == 1


def test_second():
    assert second(0) == 2


def test_lonely():
    assert lonely(1) == 1


def test_passes():
    assert first(1) == 11
"""


def _pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    """A real pytest run of ``folder``'s tests, its long tracebacks and summary captured."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
    return subprocess.run(
        [*command, "-rA", "--tb=long", "tests"], cwd=folder, capture_output=True, text=True, check=False
    )


def _repo(tmp_path: Path) -> tuple[Path, str]:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "calc.py").write_text(CALC)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    proc = _pytest(tmp_path)
    assert proc.returncode == 1, proc.stdout
    return tmp_path, proc.stdout


def _score(gathered: object, start: int) -> float:
    return max(
        w.score
        for w in gathered.candidates  # type: ignore[attr-defined]
        if w.path == "pkg/calc.py" and w.reason == "failure" and w.start == start
    )


def test_every_failing_test_is_evidence(tmp_path: Path) -> None:
    repo, log = _repo(tmp_path)
    found = gather(repo, log)
    assert [t.test for t in found.failing_tests] == [
        "tests/test_calc.py::test_first",
        "tests/test_calc.py::test_second",
        "tests/test_calc.py::test_lonely",
    ]
    windows = {
        (w.start, w.end) for w in found.candidates if w.path == "pkg/calc.py" and w.reason == "failure"
    }
    # first (the chosen test's path), second (only the second test's) and lonely (the third's)
    assert {(1, 2), (5, 6), (9, 10), (13, 14)} <= windows
    # helper is reached by two of three tests: above lonely, reached by one
    assert _score(found, 1) > _score(found, 13)
    # the chosen test's frames come first, the failing files in error order
    assert found.failure_files == ("pkg/calc.py", "tests/test_calc.py")
    assert found.failure is not None and found.failure.test_id == "tests/test_calc.py::test_first"


def test_a_named_test_narrows_the_evidence(tmp_path: Path) -> None:
    repo, log = _repo(tmp_path)
    found = gather(repo, log, test="tests/test_calc.py::test_lonely")
    windows = {
        (w.start, w.end) for w in found.candidates if w.path == "pkg/calc.py" and w.reason == "failure"
    }
    assert (13, 14) in windows
    assert (1, 2) not in windows and (9, 10) not in windows
    assert {pf.path for pf in found.frames} == {"pkg/calc.py", "tests/test_calc.py"}
    assert {pf.line for pf in found.frames if pf.path == "pkg/calc.py"} == {14}


def test_one_failing_test_scores_as_before(tmp_path: Path) -> None:
    repo, log = _repo(tmp_path)
    named = gather(repo, log, test="tests/test_calc.py::test_first")
    (tmp_path / "tests" / "test_calc.py").write_text(
        TESTS.replace("lonely(1) == 1", "True").replace("second(0) == 2", "True")
    )
    proc = _pytest(tmp_path)
    alone = gather(repo, proc.stdout)
    assert len(alone.failing_tests) == 1
    key = lambda g: [(w.path, w.start, w.end, w.score) for w in g.candidates if w.reason == "failure"]  # noqa: E731
    assert key(alone) == key(named)


def test_reach_rescoring() -> None:
    w = [Window("a.py", 1, 5, "x\n" * 5, "failure", 3.5), Window("a.py", 7, 9, "y\n" * 3, "failure", 3.5)]
    reached = [{("a.py", 2)}, {("a.py", 4)}, {("a.py", 8)}, {("b.py", 1)}]
    out = _by_reach(w, reached, 3.0)
    assert [x.score for x in out] == [3.0 + 0.5 * (1 + 2 / 4) / 2, 3.0 + 0.5 * (1 + 1 / 4) / 2]
    assert _by_reach(w, [{("a.py", 2)}], 3.0) == w
    assert MAX_FAILING_TESTS >= 2
