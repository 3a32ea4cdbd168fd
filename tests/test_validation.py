"""Validation, canonicalisation, input forms and limits, on both engines."""

from __future__ import annotations

import math
import types
from collections import namedtuple
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from conftest import MAX_LINE, ForeignCandidate, Idx, snapshot, strict


@dataclass(frozen=True)
class NoScore:
    path: Any
    start: Any
    end: Any
    content: Any
    reason: Any


NamedCandidate = namedtuple("NamedCandidate", "path start end content reason score")


class ReadOnlyMapping(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = dict(data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def good(**overrides: Any) -> dict[str, Any]:
    cand: dict[str, Any] = {
        "path": "src/a.py",
        "start": 5,
        "end": 9,
        "content": "abc",
        "reason": "search",
        "score": 1.0,
    }
    cand.update(overrides)
    return cand


def without(field: str, **overrides: Any) -> dict[str, Any]:
    cand = good(**overrides)
    del cand[field]
    return cand


def check_error(
    engine: Any, data: Any, exc_type: type[BaseException], index: int | None, field: str
) -> BaseException:
    with pytest.raises(exc_type) as info:
        engine(data)
    err = info.value
    assert type(err) is exc_type, f"{type(err).__name__}: {err}"
    assert err.index == index, str(err)  # type: ignore[attr-defined]
    assert err.field == field, str(err)  # type: ignore[attr-defined]
    problem = err.problem  # type: ignore[attr-defined]
    assert isinstance(problem, str) and problem
    message = str(err)
    assert field in message
    if index is not None:
        assert str(index) in message
    return err


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("content", b"abc", "must be a str, not bytes"),
        ("content", None, "must be a str, not NoneType"),
        ("content", ["abc"], "must be a str, not list"),
    ],
)
def test_a_wrong_type_is_named_in_the_problem(
    engine: Any, rc: Any, field: str, value: Any, problem: str
) -> None:
    bad = good()
    bad[field] = value
    err = check_error(
        engine, {"candidates": [good(path="x.py"), bad], "max_chars": 100}, rc.InvalidCandidateError, 1, field
    )
    assert (err.problem, str(err)) == (problem, f"candidate 1: field {field!r}: {problem}")  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# Exception hierarchy
# ---------------------------------------------------------------------------


def test_exception_hierarchy(rc: Any) -> None:
    assert issubclass(rc.InvalidInputError, ValueError)
    assert issubclass(rc.InvalidCandidateError, rc.InvalidInputError)
    assert issubclass(rc.ResourceLimitError, rc.InvalidInputError)
    assert not issubclass(rc.ResourceLimitError, rc.InvalidCandidateError)


# ---------------------------------------------------------------------------
# Every invalid candidate kind
# ---------------------------------------------------------------------------

BAD_VALUES: list[tuple[str, Any, dict[str, Any]]] = [
    # path
    ("path", "", {}),
    ("path", "/abs.py", {}),
    ("path", "/", {}),
    ("path", "//a.py", {}),
    ("path", "a/../b.py", {}),
    ("path", "..", {}),
    ("path", "../a.py", {}),
    ("path", "a/..", {}),
    ("path", "./../a.py", {}),
    ("path", "a\\b.py", {}),
    ("path", "\\a.py", {}),
    ("path", "a\x00b.py", {}),
    ("path", "\x00", {}),
    ("path", ".", {}),
    ("path", "./", {}),
    ("path", "//", {}),
    ("path", "./././", {}),
    ("path", None, {}),
    ("path", 1, {}),
    ("path", b"a.py", {}),
    ("path", ["a.py"], {}),
    # start
    ("start", 0, {}),
    ("start", -1, {}),
    ("start", MAX_LINE + 1, {"end": MAX_LINE + 1}),
    ("start", 2**64, {"end": 2**64}),
    ("start", -(2**64), {}),
    ("start", True, {}),
    ("start", False, {}),
    ("start", 1.0, {}),
    ("start", 5.0, {}),
    ("start", "1", {}),
    ("start", None, {}),
    ("start", Idx(0), {}),
    ("start", Idx(MAX_LINE + 1), {"end": MAX_LINE + 1}),
    # end
    ("end", 4, {"start": 5}),
    ("end", 0, {"start": 1}),
    ("end", -1, {"start": 1}),
    ("end", MAX_LINE + 1, {}),
    ("end", 2**64, {}),
    ("end", True, {"start": 1}),
    ("end", 9.0, {}),
    ("end", "9", {}),
    ("end", None, {}),
    ("end", Idx(4), {"start": 5}),
    ("end", Idx(MAX_LINE + 1), {}),
    # content
    ("content", None, {}),
    ("content", b"abc", {}),
    ("content", 1, {}),
    ("content", ["abc"], {}),
    # reason
    ("reason", "Search", {}),
    ("reason", "SEARCH", {}),
    ("reason", "FAILURE", {}),
    ("reason", "", {}),
    ("reason", "search ", {}),
    ("reason", "refs", {}),
    ("reason", None, {}),
    ("reason", 1, {}),
    ("reason", b"search", {}),
    # score
    ("score", math.nan, {}),
    ("score", math.inf, {}),
    ("score", -math.inf, {}),
    ("score", True, {}),
    ("score", False, {}),
    ("score", 10**400, {}),
    ("score", -(10**400), {}),
    ("score", 2**1024, {}),
    ("score", 2**1024 - 1, {}),
    ("score", 2**1024 - 2**970, {}),  # rounds up to 2**1024 as float64
    ("score", -(2**1024 - 2**970), {}),
    ("score", "1.0", {}),
    ("score", None, {}),
    ("score", Decimal("1"), {}),
    ("score", Fraction(1, 2), {}),
    ("score", 1j, {}),
]


@pytest.mark.parametrize(
    ("field", "value", "others"),
    BAD_VALUES,
    ids=[f"{f}={v!r}" for f, v, _ in BAD_VALUES],
)
def test_invalid_candidate_field(
    engine: Any, rc: Any, field: str, value: Any, others: dict[str, Any]
) -> None:
    bad = good(**others)
    bad[field] = value
    cands = [good(path="x.py"), good(path="y.py"), good(path="z.py"), bad, good(path="w.py")]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 3, field)


@pytest.mark.parametrize(
    ("field", "value", "others"),
    BAD_VALUES,
    ids=[f"{f}={v!r}" for f, v, _ in BAD_VALUES],
)
def test_invalid_candidate_field_as_object(
    engine: Any, rc: Any, field: str, value: Any, others: dict[str, Any]
) -> None:
    bad = good(**others)
    bad[field] = value
    cands = [rc.Candidate(**good(path="x.py")), ForeignCandidate(**bad)]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 1, field)


@pytest.mark.parametrize("field", ["path", "start", "end", "content", "reason", "score"])
def test_missing_key_reported_for_that_field(engine: Any, rc: Any, field: str) -> None:
    cands = [good(path="x.py"), without(field)]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 1, field)


def test_missing_attribute_reported_for_that_field(engine: Any, rc: Any) -> None:
    cands = [good(path="x.py"), NoScore("a.py", 1, 2, "x", "search")]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 1, "score")


@pytest.mark.parametrize("bad", [None, 42, "src/a.py", object()])
def test_candidate_that_is_neither_mapping_nor_object_with_fields(engine: Any, rc: Any, bad: Any) -> None:
    cands = [good(path="x.py"), bad]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 1, "path")


FIELD_ORDER_CASES: list[tuple[dict[str, Any], str]] = [
    (
        {"path": "/abs", "start": 0, "end": -1, "content": None, "reason": "x", "score": math.nan},
        "path",
    ),
    ({"start": 0, "end": -1, "content": None, "reason": "x", "score": math.nan}, "start"),
    ({"start": True, "end": True, "content": None}, "start"),
    ({"end": 1, "content": None, "reason": "x", "score": math.nan}, "end"),
    ({"content": None, "reason": "x", "score": math.nan}, "content"),
    ({"reason": "x", "score": math.nan}, "reason"),
    ({"score": True}, "score"),
]


@pytest.mark.parametrize(("overrides", "field"), FIELD_ORDER_CASES)
def test_first_failing_field_in_field_order(
    engine: Any, rc: Any, overrides: dict[str, Any], field: str
) -> None:
    cands = [good(**overrides)]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 0, field)


MISSING_LATER_CASES: list[tuple[dict[str, Any], str, str]] = [
    ({"path": ""}, "content", "path"),
    ({"path": "/abs"}, "score", "path"),
    ({"start": 0}, "reason", "start"),
    ({"start": 5, "end": 4}, "content", "end"),
    ({"content": None}, "score", "content"),
    ({"reason": "nope"}, "score", "reason"),
]


@pytest.mark.parametrize(("overrides", "missing", "field"), MISSING_LATER_CASES)
def test_missing_later_field_does_not_preempt_earlier_bad_field(
    engine: Any, rc: Any, overrides: dict[str, Any], missing: str, field: str
) -> None:
    as_dict = without(missing, **overrides)
    as_object = types.SimpleNamespace(**as_dict)
    for cand in (as_dict, as_object):
        data = {"candidates": [good(path="ok.py"), cand], "max_chars": 100}
        check_error(engine, data, rc.InvalidCandidateError, 1, field)


@pytest.mark.parametrize("missing", ["path", "start", "end", "content", "reason", "score"])
def test_missing_field_reported_before_later_bad_fields(engine: Any, rc: Any, missing: str) -> None:
    # Every field after the missing one is also bad; the missing one is reported.
    bad_values = {"path": "/abs", "start": 0, "end": -1, "content": None, "reason": "x"}
    order = ["path", "start", "end", "content", "reason", "score"]
    later = {k: v for k, v in bad_values.items() if order.index(k) > order.index(missing)}
    if missing != "score":
        later["score"] = math.nan
    cand = without(missing, **later)
    data = {"candidates": [good(path="ok.py"), cand], "max_chars": 100}
    check_error(engine, data, rc.InvalidCandidateError, 1, missing)


def test_first_offending_candidate_in_input_order_wins(engine: Any, rc: Any) -> None:
    cands = [
        good(path="a.py", reason="reference", score=100.0),
        good(path="b.py", score=math.nan),  # index 1: bad score
        good(path="/abs.py"),  # index 2: bad path (an earlier field)
        good(path="c.py", start=0),
    ]
    check_error(engine, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 1, "score")


def test_first_offending_candidate_not_the_top_ranked(engine: Any, rc: Any) -> None:
    # Index 2 would rank first (failure file); index 1 comes first in input order.
    cands = [
        good(path="a.py"),
        good(path="b.py", reason="nope"),
        good(path="f.py", reason="failure", content=None),
    ]
    data = {"candidates": cands, "max_chars": 100, "failure_file": "f.py"}
    check_error(engine, data, rc.InvalidCandidateError, 1, "reason")


def test_invalid_candidate_rejected_even_if_it_would_never_fit(engine: Any, rc: Any) -> None:
    cands = [
        good(path="a.py", content="x" * 10, reason="reference"),
        good(path="b.py", content="y" * 1000, score=-math.inf),
    ]
    check_error(engine, {"candidates": cands, "max_chars": 10}, rc.InvalidCandidateError, 1, "score")


def test_invalid_candidate_rejected_even_with_zero_budget(engine: Any, rc: Any) -> None:
    cands = [good(path="a.py"), good(path="b.py", end=1, start=2)]
    check_error(engine, {"candidates": cands, "max_chars": 0}, rc.InvalidCandidateError, 1, "end")


def test_invalid_candidate_rejected_even_if_it_would_be_overlapped(engine: Any, rc: Any) -> None:
    cands = [
        good(path="a.py", start=1, end=100, reason="reference"),
        good(path="a.py", start=5, end=6, reason="Search"),
    ]
    check_error(engine, {"candidates": cands, "max_chars": 1000}, rc.InvalidCandidateError, 1, "reason")


# ---------------------------------------------------------------------------
# Integers, bools, floats
# ---------------------------------------------------------------------------


def test_index_objects_accepted_for_start_and_end(engine: Any) -> None:
    cands = [good(path="a.py", start=Idx(3), end=Idx(7)), good(path="a.py", start=Idx(7), end=8)]
    result = engine({"candidates": cands, "max_chars": 100})
    assert list(result.selected) == [0]
    item = result.items[0]
    assert type(item.start) is int and item.start == 3
    assert type(item.end) is int and item.end == 7
    assert [(o.index, o.reason, o.overlaps) for o in result.omitted] == [(1, "overlap", 0)]
    d = result.to_dict()["items"][0]
    assert type(d["start"]) is int and type(d["end"]) is int


def test_index_objects_at_line_range_limits(engine: Any) -> None:
    cands = [good(start=Idx(1), end=Idx(MAX_LINE))]
    result = engine({"candidates": cands, "max_chars": 100})
    assert (result.items[0].start, result.items[0].end) == (1, MAX_LINE)
    assert type(result.items[0].end) is int


def test_start_equal_end_and_line_limits_accepted(engine: Any) -> None:
    cands = [
        good(path="a.py", start=1, end=1),
        good(path="b.py", start=MAX_LINE, end=MAX_LINE),
        good(path="c.py", start=1, end=MAX_LINE),
    ]
    result = engine({"candidates": cands, "max_chars": 100})
    assert sorted(result.selected) == [0, 1, 2]


@pytest.mark.parametrize("field", ["start", "end"])
@pytest.mark.parametrize("value", [True, False])
def test_bool_rejected_for_lines(engine: Any, rc: Any, field: str, value: bool) -> None:
    cand = good(start=1, end=1)
    cand[field] = value
    check_error(engine, {"candidates": [cand], "max_chars": 9}, rc.InvalidCandidateError, 0, field)


@pytest.mark.parametrize("value", [True, False])
def test_bool_rejected_for_score(engine: Any, rc: Any, value: bool) -> None:
    cands = [good(score=value)]
    check_error(engine, {"candidates": cands, "max_chars": 9}, rc.InvalidCandidateError, 0, "score")


@pytest.mark.parametrize("value", [True, False])
def test_bool_rejected_for_max_chars(engine: Any, rc: Any, value: bool) -> None:
    check_error(
        engine,
        {"candidates": [good()], "max_chars": value},
        rc.InvalidInputError,
        None,
        "max_chars",
    )


@pytest.mark.parametrize(
    "score",
    [
        0,
        -1,
        2**63,
        2**64,
        -(2**64),
        10**300,
        2**1024 - 2**970 - 1,  # the largest int that rounds to a finite float
        -(2**1024 - 2**970 - 1),
        1.7976931348623157e308,
        -1.7976931348623157e308,
        5e-324,
        -0.0,
    ],
)
def test_valid_scores_accepted_and_kept(engine: Any, score: Any) -> None:
    result = engine({"candidates": [good(score=score)], "max_chars": 100})
    assert list(result.selected) == [0]
    assert strict(result.items[0].score) == strict(score)


def test_huge_int_score_ranks_as_float(engine: Any) -> None:
    cands = [
        good(path="a.py", score=1.7976931348623157e308),
        good(path="b.py", score=2**1024 - 2**970 - 1),  # same float64: tie, input order
        good(path="c.py", score=2**1023),
    ]
    result = engine({"candidates": cands, "max_chars": 100})
    assert list(result.selected) == [0, 1, 2]


def test_negative_zero_ties_with_zero(engine: Any) -> None:
    for first, second in [(-0.0, 0.0), (0.0, -0.0), (0, -0.0), (-0.0, 0)]:
        cands = [
            good(path="a.py", start=1, end=2, score=first),
            good(path="a.py", start=2, end=3, score=second),
        ]
        result = engine({"candidates": cands, "max_chars": 100})
        assert list(result.selected) == [0], (first, second)
        assert [(o.index, o.overlaps) for o in result.omitted] == [(1, 0)]


def test_huge_max_chars_accepted(engine: Any) -> None:
    cands = [good(path="a.py"), good(path="b.py")]
    for max_chars in [2**31, 2**63 - 1, 2**64, 2**100]:
        result = engine({"candidates": cands, "max_chars": max_chars})
        assert list(result.selected) == [0, 1], max_chars
        assert result.truncated is False


# ---------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------

CANONICAL = [
    ("./src//a.py", "src/a.py"),
    ("a/", "a"),
    ("a", "a"),
    ("./a", "a"),
    ("a/./b", "a/b"),
    ("a//b//", "a/b"),
    ("././a/./", "a"),
    (".a/b", ".a/b"),
    ("a/.b", "a/.b"),
    ("...", "..."),
    ("a/.../b", "a/.../b"),
    ("a..b/c", "a..b/c"),
    (" a /b ", " a /b "),
    ("Src/A.PY", "Src/A.PY"),
    ("日本/ファイル.py", "日本/ファイル.py"),
    ("😀/\ud800.py", "😀/\ud800.py"),
]


@pytest.mark.parametrize(("raw", "expected"), CANONICAL)
def test_path_canonicalised_in_items(engine: Any, raw: str, expected: str) -> None:
    result = engine({"candidates": [good(path=raw)], "max_chars": 100})
    assert result.items[0].path == expected
    assert result.to_dict()["items"][0]["path"] == expected


@pytest.mark.parametrize(("raw", "expected"), CANONICAL)
def test_failure_file_canonicalised(engine: Any, raw: str, expected: str) -> None:
    cands = [
        good(path="zzz/other.py", reason="reference", score=100.0),
        good(path=expected, reason="search", score=-100.0),
    ]
    result = engine({"candidates": cands, "max_chars": 3, "failure_file": raw})
    assert list(result.selected) == [1]
    assert [(o.index, o.rank) for o in result.omitted] == [(0, 1)]


def test_non_canonical_candidate_path_matches_failure_file(engine: Any) -> None:
    cands = [
        good(path="other.py", reason="reference", score=100.0),
        good(path="./pkg//mod.py/", reason="search", score=-100.0),
    ]
    result = engine({"candidates": cands, "max_chars": 3, "failure_file": "pkg/./mod.py"})
    assert list(result.selected) == [1]
    assert result.items[0].path == "pkg/mod.py"


BAD_FAILURE_FILES = ["", "/abs.py", "/", "a/../b", "..", ".", "./", "//", "a\\b", "a\x00", 1, b"a"]


@pytest.mark.parametrize("value", BAD_FAILURE_FILES, ids=repr)
def test_invalid_failure_file(engine: Any, rc: Any, value: Any) -> None:
    data = {"candidates": [good()], "max_chars": 10, "failure_file": value}
    check_error(engine, data, rc.InvalidInputError, None, "failure_file")


# ---------------------------------------------------------------------------
# Top-level fields
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [None, 5, "candidates", b"x", [good()], object()],
    # Stable ids (an object's repr holds its address), so that pytest-xdist workers agree.
    ids=lambda value: type(value).__name__ if type(value) is object else repr(value),
)
def test_invalid_input_object(engine: Any, rc: Any, value: Any) -> None:
    check_error(engine, value, rc.InvalidInputError, None, "input")


@pytest.mark.parametrize("value", [None, 5, 1.5], ids=repr)
def test_invalid_candidates_container(engine: Any, rc: Any, value: Any) -> None:
    check_error(engine, {"candidates": value, "max_chars": 1}, rc.InvalidInputError, None, "candidates")


def test_missing_candidates_key(engine: Any, rc: Any) -> None:
    check_error(engine, {"max_chars": 1}, rc.InvalidInputError, None, "candidates")


@pytest.mark.parametrize("value", [-1, -(2**70), 1.0, 0.0, "5", None, Idx(-1)], ids=repr)
def test_invalid_max_chars(engine: Any, rc: Any, value: Any) -> None:
    data = {"candidates": [good()], "max_chars": value}
    check_error(engine, data, rc.InvalidInputError, None, "max_chars")


def test_missing_max_chars(engine: Any, rc: Any) -> None:
    check_error(engine, {"candidates": [good()]}, rc.InvalidInputError, None, "max_chars")


@pytest.mark.parametrize("key", ["extra", "maxchars", "max-chars", "Candidates", "failurefile"])
def test_unknown_top_level_key_rejected(engine: Any, rc: Any, key: str) -> None:
    data = {"candidates": [good()], "max_chars": 10, key: 1}
    check_error(engine, data, rc.InvalidInputError, None, key)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"max_chars": 3, "maxChars": 3}, "max_chars"),
        ({"max_chars": 3, "maxChars": 4}, "max_chars"),
    ],
)
def test_both_spellings_of_max_chars(engine: Any, rc: Any, extra: dict[str, Any], field: str) -> None:
    data = {"candidates": [good()], **extra}
    check_error(engine, data, rc.InvalidInputError, None, field)


@pytest.mark.parametrize(
    "extra",
    [
        {"failure_file": "a.py", "failureFile": "a.py"},
        {"failure_file": None, "failureFile": None},
        {"failure_file": "a.py", "failureFile": None},
    ],
)
def test_both_spellings_of_failure_file(engine: Any, rc: Any, extra: dict[str, Any]) -> None:
    data = {"candidates": [good()], "max_chars": 10, **extra}
    check_error(engine, data, rc.InvalidInputError, None, "failure_file")


def test_top_level_fields_validated_before_candidates(engine: Any, rc: Any) -> None:
    bad_cands = [good(path="/abs")]
    check_error(engine, {"candidates": bad_cands, "max_chars": -1}, rc.InvalidInputError, None, "max_chars")
    check_error(
        engine,
        {"candidates": bad_cands, "max_chars": 1, "failure_file": ""},
        rc.InvalidInputError,
        None,
        "failure_file",
    )
    check_error(
        engine,
        {"candidates": bad_cands, "max_chars": 1, "bogus": 0},
        rc.InvalidInputError,
        None,
        "bogus",
    )
    check_error(
        engine,
        {"candidates": bad_cands, "max_chars": 1, "maxChars": 1},
        rc.InvalidInputError,
        None,
        "max_chars",
    )


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"candidates": None, "max_chars": 1}, "candidates"),
        ({"candidates": [good()], "max_chars": -1}, "max_chars"),
        ({"candidates": [good()], "max_chars": True}, "max_chars"),
        ({"candidates": [good()], "max_chars": 1, "failure_file": ""}, "failure_file"),
        ({"candidates": [good()], "max_chars": 1, "failure_file": "../x"}, "failure_file"),
    ],
)
def test_invalid_build_input_fields(engine: Any, rc: Any, kwargs: dict[str, Any], field: str) -> None:
    # BuildInput may validate at construction or leave it to build(); either way
    # the error is an InvalidInputError naming the field.
    with pytest.raises(rc.InvalidInputError) as info:
        engine(rc.BuildInput(**kwargs))
    err = info.value
    assert type(err) is rc.InvalidInputError
    assert err.index is None
    assert err.field == field


def test_build_input_invalid_candidate(engine: Any, rc: Any) -> None:
    inp = rc.BuildInput([good(path="a.py"), rc.Candidate("b.py", 3, 2, "x", "search", 1.0)], 10)
    check_error(engine, inp, rc.InvalidCandidateError, 1, "end")


# ---------------------------------------------------------------------------
# Input forms
# ---------------------------------------------------------------------------


def test_mapping_input_forms(engine: Any, rc: Any) -> None:
    cands = [good(path="a.py", score=2.0), good(path="a.py", start=6, end=7, score=1.0)]
    expected = engine({"candidates": cands, "max_chars": 100})
    assert list(expected.selected) == [0]
    for data in [
        types.MappingProxyType({"candidates": cands, "max_chars": 100}),
        ReadOnlyMapping({"candidates": cands, "max_chars": 100}),
        ReadOnlyMapping({"candidates": cands, "maxChars": 100, "failureFile": None}),
        rc.BuildInput(cands, 100),
    ]:
        assert engine(data) == expected


def test_candidate_forms_are_equivalent(engine: Any, rc: Any) -> None:
    fields = [
        ("./a.py", 1, 10, "one", "reference", 1),
        ("a.py", 5, 12, "two", "search", 9.5),
        ("b.py/", 3, 3, "three", rc.Reason.FAILURE, -0.0),
        ("c.py", 2, 4, "four", "search", 2**60),
    ]
    as_dicts = [
        dict(zip(("path", "start", "end", "content", "reason", "score"), f, strict=True)) for f in fields
    ]
    forms = [
        as_dicts,
        [rc.Candidate(*f) for f in fields],
        [ForeignCandidate(*f) for f in fields],
        [NamedCandidate(*f) for f in fields],
        [types.SimpleNamespace(**d) for d in as_dicts],
        [types.MappingProxyType(d) for d in as_dicts],
        [ReadOnlyMapping(d) for d in as_dicts],
        [
            as_dicts[0],
            rc.Candidate(*fields[1]),
            ForeignCandidate(*fields[2]),
            types.MappingProxyType(as_dicts[3]),
        ],
    ]
    results = [engine({"candidates": form, "max_chars": 9}) for form in forms]
    first = results[0]
    assert list(first.selected) == [0, 2]
    assert [(o.index, o.rank, o.reason, o.overlaps) for o in first.omitted] == [
        (3, 2, "budget", None),
        (1, 3, "overlap", 0),
    ]
    for r in results[1:]:
        assert r == first
        assert strict(r.to_dict()) == strict(first.to_dict())


def test_extra_keys_in_candidate_mapping_ignored(engine: Any) -> None:
    cands = [good(path="a.py", extra="ignored", id=7), good(path="b.py")]
    result = engine({"candidates": cands, "max_chars": 100})
    assert list(result.selected) == [0, 1]
    assert result.items[0].to_dict() == {
        "path": "a.py",
        "start": 5,
        "end": 9,
        "content": "abc",
        "reason": "search",
        "score": 1.0,
    }


def test_candidates_as_tuple(engine: Any) -> None:
    result = engine({"candidates": (good(path="a.py"), good(path="b.py")), "max_chars": 100})
    assert list(result.selected) == [0, 1]


# ---------------------------------------------------------------------------
# Limits
# ---------------------------------------------------------------------------


def test_builder_limits_are_keyword_only(builder_cls: Any) -> None:
    with pytest.raises(TypeError):
        builder_cls(10)
    with pytest.raises(TypeError):
        builder_cls(10, 100)


def test_candidate_count_limit(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_candidates=2)
    ok = builder.build({"candidates": [good(path="a.py"), good(path="b.py")], "max_chars": 100})
    assert list(ok.selected) == [0, 1]
    three = [good(path="a.py"), good(path="b.py"), good(path="c.py")]
    check_error(
        builder.build,
        {"candidates": three, "max_chars": 100},
        rc.ResourceLimitError,
        None,
        "candidates",
    )


def test_candidate_count_limit_checked_before_candidate_validation(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_candidates=2)
    bad = [good(path="/abs"), good(score=math.nan), good(reason="x")]
    check_error(
        builder.build,
        {"candidates": bad, "max_chars": 100},
        rc.ResourceLimitError,
        None,
        "candidates",
    )


def test_zero_candidate_limit(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_candidates=0)
    assert list(builder.build({"candidates": [], "max_chars": 0}).selected) == []
    check_error(
        builder.build,
        {"candidates": [good()], "max_chars": 0},
        rc.ResourceLimitError,
        None,
        "candidates",
    )


def test_total_chars_limit(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_total_chars=10)
    exact = [good(path="a.py", content="x" * 5), good(path="b.py", content="日本語テス")]
    assert list(builder.build({"candidates": exact, "max_chars": 100}).selected) == [0, 1]
    over = [
        good(path="a.py", content="x" * 4),
        good(path="b.py", content="y" * 4),
        good(path="c.py", content="😀" * 4),  # 12 code points in total
        good(path="/abs"),
    ]
    check_error(builder.build, {"candidates": over, "max_chars": 100}, rc.ResourceLimitError, 2, "content")


def test_total_chars_limit_first_candidate(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_total_chars=10)
    cands = [good(content="x" * 11)]
    check_error(builder.build, {"candidates": cands, "max_chars": 0}, rc.ResourceLimitError, 0, "content")


def test_total_chars_checked_after_each_candidates_fields(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_total_chars=10)
    # Index 1 pushes the total over the limit but also has a bad score: its fields
    # are checked first, so the field error wins.
    cands = [good(path="a.py", content="x" * 8), good(path="b.py", content="y" * 6, score=math.nan)]
    check_error(builder.build, {"candidates": cands, "max_chars": 100}, rc.InvalidCandidateError, 1, "score")
    # Index 0 alone is over the limit: that is reported before index 1's bad field.
    cands = [good(path="a.py", content="x" * 11), good(path="b.py", score=math.nan)]
    check_error(builder.build, {"candidates": cands, "max_chars": 100}, rc.ResourceLimitError, 0, "content")
    # A bad field before the limit is reached wins over a later limit breach.
    cands = [good(path="a.py", reason="bad"), good(path="b.py", content="y" * 20)]
    check_error(
        builder.build,
        {"candidates": cands, "max_chars": 100},
        rc.InvalidCandidateError,
        0,
        "reason",
    )


def test_zero_total_chars_limit(builder_cls: Any, rc: Any) -> None:
    builder = builder_cls(max_total_chars=0)
    ok = builder.build({"candidates": [good(content="")], "max_chars": 0})
    assert list(ok.selected) == [0]
    check_error(
        builder.build,
        {"candidates": [good(content=""), good(content="a")], "max_chars": 0},
        rc.ResourceLimitError,
        1,
        "content",
    )


def test_default_limits_admit_two_to_the_28_characters(engine: Any, builder_cls: Any) -> None:
    big = "x" * 2**28
    data = {"candidates": [good(content=big)], "max_chars": 0}
    for build in (engine, builder_cls().build):
        result = build(data)
        assert list(result.selected) == []
        assert [(o.index, o.reason) for o in result.omitted] == [(0, "budget")]


def test_default_limits_admit_a_million_candidates(engine: Any) -> None:
    cand = {"path": "a.py", "start": 1, "end": 1, "content": "", "reason": "search", "score": 0.0}
    n = 1_000_000
    result = engine({"candidates": [cand] * n, "max_chars": 0})
    assert list(result.selected) == [0]
    assert len(result.omitted) == n - 1
    last = result.omitted[-1]
    assert (last.index, last.rank, last.reason, last.overlaps) == (n - 1, n - 1, "overlap", 0)


# ---------------------------------------------------------------------------
# The caller's objects are never mutated
# ---------------------------------------------------------------------------


def _mixed_input(rc: Any) -> dict[str, Any]:
    return {
        "candidates": [
            good(path="./src//a.py", start=Idx(1), end=Idx(10), reason=rc.Reason.REFERENCE),
            rc.Candidate("src/a.py/", 5, 12, "two", "search", 2**64),
            ForeignCandidate("b.py", 1, 1, "three", "failure", -0.0),
            types.SimpleNamespace(path="c//d.py", start=2, end=3, content="\ud800", reason="search", score=3),
            types.MappingProxyType(good(path="e.py", content="x" * 50)),
        ],
        "maxChars": 20,
        "failureFile": "./b.py",
    }


def test_input_not_mutated_on_success(engine: Any, rc: Any) -> None:
    data = _mixed_input(rc)
    before = snapshot(data)
    result = engine(data)
    assert snapshot(data) == before
    assert list(result.selected) == [2, 0, 3]
    assert data["candidates"][0]["path"] == "./src//a.py"


def test_input_not_mutated_on_error(engine: Any, rc: Any) -> None:
    data = _mixed_input(rc)
    data["candidates"].append(good(path="ok.py"))
    data["candidates"].append(good(path="../escape.py"))
    before = snapshot(data)
    check_error(engine, data, rc.InvalidCandidateError, 6, "path")
    assert snapshot(data) == before


def test_build_input_not_mutated(engine: Any, rc: Any) -> None:
    cands = [rc.Candidate("./a.py", 1, 2, "x", "search", 1.0), good(path="b//c.py")]
    inp = rc.BuildInput(cands, 5, "a.py/")
    before_cands = snapshot(cands)
    engine(inp)
    engine(inp)
    assert snapshot(cands) == before_cands
    assert cands[0].path == "./a.py"
    assert cands[1]["path"] == "b//c.py"
