"""Exceptions raised by :func:`bugcontext.build` (both engines raise the same ones).

Every error carries the offending ``field`` and, for a candidate, its 0-based input ``index``, so
a caller can point at the exact bad value; ``problem`` says what is wrong with it. The message is
one line: ``candidate 3: field 'score': must be finite, got nan``.

Every exception class of the package passes its message through the secret screen when it is
made (:class:`ScreenedError`, a base of each): a secret in a bad value, a key, a path or a test
id (``password=...``, a GitHub token) is ``[REDACTED: kind]`` in the message and in the
attributes the message is made from (``field``, ``problem``), whether the error comes from
Python or from the Rust extension (which makes these classes by calling them).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "InternalError",
    "InvalidCandidateError",
    "InvalidInputError",
    "ResourceLimitError",
    "ScreenedError",
    "screen",
]


def screen(text: str) -> str:
    """``text`` with its secrets replaced by ``[REDACTED: kind]``
    (:func:`bugcontext.core.secrets.redact_text`, the screen of every output; the command line
    also checks the names in what it prints piece by piece between ``_``). Fast on the short
    texts of messages (a few microseconds)."""
    from bugcontext.core.secrets import redact_text  # (on first use: it installs the rules)

    return redact_text(text)


def _screened(value: object) -> Any:
    return screen(value) if isinstance(value, str) else value


class ScreenedError(Exception):
    """A base of every exception class of the package: each ``str`` argument (the message) goes
    through :func:`screen` when the exception is made, so no secret the screen finds is in its
    message, its ``args`` or its pickled form."""

    def __init__(self, *args: object) -> None:
        super().__init__(*(_screened(arg) for arg in args))


def _message(field: object, problem: object, index: int | None) -> str:
    """The one-line message of an input error: ``candidate 3: field 'score': problem``."""
    where = f"input field {field!r}" if index is None else f"candidate {index}: field {field!r}"
    return f"{where}: {problem}"


class InvalidInputError(ScreenedError, ValueError):
    """The build input is invalid; nothing was ranked or packed.

    Attributes:
        field: the name of the offending field (``"max_chars"``, ``"failure_file"``,
            ``"candidates"``, ``"input"``, an unknown key, or a candidate field such as ``"score"``).
        problem: what is wrong with its value.
        index: the 0-based input index of the offending candidate, or ``None`` for a
            top-level field.

    ``field`` and ``problem`` are screened for secrets (:func:`screen`) when the error is made,
    and the message is made from them: a bad key ``"password=..."`` or a token in a bad value
    is ``[REDACTED: kind]`` in all three.
    """

    field: str
    problem: str
    index: int | None

    def __init__(self, field: str, problem: str, index: int | None = None) -> None:
        # Each part screened alone (the attributes), then the message made of them (a secret
        # that spans the two): three screens of a short text, about 12 microseconds.
        field, problem = _screened(field), _screened(problem)
        self.field = field
        self.problem = problem
        self.index = index
        super().__init__(_message(field, problem, index))

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
    """The input goes over a resource limit (:mod:`bugcontext.core.limits`): too many candidates,
    too much content, an input file or stream, a log, a report, an issue text or a query too
    large, a repository walk too long. Nothing was built.

    For the candidate count ``field`` is ``"candidates"`` and ``index`` is ``None``; for the
    total content ``field`` is ``"content"`` and ``index`` names the first candidate whose
    content takes the running total over the limit. For an input read by the command line,
    the pytest plugin or a :class:`~bugcontext.Workspace`, ``field`` names the input
    (``"input"``, ``"pytest_log"``, ``"junit_xml"``, ``"issue"``, ``"query"``, ``"cases"``,
    ``"trace"``, ``"repo"``).

    Attributes:
        limit: the setting exceeded, a field name of :class:`bugcontext.core.limits.Limits`
            (``"max_log_bytes"``), or ``None`` for an error made without one.
        value: the amount found, in the setting's unit; when the work stopped at the limit
            (a read capped at ``maximum + 1`` bytes) it is ``maximum + 1``, a lower bound, and
            the message says "more than".
        maximum: the setting's configured value.

    The message names all three: ``input field 'pytest_log': /dev/zero is more than 67108864
    bytes, over the limit max_log_bytes = 67108864 bytes``.
    """

    limit: str | None
    value: int | None
    maximum: int | None

    def __init__(
        self,
        field: str,
        problem: str,
        index: int | None = None,
        *,
        limit: str | None = None,
        value: int | None = None,
        maximum: int | None = None,
    ) -> None:
        super().__init__(field, problem, index)
        self.limit = limit
        self.value = value
        self.maximum = maximum

    def __reduce__(  # type: ignore[override]
        self,
    ) -> tuple[type[ResourceLimitError], tuple[str, str, int | None], dict[str, object]]:
        state: dict[str, object] = {"limit": self.limit, "value": self.value, "maximum": self.maximum}
        return (type(self), (self.field, self.problem, self.index), state)


class InternalError(ScreenedError, RuntimeError):
    """A bug in bugcontext: the extension caught a Rust panic at its boundary (no panic
    crosses into Python). Never raised for bad input, which gets an :class:`InvalidInputError`;
    please report it with the message."""
