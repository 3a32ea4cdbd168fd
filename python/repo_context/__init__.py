"""repo-context: decide what a coding agent's model sees about a bug.

Candidates (windows of code proposed by the failing test, reference analysis and text search)
are ranked, de-duplicated by line range and packed whole into a budget, and every omission is
explained, in characters or exact tokens, of the content or of the rendered prompt section.
:func:`build` runs the Rust engine (:func:`build_many`: many inputs, in parallel;
:func:`build_table`: one build per group of the rows of an Arrow table, no Python object per
candidate); :mod:`repo_context.reference` is the pure-Python implementation of the same
contract; :func:`render` composes the prompt section. :class:`Workspace` (and the one-call
:func:`context`) runs the whole job for a failing test in a repository, keeping what it
derives from the files between calls and on disk.
"""

from typing import TYPE_CHECKING, Any

from . import reference
from ._input import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_TOTAL_CHARS
from ._io import OutputError
from .builder import RepoContextBuilder, build, build_many, cache_key
from .composer import render
from .digest import POLICY_VERSION
from .errors import InvalidCandidateError, InvalidInputError, ResourceLimitError
from .limits import DEFAULT_LIMITS, Limits
from .provenance import folder_reader
from .table import TableResult, build_table
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

if TYPE_CHECKING:
    from .workspace import ContextResult, Workspace, context


def __getattr__(name: str) -> Any:
    # The workspace (and the candidate sources under it) loads on first use, so that
    # ``import repo_context`` stays light for callers of build() alone.
    if name in ("ContextResult", "Workspace", "context"):
        from . import workspace

        return getattr(workspace, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_CANDIDATES",
    "DEFAULT_MAX_TOTAL_CHARS",
    "POLICY_VERSION",
    "Block",
    "BuildInput",
    "BuildResult",
    "Candidate",
    "ContextResult",
    "Cost",
    "InvalidCandidateError",
    "InvalidInputError",
    "Limits",
    "MissingEvidence",
    "Omission",
    "OutputError",
    "Reason",
    "RepoContextBuilder",
    "ResourceLimitError",
    "TableResult",
    "TokenCounter",
    "Workspace",
    "build",
    "build_many",
    "build_table",
    "cache_key",
    "context",
    "folder_reader",
    "reference",
    "render",
]
