"""Candidates one hop further from the failing frames: callees, the class's state, sibling calls.

A fix often lies one step away from the traceback: in a method of the failing method's class,
in a helper the failing function calls, at another call of the function called on the
failing line (the fix touches every call of one pattern), or in the constructor that set
the bad state. From the function around each project frame (test files left out; at most
``MAX_FRAMES`` frames, deepest first), with tree-sitter (:mod:`.symbols`, every analysed
language), this module finds:

* **callees**: the functions and methods the failing function calls that are defined in the
  repository, resolved through scopes, imports and ``self.``/``cls.`` on the enclosing class
  (:meth:`~.symbols.SymbolIndex.resolve`); a class that is called stands for its
  constructor; weight ``CALLEE_HOP``;
* **state**: the enclosing class's constructor (``__init__``, ``constructor``, ``new``) and
  the methods that assign an attribute the failing line reads (``self.x = ...``); weight
  ``STATE_HOP``;
* **siblings**: the other calls of a function called on the failing line, in the same file
  first (``SIBLING_HOP``), then in the rest of the repository (``SIBLING_HOP / 2`` times
  the import-graph proximity), at most ``MAX_SIBLINGS``: each the whole function the call is in.

Each weight is multiplied by ``1 / (1 + distance)`` for a frame ``distance`` frames above the
deepest and shared among the definitions a name resolves to, so the scores fall off with the
hops and the frames (one hop is at most half the weight of a name on the failing line). A
window is a whole unit; a unit longer than ``2 * RADIUS + 1`` lines also gets a window of its
first ``2 * RADIUS + 1`` lines (its signature). Units around a frame are failure windows
already and are left out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from bugcontext.job._deadline import check as check_deadline
from bugcontext.job.sources.failure import ProjectFrame, is_test_file
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.symbols import Definition, ParsedFile, Reference, SymbolIndex
from bugcontext.job.sources.window import Window, span_windows

__all__ = [
    "CALLEE_HOP",
    "KINDS",
    "MAX_FRAMES",
    "MAX_HOP_WINDOWS",
    "MAX_SIBLINGS",
    "SIBLING_HOP",
    "STATE_HOP",
    "HopEvidence",
    "hop_evidence",
    "hop_windows",
]

#: Weight of a function the failing function calls.
CALLEE_HOP = 0.5
#: Weight of the enclosing class's constructor and of a method assigning an attribute the
#: failing line reads.
STATE_HOP = 0.4
#: Weight of another call, in the same file, of a function called on the failing line.
SIBLING_HOP = 0.3
#: At most this many frames are followed, deepest first.
MAX_FRAMES = 4
#: At most this many sibling call sites per called function.
MAX_SIBLINGS = 6
#: At most this many hop windows in all (before signature windows are added).
MAX_HOP_WINDOWS = 24

#: The kinds of hop evidence.
KINDS = ("callee", "state", "sibling")
#: The ``source`` (the candidate's ``source_id``) of a hop window, by its kind of evidence.
HOP_SOURCES = {
    "callee": "reference: one hop further, called by a definition the failure uses",
    "state": "reference: one hop further, the state of a failing method's class",
    "sibling": "reference: one hop further, a call next to the failing line",
}

_CONSTRUCTORS = ("__init__", "__new__", "__post_init__", "constructor", "new")


@dataclass(frozen=True)
class HopEvidence:
    """Lines ``start..end`` of ``path`` deserve a window of weight ``weight`` in ``(0, 1]``;
    ``why`` is ``callee``, ``state`` or ``sibling`` and ``name`` the symbol that led there."""

    path: str
    start: int
    end: int
    weight: float
    why: str
    name: str


class _Collector:
    def __init__(self, frames: Sequence[ProjectFrame]) -> None:
        self.frame_lines = [(pf.path, pf.line) for pf in frames]
        self.best: dict[tuple[str, int, int], HopEvidence] = {}
        self.order: dict[tuple[str, int, int], int] = {}

    def add(self, path: str, start: int, end: int, weight: float, why: str, name: str) -> None:
        if weight <= 0.0 or is_test_file(path):
            return
        if any(p == path and start <= line <= end for p, line in self.frame_lines):
            return  # a unit around a frame: failure evidence already
        key = (path, start, end)
        current = self.best.get(key)
        if current is None or weight > current.weight:
            self.best[key] = HopEvidence(path, start, end, min(weight, 1.0), why, name)
        self.order.setdefault(key, len(self.order))

    def ranked(self) -> list[HopEvidence]:
        keys = sorted(self.best, key=lambda k: (-self.best[k].weight, self.order[k]))
        return [self.best[k] for k in keys]


def _constructor(index: SymbolIndex, cls: Definition) -> Definition | None:
    parsed = index.parsed(cls.path)
    if parsed is None:
        return None
    for name in _CONSTRUCTORS:
        for d in parsed.defined(name):
            if d.container == cls.name and cls.start <= d.start <= cls.end:
                return d
    return None


def _class_of(parsed: ParsedFile, function: Definition) -> Definition | None:
    if function.container is None:
        return None
    for d in parsed.defined(function.container):
        if d.kind in ("class", "type") and d.start <= function.start <= d.end:
            return d
    return None


def hop_evidence(
    repo: Repository,
    frames: Sequence[ProjectFrame],
    index: SymbolIndex | None = None,
    *,
    kinds: Collection[str] = KINDS,
) -> list[HopEvidence]:
    """The callees, state and sibling call sites of the failing frames' functions,
    strongest first (see the module docstring). ``frames`` are deepest first; ``kinds``
    the kinds of :data:`KINDS` to find."""
    index = index if index is not None else SymbolIndex(repo)
    collected = _Collector(frames)
    followed = [pf for pf in frames if not is_test_file(pf.path)][:MAX_FRAMES]
    for pf in followed:
        check_deadline()
        parsed = index.parsed(pf.path)
        function = parsed.definition_at(pf.line) if parsed is not None else None
        if parsed is None or function is None:
            continue
        near = 1.0 / (1.0 + pf.distance)
        if "callee" in kinds:
            _callees(index, parsed, function, near, collected)
        if "state" in kinds:
            _state(index, parsed, function, pf.line, near, collected)
        if "sibling" in kinds:
            _siblings(index, parsed, function, pf.line, near, collected)
    return collected.ranked()


def _callees(
    index: SymbolIndex, parsed: ParsedFile, function: Definition, near: float, collected: _Collector
) -> None:
    for reference in parsed.unit_reads(function.start, function.end):
        check_deadline()
        if reference.kind != "call":
            continue
        for definition, share in index.resolve(parsed.path, reference):
            if definition == function:
                continue
            if definition.kind == "class":
                definition = _constructor(index, definition) or definition
            if definition.kind != "function":
                continue
            weight = CALLEE_HOP * near * share
            collected.add(definition.path, definition.start, definition.end, weight, "callee", reference.name)


def _state(
    index: SymbolIndex,
    parsed: ParsedFile,
    function: Definition,
    line: int,
    near: float,
    collected: _Collector,
) -> None:
    cls = _class_of(parsed, function)
    if cls is None:
        return
    init = _constructor(index, cls)
    if init is not None and init != function:
        collected.add(init.path, init.start, init.end, STATE_HOP * near, "state", init.name)
    read = {
        r.name
        for r, _ in parsed.line_reads(line)
        if r.member and (r.qualifier or "").split(".")[0] in ("self", "this", "cls")
    }
    if not read:
        return
    pattern = re.compile(
        r"\b(?:self|this|cls)\.(" + "|".join(map(re.escape, sorted(read))) + r")\s*(?:[-+*/|&]?=)(?!=)"
    )
    text = parsed.source.lines
    for number in range(cls.start, min(cls.end, len(text)) + 1):
        check_deadline()
        match = pattern.search(text[number - 1])
        if match is None:
            continue
        method = parsed.definition_at(number)
        if method is None or method == function or method.container != cls.name:
            continue
        collected.add(method.path, method.start, method.end, STATE_HOP * near, "state", match.group(1))


def _siblings(
    index: SymbolIndex,
    parsed: ParsedFile,
    function: Definition,
    line: int,
    near: float,
    collected: _Collector,
) -> None:
    for reference, read_weight in parsed.line_reads(line):
        check_deadline()
        if reference.kind != "call" or read_weight < 1.0:
            continue
        targets = {d for d, share in index.resolve(parsed.path, reference) if share >= 0.5}
        if not targets:
            _pattern_siblings(parsed, function, reference, near, collected)
            continue
        same: list[tuple[str, int, int]] = []
        other: list[tuple[float, str, int, int]] = []
        for call in index.call_sites(reference.name):
            check_deadline()
            site = call.reference
            if call.path == parsed.path and site.line == reference.line:
                continue
            if call.path == parsed.path and function.start <= site.line <= function.end:
                continue
            if not targets & {d for d, share in index.resolve(call.path, site) if share >= 0.5}:
                continue
            summary = index.summary(call.path)
            unit = summary.definition_at(site.line) if summary is not None else None
            if unit is None:
                continue
            if call.path == parsed.path:
                same.append((unit.path, unit.start, unit.end))
            else:
                proximity = index.proximity(parsed.path, unit.path)
                other.append((proximity, unit.path, unit.start, unit.end))
        kept = list(dict.fromkeys(same))[:MAX_SIBLINGS]
        for path, start, end in kept:
            collected.add(path, start, end, SIBLING_HOP * near, "sibling", reference.name)
        room = MAX_SIBLINGS - len(kept)
        other.sort(key=lambda s: (-s[0], s[1], s[2]))
        for proximity, path, start, end in list(dict.fromkeys(other))[: max(0, room)]:
            collected.add(path, start, end, SIBLING_HOP / 2 * proximity * near, "sibling", reference.name)


def _pattern_siblings(
    parsed: ParsedFile, function: Definition, reference: Reference, near: float, collected: _Collector
) -> None:
    """A call on the failing line to a function defined outside the repository
    (``re.compile(...)``): the other calls written the same way (same name, same
    qualifier) in the same file, at half the sibling weight."""
    if not reference.member or not reference.qualifier:
        return
    kept: list[tuple[str, int, int]] = []
    for leaf in parsed.identifiers_named(reference.name):
        check_deadline()
        site = parsed._classify(leaf, set())
        if site is None or site.kind != "call" or site.qualifier != reference.qualifier:
            continue
        if function.start <= site.line <= function.end:
            continue
        unit = parsed.definition_at(site.line)
        if unit is not None and (unit.path, unit.start, unit.end) not in kept:
            kept.append((unit.path, unit.start, unit.end))
    for path, start, end in kept[:MAX_SIBLINGS]:
        collected.add(path, start, end, SIBLING_HOP / 2 * near, "sibling", reference.name)


def hop_windows(
    repo: Repository,
    frames: Sequence[ProjectFrame],
    index: SymbolIndex | None = None,
    base_score: float = 0.0,
    *,
    max_windows: int = MAX_HOP_WINDOWS,
    kinds: Collection[str] = KINDS,
) -> list[Window]:
    """``reference`` windows of :func:`hop_evidence`, best first, scoring
    ``base_score + weight``: each unit whole, a unit longer than ``2 * RADIUS + 1`` lines
    also as a window of its first ``2 * RADIUS + 1`` lines; at most ``max_windows`` units."""
    evidence = hop_evidence(repo, frames, index, kinds=kinds)[:max_windows]
    spans = span_windows(repo, evidence, base_score)
    return [replace(window, source=HOP_SOURCES[found.why]) for found, window in spans]
