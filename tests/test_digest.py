"""The result digest and the input cache key: the byte form, both engines, determinism.

The byte form is restated here independently of ``bugcontext.core.digest`` (``_form_*`` below,
from the documented notation), and a fixed input's digest and key are pinned to literal hex
values, so that any change of the form or of the ranking policy is noticed.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import Candidate, Cost
from bugcontext.core.digest import input_key, result_digest
from conftest import DIFF_EXAMPLES, Drawn, build_inputs, error_signature
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def key_outcome(cache_key: Any, inp: Any) -> tuple[Any, ...]:
    """("ok", key) or ("error", the error's type, index, field, problem and message)."""
    try:
        return ("ok", cache_key(inp))
    except Exception as exc:
        return ("error", error_signature(exc))


SETTINGS = settings(
    max_examples=DIFF_EXAMPLES // 4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

POLICY = (
    "rank-v1: failing files in error order, then reference, failure, search; score descending; "
    "input index; closed line ranges, first selected wins; whole snippets, first fit"
)


# ---------------------------------------------------------------------------
# The documented byte form, implemented again from its notation.
# ---------------------------------------------------------------------------


def _s(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    return struct.pack(">Q", len(raw)) + raw


def _o(text: str | None) -> bytes:
    return b"\0" if text is None else b"\1" + _s(text)


def _cost(unit: str, encoding: str | None, template: str | None, numbers: bool, order: str) -> bytes:
    return _s(unit) + _o(encoding) + _o(template) + bytes([numbers]) + _s(order)


def _window(path: str, start: int, end: int, content: str, reason: str) -> bytes:
    sha = hashlib.sha256(content.encode("utf-8", "surrogatepass")).digest()
    return _s(path) + struct.pack(">QQ", start, end) + sha + _s(reason)


FIXED = [
    Candidate("src/app.py", 10, 20, "def f():\n    return 1\n", "reference", 1.0),
    Candidate("./src/app.py", 12, 14, "    return 1\n", "search", 9.5),
    Candidate("src/util.py", 1, 5, "x" * 50, "failure", 3),
    Candidate("src/\udcff.py", 1, 1, "caf\u00e9 \U0001f600 \ud800", "failure", -0.0),
]
FIXED_INPUT = {"candidates": FIXED, "max_chars": 60, "failure_files": ["src/\udcff.py"]}
# Computed by the byte form above (see test_the_pinned_values_follow_the_documented_form).
FIXED_DIGEST = "411b076d9f90c724ffe2b6f07f8d2240e7fc1781bb3913a431b37fb8e1687318"
FIXED_KEY = "0e2a502b9f330a4b42748241466c254ca0afd6105fb80797fde949c8a26fb1b1"


def independent_digest() -> str:
    # Selected: the failing file's window (group 0), then the reference; the failure window of
    # util.py (50 chars) does not fit what is left of 60; the search hit overlaps.
    body = _s("repo-context result v1") + _s(POLICY) + _cost("chars", None, None, False, "rank")
    body += struct.pack(">Q", 1) + _s("src/\udcff.py") + struct.pack(">Q", 2)
    body += _window("src/\udcff.py", 1, 1, "caf\u00e9 \U0001f600 \ud800", "failure")
    body += _window("src/app.py", 10, 20, "def f():\n    return 1\n", "reference")
    return hashlib.sha256(body).hexdigest()


def _exact_scores(scores: list[Any]) -> bytes:
    """The key's ``"scores"`` extension, as documented: when some score is an ``int`` or
    ``-0.0``, ``S("scores") U(n)`` and per score ``0x00`` (another float), ``0x01`` (``-0.0``)
    or ``0x02 S(decimal)`` (an ``int``); else nothing."""
    entries = []
    for score in scores:
        if isinstance(score, int):
            entries.append(b"\2" + _s(str(score)))
        elif score == 0.0 and str(score).startswith("-"):
            entries.append(b"\1")
        else:
            entries.append(b"\0")
    if all(e == b"\0" for e in entries):
        return b""
    return _s("scores") + struct.pack(">Q", len(entries)) + b"".join(entries)


def independent_key() -> str:
    body = _s("repo-context input v1") + _s(POLICY) + _cost("chars", None, None, False, "rank")
    body += struct.pack(">Q", 60) + struct.pack(">Q", 1) + _s("src/\udcff.py") + struct.pack(">Q", 4)
    for c in FIXED:
        path = "/".join(p for p in c.path.split("/") if p not in ("", "."))
        body += _window(path, c.start, c.end, c.content, c.reason) + struct.pack(">d", float(c.score) + 0.0)
    body += _exact_scores([c.score for c in FIXED])  # 3 is an int, -0.0 is -0.0
    return hashlib.sha256(body).hexdigest()


def test_the_policy_version_is_the_documented_one() -> None:
    assert bugcontext.POLICY_VERSION == POLICY


def test_the_pinned_values_follow_the_documented_form() -> None:
    assert independent_digest() == FIXED_DIGEST
    assert independent_key() == FIXED_KEY


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
def test_fixed_input_digest_and_key_are_pinned(module: Any) -> None:
    result = module.build(FIXED_INPUT)
    assert result.selected == (3, 0)
    assert result.digest == FIXED_DIGEST
    assert result_digest(result) == FIXED_DIGEST
    assert result.to_dict()["digest"] == FIXED_DIGEST
    assert module.cache_key(FIXED_INPUT) == FIXED_KEY


def test_swapping_two_reasons_in_the_ranking_changes_the_pinned_digest() -> None:
    # A ranking that swaps "reference" and "failure" (the named mutants *-swap-reasons) selects
    # util.py's failure window before app.py's reference, and then app.py no longer fits: its
    # digest is this one, not the pinned one, so test_fixed_input_digest_and_key_are_pinned
    # catches the mutation in either engine.
    body = _s("repo-context result v1") + _s(POLICY) + _cost("chars", None, None, False, "rank")
    body += struct.pack(">Q", 1) + _s("src/\udcff.py") + struct.pack(">Q", 2)
    body += _window("src/\udcff.py", 1, 1, "caf\u00e9 \U0001f600 \ud800", "failure")
    body += _window("src/util.py", 1, 5, "x" * 50, "failure")
    assert hashlib.sha256(body).hexdigest() != FIXED_DIGEST
    assert bugcontext.build(FIXED_INPUT).selected == (3, 0)


# ---------------------------------------------------------------------------
# Both engines, any input
# ---------------------------------------------------------------------------


@SETTINGS
@given(drawn=build_inputs())
def test_digest_and_key_native_equal_reference_and_the_spec(drawn: Drawn) -> None:
    inp = drawn.make()
    native, ref = bugcontext.build(inp), reference.build(inp)
    assert native.digest == ref.digest == result_digest(native) == result_digest(ref)
    assert len(native.digest) == 64 and int(native.digest, 16) >= 0
    assert key_outcome(bugcontext.cache_key, inp) == key_outcome(reference.cache_key, inp)


@SETTINGS
@given(drawn=build_inputs(max_size=12), data=st.data())
def test_digest_changes_with_any_field_of_any_item(drawn: Drawn, data: st.DataObject) -> None:
    result = bugcontext.build(drawn.make())
    if not result.items:
        return
    at = data.draw(st.integers(0, len(result.items) - 1), label="item")
    item = result.items[at]
    field = data.draw(st.sampled_from(["path", "start", "end", "content", "reason"]), label="field")
    values = item.to_dict()
    if field == "path":
        values["path"] = item.path + "x"
    elif field == "start":
        values["start"] = item.start + 1 if item.start < item.end else item.start - 1
        if values["start"] < 1:
            values["end"] += 1
            values["start"] = item.start
            field = "end"
    elif field == "end":
        values["end"] = item.end + 1
    elif field == "content":
        values["content"] = item.content + "\n"
    else:
        values["reason"] = "search" if item.reason != "search" else "reference"
    items = list(result.items)
    items[at] = Candidate(**values)
    changed = _replace_items(result, items)
    assert changed.digest != result.digest
    assert result_digest(changed) == changed.digest


@SETTINGS
@given(drawn=build_inputs(max_size=12), data=st.data())
def test_digest_ignores_an_omitted_candidates_score_that_keeps_the_selection(
    drawn: Drawn, data: st.DataObject
) -> None:
    inp = drawn.make()
    result = bugcontext.build(inp)
    if not result.omitted:
        return
    o = data.draw(st.sampled_from(result.omitted), label="omission")
    specs = list(drawn.specs)
    spec = list(specs[o.index])
    spec[5] = data.draw(st.floats(-1e6, 1e6), label="score")
    specs[o.index] = tuple(spec)
    again = bugcontext.build(
        Drawn(specs, drawn.forms, drawn.max_chars, drawn.failure_file, drawn.top_form, False).make()
    )
    if again.selected == result.selected:
        assert again.digest == result.digest
    key_before = bugcontext.cache_key(inp)
    key_after = bugcontext.cache_key(
        Drawn(specs, drawn.forms, drawn.max_chars, drawn.failure_file, drawn.top_form, False).make()
    )
    # The key holds each score's exact type and value (the result carries it as given).
    assert (key_before == key_after) == (_exact_score(drawn.specs[o.index][5]) == _exact_score(spec[5]))


def _exact_score(score: Any) -> tuple[str, Any]:
    """A score as the key tells scores apart: an ``int`` by its value, a float by its bits."""
    if isinstance(score, int):
        return ("int", int(score))
    return ("float", struct.pack(">d", float(score)))


def _replace_items(result: Any, items: list[Candidate]) -> Any:
    return bugcontext.BuildResult(
        items,
        result.selected,
        result.used_chars,
        result.truncated,
        result.omitted,
        result.failure_files,
        result.cost,
        result.budget,
        result.used,
        result.blocks,
    )


# ---------------------------------------------------------------------------
# What the key and digest cover
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
def test_key_covers_order_budget_cost_and_failing_files(module: Any) -> None:
    base = module.cache_key(FIXED_INPUT)
    variants = [
        {**FIXED_INPUT, "candidates": FIXED[::-1]},
        {**FIXED_INPUT, "max_chars": 61},
        {**FIXED_INPUT, "failure_files": ["src/util.py"]},
        {**FIXED_INPUT, "failure_files": None},
        {"candidates": FIXED, "budget": 60, "failure_files": ["src/\udcff.py"], "cost": {"template": "xml"}},
    ]
    keys = [module.cache_key(v) for v in variants]
    assert len({base, *keys}) == len(variants) + 1
    # Equal results, equal key: spellings of a path, a Reason member.
    same = [
        Candidate("./src//app.py", 10, 20, "def f():\n    return 1\n", bugcontext.Reason.REFERENCE, 1.0),
        *FIXED[1:],
    ]
    assert module.cache_key({**FIXED_INPUT, "candidates": same}) == base
    # An int score is not its float: the result carries the score as given (1 and 1.0).
    as_int = [Candidate("src/app.py", 10, 20, "def f():\n    return 1\n", "reference", 1), *FIXED[1:]]
    assert module.cache_key({**FIXED_INPUT, "candidates": as_int}) != base
    assert module.cache_key(bugcontext.BuildInput(FIXED, 60, failure_files=["src/\udcff.py"])) == base


def test_key_of_an_invalid_input_raises_the_build_error() -> None:
    bad = {"candidates": [*FIXED, {"path": "a", "start": 0}], "max_chars": 1}
    native = key_outcome(bugcontext.cache_key, bad)
    assert native == key_outcome(reference.cache_key, bad) == key_outcome(bugcontext.build, bad)
    assert native[0] == "error"


def test_digest_is_kept_through_pickle_and_equality() -> None:
    result = bugcontext.build(FIXED_INPUT)
    copy = pickle.loads(pickle.dumps(result))
    assert copy == result and copy.digest == result.digest
    assert hash(copy) == hash(result)


def test_digest_covers_the_cost_model() -> None:
    chars = bugcontext.build({"candidates": FIXED[:1], "max_chars": 1000})
    xml = bugcontext.build({"candidates": FIXED[:1], "budget": 1000, "cost": Cost(template="xml")})
    assert chars.items == xml.items
    assert chars.digest != xml.digest


def test_hand_made_result_with_a_non_text_item_raises_type_error() -> None:
    bad = _replace_items(bugcontext.build(FIXED_INPUT), [Candidate(1, 1, 1, "x", "search", 0)])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _ = bad.digest


# ---------------------------------------------------------------------------
# Cross-process determinism
# ---------------------------------------------------------------------------

_SCRIPT = """
import bugcontext, bugcontext.reference as r
import sys
sys.path.insert(0, {tests!r})
from test_digest import FIXED_INPUT
inp = dict(FIXED_INPUT, candidates=FIXED_INPUT["candidates"] * 3)
print(bugcontext.build(inp).digest, r.build(inp).digest, bugcontext.cache_key(inp), r.cache_key(inp))
"""


def test_digest_and_key_equal_across_processes_and_hash_seeds() -> None:
    outputs = set()
    for seed in ("0", "1", "12345", "random"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT.format(tests=str(Path(__file__).parent))],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    digest, ref_digest, key, ref_key = outputs.pop().split()
    assert digest == ref_digest and key == ref_key


def test_input_key_function_matches_the_builders() -> None:
    rows = [
        (
            "/".join(p for p in c.path.split("/") if p not in ("", ".")),
            c.start,
            c.end,
            c.content,
            c.reason,
            c.score,
        )
        for c in FIXED
    ]
    assert input_key(rows, len(rows), 60, ["src/\udcff.py"], Cost()) == FIXED_KEY


# ---------------------------------------------------------------------------
# Provenance: the v2 form (a candidate with source_sha256 or source_id)
# ---------------------------------------------------------------------------

SHA = hashlib.sha256(b"def f():\n    return 1\n").hexdigest()
PROVENANCE = [
    Candidate(
        "src/app.py",
        1,
        2,
        "def f():\n    return 1\n",
        "reference",
        1.0,
        source_sha256=SHA,
        source_id="parser",
    ),
    Candidate("./src/b.py", 3, 3, "x\n", "search", 2, source_id="plug-\ud800"),
    Candidate("src/c.py", 1, 1, "y\n", "search", 1),
]
PROVENANCE_INPUT = {"candidates": PROVENANCE, "max_chars": 100}


def independent_v2() -> tuple[str, str]:
    head = _s(POLICY) + _cost("chars", None, None, False, "rank")
    digest = _s("repo-context result v2") + head + struct.pack(">Q", 0) + struct.pack(">Q", 3)
    key = _s("repo-context input v2") + head + struct.pack(">Q", 100) + struct.pack(">Q", 0)
    key += struct.pack(">Q", 3)
    for c in PROVENANCE:  # selected in input order: reference first, then search by score
        path = "/".join(p for p in c.path.split("/") if p not in ("", "."))
        window = _window(path, c.start, c.end, c.content, c.reason)
        tail = _o(c.source_sha256) + _o(c.source_id)
        digest += window + tail
        key += window + struct.pack(">d", float(c.score) + 0.0) + tail
    key += _exact_scores([c.score for c in PROVENANCE])
    return hashlib.sha256(digest).hexdigest(), hashlib.sha256(key).hexdigest()


# Computed by the byte form above (test_the_v2_values_follow_the_documented_form).
V2_DIGEST = "8bfd39bfe40de8e9557525474807d032799a2ce28fb49e8c9358c91f5b03f27a"
V2_KEY = "b5b22bda93f37b0f9619b7b79b34cf5c2b4d4a4fa83ff42c6fbf523b0f3a19aa"


def test_the_v2_values_follow_the_documented_form() -> None:
    assert independent_v2() == (V2_DIGEST, V2_KEY)


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
def test_provenance_uses_the_v2_form_and_without_it_v1_is_unchanged(module: Any) -> None:
    result = module.build(PROVENANCE_INPUT)
    assert result.selected == (0, 1, 2)
    assert result.digest == result_digest(result) == V2_DIGEST
    assert module.cache_key(PROVENANCE_INPUT) == V2_KEY
    # Any change of one item's provenance changes both.
    for change in ({"source_id": "other"}, {"source_sha256": "0" * 64}, {"source_sha256": None}):
        fields = {**PROVENANCE[0].to_dict(), **change}
        changed = {**PROVENANCE_INPUT, "candidates": [Candidate(**fields), *PROVENANCE[1:]]}
        assert module.build(changed).digest != V2_DIGEST
        assert module.cache_key(changed) != V2_KEY
    # The fixed input without provenance keeps its pinned v1 values.
    assert module.build(FIXED_INPUT).digest == FIXED_DIGEST


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
def test_the_key_covers_the_partition_into_groups(module: Any) -> None:
    def cand(path: str, group: Any = None) -> dict[str, Any]:
        c = {"path": path, "start": 1, "end": 2, "content": "xx", "reason": "search", "score": 1.0}
        return c if group is None else {**c, "group": group}

    def key(*cands: dict[str, Any]) -> str:
        return str(module.cache_key({"candidates": list(cands), "max_chars": 3}))

    grouped, apart = key(cand("a.py", "g"), cand("b.py", "g")), key(cand("a.py"), cand("b.py"))
    # Different results (the pair does not fit; alone, the first does), so different keys.
    together = module.build({"candidates": [cand("a.py", "g"), cand("b.py", "g")], "max_chars": 3})
    assert together.selected == ()
    assert module.build({"candidates": [cand("a.py"), cand("b.py")], "max_chars": 3}).selected == (0,)
    assert grouped != apart
    # The partition is what counts, not the ids' values: same partition, same key.
    assert key(cand("a.py", 7), cand("b.py", 7)) == grouped
    assert key(cand("a.py", "g"), cand("b.py", "h")) != grouped
    assert key(cand("a.py", "g"), cand("b.py")) not in (grouped, apart)
    # Without groups the key is the v1 form, unchanged: restated from the documented bytes.
    assert apart == bugcontext.core.digest.input_key(
        [("a.py", 1, 2, "xx", "search", 1.0), ("b.py", 1, 2, "xx", "search", 1.0)],
        2,
        3,
        [],
        bugcontext.Cost(),
    )
    assert grouped == bugcontext.core.digest.input_key(
        [("a.py", 1, 2, "xx", "search", 1.0), ("b.py", 1, 2, "xx", "search", 1.0)],
        2,
        3,
        [],
        bugcontext.Cost(),
        [0, 0],
    )
