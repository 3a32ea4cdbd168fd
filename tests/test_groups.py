"""Groups: candidates packed whole or not at all, in both engines."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import Candidate, InvalidCandidateError, Omission
from conftest import DIFF_EXAMPLES, error_signature, strict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(
    max_examples=DIFF_EXAMPLES // 2,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_candidate_without_a_group_keeps_its_old_forms() -> None:
    c = Candidate("a.py", 1, 2, "x", "search", 1.0)
    assert c.group is None
    assert repr(c) == "Candidate(path='a.py', start=1, end=2, content='x', reason='search', score=1.0)"
    fields = {"path": "a.py", "start": 1, "end": 2, "content": "x", "reason": "search", "score": 1.0}
    assert c.to_dict() == fields
    assert c.__reduce__() == (Candidate, ("a.py", 1, 2, "x", "search", 1.0))
    assert c == Candidate("a.py", 1, 2, "x", "search", 1.0, group=None)
    assert hash(c) == hash(("a.py", 1, 2, "x", "search", 1.0))


def test_candidate_with_a_group() -> None:
    c = Candidate("a.py", 1, 2, "x", "search", 1.0, group=("impl", 3))
    assert c.group == ("impl", 3)
    assert repr(c).endswith("score=1.0, group=('impl', 3))")
    assert c.to_dict()["group"] == "('impl', 3)"  # the JSON form: a non-scalar group as its repr
    assert pickle.loads(pickle.dumps(c)) == c
    assert c != Candidate("a.py", 1, 2, "x", "search", 1.0)
    assert c != Candidate("a.py", 1, 2, "x", "search", 1.0, group="other")
    assert hash(c) == hash(Candidate("a.py", 1, 2, "x", "search", 1.0, group=("impl", 3)))
    with pytest.raises(TypeError):
        Candidate("a.py", 1, 2, "x", "search", 1.0, "positional group")  # type: ignore[misc]


def test_group_omission_forms() -> None:
    o = Omission(3, 4, "group", member=7)
    assert (o.reason, o.member, o.overlaps) == ("group", 7, None)
    assert o.to_dict() == {"index": 3, "rank": 4, "reason": "group", "member": 7}
    assert repr(o) == "Omission(index=3, rank=4, reason='group', member=7)"
    assert pickle.loads(pickle.dumps(o)) == o
    assert Omission(1, 1, "budget").to_dict() == {"index": 1, "rank": 1, "reason": "budget"}
    for bad in [("group",), ("budget", None, 2), ("group", 1, 2)]:
        with pytest.raises(ValueError):
            Omission(0, 0, *bad)  # type: ignore[arg-type]


IFACE = Candidate("api.py", 1, 5, "i" * 10, "reference", 5.0, group="pair")
IMPL = Candidate("impl.py", 1, 5, "m" * 10, "search", 0.1, group="pair")
OTHER = Candidate("util.py", 1, 5, "u" * 10, "reference", 1.0)


def test_a_group_ranks_at_its_best_member_and_is_selected_whole(engine: Any) -> None:
    result = engine({"candidates": [OTHER, IMPL, IFACE], "max_chars": 30})
    # The group comes up at IFACE's rank (first), with IMPL; OTHER after it.
    assert result.selected == (2, 1, 0)
    assert result.omitted == ()


def test_a_group_that_does_not_fit_is_omitted_whole_naming_the_member(engine: Any) -> None:
    result = engine({"candidates": [OTHER, IMPL, IFACE], "max_chars": 15})
    assert result.selected == (0,)
    assert result.omitted == (Omission(2, 0, "group", member=1), Omission(1, 2, "group", member=1))
    assert result.to_dict()["omitted"][0] == {"index": 2, "rank": 0, "reason": "group", "member": 1}


def test_an_overlapped_member_costs_nothing_and_is_omitted_as_overlap(engine: Any) -> None:
    cands = [
        Candidate("api.py", 1, 9, "o" * 10, "reference", 9.0),
        Candidate("api.py", 5, 6, "i" * 10, "reference", 5.0, group=1),
        Candidate("impl.py", 1, 5, "m" * 10, "search", 0.1, group=1),
    ]
    result = engine({"candidates": cands, "max_chars": 20})
    assert result.selected == (0, 2)
    assert result.omitted == (Omission(1, 1, "overlap", 0),)


def test_an_unhashable_group_is_an_invalid_candidate(engine: Any) -> None:
    bad = {"path": "a.py", "start": 1, "end": 1, "content": "", "reason": "search", "score": 0, "group": []}
    with pytest.raises(InvalidCandidateError) as info:
        engine({"candidates": [OTHER, bad], "max_chars": 1})
    problem = "must be hashable, not list"
    assert (info.value.index, info.value.field, info.value.problem) == (1, "group", problem)


def test_a_rendered_section_drops_a_group_whole() -> None:
    cands = [IFACE, IMPL, OTHER]
    cost = {"unit": "tokens", "template": "markdown"}
    results = []
    for module in (bugcontext, reference):
        full = module.build({"candidates": cands, "budget": 10_000, "cost": cost})
        results.append(module.build({"candidates": cands, "budget": full.used - 1, "cost": cost}))
    native, ref = results
    assert native == ref
    for result in results:
        kept = set(result.selected)
        assert {0, 1} <= kept or not {0, 1} & kept


# ---------------------------------------------------------------------------
# Properties, both engines
# ---------------------------------------------------------------------------


@st.composite
def grouped_inputs(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(0, 14))
    cands = []
    for _ in range(n):
        start = draw(st.integers(1, 12))
        cand = {
            "path": draw(st.sampled_from(["a.py", "./a.py", "b.py", "c/d.py"])),
            "start": start,
            "end": start + draw(st.integers(0, 4)),
            "content": "x" * draw(st.integers(0, 12)),
            "reason": draw(st.sampled_from(["failure", "reference", "search"])),
            "score": draw(st.sampled_from([0, 1, 2.5, -1.0])),
        }
        group = draw(st.sampled_from([None, None, 0, 1, 1.0, "g", ("t", 2)]))
        if group is not None or draw(st.booleans()):
            cand["group"] = group
        cands.append(cand)
    return {
        "candidates": cands,
        "max_chars": draw(st.integers(0, 60)),
        "failure_files": draw(st.sampled_from([None, ["a.py"], ["b.py", "a.py"]])),
    }


@SETTINGS
@given(inp=grouped_inputs())
def test_groups_native_equals_reference_and_are_all_in_or_all_out(inp: dict[str, Any]) -> None:
    native, ref = bugcontext.build(inp), reference.build(inp)
    assert native == ref
    assert strict(native.to_dict()) == strict(ref.to_dict())
    assert native.digest == ref.digest
    # All in or all out: a group's members are either all selected or overlap-omitted, or all
    # omitted as "group" naming one of them.
    groups: dict[Any, list[int]] = {}
    for i, c in enumerate(inp["candidates"]):
        if c.get("group") is not None:
            groups.setdefault(c["group"], []).append(i)
    why = {o.index: o for o in native.omitted}
    for members in groups.values():
        chosen = [i for i in members if i in native.selected]
        if chosen:
            assert all(i in native.selected or why[i].reason == "overlap" for i in members)
        else:
            named = {why[i].member for i in members if why[i].reason == "group"}
            assert len(named) <= 1 and named <= set(members)
    assert sorted(o.rank for o in native.omitted) == [o.rank for o in native.omitted]
    assert native.used_chars <= inp["max_chars"]


@SETTINGS
@given(inp=grouped_inputs())
def test_without_groups_results_are_exactly_as_before(inp: dict[str, Any]) -> None:
    plain = {**inp, "candidates": [{k: v for k, v in c.items() if k != "group"} for c in inp["candidates"]]}
    nones = {**inp, "candidates": [{**c, "group": None} for c in plain["candidates"]]}
    for module in (bugcontext, reference):
        assert module.build(plain) == module.build(nones)
        assert strict(module.build(plain).to_dict()) == strict(module.build(nones).to_dict())


@SETTINGS
@given(inp=grouped_inputs(), bad=st.sampled_from([[], {}, {1}, bytearray(b"x")]), at=st.integers(0, 14))
def test_invalid_groups_raise_equal_errors(inp: dict[str, Any], bad: Any, at: int) -> None:
    cands = inp["candidates"]
    if not cands:
        return
    cands = [dict(c) for c in cands]
    cands[at % len(cands)]["group"] = bad
    data = {**inp, "candidates": cands}

    def sig(build: Any) -> Any:
        try:
            build(data)
        except Exception as exc:
            return error_signature(exc)
        return None

    assert sig(bugcontext.build) == sig(reference.build) is not None


def test_a_group_that_is_not_a_json_value_is_written_as_its_repr() -> None:
    # The JSON form always serialises: a non-finite float or a non-scalar group as its repr.
    make = bugcontext.Candidate
    assert make("a.py", 1, 1, "x", "failure", 1, group=float("nan")).to_dict()["group"] == "nan"
    assert make("a.py", 1, 1, "x", "failure", 1, group=float("-inf")).to_dict()["group"] == "-inf"
    assert make("a.py", 1, 1, "x", "failure", 1, group=("t", 1)).to_dict()["group"] == "('t', 1)"
    assert make("a.py", 1, 1, "x", "failure", 1, group=2.5).to_dict()["group"] == 2.5
    assert make("a.py", 1, 1, "x", "failure", 1, group=True).to_dict()["group"] is True
    line = (
        '{"candidates":[{"path":"a.py","start":1,"end":1,"content":"x","reason":"failure",'
        '"score":1,"group":NaN}],"max_chars":5}'
    )
    for engine in ("native", "reference"):
        proc = subprocess.run(
            [sys.executable, "-m", "bugcontext", "build", "-", "--engine", engine],
            input=line.encode(),
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["items"][0]["group"] == "nan"
