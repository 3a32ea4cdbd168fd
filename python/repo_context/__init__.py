"""repo-context: decide what a coding agent's model sees about a bug.

Candidates (windows of code proposed by the failing test, reference analysis and text search)
are ranked, de-duplicated by line range and packed whole into a budget, and every omission is
explained. :func:`build` runs the Rust engine; :mod:`repo_context.reference` is the pure-Python
implementation of the same contract.
"""

from __future__ import annotations

from . import reference
from ._input import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_TOTAL_CHARS
from .builder import RepoContextBuilder, build
from .errors import InvalidCandidateError, InvalidInputError, ResourceLimitError
from .types import BuildInput, BuildResult, Candidate, Omission, Reason

__all__ = [
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_TOTAL_CHARS",
    "BuildInput",
    "BuildResult",
    "Candidate",
    "InvalidCandidateError",
    "InvalidInputError",
    "Omission",
    "Reason",
    "RepoContextBuilder",
    "ResourceLimitError",
    "build",
    "reference",
]
