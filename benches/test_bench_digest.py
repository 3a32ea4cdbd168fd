"""What the agent-loop features add to a 10k-candidate build: the digest, groups, the cache key.

Run with ``python -m pytest benches/test_bench_digest.py --benchmark-only``. One group per
budget (2%, 20%, 100% of the content), side by side in one run, native engine:

* ``build``: ``bugcontext.build`` of 10k ``Candidate`` objects (no groups);
* ``build+digest``: the same build, then ``result.digest`` (computed on first use: SHA-256 of
  every selected item's content, on the rayon pool above 1 MiB, and of its fields);
* ``build+groups``: the same candidates, each pair of consecutive ones in one group
  (``group=i // 2``: 5,000 groups, every candidate on the group path);
* ``build+groups(10%)``: a tenth of the candidates in pairs (500 groups), the rest alone;
* ``cache_key``: ``bugcontext.cache_key`` of the input (reads and validates every candidate
  and hashes all of their contents): a separate call, not part of a build;
* ``frozen`` / ``frozen+group=None``: frozen dataclasses without a ``group`` attribute and with
  ``group = None``: equal times mean an absent optional field costs nothing.

The generated set is the one of ``test_bench_build.py`` (``generate.py``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import bugcontext
import pytest
from generate import BenchSet, generate

N = 10_000
BUDGETS = ("2%", "20%", "100%")
ROUNDS = 60


@dataclasses.dataclass(frozen=True)
class Frozen:
    path: str
    start: int
    end: int
    content: str
    reason: str
    score: float


@dataclasses.dataclass(frozen=True)
class FrozenGroup:
    path: str
    start: int
    end: int
    content: str
    reason: str
    score: float
    group: Any = None


@functools.lru_cache(maxsize=1)
def _set() -> BenchSet:
    return generate(N)


@functools.cache
def _cands(kind: str) -> list[Any]:
    rows = _set().candidates(bugcontext.Candidate)
    C = bugcontext.Candidate
    if kind == "plain":
        return rows
    if kind == "groups":
        return [
            C(c.path, c.start, c.end, c.content, c.reason, c.score, group=i // 2) for i, c in enumerate(rows)
        ]
    if kind == "groups10":
        return [
            C(c.path, c.start, c.end, c.content, c.reason, c.score, group=i // 2 if i < N // 10 else None)
            for i, c in enumerate(rows)
        ]
    if kind == "frozen":
        return _set().candidates(Frozen)
    return _set().candidates(FrozenGroup)


def _input(budget: str, kind: str = "plain") -> Any:
    s = _set()
    return bugcontext.BuildInput(_cands(kind), s.budgets[budget], s.failure_file)


WHAT = {
    "build": lambda b: bugcontext.build(_input(b)),
    "build+digest": lambda b: bugcontext.build(_input(b)).digest,
    "build+groups": lambda b: bugcontext.build(_input(b, "groups")),
    "build+groups(10%)": lambda b: bugcontext.build(_input(b, "groups10")),
    "cache_key": lambda b: bugcontext.cache_key(_input(b)),
    "frozen": lambda b: bugcontext.build(_input(b, "frozen")),
    "frozen+group=None": lambda b: bugcontext.build(_input(b, "frozen_group")),
}


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("what", list(WHAT))
def test_agent_loop_costs(benchmark: Any, what: str, budget: str) -> None:
    benchmark.group = f"agent loop 10k {budget}"
    result = benchmark.pedantic(WHAT[what], args=(budget,), rounds=ROUNDS, warmup_rounds=3, iterations=1)
    # The figures are of correct work: each equals the reference's.
    reference = {
        "build+digest": lambda: bugcontext.reference.build(_input(budget)).digest,
        "build+groups": lambda: bugcontext.reference.build(_input(budget, "groups")),
        "cache_key": lambda: bugcontext.reference.cache_key(_input(budget)),
    }.get(what)
    if reference is not None:
        assert result == reference()
    else:
        assert result.selected
