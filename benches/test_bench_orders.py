"""Adversarial arrival orders: the per-candidate cost of ``build`` must stay flat in n.

Run with ``python benches/orders_report.py`` (or ``python -m pytest benches/test_bench_orders.py
--benchmark-only``). Every candidate is a one-line window on one path, so each selection is
an insertion into the same path's window index. Orders:

* ``ascending``: starts 1, 2, ..., n (appends);
* ``descending``: starts n, ..., 1 (every insertion in front: quadratic for a sorted array);
* ``interleaved``: 1, n, 2, n - 1, ... (every insertion in the middle);
* ``nested``: windows ``[k, 2n - k]``, outermost first: one selection, n - 1 overlap queries;
* ``random``: a seeded shuffle of the ascending order.

The native engine runs 1k to 1M, the pure-Python reference 1k to 100k (it is the
specification, not the fast path); ``floor`` reads the six fields of every candidate
(``operator.attrgetter``) and nothing else: what any engine pays for touching the objects, which
grows per candidate with n as the objects stop fitting in the CPU caches.
"""

from __future__ import annotations

import functools
import operator
import random
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest

ORDERS = ("ascending", "descending", "interleaved", "nested", "random")
SIZES = {
    "native": (1_000, 10_000, 100_000, 1_000_000),
    "floor": (1_000, 10_000, 100_000, 1_000_000),
    "reference": (1_000, 10_000, 100_000),
}
FIELDS = ("path", "start", "end", "content", "reason", "score")
ROUNDS = {1_000: 200, 10_000: 30, 100_000: 5, 1_000_000: 3}


def windows(order: str, n: int) -> list[tuple[int, int]]:
    """The (start, end) windows of one order, in arrival order."""
    if order == "nested":
        return [(k, 2 * n - k) for k in range(1, n + 1)]
    lines = list(range(1, n + 1))
    if order == "descending":
        lines.reverse()
    elif order == "interleaved":
        lines = [lines[i // 2] if i % 2 == 0 else lines[-1 - i // 2] for i in range(n)]
    elif order == "random":
        random.Random(7).shuffle(lines)
    return [(x, x) for x in lines]


@functools.lru_cache(maxsize=2)
def candidates(order: str, n: int) -> list[Any]:
    return [bugcontext.Candidate("a.py", s, e, "x", "search", 1.0) for s, e in windows(order, n)]


CASES = [
    pytest.param(impl, order, n, id=f"{impl}-{order}-{n}")
    for impl, sizes in SIZES.items()
    for order in ORDERS
    for n in sizes
]


@pytest.mark.parametrize(("impl", "order", "n"), CASES)
def test_order(benchmark: Any, impl: str, order: str, n: int) -> None:
    cands = candidates(order, n)
    benchmark.group = f"{impl} {order}"
    benchmark.extra_info.update(impl=impl, order=order, n=n)
    if impl == "floor":
        getter = operator.attrgetter(*FIELDS)
        rows = benchmark.pedantic(lambda: list(map(getter, cands)), rounds=ROUNDS[n], warmup_rounds=0)
        assert len(rows) == n
        return
    build = bugcontext.build if impl == "native" else reference.build
    rounds = ROUNDS[n] if impl == "native" else max(1, ROUNDS[n] // 5)
    result = benchmark.pedantic(
        lambda: build({"candidates": cands, "max_chars": n}), rounds=rounds, warmup_rounds=0
    )
    assert len(result.selected) == (1 if order == "nested" else n)
