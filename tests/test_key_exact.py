"""Equal cache keys, equal results: the key holds every score's exact type and value and, for a
verified build, the reader's state; both engines compute the same key; the JSON form of a
result is the same under every ``PYTHONHASHSEED``, groups that are sets included."""

from __future__ import annotations

import collections
import io
import json
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import InvalidInputError
from bugcontext.core.digest import input_key
from conftest import DIFF_EXAMPLES, VerifiedDrawn, error_signature, verified_inputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ENGINES = [bugcontext, reference]
SETTINGS = settings(
    max_examples=max(DIFF_EXAMPLES // 8, 20),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _one(score: Any, path: str = "a.py") -> dict[str, Any]:
    return {"candidates": [{"path": path, "start": 1, "end": 1, "content": "x\n", "reason": "search",
                            "score": score}], "max_chars": 10}  # fmt: skip


# --- scores by exact value and type -----------------------------------------------------------

BIG = 2**53
# Pairs that both engines rank alike (equal as float64) but whose results differ: the result
# carries each score as given.
SAME_FLOAT = [(BIG, BIG + 1), (1, 1.0), (0.0, -0.0), (0, -0.0), (float(BIG), BIG), (-(2**60), -(2**60) - 1)]


@pytest.mark.parametrize("module", ENGINES, ids=["native", "reference"])
@pytest.mark.parametrize(("a", "b"), SAME_FLOAT, ids=[f"{a!r}-{b!r}" for a, b in SAME_FLOAT])
def test_scores_equal_as_floats_but_not_exactly_have_different_keys(module: Any, a: Any, b: Any) -> None:
    assert float(a) == float(b)
    first, second = module.build(_one(a)), module.build(_one(b))
    assert first.selected == second.selected == (0,)
    assert _json(first) != _json(second)  # the items' scores differ (1 == 1.0 in Python: as JSON)
    assert module.cache_key(_one(a)) != module.cache_key(_one(b))


def _json(result: Any) -> str:
    """The result's JSON form as text (where ``1 == 1.0`` and ``0.0 == -0.0`` do not hold)."""
    return json.dumps(result.to_dict())


def _exact(score: Any) -> tuple[Any, ...]:
    return (type(score), score, struct.pack(">d", float(score)))


SCORES = st.one_of(
    st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, BIG, BIG + 1, float(BIG), -BIG - 1, 2**1023, float(2**1023)]),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
)


@SETTINGS
@given(a=SCORES, b=SCORES)
def test_equal_keys_exactly_when_equal_results(a: Any, b: Any) -> None:
    keys = {m.__name__: (m.cache_key(_one(a)), m.cache_key(_one(b))) for m in ENGINES}
    assert keys["bugcontext"] == keys["bugcontext.reference"]
    key_a, key_b = keys["bugcontext"]
    same = _exact(a) == _exact(b)
    assert (key_a == key_b) == same
    # One candidate, selected: its score is the only difference there can be.
    assert (_json(bugcontext.build(_one(a))) == _json(bugcontext.build(_one(b)))) == (key_a == key_b)


def test_a_float_only_input_keeps_its_key() -> None:
    """The exact-score extension applies only where a score is an ``int`` or ``-0.0``: the key
    of an input of other floats is the earlier form, unchanged."""
    rows = [("a.py", 1, 1, "x\n", "search", 2.5)]
    assert bugcontext.cache_key(_one(2.5)) == reference.cache_key(_one(2.5))
    assert bugcontext.cache_key(_one(2.5)) == input_key(rows, 1, 10, [], bugcontext.Cost())
    # As restated from the documented bytes of v1, without any extension:
    import hashlib

    from test_digest import POLICY, _cost, _s, _window

    body = _s("repo-context input v1") + _s(POLICY) + _cost("chars", None, None, False, "rank")
    body += struct.pack(">QQQ", 10, 0, 1) + _window("a.py", 1, 1, "x\n", "search") + struct.pack(">d", 2.5)
    assert bugcontext.cache_key(_one(2.5)) == hashlib.sha256(body).hexdigest()


def test_int_subclass_scores_are_keyed_by_their_value() -> None:
    class Loud(int):
        def __repr__(self) -> str:
            raise AssertionError("the key does not call a subclass's own methods")

        __str__ = __repr__

    for module in ENGINES:
        assert module.cache_key(_one(Loud(BIG + 1))) == module.cache_key(_one(BIG + 1))


# --- a verified build's key holds the reader's state ---------------------------------------------


@SETTINGS
@given(drawn=verified_inputs())
def test_verified_keys_native_equal_reference_and_read_as_the_build_reads(drawn: VerifiedDrawn) -> None:
    def outcome(module: Any) -> tuple[Any, list[str]]:
        reader = drawn.reader()
        try:
            return ("ok", module.cache_key(drawn.make(), verify=reader)), reader.calls
        except Exception as exc:
            return ("error", error_signature(exc)), reader.calls

    native, ref = outcome(bugcontext), outcome(reference)
    assert native == ref
    if native[0][0] == "ok":
        build_reader = drawn.reader()
        bugcontext.build(drawn.make(), verify=build_reader)
        assert build_reader.calls == native[1]  # once per path, in order of first appearance
        assert native[0][1] != bugcontext.cache_key(drawn.make())


@pytest.mark.parametrize("module", ENGINES, ids=["native", "reference"])
def test_equal_verified_keys_equal_files_equal_results(module: Any) -> None:
    inp = {
        "candidates": [
            {"path": "a.py", "start": 1, "end": 1, "content": "x = 1\n", "reason": "failure", "score": 1.0},
            {"path": "b.py", "start": 1, "end": 1, "content": "y = 2\n", "reason": "search", "score": 0.5},
        ],
        "max_chars": 100,
    }
    now = {"a.py": b"x = 1\n", "b.py": b"y = 2\n"}
    edited = {"a.py": b"x = 2\n", "b.py": b"y = 2\n"}
    gone = {"b.py": b"y = 2\n"}

    def key(files: dict[str, bytes]) -> str:
        return str(module.cache_key(inp, verify=files.get))

    def result(files: dict[str, bytes]) -> str:
        return _json(module.build(inp, verify=files.get))

    assert result(now) != result(edited) == result(gone)  # a.py stale in both
    assert len({key(now), key(edited), key(gone), module.cache_key(inp)}) == 4
    assert key(dict(now)) == key(now) and result(dict(now)) == result(now)
    assert key(now) == bugcontext.cache_key(inp, verify=now.get) == reference.cache_key(inp, verify=now.get)


@pytest.mark.parametrize("module", ENGINES, ids=["native", "reference"])
def test_a_bad_reader_is_refused_as_the_build_refuses_it(module: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        module.cache_key(_one(1.0), verify="not callable")
    assert info.value.field == "verify"
    with pytest.raises(
        TypeError, match=r"verify: the reader must return bytes or None, not str \(for 'a.py'\)"
    ):
        module.cache_key(_one(1.0), verify=lambda path: "text")


@pytest.mark.parametrize("engine", ["native", "reference"])
def test_a_verified_trace_records_the_key_of_the_files_it_read(engine: str) -> None:
    module = bugcontext if engine == "native" else reference
    inp = _one(1.0)
    reads: list[str] = []
    versions = iter([b"x\n", b"changed\n"])

    def reader(path: str) -> bytes:
        reads.append(path)
        return next(versions)  # a file edited between two reads

    out = io.StringIO()
    result = module.build(inp, verify=reader, trace=out)
    record = json.loads(out.getvalue())
    assert reads == ["a.py"] and result.selected == (0,)
    assert record["cache_key"] == module.cache_key(inp, verify=lambda path: b"x\n")
    assert record["cache_key"] != module.cache_key(inp)


# --- the JSON form under any hash seed -------------------------------------------------------------

_SCRIPT = """
import collections, io, json
import bugcontext, bugcontext.reference as r
Pair = collections.namedtuple("Pair", "kind members")
groups = [
    frozenset({"alpha", "beta", "gamma", "delta", "epsilon"}),
    ("task", frozenset({"a", "b", "c", "d"})),
    frozenset({frozenset({"x", "y", "z"}), frozenset({1, 2, 3}), ("k", frozenset({"p", "q"}))}),
    Pair("p", frozenset({"one", "two", "three"})),
    frozenset(),
]
cands = [
    {"path": f"m{i}.py", "start": 1, "end": 1, "content": "x\\n", "reason": "search", "score": 1.0 / (i + 1),
     "group": g}
    for i, g in enumerate(groups)
]
inp = {"candidates": cands, "max_chars": 100}
out = []
for m in (bugcontext, r):
    trace = io.StringIO()
    out.append(m.build(inp, trace=trace).to_dict())
    out.append(json.loads(trace.getvalue())["input"]["candidates"])
print(json.dumps(out, sort_keys=True))
"""


def test_the_json_form_is_the_same_under_every_hash_seed() -> None:
    outputs = set()
    for seed in ("0", "1", "2", "12345"):
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    native, native_trace, ref, ref_trace = json.loads(outputs.pop())
    assert native == ref and native_trace == ref_trace
    shown = [item["group"] for item in native["items"]]
    assert shown == [
        "frozenset({'alpha', 'beta', 'delta', 'epsilon', 'gamma'})",
        "('task', frozenset({'a', 'b', 'c', 'd'}))",
        "frozenset({('k', frozenset({'p', 'q'})), frozenset({'x', 'y', 'z'}), frozenset({1, 2, 3})})",
        "Pair(kind='p', members=frozenset({'one', 'three', 'two'}))",
        "frozenset()",
    ]


def test_a_canonical_group_is_its_repr_where_that_is_already_canonical() -> None:
    Point = collections.namedtuple("Point", "x y")

    class Tagged(frozenset):  # type: ignore[type-arg]
        pass

    for group in [
        ("a", 1),
        (1,),
        (),
        Point(1, "b"),
        frozenset({7}),
        Tagged({3}),
        Tagged(),
        1.5j,
        ("s\udcff",),
    ]:
        cand = bugcontext.Candidate("a.py", 1, 1, "x\n", "search", 1.0, group=group)
        assert cand.to_dict()["group"] == repr(group)


def test_a_deeply_nested_group_is_written_without_a_crash() -> None:
    group: Any = frozenset({"leaf"})
    for _ in range(300):
        group = (group,)
    cand = bugcontext.Candidate("a.py", 1, 1, "x\n", "search", 1.0, group=group)
    assert cand.to_dict()["group"] == repr(group)


def test_scores_by_value_in_the_input_key_function(tmp_path: Path) -> None:
    rows = [("a.py", 1, 1, "x\n", "search", BIG + 1)]
    assert input_key(rows, 1, 10, [], bugcontext.Cost()) == bugcontext.cache_key(_one(BIG + 1))
    assert input_key(rows, 1, 10, [], bugcontext.Cost()) != input_key(
        [("a.py", 1, 1, "x\n", "search", float(BIG))], 1, 10, [], bugcontext.Cost()
    )


_CONTEXT_SCRIPT = """
import json, sys
from bugcontext import Workspace
root, log = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
print(json.dumps(Workspace(root, cache=False).context(log, budget=3000).to_dict(), sort_keys=True))
"""


def test_a_context_result_is_the_same_under_every_hash_seed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    files = {
        "pkg/__init__.py": "",
        "pkg/calc.py": "".join(f"def f{i}(x):\n    return g{i}(x) + {i}\n\n\n" for i in range(12))
        + "".join(f"def g{i}(x):\n    return x / {i % 3}\n\n\n" for i in range(12)),
        "pkg/use.py": "from pkg.calc import f1, f2, g1\n\n\ndef run():\n    return f1(1) + f2(2) + g1(3)\n",
        "tests/test_calc.py": "from pkg.use import run\n\n\ndef test_run():\n    assert run() == 0\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    log = tmp_path / "log.txt"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "tests/test_calc.py", line 5, in test_run\n    assert run() == 0\n'
        '  File "pkg/use.py", line 5, in run\n    return f1(1) + f2(2) + g1(3)\n'
        '  File "pkg/calc.py", line 2, in f1\n    return g1(x) + 1\n'
        '  File "pkg/calc.py", line 50, in g1\n    return x / 1\n'
        "ZeroDivisionError: division by zero\n",
        encoding="utf-8",
    )
    outputs = set()
    for seed in ("0", "1", "2", "12345"):
        done = subprocess.run(
            [sys.executable, "-c", _CONTEXT_SCRIPT, str(root), str(log)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())["items"]
