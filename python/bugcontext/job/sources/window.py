"""The candidate windows the sources produce."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bugcontext.job.sources.files import SourceFile

__all__ = ["RADIUS", "Reason", "Window", "make_window"]

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
