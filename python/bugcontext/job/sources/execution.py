"""Execution evidence: the code the tests ran, as candidates ranked by suspiciousness.

An :class:`ExecutionRecord` says which lines of which repository files each test run
executed. A coverage report gives one (:func:`bugcontext.job.sources.coverage.read_coverage`);
so could a tracer that re-runs the failing tests (it fills in the same runs, and may set each
run's outcome itself). :func:`execution_windows` turns a record into candidates:

* every executed function or method is one ``failure`` window (its whole syntactic unit, as
  the failure windows of a traceback frame are cut: :func:`~.failure.failure_spans`; a long
  one also gets a bounded run of whole statements around its most suspicious line, whose
  ``source`` names the whole unit it is part of); executed module- and class-level lines are
  units too (a bounded run of whole statements); a unit of a failing test file other than a
  function holding a frame is left out (the failing files rank first, and there the test's neighbours would
  crowd the code under test out, as for search hits);
* each unit is scored by suspiciousness: with per-test runs where passing tests ran too, the
  Ochiai coefficient ``failed(s) / sqrt(total_failed * (failed(s) + passed(s)))`` of its most
  suspicious line (``failed(s)``, ``passed(s)``: the failing and passing runs that executed
  line ``s``), a unit no failing run executed being left out; otherwise the share of failing
  runs that executed it, times its closeness to the failing frames (a unit holding a frame;
  with recorded call edges, a unit called from a frame's function, by the calls between
  them; then the failing files, then units the static sources also proposed; with call
  edges, a unit no recorded call reaches from a frame counts half);
* :func:`demote_unexecuted` moves the ``reference`` windows whose lines the failing runs never
  executed (in files the record measured) to the bottom of the ``search`` tier: a reference
  window ranks above every failure window of a non-failing file, so a definition the failing
  test never ran would crowd out the code it did run.

Scores sit on the sources' one scale (:func:`~.gather.gather`): executed units score in
``(T + 2, T + 3)``, where the traceback's own failure windows are; a unit holding a frame
keeps the higher of its two scores.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bugcontext.job.sources.failure import ProjectFrame, failure_spans, is_test_file
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.pytest_log import _dotted
from bugcontext.job.sources.runs import FailingTest
from bugcontext.job.sources.symbols import SymbolIndex
from bugcontext.job.sources.window import RADIUS, Window, make_window

__all__ = [
    "CALLED_SOURCE",
    "EXECUTED_SOURCE",
    "MAX_CALLED",
    "MAX_EXECUTED_UNITS",
    "NOT_EXECUTED_SOURCE",
    "STRONG",
    "WEAK_SOURCE",
    "ExecutionRecord",
    "TestRun",
    "call_distances",
    "called_windows",
    "context_test_id",
    "demote_unexecuted",
    "execution_windows",
    "run_outcomes",
]

#: The ``source`` (``source_id``) of an executed unit's window.
EXECUTED_SOURCE = "coverage: executed by the failing tests"
#: The ``source`` of an executed unit's window when its suspiciousness is below
#: :data:`STRONG` (a ``search`` window: see :func:`execution_windows`).
WEAK_SOURCE = "coverage: executed by the failing tests, far from the failure"
#: An executed unit this suspicious or more is failure evidence (``weak`` in
#: :func:`execution_windows`): a frame's unit or one its function called, a unit of a failing
#: file, a unit the static sources proposed too, or an Ochiai of at least this much.
STRONG = 0.4
#: The ``source`` of a reference window the failing tests never executed (moved down).
NOT_EXECUTED_SOURCE = "reference: not executed by the failing tests"
#: At most this many executed units become windows (the most suspicious).
MAX_EXECUTED_UNITS = 600

_UNIT = 2 * RADIUS + 1
# Closeness to the failing frames, without a spectrum: a unit in a failing file, a unit the
# static sources proposed too (a reference or search window overlaps it), any other unit.
_IN_FAILING_FILE = 0.6
_STATICALLY_PROPOSED = 0.45
_OTHER = 0.3
# Executed lines outside any function (imports, class bodies) run at import time: they weigh
# this much of a function's score; a test file's units (fixtures, helpers) half.
_MODULE_LEVEL = 0.2
_TEST_FILE = 0.5
# Scores stay below the deepest frame's failure window (``T + 3``).
_TOP = 0.999
# Without a spectrum, a unit the failing runs called from a frame's function: this much
# divided by ``1 + frame distance + calls`` (``calls`` steps down the recorded call graph).
_CALLED = 0.9
# With call data, a unit no recorded call path leads to from a frame (a fixture, code run by
# the test runner) keeps this share of its closeness.
_UNREACHED = 0.5
#: The ``source`` of a reference window of a function a frame's function called in the
#: failing run (a recorded call edge, not a static guess).
CALLED_SOURCE = "execution: called by the failing code"
#: At most this many recorded callees become reference windows.
MAX_CALLED = 12


@dataclass(frozen=True)
class TestRun:
    """What one run executed: ``lines`` maps each repository-relative path to the 1-based
    line numbers executed in it. ``test`` is the run's test as recorded (a pytest node id, a
    coverage context such as ``tests/test_x.py::test_y|run`` or ``test_x.test_y``), ``None``
    for code run outside any test (imports, collection), or for a report without per-test
    data. ``failed`` is the run's outcome when the recorder knows it, ``None`` when it is to
    be taken from the log (:func:`run_outcomes`). ``edges`` are the calls the run made
    between repository functions, each ``((caller path, caller def line), (callee path,
    callee def line))``: repository-relative paths, the 1-based line of the ``def`` (or
    ``class``) keyword, ``0`` for a module's own code; the caller is the nearest repository
    frame below the callee (a traced re-run records them: :mod:`.rerun`; a coverage
    report has none, empty)."""

    __test__ = False  # not a pytest test class

    test: str | None
    lines: Mapping[str, frozenset[int]]
    failed: bool | None = None
    edges: frozenset[tuple[tuple[str, int], tuple[str, int]]] = frozenset()


@dataclass(frozen=True)
class ExecutionRecord:
    """The lines the tests executed, per run.

    ``source`` names where the record came from (``"coverage-data"``, ``"coverage-json"``,
    ``"lcov"``, ``"cobertura"``, ``"rerun"``: a traced re-run, :mod:`.rerun`); ``runs``
    are the test runs (:class:`TestRun`);
    ``per_test`` tells whether the runs are one per test (per-test contexts) or one run of
    every test of the report (``TestRun.test`` ``None``), taken to be the failing tests'.
    ``measured`` are the repository files the record measured (executed or not);
    ``unmapped`` the report's paths that name no repository file (another machine's files
    that match none or several, installed code), each once.
    """

    source: str
    runs: tuple[TestRun, ...]
    per_test: bool
    measured: frozenset[str] = frozenset()
    unmapped: tuple[str, ...] = field(default=(), compare=False)

    def executed(self, path: str) -> frozenset[int]:
        """Every line of ``path`` some run executed."""
        out: set[int] = set()
        for run in self.runs:
            out |= run.lines.get(path, frozenset())
        return frozenset(out)

    @property
    def files(self) -> tuple[str, ...]:
        """The files with an executed line, sorted."""
        return tuple(sorted({path for run in self.runs for path, lines in run.lines.items() if lines}))


def context_test_id(context: str) -> str | None:
    """The test a coverage context names, or ``None`` for no test: pytest-cov's
    ``tests/test_x.py::test_y[1]|run`` (``|setup``, ``|teardown``) gives the node id, coverage's
    ``dynamic_context = test_function`` gives ``test_x.TestC.test_y`` (dotted, as recorded);
    the empty context (code run outside a test) ``None``."""
    name = context.strip()
    if not name:
        return None
    base, bar, phase = name.rpartition("|")
    if bar and phase in ("run", "setup", "teardown", "call"):
        name = base
    return name or None


def _key(test: str) -> str:
    """A test id as dotted names without parameters."""
    return _dotted(test).split("[", 1)[0]


def _same_test(context_id: str, test_id: str) -> bool:
    """Whether a run's test and a failing test's id name one test: equal as dotted names, or
    one the dotted tail of the other (coverage records ``test_x.test_y`` for
    ``tests/test_x.py::test_y``); parameters are compared when both have them."""
    if context_id == test_id:
        return True
    left, right = _dotted(context_id), _dotted(test_id)
    if "[" not in left or "[" not in right:
        left, right = left.split("[", 1)[0], right.split("[", 1)[0]
    return left == right or left.endswith("." + right) or right.endswith("." + left)


def run_outcomes(record: ExecutionRecord, failing: Sequence[FailingTest]) -> list[bool | None]:
    """Each run's outcome, in ``record.runs`` order: ``True`` (failed), ``False`` (passed) or
    ``None`` (not a test: code run outside any test). A run's own ``failed`` wins; else a run
    of a test of ``failing`` (the log's failing tests, matched by id: :func:`_same_test`)
    failed and every other test run passed. A record without per-test runs is the failing
    tests' run: ``True``."""
    ids = [
        test_id
        for found in failing
        for test_id in (found.test, found.failure.test_id, *(o.test_id for o in found.others))
        if test_id
    ]
    outcomes: list[bool | None] = []
    for run in record.runs:
        if run.failed is not None:
            outcomes.append(run.failed)
        elif not record.per_test:
            outcomes.append(True)
        elif run.test is None:
            outcomes.append(None)
        else:
            outcomes.append(any(_same_test(run.test, test_id) for test_id in ids))
    return outcomes


@dataclass
class _Unit:
    path: str
    start: int
    end: int
    function: bool
    lines: set[int] = field(default_factory=set)


def _header_lines(repo: Repository, path: str) -> frozenset[int]:
    """The lines of ``path`` that run when a definition is made, not when it is called: the
    decorators and signature of each function and class of a Python file (up to the line
    before its body; a one-line definition keeps its line). Coverage counts a ``def`` line as
    executed at import, so these lines do not show that a test ran the definition. Empty
    for a file that is not parsed Python."""
    source = repo.source(path)
    tree = source.tree if source is not None else None
    if tree is None:
        return frozenset()
    out: set[int] = set()
    # Statements only (a definition is a statement): expressions are not walked.
    blocks: list[list[ast.AST]] = [list(tree.body)]
    while blocks:
        for node in blocks.pop():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.update(range(first, node.body[0].lineno))
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(node, name, None)
                if isinstance(block, list) and block:
                    blocks.append(block)
    return frozenset(out)


def _units(repo: Repository, symbols: SymbolIndex, path: str, lines: Iterable[int]) -> list[_Unit]:
    """The syntactic units of ``path`` holding ``lines``: the innermost function or method
    around each line (tree-sitter definitions, every supported language), else, at module or
    class level, a bounded run of whole statements (Python) or ``RADIUS`` lines either side.
    A definition's header lines (:func:`_header_lines`) give no unit."""
    source = repo.source(path)
    headers = _header_lines(repo, path)
    if source is None or source.line_count == 0:
        return []
    parsed = symbols.parsed(path)
    functions = (
        sorted(
            {(d.start, d.end) for d in parsed.definitions if d.kind == "function"},
            key=lambda span: span[1] - span[0],
        )
        if parsed is not None
        else []
    )
    units: dict[tuple[int, int], _Unit] = {}
    for line in sorted(set(lines) - headers):
        if not 1 <= line <= source.line_count:
            continue
        inner = next(((a, b) for a, b in functions if a <= line <= b), None)
        if inner is not None:
            unit = units.get(inner)
            if unit is None:
                unit = units[inner] = _Unit(path, inner[0], inner[1], True)
            unit.lines.add(line)
            continue
        # Module or class level: the line joins a run of statements it is already in.
        unit = next(
            (u for u in reversed(units.values()) if not u.function and u.start <= line <= u.end), None
        )
        if unit is None:
            if source.tree is not None:
                span = failure_spans(source, line)[0]
            else:
                span = source.clamp(line - RADIUS, line + RADIUS)
            unit = units.get(span)
            if unit is None:
                unit = units[span] = _Unit(path, span[0], span[1], False)
        unit.lines.add(line)
    return list(units.values())


_HEADER_WORDS = ("def ", "async def ", "class ", "@")


def _runs_a_body(repo: Repository, symbols: SymbolIndex, path: str, lines: Iterable[int]) -> bool:
    """Whether one of ``lines`` of ``path`` lies in a function's body (inside a tree-sitter
    function definition, on a line that does not open a definition or hold a decorator):
    without per-test data, a file whose executed lines are all at module or class level only
    ran at import. A file without definitions to tell by (not parsed) counts as running one."""
    source = repo.source(path)
    parsed = symbols.parsed(path)
    if source is None or parsed is None:
        return True
    spans = [(d.start, d.end) for d in parsed.definitions if d.kind == "function"]
    for line in lines:
        if not 1 <= line <= source.line_count:
            continue
        if source.lines[line - 1].lstrip().startswith(_HEADER_WORDS):
            continue
        if any(a <= line <= b for a, b in spans):
            return True
    return False


def _functions(symbols: SymbolIndex, path: str) -> list[tuple[int, int]]:
    """The function definitions of ``path`` as line spans, the shortest first."""
    parsed = symbols.parsed(path)
    if parsed is None:
        return []
    spans = {(d.start, d.end) for d in parsed.definitions if d.kind == "function"}
    return sorted(spans, key=lambda span: (span[1] - span[0], span[0]))


def _function_of(spans: list[tuple[int, int]], def_line: int) -> tuple[int, int] | None:
    """The function whose recorded first line is ``def_line``: the innermost one holding it,
    else (a definition that starts after its decorators) the first starting within a few
    lines below it."""
    inner = next(((a, b) for a, b in spans if a <= def_line <= b), None)
    if inner is not None:
        return inner
    below = [(a, b) for a, b in spans if def_line < a <= def_line + 8]
    return min(below) if below else None


_Node = tuple[str, int, int]


def _call_graph(symbols: SymbolIndex, runs: Sequence[TestRun]) -> dict[_Node, set[_Node]]:
    """The recorded calls of ``runs`` as caller function -> callee functions (path, lines)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    graph: dict[_Node, set[_Node]] = {}
    for run in runs:
        for (caller_path, caller_line), (callee_path, callee_line) in run.edges:
            ends: list[_Node] = []
            for path, line in ((caller_path, caller_line), (callee_path, callee_line)):
                if path not in spans:
                    spans[path] = _functions(symbols, path)
                span = _function_of(spans[path], line)
                if span is None:
                    break
                ends.append((path, *span))
            if len(ends) == 2 and ends[0] != ends[1]:
                graph.setdefault(ends[0], set()).add(ends[1])
    return graph


def _frame_functions(symbols: SymbolIndex, frames: Sequence[ProjectFrame]) -> dict[_Node, int]:
    """The functions around ``frames``, each with the smallest distance of a frame in it."""
    spans: dict[str, list[tuple[int, int]]] = {}
    framed: dict[_Node, int] = {}
    for pf in frames:
        if pf.path not in spans:
            spans[pf.path] = _functions(symbols, pf.path)
        span = next(((a, b) for a, b in spans[pf.path] if a <= pf.line <= b), None)
        if span is not None:
            node = (pf.path, *span)
            framed[node] = min(pf.distance, framed.get(node, pf.distance))
    return framed


def call_distances(
    symbols: SymbolIndex, runs: Sequence[TestRun], frames: Sequence[ProjectFrame]
) -> dict[_Node, float]:
    """Per function ``(path, start, end)`` the failing runs called, down the recorded call
    graph of ``runs`` (:attr:`TestRun.edges`) from the functions around ``frames``: ``1 +
    frame distance + calls``, the smallest over the frames (a frame's own function is not
    in the map). Empty without call data."""
    graph = _call_graph(symbols, runs)
    if not graph:
        return {}
    framed = _frame_functions(symbols, frames)
    seen: dict[_Node, float] = {}
    frontier = sorted((1.0 + distance, node) for node, distance in framed.items())
    while frontier:  # Dijkstra with unit steps: the frontier stays short
        depth, node = frontier.pop(0)
        if seen.get(node, math.inf) <= depth:
            continue
        seen[node] = depth
        frontier.extend((depth + 1, callee) for callee in graph.get(node, ()) if callee not in seen)
        frontier.sort()
    return {node: depth for node, depth in seen.items() if node not in framed}


def called_windows(
    repo: Repository,
    record: ExecutionRecord,
    failing: Sequence[FailingTest],
    frames: Sequence[ProjectFrame],
    symbols: SymbolIndex,
    base_score: float,
    *,
    limit: int = MAX_CALLED,
) -> list[Window]:
    """``reference`` windows of the functions the failing runs of ``record`` called straight
    from a frame's function (one recorded call: the callees that really ran, where the
    static one-hop sources guess), scoring ``base_score + 0.5 / (1 + frame distance)``, best
    first, at most ``limit``; source :data:`CALLED_SOURCE`. Test files' functions are left
    out (helpers of the test, not code under test). Empty without call data."""
    outcomes = run_outcomes(record, failing)
    failed_runs = [run for run, outcome in zip(record.runs, outcomes, strict=True) if outcome is True]
    graph = _call_graph(symbols, failed_runs)
    framed = _frame_functions(symbols, frames)
    depths: dict[_Node, int] = {}
    for node, distance in framed.items():
        for callee in graph.get(node, ()):
            if callee not in framed and not is_test_file(callee[0]):
                depths[callee] = min(distance + 2, depths.get(callee, distance + 2))
    picked = sorted((depth, *node) for node, depth in depths.items())
    windows: list[Window] = []
    for depth, path, start, end in picked:
        source = repo.source(path)
        if source is None or source.line_count == 0:
            continue
        score = round(base_score + 0.5 / depth, 6)
        windows.append(replace(make_window(source, start, end, "reference", score), source=CALLED_SOURCE))
        if len(windows) >= limit:
            break
    return windows


def _overlaps(window: Window, unit: _Unit) -> bool:
    return window.path == unit.path and window.start <= unit.end and unit.start <= window.end


def execution_windows(
    repo: Repository,
    record: ExecutionRecord,
    failing: Sequence[FailingTest],
    frames: Sequence[ProjectFrame],
    symbols: SymbolIndex,
    base_score: float,
    *,
    static: Sequence[Window] = (),
    limit: int = MAX_EXECUTED_UNITS,
    weak: tuple[float, float] | None = None,
) -> list[Window]:
    """The ``failure`` windows of the units the failing runs of ``record`` executed, best
    first, scoring ``base_score + s`` with ``s`` in ``(0, 0.999]`` (see the module).

    With ``weak`` ``(low, high)``, a unit whose suspiciousness ``s`` is below :data:`STRONG`
    (far down the call graph from the failure, not reached by a recorded call, or of a low
    Ochiai) is a ``search`` window scoring ``low + (high - low) * s`` instead, its source
    :data:`WEAK_SOURCE`: that the failing test ran a line is evidence, but no stronger than a
    search hit, and as failure evidence a large pool of such units would push every search
    window out of a budget.

    ``failing`` are the log's failing tests (:func:`run_outcomes`), ``frames`` the failure's
    project frames (closeness without a spectrum), ``static`` the other sources' windows (a
    unit one of them overlaps is closer). At most ``limit`` units, the most suspicious first
    (ties: the failing files first, then path and line). Every window's ``source`` is
    :data:`EXECUTED_SOURCE`; the bounded run inside a long unit names the unit it is part
    of."""
    outcomes = run_outcomes(record, failing)
    failed_runs = [run for run, outcome in zip(record.runs, outcomes, strict=True) if outcome is True]
    passed_runs = [run for run, outcome in zip(record.runs, outcomes, strict=True) if outcome is False]
    if not failed_runs:
        return []
    total_failed = len(failed_runs)
    spectrum = record.per_test and bool(passed_runs)
    failing_files = {pf.path for pf in frames}
    frame_lines = {(pf.path, pf.line): pf.distance for pf in frames}
    calls = {} if spectrum else call_distances(symbols, failed_runs, frames)

    scored: list[tuple[bool, float, int, str, int, _Unit, int]] = []
    paths = sorted({path for run in failed_runs for path in run.lines})
    for path in paths:
        failed_at = _line_counts(failed_runs, path)
        if not failed_at:
            continue
        passed_at = _line_counts(passed_runs, path)
        if not record.per_test and not _runs_a_body(repo, symbols, path, failed_at):
            continue  # one run of every test: a file whose only executed lines ran at import
        for unit in _units(repo, symbols, path, failed_at):
            best_line, best = _most_suspicious(unit, failed_at, passed_at, total_failed, spectrum)
            if not spectrum:
                best *= _closeness(path, unit, frame_lines, calls, failing_files, static)
            holds_frame = any(p == path and unit.start <= ln <= unit.end for p, ln in frame_lines)
            if path in failing_files and is_test_file(path) and not (holds_frame and unit.function):
                # The test-file rule: a failing test file ranks before everything else, and
                # there its other units (helpers, module code) would crowd the code under test.
                continue
            if not unit.function:
                best *= _MODULE_LEVEL
            if is_test_file(path) and not holds_frame:
                best *= _TEST_FILE
            score = round(base_score + max(1e-6, _TOP * best), 6)
            far = weak is not None and best < STRONG
            if weak is not None and far:
                score = round(weak[0] + (weak[1] - weak[0]) * best, 6)
            place = 0 if path in failing_files else 1
            scored.append((far, score, place, path, unit.start, unit, best_line))
    # The failure evidence first (the far units are search windows), each best first.
    scored.sort(key=lambda item: (item[0], -item[1], item[2], item[3], item[4]))
    return _unit_windows(repo, scored[:limit])


def _line_counts(runs: Sequence[TestRun], path: str) -> dict[int, int]:
    """Per line of ``path``, how many of ``runs`` executed it."""
    counts: dict[int, int] = {}
    for run in runs:
        for line in run.lines.get(path, ()):
            counts[line] = counts.get(line, 0) + 1
    return counts


def _most_suspicious(
    unit: _Unit, failed_at: dict[int, int], passed_at: dict[int, int], total_failed: int, spectrum: bool
) -> tuple[int, float]:
    """``(line, suspiciousness)`` of the most suspicious line of ``unit`` (the first of the
    best): Ochiai with a spectrum, else the share of failing runs that executed it."""
    best_line, best = min(unit.lines), -1.0
    for line in sorted(unit.lines):
        f = failed_at.get(line, 0)
        if spectrum:
            value = f / math.sqrt(total_failed * (f + passed_at.get(line, 0)))
        else:
            value = f / total_failed
        if value > best:
            best_line, best = line, value
    return best_line, best


def _closeness(
    path: str,
    unit: _Unit,
    frame_lines: dict[tuple[str, int], int],
    calls: dict[_Node, float],
    failing_files: set[str],
    static: Sequence[Window],
) -> float:
    """How close ``unit`` is to the failure, without a spectrum: by the frames it holds, the
    recorded calls that reach it, the failing files, the other sources' windows."""
    distances = [d for (p, ln), d in frame_lines.items() if p == path and unit.start <= ln <= unit.end]
    called = calls.get((path, unit.start, unit.end))
    if distances:
        closeness = 1.0 / (1 + min(distances))
    elif called is not None:
        closeness = _CALLED / called
    elif path in failing_files:
        closeness = _IN_FAILING_FILE
    elif any(_overlaps(w, unit) for w in static):
        closeness = _STATICALLY_PROPOSED
    else:
        closeness = _OTHER
    if calls and called is None and not distances:
        closeness *= _UNREACHED
    return closeness


def _unit_windows(
    repo: Repository, scored: Sequence[tuple[bool, float, int, str, int, _Unit, int]]
) -> list[Window]:
    """The windows of the ``scored`` units, in order: each unit, and a long one's bounded run
    around its most suspicious line too, each window once."""
    windows: list[Window] = []
    seen: set[tuple[str, int, int]] = set()
    for far, score, _, path, _, unit, line in scored:
        source = repo.source(path)
        if source is None:
            continue
        spans = [(unit.start, unit.end)]
        if unit.end - unit.start + 1 > _UNIT:
            # A long unit: also a bounded run around its most suspicious line, as for a frame.
            inner = failure_spans(source, line) if source.tree is not None else []
            extra = [
                s for s in inner if s != (unit.start, unit.end) and unit.start <= s[0] and s[1] <= unit.end
            ]
            if not extra:
                extra = [(max(unit.start, line - RADIUS), min(unit.end, line + RADIUS))]
            spans.append(extra[-1])
        for i, (start, end) in enumerate(spans):
            window = make_window(source, start, end, "search" if far else "failure", score)
            key = (window.path, window.start, window.end)
            if key in seen:
                continue
            seen.add(key)
            kind = WEAK_SOURCE if far else EXECUTED_SOURCE
            name = kind if i == 0 else f"{kind} (part of lines {unit.start}-{unit.end})"
            windows.append(replace(window, source=name))
    return windows


def demote_unexecuted(
    repo: Repository,
    windows: Sequence[Window],
    record: ExecutionRecord,
    failing: Sequence[FailingTest],
    score: float,
    *,
    keep: Collection[str] = (),
) -> tuple[list[Window], list[Window]]:
    """``windows`` split into those kept and the ``reference`` windows the failing runs of
    ``record`` (or code run outside any test, such as imports) never executed a line of, a
    definition's header lines not counting (:func:`_header_lines`: a ``def`` line runs at
    import), in a file the record measured; the latter become
    ``search`` windows scoring ``score`` (meant to be below every search window: they fill
    what is left of a budget), their ``source`` :data:`NOT_EXECUTED_SOURCE`. A window of a
    file the record did not measure is kept: nothing is known of it. Without a failing run in
    the record every window is kept, and so is a window whose ``source`` is in ``keep`` (a
    definition named on a failing line: the failure may be the call itself, an argument the
    definition does not take, so that its body never ran)."""
    outcomes = run_outcomes(record, failing)
    if True not in outcomes:
        return list(windows), []
    executed: dict[str, set[int]] = {}
    for run, outcome in zip(record.runs, outcomes, strict=True):
        if outcome is not False:  # the failing runs, and code run outside any test (imports)
            for path, lines in run.lines.items():
                executed.setdefault(path, set()).update(lines)
    measured = record.measured | set(executed)
    headers: dict[str, frozenset[int]] = {}
    kept: list[Window] = []
    moved: list[Window] = []
    for window in windows:
        if window.path not in headers:
            headers[window.path] = _header_lines(repo, window.path)
        ran = executed.get(window.path, set()) - headers[window.path]
        if (
            window.reason == "reference"
            and window.source not in keep
            and window.path in measured
            and not any(window.start <= line <= window.end for line in ran)
        ):
            moved.append(replace(window, reason="search", score=score, source=NOT_EXECUTED_SOURCE))
        else:
            kept.append(window)
    return kept, moved
