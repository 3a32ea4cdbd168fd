"""The result's report of missing failure evidence (``BuildResult.missing_critical``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bugcontext._core import Omission

__all__ = ["MissingEvidence"]


@dataclass(frozen=True)
class MissingEvidence:
    """A failing file whose failure evidence was all left out of the context.

    The model is about to answer without the core evidence (its failure windows were too big
    for the budget, say, while smaller references were selected): a planner can ask for smaller
    failure windows, or a larger budget, instead of answering.

    Attributes:
        path: the canonical failing file.
        omitted: the :class:`~bugcontext.Omission` of each of its failure windows (candidates
            from ``path`` with reason ``"failure"``), in rank order: why each was left out.
        withheld: the JSON form (``PolicyOmission.to_dict``) of each failure window the reader
            withheld before the build (a file that is a secret by name, a window that no longer
            matches its file), in order; then ``omitted`` is empty (no window was a candidate).
    """

    path: str
    omitted: tuple[Omission, ...]
    withheld: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"path": str, "omitted": [omission, ...]}``, with ``"withheld":
        [policy omission, ...]`` when the reader withheld the file's failure windows."""
        out: dict[str, Any] = {"path": self.path, "omitted": [o.to_dict() for o in self.omitted]}
        if self.withheld:
            out["withheld"] = [dict(w) for w in self.withheld]
        return out
