"""Exceptions raised by :func:`repo_context.build` (both engines raise the same ones).

Every error carries the offending ``field`` and, for a candidate, its 0-based input ``index``, so
a caller can point at the exact bad value; ``problem`` says what is wrong with it. The message is
one line: ``candidate 3: field 'score': must be finite, got nan``.
"""

from __future__ import annotations

__all__ = ["InvalidCandidateError", "InvalidInputError", "ResourceLimitError"]


class InvalidInputError(ValueError):
    """The build input is invalid; nothing was ranked or packed.

    Attributes:
        field: the name of the offending field (``"max_chars"``, ``"failure_file"``,
            ``"candidates"``, ``"input"``, an unknown key, or a candidate field such as ``"score"``).
        problem: what is wrong with its value.
        index: the 0-based input index of the offending candidate, or ``None`` for a
            top-level field.
    """

    field: str
    problem: str
    index: int | None

    def __init__(self, field: str, problem: str, index: int | None = None) -> None:
        self.field = field
        self.problem = problem
        self.index = index
        where = f"input field {field!r}" if index is None else f"candidate {index}: field {field!r}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[type[InvalidInputError], tuple[str, str, int | None]]:
        return (type(self), (self.field, self.problem, self.index))


class InvalidCandidateError(InvalidInputError):
    """One candidate is invalid: ``index`` names it and ``field`` the bad field.

    Validation is all-or-nothing and in input order: the first offending candidate is
    reported, even one that would never have fit the budget.
    """

    index: int

    def __init__(self, field: str, problem: str, index: int) -> None:
        super().__init__(field, problem, index)


class ResourceLimitError(InvalidInputError):
    """The input exceeds a configured limit (candidate count or total content characters).

    For the count limit ``field`` is ``"candidates"`` and ``index`` is ``None``; for the
    total-characters limit ``field`` is ``"content"`` and ``index`` names the first candidate
    whose content makes the running total exceed the limit.
    """
