"""The candidate windows the sources produce."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from bugcontext.job.sources.files import Repository, SourceFile

__all__ = ["RADIUS", "Reason", "Window", "make_window", "span_windows"]

Reason = Literal["failure", "reference", "search"]

#: Lines kept on each side of a line of interest when a whole unit is too long to be the
#: only window: a bounded window spans at most ``2 * RADIUS + 1`` lines.
RADIUS = 10


@dataclass(frozen=True)
class Window:
    """A candidate for the builder: lines ``start..end`` (1-based, closed) of ``path``.

    ``path`` is repository-relative with ``/`` separators; ``content`` is exactly the
    text of those lines, line endings kept; ``reason`` names the source; ``score`` orders
    windows of one source (higher first). Accepted as-is by ``bugcontext.build``.
    ``clamped_from`` is the end the source asked for when it was past the end of the file
    and the window was clamped to the last line (``None`` otherwise; not compared).
    ``source`` names the source that proposed it (``"failure"``, ``"reference"``,
    ``"search"``, ``"issue"``, ``"members"``; set by :func:`~.gather.gather`, ``None`` before;
    not compared): the candidate's ``source_id`` in :meth:`bugcontext.Workspace.context`.
    """

    path: str
    start: int
    end: int
    content: str
    reason: Reason
    score: float
    clamped_from: int | None = field(default=None, compare=False)
    source: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        """The JSON form of the candidate (the keys of the build input)."""
        return {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "content": self.content,
            "reason": self.reason,
            "score": self.score,
        }


def make_window(source: SourceFile, start: int, end: int, reason: Reason, score: float) -> Window:
    """The window of lines ``start..end`` of ``source``, read with
    :meth:`SourceFile.window`: ``start`` clipped to the file, an ``end`` past the last line
    clamped to it and recorded in ``clamped_from``. Raises ``ValueError`` for an empty file."""
    start = max(1, min(start, source.line_count))
    content, last = source.window(start, max(start, end))
    return Window(source.path, start, last, content, reason, score, end if end > last else None)


class _Span(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def weight(self) -> float: ...


_S = TypeVar("_S", bound=_Span)


def span_windows(repo: Repository, spans: Iterable[_S], base_score: float) -> Iterator[tuple[_S, Window]]:
    """The ``reference`` windows of evidence ``spans`` (lines ``start..end`` of ``path`` of
    weight ``weight``), in order, each with its span: the span's whole lines scoring
    ``base_score + weight``, and for a span longer than ``2 * RADIUS + 1`` lines also its first
    ``2 * RADIUS + 1`` lines (signature, docstring, class attributes) at the same score. A
    window identical to an earlier one is not repeated; a span of a file the reader does not
    read (or an empty one) gives none."""
    seen: set[tuple[str, int, int]] = set()
    for span in spans:
        source = repo.source(span.path)
        if source is None or source.line_count == 0:
            continue
        bounds = [(span.start, span.end)]
        if span.end - span.start + 1 > 2 * RADIUS + 1:
            bounds.append((span.start, span.start + 2 * RADIUS))
        for start, end in bounds:
            window = make_window(source, start, end, "reference", base_score + span.weight)
            key = (window.path, window.start, window.end)
            if key not in seen:
                seen.add(key)
                yield span, window
