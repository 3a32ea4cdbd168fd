"""Hostile and caller-made values, shared by the tests and by ``scripts/differential.py``.

Subclasses of ``str``, ``int`` and ``float`` whose own methods raise (``Raising*``) or lie
(``Lying*``), a ``str`` subclass with a hostile metaclass, an integer-like object with
``__index__`` alone and the candidate forms a caller may pass (its own frozen dataclass, a plain
object with attributes). An engine reads each field once through the built-in type's own
conversion (``str.__str__``, ``float.__float__``, ``int.__index__``), so none of these methods
may change a result. Standard library only, so that the differential run, which is no test,
imports it without the test tools; :func:`shown` writes any of them without calling them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import Any

__all__ = [
    "FLOATS",
    "INTS",
    "STRS",
    "EqualStr",
    "ForeignCandidate",
    "FrozenCandidate",
    "Idx",
    "LyingFloat",
    "LyingInt",
    "LyingStr",
    "Meta",
    "MetaStr",
    "PlainCandidate",
    "ProvenanceCandidate",
    "RaisingFloat",
    "RaisingInt",
    "RaisingStr",
    "shown",
]


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a subclass method was called")


class RaisingStr(str):
    """Every method a reader could call on it raises."""

    __str__ = __repr__ = __format__ = __eq__ = __ne__ = __hash__ = __len__ = _boom
    __iter__ = __getitem__ = __contains__ = __add__ = __mod__ = _boom
    encode = split = replace = startswith = endswith = find = rfind = lower = _boom
    isascii = splitlines = join = strip = _boom


class LyingStr(str):
    """Answers every question with a lie: its text, length, encoding, equality and hash."""

    def __str__(self) -> str:
        return "a lie"

    def __format__(self, spec: str) -> str:
        return "a lie"

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 7

    def __len__(self) -> int:
        return 0

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"a lie"

    def split(self, *args: Any, **kwargs: Any) -> list[str]:  # type: ignore[override]
        return ["a lie"]

    def replace(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        return "a lie"


class EqualStr(LyingStr):
    """A :class:`LyingStr` that claims to equal everything (as a dictionary key, every other
    ``EqualStr`` of its hash too)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = LyingStr.__hash__


class Meta(type):
    """A metaclass whose own comparisons, hashing and instance checks raise."""

    __eq__ = __hash__ = __instancecheck__ = __subclasscheck__ = _boom  # type: ignore[assignment]


class MetaStr(str, metaclass=Meta):
    pass


class RaisingFloat(float):
    def __float__(self) -> float:
        raise OverflowError("lies about its size")

    __repr__ = __str__ = __eq__ = __hash__ = __lt__ = __neg__ = __add__ = _boom


class LyingFloat(float):
    def __float__(self) -> float:
        return -1e300

    def __neg__(self) -> float:
        return 0.0


class RaisingInt(int):
    __index__ = __int__ = __float__ = __repr__ = __str__ = __eq__ = __hash__ = __lt__ = _boom


class LyingInt(int):
    def __index__(self) -> int:
        return 1

    def __int__(self) -> int:
        return 1

    def __float__(self) -> float:
        return 1e300


STRS = [RaisingStr, LyingStr, MetaStr]
FLOATS = [RaisingFloat, LyingFloat]
INTS = [RaisingInt, LyingInt]


class Idx:
    """A numpy-free integer-like object (has ``__index__`` only)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Idx({self.value})"


@dataclass(frozen=True)
class ForeignCandidate:
    """A caller's own frozen dataclass with the six candidate attributes."""

    path: Any
    start: Any
    end: Any
    content: Any
    reason: Any
    score: Any


@dataclass(frozen=True)
class ProvenanceCandidate(ForeignCandidate):
    """:class:`ForeignCandidate` with the optional provenance attributes."""

    source_sha256: Any = None
    source_id: Any = None


@dataclass(frozen=True)
class FrozenCandidate(ProvenanceCandidate):
    """:class:`ProvenanceCandidate` with the optional group attribute."""

    group: Any = None


class PlainCandidate:
    """A plain object whose attributes are the candidate's fields."""

    def __init__(self, **given: Any) -> None:
        self.__dict__.update(given)

    def __repr__(self) -> str:
        return f"PlainCandidate({shown(self.__dict__)})"


_BASES = (str, int, float)
#: The attributes :func:`shown` writes of an object that has them all (``bugcontext.Candidate``).
_CANDIDATE = ("path", "start", "end", "content", "reason", "score", "group", "source_sha256", "source_id")


def shown(value: Any) -> str:
    """``repr(value)`` for containers of these values, calling none of the hostile methods:
    a subclass of ``str``, ``int`` or ``float`` as ``Name(<the base type's repr>)``, a
    dataclass or an object with every candidate attribute (``bugcontext.Candidate``) as
    ``Name(field=..., ...)``."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{shown(k)}: {shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(shown(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if is_dataclass(value) and not isinstance(value, type):
        inner = ", ".join(f"{f.name}={shown(getattr(value, f.name))}" for f in fields(value))
        return f"{type(value).__name__}({inner})"
    for base in _BASES:
        if isinstance(value, base) and type(value) is not base and not isinstance(value, bool):
            return f"{type(value).__name__}({base.__repr__(value)})"
    if not isinstance(value, (*_BASES, bytes, type(None))) and all(hasattr(value, a) for a in _CANDIDATE):
        inner = ", ".join(f"{a}={shown(getattr(value, a))}" for a in _CANDIDATE)
        return f"{type(value).__name__}({inner})"
    return repr(value)
