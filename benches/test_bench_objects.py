"""Benchmarks of ``build`` over a caller's own objects against the field-reading floor, and of
``build_many`` against a loop of ``build``.

Three forms of the same generated candidates (``generate.py``, 20% budget): a frozen slotted
dataclass, a plain class whose ``__init__`` sets the six attributes, and dicts; at 1k, 10k and
100k candidates. Per form and size two lines:

* ``native``: ``bugcontext.build({"candidates": cands, "max_chars": ..., "failure_file": ...})``;
* ``floor``: ``[g(c) for c in cands]`` with ``g = operator.attrgetter(<the six fields>)`` for
  objects and ``operator.itemgetter(...)`` for dicts: every field read once from Python, the
  least any reader pays.

Then, per form, 64 inputs of 2,000 candidates: ``[build(x) for x in inputs]`` against
``build_many(inputs, threads=2)``.

``python benches/test_bench_objects.py --rounds 30`` prints one Markdown table from one run: the
lines of a row are timed in turn within every round (so a change in the machine's load hits both
alike) and each figure is the minimum over the rounds. ``python -m pytest
benches/test_bench_objects.py --benchmark-only`` gives pytest-benchmark's own tables. Outside the
timing, the results of every form are checked equal (``to_dict()``), and ``build_many``'s equal
to the loop's.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import operator
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bugcontext
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import FIELDS, generate

SIZES = (1_000, 10_000, 100_000)
FORMS = ("slotted dataclass", "plain object", "dict")
BATCH_INPUTS = 64
BATCH_N = 2_000


@dataclasses.dataclass(frozen=True, slots=True)
class Slotted:
    """A caller's candidate type: a frozen slotted dataclass with the six attributes."""

    path: str
    start: int
    end: int
    content: str
    reason: str
    score: float


class Plain:
    """A caller's candidate type: a plain class, the six attributes in its instance dict."""

    def __init__(self, path: str, start: int, end: int, content: str, reason: str, score: float) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.content = content
        self.reason = reason
        self.score = score


def make(form: str, rows: list[tuple[Any, ...]]) -> list[Any]:
    if form == "dict":
        return [dict(zip(FIELDS, row, strict=True)) for row in rows]
    kind: Any = Slotted if form == "slotted dataclass" else Plain
    return [kind(*row) for row in rows]


@functools.cache
def read_set(form: str, n: int) -> tuple[list[Any], int, str]:
    """``n`` candidates in ``form``, the 20% budget and the failure file."""
    bench = generate(n)
    return make(form, bench.rows), bench.budgets["20%"], bench.failure_file


def read_calls(form: str, n: int) -> dict[str, Callable[[], Any]]:
    cands, max_chars, failure_file = read_set(form, n)
    getter = operator.itemgetter(*FIELDS) if form == "dict" else operator.attrgetter(*FIELDS)
    spec = {"candidates": cands, "max_chars": max_chars, "failure_file": failure_file}
    return {
        "native": lambda: bugcontext.build(spec),
        "floor": lambda: [getter(c) for c in cands],
    }


@functools.cache
def batch_set(form: str) -> list[dict[str, Any]]:
    inputs = []
    for seed in range(BATCH_INPUTS):
        bench = generate(BATCH_N, seed=seed)
        inputs.append(
            {
                "candidates": make(form, bench.rows),
                "max_chars": bench.budgets["20%"],
                "failure_file": bench.failure_file,
            }
        )
    return inputs


def batch_calls(form: str) -> dict[str, Callable[[], Any]]:
    inputs = batch_set(form)
    return {
        "loop": lambda: [bugcontext.build(x) for x in inputs],
        "many-2": lambda: bugcontext.build_many(inputs, threads=2),
    }


@functools.cache
def checked(n: int) -> bool:
    """Every form builds the same result; ``build_many`` equals the loop."""
    results = [read_calls(form, n)["native"]().to_dict() for form in FORMS]
    assert all(r == results[0] for r in results)
    if n == SIZES[0]:
        for form in FORMS:
            calls = batch_calls(form)
            assert [r.to_dict() for r in calls["many-2"]()] == [r.to_dict() for r in calls["loop"]()]
    return True


@pytest.mark.parametrize("impl", ["native", "floor"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("n", SIZES)
def test_read(benchmark: Any, n: int, form: str, impl: str) -> None:
    assert checked(n)
    benchmark.group = f"objects n={n // 1000}k {form}"
    benchmark.extra_info.update(form=form, impl=impl, n=n)
    rounds = 30 if n < 100_000 else 10
    out = benchmark.pedantic(read_calls(form, n)[impl], rounds=rounds, warmup_rounds=1)
    assert out is not None


@pytest.mark.parametrize("impl", ["loop", "many-2"])
@pytest.mark.parametrize("form", FORMS)
def test_batch(benchmark: Any, form: str, impl: str) -> None:
    assert checked(SIZES[0])
    benchmark.group = f"objects batch {BATCH_INPUTS}x{BATCH_N} {form}"
    benchmark.extra_info.update(form=form, impl=impl, cpus=os.cpu_count())
    out = benchmark.pedantic(batch_calls(form)[impl], rounds=10, warmup_rounds=1)
    assert len(out) == BATCH_INPUTS


def minima(calls: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Minimum seconds of each call over ``rounds``, the calls taken in turn every round."""
    for call in calls.values():
        call()  # warm-up
    best = dict.fromkeys(calls, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30, help="timed rounds per row (minimum)")
    args = parser.parse_args()
    print(f"os.cpu_count() = {os.cpu_count()}; minimum of {args.rounds} rounds, a row's lines in turn")
    print()
    print("| form | n | native | floor | native / floor |")
    print("|---|---:|---:|---:|---:|")
    for n in SIZES:
        assert checked(n)
        for form in FORMS:
            m = minima(read_calls(form, n), args.rounds)
            native, floor = m["native"], m["floor"]
            times = f"{native * 1e3:.3f} ms | {floor * 1e3:.3f} ms"
            print(f"| {form} | {n:,} | {times} | {native / floor:.2f}x |")
    print()
    head = f"form, {BATCH_INPUTS} inputs x {BATCH_N:,}"
    print(f"| {head} | loop of build | build_many, 2 threads | loop / build_many |")
    print("|---|---:|---:|---:|")
    for form in FORMS:
        m = minima(batch_calls(form), max(3, args.rounds // 3))
        loop, many = m["loop"], m["many-2"]
        print(f"| {form} | {loop * 1e3:.1f} ms | {many * 1e3:.1f} ms | {loop / many:.2f}x |")


if __name__ == "__main__":
    main()
