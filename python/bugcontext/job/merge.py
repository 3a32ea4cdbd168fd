"""Range merging: one candidate per run of overlapping or adjacent windows of a file.

The builder never merges: of two overlapping windows it keeps the better-ranked one and omits
the other as ``overlap``, so the lines only the omitted one held are lost. :class:`RangeMerger`
is an option in front of the builder: it unions the windows of one file that overlap or touch
(1-based closed ranges; ``[1, 10]`` and ``[11, 12]`` are adjacent), re-reads each union once
from the repository, and gives one candidate per union carrying

* the best reason of its parts (``reference`` > ``failure`` > ``search``, the builder's order),
* the best score of its parts (the caller's own value: an ``int`` stays an ``int``),
* its ``provenance``: every part as a :class:`Part` ``(path, start, end, reason, score)``.

Its ``content`` is exactly the union's lines of the file (read through
:class:`bugcontext.job.sources.Repository`, never from the parts' contents). The builder accepts
the merged candidates as they are (it reads the six fields and ignores ``provenance``)::

    merged = RangeMerger(repo).merge(gathered.candidates)
    result = bugcontext.build({"candidates": merged, "budget": 8000, ...})
    for index in result.selected:
        merged[index].provenance   # the windows that item was made of

Merging is idempotent: a merged candidate given back is read through its ``provenance`` (its
parts, not itself), and unions are disjoint and never adjacent, so merging again changes
nothing.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from bugcontext.core.errors import InvalidCandidateError
from bugcontext.core.reference import read_reason, read_score, read_window
from bugcontext.job.sources.files import Repository, SourceFile

__all__ = ["REASON_ORDER", "MergedCandidate", "Part", "RangeMerger", "merge_windows"]

#: The reasons, best first: a merged candidate carries the best reason of its parts.
REASON_ORDER = ("reference", "failure", "search")
_REASON_RANK = {name: rank for rank, name in enumerate(REASON_ORDER)}


@dataclass(frozen=True)
class Part:
    """One window a merged candidate was made of: lines ``start..end`` of ``path`` (canonical),
    with its own ``reason`` and ``score``."""

    path: str
    start: int
    end: int
    reason: str
    score: int | float

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"path", "start", "end", "reason", "score"}``."""
        return {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "reason": self.reason,
            "score": self.score,
        }


@dataclass(frozen=True)
class MergedCandidate:
    """A candidate for the builder made of one or more windows of one file.

    ``content`` is exactly lines ``start..end`` of ``path`` as read from the repository;
    ``reason`` and ``score`` are the best of the parts'; ``provenance`` lists the parts in
    line order (``(start, end)``, then input order).
    """

    path: str
    start: int
    end: int
    content: str
    reason: str
    score: int | float
    provenance: tuple[Part, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the six candidate keys and ``provenance`` (a list of part objects).
        The builder accepts it as a candidate and ignores ``provenance``."""
        return {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "content": self.content,
            "reason": self.reason,
            "score": self.score,
            "provenance": [part.to_dict() for part in self.provenance],
        }


def _part(candidate: object, index: int) -> Part:
    """The candidate's window as a validated :class:`Part`, by the builder's own field rules
    and messages (:mod:`bugcontext.core.reference`); the content is not read: the merger re-reads
    the lines."""
    mapping = isinstance(candidate, Mapping)  # decided once per candidate, as the builders do
    path, start, end = read_window(candidate, index, mapping)
    _, name, _ = read_reason(candidate, index, mapping)
    score, _ = read_score(candidate, index, mapping)
    return Part(path, start, end, name, score)


def _parts(candidate: object, index: int) -> list[Part]:
    """The windows ``candidate`` stands for: its ``provenance`` when it has one (a candidate
    merged before), else the candidate itself."""
    window = _part(candidate, index)
    if isinstance(candidate, Mapping):
        provenance = candidate.get("provenance")
    else:
        provenance = getattr(candidate, "provenance", None)
    if not provenance or isinstance(provenance, (str, bytes, Mapping)):
        return [window]
    parts = [p if isinstance(p, Part) else _part(p, index) for p in provenance]
    if (
        any(part.path != window.path for part in parts)
        or min(part.start for part in parts) != window.start
        or max(part.end for part in parts) != window.end
    ):
        raise InvalidCandidateError(
            "provenance", "must be parts of the candidate's file that span its window", index
        )
    return parts


class RangeMerger:
    """Merge overlapping or adjacent windows of one file into one candidate (see the module
    docstring).

    Args:
        repository: the repository the windows are lines of: a
            :class:`~bugcontext.job.sources.Repository` (its cache is shared) or its folder.
    """

    def __init__(self, repository: Repository | str | PathLike[str]) -> None:
        self.repository = repository if isinstance(repository, Repository) else Repository(Path(repository))

    def __call__(self, candidates: Iterable[object]) -> list[MergedCandidate]:
        """Same as :meth:`merge`."""
        return self.merge(candidates)

    def merge(self, candidates: Iterable[object]) -> list[MergedCandidate]:
        """One :class:`MergedCandidate` per union of overlapping or adjacent windows of a file.

        ``candidates`` are :class:`~bugcontext.Candidate` objects, mappings or objects with
        the six fields (a ``provenance`` field, as merged candidates have, stands for the
        candidate's parts). Unions are listed in the input order of their first part, so ties
        in the builder's ranking fall as they did before merging.

        Raises:
            InvalidCandidateError: a field breaks the builder's rules (naming the candidate's
                input index and the field), or a window is not lines of a readable file of the
                repository (field ``"path"``, or ``"end"`` for a window past the end of the file).
        """
        by_path: dict[str, list[tuple[Part, int]]] = {}
        for index, candidate in enumerate(candidates):
            for part in _parts(candidate, index):
                by_path.setdefault(part.path, []).append((part, index))
        unions: list[tuple[int, MergedCandidate]] = []
        for path, parts in by_path.items():
            parts.sort(key=lambda item: (item[0].start, item[0].end, item[1]))
            runs: list[list[tuple[Part, int]]] = []
            run_end = 0
            for part, index in parts:
                if not runs or part.start > run_end + 1:
                    runs.append([])
                    run_end = part.end
                run_end = max(run_end, part.end)
                runs[-1].append((part, index))
            source = self._source(path, min(index for _, index in parts))
            unions += (self._union(source, run) for run in runs)
        unions.sort(key=operator.itemgetter(0))
        return [merged for _, merged in unions]

    def _source(self, path: str, index: int) -> SourceFile:
        """The file at ``path``, read once through the repository; ``index`` names the first
        candidate of that file in an error."""
        # ``relative`` refuses files outside the repository (symbolic links included), in
        # skipped folders, and missing files.
        inside = self.repository.relative(path) is not None
        source = self.repository.source(path) if inside else None
        if source is None:
            raise InvalidCandidateError("path", "names no readable file of the repository", index)
        if source.refused is not None:
            # The reader's secrets policy: never re-read, never emitted, whatever the priority.
            raise InvalidCandidateError("path", f"is withheld by the reader ({source.refused})", index)
        return source

    @staticmethod
    def _union(source: SourceFile, run: Sequence[tuple[Part, int]]) -> tuple[int, MergedCandidate]:
        """The merged candidate of one run of parts (sorted by line), its lines read once, and
        the input index of its first part."""
        first = min(index for _, index in run)
        start = run[0][0].start
        end = max(part.end for part, _ in run)
        if end > source.line_count:
            where = next(index for part, index in run if part.end > source.line_count)
            raise InvalidCandidateError(
                "end", f"past the end of {source.path} ({source.line_count} lines), got {end}", where
            )
        parts = tuple(part for part, _ in run)
        reason = min((part.reason for part in parts), key=_REASON_RANK.__getitem__)
        score = max((part.score for part in parts), key=float)
        content = source.text(start, end)
        return first, MergedCandidate(source.path, start, end, content, reason, score, parts)


def merge_windows(
    repository: Repository | str | PathLike[str], candidates: Iterable[object]
) -> list[MergedCandidate]:
    """``RangeMerger(repository).merge(candidates)``."""
    return RangeMerger(repository).merge(candidates)
