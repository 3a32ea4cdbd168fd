"""Candidates of a caller's own classes read by their layout (``src/python/access.rs``): a
``__slots__`` member read from the object, a name the class does not define on a class without
instance dicts known missing, worked out once per class and used only while the class is
unchanged. The result must be exactly the reference's (``getattr`` on every candidate), also
when the caller's code changes the class, its instances or the ABC registry during the build.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import InvalidCandidateError

ENGINES = [pytest.param(bugcontext.build, id="native"), pytest.param(reference.build, id="reference")]


def _slotted() -> type:
    """A fresh frozen slotted dataclass with the six fields."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Slotted:
        path: str
        start: Any
        end: int
        content: str
        reason: str
        score: float

    return Slotted


class Hook:
    """A line number (through ``__index__``) that runs ``hook`` when read."""

    def __init__(self, value: int, hook: Any) -> None:
        self.value = value
        self.hook = hook

    def __index__(self) -> int:
        self.hook()
        return self.value


def _dicts(result: Any) -> list[dict[str, Any]]:
    return [item.to_dict() for item in result.items]


@pytest.mark.parametrize("build", ENGINES)
def test_slotted_candidates_build_as_their_dicts(build: Any) -> None:
    cls = _slotted()
    rows = [("a.py", i, i + 1, f"x{i}", "search", float(i)) for i in range(1, 40, 3)]
    as_objects = build({"candidates": [cls(*r) for r in rows], "max_chars": 20})
    names = ("path", "start", "end", "content", "reason", "score")
    as_dicts = build(
        {
            "candidates": [dict(zip(names, r, strict=True)) for r in rows],
            "max_chars": 20,
        }
    )
    assert as_objects.to_dict() == as_dicts.to_dict()


@pytest.mark.parametrize("build", ENGINES)
def test_an_unset_slot_is_a_missing_field_naming_the_candidate(build: Any) -> None:
    class Partial:
        __slots__ = ("content", "end", "path", "reason", "score", "start")

        def __init__(self, set_reason: bool) -> None:
            self.path, self.start, self.end, self.content, self.score = "a.py", 1, 1, "x", 1.0
            if set_reason:
                self.reason = "search"

    with pytest.raises(InvalidCandidateError) as info:
        build({"candidates": [Partial(True), Partial(True), Partial(False)], "max_chars": 10})
    assert (info.value.index, info.value.field) == (2, "reason")
    assert "is missing" in str(info.value)


@pytest.mark.parametrize("build", ENGINES)
def test_a_class_attribute_added_during_the_build_is_read_from_then_on(build: Any) -> None:
    cls = _slotted()

    def add_group() -> None:
        cls.group = property(lambda self: "g")  # type: ignore[attr-defined]

    cands = [
        cls("a.py", 1, 1, "one", "search", 3.0),
        cls("a.py", Hook(3, add_group), 3, "two", "search", 2.0),
        cls("a.py", 5, 5, "three", "search", 1.0),
    ]
    result = build({"candidates": cands, "max_chars": 100})
    # The second candidate's group is read after its start, so after the class changed.
    assert [item.group for item in result.items] == [None, "g", "g"]


@pytest.mark.parametrize("build", ENGINES)
def test_a_slot_replaced_by_a_property_during_the_build_is_read_through_it(build: Any) -> None:
    cls = _slotted()
    member = cls.__dict__["content"]

    def replace() -> None:
        cls.content = property(lambda self: "replaced " + member.__get__(self))

    cands = [
        cls("a.py", 1, 1, "one", "search", 3.0),
        cls("a.py", Hook(3, replace), 3, "two", "search", 2.0),
        cls("a.py", 5, 5, "three", "search", 1.0),
    ]
    result = build({"candidates": cands, "max_chars": 100})
    assert [item.content for item in result.items] == ["one", "replaced two", "replaced three"]


@pytest.mark.parametrize("build", ENGINES)
def test_a_slotted_class_registered_as_a_mapping_during_the_build_is_read_as_one(build: Any) -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Both:
        path: str
        start: Any
        end: int
        content: str
        reason: str
        score: float

        def __getitem__(self, key: str) -> Any:
            if key not in ("path", "start", "end", "content", "reason", "score"):
                raise KeyError(key)  # the optional fields
            return "item" if key == "content" else getattr(self, key)

        def __len__(self) -> int:
            return 6

        def __iter__(self) -> Any:
            return iter(("path", "start", "end", "content", "reason", "score"))

    def register() -> None:
        Mapping.register(Both)

    cands = [
        Both("a.py", 1, 1, "attr", "search", 3.0),
        Both("a.py", Hook(3, register), 3, "attr", "search", 2.0),
        Both("a.py", 5, 5, "attr", "search", 1.0),
    ]
    result = build({"candidates": cands, "max_chars": 100})
    assert [item.content for item in result.items] == ["attr", "attr", "item"]


@pytest.mark.parametrize("build", ENGINES)
def test_a_member_of_another_class_fails_as_getattr_does(build: Any) -> None:
    class Other:
        __slots__ = ("content",)

    cls = _slotted()
    cls.content = Other.__dict__["content"]
    with pytest.raises(TypeError):
        build({"candidates": [cls("a.py", 1, 1, "x", "search", 1.0)], "max_chars": 10})


@pytest.mark.parametrize("build", ENGINES)
def test_an_instance_changing_class_during_the_build_is_read_by_its_new_class(build: Any) -> None:
    first, second = _slotted(), _slotted()
    cands: list[Any] = []

    class Plain:
        def __init__(self) -> None:
            self.path, self.start, self.end = "b.py", 1, 1
            self.content, self.reason, self.score = "plain", "search", 1.0

    later = Plain()

    def swap() -> None:
        later.__class__ = type(
            "Other", (), {"content": property(lambda self: "other"), "__init__": Plain.__init__}
        )

    cands = [
        first("a.py", Hook(1, swap), 1, "one", "search", 3.0),
        second("a.py", 3, 3, "two", "search", 2.0),
        later,
    ]
    result = build({"candidates": cands, "max_chars": 100})
    assert sorted(item.content for item in result.items) == ["one", "other", "two"]


def test_no_candidate_object_is_changed_by_a_build() -> None:
    cls = _slotted()
    cands = [cls("a.py", i, i, f"c{i}", "search", float(i)) for i in range(1, 30)]
    before = [dataclasses.astuple(c) for c in cands]
    bugcontext.build({"candidates": cands, "max_chars": 30})
    assert [dataclasses.astuple(c) for c in cands] == before
