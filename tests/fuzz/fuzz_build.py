"""Fuzz target: ``build`` from JSON, the Rust engine against the pure-Python reference.

The input is a build input as JSON bytes, read as ``bugcontext build`` reads it (standard
JSON plus ``NaN``/``Infinity``, a key given twice refused); bytes that are not JSON are read
as a structured input instead (:func:`structured`: candidates drawn from the bytes, bad
values included), so the fuzzer reaches the engines from any bytes. Invariants:

* ``bugcontext.build`` and ``bugcontext.reference.build`` give equal results (``==``,
  and the same JSON form with value types and float signs) or raise the same error type
  with the same ``index``, ``field``, ``problem`` and message;
* the only errors are the documented ``InvalidInputError`` family;
* a result is consistent: every input index selected or omitted exactly once, the items
  the selected candidates, ``used`` within the budget;
* the input is not changed by either engine;
* bounded time per input byte.

Run: ``python tests/fuzz/fuzz_build.py [libFuzzer arguments] [corpus folders]``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fuzz_main, instrumented

with instrumented():
    import bugcontext
    from bugcontext import reference
    from bugcontext.core._arguments import unique_keys as _unique_keys

_PATHS = (
    "a.py",
    "./a.py",
    "src//b.py",
    "a.py/",
    "a\n## b.PY",
    "q&<\"'>]]>.xml",
    "t\x7f\x01\u2028.md",
    "é/ü.rs",
    "",
    "/abs.py",
    "a/../b.py",
    "a\\b.py",
    "x\x00",
)
_LINES: tuple[Any, ...] = (1, 2, 3, 5, 8, 0, -1, 2**31 - 1, 2**31, True, 2.0, None, "3")
_REASONS: tuple[Any, ...] = ("failure", "reference", "search", "Failure", "", None, 1)
_SCORES: tuple[Any, ...] = (0, 1, 2.5, -0.0, 0.0, -3, 1e308, float("nan"), float("inf"), True, 10**400, "1")
_COSTS: tuple[Any, ...] = (
    None,
    {"unit": "chars"},
    {"unit": "chars", "template": "markdown"},
    {"unit": "chars", "template": "xml", "line_numbers": True, "order": "file"},
    {"unit": "tokens", "encoding": "o200k_base"},
    {"unit": "tokens", "encoding": "cl100k_base", "template": "markdown", "order": "file"},
    {"unit": "bytes"},
    {"unit": "tokens", "encoding": "gpt2"},
)


class _Bytes:
    """Draws small values from the input bytes (zero when they run out)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        value = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return value

    def pick(self, options: tuple[Any, ...]) -> Any:
        return options[self.byte() % len(options)]

    def text(self) -> str:
        size = self.byte() % 48
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk.decode("utf-8", errors="surrogateescape")


# The valid values among the above: the first ones of each table.
_VALID = {"paths": 8, "lines": 5, "reasons": 3, "scores": 7, "costs": 6, "budgets": 6}


def structured(data: bytes, *, valid: bool = False) -> dict[str, Any]:
    """A build input drawn from ``data`` (for bytes that are not a JSON document); with
    ``valid``, only valid values (``start <= end`` aside)."""
    draw = _Bytes(data)

    def pick(options: tuple[Any, ...], name: str) -> Any:
        return draw.pick(options[: _VALID[name]] if valid else options)

    candidates = []
    for _ in range(draw.byte() % 12):
        candidate = {
            "path": pick(_PATHS, "paths"),
            "start": pick(_LINES, "lines"),
            "end": pick(_LINES, "lines"),
            "content": draw.text(),
            "reason": pick(_REASONS, "reasons"),
            "score": pick(_SCORES, "scores"),
        }
        flags = draw.byte()
        if flags & 1 or (valid and candidate["end"] < candidate["start"]):
            candidate["end"] = candidate["start"]
        if flags & 2:
            candidate["group"] = draw.byte() % 3
        if flags & 4 and not valid:
            del candidate[draw.pick(tuple(candidate))]
        candidates.append(candidate)
    out: dict[str, Any] = {"candidates": candidates}
    cost = pick(_COSTS, "costs")
    budget = pick((0, 1, 10, 60, 200, 1000, -1, None, 2**64, 1.5), "budgets")
    if cost is None:
        out["max_chars"] = budget
    else:
        out["cost"] = cost
        out["budget"] = budget
    which = draw.byte() % 4
    if which == 1:
        out["failure_file"] = pick(_PATHS, "paths")
    elif which == 2:
        out["failure_files"] = [pick(_PATHS, "paths") for _ in range(draw.byte() % 3)]
    return out


def _outcome(engine: Any, data: Any) -> tuple[str, Any]:
    try:
        result = engine(data)
    except bugcontext.InvalidInputError as exc:
        return "error", (type(exc), exc.index, exc.field, exc.problem, str(exc))
    return "ok", result


def _strict(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _strict(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_strict(v) for v in value))
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__qualname__, repr(value))


def _consistent(result: bugcontext.BuildResult, count: int) -> None:
    decided = sorted([*result.selected, *(o.index for o in result.omitted)])
    assert decided == list(range(count)), (decided, count)
    assert len(result.items) == len(result.selected)
    assert result.used <= result.budget, (result.used, result.budget)


def build_both(data: bytes, *, valid: bool = False) -> tuple[Any, bugcontext.BuildResult | None]:
    """The input and its result (``None`` for an invalid input), both engines checked;
    ``valid``: bytes that are not JSON are drawn as a valid input."""
    try:
        value = json.loads(data, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        value = structured(data, valid=valid)
    before = repr(value)
    native = _outcome(bugcontext.build, value)
    assert repr(value) == before, "the native engine changed its input"
    ref = _outcome(reference.build, value)
    assert repr(value) == before, "the reference changed its input"
    assert native[0] == ref[0], (native, ref)
    if native[0] == "error":
        assert native[1] == ref[1], (native[1], ref[1])
        return value, None
    result, other = native[1], ref[1]
    assert type(result) is type(other)
    assert result == other
    assert _strict(result.to_dict()) == _strict(other.to_dict())
    count = len(value["candidates"]) if isinstance(value, dict) else 0
    if isinstance(value, dict) and isinstance(value.get("candidates"), list):
        _consistent(result, count)
    return value, result


def check(data: bytes) -> None:
    """One input: the invariants in the module docstring."""
    build_both(data)


def warm_up() -> None:
    """Load the token encodings before the first timed input."""
    for encoding in ("o200k_base", "cl100k_base"):
        bugcontext.TokenCounter(encoding).count(["def f(): pass"])


if __name__ == "__main__":
    fuzz_main(check, warm_up)
