"""The native builder: the Python face of the Rust engine (``repo_context._core``)."""

from __future__ import annotations

from . import _core
from ._input import (
    DEFAULT_MAX_CANDIDATES,
    DEFAULT_MAX_TOTAL_CHARS,
    check_limits,
    clamp_u64,
    normalize_input,
)
from .types import BuildResult

__all__ = ["RepoContextBuilder", "build"]


class RepoContextBuilder:
    """Rank, de-duplicate and pack code-context candidates into a character budget.

    The contract (``repo_context.reference`` is its executable form):

    * **Validate** every candidate before ranking, all-or-nothing; the first invalid one in
      input order raises :class:`~repo_context.InvalidCandidateError` naming its index and field.
    * **Rank** by ``(group, -float(score), input index)``: group 0 for the failure file's
      candidates, then ``reference`` (1), ``failure`` (2), ``search`` (3).
    * **Select** in rank order: omit a candidate whose closed line range ``[start, end]``
      intersects a window already selected from the same (canonical) path (``"overlap"``),
      else one that does not fit what is left of ``max_chars`` (``"budget"``); never stop early
      and never cut a snippet. Cost is ``len(content)`` in characters (Python code points).

    Args:
        max_candidates: at most this many candidates per build (default 4,000,000).
        max_total_chars: at most this many content characters over all candidates of one build
            (default ``2**30``).

    Raises:
        InvalidInputError: a limit that is not an ``int >= 0``.
    """

    def __init__(
        self,
        *,
        max_candidates: int = DEFAULT_MAX_CANDIDATES,
        max_total_chars: int = DEFAULT_MAX_TOTAL_CHARS,
    ) -> None:
        self.max_candidates, self.max_total_chars = check_limits(max_candidates, max_total_chars)

    def build(self, input: object) -> BuildResult:
        """Build the context for one input.

        Args:
            input: a :class:`BuildInput`, or a mapping with ``candidates``, ``max_chars`` (alias
                ``maxChars``) and optional ``failure_file`` (alias ``failureFile``). Candidates
                are :class:`Candidate` objects, mappings, or objects with the attributes
                ``path``, ``start``, ``end``, ``content``, ``reason``, ``score``.

        Returns:
            A :class:`BuildResult`: ``items`` (selected candidates as ``Candidate``, canonical
            path, selection order), ``selected`` (their input indices), ``used_chars``,
            ``truncated`` and ``omitted`` (one :class:`Omission` per left-out candidate, rank
            order). The input is not mutated; equal inputs give equal results.

        Raises:
            InvalidInputError: a top-level field is invalid (``index`` is ``None``).
            InvalidCandidateError: a candidate is invalid (``index`` and ``field`` name it).
            ResourceLimitError: too many candidates or too much content.
        """
        candidates, max_chars, failure_file = normalize_input(input, self.max_candidates)
        return _core.build(candidates, clamp_u64(max_chars), failure_file, self.max_total_chars)


_DEFAULT = RepoContextBuilder()


def build(input: object) -> BuildResult:
    """Build the context with the Rust engine and the default limits.

    See :meth:`RepoContextBuilder.build` for the input, result and errors.
    """
    return _DEFAULT.build(input)
