"""Hypothesis properties of the contract, on both engines."""

from __future__ import annotations

from typing import Any

from conftest import (
    Drawn,
    build_inputs,
    canon,
    exact_number,
    get_field,
    model_build,
    ranked_indices,
    result_summary,
    snapshot,
    strict,
)
from hypothesis import given

CROWDED = build_inputs(
    max_size=30,
    paths=["p.py", "./p.py", "p.py/", "q.py"],
    max_line=20,
    failure_files=[None, "p.py", "q.py"],
)
INPUTS = build_inputs() | CROWDED


def window(cand: Any) -> tuple[str, int, int]:
    return (
        canon(get_field(cand, "path")),
        int(get_field(cand, "start").__index__()),
        int(get_field(cand, "end").__index__()),
    )


def intersects(a: tuple[str, int, int], b: tuple[str, int, int]) -> bool:
    return a[0] == b[0] and a[1] <= b[2] and b[1] <= a[2]


@given(drawn=INPUTS)
def test_selected_windows_of_a_path_never_overlap(engine: Any, drawn: Drawn) -> None:
    result = engine(drawn.make())
    items = [(it.path, it.start, it.end) for it in result.items]
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            assert not intersects(a, b), (a, b)


@given(drawn=INPUTS)
def test_used_chars_is_sum_of_item_costs_within_budget(engine: Any, drawn: Drawn) -> None:
    result = engine(drawn.make())
    assert type(result.used_chars) is int
    assert result.used_chars == sum(len(it.content) for it in result.items)
    assert result.used_chars <= drawn.max_chars


@given(drawn=INPUTS)
def test_every_index_selected_or_omitted_exactly_once(engine: Any, drawn: Drawn) -> None:
    result = engine(drawn.make())
    seen = list(result.selected) + [o.index for o in result.omitted]
    assert sorted(seen) == list(range(len(drawn.specs)))
    assert len(result.items) == len(result.selected)
    assert result.truncated is (len(result.omitted) > 0)


@given(drawn=INPUTS)
def test_ranks_follow_the_ranking_key(engine: Any, drawn: Drawn) -> None:
    cands = drawn.candidates()
    result = engine(drawn.make_with(cands))
    order = ranked_indices(cands, drawn.failure_file)
    rank_of = {index: rank for rank, index in enumerate(order)}
    ranks = [o.rank for o in result.omitted]
    # Omitted in rank order; each rank is the index's position in the ranking.
    assert ranks == sorted(ranks)
    assert len(set(ranks)) == len(ranks)
    for o in result.omitted:
        assert o.rank == rank_of[o.index]
    # Selected in rank order too, and together they cover every rank once.
    sel_ranks = [rank_of[i] for i in result.selected]
    assert sel_ranks == sorted(sel_ranks)
    assert sorted(sel_ranks + ranks) == list(range(len(cands)))


@given(drawn=INPUTS)
def test_every_omission_is_justified(engine: Any, drawn: Drawn) -> None:
    cands = drawn.candidates()
    result = engine(drawn.make_with(cands))
    order = ranked_indices(cands, drawn.failure_file)
    rank_of = {index: rank for rank, index in enumerate(order)}
    selected = set(result.selected)
    for o in result.omitted:
        mine = window(cands[o.index])
        earlier = [i for i in result.selected if rank_of[i] < o.rank and intersects(window(cands[i]), mine)]
        if o.reason == "overlap":
            assert o.overlaps in selected
            assert o.overlaps in earlier
            assert window(cands[o.overlaps])[1] == min(window(cands[i])[1] for i in earlier)
        else:
            assert o.reason == "budget"
            assert o.overlaps is None
            assert earlier == []
            used_before = sum(
                len(get_field(cands[i], "content")) for i in result.selected if rank_of[i] < o.rank
            )
            assert used_before + len(get_field(cands[o.index], "content")) > drawn.max_chars


@given(drawn=INPUTS)
def test_items_are_the_selected_candidates(engine: Any, drawn: Drawn) -> None:
    cands = drawn.candidates()
    result = engine(drawn.make_with(cands))
    for item, i in zip(result.items, result.selected, strict=True):
        c = cands[i]
        assert item.path == canon(get_field(c, "path"))
        assert type(item.start) is int and item.start == get_field(c, "start").__index__()
        assert type(item.end) is int and item.end == get_field(c, "end").__index__()
        assert item.content is get_field(c, "content")  # an exact str: returned as is
        # The snapshot: exact built-in values (a ``Reason`` member comes back as its str).
        assert strict(item.reason) == strict(str.__str__(get_field(c, "reason")))
        assert strict(item.score) == strict(exact_number(get_field(c, "score")))


@given(drawn=INPUTS)
def test_matches_the_contract_model(engine: Any, drawn: Drawn) -> None:
    cands = drawn.candidates()
    result = engine(drawn.make_with(cands))
    expected = model_build(cands, drawn.max_chars, drawn.failure_file)
    assert strict(result_summary(result)) == strict(expected)


@given(drawn=INPUTS)
def test_input_unchanged(engine: Any, drawn: Drawn) -> None:
    inp = drawn.make()
    before = snapshot(inp)
    engine(inp)
    assert snapshot(inp) == before
    engine(inp)
    assert snapshot(inp) == before


@given(drawn=INPUTS)
def test_deterministic(engine: Any, drawn: Drawn) -> None:
    inp = drawn.make()
    first = engine(inp)
    again = engine(inp)
    fresh = engine(drawn.make())
    assert first == again == fresh
    assert strict(first.to_dict()) == strict(again.to_dict()) == strict(fresh.to_dict())
