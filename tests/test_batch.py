"""``build_many``: equal, element by element, to ``[build(x) for x in inputs]`` in both engines.

Differential (Hypothesis): mixes of valid and invalid inputs give, in the native engine
(parallel), the reference (a plain loop) and a loop of ``build``, the same results and the same
errors at the same positions (``errors="return"``), or the same first error (``"raise"``).
"""

from __future__ import annotations

from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from conftest import Drawn, build_inputs, error_signature, outcome, strict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_differential import invalid_inputs

BATCH_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ENGINES = [
    pytest.param(bugcontext, id="native"),
    pytest.param(reference, id="reference"),
]


def one(
    path: str = "a.py", start: int = 1, end: int = 2, content: str = "xy", score: float = 1.0
) -> dict[str, Any]:
    return {"path": path, "start": start, "end": end, "content": content, "reason": "search", "score": score}


def entry(value: Any) -> tuple[Any, ...]:
    """The comparison form of one ``build_many`` element (a result or an exception)."""
    if isinstance(value, BaseException):
        return ("error", error_signature(value))
    return ("ok", type(value), strict(value.to_dict()))


def expected_outcomes(inputs: list[Any]) -> list[tuple[Any, ...]]:
    out = []
    for x in inputs:
        got = outcome(bugcontext.build, x)
        out.append(got[:3] if got[0] == "ok" else got)
    return out


@st.composite
def mixed_inputs(draw: Any) -> list[Any]:
    n = draw(st.integers(0, 6))
    out: list[Any] = []
    for _ in range(n):
        if draw(st.integers(0, 2)) == 0:
            out.append(draw(invalid_inputs())[0])
        else:
            drawn: Drawn = draw(build_inputs(max_size=10))
            out.append(drawn.make())
    return out


@BATCH_SETTINGS
@given(inputs=mixed_inputs(), threads=st.sampled_from([None, 1, 2, 3, 64]))
def test_build_many_equals_a_loop_of_build(inputs: list[Any], threads: int | None) -> None:
    expected = expected_outcomes(inputs)
    for engine in (bugcontext, reference):
        got = engine.build_many(inputs, threads=threads, errors="return")
        assert isinstance(got, list)
        assert [entry(g) for g in got] == expected

    first_error = next((e for e in expected if e[0] == "error"), None)
    for engine in (bugcontext, reference):
        try:
            results = engine.build_many(inputs, threads=threads)
        except Exception as exc:
            assert first_error == ("error", error_signature(exc))
        else:
            assert first_error is None
            assert [entry(r) for r in results] == expected
            assert results == [bugcontext.build(x) for x in inputs]


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_and_generator_inputs(engine: Any) -> None:
    assert engine.build_many([]) == []
    assert engine.build_many([], errors="return", threads=1) == []
    gen = ({"candidates": [one(start=i, end=i)], "max_chars": 10} for i in (1, 2))
    results = engine.build_many(gen)
    assert [r.selected for r in results] == [(0,), (0,)]
    assert [r.items[0].start for r in results] == [1, 2]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("threads", "problem"),
    [
        (0, "must be >= 1, got 0"),
        (-2, "must be >= 1, got -2"),
        (True, "must be an int or None, not bool"),
        (1.5, "must be an int or None, not float"),
        ("2", "must be an int or None, not str"),
    ],
)
def test_bad_threads_is_invalid_input(engine: Any, threads: Any, problem: str) -> None:
    with pytest.raises(bugcontext.InvalidInputError) as info:
        engine.build_many([{"candidates": [], "max_chars": 1}], threads=threads)
    assert (type(info.value), info.value.field, info.value.index, info.value.problem) == (
        bugcontext.InvalidInputError,
        "threads",
        None,
        problem,
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("errors", "problem"),
    [
        ("ignore", "must be 'raise' or 'return', got 'ignore'"),
        ("RAISE", "must be 'raise' or 'return', got 'RAISE'"),
        (None, "must be 'raise' or 'return', got NoneType"),
        (1, "must be 'raise' or 'return', got int"),
    ],
)
def test_bad_errors_is_invalid_input(engine: Any, errors: Any, problem: str) -> None:
    with pytest.raises(bugcontext.InvalidInputError) as info:
        engine.build_many([], errors=errors)
    assert (info.value.field, info.value.index, info.value.problem) == ("errors", None, problem)


def test_options_checked_before_any_input_is_read() -> None:
    reads: list[int] = []

    def inputs() -> Any:
        reads.append(1)
        yield {"candidates": [], "max_chars": 1}

    for engine in (bugcontext, reference):
        with pytest.raises(bugcontext.InvalidInputError):
            engine.build_many(inputs(), threads=0)
    assert reads == []


class Counting:
    """A candidate that counts how often its fields are read; ``fail`` raises a caller error."""

    reads = 0

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def __getattr__(self, name: str) -> Any:
        Counting.reads += 1
        if self.fail and name == "content":
            raise RuntimeError("the caller's own error")
        try:
            return one()[name]
        except KeyError:  # the optional group, say
            raise AttributeError(name) from None


@pytest.mark.parametrize("engine", ENGINES)
def test_raise_stops_at_the_first_failing_input_like_the_loop(engine: Any) -> None:
    inputs = [
        {"candidates": [Counting()], "max_chars": 9},
        {"candidates": [Counting(fail=True)], "max_chars": 9},
        {"candidates": [Counting()], "max_chars": 9},
    ]
    Counting.reads = 0
    with pytest.raises(RuntimeError, match="the caller's own error"):
        [engine.build(x) for x in inputs]
    loop_reads = Counting.reads
    Counting.reads = 0
    with pytest.raises(RuntimeError, match="the caller's own error"):
        engine.build_many(inputs, threads=2)
    # The six fields and the optional group, source_sha256 and source_id of the first input,
    # four fields of the second; the third input is never read.
    assert Counting.reads == loop_reads == 9 + 4


@pytest.mark.parametrize("engine", ENGINES)
def test_return_puts_the_exception_in_place(engine: Any) -> None:
    inputs = [
        {"candidates": [one()], "max_chars": 9},
        {"candidates": [Counting(fail=True)], "max_chars": 9},
        {"candidates": [one(score=float("nan"))], "max_chars": 9},
        {"candidates": [one()], "max_chars": -1},
        {"candidates": [one(), one(path="b.py")], "max_chars": 2},
    ]
    got = engine.build_many(inputs, errors="return", threads=2)
    assert [type(g) for g in got] == [
        bugcontext.BuildResult,
        RuntimeError,
        bugcontext.InvalidCandidateError,
        bugcontext.InvalidInputError,
        bugcontext.BuildResult,
    ]
    assert got[0] == engine.build(inputs[0])
    assert str(got[1]) == "the caller's own error"
    assert (got[2].index, got[2].field, got[2].problem) == (0, "score", "must be finite, got nan")
    assert (got[3].index, got[3].field, got[3].problem) == (None, "max_chars", "must be >= 0, got -1")
    assert got[4].selected == (0,) and [(o.index, o.reason) for o in got[4].omitted] == [(1, "budget")]


class Interrupting:
    def __getattr__(self, name: str) -> Any:
        raise KeyboardInterrupt


@pytest.mark.parametrize("engine", ENGINES)
def test_keyboard_interrupt_is_never_returned(engine: Any) -> None:
    inputs = [{"candidates": [one()], "max_chars": 9}, {"candidates": [Interrupting()], "max_chars": 9}]
    with pytest.raises(KeyboardInterrupt):
        engine.build_many(inputs, errors="return")


@pytest.mark.parametrize("builder_cls", [bugcontext.ContextBuilder, reference.ContextBuilder])
def test_builder_method_shares_cost_model_and_token_cache(builder_cls: Any) -> None:
    cost = bugcontext.Cost(unit="tokens", encoding="cl100k_base", template="xml")
    inputs = [
        {
            "candidates": [one(content="def f():\n    return 1\n"), one(path="b.py", content="x = 1\n")],
            "budget": b,
        }
        for b in (0, 30, 60, 1000)
    ]
    builder = builder_cls(cost=cost)
    results = builder.build_many(inputs, threads=2)
    counter = builder.counter(cost)
    assert counter is not None and counter.cache_size > 0
    cached = counter.cache_size
    again = [builder.build(x) for x in inputs]
    assert counter.cache_size == cached  # the loop found every count in the shared cache
    assert results == again == [builder_cls(cost=cost).build(x) for x in inputs]
    assert [r.cost for r in results] == [cost] * 4
    assert [len(r.items) for r in results] == [len(r.items) for r in again]
    assert results[-1].selected == (0, 1) and results[0].selected == ()
