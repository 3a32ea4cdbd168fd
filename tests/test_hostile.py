"""Hostile field values: subclasses of ``str``, ``int`` and ``float`` whose own methods raise,
lie or override dunders, and classes with a hostile metaclass.

The rule, in both engines: every field is read once, through the built-in type's own
conversion (``str.__str__``, ``float.__float__``, ``int.__index__``), and everything after
(ranking, costing, rendering, the result) uses that snapshot; the result's items carry exact
``str``/``int``/``float`` values. So a hostile input gives exactly the result of the same input
with plain values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext.core.composer import render_block
from conftest import FIELDS, Drawn, build_inputs, make_candidate, strict
from hostile import FLOATS, INTS, STRS, Idx, LyingInt, LyingStr, RaisingFloat, RaisingInt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ENGINES = [pytest.param(bugcontext.build, id="native"), pytest.param(reference.build, id="reference")]


# ---------------------------------------------------------------------------
# The examples, each with its right value
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("build", ENGINES)
def test_float_subclass_whose_float_raises_is_read_as_its_value(build: Any) -> None:
    cands = [
        {
            "path": "a.py",
            "start": 1,
            "end": 1,
            "content": "a",
            "reason": "search",
            "score": RaisingFloat(2.5),
        },
        {"path": "b.py", "start": 1, "end": 1, "content": "b", "reason": "search", "score": 3.0},
    ]
    result = build({"candidates": cands, "max_chars": 1})
    assert result.selected == (1,)
    assert [(o.index, o.rank, o.reason) for o in result.omitted] == [(0, 1, "budget")]
    result = build({"candidates": [cands[0]], "max_chars": 1})
    (item,) = result.items
    assert type(item.score) is float and float.__float__(item.score) == 2.5
    assert strict(result.to_dict()["items"][0]["score"]) == ("float", (2.5).hex())


@pytest.mark.parametrize("build", ENGINES)
def test_int_subclass_score_and_lines_are_read_as_their_value(build: Any) -> None:
    cand = {"path": "a.py", "start": LyingInt(3), "end": RaisingInt(4), "content": "a", "reason": "search"}
    result = build(
        {"candidates": [{**cand, "score": LyingInt(5)}, {**cand, "path": "b.py", "score": 6}], "max_chars": 1}
    )
    assert result.selected == (1,)  # 5 < 6: the lying __float__ (1e300) plays no part
    result = build({"candidates": [{**cand, "score": RaisingInt(5)}], "max_chars": 1})
    (item,) = result.items
    assert (item.start, item.end, item.score) == (3, 4, 5)
    assert (type(item.start), type(item.end), type(item.score)) == (int, int, int)


@pytest.mark.parametrize("build", ENGINES)
def test_huge_int_subclass_score_is_too_large_whatever_its_float(build: Any) -> None:
    cand = {
        "path": "a.py",
        "start": 1,
        "end": 1,
        "content": "a",
        "reason": "search",
        "score": LyingInt(2**1100),
    }
    with pytest.raises(bugcontext.InvalidCandidateError) as info:
        build({"candidates": [cand], "max_chars": 1})
    assert (info.value.index, info.value.field, info.value.problem) == (
        0,
        "score",
        "is too large to convert to a float",
    )


@pytest.mark.parametrize("build", ENGINES)
def test_str_subclass_content_with_lying_encode_is_costed_as_its_real_xml_block(build: Any) -> None:
    text = "x = '\ud800'\n" * 8  # lone surrogates: the block is base64, through str.encode
    block = render_block("a.py", 1, 8, text, "search", failing=False, template="xml", line_numbers=False)
    real = len(block)
    cost = {"unit": "chars", "template": "xml"}
    cand = {"path": "a.py", "start": 1, "end": 8, "content": LyingStr(text), "reason": "search", "score": 1.0}
    fits = build({"candidates": [cand], "budget": real, "cost": cost})
    assert fits.selected == (0,) and fits.used == real
    assert bugcontext.render(fits) == block
    assert type(fits.items[0].content) is str and str.__eq__(fits.items[0].content, text)
    short = build({"candidates": [cand], "budget": real - 1, "cost": cost})
    assert short.selected == () and short.used == 0
    assert [(o.index, o.reason) for o in short.omitted] == [(0, "budget")]


@pytest.mark.parametrize("build", ENGINES)
@pytest.mark.parametrize("template", ["markdown", "xml"])
def test_str_subclass_reason_with_hash_and_eq_builds_and_renders(build: Any, template: str) -> None:
    cand = {
        "path": "a.py",
        "start": 1,
        "end": 2,
        "content": "ab\n",
        "reason": LyingStr("reference"),
        "score": 1,
    }
    result = build({"candidates": [cand], "budget": 10_000, "cost": {"unit": "chars", "template": template}})
    assert result.selected == (0,)
    (item,) = result.items
    assert type(item.reason) is str and str.__eq__(item.reason, "reference")
    expected = render_block(
        "a.py", 1, 2, "ab\n", "reference", failing=False, template=template, line_numbers=False
    )
    assert bugcontext.render(result) == expected
    assert "referenced definition" in expected


@pytest.mark.parametrize("build", ENGINES)
def test_str_subclass_content_overriding_str_renders_its_content(build: Any) -> None:
    cand = {
        "path": "a.py",
        "start": 1,
        "end": 1,
        "content": LyingStr("real = 1\n"),
        "reason": "search",
        "score": 1,
    }
    result = build({"candidates": [cand], "max_chars": 100})
    assert bugcontext.render(result) == "### a.py:1-1 (search hit)\n```python\nreal = 1\n```\n\n"
    assert bugcontext.render(result, template="xml") == (
        '<snippet path="a.py" start="1" end="1" reason="search" label="search hit">real = 1\n</snippet>\n'
    )


def test_render_of_a_hand_made_result_uses_the_text_of_str_subclasses() -> None:
    item = bugcontext.Candidate("a.py", 1, 1, LyingStr("real = 1\n"), LyingStr("failure"), 1.0)
    result = bugcontext.BuildResult([item], [0], 9, False, [], [], bugcontext.Cost(), 100, 9, [])
    assert bugcontext.render(result) == "### a.py:1-1 (failure evidence)\n```python\nreal = 1\n```\n\n"


# ---------------------------------------------------------------------------
# Differential: hostile values anywhere give the result of the plain values
# ---------------------------------------------------------------------------


def _hostile(value: Any, field: str, choice: int) -> Any:
    if field in ("path", "content", "reason") and isinstance(value, str):
        return STRS[choice % len(STRS)](value)
    if field == "score" and isinstance(value, float):
        return FLOATS[choice % len(FLOATS)](value)
    if isinstance(value, int) and not isinstance(value, bool):
        return INTS[choice % len(INTS)](value)
    return value


@st.composite
def hostile_inputs(draw: Any) -> tuple[Drawn, list[Any], list[Any]]:
    drawn: Drawn = draw(build_inputs(max_size=10))
    plain, hostile = [], []
    for form, spec in zip(drawn.forms, drawn.specs, strict=True):
        plain.append(make_candidate(form, spec))
        if form == "candidate":  # the caller's own Candidate, holding hostile values
            spec = tuple(v.value if isinstance(v, Idx) else v for v in spec)
        wraps = draw(st.lists(st.integers(0, 11), min_size=len(FIELDS), max_size=len(FIELDS)))
        wrapped = tuple(
            _hostile(v, f, w) if w < 6 else v for v, f, w in zip(spec, FIELDS, wraps, strict=True)
        )
        hostile.append(make_candidate(form, wrapped))
    return drawn, plain, hostile


def _with(drawn: Drawn, cands: list[Any], budget: int, cost: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"candidates": cands, "budget": budget, "cost": cost}
    ff = drawn.failure_file
    if isinstance(ff, list):
        data["failure_files"] = ff
    elif ff is not None:
        data["failure_file"] = ff
    return data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=hostile_inputs(), template=st.sampled_from([None, "markdown", "xml"]))
def test_hostile_values_give_the_result_of_plain_values(
    case: tuple[Drawn, list[Any], list[Any]], template: str | None
) -> None:
    drawn, plain, hostile = case
    budget = drawn.max_chars if template is None else drawn.max_chars * 4
    cost = {"unit": "chars", "template": template}
    expected = reference.build(_with(drawn, plain, budget, cost))
    for build in (bugcontext.build, reference.build):
        got = build(_with(drawn, hostile, budget, cost))
        assert got == expected
        assert strict(got.to_dict()) == strict(expected.to_dict())
        for item in got.items:
            assert (type(item.path), type(item.start), type(item.end)) == (str, int, int)
            assert (type(item.content), type(item.reason)) == (str, str)
            assert type(item.score) in (int, float)
        assert bugcontext.render(got) == bugcontext.render(expected)


# ---------------------------------------------------------------------------
# Candidate types: mapping or attributes, decided per candidate as ``isinstance(c, Mapping)``
# ---------------------------------------------------------------------------


def _fields(content: str, path: str = "a.py", start: int = 1) -> dict[str, Any]:
    return {"path": path, "start": start, "end": start, "content": content, "reason": "search", "score": 1.0}


def _two_faced(register_on_read: bool) -> type:
    """A fresh class whose instances give content "attr" as attributes and "item" as a mapping;
    reading the first instance's path registers the class as a ``Mapping`` when asked."""

    class TwoFaced:
        def __init__(self, start: int, registers: bool = False) -> None:
            self._start = start
            self._registers = registers

        def __getitem__(self, key: str) -> Any:
            return _fields("item", start=self._start)[key]

        def __len__(self) -> int:
            return 6

        def __iter__(self) -> Any:
            return iter(_fields("item"))

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_"):
                raise AttributeError(name)
            if name == "path" and self._registers and register_on_read:
                Mapping.register(type(self))
            try:
                return _fields("attr", start=self._start)[name]
            except KeyError:  # the optional group
                raise AttributeError(name) from None

    return TwoFaced


@pytest.mark.parametrize("build", ENGINES)
def test_a_class_registered_as_mapping_during_the_build_is_read_as_one_from_then_on(build: Any) -> None:
    cls = _two_faced(register_on_read=True)
    cands = [cls(1, registers=True), cls(2), cls(3)]
    result = build({"candidates": cands, "max_chars": 100})
    assert [item.content for item in result.items] == ["attr", "item", "item"]
    again = build({"candidates": [cls(1), cls(2)], "max_chars": 100})
    assert [item.content for item in again.items] == ["item", "item"]


@pytest.mark.parametrize("build", ENGINES)
def test_an_instance_whose_class_attribute_lies_is_checked_on_its_own(build: Any) -> None:
    class Masked:
        def __init__(self, masked: bool, start: int) -> None:
            self.masked = masked
            self.fields = _fields("attr" if not masked else "never", start=start)

        @property  # type: ignore[misc]
        def __class__(self) -> type:
            return dict if self.masked else Masked

        def __getattr__(self, name: str) -> Any:
            try:
                return self.__dict__["fields"][name]
            except KeyError:  # the optional group
                raise AttributeError(name) from None

        def __getitem__(self, key: str) -> Any:
            return _fields("item", start=self.fields["start"])[key]

    cands = [Masked(False, 1), Masked(True, 2), Masked(False, 3), Masked(True, 4)]
    result = build({"candidates": cands, "max_chars": 100})
    assert [item.content for item in result.items] == ["attr", "item", "attr", "item"]


class HashlessMeta(type):
    """A candidate type's own metaclass whose hashing raises."""

    def __hash__(cls) -> int:
        raise RuntimeError("the metaclass's hash")


class WithMeta(metaclass=HashlessMeta):
    def __init__(self) -> None:
        self.__dict__.update(_fields("meta"))


@pytest.mark.parametrize("build", ENGINES)
def test_a_candidate_type_whose_metaclass_hash_raises_raises_that_error(build: Any) -> None:
    # ``isinstance(c, Mapping)`` hashes the class (the ABC's caches): its error propagates.
    with pytest.raises(RuntimeError, match="the metaclass's hash"):
        build({"candidates": [WithMeta(), WithMeta()], "max_chars": 100})
