"""The pure-Python reference implementation: the executable specification.

Same signature, types, results and errors as :func:`repo_context.build` (the Rust engine); the
Hypothesis differential tests hold the two equal. Read this module to learn the contract:

1. **Validate** every candidate, in input order, before ranking (all-or-nothing).
2. **Rank** by the key ``(group, -float(score), input index)``, ascending, where ``group`` is 0
   for a candidate from the failure file, else 1 for ``reference``, 2 for ``failure`` and 3 for
   ``search``.
3. **Select** in rank order, never stopping early: a candidate whose closed line range
   ``[start, end]`` intersects a window already *selected* from the same path is omitted as
   ``overlap`` (naming the selected window with the smallest start it hits); else one whose
   cost would take the total past the budget is omitted as ``budget``; else it is selected.
   Cost is ``len(content)``: characters, i.e. Python code points.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._core import BuildResult, Candidate, Omission
from ._input import (
    DEFAULT_MAX_CANDIDATES,
    DEFAULT_MAX_TOTAL_CHARS,
    PathProblem,
    canonical_path,
    check_limits,
    normalize_input,
)
from .errors import InvalidCandidateError, ResourceLimitError

__all__ = ["RepoContextBuilder", "build"]

#: Highest line number accepted (``2**31 - 1``).
MAX_LINE = 2**31 - 1
#: Rank group of each reason; the failure file's candidates form group 0.
GROUP = (("reference", 1), ("failure", 2), ("search", 3))
_REASONS_TEXT = "must be one of 'failure', 'reference', 'search'"
_FIELDS = ("path", "start", "end", "content", "reason", "score")


@dataclass(frozen=True)
class _Row:
    """One validated candidate: canonical path, plain-int lines, cost and the score as float."""

    path: str
    start: int
    end: int
    cost: int
    group: int
    score: float


def _field(candidate: object, field: str, index: int) -> Any:
    """Read one field of a ``Candidate``, a mapping, or any object with that attribute."""
    try:
        if isinstance(candidate, Mapping):
            return candidate[field]
        return getattr(candidate, field)
    except (KeyError, AttributeError):
        raise InvalidCandidateError(field, "is missing", index) from None


def _line(value: object, field: str, index: int) -> int:
    if isinstance(value, bool):
        raise InvalidCandidateError(field, "must be an int, not bool", index)
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidCandidateError(field, f"must be an int, not {type(value).__name__}", index) from None


def _validate(candidate: object, index: int) -> tuple[_Row, dict[str, Any]]:
    """Read and check one candidate's fields, one at a time, in the order path, start, end,
    content, reason, score: the first missing or invalid field is reported."""
    try:
        path = canonical_path(_field(candidate, "path", index))
    except PathProblem as exc:
        raise InvalidCandidateError("path", str(exc), index) from None

    start = _line(_field(candidate, "start", index), "start", index)
    if start < 1:
        raise InvalidCandidateError("start", f"must be >= 1, got {start}", index)
    if start > MAX_LINE:
        raise InvalidCandidateError("start", f"must be <= {MAX_LINE}, got {start}", index)
    end = _line(_field(candidate, "end", index), "end", index)
    if end < start:
        raise InvalidCandidateError("end", f"must be >= start ({start}), got {end}", index)
    if end > MAX_LINE:
        raise InvalidCandidateError("end", f"must be <= {MAX_LINE}, got {end}", index)

    content = _field(candidate, "content", index)
    if not isinstance(content, str):
        raise InvalidCandidateError("content", f"must be a str, not {type(content).__name__}", index)

    reason = _field(candidate, "reason", index)
    if not isinstance(reason, str):
        raise InvalidCandidateError("reason", f"{_REASONS_TEXT}, not {type(reason).__name__}", index)
    # `==`, not a dict lookup: a str-enum member hashes by its name, but equals its value.
    group = next((g for name, g in GROUP if reason == name), None)
    if group is None:
        raise InvalidCandidateError("reason", f"{_REASONS_TEXT}, got {str.__str__(reason)!r}", index)

    score = _field(candidate, "score", index)
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise InvalidCandidateError("score", f"must be an int or a float, not {type(score).__name__}", index)
    try:
        as_float = float(score)
    except OverflowError:
        raise InvalidCandidateError("score", "is too large to convert to a float", index) from None
    if not math.isfinite(as_float):
        raise InvalidCandidateError("score", f"must be finite, got {as_float!r}", index)

    item = {"path": path, "start": start, "end": end, "content": content, "reason": reason, "score": score}
    return _Row(path, start, end, len(content), group, as_float), item


class RepoContextBuilder:
    """Rank, de-duplicate and pack candidates (pure Python). See :func:`build`.

    Args:
        max_candidates: at most this many candidates per build (default 4,000,000).
        max_total_chars: at most this many content characters, summed over all candidates
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
        """Build the context; same contract as :meth:`repo_context.RepoContextBuilder.build`."""
        candidates, max_chars, failure_file = normalize_input(input, self.max_candidates)

        rows: list[_Row] = []
        fields: list[dict[str, Any]] = []
        total = 0
        for index, candidate in enumerate(candidates):
            row, values = _validate(candidate, index)
            total += row.cost
            if total > self.max_total_chars:
                raise ResourceLimitError(
                    "content",
                    f"total content exceeds the limit of {self.max_total_chars} characters",
                    index,
                )
            rows.append(row)
            fields.append(values)

        def key(i: int) -> tuple[int, float, int]:
            row = rows[i]
            return (0 if row.path == failure_file else row.group, -row.score, i)

        order = sorted(range(len(rows)), key=key)

        windows: dict[str, list[tuple[int, int, int]]] = {}  # path -> selected (start, end, index)
        selected: list[int] = []
        omitted: list[Omission] = []
        used = 0
        for rank, i in enumerate(order):
            row = rows[i]
            hits = [w for w in windows.get(row.path, []) if w[0] <= row.end and row.start <= w[1]]
            if hits:
                omitted.append(Omission(i, rank, "overlap", min(hits)[2]))
            elif used + row.cost > max_chars:
                omitted.append(Omission(i, rank, "budget"))
            else:
                windows.setdefault(row.path, []).append((row.start, row.end, i))
                selected.append(i)
                used += row.cost

        items = [Candidate(**fields[i]) for i in selected]
        return BuildResult(items, selected, used, bool(omitted), omitted)


_DEFAULT = RepoContextBuilder()


def build(input: object) -> BuildResult:
    """Build the context with the default limits (pure Python). See :class:`RepoContextBuilder`."""
    return _DEFAULT.build(input)
