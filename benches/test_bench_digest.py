"""Benchmarks of the result digest and the input cache key against a 10k-candidate build.

Run with ``python -m pytest benches/test_bench_digest.py --benchmark-only``. One group per
budget, side by side in one run:

* ``build``: ``repo_context.build(BuildInput(candidates, max_chars, failure_file))``, which now
  also collects the failing files' failure windows and reports ``missing_critical``;
* ``build+digest``: the same build, then ``result.digest`` (computed on first use: SHA-256 of
  every selected item's content and fields);
* ``cache_key``: ``repo_context.cache_key`` of the same input (reads and validates every
  candidate, hashes all of their contents);
* ``build+groups``: the same candidates, each pair of consecutive ones in one group
  (``group=i // 2``: 5,000 groups), so that every candidate goes through the group path.

The generated set is the one of ``test_bench_build.py`` (``generate.py``).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
import repo_context
from generate import BenchSet, generate

N = 10_000
BUDGETS = ("2%", "20%", "100%")
ROUNDS = 100


@functools.lru_cache(maxsize=1)
def _set() -> BenchSet:
    return generate(N)


@functools.lru_cache(maxsize=1)
def _cands() -> list[Any]:
    return _set().candidates(repo_context.Candidate)


@functools.lru_cache(maxsize=1)
def _grouped() -> list[Any]:
    C = repo_context.Candidate
    return [
        C(c.path, c.start, c.end, c.content, c.reason, c.score, group=i // 2) for i, c in enumerate(_cands())
    ]


def _input(budget: str, cands: Any = None) -> Any:
    s = _set()
    return repo_context.BuildInput(_cands() if cands is None else cands, s.budgets[budget], s.failure_file)


def _build_groups(budget: str) -> Any:
    return repo_context.build(_input(budget, _grouped()))


def _build(budget: str) -> Any:
    return repo_context.build(_input(budget))


def _build_digest(budget: str) -> str:
    return repo_context.build(_input(budget)).digest


def _key(budget: str) -> str:
    return repo_context.cache_key(_input(budget))


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("what", ["build", "build+digest", "build+groups", "cache_key"])
def test_digest_cost(benchmark: Any, what: str, budget: str) -> None:
    benchmark.group = f"digest 10k {budget}"
    fn = {"build": _build, "build+digest": _build_digest, "build+groups": _build_groups, "cache_key": _key}[
        what
    ]
    result = benchmark.pedantic(fn, args=(budget,), rounds=ROUNDS, warmup_rounds=5, iterations=1)
    assert result is not None
    if what == "build+digest":
        assert result == repo_context.reference.build(_input(budget)).digest
    if what == "build+groups":
        assert result == repo_context.reference.build(_input(budget, _grouped()))
