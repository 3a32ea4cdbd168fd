"""Verified provenance: ``source_sha256`` and ``source_id`` on candidates, and the ``verify``
reader that omits stale windows (reason ``stale``), in both engines, every candidate shape,
the digest, the workspace and the command line."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference
import pytest
from bugcontext import Candidate, InvalidCandidateError, InvalidInputError, Omission
from bugcontext.core.composer import render_omitted
from hostile import ProvenanceCandidate

A_PY = b"def f():\n    return 1\n\ndef g():\n    return 2\n"
A_SHA = hashlib.sha256(A_PY).hexdigest()
F_TEXT = "def f():\n    return 1\n"
G_TEXT = "def g():\n    return 2\n"
OLD_SHA = hashlib.sha256(b"old").hexdigest()

SHAPES = ["dict", "candidate", "dataclass", "namespace", "proxy"]


def make(
    shape: str, path: str, start: int, end: int, content: str, reason: str, score: Any, **extra: Any
) -> Any:
    fields: dict[str, Any] = {
        "path": path,
        "start": start,
        "end": end,
        "content": content,
        "reason": reason,
        "score": score,
    }
    if shape == "dict":
        return {**fields, **extra}
    if shape == "candidate":
        return Candidate(**fields, **extra)
    if shape == "dataclass":
        return ProvenanceCandidate(**fields, **extra)
    if shape == "namespace":
        return types.SimpleNamespace(**fields, **extra)
    if shape == "proxy":
        return types.MappingProxyType({**fields, **extra})
    raise AssertionError(shape)


ENGINES: dict[str, Callable[..., Any]] = {
    "native": bugcontext.build,
    "reference": bugcontext.reference.build,
}


class Files:
    """A ``verify`` reader over a dict of files; records the paths it was asked for."""

    def __init__(self, files: dict[str, bytes | None]) -> None:
        self.files = files
        self.calls: list[str] = []

    def __call__(self, path: str) -> bytes | None:
        self.calls.append(path)
        return self.files.get(path)


# --- validation ------------------------------------------------------------------------------

BAD = [
    ("source_sha256", 5, "must be a str, not int"),
    ("source_sha256", "abc", "must be 64 lower-case hex digits (a SHA-256), got 3 characters"),
    ("source_sha256", "a" * 65, "must be 64 lower-case hex digits (a SHA-256), got 65 characters"),
    ("source_sha256", "A" * 64, f"must be 64 lower-case hex digits (a SHA-256), got {'A' * 64!r}"),
    (
        "source_sha256",
        "0" * 63 + "g",
        f"must be 64 lower-case hex digits (a SHA-256), got {'0' * 63 + 'g'!r}",
    ),
    (
        "source_sha256",
        "0" * 63 + "\udcff",
        f"must be 64 lower-case hex digits (a SHA-256), got {'0' * 63 + chr(0xDCFF)!r}",
    ),
    ("source_id", "", "must not be empty"),
    ("source_id", "x" * 257, "must be at most 256 characters, got 257"),
    ("source_id", b"parser", "must be a str, not bytes"),
    ("source_id", 3.5, "must be a str, not float"),
]


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("field", "value", "problem"), BAD)
def test_a_bad_provenance_field_names_the_candidate_and_field(
    engine: str, shape: str, field: str, value: Any, problem: str
) -> None:
    good = make(shape, "a.py", 1, 2, F_TEXT, "search", 1)
    bad = make(shape, "a.py", 3, 4, "x", "search", 1, **{field: value})
    with pytest.raises(InvalidCandidateError) as caught:
        ENGINES[engine]({"candidates": [good, bad], "max_chars": 100})
    exc = caught.value
    assert (exc.index, exc.field, exc.problem) == (1, field, problem)
    assert str(exc) == f"candidate 1: field {field!r}: {problem}"


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_provenance_is_read_after_the_group_and_longest_id_is_accepted(engine: str) -> None:
    # An unhashable group is reported before a bad source_sha256; sha before source_id.
    bad = {"path": "a.py", "start": 1, "end": 1, "content": "x", "reason": "search", "score": 1}
    with pytest.raises(InvalidCandidateError) as caught:
        ENGINES[engine]({"candidates": [{**bad, "group": [], "source_sha256": 1}], "max_chars": 1})
    assert caught.value.field == "group"
    with pytest.raises(InvalidCandidateError) as caught:
        ENGINES[engine]({"candidates": [{**bad, "source_sha256": 1, "source_id": ""}], "max_chars": 1})
    assert caught.value.field == "source_sha256"
    result = ENGINES[engine]({"candidates": [{**bad, "source_id": "é" * 256}], "max_chars": 1})
    assert result.items[0].source_id == "é" * 256


# --- carried without a reader ----------------------------------------------------------------


class Sha(str):
    """A str subclass: read by its text, snapshotted as the exact str."""

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = str.__hash__


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("shape", SHAPES)
def test_provenance_is_carried_into_the_items_and_the_json_form(engine: str, shape: str) -> None:
    cands = [
        make(shape, "./a.py", 1, 2, F_TEXT, "reference", 1, source_sha256=Sha(A_SHA), source_id="parser"),
        make(shape, "a.py", 4, 5, "not the file", "search", 1, source_id="plug-in"),
        make(shape, "b.py", 1, 1, "y", "search", 0),
    ]
    result = ENGINES[engine]({"candidates": cands, "max_chars": 100})
    # Without a reader nothing is checked: the wrong content is selected too.
    assert result.selected == (0, 1, 2)
    assert not result.omitted
    first, second, third = result.items
    assert type(first.source_sha256) is str and first.source_sha256 == A_SHA
    assert (first.source_id, second.source_sha256, second.source_id) == ("parser", None, "plug-in")
    assert (third.source_sha256, third.source_id) == (None, None)
    data = result.to_dict()["items"]
    assert data[0] == {
        "path": "a.py",
        "start": 1,
        "end": 2,
        "content": F_TEXT,
        "reason": "reference",
        "score": 1,
        "source_sha256": A_SHA,
        "source_id": "parser",
    }
    assert data[1]["source_id"] == "plug-in" and "source_sha256" not in data[1]
    assert set(data[2]) == {"path", "start", "end", "content", "reason", "score"}


def test_candidate_with_provenance_compares_hashes_pickles_and_prints() -> None:
    plain = Candidate("a.py", 1, 2, F_TEXT, "search", 1)
    stamped = Candidate("a.py", 1, 2, F_TEXT, "search", 1, source_sha256=A_SHA, source_id="parser")
    assert plain != stamped
    assert stamped == Candidate("a.py", 1, 2, F_TEXT, "search", 1, source_sha256=A_SHA, source_id="parser")
    assert stamped != Candidate("a.py", 1, 2, F_TEXT, "search", 1, source_sha256=A_SHA, source_id="other")
    assert hash(stamped) == hash(pickle.loads(pickle.dumps(stamped)))
    assert pickle.loads(pickle.dumps(stamped)) == stamped
    assert pickle.loads(pickle.dumps(plain)) == plain
    assert repr(stamped) == (
        f"Candidate(path='a.py', start=1, end=2, content={F_TEXT!r}, reason='search', score=1, "
        f"source_sha256='{A_SHA}', source_id='parser')"
    )
    grouped = Candidate("a.py", 1, 2, F_TEXT, "search", 1, group=7, source_id="parser")
    assert pickle.loads(pickle.dumps(grouped)) == grouped
    assert grouped.to_dict() == {**plain.to_dict(), "group": 7, "source_id": "parser"}


# --- verification ----------------------------------------------------------------------------


def verified_input(shape: str) -> list[Any]:
    return [
        make(shape, "./src/a.py", 1, 2, F_TEXT, "reference", 1.0, source_sha256=A_SHA, source_id="parser"),
        make(shape, "src/a.py", 4, 5, "def g():\n    return 3\n", "reference", 2.0),  # not the file's text
        make(shape, "src/a.py", 4, 5, G_TEXT, "reference", 3.0, source_sha256=OLD_SHA),  # another version
        make(shape, "gone.py", 1, 1, "x\n", "failure", 1.0, source_id="search"),  # no such file
        make(shape, "src//a.py", 4, 5, G_TEXT, "search", 1.0),  # right: not blocked by the stale ones
    ]


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("shape", SHAPES)
def test_stale_candidates_are_omitted_take_no_budget_and_block_nothing(engine: str, shape: str) -> None:
    files = Files({"src/a.py": A_PY})
    budget = len(F_TEXT) + len(G_TEXT)  # exactly the two good windows
    result = ENGINES[engine]({"candidates": verified_input(shape), "max_chars": budget}, verify=files)
    assert files.calls == ["src/a.py", "gone.py"]  # canonical paths, once each, input order
    assert result.selected == (0, 4)
    assert result.used_chars == budget
    assert result.omitted == (
        Omission(2, 0, "stale"),
        Omission(1, 1, "stale"),
        Omission(3, 3, "stale"),
    )
    assert [o.to_dict() for o in result.omitted] == [
        {"index": 2, "rank": 0, "reason": "stale"},
        {"index": 1, "rank": 1, "reason": "stale"},
        {"index": 3, "rank": 3, "reason": "stale"},
    ]
    assert result.truncated
    # The same input without a reader selects by rank: the stale windows win.
    unchecked = ENGINES[engine]({"candidates": verified_input(shape), "max_chars": budget})
    assert unchecked.selected == (2, 0)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_line_splitting_bom_and_undecodable_bytes(engine: str) -> None:
    data = b"\xef\xbb\xbfa\r\nb\rc\n\xffd"
    cands = [
        {"path": "f.txt", "start": 1, "end": 1, "content": "a\r\n", "reason": "search", "score": 9},
        {"path": "f.txt", "start": 2, "end": 3, "content": "b\rc\n", "reason": "search", "score": 8},
        {"path": "f.txt", "start": 4, "end": 4, "content": "\udcffd", "reason": "search", "score": 7},
        {"path": "f.txt", "start": 1, "end": 1, "content": "\ufeffa\r\n", "reason": "search", "score": 6},
        {"path": "f.txt", "start": 2, "end": 2, "content": "b\r\n", "reason": "search", "score": 5},
        {"path": "f.txt", "start": 4, "end": 4, "content": "\udcfed", "reason": "search", "score": 4},
        {"path": "f.txt", "start": 4, "end": 5, "content": "\udcffd", "reason": "search", "score": 3},
        {"path": "f.txt", "start": 4, "end": 4, "content": "\ufffdd", "reason": "search", "score": 2},
        {
            "path": "f.txt",
            "start": 1,
            "end": 4,
            "content": "a\r\nb\rc\n\udcffd",
            "reason": "search",
            "score": 1,
        },
    ]
    result = ENGINES[engine]({"candidates": cands, "max_chars": 100}, verify=Files({"f.txt": data}))
    assert result.selected == (0, 1, 2)
    assert [(o.index, o.reason, o.overlaps) for o in result.omitted] == [
        (3, "stale", None),  # the BOM is not part of line 1
        (4, "stale", None),  # line 2 ends with a lone \r
        (5, "stale", None),
        (6, "stale", None),  # past the last line
        (7, "stale", None),  # undecodable bytes are lone surrogates, not U+FFFD
        (8, "overlap", 0),  # right content, blocked by the selected window
    ]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_stale_group_member_is_left_out_and_the_group_decided_without_it(engine: str) -> None:
    files = Files({"a.py": A_PY})
    cands = [
        {
            "path": "a.py",
            "start": 1,
            "end": 2,
            "content": F_TEXT,
            "reason": "search",
            "score": 2,
            "group": "g",
        },
        {
            "path": "a.py",
            "start": 4,
            "end": 5,
            "content": "stale",
            "reason": "search",
            "score": 1,
            "group": "g",
        },
    ]
    result = ENGINES[engine]({"candidates": cands, "max_chars": len(F_TEXT)}, verify=files)
    assert result.selected == (0,)
    assert result.omitted == (Omission(1, 1, "stale"),)
    # A group that does not fit: the stale member stays stale, the other names itself.
    short = ENGINES[engine]({"candidates": cands, "max_chars": 1}, verify=files)
    assert short.omitted == (Omission(0, 0, "group", member=0), Omission(1, 1, "stale"))


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_a_stale_failure_window_is_missing_critical_evidence(engine: str) -> None:
    cands = [{"path": "a.py", "start": 1, "end": 2, "content": "edited\n", "reason": "failure", "score": 1}]
    result = ENGINES[engine](
        {"candidates": cands, "max_chars": 100, "failure_file": "a.py"}, verify=Files({"a.py": A_PY})
    )
    assert [(m.path, m.omitted) for m in result.missing_critical] == [("a.py", (Omission(0, 0, "stale"),))]


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_token_and_template_costs_are_verified_alike(engine: str) -> None:
    builder = (bugcontext if engine == "native" else bugcontext.reference).ContextBuilder(
        cost=bugcontext.Cost(unit="tokens", template="markdown")
    )
    cands = [
        {"path": "a.py", "start": 1, "end": 2, "content": F_TEXT, "reason": "search", "score": 2},
        {"path": "a.py", "start": 4, "end": 5, "content": "no", "reason": "search", "score": 1},
    ]
    result = builder.build({"candidates": cands, "budget": 1000}, verify=Files({"a.py": A_PY}))
    assert result.selected == (0,)
    assert result.omitted == (Omission(1, 1, "stale"),)
    assert bugcontext.render(result).count("### ") == 1


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_verify_errors(engine: str) -> None:
    data = {
        "candidates": [
            {"path": "./a.py", "start": 1, "end": 1, "content": "x", "reason": "search", "score": 1}
        ],
        "max_chars": 1,
    }
    with pytest.raises(InvalidInputError) as caught:
        ENGINES[engine](data, verify=5)
    assert (caught.value.field, caught.value.problem) == ("verify", "must be callable or None, not int")
    with pytest.raises(TypeError) as wrong:
        ENGINES[engine](data, verify=lambda path: "text")
    assert str(wrong.value) == "verify: the reader must return bytes or None, not str (for 'a.py')"

    def broken(path: str) -> bytes:
        raise PermissionError(path)

    with pytest.raises(PermissionError) as raised:
        ENGINES[engine](data, verify=broken)
    assert raised.value.args == ("a.py",)
    # A bad candidate is reported before any file is read.
    reader = Files({})
    with pytest.raises(InvalidCandidateError):
        ENGINES[engine]({**data, "candidates": [*data["candidates"], {"path": "b.py"}]}, verify=reader)
    assert reader.calls == []


def test_the_report_counts_stale_omissions() -> None:
    files = Files({"src/a.py": A_PY})
    cands = verified_input("dict")
    result = bugcontext.build({"candidates": cands, "max_chars": 100}, verify=files)
    report = render_omitted(
        result,
        [
            Candidate(**{k: c[k] for k in ("path", "start", "end", "content", "reason", "score")})
            for c in cands
        ],
    )
    assert "3 omitted (overlap 0, budget 0, stale 3)." in report
    assert (
        "- #2 `src/a.py:4-5` reference, score 3: stale (its content is not its file's lines as read now)"
        in report
    )


# --- digest ----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_the_digest_and_key_change_with_provenance(engine: str) -> None:
    build = ENGINES[engine]
    key = bugcontext.cache_key if engine == "native" else bugcontext.reference.cache_key

    def data(**extra: Any) -> dict[str, Any]:
        return {
            "candidates": [
                {
                    "path": "a.py",
                    "start": 1,
                    "end": 2,
                    "content": F_TEXT,
                    "reason": "search",
                    "score": 1,
                    **extra,
                }
            ],
            "max_chars": 100,
        }

    plain = build(data())
    variants = [
        data(source_id="a"),
        data(source_id="b"),
        data(source_sha256=A_SHA),
        data(source_sha256=OLD_SHA),
    ]
    digests = [build(d).digest for d in variants]
    assert len({plain.digest, *digests}) == 5
    assert len({key(data()), *(key(d) for d in variants)}) == 5
    # Both engines agree.
    for d in variants:
        assert bugcontext.build(d).digest == bugcontext.reference.build(d).digest
        assert bugcontext.cache_key(d) == bugcontext.reference.cache_key(d)


# --- workspace and command line --------------------------------------------------------------

LIB = """\
def parse_ratio(text):
    num, den = text.split("/")
    return int(num) / int(den)


def mean_ratio(items):
    return sum(parse_ratio(item) for item in items) / len(items)
"""

TEST = """\
from lib.ratios import mean_ratio


def test_mean_ratio():
    assert mean_ratio(["1/2", "3/0"]) == 0.25
"""


@pytest.fixture(scope="module")
def failing_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("prov")
    (root / "lib").mkdir()
    (root / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (root / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_ratios.py").write_text(TEST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=long", "tests"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    return root, proc.stdout


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_workspace_stamps_its_candidates_and_omits_an_edited_files_windows(
    engine: str, failing_repo: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bugcontext.job.workspace as workspace

    repo, log = failing_repo
    ws = bugcontext.Workspace(repo, cache=False)
    res = ws.context(log, budget=100_000, cost={"unit": "chars"}, engine=engine)
    lib_sha = hashlib.sha256(LIB.encode()).hexdigest()
    test_sha = hashlib.sha256(TEST.encode()).hexdigest()
    assert res.result.items
    assert not [o for o in res.result.omitted if o.reason == "stale"]
    for item in res.result.items:
        assert item.source_sha256 == {"lib/ratios.py": lib_sha, "tests/test_ratios.py": test_sha}[item.path]
        assert item.source_id in {"failure", "reference", "search", "issue", "members"}
    assert "failure" in {item.source_id for item in res.result.items}
    lib_items = [i for i, c in enumerate(res.gathered.candidates) if c.path == "lib/ratios.py"]
    assert lib_items

    # The file is edited after its windows were cut and before the build: they are stale.
    made = workspace._verifier

    def edit_then_read(reader: Any) -> Callable[[str], bytes | None]:
        (repo / "lib" / "ratios.py").write_text("# edited\n" + LIB, encoding="utf-8")
        return made(reader)

    monkeypatch.setattr(workspace, "_verifier", edit_then_read)
    try:
        edited = ws.context(log, budget=100_000, cost={"unit": "chars"}, engine=engine)
    finally:
        (repo / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    stale = sorted(o.index for o in edited.result.omitted if o.reason == "stale")
    assert stale == [i for i, c in enumerate(edited.gathered.candidates) if c.path == "lib/ratios.py"]
    assert stale
    assert all(item.path != "lib/ratios.py" for item in edited.result.items)
    assert "stale" in edited.summary()


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_cli_build_verify_root(engine: str, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_bytes(A_PY)
    data = {"candidates": [dict(c) for c in verified_input("dict")], "max_chars": 100}
    proc = run_cli("build", "--engine", engine, "--verify-root", str(tmp_path), stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["selected"] == [0, 4]
    assert out["omitted"] == [
        {"index": 2, "rank": 0, "reason": "stale"},
        {"index": 1, "rank": 1, "reason": "stale"},
        {"index": 3, "rank": 3, "reason": "stale"},
    ]
    assert out["items"][0]["source_sha256"] == A_SHA and out["items"][0]["source_id"] == "parser"
    # Without the option nothing is checked.
    plain = json.loads(run_cli("build", "--engine", engine, stdin=json.dumps(data)).stdout)
    assert plain["selected"] == [2, 0, 3]
    # A folder that does not exist is a usage error.
    missing = run_cli("build", "--verify-root", str(tmp_path / "nope"), stdin=json.dumps(data))
    assert missing.returncode == 2
    assert missing.stdout == ""
    assert "--verify-root" in missing.stderr and "is not a folder" in missing.stderr
    # Nor is an empty name (it would mean the current folder).
    empty = run_cli("build", "--verify-root", "", stdin=json.dumps(data))
    assert (empty.returncode, empty.stdout) == (2, "")
    assert empty.stderr == "bugcontext build: --verify-root:  is not a folder\n"


def test_folder_reader_stays_inside_its_folder(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.py").write_bytes(b"x\n")
    (tmp_path / "secret.py").write_bytes(b"s\n")
    (tmp_path / "in" / "link.py").symlink_to(tmp_path / "secret.py")
    read = bugcontext.folder_reader(tmp_path / "in")
    assert read("a.py") == b"x\n"
    assert read("missing.py") is None
    assert read("link.py") is None
    assert read("../secret.py") is None
    assert read(".") is None
