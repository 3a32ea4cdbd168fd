"""Benchmarks of ``build``: the Rust engine, the pure-Python reference and the floor.

Run with ``python -m pytest benches --benchmark-only`` (the default ``pytest`` run only
collects ``tests/``). Every (n, budget) pair is one pytest-benchmark group holding three
lines:

* ``native``: ``bugcontext.build(BuildInput(candidates, max_chars, failure_file))``;
* ``reference``: the same call on ``bugcontext.reference``;
* ``floor``: ``list(map(attrgetter(<the six fields>), candidates))``, the cost of only
  reading every field of every candidate once from Python.

The timed call includes making the ``BuildInput``, so any conversion work done there is
counted; the ``Candidate`` objects are made once, outside the timing. Outside the timed
part, every benchmark also checks that native and reference give equal results.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from generate import FIELDS, BenchSet, generate

SIZES = (1_000, 10_000, 100_000)
BUDGETS = ("2%", "20%", "100%")
IMPLS = ("native", "reference", "floor")
# Fixed rounds per (implementation, n): enough for stable medians, while the reference,
# one to a few seconds a call at 100k, gets a few rounds so that the whole run stays short.
ROUNDS = {
    "native": {1_000: 1000, 10_000: 200, 100_000: 30},
    "floor": {1_000: 1000, 10_000: 200, 100_000: 30},
    "reference": {1_000: 50, 10_000: 20, 100_000: 5},
}


def _size_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


@functools.lru_cache(maxsize=1)
def _bench_set(n: int) -> BenchSet:
    return generate(n)


@functools.lru_cache(maxsize=1)
def _inputs(n: int) -> dict[str, Any]:
    """Per implementation: its ``build``, its ``BuildInput`` and the candidate list."""
    bench_set = _bench_set(n)
    native_cands = bench_set.candidates(bugcontext.Candidate)
    ref_candidate = getattr(reference, "Candidate", bugcontext.Candidate)
    ref_cands = (
        native_cands if ref_candidate is bugcontext.Candidate else bench_set.candidates(ref_candidate)
    )
    return {
        "native": (bugcontext.build, bugcontext.BuildInput, native_cands),
        "reference": (
            reference.build,
            getattr(reference, "BuildInput", bugcontext.BuildInput),
            ref_cands,
        ),
    }


def _run(impl: str, n: int, max_chars: int) -> Any:
    build, build_input, cands = _inputs(n)[impl]
    return build(build_input(cands, max_chars, _bench_set(n).failure_file))


@functools.lru_cache(maxsize=1)
def _expected(n: int, budget: str) -> dict[str, Any]:
    """The native result as a dict, checked equal to the reference result."""
    max_chars = _bench_set(n).budgets[budget]
    native = _run("native", n, max_chars).to_dict()
    ref = _run("reference", n, max_chars).to_dict()
    assert native == ref, f"native and reference differ at n={n}, budget {budget}"
    return native


CASES = [
    pytest.param(n, budget, impl, id=f"{_size_label(n)}-{budget}-{impl}")
    for n in SIZES
    for budget in BUDGETS
    for impl in IMPLS
]


@pytest.mark.parametrize(("n", "budget", "impl"), CASES)
def test_build(benchmark: Any, n: int, budget: str, impl: str) -> None:
    bench_set = _bench_set(n)
    max_chars = bench_set.budgets[budget]
    expected = _expected(n, budget)  # also asserts native == reference

    benchmark.group = f"n={_size_label(n)} budget={budget}"
    benchmark.extra_info.update(
        impl=impl,
        n=n,
        budget=budget,
        max_chars=max_chars,
        total_chars=bench_set.total_chars,
        paths=bench_set.n_paths,
        selected=len(expected["selected"]),
        used_chars=expected["used_chars"],
    )

    rounds = ROUNDS[impl][n]
    warmup = 0 if impl == "reference" and n >= 100_000 else 1
    if impl == "floor":
        cands = _inputs(n)["native"][2]
        getter = operator.attrgetter(*FIELDS)

        def read_fields() -> list[tuple[Any, ...]]:
            return list(map(getter, cands))

        rows = benchmark.pedantic(read_fields, rounds=rounds, warmup_rounds=warmup)
        assert len(rows) == n
        return

    build, build_input, cands = _inputs(n)[impl]
    failure_file = bench_set.failure_file

    def run() -> Any:
        return build(build_input(cands, max_chars, failure_file))

    result = benchmark.pedantic(run, rounds=rounds, warmup_rounds=warmup)
    assert result.to_dict() == expected
