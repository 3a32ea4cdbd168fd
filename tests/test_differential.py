"""Differential tests: the Rust engine and the Python reference agree.

Valid inputs must give equal results (``==`` and the same JSON form, value
types and float signs included); invalid inputs must raise the same exception
type with the same index, field, problem and message.
"""

from __future__ import annotations

import math
import types
from decimal import Decimal
from typing import Any

import bugcontext
import bugcontext.reference as reference
from conftest import (
    DIFF_EXAMPLES,
    FAILURE_FILES,
    FIELDS,
    MAX_LINE,
    ONE_PATH_SPELLINGS,
    Drawn,
    ForeignCandidate,
    Idx,
    VerifiedDrawn,
    build_inputs,
    model_build,
    outcome,
    result_summary,
    strict,
    verified_inputs,
)
from hostile import LyingFloat, LyingInt, LyingStr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DIFF_SETTINGS = settings(
    max_examples=DIFF_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_same_result(drawn: Drawn) -> Any:
    inp = drawn.make()
    native = bugcontext.build(inp)
    ref = reference.build(inp)
    assert type(native) is type(ref)
    assert native == ref
    assert strict(native.to_dict()) == strict(ref.to_dict())
    assert strict(result_summary(native)) == strict(result_summary(ref))
    return native


@DIFF_SETTINGS
@given(drawn=build_inputs())
def test_native_equals_reference(drawn: Drawn) -> None:
    assert_same_result(drawn)


@DIFF_SETTINGS
@given(
    drawn=build_inputs(
        max_size=40,
        paths=ONE_PATH_SPELLINGS,
        max_line=30,
        failure_files=[None, "x/y.py", "./x//y.py/", "other.py"],
    )
)
def test_native_equals_reference_one_crowded_path(drawn: Drawn) -> None:
    native = assert_same_result(drawn)
    # Also agree with the naive restatement of the contract.
    expected = model_build(drawn.candidates(), drawn.max_chars, drawn.failure_file)
    assert strict(result_summary(native)) == strict(expected)


@DIFF_SETTINGS
@given(drawn=build_inputs(max_size=10), data=st.data())
def test_limits_native_equals_reference(drawn: Drawn, data: st.DataObject) -> None:
    n = len(drawn.specs)
    max_candidates = data.draw(st.integers(0, n + 1), label="max_candidates")
    max_total = data.draw(st.integers(0, drawn.total_chars + 1), label="max_total_chars")
    inp = drawn.make()
    kwargs = {"max_candidates": max_candidates, "max_total_chars": max_total}
    native = outcome(bugcontext.ContextBuilder(**kwargs).build, inp)
    ref = outcome(reference.ContextBuilder(**kwargs).build, inp)
    assert native == ref

    # What the contract says must happen.
    if n > max_candidates:
        assert native[0] == "error"
        exc_type, index, field = native[1][:3]
        assert (exc_type, index, field) == (bugcontext.ResourceLimitError, None, "candidates")
        # The count found: a plain list's or tuple's length, else what was taken (one more).
        given = inp.candidates if isinstance(inp, bugcontext.BuildInput) else inp["candidates"]
        found = n if type(given) in (list, tuple) else max_candidates + 1
        assert native[1][5:] == ("max_candidates", found, max_candidates)
        return
    running = 0
    for i, spec in enumerate(drawn.specs):
        running += len(spec[3])
        if running > max_total:
            assert native[0] == "error"
            exc_type, index, field = native[1][:3]
            assert (exc_type, index, field) == (bugcontext.ResourceLimitError, i, "content")
            assert native[1][5:] == ("max_total_chars", running, max_total)
            return
    assert native[0] == "ok"


# ---------------------------------------------------------------------------
# Invalid inputs
# ---------------------------------------------------------------------------

MISSING = object()
END_BELOW_START = object()

BAD: dict[str, list[Any]] = {
    "path": [
        "",
        "/a.py",
        "/",
        "a/../b.py",
        "..",
        "a\\b.py",
        "a\x00",
        ".",
        "./",
        "//",
        None,
        1,
        b"a.py",
        MISSING,
    ],
    "start": [0, -1, MAX_LINE + 1, 2**70, True, False, 1.0, "1", None, Idx(0), MISSING],
    "end": [END_BELOW_START, MAX_LINE + 1, 2**64, True, 2.0, "2", None, Idx(MAX_LINE + 1), MISSING],
    "content": [None, b"x", 1, ["x"], MISSING],
    "reason": ["Search", "FAILURE", "", "search ", "search\x00", None, 0, b"search", MISSING],
    "score": [
        math.nan,
        -math.nan,
        math.inf,
        -math.inf,
        True,
        False,
        10**400,
        -(10**400),
        2**1024 - 2**970,
        "1",
        None,
        Decimal("1"),
        MISSING,
    ],
}

# Hostile subclasses holding invalid values: both engines judge the value they hold, read
# through the built-in type's own conversion, whatever their own methods say. (Only the lying
# ones: Hypothesis itself calls repr() on drawn values; the raising ones are in test_hostile.py.)
BAD["path"] += [LyingStr("/abs.py"), LyingStr("a/../b.py"), LyingStr("")]
BAD["start"] += [LyingInt(0), LyingInt(MAX_LINE + 1)]
BAD["end"] += [LyingInt(2**64), LyingInt(MAX_LINE + 1)]
BAD["reason"] += [LyingStr("Search"), LyingStr(""), LyingStr("search ")]
BAD["score"] += [LyingFloat(math.nan), LyingFloat(math.inf), LyingInt(10**400), LyingInt(-(10**400))]

TOP_LEVEL_BAD: list[tuple[str, Any]] = [
    ("max_chars", -1),
    ("max_chars", True),
    ("max_chars", 1.5),
    ("max_chars", None),
    ("max_chars", "3"),
    ("max_chars", MISSING),
    ("failure_file", ""),
    ("failure_file", "/abs.py"),
    ("failure_file", "a/../b"),
    ("failure_file", "."),
    ("failure_file", "a\\b"),
    ("failure_file", 3),
    ("failure_files", "a.py"),
    ("failure_files", 3),
    ("failure_files", ["ok.py", "/abs.py"]),
    ("failure_files", ["ok.py", None]),
    ("failure_file_and_files", ["ok.py"]),
    ("unknown", "zzz"),
    ("both", "max_chars"),
    ("both", "failure_file"),
    ("candidates", None),
    ("candidates", 5),
    ("candidates", MISSING),
    ("input", None),
    ("input", []),
    ("input", "text"),
]


def bad_candidate(spec: tuple[Any, ...], form: str, mutations: dict[str, Any]) -> Any:
    fields = dict(zip(FIELDS, spec, strict=True))
    original_start = int(spec[1].__index__())
    for name, value in mutations.items():
        if value is MISSING:
            del fields[name]
        elif value is END_BELOW_START:
            fields[name] = original_start - 1
        else:
            fields[name] = value
    if form == "foreign" and len(fields) == len(FIELDS):
        return ForeignCandidate(**fields)
    if form == "namespace":
        return types.SimpleNamespace(**fields)
    if form == "proxy":
        return types.MappingProxyType(fields)
    return fields


@st.composite
def invalid_inputs(draw: Any) -> tuple[Any, tuple[Any, int | None, str]]:
    # One failing file at most here: the top-level mutations below spell failure_file out.
    drawn: Drawn = draw(
        build_inputs(max_size=8, failure_files=[f for f in FAILURE_FILES if not isinstance(f, list)])
    )
    n = len(drawn.specs)
    cands: list[Any] = drawn.candidates()
    first_bad: tuple[int, str] | None = None
    if n:
        n_bad = draw(st.integers(0, min(3, n)))
        bad_indices = sorted(draw(st.sets(st.integers(0, n - 1), min_size=n_bad, max_size=n_bad)))
        for i in bad_indices:
            fields = draw(st.sets(st.sampled_from(FIELDS), min_size=1, max_size=3))
            mutations = {f: draw(st.sampled_from(BAD[f])) for f in fields}
            form = draw(st.sampled_from(["dict", "foreign", "namespace", "proxy"]))
            cands[i] = bad_candidate(drawn.specs[i], form, mutations)
            if first_bad is None:
                first_bad = (i, next(f for f in FIELDS if f in fields))

    top = draw(st.none() | st.sampled_from(TOP_LEVEL_BAD)) if first_bad else None
    if first_bad is None:
        top = draw(st.sampled_from(TOP_LEVEL_BAD))

    drawn.top_form = draw(st.sampled_from(["snake", "camel", "mixed", "proxy"]))
    data = dict(drawn.make_with(cands))
    max_key = "maxChars" if drawn.top_form == "camel" else "max_chars"
    ff_key = "failure_file" if drawn.top_form in ("snake", "proxy") else "failureFile"
    if top is None:
        assert first_bad is not None
        expected: tuple[Any, int | None, str] = (
            bugcontext.InvalidCandidateError,
            first_bad[0],
            first_bad[1],
        )
    else:
        kind, value = top
        expected = (bugcontext.InvalidInputError, None, kind)
        if kind == "max_chars":
            if value is MISSING:
                del data[max_key]
            else:
                data[max_key] = value
        elif kind == "failure_file":
            data[ff_key] = value
        elif kind == "failure_files":
            data.pop(ff_key, None)
            data["failure_files"] = value
        elif kind == "failure_file_and_files":
            data[ff_key] = "ok.py"
            data["failure_files"] = value
            expected = (bugcontext.InvalidInputError, None, "failure_files")
        elif kind == "unknown":
            data[value] = 0
            expected = (bugcontext.InvalidInputError, None, value)
        elif kind == "both":
            if value == "max_chars":
                data["max_chars"] = data["maxChars"] = drawn.max_chars
            else:
                data["failure_file"] = data["failureFile"] = drawn.failure_file
            expected = (bugcontext.InvalidInputError, None, value)
        elif kind == "candidates":
            if value is MISSING:
                del data["candidates"]
            else:
                data["candidates"] = value
        elif kind == "input":
            return value, expected
    if drawn.top_form == "proxy":
        return types.MappingProxyType(data), expected
    return data, expected


@DIFF_SETTINGS
@given(case=invalid_inputs())
def test_invalid_inputs_raise_equal_errors(case: tuple[Any, tuple[Any, int | None, str]]) -> None:
    inp, expected = case
    native = outcome(bugcontext.build, inp)
    ref = outcome(reference.build, inp)
    assert native[0] == "error", native
    assert ref[0] == "error", ref
    assert native == ref
    exc_type, index, field = native[1][:3]
    assert (exc_type, index, field) == expected
    assert isinstance(native[1][3], str) and native[1][3]  # problem


@DIFF_SETTINGS
@given(drawn=verified_inputs(), check=st.booleans())
def test_provenance_native_equals_reference(drawn: VerifiedDrawn, check: bool) -> None:
    """With and without a ``verify`` reader: equal results (stale omissions included), equal
    errors, the reader asked for the same paths in the same order, equal digests and keys."""
    native_reader, ref_reader = drawn.reader(), drawn.reader()
    native = outcome(
        lambda inp: bugcontext.build(inp, verify=native_reader if check else None), drawn.make()
    )
    ref = outcome(lambda inp: reference.build(inp, verify=ref_reader if check else None), drawn.make())
    assert native == ref
    assert native_reader.calls == ref_reader.calls
    if native[0] == "ok":
        inp = drawn.make()
        assert bugcontext.cache_key(inp) == reference.cache_key(inp)
        if check:
            # Every stale omission is a candidate whose window is not its file's lines.
            result = bugcontext.build(drawn.make(), verify=drawn.reader())
            stale = {o.index for o in result.omitted if o.reason == "stale"}
            assert stale == set(expected_stale(drawn))
        else:
            assert native_reader.calls == []


def expected_stale(drawn: VerifiedDrawn) -> list[int]:
    """The stale candidates, restated from the contract with ``bytes.splitlines``-free
    splitting: a missing file, another SHA-256, or content that is not the lines."""
    import hashlib
    import re

    out = []
    for i, spec in enumerate(drawn.specs):
        path = "/".join(p for p in spec[0].split("/") if p not in ("", "."))
        data = drawn.files.get(path)
        if data is None:
            out.append(i)
            continue
        text = data.decode("utf-8-sig", "surrogateescape")
        lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
        start, end, content, sha = spec[1], spec[2], spec[3], spec[6]
        if (sha is not None and sha != hashlib.sha256(data).hexdigest()) or end > len(lines):
            out.append(i)
        elif "".join(lines[start - 1 : end]) != content:
            out.append(i)
    return out
