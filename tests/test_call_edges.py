"""Recorded call edges (a traced re-run) as evidence: the callees that really ran.

``compute`` fails; the run called ``parse`` from it, and ``parse`` called ``normalize``; the
static sources would also guess ``unused_branch`` (read on the failing line's function, never
called). Edges are ``((caller path, def line), (callee path, def line))``.
"""

from __future__ import annotations

from pathlib import Path

from bugcontext.job.sources import gather
from bugcontext.job.sources.execution import (
    CALLED_SOURCE,
    WEAK_SOURCE,
    ExecutionRecord,
    TestRun,
    call_distances,
    called_windows,
)
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.symbols import SymbolIndex

LIB = """\
def normalize(text):
    return text.strip()


def parse(text):
    return int(normalize(text))


def unused_branch(text):
    return 0


@staticmethod
def decorated(text):
    return text


def compute(text, flag=False):
    if flag:
        return unused_branch(text)
    value = parse(text)
    return 10 // value
"""

TEST = """\
from pkg.lib import compute


def test_compute():
    assert compute(" 0 ") == 1
"""

LOG = """\
============================= FAILURES =============================
___________________________ test_compute ___________________________

    def test_compute():
>       assert compute(" 0 ") == 1

tests/test_lib.py:5:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

text = ' 0 ', flag = False

    def compute(text, flag=False):
        if flag:
            return unused_branch(text)
        value = parse(text)
>       return 10 // value
E       ZeroDivisionError: integer division or modulo by zero

pkg/lib.py:22: ZeroDivisionError
===================== short test summary info ======================
FAILED tests/test_lib.py::test_compute - ZeroDivisionError: integer division or modulo by zero
======================== 1 failed in 0.01s =========================
"""

EDGES = frozenset(
    {
        (("tests/test_lib.py", 4), ("pkg/lib.py", 18)),  # test -> compute
        (("pkg/lib.py", 18), ("pkg/lib.py", 5)),  # compute -> parse
        (("pkg/lib.py", 0), ("pkg/lib.py", 18)),  # module code -> compute: no caller function
        (("pkg/lib.py", 5), ("pkg/lib.py", 1)),  # parse -> normalize
        (("pkg/lib.py", 18), ("pkg/lib.py", 14)),  # compute -> decorated (its def line)
        (("pkg/lib.py", 18), ("/elsewhere/x.py", 3)),  # not a repository file: ignored
    }
)
LINES = {
    "tests/test_lib.py": frozenset({1, 4, 5}),
    "pkg/lib.py": frozenset({1, 2, 5, 6, 9, 13, 14, 18, 19, 21, 22}),
}


def _repo(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "lib.py").write_text(LIB)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lib.py").write_text(TEST)
    return tmp_path


def _record(edges: frozenset[tuple[tuple[str, int], tuple[str, int]]] = EDGES) -> ExecutionRecord:
    run = TestRun("tests/test_lib.py::test_compute", LINES, failed=True, edges=edges)
    return ExecutionRecord("trace", (run,), True, frozenset(LINES))


def test_call_distances_follow_the_recorded_calls(tmp_path: Path) -> None:
    repo = Repository(_repo(tmp_path))
    found = gather(repo, LOG)
    distances = call_distances(SymbolIndex(repo), _record().runs, found.frames)
    # compute is a frame (distance 0) and the test a frame (distance 1): not in the map.
    assert distances == {("pkg/lib.py", 5, 6): 2.0, ("pkg/lib.py", 1, 2): 3.0, ("pkg/lib.py", 13, 15): 2.0}


def test_called_windows_are_the_callees_that_ran(tmp_path: Path) -> None:
    repo = Repository(_repo(tmp_path))
    found = gather(repo, LOG)
    windows = called_windows(repo, _record(), found.failing_tests, found.frames, SymbolIndex(repo), 5.0)
    assert [(w.start, w.end, w.score, w.reason, w.source) for w in windows] == [
        (5, 6, 5.25, "reference", CALLED_SOURCE),
        (13, 15, 5.25, "reference", CALLED_SOURCE),
    ]
    assert (
        called_windows(repo, _record(frozenset()), found.failing_tests, found.frames, SymbolIndex(repo), 5.0)
        == []
    )


def test_gather_with_edges_proposes_callees_and_demotes_what_never_ran(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    found = gather(repo, LOG, coverage=_record())
    by_lines = {(w.start, w.end): w for w in found.candidates if w.path == "pkg/lib.py"}
    assert by_lines[(5, 6)].reason in ("reference", "failure")
    called = [w for w in found.candidates if w.source == CALLED_SOURCE]
    assert {(w.start, w.end) for w in called} <= {(5, 6), (13, 15)}
    # unused_branch never ran: no reference window of it stays in the reference tier
    assert not any(w.reason == "reference" and (w.start, w.end) == (9, 10) for w in found.candidates)


def test_executed_units_far_from_the_failure_are_search_evidence(tmp_path: Path) -> None:
    found = gather(_repo(tmp_path), LOG, coverage=_record())
    weak_windows = [w for w in found.candidates if w.source == WEAK_SOURCE]
    # normalize ran two calls below the failing function: closeness 0.9 / 3 < STRONG
    assert [(w.path, w.start, w.end, w.reason) for w in weak_windows] == [("pkg/lib.py", 1, 2, "search")]
    (weak,) = weak_windows
    lowest_log_search = min(w.score for w in found.candidates if w.source == "search")
    assert weak.score < lowest_log_search
