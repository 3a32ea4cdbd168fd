"""Reference windows: the definitions and call sites a failure's code points to.

Symbols are found with tree-sitter (:mod:`.symbols`) in Python, JavaScript, TypeScript,
Go, Rust and Java files. Five kinds of evidence give a definition a weight ``w`` in
``(0, 1]``:

* **failing lines**: the names read by the statement at each frame's line (its header
  for a compound statement), ``1 / (1 + distance)`` for a frame ``distance`` frames above
  the deepest; a local variable read there is not looked up itself, the names read by its
  assignments (at or before the line) are, at half weight (``actual = f(x)`` followed by a
  failing ``assert actual == ...`` leads to ``f``);
* **callees**: the names read inside a function used on the deepest frame's line,
  ``CALLEE_WEIGHT`` times that function's weight (one step down the call graph);
* **test → implementation**: what the failing test function reads, calls and imports
  (``TEST_WEIGHT``);
* **callers** of the failing function (the one around the deepest frame, when it is not
  the test): the function around each call site that resolves (mainly) to it,
  ``CALLER_WEIGHT`` times the caller's import-graph proximity, shared among at most
  ``MAX_CALLERS`` callers;
* **import graph** of the failing file: the definitions the failing function uses through
  the imports of its file (distance 1), those these use through the imports of theirs
  (distance 2), ... up to ``IMPORT_TIER_DEPTH``: ``IMPORT_WEIGHT / d`` at distance ``d``,
  at most ``MAX_IMPORT_WINDOWS`` of them, the most used first.

A name is resolved through scopes and imports first (:meth:`SymbolIndex.resolve`); only an
unresolved name is looked up across the repository, each candidate weighted by its
import-graph proximity (:meth:`SymbolIndex.proximity`: ``1 / (1 + d / 2)``), so scores fall
off with the distance in the import graph. Evidence is shared among the candidates of a name, and a
definition keeps its strongest evidence. A window is a whole definition (a caller window
the whole calling function) with exactly the file's lines as content; a long one also
gets a bounded window of its first ``2 * RADIUS + 1`` lines. Functions around a traceback
frame are failure windows already and are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bugcontext.core.composer import CALLER_SOURCE
from bugcontext.job._deadline import check as check_deadline
from bugcontext.job.sources.failure import ProjectFrame
from bugcontext.job.sources.files import Repository, SourceFile
from bugcontext.job.sources.languages import language_for, load
from bugcontext.job.sources.symbols import MAX_DEFINITIONS, Definition, ParsedFile, SymbolIndex
from bugcontext.job.sources.window import RADIUS, Window, span_windows

__all__ = [
    "CALLEE_WEIGHT",
    "CALLER_WEIGHT",
    "EVIDENCE_SOURCES",
    "IMPORT_TIER_DEPTH",
    "IMPORT_WEIGHT",
    "MAX_CALLERS",
    "MAX_DEFINITIONS",
    "MAX_IMPORT_WINDOWS",
    "MAX_WINDOWS",
    "TEST_WEIGHT",
    "DefinitionIndex",
    "Evidence",
    "names_on_line",
    "reference_evidence",
    "reference_windows",
]

_WORD = re.compile(r"[A-Za-z_$][\w$]*")

#: Weight of a name read inside a function that is used on the deepest frame's line,
#: relative to that function's own weight.
CALLEE_WEIGHT = 0.25

#: Weight of a name the failing test function reads (test → implementation edges).
TEST_WEIGHT = 0.5

#: Weight shared among the callers of the failing function.
CALLER_WEIGHT = 0.3

#: Weight of a definition the failing function uses through an import of its file; it is
#: divided by the import distance (2 for what such a definition imports and uses, ...).
IMPORT_WEIGHT = 0.2

#: How many imports deep the import-graph evidence goes from the failing function.
IMPORT_TIER_DEPTH = 2

#: At most this many definitions come from the import graph alone.
MAX_IMPORT_WINDOWS = 6

#: At most this many callers of the failing function are kept (the nearest ones in the
#: import graph).
MAX_CALLERS = 8

#: At most this many reference windows are produced, the best first.
MAX_WINDOWS = 30

#: The ``source`` (the candidate's ``source_id``) of a reference window, by the kind of its
#: strongest evidence (:attr:`Evidence.why`): what the window is to the failure.
EVIDENCE_SOURCES = {
    "line": "reference: definition read on a failing line",
    "callee": "reference: definition used by a failing function",
    "test": "reference: definition the failing test uses",
    "caller": CALLER_SOURCE,
    "import": "reference: definition imported by the failing code",
}

#: The old name of the index the windows are found with.
DefinitionIndex = SymbolIndex


@dataclass(frozen=True)
class Evidence:
    """Lines ``start..end`` of ``path`` deserve a reference window of weight ``weight``
    (in ``(0, 1]``); ``why`` says which evidence gave it (``line``, ``callee``, ``test``,
    ``caller`` or ``import``) and ``name`` the symbol."""

    path: str
    start: int
    end: int
    weight: float
    why: str
    name: str


def names_on_line(source: SourceFile, line: int) -> dict[str, float]:
    """The names read on ``line`` of ``source`` with a weight: 1.0 for names read by the
    statement at the line, 0.5 for names read by the assignments of a local variable read
    there. Local variables, ``self``/``cls`` among them, and dunder names are left out.
    Empty if the file's language is not analysed."""
    spec = language_for(source.path)
    loaded = load(spec.name) if spec is not None else None
    if loaded is None:
        return {}
    weights: dict[str, float] = {}
    for reference, weight in ParsedFile(source, loaded).line_reads(line):
        weights[reference.name] = max(weights.get(reference.name, 0.0), weight)
    return weights


def _test_name(name: str | None) -> str | None:
    """The function name in a pytest report header: ``TestX.test_y[1-a.b]`` → ``test_y``."""
    if not name:
        return None
    name = name.split("[", 1)[0].strip()
    name = re.split(r"::|\.|\s", name)[-1]
    return name or None


def _is_test_path(path: str) -> bool:
    base = path.rsplit("/", 1)[-1]
    return bool(
        re.match(r"test_|tests?\.", base)
        or re.search(r"(_test|_tests|Test|Tests|\.test|\.spec)\.[A-Za-z]+$", base)
        or re.search(r"(^|/)(tests?|__tests__|spec)/", path)
    )


class _Collector:
    def __init__(self, frames: Sequence[ProjectFrame]) -> None:
        self.best: dict[tuple[str, int, int], Evidence] = {}
        self.order: dict[tuple[str, int, int], int] = {}
        self.frame_lines = [(pf.path, pf.line) for pf in frames]

    def covers_frame(self, path: str, start: int, end: int) -> bool:
        return any(p == path and start <= line <= end for p, line in self.frame_lines)

    def add(self, path: str, start: int, end: int, weight: float, why: str, name: str) -> None:
        if weight <= 0.0:
            return
        key = (path, start, end)
        weight = min(weight, 1.0)
        current = self.best.get(key)
        if current is None or weight > current.weight:
            self.best[key] = Evidence(path, start, end, weight, why, name)
        self.order.setdefault(key, len(self.order))

    def definition(self, definition: Definition, weight: float, why: str) -> None:
        # A function around a frame, or a definition local to one, is in a failure window.
        if definition.kind == "function" and self.covers_frame(
            definition.path, definition.start, definition.end
        ):
            return
        if definition.scope is not None and self.covers_frame(definition.path, *definition.scope):
            return
        self.add(definition.path, definition.start, definition.end, weight, why, definition.name)

    def ranked(self) -> list[Evidence]:
        keys = sorted(self.best, key=lambda k: (-self.best[k].weight, self.order[k]))
        return [self.best[k] for k in keys]


def reference_evidence(
    repo: Repository,
    frames: Sequence[ProjectFrame],
    index: SymbolIndex | None = None,
    *,
    test_name: str | None = None,
) -> list[Evidence]:
    """The definitions and callers the failure points to, strongest first (see the module
    docstring). ``frames`` are the failure's project frames, deepest first (as
    :func:`~.failure.project_frames` gives them); ``test_name`` is the failing test's
    report name (``TestX.test_y[param]``), which picks the test function among them."""
    index = index if index is not None else SymbolIndex(repo)
    collected = _Collector(frames)

    # Failing lines, and one step down the call graph from the deepest ones.
    called: dict[Definition, float] = {}
    for pf in frames:
        check_deadline()
        parsed = index.parsed(pf.path)
        if parsed is None:
            continue
        for reference, weight in parsed.line_reads(pf.line):
            check_deadline()
            share_weight = weight / (1 + pf.distance)
            for definition, share in index.resolve(pf.path, reference):
                collected.definition(definition, share_weight * share, "line")
                if pf.distance == 0 and definition.kind == "function":
                    called[definition] = max(called.get(definition, 0.0), share_weight * share)
    for function, weight in called.items():
        check_deadline()
        parsed = index.parsed(function.path)
        if parsed is None:
            continue
        for reference in parsed.unit_reads(function.start, function.end):
            check_deadline()
            for definition, share in index.resolve(function.path, reference):
                if definition != function:
                    collected.definition(definition, CALLEE_WEIGHT * weight * share, "callee")

    # The failing test function: what it reads, calls and imports.
    test = _find_test(index, frames, _test_name(test_name))
    if test is not None:
        parsed, (start, end) = test
        for reference in parsed.unit_reads(start, end):
            check_deadline()
            for definition, share in index.resolve(parsed.path, reference):
                collected.definition(definition, TEST_WEIGHT * share, "test")

    # Callers of the failing function, unless it is the test itself.
    if frames:
        deepest = frames[0]
        parsed = index.parsed(deepest.path)
        failing = parsed.definition_at(deepest.line) if parsed is not None else None
        is_test = (
            test is not None and test[0].path == deepest.path and test[1][0] <= deepest.line <= test[1][1]
        )
        if failing is not None and not is_test:
            _callers(index, failing, collected)

    # The import graph around the failing function, falling off with the distance.
    if frames:
        _imports(index, frames[0], collected)
    return collected.ranked()


def _find_test(
    index: SymbolIndex, frames: Sequence[ProjectFrame], name: str | None
) -> tuple[ParsedFile, tuple[int, int]] | None:
    """The failing test function: among the frames of the exception the test saw, the
    outermost one whose function is named ``name``, else the outermost frame in a test
    file (a ``test_*``/``*_test``/``*.test.*`` file or one under ``tests/``); as its file
    and the lines of the function around the frame (for an anonymous function, the
    statement it is written in: ``it("works", () => {...})``)."""
    if not frames:
        return None
    segment = frames[0].frame.segment
    outermost_first = list(reversed([f for f in frames if f.frame.segment == segment]))
    if name is not None:
        for pf in outermost_first:
            parsed = index.parsed(pf.path)
            definition = parsed.definition_at(pf.line) if parsed is not None else None
            if parsed is not None and definition is not None and definition.name == name:
                return parsed, (definition.start, definition.end)
    for pf in outermost_first:
        parsed = index.parsed(pf.path)
        if parsed is not None and _is_test_path(pf.path):
            unit = parsed.unit_at(pf.line)
            if unit is not None:
                return parsed, unit
    return None


def _imports(index: SymbolIndex, deepest: ProjectFrame, collected: _Collector) -> None:
    """The import graph around the failing function: the definitions it uses through an
    import of its file (distance 1), those these definitions use through imports of their
    files (distance 2), ... up to ``IMPORT_TIER_DEPTH``; the most used first."""
    parsed = index.parsed(deepest.path)
    unit = parsed.unit_at(deepest.line) if parsed is not None else None
    if parsed is None or unit is None:
        return
    level: list[tuple[ParsedFile, tuple[int, int]]] = [(parsed, unit)]
    kept = 0
    seen: set[Definition] = set()
    for distance in range(1, IMPORT_TIER_DEPTH + 1):
        uses: Counter[Definition] = Counter()
        for source, (start, end) in level:
            imported = {imp.local for imp in source.imports}
            for reference in source.unit_reads(start, end):
                check_deadline()
                if reference.member or reference.name not in imported:
                    continue
                for definition, _ in index.resolve(source.path, reference):
                    if definition.path != source.path and definition not in seen:
                        uses[definition] += 1
        found = sorted(uses, key=lambda d: (-uses[d], d.path, d.start))
        seen.update(found)
        level = []
        for definition in found:
            if kept >= MAX_IMPORT_WINDOWS:
                return
            if (definition.path, definition.start, definition.end) not in collected.best:
                kept += 1
            collected.definition(definition, IMPORT_WEIGHT / distance, "import")
            target = index.parsed(definition.path)
            if target is not None:
                level.append((target, (definition.start, definition.end)))


def _callers(index: SymbolIndex, failing: Definition, collected: _Collector) -> None:
    sites: list[tuple[float, str, int, int]] = []
    seen: set[tuple[str, int, int]] = set()
    for site in index.call_sites(failing.name):
        check_deadline()
        reference = site.reference
        if site.path == failing.path and failing.start <= reference.line <= failing.end:
            continue
        # Only a call that resolves mainly to the failing function (a method name many
        # classes define is not enough).
        if dict(index.resolve(site.path, reference)).get(failing, 0.0) < 0.5:
            continue
        unit = site.unit
        if unit is None:
            unit = (max(1, reference.line - RADIUS), min(site.line_count, reference.line + RADIUS))
        key = (site.path, *unit)
        if key in seen or collected.covers_frame(*key):
            continue
        seen.add(key)
        sites.append((index.proximity(site.path, failing.path), *key))
    sites.sort(key=lambda s: (-s[0], s[1], s[2]))
    sites = sites[:MAX_CALLERS]
    for proximity, path, start, end in sites:
        collected.add(path, start, end, CALLER_WEIGHT * proximity / len(sites), "caller", failing.name)


def reference_windows(
    repo: Repository,
    frames: Sequence[ProjectFrame],
    index: SymbolIndex | None = None,
    base_score: float = 0.0,
    *,
    test_name: str | None = None,
    max_windows: int = MAX_WINDOWS,
) -> list[Window]:
    """``reference`` windows for a failure, best first: each :func:`reference_evidence`
    span as a window of its whole lines scoring ``base_score + weight`` (so in
    ``(base_score, base_score + 1]``); a span longer than ``2 * RADIUS + 1`` lines also gets
    a window of its first ``2 * RADIUS + 1`` lines (signature, docstring, class attributes)
    at the same score. At most ``max_windows`` windows; a window identical to an earlier one
    is not repeated. Each window's ``source`` names its evidence (:data:`EVIDENCE_SOURCES`:
    a caller is a caller, not a definition)."""
    windows: list[Window] = []
    for evidence, window in span_windows(
        repo, reference_evidence(repo, frames, index, test_name=test_name), base_score
    ):
        windows.append(replace(window, source=EVIDENCE_SOURCES.get(evidence.why)))
        if len(windows) >= max_windows:
            break
    return windows[:max_windows]
