"""Resource limits (``bugcontext.core.limits``): each setting set low through ``Limits``, the exact
error (``limit``, ``value``, ``maximum``, message) or the documented skip, and the command line's
``--limit`` with exit status 2."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import bugcontext
import pyarrow as pa
import pytest
from bugcontext import reference
from bugcontext.core import _io, limits
from bugcontext.core.errors import InvalidInputError, ResourceLimitError
from bugcontext.core.limits import DEFAULT_LIMITS, Limits
from bugcontext.core.trace import read_trace
from bugcontext.integrations import cli
from bugcontext.job.sources import Repository
from bugcontext.job.sources.gather import gather
from bugcontext.job.workspace import Workspace

FAILING_TEST = "def test_x():\n    assert helper() == 2\n\n\ndef helper():\n    return 1\n"
LOG = (
    "=================================== FAILURES ===================================\n"
    "____________________________________ test_x ____________________________________\n"
    "\n"
    "    def test_x():\n"
    ">       assert helper() == 2\n"
    "E       assert 1 == 2\n"
    "\n"
    "test_x.py:2: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED test_x.py::test_x - assert 1 == 2\n"
)


def cand(i: int, content: str = "x") -> dict[str, Any]:
    return {"path": f"f{i}.py", "start": 1, "end": 1, "content": content, "reason": "search", "score": 1.0}


def caught(exc: BaseException) -> tuple[Any, ...]:
    assert type(exc) is ResourceLimitError
    return (exc.field, exc.index, exc.limit, exc.value, exc.maximum, str(exc))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "test_x.py").write_text(FAILING_TEST)
    return folder


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
        input=stdin,
        capture_output=True,
        timeout=300,
        check=False,
    )


# --- the settings themselves ------------------------------------------------------------------


def test_defaults_and_units() -> None:
    assert DEFAULT_LIMITS.to_dict() == {
        "max_input_bytes": 256 << 20,
        "max_log_bytes": 64 << 20,
        "max_junit_bytes": 64 << 20,
        "max_coverage_bytes": 256 << 20,
        "max_issue_bytes": 1 << 20,
        "max_query_chars": 65_536,
        "max_candidates": 4_000_000,
        "max_total_chars": 1 << 30,
        "max_files": 1_000_000,
        "max_file_bytes": 1 << 20,
        "max_depth": 1_024,
        "max_gitignore_bytes": 1 << 20,
        "max_gitignore_patterns": 10_000,
        "max_gitignore_pattern_chars": 4_096,
        "mcp_call_seconds": 900,
        "test_run_seconds": 600,
        "max_frames": 1_000,
        "max_result_bytes": 64 << 20,
        "mcp_workspaces": 8,
        "mcp_client_roots": 1_000,
        "rerun_seconds": 600,
        "max_trace_bytes": 64 << 20,
        "max_source_map_bytes": 16 << 20,
        "max_cache_value_bytes": 256 << 20,
        "max_threads": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "max_failure_blocks": 3,
        "max_failure_message_chars": 2_000,
        "max_failure_test_chars": 1_000,
        "max_cache_bytes": 1 << 30,
    }
    # The old names are the defaults, set in one place.
    assert bugcontext.DEFAULT_MAX_CANDIDATES == DEFAULT_LIMITS.max_candidates
    assert bugcontext.DEFAULT_MAX_TOTAL_CHARS == DEFAULT_LIMITS.max_total_chars
    assert (_io.MAX_INPUT_BYTES, _io.MAX_LOG_BYTES, _io.MAX_JUNIT_BYTES) == (256 << 20, 64 << 20, 64 << 20)
    assert bugcontext.Limits is Limits and bugcontext.DEFAULT_LIMITS is DEFAULT_LIMITS


def test_every_setting_is_documented_with_its_unit_and_behaviour() -> None:
    doc = limits.__doc__ or ""
    errors, rest = doc.split("**skipped, not an error**")
    skips, clamps = rest.split("**clamped, not an error**")
    class_doc = Limits.__doc__ or ""
    for setting in dataclasses.fields(Limits):
        name = setting.name
        units = {"bytes", "characters", "candidates", "entries", "folders", "lines", "seconds", "threads"}
        units |= {"frames", "workspaces", "roots", "blocks"}
        assert limits.unit(name) in units
        assert f"{name}:" in class_doc
        section = {"error": errors, "skip": skips, "clamp": clamps}[limits.behaviour(name)]
        assert f"``{name}``" in section, name
        word = {"error": "Error.", "skip": "skipped, not an error", "clamp": "clamped, not an error"}[
            limits.behaviour(name)
        ]
        entry = class_doc.split(f"{name}:")[1].split("Default")[0]
        assert word in entry, name


@pytest.mark.parametrize("bad", [-1, True, 1.5, "10"])
def test_a_setting_must_be_a_non_negative_int(bad: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        Limits(max_files=bad)  # type: ignore[arg-type]
    assert info.value.field == "max_files"
    assert type(info.value) is InvalidInputError


def test_parse_assignments() -> None:
    parsed = Limits.parse(["max_log_bytes=10", "max_files = 1_000"])
    assert parsed == DEFAULT_LIMITS.replace(max_log_bytes=10, max_files=1000)
    with pytest.raises(InvalidInputError, match=r"^input field 'limit': must be NAME=N, got 'x'$"):
        Limits.parse(["x"])
    with pytest.raises(InvalidInputError) as info:
        Limits.parse(["max_bogus=1"])
    assert info.value.field == "max_bogus"
    with pytest.raises(InvalidInputError, match=r"^input field 'max_depth': must be an int, got 'deep'$"):
        Limits.parse(["max_depth=deep"])
    with pytest.raises(InvalidInputError) as info:
        DEFAULT_LIMITS.replace(bogus=1)
    assert info.value.field == "bogus"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("\u0663", "'\u0663'"),  # ARABIC-INDIC DIGIT THREE: int() takes it, a limit does not
        ("1__0", "'1__0'"),
        ("_10", "'_10'"),
        ("1.5", "'1.5'"),
        ("", "''"),
        ("9" * 5000, repr("9" * 40 + "...")),  # past int()'s digit limit, and shown cut short
    ],
)
def test_parse_takes_ascii_digits_only_and_shows_a_long_value_cut_short(value: str, shown: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        Limits.parse([f"max_depth={value}"])
    assert (info.value.field, info.value.problem) == ("max_depth", f"must be an int, got {shown}")
    assert Limits.parse(["max_depth=+7"]).max_depth == 7


# --- build-level limits: both engines, the same error -----------------------------------------


@pytest.mark.parametrize("engine", [bugcontext, reference])
def test_max_candidates(engine: Any) -> None:
    builder = engine.ContextBuilder(limits=Limits(max_candidates=2))
    with pytest.raises(ResourceLimitError) as info:
        builder.build({"candidates": [cand(0), cand(1), cand(2)], "max_chars": 10})
    assert caught(info.value) == (
        "candidates",
        None,
        "max_candidates",
        3,
        2,
        "input field 'candidates': 3 candidates, over the limit max_candidates = 2 candidates",
    )
    # An iterator is taken no further than one candidate past the limit.
    taken: list[int] = []

    def endless() -> Any:
        i = 0
        while True:
            taken.append(i)
            yield cand(i)
            i += 1

    with pytest.raises(ResourceLimitError) as info:
        builder.build({"candidates": endless(), "max_chars": 10})
    assert caught(info.value)[2:] == (
        "max_candidates",
        3,
        2,
        "input field 'candidates': more than 2 candidates, over the limit max_candidates = 2 candidates",
    )
    assert taken == [0, 1, 2]


@pytest.mark.parametrize("engine", [bugcontext, reference])
def test_max_candidates_keyword_is_an_alias(engine: Any) -> None:
    builder = engine.ContextBuilder(limits=Limits(max_candidates=2), max_candidates=3)
    assert builder.max_candidates == 3
    assert builder.limits == Limits(max_candidates=3)
    assert list(builder.build({"candidates": [cand(0), cand(1), cand(2)], "max_chars": 10}).selected) == [
        0,
        1,
        2,
    ]
    assert engine.ContextBuilder(max_total_chars=5).limits == DEFAULT_LIMITS.replace(max_total_chars=5)


@pytest.mark.parametrize("engine", [bugcontext, reference])
def test_max_total_chars(engine: Any) -> None:
    builder = engine.ContextBuilder(limits=Limits(max_total_chars=10))
    data = {"candidates": [cand(0, "x" * 4), cand(1, "y" * 4), cand(2, "😀" * 4), cand(3)], "max_chars": 100}
    with pytest.raises(ResourceLimitError) as info:
        builder.build(data)
    assert caught(info.value) == (
        "content",
        2,
        "max_total_chars",
        12,
        10,
        "candidate 2: field 'content': total content is 12 characters, over the limit "
        "max_total_chars = 10 characters",
    )


@pytest.mark.parametrize("build_table", [bugcontext.build_table, reference.build_table])
def test_table_limits(build_table: Any) -> None:
    table = pa.table(
        {
            "task": ["a", "a", "b", "b", "b"],
            "path": ["a.py", "b.py", "a.py", "b.py", "c.py"],
            "start": [1] * 5,
            "end": [1] * 5,
            "content": ["xx", "yy", "x", "y", "z"],
            "reason": ["search"] * 5,
            "score": [1.0] * 5,
        }
    )
    with pytest.raises(ResourceLimitError) as info:
        build_table(table, budget=10, group_by="task", limits=Limits(max_candidates=2))
    assert caught(info.value) == (
        "candidates",
        None,
        "max_candidates",
        3,
        2,
        "input field 'candidates': 3 candidates, over the limit max_candidates = 2 candidates (group 'b')",
    )
    with pytest.raises(ResourceLimitError) as info:
        build_table(table, budget=10, group_by="task", limits=Limits(max_total_chars=3))
    assert caught(info.value) == (
        "content",
        1,
        "max_total_chars",
        4,
        3,
        "candidate 1: field 'content': total content is 4 characters, over the limit "
        "max_total_chars = 3 characters (group 'a', row 1 of the group)",
    )


# --- inputs read or given ---------------------------------------------------------------------


def test_max_input_bytes_read_capped_stream() -> None:
    with pytest.raises(ResourceLimitError) as info:
        _io.read_capped(
            io.BytesIO(b"x" * 100), "max_input_bytes", field="input", limits=Limits(max_input_bytes=5)
        )
    assert caught(info.value) == (
        "input",
        None,
        "max_input_bytes",
        6,
        5,
        "input field 'input': standard input is more than 5 bytes, over the limit max_input_bytes = 5 bytes",
    )


def test_max_input_bytes_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("{}\n" * 10)  # 30 bytes
    with pytest.raises(ResourceLimitError) as info:
        read_trace(trace, limits=Limits(max_input_bytes=29))
    assert caught(info.value)[:5] == ("trace", None, "max_input_bytes", 30, 29)


def test_max_input_bytes_jsonl_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    line = json.dumps({"candidates": [cand(0)], "max_chars": 10}).encode()
    stream = io.BytesIO(line + b"\n" + b"[" * 500 + b"\n" + line + b"\n")
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stream})())
    status = cli.main(["build", "--jsonl", "-", "--limit", f"max_input_bytes={len(line) + 1}"])
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert status == 3
    assert [("error" in x) for x in out] == [False, True, False]
    assert out[1]["error"] == {
        "type": "ResourceLimitError",
        "message": f"input field 'input': line 2 is more than {len(line) + 1} bytes, over the limit "
        f"max_input_bytes = {len(line) + 1} bytes",
        "problem": f"line 2 is more than {len(line) + 1} bytes, over the limit "
        f"max_input_bytes = {len(line) + 1} bytes",
        "field": "input",
        "index": None,
        "line": 2,
    }


def test_an_over_limit_jsonl_line_is_never_held(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracemalloc

    line = json.dumps({"candidates": [cand(0)], "max_chars": 10}).encode()
    huge = 64 << 20
    stream = io.BytesIO(line + b"\n" + b" " * huge + b"x\n" + line + b"\n")
    monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stream})())
    tracemalloc.start()
    try:
        status = cli.main(["build", "--jsonl", "-", "--limit", "max_input_bytes=1024"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert status == 3
    assert [x.get("error", {}).get("line") for x in out] == [None, 2, None]
    # The 64 MiB line went by in pieces of at most 1 MiB (and the 1 KiB limit's piece).
    assert peak < 8 << 20


def test_max_log_bytes_workspace(repo: Path) -> None:
    small = Limits(max_log_bytes=len(LOG) - 1)
    with pytest.raises(ResourceLimitError) as info:
        Workspace(repo, cache=False, limits=small).context(LOG)
    assert caught(info.value)[:5] == ("pytest_log", None, "max_log_bytes", len(LOG), len(LOG) - 1)
    # Bytes of UTF-8, not characters: 6 characters, 12 bytes.
    with pytest.raises(ResourceLimitError) as info:
        Workspace(repo, cache=False, limits=Limits(max_log_bytes=10)).context("é" * 6)
    assert caught(info.value)[2:] == (
        "max_log_bytes",
        12,
        10,
        "input field 'pytest_log': the log is 12 bytes, over the limit max_log_bytes = 10 bytes",
    )
    # Exactly at the limit is fine.
    result = Workspace(repo, cache=False, limits=Limits(max_log_bytes=len(LOG))).context(LOG)
    assert result.gathered.failure is not None


def test_max_junit_bytes(repo: Path) -> None:
    with pytest.raises(ResourceLimitError) as info:
        Workspace(repo, cache=False, limits=Limits(max_junit_bytes=3)).context(LOG, junit_xml=b"<x/>")
    assert caught(info.value)[:5] == ("junit_xml", None, "max_junit_bytes", 4, 3)


def test_max_issue_bytes(repo: Path) -> None:
    with pytest.raises(ResourceLimitError) as info:
        Workspace(repo, cache=False, limits=Limits(max_issue_bytes=3)).context(LOG, issue="helper")
    assert caught(info.value)[2:] == (
        "max_issue_bytes",
        6,
        3,
        "input field 'issue': the issue text is 6 bytes, over the limit max_issue_bytes = 3 bytes",
    )


def test_max_query_chars(repo: Path) -> None:
    with pytest.raises(ResourceLimitError) as info:
        gather(Repository(repo, limits=Limits(max_query_chars=4)), LOG, query="helper")
    assert caught(info.value)[2:] == (
        "max_query_chars",
        6,
        4,
        "input field 'query': the query is 6 characters, over the limit max_query_chars = 4 characters",
    )


# --- the repository walk ----------------------------------------------------------------------


def test_max_files(repo: Path) -> None:
    for i in range(4):
        (repo / f"m{i}.py").write_text("x = 1\n")
    (repo / "sub").mkdir()
    assert len(Repository(repo, limits=Limits(max_files=6)).files()) == 5  # 5 files and a folder
    with pytest.raises(ResourceLimitError) as info:
        Repository(repo, limits=Limits(max_files=5)).files()
    assert caught(info.value) == (
        "repo",
        None,
        "max_files",
        6,
        5,
        "input field 'repo': the walk of the repository is more than 5 entries, over the limit "
        "max_files = 5 entries",
    )


def test_max_file_bytes_is_a_skip(repo: Path) -> None:
    reader = Repository(repo, limits=Limits(max_file_bytes=10))
    assert reader.max_file_bytes == 10
    assert reader.source("test_x.py") is None
    size = len(FAILING_TEST)
    assert reader.skipped == {
        "test_x.py": f"the file is {size} bytes, over the limit max_file_bytes = 10 bytes"
    }
    # The keyword wins over the limits given with it.
    assert (
        Repository(repo, max_file_bytes=1000, limits=Limits(max_file_bytes=10)).source("test_x.py")
        is not None
    )


def test_max_depth_is_a_skip(repo: Path) -> None:
    (repo / "a" / "b" / "c").mkdir(parents=True)
    (repo / "a" / "b" / "ok.py").write_text("x = 1\n")
    (repo / "a" / "b" / "c" / "deep.py").write_text("x = 2\n")
    reader = Repository(repo, limits=Limits(max_depth=2))
    assert reader.files() == ["a/b/ok.py", "test_x.py"]
    assert reader.skipped == {
        "a/b/c": "the folder's depth is 3 folders, over the limit max_depth = 2 folders"
    }
    assert reader.relative("a/b/c/deep.py") is None
    assert Repository(repo, limits=Limits(max_depth=3)).files() == ["a/b/c/deep.py", "a/b/ok.py", "test_x.py"]


def test_max_gitignore_bytes_is_a_skip(repo: Path) -> None:
    (repo / "secret_notes.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("secret_notes.py\n")  # 16 bytes
    assert Repository(repo, limits=Limits(max_gitignore_bytes=16)).files() == [".gitignore", "test_x.py"]
    reader = Repository(repo, limits=Limits(max_gitignore_bytes=15))
    assert reader.files() == [".gitignore", "secret_notes.py", "test_x.py"]
    assert reader.skipped == {
        ".gitignore": "rules not applied: the file is more than 15 bytes, over the limit "
        "max_gitignore_bytes = 15 bytes"
    }


def test_max_gitignore_patterns_is_a_skip(repo: Path) -> None:
    (repo / "a.py").write_text("x = 1\n")
    (repo / "b.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("a.py\n# comment\nb.py\n")
    assert Repository(repo, limits=Limits(max_gitignore_patterns=3)).files() == [".gitignore", "test_x.py"]
    reader = Repository(repo, limits=Limits(max_gitignore_patterns=2))
    assert reader.files() == [".gitignore", "a.py", "b.py", "test_x.py"]
    assert reader.skipped == {
        ".gitignore": "rules not applied: the file is 3 lines, over the limit "
        "max_gitignore_patterns = 2 lines"
    }


def test_max_gitignore_pattern_chars_is_a_skip(repo: Path) -> None:
    (repo / "a.py").write_text("x = 1\n")
    (repo / "long_name.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("a.py\nlong_name.py\n")
    reader = Repository(repo, limits=Limits(max_gitignore_pattern_chars=11))
    assert reader.files() == [".gitignore", "long_name.py", "test_x.py"]  # only the long pattern left out
    assert reader.skipped == {
        ".gitignore": "1 pattern(s) left out, the first on line 2: its length is 12 characters, over the "
        "limit max_gitignore_pattern_chars = 11 characters"
    }
    assert Repository(repo, limits=Limits(max_gitignore_pattern_chars=12)).files() == [
        ".gitignore",
        "test_x.py",
    ]


def test_default_limits_are_read_at_call_time(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "DEFAULT_LIMITS", Limits(max_files=0))
    with pytest.raises(ResourceLimitError) as info:
        Repository(repo).files()
    assert (info.value.limit, info.value.value, info.value.maximum) == ("max_files", 1, 0)
    builder = bugcontext.ContextBuilder()
    assert builder.limits == Limits(max_files=0)


# --- the command line: exit 2, one line -------------------------------------------------------


def test_cli_limit_exit_2(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    size = len(LOG)
    proc = run_cli("context", "--repo", str(repo), "--pytest-log", str(log), "--limit", "max_log_bytes=100")
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (
        f"bugcontext context: --pytest-log: {log} is {size} bytes, over the limit "
        "max_log_bytes = 100 bytes\n"
    )
    proc = run_cli("context", "--repo", str(repo), "--pytest-log", str(log), "--limit", "max_files=0")
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (
        "bugcontext context: --repo: the walk of the repository is more than 0 entries, "
        "over the limit max_files = 0 entries\n"
    )
    data = json.dumps({"candidates": [cand(0), cand(1)], "max_chars": 10}).encode()
    proc = run_cli("build", "--limit", "max_candidates=1", stdin=data)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (
        "bugcontext build: input field 'candidates': 2 candidates, over the limit "
        "max_candidates = 1 candidates\n"
    )
    proc = run_cli("build", "--limit", "max_nothing=1", stdin=data)
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode().startswith(
        "bugcontext build: --limit max_nothing: is not a resource limit (one of max_input_bytes, "
    )


def test_cli_issue_limit(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    issue = tmp_path / "issue.md"
    issue.write_text("helper is wrong\n")
    proc = run_cli(
        "context",
        "--repo",
        str(repo),
        "--pytest-log",
        str(log),
        "--issue",
        str(issue),
        "--limit",
        "max_issue_bytes=8",
    )
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (
        f"bugcontext context: --issue: {issue} is 16 bytes, over the limit "
        "max_issue_bytes = 8 bytes\n"
    )


def test_max_log_bytes_mcp_test_run(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from bugcontext.integrations.mcp_server import _run_test

    (tmp_path / "test_p.py").write_text("def test_p():\n    assert 'x' * 5000 == ''\n")
    with pytest.raises(ResourceLimitError) as info:
        _run_test(tmp_path, "test_p.py", sys.executable, limits=Limits(max_log_bytes=1000))
    assert caught(info.value) == (  # the field: the tool's argument naming the test run
        "test",
        None,
        "max_log_bytes",
        1001,
        1000,
        "input field 'test': the test output is more than 1000 bytes, over the limit "
        "max_log_bytes = 1000 bytes",
    )
    output = _run_test(tmp_path, "test_p.py", sys.executable)
    assert "FAILED test_p.py::test_p" in output


def test_cli_rerank_limit(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "task": ["a", "a", "b", "b", "b"],
            "path": ["a.py", "b.py", "a.py", "b.py", "c.py"],
            "start": [1] * 5,
            "end": [1] * 5,
            "content": ["xx", "yy", "x", "y", "z"],
            "reason": ["search"] * 5,
            "score": [1.0] * 5,
        }
    )
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, source)
    args = ("rerank", str(source), "--group-by", "task", "--budget", "10", "--out", str(out))
    proc = run_cli(*args, "--limit", "max_candidates=2")
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == (
        "bugcontext rerank: input field 'candidates': 3 candidates, over the limit "
        "max_candidates = 2 candidates (group 'b')\n"
    )
    assert not out.exists()
    assert run_cli(*args, "--limit", "max_candidates=3").returncode == 0
    assert pq.read_table(out).num_rows == 5
