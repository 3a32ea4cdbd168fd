"""The command line speaks the user's words: an error names the option as typed (``--max-chars``,
``--log`` or ``--pytest-log``, ``--limit NAME``), never an internal field (``budget``,
``pytest_log``); a ``--cache-dir`` that is not a folder is a clear error; ``cache clear``
refuses a folder that is not a bugcontext cache; ``context --help`` speaks of any test runner;
an integer of any length gives a short error (no echo of its digits, no advice on
``sys.set_int_max_str_digits``). Usage errors naming the subcommand: ``tests/test_cli.py``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from bugcontext.integrations.cli import main

HUGE = "9" * 5000
LOG = "FAILED tests/test_a.py::test_a - ValueError: bad\n"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "t.log").write_text(LOG, encoding="utf-8")
    return tmp_path


def _context(repo: Path, *more: str) -> list[str]:
    return ["context", "--repo", str(repo / "repo"), "--no-cache", *more]


@pytest.mark.parametrize(
    ("option", "limit", "file"),
    [
        ("--log", "max_log_bytes", "t.log"),
        ("--pytest-log", "max_log_bytes", "t.log"),
        ("--junit-xml", "max_junit_bytes", "t.log"),
        ("--issue", "max_issue_bytes", "t.log"),
    ],
)
def test_an_input_over_its_limit_names_the_option_as_typed(
    repo: Path, capsys: pytest.CaptureFixture[str], option: str, limit: str, file: str
) -> None:
    path = str(repo / file)
    args = _context(repo, option, path, "--limit", f"{limit}=5")
    if option == "--issue":
        args += ["--log", path]
    status, out, err = _run(capsys, *args)
    size = len(LOG.encode())
    assert (status, out) == (2, "")
    assert err == f"bugcontext context: {option}: {path} is {size} bytes, over the limit {limit} = 5 bytes\n"


@pytest.mark.parametrize("option", ["--max-chars", "--budget"])
def test_a_bad_budget_names_the_option(repo: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    status, out, err = _run(capsys, *_context(repo, "--log", str(repo / "t.log"), option, "-5"))
    assert (status, out) == (2, "")
    assert err == (
        f"bugcontext context: error: argument {option}: expected a whole number >= 0, got '-5' "
        "(see bugcontext context --help)\n"
    )
    assert "budget'" not in err and "field" not in err


def test_a_bad_limit_names_the_option(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(
        capsys, *_context(repo, "--log", str(repo / "t.log"), "--limit", "max_files=lots")
    )
    assert (status, out) == (2, "")
    assert err == "bugcontext context: --limit max_files: must be an int, got 'lots'\n"


def test_a_build_input_field_is_still_named_as_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Without --budget the budget is the JSON input's own field: the message names the field.
    (tmp_path / "in.json").write_text(json.dumps({"candidates": [], "budget": -1}), encoding="utf-8")
    status, out, err = _run(capsys, "build", str(tmp_path / "in.json"))
    assert (status, out) == (2, "")
    assert err == "bugcontext build: input field 'budget': must be >= 0, got -1\n"


@pytest.mark.parametrize("command", ["context", "mcp", "cache info", "cache clear"])
@pytest.mark.parametrize("below", [False, True])
def test_a_cache_dir_that_is_a_file_is_a_clear_error(
    repo: Path, capsys: pytest.CaptureFixture[str], command: str, below: bool
) -> None:
    (repo / "afile").write_text("not a folder\n", encoding="utf-8")
    cache_dir = str(repo / "afile" / "sub") if below else str(repo / "afile")
    args = {
        "context": ["context", "--repo", str(repo / "repo"), "--log", str(repo / "t.log")],
        "mcp": ["mcp", "--root", str(repo)],
        "cache info": ["cache", "info"],
        "cache clear": ["cache", "clear"],
    }[command]
    status, out, err = _run(capsys, *args, "--cache-dir", cache_dir)
    assert (status, out) == (2, "")
    also = f" (so {cache_dir} cannot be made)" if below else ""
    assert err == f"bugcontext {command.split()[0]}: --cache-dir: {repo / 'afile'} is not a folder{also}\n"
    assert (repo / "afile").read_text(encoding="utf-8") == "not a folder\n"


def test_cache_clear_refuses_a_folder_that_is_not_a_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "documents"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me\n", encoding="utf-8")
    (folder / "derived-fake.sqlite3").write_text("not a database\n", encoding="utf-8")
    for target in (str(folder), "/"):
        status, out, err = _run(capsys, "cache", "clear", "--cache-dir", target)
        assert (status, out) == (2, "")
        assert err == (
            f"bugcontext cache: --cache-dir: {target} is not a bugcontext cache (it holds no "
            "derived-*.sqlite3 database); nothing removed\n"
        )
    assert sorted(p.name for p in folder.iterdir()) == ["derived-fake.sqlite3", "notes.txt"]


def test_cache_clear_takes_a_cache_an_empty_folder_or_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    with sqlite3.connect(cache / "derived-0.sqlite3") as db:
        db.execute("create table t (x)")
    db.close()
    (cache / "mine.txt").write_text("not the cache's\n", encoding="utf-8")
    status, out, err = _run(capsys, "cache", "clear", "--cache-dir", str(cache))
    assert (status, err) == (0, "") and out.startswith("removed 1 files (")
    assert [p.name for p in cache.iterdir()] == ["mine.txt"]  # only the cache's own files go
    (tmp_path / "empty").mkdir()
    for target in (tmp_path / "empty", tmp_path / "absent"):
        status, out, err = _run(capsys, "cache", "clear", "--cache-dir", str(target))
        assert (status, out, err) == (0, f"removed 0 files (0 bytes) from {target}\n", "")


def test_context_help_speaks_of_any_test_runner(capsys: pytest.CaptureFixture[str]) -> None:
    status, top, _ = _run(capsys, "--help")
    assert status == 0
    (summary,) = [line for line in top.splitlines() if line.strip().startswith("context ")]
    assert "pytest" not in summary and "failing test run" in summary
    status, out, _ = _run(capsys, "context", "--help")
    assert status == 0
    text = " ".join(out.split())
    for phrase in ("pytest log", "pytest run", "short test summary"):
        assert phrase not in text
    # Where pytest is named, it is one runner among others (the formats, the report's producers).
    assert "pytest, unittest, go test, cargo test, jest" in text
    for entry in _paragraphs(out):
        if "pytest" in entry:
            assert "go test" in entry or "JUnit" in entry, entry


def _paragraphs(help_text: str) -> list[str]:
    """The help's entries (an option and its wrapped lines) as one line each."""
    entries: list[str] = []
    for line in help_text.splitlines():
        if line.startswith("  -") or not entries or not line.startswith(" "):
            entries.append(line.strip())
        else:
            entries[-1] += " " + line.strip()
    return entries


@pytest.mark.parametrize(
    "args",
    [
        ["context", "--repo", ".", "--log", "t.log", "--max-chars", HUGE],
        ["context", "--repo", ".", "--log", "t.log", "--budget", HUGE],
        ["context", "--repo", ".", "--log", "t.log", "--limit", f"max_files={HUGE}"],
        ["build", "--budget", HUGE, "in.json"],
        ["build", "--threads", HUGE, "--jsonl", "in.json"],
        ["build", "huge.json"],
        ["rerank", "in.parquet", "--out", "out.parquet", "--budget", HUGE],
        ["rerank", "in.parquet", "--out", "out.parquet", "--budget", "5", "--threads", HUGE],
        ["eval", "--cases", "none.json", "--budgets", HUGE],
        ["eval", "--cases", "none.json", "--repeat", HUGE],
    ],
)
def test_a_5000_digit_integer_is_a_short_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.log").write_text(LOG, encoding="utf-8")
    (tmp_path / "in.json").write_text('{"candidates": []}\n', encoding="utf-8")
    (tmp_path / "huge.json").write_text(f'{{"candidates": [], "max_chars": {HUGE}}}\n', encoding="utf-8")
    status, out, err = _run(capsys, *args)
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert "set_int_max_str_digits" not in line and "9" * 100 not in line
    assert len(line) < 300
    assert line.startswith(f"bugcontext {args[0]}: ")


def test_a_5000_digit_integer_in_a_jsonl_line_is_a_short_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.jsonl").write_text(f'{{"candidates": [], "max_chars": {HUGE}}}\n', encoding="utf-8")
    status, out, err = _run(capsys, "build", "--jsonl", str(tmp_path / "in.jsonl"))
    assert status == 3
    error = json.loads(out)["error"]
    assert (
        error["message"]
        == "input field 'input': invalid JSON: an integer of 5000 digits (at most 4300 are read)"
    )
    assert "set_int_max_str_digits" not in err
