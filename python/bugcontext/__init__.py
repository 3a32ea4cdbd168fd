"""bugcontext: decide what a coding agent's model sees about a bug.

Candidates (windows of code proposed by the failing test, reference analysis and text search)
are ranked, de-duplicated by line range and packed whole into a budget, and every omission is
explained, in characters or exact tokens, of the content or of the rendered prompt section.
:func:`build` runs the Rust engine (:func:`build_many`: many inputs, in parallel;
:func:`build_table`: one build per group of the rows of an Arrow table, no Python object per
candidate); :mod:`bugcontext.core.reference` is the pure-Python implementation of the same
contract; :func:`render` composes the prompt section. :class:`Workspace` (and the one-call
:func:`context`) runs the whole job for a failing test in a repository, keeping what it
derives from the files between calls and on disk.

``pip install bugcontext`` gives the core (:func:`build`, :func:`build_many`, :func:`render`,
:class:`TokenCounter`, :mod:`bugcontext.reference`); :class:`Workspace` and :func:`context`
need the ``context`` extra, :func:`build_table` the ``table`` extra. A part used without its
extra raises :class:`MissingExtraError` (an ``ImportError``) on first use, naming the extra;
``import bugcontext`` (and ``from bugcontext import *``) itself needs only the core.
"""

from typing import TYPE_CHECKING, Any

from bugcontext import reference
from bugcontext.batch.table import TableResult, build_table
from bugcontext.core._extras import MissingExtraError, Unavailable
from bugcontext.core._input import DEFAULT_MAX_CANDIDATES, DEFAULT_MAX_TOTAL_CHARS
from bugcontext.core._io import OutputError
from bugcontext.core.builder import ContextBuilder, build, build_many, cache_key
from bugcontext.core.composer import render
from bugcontext.core.digest import POLICY_VERSION
from bugcontext.core.errors import InvalidCandidateError, InvalidInputError, ResourceLimitError
from bugcontext.core.limits import DEFAULT_LIMITS, Limits
from bugcontext.core.provenance import folder_reader
from bugcontext.core.types import (
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
    from bugcontext.job.workspace import ContextResult, Workspace, context


def __getattr__(name: str) -> Any:
    # The workspace (and the candidate sources under it) loads on first use, so that
    # ``import bugcontext`` stays light for callers of build() alone. Without the context
    # extra the name stands for a placeholder that raises the MissingExtraError when used, so
    # that ``from bugcontext import *`` gives the core's names with the core alone.
    if name in ("ContextResult", "Workspace", "context"):
        try:
            from bugcontext.job import workspace
        except MissingExtraError as exc:
            return Unavailable(name, exc)
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
    "ContextBuilder",
    "ContextResult",
    "Cost",
    "InvalidCandidateError",
    "InvalidInputError",
    "Limits",
    "MissingEvidence",
    "MissingExtraError",
    "Omission",
    "OutputError",
    "Reason",
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
