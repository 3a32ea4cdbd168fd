"""Whole syntactic units for long reference windows, and the import block of a file.

* :func:`split_classes`: a reference window spanning a whole class longer than
  ``2 * RADIUS + 1`` lines is replaced by the windows of its methods (each a whole unit,
  at the class window's score); the class's first ``2 * RADIUS + 1`` lines (its signature,
  docstring and attributes) are a window of their own already. A packer that de-duplicates
  overlapping windows would otherwise drop the whole class as soon as one of its methods
  is selected, and with it every other method. The methods are one hop from the class:
  their weight is ``MEMBER_HOP`` times the class's.
* :func:`import_windows`: the module-level import block of the files the evidence points
  to (a fix that needs a new import changes it): one window from the first to the last
  top-level import statement, at most ``MAX_IMPORT_LINES`` lines.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace

from bugcontext.job.sources.failure import is_test_file, merge_windows
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.symbols import SymbolIndex
from bugcontext.job.sources.window import RADIUS, Window, make_window

__all__ = [
    "MAX_HEADER_FILES",
    "MAX_IMPORT_LINES",
    "MAX_MEMBERS",
    "MEMBER_HOP",
    "import_windows",
    "split_classes",
]

#: The longest import-block window, in lines (from the first import on).
MAX_IMPORT_LINES = 60
#: The weight of a method of a long class relative to the class's (one hop from it).
MEMBER_HOP = 0.5
#: A class with more methods than this stays one window.
MAX_MEMBERS = 12
#: At most this many files get an import-block window.
MAX_HEADER_FILES = 8


def split_classes(
    repo: Repository,
    windows: Sequence[Window],
    index: SymbolIndex,
    base_score: float,
    failing: Collection[str] = (),
    leftover_score: float = 0.0,
) -> tuple[list[Window], list[Window]]:
    """``windows`` with every ``reference`` window that spans exactly a class (or other
    type) definition longer than ``2 * RADIUS + 1`` lines replaced by the windows of the
    functions defined directly in it, in line order, one hop from the class: scoring
    ``base_score + MEMBER_HOP * (score - base_score)``; the other windows unchanged, a
    repeated window (same path and lines) kept once, with its higher score. Best first.

    Returns the reference windows and, second, the leftover windows: a class with more than
    ``MAX_MEMBERS`` methods stays whole, and its methods become ``search`` windows scoring
    ``leftover_score`` (meant to be below every search window: they fill what is left of a
    budget and crowd nothing out). A class in one of the ``failing`` files stays whole: the
    builder ranks a failing file's windows before every later file's, so its methods would
    crowd the other failing files' failure windows out."""
    out: list[Window] = []
    extra: list[Window] = []
    for window in windows:
        members = (
            _members(repo, window, index)
            if window.reason == "reference" and window.path not in failing
            else None
        )
        if members is None:
            out.append(window)
            continue
        if len(members) > MAX_MEMBERS:
            # The class stays whole; its methods only fill what is left of the budget.
            out.append(window)
            extra += [replace(member, reason="search", score=leftover_score) for member in members]
            continue
        score = base_score + MEMBER_HOP * (window.score - base_score)
        out += [replace(member, score=score) for member in members]
    return merge_windows(out), extra


def _members(repo: Repository, window: Window, index: SymbolIndex) -> list[Window] | None:
    if window.end - window.start + 1 <= 2 * RADIUS + 1:
        return None
    parsed = index.parsed(window.path)
    source = repo.source(window.path)
    if parsed is None or source is None:
        return None
    classes = [
        d
        for d in parsed.definitions
        if d.kind in ("class", "type") and (d.start, d.end) == (window.start, window.end)
    ]
    if not classes:
        return None
    cls = classes[0]
    methods = sorted(
        {
            (d.start, d.end)
            for d in parsed.definitions
            if d.kind == "function" and d.container == cls.name and cls.start < d.start and d.end <= cls.end
        }
    )
    # Only the outermost functions (a nested function is inside its method's window).
    outer = [m for m in methods if not any(o != m and o[0] <= m[0] and m[1] <= o[1] for o in methods)]
    if not outer:
        return None
    return [make_window(source, start, end, "reference", window.score) for start, end in outer]


def import_windows(repo: Repository, paths: Iterable[str], index: SymbolIndex, score: float) -> list[Window]:
    """``reference`` windows of the module-level import block of each of ``paths`` (test
    files left out; at most :data:`MAX_HEADER_FILES` files, in the order given), scoring
    ``score``: from the first top-level import statement to the end of the last one, at
    most :data:`MAX_IMPORT_LINES` lines."""
    out: list[Window] = []
    done: set[str] = set()
    for path in paths:
        if len(done) >= MAX_HEADER_FILES:
            break
        if path in done or is_test_file(path):
            continue
        done.add(path)
        parsed = index.parsed(path)
        source = repo.source(path)
        if parsed is None or source is None or source.line_count == 0:
            continue
        lines = [
            imp.line
            for imp in parsed.imports
            if parsed.definition_at(imp.line, ("function", "class")) is None
        ]
        if not lines:
            continue
        first, last = min(lines), max(lines)
        statement = parsed.statement_at(last)
        if statement is not None:
            last = max(last, statement.end_point[0] + 1)
        last = min(last, first + MAX_IMPORT_LINES - 1)
        out.append(make_window(source, first, last, "reference", score))
    return out
