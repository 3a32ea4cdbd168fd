"""The incremental BM25 index against a full ``bm25s`` rebuild: on the same documents (in the
same order) and the same query, every document's score is the same, to float32 tolerance,
after any sequence of documents replaced, removed, added and reordered."""

from __future__ import annotations

from typing import Any

import bm25s  # type: ignore[import-untyped]
import numpy as np
import pytest
from bugcontext.job.sources.search import IncrementalBM25
from hypothesis import given, settings
from hypothesis import strategies as st

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]

tokens = st.lists(st.sampled_from(WORDS), max_size=12)
corpora = st.lists(tokens, min_size=1, max_size=12).filter(lambda c: any(c))
queries = st.lists(st.sampled_from([*WORDS, "unknown"]), min_size=1, max_size=6)


def _reference(corpus: list[list[str]], query: list[str]) -> Any:
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    return retriever.get_scores(query)


def _check(index: IncrementalBM25, corpus: list[list[str]], query: list[str]) -> None:
    ours = index.get_scores(query)
    expected = _reference(corpus, query)
    assert ours.dtype == np.float32
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7)
    assert index.num_docs == len(corpus)


@settings(max_examples=150, deadline=None)
@given(corpora, queries)
def test_built_matches_bm25s(corpus: list[list[str]], query: list[str]) -> None:
    keys = [("doc", i) for i in range(len(corpus))]
    _check(IncrementalBM25(keys, corpus), corpus, query)


# An edit: for each current document, keep it, drop it or replace it (a new key, new tokens);
# new documents inserted; then the order shuffled.
edits = st.tuples(
    st.lists(st.tuples(st.sampled_from(["keep", "drop", "replace"]), tokens), max_size=12),
    st.lists(tokens, max_size=4),
    st.randoms(use_true_random=False),
)


@settings(max_examples=150, deadline=None)
@given(corpora, st.lists(edits, min_size=1, max_size=5), queries, st.sampled_from([1, 2, 8]))
def test_updated_matches_a_rebuild(
    corpus: list[list[str]], steps: list[Any], query: list[str], segments: int
) -> None:
    saved = IncrementalBM25.MAX_SEGMENTS
    IncrementalBM25.MAX_SEGMENTS = segments  # merged after every edit, every other, rarely
    try:
        _edits(corpus, steps, query)
    finally:
        IncrementalBM25.MAX_SEGMENTS = saved


def _edits(corpus: list[list[str]], steps: list[Any], query: list[str]) -> None:
    made = 0

    def fresh() -> tuple[str, int]:
        nonlocal made
        made += 1
        return ("doc", made)

    docs: list[tuple[tuple[str, int], list[str]]] = [(fresh(), list(t)) for t in corpus]
    index = IncrementalBM25([k for k, _ in docs], [t for _, t in docs])
    for choices, inserted, rng in steps:
        before = index
        before_scores = before.get_scores(query).copy()
        new_docs: list[tuple[tuple[str, int], list[str]]] = []
        for (key, toks), (what, other) in zip(docs, [*choices, *[("keep", [])] * len(docs)], strict=False):
            if what == "keep":
                new_docs.append((key, toks))
            elif what == "replace":
                new_docs.append((fresh(), list(other)))
        new_docs += [(fresh(), list(t)) for t in inserted]
        rng.shuffle(new_docs)
        if not any(t for _, t in new_docs):
            continue  # bm25s indexes no corpus without a token
        text = dict(new_docs)
        index = before.updated([k for k, _ in new_docs], text.__getitem__)
        docs = new_docs
        _check(index, [t for _, t in docs], query)
        # The index updated from is left as it was.
        np.testing.assert_array_equal(before.get_scores(query), before_scores)
    # Its plain form reads back to the same index.
    back = IncrementalBM25.from_value(index.value())
    assert back is not None
    np.testing.assert_array_equal(back.get_scores(query), index.get_scores(query))


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        IncrementalBM25([1, 2], [["a"]])
    with pytest.raises(ValueError, match="repeats"):
        IncrementalBM25([1, 1], [["a"], ["b"]])
    index = IncrementalBM25([1, 2], [["a"], ["b"]])
    with pytest.raises(ValueError, match="repeats"):
        index.updated([1, 1], lambda key: ["a"])


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: {**v, "tokens": [*v["tokens"], v["tokens"][0]]},  # a repeated token
        lambda v: {**v, "slots": [s + 100 for s in v["slots"]]},  # slots past the end
        lambda v: {**v, "keys": v["keys"][:-1]},  # keys and slots differ in length
        lambda v: {**v, "arrays": {**v["arrays"], "indptr": v["arrays"]["indptr"][:-8]}},
        lambda v: {**v, "arrays": {**v["arrays"], "counts": b"\x00"}},  # not whole numbers
        lambda v: {k: x for k, x in v.items() if k != "keys"},
        lambda v: {**v, "arrays": {**v["arrays"], "order": v["arrays"]["order"][:8] * 2}},  # a slot twice
        lambda v: [v],
    ],
)
def test_damaged_value_is_none(damage: Any) -> None:
    index = IncrementalBM25([("a", 1), ("b", 2)], [["x", "y"], ["y", "z", "z"]])
    assert IncrementalBM25.from_value(index.value()) is not None
    assert IncrementalBM25.from_value(damage(index.value())) is None


def test_a_dropped_document_without_tokens_reads_back() -> None:
    """A removed document that had no postings leaves a dead slot without dead postings:
    the plain form still merges it away (found by the differential test)."""
    saved = IncrementalBM25.MAX_SEGMENTS
    IncrementalBM25.MAX_SEGMENTS = 1
    try:
        index = IncrementalBM25([1, 2], [["alpha"], []]).updated([1], {}.__getitem__)
    finally:
        IncrementalBM25.MAX_SEGMENTS = saved
    back = IncrementalBM25.from_value(index.value())
    assert back is not None and back.num_docs == 1
    np.testing.assert_array_equal(back.get_scores(["alpha"]), index.get_scores(["alpha"]))
    np.testing.assert_array_equal(index.get_scores(["alpha"]), _reference([["alpha"]], ["alpha"]))


def test_narrow_and_wide_forms_load_the_same_index() -> None:
    """The stored form keeps the arrays as 32-bit integers when every value fits; the form
    with 64-bit arrays (and float term frequencies) loads to the same scores, and a
    ``narrow`` flag that is not a bool is damage."""
    corpus = [["a", "b", "b"], ["b", "c"], ["a", "a", "a", "d"]]
    index = IncrementalBM25(list(range(3)), corpus)
    value = index.value()
    assert value["narrow"] is True
    postings = int(np.frombuffer(value["arrays"]["indptr"], dtype=np.int32)[-1])
    assert postings == 6 and len(value["arrays"]["slots"]) == 4 * postings
    wide = {**value, "narrow": False, "arrays": dict(value["arrays"])}
    for name in ("lengths", "order", "indptr", "slots"):
        wide["arrays"][name] = np.frombuffer(value["arrays"][name], dtype=np.int32).astype(np.int64).tobytes()
    wide["arrays"]["counts"] = (
        np.frombuffer(value["arrays"]["counts"], dtype=np.int32).astype(np.float64).tobytes()
    )
    narrow_back = IncrementalBM25.from_value(value)
    wide_back = IncrementalBM25.from_value(wide)
    assert narrow_back is not None and wide_back is not None
    for query in (["a"], ["b", "b", "c"], ["d", "a", "zz"]):
        expected = index.get_scores(query)
        assert narrow_back.get_scores(query).tobytes() == expected.tobytes()
        assert wide_back.get_scores(query).tobytes() == expected.tobytes()
    assert IncrementalBM25.from_value({**value, "narrow": "yes"}) is None
