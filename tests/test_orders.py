"""Adversarial arrival orders for the per-path window index, on both engines.

Selected windows of one path are kept in an index whose query and insertion are logarithmic in
the number of windows on that path, whatever order the candidates arrive in. These tests hold
the exact decisions for the orders that make a sorted array quadratic (descending starts,
insertions in the middle, nested windows), and compare the engines on random permutations.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st


def _cands(rc: Any, windows: list[tuple[int, int]], path: str = "a.py") -> list[Any]:
    return [rc.Candidate(path, s, e, "x", "search", 1.0) for s, e in windows]


def _decisions(result: Any) -> tuple[Any, ...]:
    omitted = tuple((o.index, o.rank, o.reason, o.overlaps) for o in result.omitted)
    return (tuple(result.selected), omitted, result.used)


N = 5_000


@pytest.mark.parametrize(
    "order",
    ["ascending", "descending", "interleaved"],
)
def test_disjoint_windows_are_all_selected_in_any_order(engine: Any, rc: Any, order: str) -> None:
    lines = list(range(1, N + 1))
    if order == "descending":
        lines.reverse()
    elif order == "interleaved":  # 1, N, 2, N-1, ...: every insertion lands in the middle
        lines = [lines[i // 2] if i % 2 == 0 else lines[-1 - i // 2] for i in range(N)]
    result = engine({"candidates": _cands(rc, [(x, x) for x in lines]), "max_chars": N})
    assert list(result.selected) == list(range(N))
    assert result.omitted == ()
    assert result.used == N


def test_nested_windows_outermost_first(engine: Any, rc: Any) -> None:
    # [k, 2N - k] for k = 1..N: the first (outermost) window contains every later one.
    result = engine(
        {"candidates": _cands(rc, [(k, 2 * N - k) for k in range(1, N + 1)]), "max_chars": N}
    )
    assert result.selected == (0,)
    assert [(o.index, o.rank, o.reason, o.overlaps) for o in result.omitted] == [
        (i, i, "overlap", 0) for i in range(1, N)
    ]


def test_nested_windows_innermost_first(engine: Any, rc: Any) -> None:
    # The innermost window [N, N] first, then ever wider windows around it: all blocked by it.
    result = engine({"candidates": _cands(rc, [(N - k, N + k) for k in range(N)]), "max_chars": N})
    assert result.selected == (0,)
    assert {o.overlaps for o in result.omitted} == {0}
    assert len(result.omitted) == N - 1


def test_descending_pairs_block_the_smallest_start(engine: Any, rc: Any) -> None:
    # Disjoint windows [10j, 10j + 4] arrive in descending order, then one window spanning
    # lines 15..47 arrives: it hits [20, 24], [30, 34] and [40, 44] and names [20, 24].
    windows = [(10 * j, 10 * j + 4) for j in range(10, 0, -1)] + [(15, 47)]
    result = engine({"candidates": _cands(rc, windows), "max_chars": 100})
    assert list(result.selected) == list(range(10))
    index_of_20 = windows.index((20, 24))
    assert [(o.index, o.reason, o.overlaps) for o in result.omitted] == [(10, "overlap", index_of_20)]


def test_budget_skips_in_descending_order(engine: Any, rc: Any) -> None:
    # Descending disjoint windows whose costs alternate 3 and 1 under a budget of 6: the
    # packer skips what does not fit and keeps going, never stopping at the first miss.
    windows = [(100 - i, 100 - i) for i in range(6)]
    cands = [
        rc.Candidate("a.py", s, e, "abc" if i % 2 == 0 else "a", "search", 1.0)
        for i, (s, e) in enumerate(windows)
    ]
    result = engine({"candidates": cands, "max_chars": 6})
    assert result.selected == (0, 1, 3, 5)
    assert [(o.index, o.reason) for o in result.omitted] == [(2, "budget"), (4, "budget")]
    assert result.used == 6


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 6)), min_size=1, max_size=60),
    st.randoms(use_true_random=False),
    st.integers(0, 200),
)
def test_random_orders_agree_with_the_reference(
    windows: list[tuple[int, int]], rnd: random.Random, budget: int
) -> None:
    import bugcontext
    import bugcontext.reference as reference

    spans = [(s, s + w) for s, w in windows]
    rnd.shuffle(spans)
    cands = [
        bugcontext.Candidate(
            rnd.choice(["a.py", "b.py"]), s, e, "x" * (e - s + 1), "search", float(rnd.randint(0, 3))
        )
        for s, e in spans
    ]
    inp = {"candidates": cands, "max_chars": budget}
    assert _decisions(bugcontext.build(inp)) == _decisions(reference.build(inp))
