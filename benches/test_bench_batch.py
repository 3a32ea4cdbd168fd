"""Benchmarks of reading candidates per object, and of ``build_many`` against a loop of ``build``.

Two sets, as pytest-benchmark groups (``python -m pytest benches/test_bench_batch.py
--benchmark-only``) and as one side-by-side table of ratios (``python
benches/test_bench_batch.py``, which also prints ``os.cpu_count()``):

* **read**: ``bugcontext.build`` on the same 100k candidates given as dicts, as
  ``Candidate`` objects and as a caller's frozen dataclass, against the floor of reading every
  field once from Python: ``[g(c) for c in cands]`` with ``g = operator.itemgetter(<the six
  fields>)`` for dicts and ``operator.attrgetter(...)`` for objects. The ratio native/floor is
  what the per-object path costs over the least any reader pays.
* **batch**: 64 inputs of 2,000 candidates each (dicts, or ``Candidate`` objects), built with
  ``build_many(inputs, threads=1)``, ``build_many(inputs, threads=2)`` and
  ``[build(x) for x in inputs]``.

Outside the timed part, the results are checked equal (``build_many`` == the loop).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import operator
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bugcontext
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import FIELDS, generate

READ_N = 100_000
BATCH_INPUTS = 64
BATCH_N = 2_000
FORMS = ("dict", "Candidate", "dataclass")


@dataclasses.dataclass(frozen=True)
class Foreign:
    """A caller's own candidate type: a frozen dataclass with the six attributes."""

    path: str
    start: int
    end: int
    content: str
    reason: str
    score: float


def _make(form: str, rows: list[tuple[Any, ...]]) -> list[Any]:
    if form == "dict":
        return [dict(zip(FIELDS, row, strict=True)) for row in rows]
    if form == "Candidate":
        return [bugcontext.Candidate(*row) for row in rows]
    return [Foreign(*row) for row in rows]


@functools.cache
def read_set(form: str) -> tuple[list[Any], int, str]:
    """The 100k candidates in ``form``, a 20% budget and the failure file."""
    bench = generate(READ_N)
    return _make(form, bench.rows), bench.budgets["20%"], bench.failure_file


@functools.cache
def batch_set(form: str) -> list[dict[str, Any]]:
    """``BATCH_INPUTS`` inputs of ``BATCH_N`` candidates each, in ``form``."""
    inputs = []
    for seed in range(BATCH_INPUTS):
        bench = generate(BATCH_N, seed=seed)
        inputs.append(
            {
                "candidates": _make(form, bench.rows),
                "max_chars": bench.budgets["20%"],
                "failure_file": bench.failure_file,
            }
        )
    return inputs


def read_calls(form: str) -> dict[str, Callable[[], Any]]:
    """``native`` (a build) and ``floor`` (reading every field once) for one form."""
    cands, max_chars, failure_file = read_set(form)
    getter: Callable[[Any], Any]
    if form == "dict":
        getter = operator.itemgetter(*FIELDS)
    else:
        getter = operator.attrgetter(*FIELDS)

    def native() -> Any:
        return bugcontext.build({"candidates": cands, "max_chars": max_chars, "failure_file": failure_file})

    def floor() -> Any:
        return [getter(c) for c in cands]

    return {"native": native, "floor": floor}


def batch_calls(form: str) -> dict[str, Callable[[], Any]]:
    """``loop`` (``[build(x) ...]``) and ``build_many`` with 1 and 2 threads, for one form."""
    inputs = batch_set(form)
    return {
        "loop": lambda: [bugcontext.build(x) for x in inputs],
        "many-1": lambda: bugcontext.build_many(inputs, threads=1),
        "many-2": lambda: bugcontext.build_many(inputs, threads=2),
    }


@functools.cache
def _checked(form: str) -> bool:
    calls = batch_calls(form)
    expected = calls["loop"]()
    assert calls["many-1"]() == expected
    assert calls["many-2"]() == expected
    return True


@pytest.mark.parametrize("impl", ["native", "floor"])
@pytest.mark.parametrize("form", FORMS)
def test_read(benchmark: Any, form: str, impl: str) -> None:
    benchmark.group = f"read n={READ_N // 1000}k {form}"
    benchmark.extra_info.update(form=form, impl=impl, n=READ_N)
    out = benchmark.pedantic(read_calls(form)[impl], rounds=20, warmup_rounds=1)
    assert out is not None


@pytest.mark.parametrize("impl", ["loop", "many-1", "many-2"])
@pytest.mark.parametrize("form", ["dict", "Candidate"])
def test_batch(benchmark: Any, form: str, impl: str) -> None:
    assert _checked(form)
    benchmark.group = f"batch {BATCH_INPUTS}x{BATCH_N} {form}"
    benchmark.extra_info.update(form=form, impl=impl, cpus=os.cpu_count())
    out = benchmark.pedantic(batch_calls(form)[impl], rounds=10, warmup_rounds=1)
    assert len(out) == BATCH_INPUTS


def _medians(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds of each call, the calls taken in turn within every round (so that a change
    in the machine's load hits all of them alike)."""
    for call in calls.values():
        call()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per line (median)")
    args = parser.parse_args()
    rounds = args.rounds
    print(f"os.cpu_count() = {os.cpu_count()}; median of {rounds} rounds, a table's lines taken in turn")
    print()
    print(f"| read, n={READ_N:,} | native (ms) | floor (ms) | native/floor |")
    print("|---|---:|---:|---:|")
    for form in FORMS:
        m = _medians(read_calls(form), args.rounds)
        native, floor = m["native"], m["floor"]
        print(f"| {form} | {native * 1e3:.2f} | {floor * 1e3:.2f} | {native / floor:.2f} |")
    print()
    print(
        f"| batch, {BATCH_INPUTS} inputs x {BATCH_N:,} | loop of build (ms) | build_many threads=1 (ms) "
        "| threads=2 (ms) | loop/threads=1 | loop/threads=2 |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for form in ("dict", "Candidate"):
        assert _checked(form)
        m = _medians(batch_calls(form), args.rounds)
        loop, one, two = m["loop"], m["many-1"], m["many-2"]
        print(
            f"| {form} | {loop * 1e3:.1f} | {one * 1e3:.1f} | {two * 1e3:.1f} "
            f"| {loop / one:.2f} | {loop / two:.2f} |"
        )


if __name__ == "__main__":
    main()
