"""The data types of a build, shared by both engines.

``Candidate``, ``BuildInput``, ``BuildResult`` and ``Omission`` are defined once, in the Rust
extension (immutable, compared by value, picklable), so that the native engine can create them
cheaply and the reference returns the very same types. ``Reason`` names the three reasons.
"""

from __future__ import annotations

from enum import Enum

from bugcontext._core import Block, BuildInput, BuildResult, Candidate, Omission, TokenCounter
from bugcontext.core.cost import Cost
from bugcontext.core.evidence import MissingEvidence

__all__ = [
    "Block",
    "BuildInput",
    "BuildResult",
    "Candidate",
    "Cost",
    "MissingEvidence",
    "Omission",
    "Reason",
    "TokenCounter",
]


class Reason(str, Enum):
    """Why a candidate was proposed; a member equals its lowercase value (``Reason.SEARCH ==
    "search"``) and is accepted wherever the string is.

    Rank order: ``reference`` before ``failure`` before ``search`` (after the failure file).
    """

    FAILURE = "failure"
    REFERENCE = "reference"
    SEARCH = "search"

    def __str__(self) -> str:
        return self.value
