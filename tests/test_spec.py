"""The table of spec cases of the contract (README), run on both engines.

Every case states the exact expected ``selected`` indices, omission records
``(index, rank, reason, overlaps)``, ``used_chars`` and ``truncated``; the
expected items are the selected candidates with canonical paths.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import canon, strict


def C(path: str, start: int, end: int, content: str, reason: str, score: Any) -> dict[str, Any]:
    return {
        "path": path,
        "start": start,
        "end": end,
        "content": content,
        "reason": reason,
        "score": score,
    }


Om = tuple[int, int, str, "int | None"]


@dataclass
class Case:
    name: str
    candidates: list[dict[str, Any]]
    max_chars: int
    selected: list[int]
    omitted: list[Om]
    used_chars: int
    failure_file: str | None = None
    truncated: bool | None = None  # default: bool(omitted)
    notes: str = field(default="")


CASES: list[Case] = [
    Case(
        "failing file first although its score is lowest",
        [
            C("b.py", 1, 5, "bb", "reference", 100.0),
            C("a.py", 1, 5, "aa", "search", -5.0),
            C("c.py", 1, 5, "cc", "failure", 50.0),
        ],
        100,
        selected=[1, 0, 2],
        omitted=[],
        used_chars=6,
        failure_file="a.py",
    ),
    Case(
        "failing file first, budget for only one",
        [
            C("b.py", 1, 5, "bb", "reference", 100.0),
            C("a.py", 1, 5, "aa", "search", -5.0),
            C("c.py", 1, 5, "cc", "failure", 50.0),
        ],
        2,
        selected=[1],
        omitted=[(0, 1, "budget", None), (2, 2, "budget", None)],
        used_chars=2,
        failure_file="a.py",
    ),
    Case(
        "failure file matched in canonical form",
        [
            C("src/b.py", 1, 5, "bb", "reference", 100.0),
            C("./src//a.py/", 1, 5, "aa", "search", 0.0),
        ],
        2,
        selected=[1],
        omitted=[(0, 1, "budget", None)],
        used_chars=2,
        failure_file="src/./a.py",
    ),
    Case(
        "failure file that matches nothing changes nothing",
        [
            C("b.py", 1, 5, "bb", "search", 3.0),
            C("a.py", 1, 5, "aa", "reference", 1.0),
            C("c.py", 1, 5, "cc", "failure", 2.0),
        ],
        100,
        selected=[1, 2, 0],
        omitted=[],
        used_chars=6,
        failure_file="zzz.py",
    ),
    Case(
        "failure file groups all reasons of that path together, then by score",
        [
            C("a.py", 1, 2, "r", "reference", 1.0),
            C("a.py", 3, 4, "s", "search", 7.0),
            C("a.py", 5, 6, "f", "failure", 3.0),
            C("b.py", 1, 2, "x", "reference", 99.0),
        ],
        100,
        selected=[1, 2, 0, 3],
        omitted=[],
        used_chars=4,
        failure_file="a.py",
    ),
    Case(
        "reference beats a far higher-scored search",
        [
            C("x.py", 1, 3, "s", "search", 1000.0),
            C("y.py", 1, 3, "r", "reference", 0.5),
        ],
        1,
        selected=[1],
        omitted=[(0, 1, "budget", None)],
        used_chars=1,
    ),
    Case(
        "reason order is reference, failure, search",
        [
            C("s.py", 1, 1, "s", "search", 9.0),
            C("f.py", 1, 1, "f", "failure", 5.0),
            C("r.py", 1, 1, "r", "reference", 1.0),
        ],
        10,
        selected=[2, 1, 0],
        omitted=[],
        used_chars=3,
    ),
    Case(
        "a window 10..20 kept exactly as given",
        [C("a.py", 10, 20, "window", "search", 1.0)],
        100,
        selected=[0],
        omitted=[],
        used_chars=6,
    ),
    Case(
        "1..10 and 5..12: only the higher-ranked one",
        [
            C("a.py", 1, 10, "first", "search", 2.0),
            C("a.py", 5, 12, "second", "search", 1.0),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=5,
    ),
    Case(
        "1..10 and 5..12 with the ranks swapped: the other one",
        [
            C("a.py", 1, 10, "first", "search", 1.0),
            C("a.py", 5, 12, "second", "search", 2.0),
        ],
        100,
        selected=[1],
        omitted=[(0, 1, "overlap", 1)],
        used_chars=6,
    ),
    Case(
        "shared endpoint 1..10 / 10..12 overlaps",
        [
            C("a.py", 1, 10, "aaa", "search", 2.0),
            C("a.py", 10, 12, "bb", "search", 1.0),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=3,
    ),
    Case(
        "shared endpoint the other way round 10..12 / 1..10 overlaps",
        [
            C("a.py", 10, 12, "bb", "search", 2.0),
            C("a.py", 1, 10, "aaa", "search", 1.0),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=2,
    ),
    Case(
        "adjacent 1..10 / 11..12 do not overlap",
        [
            C("a.py", 1, 10, "aaa", "search", 2.0),
            C("a.py", 11, 12, "bb", "search", 1.0),
        ],
        100,
        selected=[0, 1],
        omitted=[],
        used_chars=5,
    ),
    Case(
        "single-line windows: same line overlaps, next line does not",
        [
            C("a.py", 7, 7, "x", "search", 3.0),
            C("a.py", 7, 7, "y", "search", 2.0),
            C("a.py", 8, 8, "z", "search", 1.0),
        ],
        100,
        selected=[0, 2],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=2,
    ),
    Case(
        "a window containing a selected one overlaps it",
        [
            C("a.py", 5, 6, "in", "search", 2.0),
            C("a.py", 1, 100, "outer", "search", 1.0),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=2,
    ),
    Case(
        "the same ranges in two paths are both kept",
        [
            C("a.py", 1, 10, "aa", "search", 2.0),
            C("b.py", 1, 10, "bb", "search", 1.0),
        ],
        100,
        selected=[0, 1],
        omitted=[],
        used_chars=4,
    ),
    Case(
        "paths differing only in case are different paths",
        [
            C("A.py", 1, 10, "aa", "search", 2.0),
            C("a.py", 1, 10, "bb", "search", 1.0),
        ],
        100,
        selected=[0, 1],
        omitted=[],
        used_chars=4,
    ),
    Case(
        "paths are compared in canonical form for overlap",
        [
            C("./src//a.py", 1, 10, "aa", "search", 2.0),
            C("src/a.py/", 5, 6, "bb", "search", 1.0),
            C("src/./a.py", 11, 12, "cc", "search", 0.5),
        ],
        100,
        selected=[0, 2],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=4,
    ),
    Case(
        "budget 3 skips a top-ranked 4-char candidate and takes a later 2-char one",
        [
            C("a.py", 1, 1, "abcd", "reference", 5.0),
            C("b.py", 1, 1, "xy", "search", 1.0),
        ],
        3,
        selected=[1],
        omitted=[(0, 0, "budget", None)],
        used_chars=2,
    ),
    Case(
        "never stop early: later smaller candidates still get their chance",
        [
            C("a.py", 1, 1, "abcd", "reference", 5.0),
            C("b.py", 1, 1, "xy", "search", 3.0),
            C("c.py", 1, 1, "pq", "search", 2.0),
            C("d.py", 1, 1, "z", "search", 1.0),
        ],
        3,
        selected=[1, 3],
        omitted=[(0, 0, "budget", None), (2, 2, "budget", None)],
        used_chars=3,
    ),
    Case(
        "a higher-ranked window skipped for budget does not block a smaller overlapping one",
        [
            C("a.py", 1, 100, "x" * 50, "reference", 5.0),
            C("a.py", 10, 20, "yy", "search", 1.0),
        ],
        10,
        selected=[1],
        omitted=[(0, 0, "budget", None)],
        used_chars=2,
    ),
    Case(
        "overlap is checked before budget",
        [
            C("a.py", 1, 10, "aa", "reference", 5.0),
            C("a.py", 5, 6, "x" * 100, "search", 1.0),
        ],
        3,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=2,
    ),
    Case(
        "several selected windows hit: the one with the smallest start is named",
        [
            C("a.py", 10, 15, "late", "search", 3.0),
            C("a.py", 1, 5, "early", "search", 2.0),
            C("a.py", 3, 12, "span", "search", 1.0),
        ],
        100,
        selected=[0, 1],
        omitted=[(2, 2, "overlap", 1)],
        used_chars=9,
    ),
    Case(
        "several selected windows hit, three of them: smallest start named",
        [
            C("a.py", 20, 25, "c", "search", 4.0),
            C("a.py", 12, 14, "b", "search", 3.0),
            C("a.py", 30, 31, "d", "search", 2.0),
            C("a.py", 13, 30, "span", "search", 1.0),
        ],
        100,
        selected=[0, 1, 2],
        omitted=[(3, 3, "overlap", 1)],
        used_chars=3,
    ),
    Case(
        "zero budget with candidates: truncated",
        [
            C("a.py", 1, 1, "a", "search", 1.0),
            C("b.py", 1, 1, "b", "reference", 1.0),
        ],
        0,
        selected=[],
        omitted=[(1, 0, "budget", None), (0, 1, "budget", None)],
        used_chars=0,
        truncated=True,
    ),
    Case(
        "zero budget with no candidates: not truncated",
        [],
        0,
        selected=[],
        omitted=[],
        used_chars=0,
        truncated=False,
    ),
    Case(
        "zero budget still admits empty content",
        [
            C("a.py", 1, 1, "", "search", 1.0),
            C("b.py", 1, 1, "b", "search", 0.5),
        ],
        0,
        selected=[0],
        omitted=[(1, 1, "budget", None)],
        used_chars=0,
    ),
    Case(
        "equal scores keep input order",
        [
            C("a.py", 1, 1, "a", "search", 1.0),
            C("b.py", 1, 1, "b", "search", 1.0),
            C("c.py", 1, 1, "c", "search", 1.0),
        ],
        2,
        selected=[0, 1],
        omitted=[(2, 2, "budget", None)],
        used_chars=2,
    ),
    Case(
        "equal scores keep input order when they overlap",
        [
            C("a.py", 1, 5, "first", "search", 1.0),
            C("a.py", 1, 5, "secnd", "search", 1.0),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=5,
    ),
    Case(
        "int and float scores of the same value tie (input order)",
        [
            C("a.py", 1, 1, "a", "search", 2),
            C("b.py", 1, 1, "b", "search", 2.0),
            C("c.py", 1, 1, "c", "search", 3),
        ],
        100,
        selected=[2, 0, 1],
        omitted=[],
        used_chars=3,
    ),
    Case(
        "-0.0 ties with 0.0 (input order)",
        [
            C("a.py", 1, 1, "a", "search", 0.0),
            C("b.py", 1, 1, "b", "search", -0.0),
            C("c.py", 1, 1, "c", "search", 0),
            C("d.py", 1, 1, "d", "search", -1e-300),
        ],
        100,
        selected=[0, 1, 2, 3],
        omitted=[],
        used_chars=4,
    ),
    Case(
        "-0.0 before 0.0 in input order wins the tie",
        [
            C("a.py", 1, 3, "neg", "search", -0.0),
            C("a.py", 2, 4, "pos", "search", 0.0),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=3,
    ),
    Case(
        "ints that round to the same float tie (2**53 and 2**53 + 1)",
        [
            C("a.py", 1, 3, "big0", "search", 2**53),
            C("a.py", 2, 4, "big1", "search", 2**53 + 1),
        ],
        100,
        selected=[0],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=4,
    ),
    Case(
        "ints that round to the same float tie, other input order",
        [
            C("a.py", 1, 3, "big0", "search", 2**53),
            C("a.py", 2, 4, "big1", "search", 2**53 + 1),
            C("a.py", 3, 5, "big2", "search", 2**53 + 2),
        ],
        100,
        selected=[2],
        omitted=[(0, 1, "overlap", 2), (1, 2, "overlap", 2)],
        used_chars=4,
    ),
    Case(
        "huge int scores compare as float64",
        [
            C("a.py", 1, 1, "a", "search", 2**64),
            C("b.py", 1, 1, "b", "search", 10**300),
            C("c.py", 1, 1, "c", "search", -(2**70)),
            C("d.py", 1, 1, "d", "search", 1.5),
        ],
        100,
        selected=[1, 0, 3, 2],
        omitted=[],
        used_chars=4,
    ),
    Case(
        "negative and tiny float scores order correctly",
        [
            C("a.py", 1, 1, "a", "search", -1.0),
            C("b.py", 1, 1, "b", "search", 5e-324),
            C("c.py", 1, 1, "c", "search", -1e308),
            C("d.py", 1, 1, "d", "search", 1e308),
        ],
        100,
        selected=[3, 1, 0, 2],
        omitted=[],
        used_chars=4,
    ),
    Case(
        "the same window from two sources: reference kept, search omitted as overlap",
        [
            C("a.py", 10, 20, "window", "search", 9),
            C("a.py", 10, 20, "window", "reference", 1),
        ],
        100,
        selected=[1],
        omitted=[(0, 1, "overlap", 1)],
        used_chars=6,
    ),
    Case(
        "five CJK characters fit a budget of 5 (code points)",
        [C("j.py", 1, 1, "日本語テス", "search", 1.0)],
        5,
        selected=[0],
        omitted=[],
        used_chars=5,
    ),
    Case(
        "six CJK characters do not fit a budget of 5",
        [C("j.py", 1, 1, "日本語テスト", "search", 1.0)],
        5,
        selected=[],
        omitted=[(0, 0, "budget", None)],
        used_chars=0,
    ),
    Case(
        "astral characters and lone surrogates cost one each",
        [
            C("e.py", 1, 1, "😀😀", "reference", 1.0),
            C("s.py", 1, 1, "\ud800\udfff", "search", 1.0),
            C("t.py", 1, 1, "\U0010ffff", "search", 0.0),
        ],
        4,
        selected=[0, 1],
        omitted=[(2, 2, "budget", None)],
        used_chars=4,
    ),
    Case(
        "windows at the top of the line range",
        [
            C("a.py", 2**31 - 1, 2**31 - 1, "top", "search", 2.0),
            C("a.py", 1, 2**31 - 1, "all", "search", 1.0),
            C("a.py", 2**31 - 2, 2**31 - 2, "nxt", "search", 0.5),
        ],
        100,
        selected=[0, 2],
        omitted=[(1, 1, "overlap", 0)],
        used_chars=6,
    ),
    Case(
        "budget exactly filled",
        [
            C("a.py", 1, 1, "abc", "search", 2.0),
            C("b.py", 1, 1, "de", "search", 1.0),
        ],
        5,
        selected=[0, 1],
        omitted=[],
        used_chars=5,
    ),
]


def _input(case: Case) -> dict[str, Any]:
    data: dict[str, Any] = {"candidates": case.candidates, "max_chars": case.max_chars}
    if case.failure_file is not None:
        data["failure_file"] = case.failure_file
    return data


def _check(result: Any, case: Case, rc: Any) -> None:
    assert isinstance(result, rc.BuildResult)
    assert list(result.selected) == case.selected
    got_omitted = [(o.index, o.rank, o.reason, o.overlaps) for o in result.omitted]
    assert got_omitted == case.omitted
    assert result.used_chars == case.used_chars
    expected_truncated = bool(case.omitted) if case.truncated is None else case.truncated
    assert result.truncated is expected_truncated
    assert isinstance(result.items, tuple)
    assert isinstance(result.selected, tuple)
    assert isinstance(result.omitted, tuple)
    expected_items = []
    for i in case.selected:
        c = case.candidates[i]
        expected_items.append(
            rc.Candidate(canon(c["path"]), c["start"], c["end"], c["content"], c["reason"], c["score"])
        )
    assert list(result.items) == expected_items
    for item, i in zip(result.items, case.selected, strict=True):
        c = case.candidates[i]
        assert isinstance(item, rc.Candidate)
        assert item.path == canon(c["path"])
        assert strict(item.score) == strict(c["score"])
        assert type(item.start) is int and item.start == c["start"]
        assert type(item.end) is int and item.end == c["end"]
        assert item.content == c["content"]
        assert item.reason == c["reason"]
    for o in result.omitted:
        assert isinstance(o, rc.Omission)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_spec_case(engine: Any, rc: Any, case: Case) -> None:
    _check(engine(_input(case)), case, rc)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_spec_case_via_builder_and_build_input(builder_cls: Any, rc: Any, case: Case) -> None:
    cands = [rc.Candidate(**c) for c in case.candidates]
    inp = rc.BuildInput(cands, case.max_chars, case.failure_file)
    _check(builder_cls().build(inp), case, rc)


def test_twenty_megabyte_candidate_skipped_rest_packed(engine: Any, rc: Any) -> None:
    big = "x" * 20_000_000
    case = Case(
        "20 MB top-ranked candidate with budget 4000",
        [
            C("big.py", 1, 400_000, big, "reference", 100.0),
            C("a.py", 1, 30, "a" * 1000, "search", 3.0),
            C("b.py", 1, 60, "b" * 2000, "search", 2.0),
            C("c.py", 1, 30, "c" * 1000, "search", 1.0),
            C("d.py", 1, 15, "d" * 500, "search", 0.5),
            C("big.py", 10, 20, "e" * 10, "search", 0.25),
        ],
        4000,
        selected=[1, 2, 3],
        omitted=[(0, 0, "budget", None), (4, 4, "budget", None), (5, 5, "budget", None)],
        used_chars=4000,
    )
    _check(engine(_input(case)), case, rc)


def test_twenty_megabyte_astral_candidate_counted_in_code_points(engine: Any) -> None:
    big = "😀" * 5_000_000  # 20 MB of UTF-8, 5,000,000 code points
    cands = [
        C("big.py", 1, 10, big, "reference", 1.0),
        C("small.py", 1, 1, "ok", "search", 0.0),
    ]
    result = engine({"candidates": cands, "max_chars": 5_000_001})
    assert list(result.selected) == [0]
    assert result.used_chars == 5_000_000
    assert [(o.index, o.rank, o.reason) for o in result.omitted] == [(1, 1, "budget")]
    assert result.items[0].content is big


# ---------------------------------------------------------------------------
# Input forms and aliases
# ---------------------------------------------------------------------------


def test_json_aliases_accepted(engine: Any) -> None:
    cands = [
        C("b.py", 1, 1, "bb", "reference", 9.0),
        C("a.py", 1, 1, "aa", "search", 0.0),
    ]
    result = engine({"candidates": cands, "maxChars": 2, "failureFile": "./a.py"})
    assert list(result.selected) == [1]
    assert [(o.index, o.rank, o.reason, o.overlaps) for o in result.omitted] == [(0, 1, "budget", None)]


def test_failure_file_none_is_allowed(engine: Any) -> None:
    cands = [C("a.py", 1, 1, "a", "search", 0.0)]
    result = engine({"candidates": cands, "max_chars": 1, "failure_file": None})
    assert list(result.selected) == [0]


def test_build_input_keyword_form(engine: Any, rc: Any) -> None:
    cands = [rc.Candidate("a.py", 1, 2, "ab", "failure", 1.0)]
    inp = rc.BuildInput(candidates=cands, max_chars=2, failure_file=None)
    result = engine(inp)
    assert list(result.selected) == [0]
    assert result.items == (rc.Candidate("a.py", 1, 2, "ab", "failure", 1.0),)


def test_reason_enum_members_accepted(engine: Any, rc: Any) -> None:
    cands = [
        C("s.py", 1, 1, "s", rc.Reason.SEARCH, 9.0),
        C("f.py", 1, 1, "f", rc.Reason.FAILURE, 9.0),
        C("r.py", 1, 1, "r", rc.Reason.REFERENCE, 0.0),
    ]
    result = engine({"candidates": cands, "max_chars": 10})
    assert list(result.selected) == [2, 1, 0]
    assert [item.reason for item in result.items] == ["reference", "failure", "search"]


def test_reason_enum_values(rc: Any) -> None:
    assert rc.Reason.FAILURE == "failure"
    assert rc.Reason.REFERENCE == "reference"
    assert rc.Reason.SEARCH == "search"
    assert isinstance(rc.Reason.SEARCH, str)


def test_module_build_equals_default_builder(builder_cls: Any, engine: Any) -> None:
    case = CASES[0]
    assert builder_cls().build(_input(case)) == engine(_input(case))


# ---------------------------------------------------------------------------
# Result and Candidate types
# ---------------------------------------------------------------------------


def test_result_to_dict_json_form(engine: Any) -> None:
    cands = [
        C("./a.py", 1, 10, "aaa", "search", 2),
        C("a.py", 5, 12, "bbb", "search", 1.5),
        C("b.py", 1, 1, "x" * 10, "search", 1.0),
    ]
    result = engine({"candidates": cands, "max_chars": 5})
    d = result.to_dict()
    assert set(d) == {
        "items",
        "selected",
        "used_chars",
        "truncated",
        "omitted",
        "failure_file",
        "failure_files",
        "cost",
        "budget",
        "used",
        "blocks",
        "missing_critical",
        "digest",
    }
    assert (d["missing_critical"], d["digest"]) == ([], result.digest)
    assert d["cost"] == {
        "unit": "chars",
        "encoding": None,
        "template": None,
        "line_numbers": False,
        "order": "rank",
    }
    assert (d["budget"], d["used"], d["failure_file"], d["blocks"]) == (5, 3, None, [])
    assert strict(d["items"]) == strict(
        [
            {
                "path": "a.py",
                "start": 1,
                "end": 10,
                "content": "aaa",
                "reason": "search",
                "score": 2,
            }
        ]
    )
    assert strict(d["selected"]) == strict([0])
    assert strict(d["used_chars"]) == strict(3)
    assert d["truncated"] is True
    assert strict(d["omitted"]) == strict(
        [
            {"index": 1, "rank": 1, "reason": "overlap", "overlaps": 0},
            {"index": 2, "rank": 2, "reason": "budget"},
        ]
    )
    assert "overlaps" not in d["omitted"][1]
    # The JSON form round-trips through json.
    assert json.loads(json.dumps(d)) == d


def test_result_to_dict_empty(engine: Any) -> None:
    d = engine({"candidates": [], "max_chars": 0}).to_dict()
    assert strict(d) == strict(
        {
            "items": [],
            "selected": [],
            "used_chars": 0,
            "truncated": False,
            "omitted": [],
            "failure_file": None,
            "failure_files": [],
            "cost": {
                "unit": "chars",
                "encoding": None,
                "template": None,
                "line_numbers": False,
                "order": "rank",
            },
            "budget": 0,
            "used": 0,
            "blocks": [],
            "missing_critical": [],
            # SHA-256 of the byte form with no items (tests/test_digest.py restates the form).
            "digest": "4863adfcc15825fc05dee75d3f81fdbf69f11a1c660843d9e4fd1f0f997c8542",
        }
    )


def test_results_compare_by_value(engine: Any) -> None:
    inp = _input(CASES[0])
    assert engine(inp) == engine(inp)
    assert engine(inp) != engine(_input(CASES[1]))


def test_candidate_value_semantics(rc: Any) -> None:
    a = rc.Candidate("a.py", 1, 2, "x", "search", 1.0)
    b = rc.Candidate("a.py", 1, 2, "x", "search", 1.0)
    c = rc.Candidate("a.py", 1, 3, "x", "search", 1.0)
    assert a == b
    assert hash(a) == hash(b)
    assert a != c
    assert len({a, b, c}) == 2
    assert pickle.loads(pickle.dumps(a)) == a
    assert a.to_dict() == {
        "path": "a.py",
        "start": 1,
        "end": 2,
        "content": "x",
        "reason": "search",
        "score": 1.0,
    }
    with pytest.raises(AttributeError):
        a.path = "b.py"  # type: ignore[misc]
    assert a.path == "a.py"


def test_candidate_constructor_does_not_validate(rc: Any) -> None:
    bad = rc.Candidate("/abs", 0, -1, "x", "nope", float("nan"))
    assert bad.path == "/abs"
    assert bad.start == 0


def test_items_keep_callers_objects(engine: Any) -> None:
    content = "".join(["con", "tent"])
    score = 2**64 + 1
    cands = [C("./a//b.py", 3, 4, content, "reference", score)]
    result = engine({"candidates": cands, "max_chars": 100})
    item = result.items[0]
    assert item.path == "a/b.py"
    assert item.content is content
    assert type(item.score) is int and item.score == score
    assert item.to_dict()["score"] == score
    assert type(result.to_dict()["items"][0]["score"]) is int


def test_negative_zero_score_kept_in_item(engine: Any) -> None:
    result = engine({"candidates": [C("a.py", 1, 1, "a", "search", -0.0)], "max_chars": 1})
    assert strict(result.items[0].score) == strict(-0.0)
    assert strict(result.to_dict()["items"][0]["score"]) == strict(-0.0)


def test_several_failing_files_rank_first_in_error_order(engine: Any) -> None:
    cands = [
        C("lib.py", 1, 5, "aa", "reference", 100.0),
        C("test_x.py", 1, 5, "bb", "search", -5.0),
        C("deep.py", 1, 5, "cc", "search", 0.0),
        C("./deep.py", 10, 12, "dd", "reference", 9.0),
        C("test_x.py", 20, 22, "ee", "failure", 1.0),
    ]
    result = engine(
        {"candidates": cands, "max_chars": 100, "failure_files": ["deep.py", "test_x.py", "deep.py"]}
    )
    # deep.py first (by score, whatever the reason), then test_x.py, then the rest by reason.
    assert list(result.selected) == [3, 2, 4, 1, 0]
    assert result.failure_files == ("deep.py", "test_x.py")
    assert result.failure_file == "deep.py"
    assert result.to_dict()["failure_files"] == ["deep.py", "test_x.py"]


def test_failure_file_is_the_one_element_form(engine: Any) -> None:
    cands = [C("a.py", 1, 2, "x", "search", 0.0), C("b.py", 1, 2, "y", "reference", 5.0)]
    one = engine({"candidates": cands, "max_chars": 10, "failure_file": "a.py"})
    many = engine({"candidates": cands, "max_chars": 10, "failureFiles": ["./a.py"]})
    assert one == many
    assert list(one.selected) == [0, 1]


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"failure_file": "a.py", "failure_files": ["a.py"]}, "not both"),
        ({"failure_files": "a.py"}, "must be a list of paths"),
        ({"failure_files": ["a.py", "../b.py"]}, "item 1"),
        ({"failure_files": ["a.py", 3]}, "item 1"),
    ],
)
def test_invalid_failure_files(engine: Any, rc: Any, extra: dict[str, Any], problem: str) -> None:
    with pytest.raises(rc.InvalidInputError) as err:
        engine({"candidates": [C("a.py", 1, 1, "x", "search", 0.0)], "max_chars": 5, **extra})
    assert (err.value.field, err.value.index) == ("failure_files", None)
    assert problem in str(err.value)
