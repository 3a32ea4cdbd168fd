"""repo-context: decide what a coding agent's model sees about a bug.

Candidates (windows of code proposed by the failing test, reference analysis and text search)
are ranked, de-duplicated by line range and packed whole into a budget, and every omission is
explained, in characters or exact tokens, of the content or of the rendered prompt section.
:func:`build` runs the Rust engine; :mod:`repo_context.reference` is the pure-Python
implementation of the same contract; :func:`render` composes the prompt section.
"""

from . import reference
from ._input import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_TOTAL_CHARS
from .builder import RepoContextBuilder, build, cache_key
from .composer import render
from .digest import POLICY_VERSION
from .errors import InvalidCandidateError, InvalidInputError, ResourceLimitError
from .types import (
    Block,
    BuildInput,
    BuildResult,
    Candidate,
    Cost,
    MissingEvidence,
    Omission,
    Reason,
    TokenCounter,
)

__all__ = [
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_TOTAL_CHARS",
    "POLICY_VERSION",
    "Block",
    "BuildInput",
    "BuildResult",
    "Candidate",
    "Cost",
    "InvalidCandidateError",
    "InvalidInputError",
    "MissingEvidence",
    "Omission",
    "Reason",
    "RepoContextBuilder",
    "ResourceLimitError",
    "TokenCounter",
    "build",
    "cache_key",
    "reference",
    "render",
]
