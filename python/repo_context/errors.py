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
    """The input exceeds a configured limit (candidate count, total content characters, or
    the size of an input file or stream).

    For the count limit ``field`` is ``"candidates"`` and ``index`` is ``None``; for the
    total-characters limit ``field`` is ``"content"`` and ``index`` names the first candidate
    whose content makes the running total exceed the limit. For an input read by the
    command line or the pytest plugin (``repo_context._io.read_capped``), ``field`` names the
    input (``"input"``, ``"pytest_log"``, ``"junit_xml"``, ``"cases"``), ``limit`` the setting
    (``"MAX_LOG_BYTES"``) and ``value`` its value in bytes.

    Attributes:
        limit: the name of the limit exceeded, or ``None``.
        value: the value of that limit, or ``None``.
    """

    limit: str | None
    value: int | None

    def __init__(
        self,
        field: str,
        problem: str,
        index: int | None = None,
        *,
        limit: str | None = None,
        value: int | None = None,
    ) -> None:
        super().__init__(field, problem, index)
        self.limit = limit
        self.value = value

    def __reduce__(  # type: ignore[override]
        self,
    ) -> tuple[type[ResourceLimitError], tuple[str, str, int | None], dict[str, object]]:
        state: dict[str, object] = {"limit": self.limit, "value": self.value}
        return (type(self), (self.field, self.problem, self.index), state)
