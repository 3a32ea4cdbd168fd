"""An exact ``dict`` holding the six fields and nothing else is read in one pass over its
entries (keys found by address, values of exact built-in types); every other dict by look-ups.
Both reads must give the reference's result, error for error, whatever the dict holds."""

from __future__ import annotations

from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from hostile import LyingStr

FIELDS = ("path", "start", "end", "content", "reason", "score")


def _built(build: Any, candidates: list[Any]) -> Any:
    try:
        return build({"candidates": candidates, "max_chars": 60, "failure_file": "a.py"}).to_dict()
    except Exception as e:  # the error is the value compared
        return (type(e).__name__, str(e))


def _both(candidates: list[Any]) -> Any:
    native = _built(bugcontext.build, candidates)
    assert native == _built(reference.build, candidates)
    return native


def _row(n: int) -> dict[str, Any]:
    return {"path": f"m{n % 3}.py", "start": n + 1, "end": n + 2, "content": f"x = {n}\n",
            "reason": ("reference", "failure", "search")[n % 3], "score": n / 7}  # fmt: skip


def test_literal_keys_and_exact_values_give_the_reference_result() -> None:
    got = _both([_row(n) for n in range(12)])
    assert isinstance(got, dict) and got["selected"] and got["omitted"]


def _rebuilt_key(name: str) -> str:
    """``name`` as another string object (not the interned one): found by look-up only."""
    key = "".join(list(name))
    assert key == name
    return key


@pytest.mark.parametrize(
    "change",
    [
        lambda d: {(_rebuilt_key(k) if k == "path" else k): v for k, v in d.items()},  # a key not interned
        lambda d: {**d, "start": True},  # a bool is not an exact int
        lambda d: {**d, "score": 2**70},  # an exact int score out of range
        lambda d: {**d, "start": 0},  # exact, but not a line
        lambda d: {**d, "content": LyingStr("y = 1\n")},  # a str subclass
        lambda d: {**d, "path": "a\\b.py"},  # exact, refused by the path rules
        lambda d: {**d, "path": "./m0.py"},  # exact, made canonical
        lambda d: {**d, "reason": "nonsense"},  # exact, not a reason
        lambda d: {**d, "score": float("nan")},  # exact, not finite
        lambda d: {k: v for k, v in d.items() if k != "score"} | {"group": 1},  # six keys, one not a field
        lambda d: {**d, "group": "g"},  # seven keys: an optional field
        lambda d: {**d, "source_id": 5},  # an optional field of the wrong type
        lambda d: {**d, "end": 2**64},  # an exact int beyond 64 bits
        lambda d: {**d, "path": "a\udcff.py"},  # a lone surrogate
    ],
)
def test_every_other_dict_is_read_as_the_reference_reads_it(change: Any) -> None:
    rows = [_row(n) for n in range(6)]
    rows[3] = change(rows[3])
    _both(rows)


def test_a_value_whose_reading_runs_code_is_not_read_in_one_pass() -> None:
    """An ``int`` subclass's ``__index__`` runs while the lines are read: it changes the dict
    it came from (content and score replaced); the read must see what the reference sees."""

    def rows() -> list[Any]:
        target = _row(1)

        class Sneaky(int):
            def __index__(self) -> int:
                target.update(content="changed = True\n", score=99.0)
                return int(self)

        target["start"] = Sneaky(2)
        return [_row(0), target, _row(2)]

    # Each engine reads its own rows: a build changes the dict it reads.
    native = _built(bugcontext.build, rows())
    assert native == _built(reference.build, rows())
