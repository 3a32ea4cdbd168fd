"""Build traces (``trace=``, ``--trace``) and their replay (``bugcontext replay``)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import Candidate, InvalidCandidateError
from bugcontext.core.trace import Change, read_trace, replay
from bugcontext.integrations.cli import main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import cli, failing_repo  # noqa: F401  (a fixture)

CANDS = [
    Candidate("util.py", 1, 5, "u" * 10, "reference", 1.0),
    Candidate("impl.py", 1, 5, "m" * 10, "search", 0.1, group="pair"),
    Candidate("./api.py", 1, 5, "i" * 10, "reference", 5.0, group="pair"),
    Candidate("util.py", 3, 9, "w" * 4, "search", 0.0),
]
INPUT = {"candidates": CANDS, "max_chars": 15, "failure_files": ["util.py"]}


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
def test_a_trace_line_records_key_digest_input_and_every_decision(module: Any) -> None:
    out = io.StringIO()
    result = module.build(INPUT, trace=out)
    assert result == module.build(INPUT)
    record = json.loads(out.getvalue())
    assert out.getvalue().count("\n") == 1
    assert record["trace"] == 1
    assert record["policy"] == bugcontext.POLICY_VERSION
    assert record["engine"] == ("native" if module is bugcontext else "reference")
    assert record["cache_key"] == bugcontext.cache_key(INPUT)
    assert record["digest"] == result.digest
    assert record["input"]["candidates"][2] == {
        "path": "api.py",
        "start": 1,
        "end": 5,
        "content": "i" * 10,
        "reason": "reference",
        "score": 5.0,
        "group": 0,  # the dense id of "pair", the first group to appear
    }
    assert (record["input"]["budget"], record["input"]["failure_files"]) == (15, ["util.py"])
    # Rank: util.py (failing file) 0 then 3; the pair at api.py's rank; impl.py last.
    assert record["decisions"] == [
        {"index": 0, "rank": 0, "reason": "selected", "cost": 10},
        {"index": 3, "rank": 1, "reason": "overlap", "overlaps": 0, "cost": 4},
        {"index": 2, "rank": 2, "reason": "group", "member": 2, "cost": 10},
        {"index": 1, "rank": 3, "reason": "group", "member": 2, "cost": 10},
    ]


def test_a_trace_file_is_appended_to_and_an_invalid_input_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    bugcontext.build(INPUT, trace=path)
    reference.build({**INPUT, "max_chars": 40}, trace=str(path))
    with pytest.raises(InvalidCandidateError):
        bugcontext.build({"candidates": [{"path": ""}], "max_chars": 1}, trace=path)
    records = read_trace(path)
    assert [r["input"]["budget"] for r in records] == [15, 40]


def test_replay_reproduces_and_shows_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    bugcontext.build(INPUT, trace=path)
    bugcontext.build({**INPUT, "max_chars": 40}, trace=path)
    moved = [CANDS[1], CANDS[2], Candidate("util.py", 1, 5, "u" * 10, "reference", 1.0)]
    bugcontext.build({"candidates": moved, "max_chars": 40}, trace=path)
    for build in (bugcontext.build, reference.build):
        turns = list(replay(path, build))
        assert [t.reproduced for t in turns] == [True, True, True]
        assert turns[0].changes == ()
        assert turns[1].changes == (
            Change("added", "api.py", 1, 5, None, 1, "reference, selected #1"),
            Change("added", "impl.py", 1, 5, None, 2, "search, selected #2"),
        )
        # util.py is no longer a failing file: the pair ranks first.
        assert turns[2].changes == (
            Change("moved", "api.py", 1, 5, 1, 0, "reference, selected #0"),
            Change("moved", "impl.py", 1, 5, 2, 1, "search, selected #1"),
            Change("moved", "util.py", 1, 5, 0, 2, "reference, selected #2"),
        )


def test_replay_says_why_an_item_was_dropped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    bugcontext.build({**INPUT, "max_chars": 40}, trace=path)
    bugcontext.build({**INPUT, "max_chars": 25}, trace=path)  # the pair no longer fits
    bugcontext.build({**INPUT, "candidates": CANDS[1:], "max_chars": 40}, trace=path)
    turns = list(replay(path, bugcontext.build))
    assert turns[1].changes == (
        Change("dropped", "api.py", 1, 5, 1, None, "group (member impl.py:1-5)"),
        Change("dropped", "impl.py", 1, 5, 2, None, "group (member impl.py:1-5)"),
    )
    dropped = {c.path: c.why for c in turns[2].changes if c.kind == "dropped"}
    assert dropped == {"util.py": "no longer proposed"}  # its window 1-5 is gone from the input
    added = Change("added", "util.py", 3, 9, None, 0, "search, selected #0")
    assert added in turns[2].changes


def test_replay_reports_a_changed_policy_or_engine_result(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "t.jsonl"
    bugcontext.build(INPUT, trace=path)
    record = json.loads(path.read_text())
    record["digest"] = "0" * 64
    path.write_text(json.dumps(record) + "\n")
    assert main(["replay", str(path)]) == 4
    out = capsys.readouterr().out
    assert "NOT reproduced (recorded " + "0" * 64 + ")" in out
    path.write_text("not json\n")
    assert main(["replay", str(path)]) == 2
    assert "trace line 1: not JSON" in capsys.readouterr().err


def test_cli_build_trace_and_replay(tmp_path: Path, capsys: Any) -> None:
    data = {"candidates": [c.to_dict() for c in CANDS], "max_chars": 15, "failure_files": ["util.py"]}
    file, trace = tmp_path / "in.json", tmp_path / "t.jsonl"
    file.write_text(json.dumps(data))
    assert main(["build", str(file), "--trace", str(trace)]) == 0
    assert main(["build", str(file), "--trace", str(trace), "--budget", "40", "--engine", "reference"]) == 0
    capsys.readouterr()
    assert main(["replay", str(trace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"turn 1: digest [0-9a-f]{64} reproduced", lines[0])
    assert lines[2:] == [
        "  added   api.py:1-5 (reference, selected #1)",
        "  added   impl.py:1-5 (search, selected #2)",
    ]


def test_context_trace_and_replay_across_two_turns_of_a_real_failing_run(
    failing_repo: tuple[Path, Path],  # noqa: F811
    tmp_path: Path,
) -> None:
    repo, log = failing_repo
    trace = tmp_path / "session.jsonl"
    args = ["context", "--repo", str(repo), "--pytest-log", str(log), "--trace", str(trace)]
    first = cli(*args, "--max-chars", "120", "--format", "json")
    second = cli(*args, "--max-chars", "4000", "--format", "json")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    records = read_trace(trace)
    assert [r["digest"] for r in records] == [
        json.loads(first.stdout)["digest"],
        json.loads(second.stdout)["digest"],
    ]
    done = cli("replay", str(trace))
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.count(" reproduced\n") == 2
    added = {
        (item["path"], item["start"], item["end"])
        for item in json.loads(second.stdout)["items"]
        if item not in json.loads(first.stdout)["items"]
    }
    assert added
    for path, start, end in added:
        assert f"  added   {path}:{start}-{end} (" in out


class Id:
    """A group id equal by value whose ``repr`` holds its address."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Id) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
@pytest.mark.parametrize(
    "groups",
    [
        [("t", 1), "('t', 1)"],  # two groups whose ids have one repr
        [Id(1), Id(1)],  # one group of two objects with different reprs
        [float("nan"), float("inf")],  # not JSON values
    ],
    ids=["repr-collision", "equal-objects", "non-finite"],
)
def test_groups_are_traced_as_their_partition_and_replayed_exactly(
    tmp_path: Path, module: Any, groups: list[Any]
) -> None:
    cands = [
        Candidate("a.py", 1, 1, "aa", "reference", 2.0, group=groups[0]),
        Candidate("b.py", 1, 1, "bb", "reference", 1.0, group=groups[1]),
        Candidate("c.py", 1, 1, "c", "search", 0.0),
    ]
    data = {"candidates": cands, "max_chars": 3}
    trace = tmp_path / "t.jsonl"
    result = module.build(data, trace=str(trace))
    record = read_trace(trace)[0]
    ids = [c.get("group") for c in record["input"]["candidates"]]
    shared = groups[0] == groups[1]
    assert ids == ([0, 0, None] if shared else [0, 1, None])
    turns = list(replay(trace, module.build))
    assert [(t.recorded, t.rebuilt) for t in turns] == [(result.digest, result.digest)]
    # Only the one-group case leaves both out (2 + 2 > 3); apart, "aa" fits and "bb" does not.
    assert [i.path for i in result.items] == (["c.py"] if shared else ["a.py", "c.py"])


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
def test_a_verified_trace_replays_and_reports_what_turned_stale(tmp_path: Path, module: Any) -> None:
    files = {"a.py": b"one\ntwo\n", "b.py": b"bee\n"}
    cands = [
        {"path": "a.py", "start": 1, "end": 1, "content": "one\n", "reason": "reference", "score": 2.0},
        {"path": "b.py", "start": 1, "end": 1, "content": "bee\n", "reason": "search", "score": 1.0},
    ]
    trace = tmp_path / "t.jsonl"
    first = module.build({"candidates": cands, "max_chars": 100}, verify=files.get, trace=str(trace))
    assert [i.path for i in first.items] == ["a.py", "b.py"]
    files["a.py"] = b"ONE\ntwo\n"  # edited: the window over line 1 is stale now
    second = module.build({"candidates": cands, "max_chars": 100}, verify=files.get, trace=str(trace))
    assert [(o.index, o.reason) for o in second.omitted] == [(0, "stale")]
    turns = list(replay(trace, module.build))
    assert [(t.recorded, t.rebuilt) for t in turns] == [
        (first.digest, first.digest),
        (second.digest, second.digest),
    ]
    assert turns[1].changes == (
        Change("moved", "b.py", 1, 1, 1, 0, "search, selected #0"),
        Change("dropped", "a.py", 1, 1, 0, None, "stale"),
    )


def test_replay_of_an_empty_trace_exits_2(tmp_path: Path, capsys: Any) -> None:
    for name, text in {"empty.jsonl": "", "blank.jsonl": "\n \n"}.items():
        path = tmp_path / name
        path.write_text(text)
        assert main(["replay", str(path)]) == 2
        assert capsys.readouterr().err == (
            f"bugcontext replay: {path}: no trace records (an empty trace has nothing to replay)\n"
        )


def _valid_record() -> dict[str, Any]:
    out = io.StringIO()
    bugcontext.build(INPUT, trace=out)
    record: dict[str, Any] = json.loads(out.getvalue())
    return record


# Lines that are not JSON objects: (the line's bytes, the problem after "trace line 3: ").
NOT_RECORDS = {
    "not JSON": (b"not json", "not JSON (Expecting value at column 1)"),
    "cut short": (b'{"trace": 1', "not JSON (Expecting ',' delimiter at column 12)"),
    "nested too deeply": (b"[" * 100_000 + b"]" * 100_000, "not JSON (nested too deeply)"),
    "NaN": (b'{"trace": NaN}', "not JSON (NaN is not a JSON value)"),
    "Infinity": (b'{"score": -Infinity}', "not JSON (-Infinity is not a JSON value)"),
    "a key twice": (b'{"trace": 1, "trace": 1}', 'not JSON (key "trace" given twice in one object)'),
    "not UTF-8": (b'{"trace": "\xe9"}', "not UTF-8 (byte 0xe9 at column 12)"),
    "an array": (b"[1]", "expected an object (a trace record), got an array"),
    "a string": (b'"trace"', "expected an object (a trace record), got a string"),
    "a number": (b"1.5", "expected an object (a trace record), got a number"),
    "null": (b"null", "expected an object (a trace record), got null"),
}


@pytest.mark.parametrize("case", list(NOT_RECORDS))
def test_replay_names_the_line_of_a_line_that_is_not_a_record(tmp_path: Path, capsys: Any, case: str) -> None:
    line, problem = NOT_RECORDS[case]
    path = tmp_path / "t.jsonl"
    # A good record on line 1 and a blank line 2: the bad line is line 3 of the file.
    path.write_bytes(json.dumps(_valid_record()).encode() + b"\n\n" + line + b"\n")
    assert main(["replay", str(path)]) == 2
    assert capsys.readouterr().err == f"bugcontext replay: {path}: trace line 3: {problem}\n"
    with pytest.raises(ValueError) as caught:
        read_trace(path)
    assert str(caught.value) == f"trace line 3: {problem}"


_C0 = "input.candidates[0]"
_D0 = "decisions[0]"
# (where, key, the value, or DELETE for a missing field) -> the problem after "trace line 3: ".
DELETE = object()
FIELDS: list[tuple[tuple[str, ...], Any, str]] = [
    (("trace",), DELETE, "field 'trace': missing"),
    (("trace",), "1", "field 'trace': expected an integer, got a string"),
    (("trace",), True, "field 'trace': expected an integer, got a boolean"),
    (("trace",), 2, "field 'trace': version 2 is not read here (this version reads 1)"),
    (("policy",), DELETE, "field 'policy': missing"),
    (("policy",), 1, "field 'policy': expected a string, got an integer"),
    (("engine",), "gpu", "field 'engine': unknown kind \"gpu\" (expected one of 'native', 'reference')"),
    (("engine",), None, "field 'engine': expected a string, got null"),
    (("cache_key",), [], "field 'cache_key': expected a string, got an array"),
    (("digest",), DELETE, "field 'digest': missing"),
    (("digest",), {}, "field 'digest': expected a string, got an object"),
    (("input",), DELETE, "field 'input': missing"),
    (("input",), [], "field 'input': expected an object, got an array"),
    (("input", "candidates"), DELETE, "field 'input.candidates': missing"),
    (("input", "candidates"), "x", "field 'input.candidates': expected an array, got a string"),
    (("input", "candidates", 0), 5, f"field '{_C0}': expected an object, got an integer"),
    (("input", "candidates", 0, "path"), DELETE, f"field '{_C0}.path': missing"),
    (("input", "candidates", 0, "path"), 1, f"field '{_C0}.path': expected a string, got an integer"),
    (("input", "candidates", 0, "start"), "1", f"field '{_C0}.start': expected an integer, got a string"),
    (("input", "candidates", 0, "start"), True, f"field '{_C0}.start': expected an integer, got a boolean"),
    (("input", "candidates", 0, "end"), 1.5, f"field '{_C0}.end': expected an integer, got a number"),
    (("input", "candidates", 0, "content"), None, f"field '{_C0}.content': expected a string, got null"),
    (
        ("input", "candidates", 0, "reason"),
        "magic",
        f"field '{_C0}.reason': unknown kind \"magic\" (expected one of 'failure', 'reference', 'search')",
    ),
    (("input", "candidates", 0, "score"), "1", f"field '{_C0}.score': expected a number, got a string"),
    (("input", "candidates", 0, "score"), False, f"field '{_C0}.score': expected a number, got a boolean"),
    (("input", "candidates", 0, "group"), "g", f"field '{_C0}.group': expected an integer, got a string"),
    (
        ("input", "candidates", 0, "source_sha256"),
        5,
        f"field '{_C0}.source_sha256': expected a string, got an integer",
    ),
    (
        ("input", "candidates", 0, "source_id"),
        [],
        f"field '{_C0}.source_id': expected a string, got an array",
    ),
    (("input", "budget"), DELETE, "field 'input.budget': missing"),
    (("input", "budget"), "10", "field 'input.budget': expected an integer, got a string"),
    (("input", "failure_files"), "util.py", "field 'input.failure_files': expected an array, got a string"),
    (("input", "failure_files", 0), 1, "field 'input.failure_files[0]': expected a string, got an integer"),
    (("input", "cost"), "chars", "field 'input.cost': expected an object, got a string"),
    (("input", "verified"), "yes", "field 'input.verified': expected a boolean, got a string"),
    (("used",), DELETE, "field 'used': missing"),
    (("used",), 1.0, "field 'used': expected an integer, got a number"),
    (("decisions",), DELETE, "field 'decisions': missing"),
    (("decisions",), {}, "field 'decisions': expected an array, got an object"),
    (("decisions", 0), [], f"field '{_D0}': expected an object, got an array"),
    (("decisions", 0, "index"), DELETE, f"field '{_D0}.index': missing"),
    (("decisions", 0, "index"), "0", f"field '{_D0}.index': expected an integer, got a string"),
    (("decisions", 0, "index"), 4, f"field '{_D0}.index': 4 is not a candidate's index (4 candidates)"),
    (("decisions", 0, "index"), -1, f"field '{_D0}.index': -1 is not a candidate's index (4 candidates)"),
    (("decisions", 0, "rank"), None, f"field '{_D0}.rank': expected an integer, got null"),
    (
        ("decisions", 0, "reason"),
        "odd",
        f"field '{_D0}.reason': unknown kind \"odd\" "
        "(expected one of 'selected', 'overlap', 'budget', 'group', 'stale')",
    ),
    (("decisions", 0, "cost"), 1.5, f"field '{_D0}.cost': expected an integer, got a number"),
    (("decisions", 1, "overlaps"), "0", "field 'decisions[1].overlaps': expected an integer, got a string"),
    (("decisions", 2, "member"), [], "field 'decisions[2].member': expected an integer, got an array"),
    # Fields of the right type that the build itself refuses.
    (("input", "candidates", 0, "start"), 0, f"field '{_C0}.start': must be >= 1, got 0"),
    (("input", "candidates", 0, "path"), "", f"field '{_C0}.path': must not be empty"),
    (("input", "candidates", 0, "path"), "../x", f"field '{_C0}.path': must not contain a '..' segment"),
    (
        ("input", "candidates", 0, "end"),
        2**64,
        f"field '{_C0}.end': must be <= 2147483647, got 18446744073709551616",
    ),
    (
        ("input", "candidates", 0, "score"),
        2**1100,
        f"field '{_C0}.score': is too large to convert to a float",
    ),
    (
        ("input", "candidates", 0, "source_sha256"),
        "zz",
        f"field '{_C0}.source_sha256': must be 64 lower-case hex digits (a SHA-256), got 2 characters",
    ),
    (("input", "budget"), -1, "field 'input.budget': must be >= 0, got -1"),
    (
        ("input", "failure_files"),
        ["../a"],
        "field 'input.failure_files': item 0: must not contain a '..' segment",
    ),
    (
        ("input", "cost", "unit"),
        "bogus",
        "field 'input.cost.unit': must be one of 'chars', 'tokens', got 'bogus'",
    ),
]


def _set(record: dict[str, Any], where: tuple[str | int, ...], value: Any) -> None:
    obj: Any = record
    for key in where[:-1]:
        obj = obj[key]
    if value is DELETE:
        del obj[where[-1]]
    else:
        obj[where[-1]] = value


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    FIELDS,
    ids=[f"{'.'.join(map(str, w))}={'DELETE' if v is DELETE else repr(v)}"[:60] for w, v, _ in FIELDS],
)
@pytest.mark.parametrize("engine", ["native", "reference"])
def test_replay_names_the_line_and_the_field_of_a_malformed_record(
    tmp_path: Path, capsys: Any, where: tuple[str | int, ...], value: Any, problem: str, engine: str
) -> None:
    record = _valid_record()
    _set(record, where, value)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_valid_record()) + "\n\n" + json.dumps(record) + "\n")
    assert main(["replay", str(path), "--engine", engine]) == 2
    assert capsys.readouterr().err == f"bugcontext replay: {path}: trace line 3: {problem}\n"
    assert capsys.readouterr().out == ""


def test_optional_fields_may_be_absent_or_null(tmp_path: Path, capsys: Any) -> None:
    record = _valid_record()
    record["input"]["candidates"][0]["source_sha256"] = None
    record["input"]["verified"] = None
    del record["decisions"][1]["overlaps"]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record) + "\r\n")  # a CRLF line ending is whitespace
    assert main(["replay", str(path)]) == 0
    assert capsys.readouterr().out.startswith("turn 1: digest ")


@pytest.mark.parametrize("module", [bugcontext, reference], ids=["native", "reference"])
@pytest.mark.parametrize("target", [5, io.BytesIO(), object()], ids=["int", "binary", "object"])
def test_a_trace_that_is_not_a_path_or_text_stream_is_invalid_input(module: Any, target: Any) -> None:
    with pytest.raises(bugcontext.InvalidInputError) as info:
        module.build(INPUT, trace=target)
    assert (info.value.field, info.value.index) == ("trace", None)
    assert info.value.problem == f"must be a path or a text stream, not {type(target).__name__}"


def test_a_trace_that_cannot_be_written_fails_the_command_with_status_1(tmp_path: Path, capsys: Any) -> None:
    data = tmp_path / "in.json"
    data.write_text(json.dumps({"candidates": [c.to_dict() for c in CANDS], "max_chars": 15}))
    target = tmp_path / "missing" / "t.jsonl"
    assert main(["build", str(data), "--trace", str(target)]) == 1
    err = capsys.readouterr().err
    assert err == f"bugcontext build: cannot write {target}: the folder {target.parent} does not exist\n"


def _paths(obj: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every place in a parsed JSON value (keys and indices), the value itself included."""
    out: list[tuple[str | int, ...]] = [prefix]
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else []
    for key, value in items:
        out += _paths(value, (*prefix, key))
    return out


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_value_anywhere_in_a_record_is_replayed_or_named(tmp_path: Path, data: Any) -> None:
    """A record (after a good one: the replay compares the two) with any one value replaced or
    removed replays, or fails with a ``ValueError`` that names line 2 and the field: never
    another exception."""
    record = _valid_record()
    where = data.draw(st.sampled_from(_paths(record)[1:]))
    value = data.draw(st.just(DELETE) | _JSON)
    _set(record, where, value)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_valid_record()) + "\n" + json.dumps(record) + "\n")
    try:
        list(replay(path, bugcontext.build))
    except ValueError as exc:
        assert re.match(r"trace line 2: field '[^']+': \S", str(exc)), str(exc)
