"""Top-level input handling shared by both engines, and the path rule.

Both :mod:`repo_context.reference` and the native builder call :func:`normalize_input`, so the
top-level fields (``candidates``, ``max_chars``, ``failure_file``) are validated identically and
before any candidate. Per-candidate validation is done by each engine on its own (the Rust
engine in ``src/python.rs``, the reference in ``reference.py``) and held equal by the
differential tests.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._core import BuildInput
from .errors import InvalidInputError, ResourceLimitError

#: Default limit on the number of candidates in one build.
DEFAULT_MAX_CANDIDATES = 4_000_000
#: Default limit on the total content of one build, in characters (code points): 2**30.
DEFAULT_MAX_TOTAL_CHARS = 1 << 30

_ALIASES = {"max_chars": "maxChars", "failure_file": "failureFile"}
_KEYS = {"candidates", "max_chars", "failure_file", "maxChars", "failureFile"}
_U64_MAX = (1 << 64) - 1


class PathProblem(ValueError):
    """Raised by :func:`canonical_path`; its single argument is the problem text."""


def canonical_path(path: object) -> str:
    """Return the canonical form of a repository-relative path, or raise :class:`PathProblem`.

    Canonical form: split on ``/``, drop empty and ``.`` segments, join with ``/``
    (``./src//a.py`` -> ``src/a.py``, ``a/`` -> ``a``). Rejected, in this order: a non-``str``,
    ``""``, a NUL, a backslash, an absolute path (leading ``/``), any ``..`` segment, and a path
    with nothing left after canonicalisation. There is no case folding.
    """
    if not isinstance(path, str):
        raise PathProblem(f"must be a str, not {type(path).__name__}")
    if path == "":
        raise PathProblem("must not be empty")
    if "\x00" in path:
        raise PathProblem("must not contain NUL")
    if "\\" in path:
        raise PathProblem("must not contain a backslash")
    if path.startswith("/"):
        raise PathProblem("must be relative, not absolute")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise PathProblem("must not contain a '..' segment")
    if not parts:
        raise PathProblem("names no file after canonicalisation")
    return "/".join(parts)


def _lookup(data: Mapping[Any, Any], key: str, required: bool) -> Any:
    alias = _ALIASES.get(key)
    if alias is not None and key in data and alias in data:
        raise InvalidInputError(key, f"given twice, as {key!r} and as {alias!r}")
    if key in data:
        return data[key]
    if alias is not None and alias in data:
        return data[alias]
    if required:
        raise InvalidInputError(key, "is missing")
    return None


def normalize_input(data: object, max_candidates: int) -> tuple[Sequence[Any], int, str | None]:
    """Validate the top level of a build input.

    Args:
        data: a :class:`BuildInput` or a mapping with keys ``candidates``, ``max_chars``
            (alias ``maxChars``) and optionally ``failure_file`` (alias ``failureFile``).
        max_candidates: the candidate-count limit.

    Returns:
        ``(candidates, max_chars, failure_file)``: the candidates as a list or tuple (another
        iterable is copied into a list), the budget as an ``int``, and the canonical failure
        file or ``None``.

    Raises:
        InvalidInputError: with ``index=None`` and the offending field.
        ResourceLimitError: more than ``max_candidates`` candidates.
    """
    if isinstance(data, BuildInput):
        candidates, max_chars, failure_file = data.candidates, data.max_chars, data.failure_file
    elif isinstance(data, Mapping):
        for key in data:
            if key not in _KEYS:
                raise InvalidInputError(str(key), "is not a known input key")
        candidates = _lookup(data, "candidates", True)
        max_chars = _lookup(data, "max_chars", True)
        failure_file = _lookup(data, "failure_file", False)
    else:
        raise InvalidInputError("input", f"must be a BuildInput or a mapping, not {type(data).__name__}")

    if isinstance(candidates, (str, bytes, bytearray, Mapping)) or not isinstance(candidates, Iterable):
        raise InvalidInputError(
            "candidates", f"must be a list of candidates, not {type(candidates).__name__}"
        )
    seq: Sequence[Any] = candidates if isinstance(candidates, (list, tuple)) else list(candidates)

    budget = line_int(max_chars, "max_chars")
    if budget < 0:
        raise InvalidInputError("max_chars", f"must be >= 0, got {budget}")

    canonical_failure: str | None = None
    if failure_file is not None:
        try:
            canonical_failure = canonical_path(failure_file)
        except PathProblem as exc:
            raise InvalidInputError("failure_file", str(exc)) from None

    if len(seq) > max_candidates:
        raise ResourceLimitError("candidates", f"{len(seq)} candidates exceed the limit of {max_candidates}")
    return seq, budget, canonical_failure


def line_int(value: object, field: str) -> int:
    """Return ``value`` as an ``int`` (``bool`` rejected, ``__index__`` objects accepted)."""
    if isinstance(value, bool):
        raise InvalidInputError(field, "must be an int, not bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(field, f"must be an int, not {type(value).__name__}") from None


def clamp_u64(value: int) -> int:
    """Clamp a non-negative budget to what the native engine holds (no total can exceed it)."""
    return min(value, _U64_MAX)


def check_limits(max_candidates: object, max_total_chars: object) -> tuple[int, int]:
    """Validate a builder's limits; each must be an ``int >= 0``."""
    out = []
    for name, value in (("max_candidates", max_candidates), ("max_total_chars", max_total_chars)):
        number = line_int(value, name)
        if number < 0:
            raise InvalidInputError(name, f"must be >= 0, got {number}")
        out.append(number)
    return out[0], out[1]
