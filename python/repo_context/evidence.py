"""The result's report of missing failure evidence (``BuildResult.missing_critical``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._core import Omission

__all__ = ["MissingEvidence"]


@dataclass(frozen=True)
class MissingEvidence:
    """A failing file whose failure evidence was all left out of the context.

    The model is about to answer without the core evidence (its failure windows were too big
    for the budget, say, while smaller references were selected): a planner can ask for smaller
    failure windows, or a larger budget, instead of answering.

    Attributes:
        path: the canonical failing file.
        omitted: the :class:`~repo_context.Omission` of each of its failure windows (candidates
            from ``path`` with reason ``"failure"``), in rank order: why each was left out.
    """

    path: str
    omitted: tuple[Omission, ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"path": str, "omitted": [omission, ...]}``."""
        return {"path": self.path, "omitted": [o.to_dict() for o in self.omitted]}
