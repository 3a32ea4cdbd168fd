"""Hostile inputs and outputs: broken pipes and closed streams, unbounded or hanging reads,
names that would inject lines, and output targets that are not regular files.

Each fault is tested as a kind: every subcommand and every output for write failures, every
untrusted read for its cap, every place a name is printed for its escaping, every kind of
output target for the plugin and ``write_file``.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext.core import _io, _writer, limits
from bugcontext.core.errors import ResourceLimitError
from bugcontext.core.limits import DEFAULT_LIMITS, Limits
from bugcontext.integrations import cli
from bugcontext.integrations.pytest_plugin import MARKER
from bugcontext.job.sources import Repository

TIMEOUT = 120  # seconds: a guard against hangs, not a speed test


def run(
    *args: str,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = subprocess.PIPE,
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=TIMEOUT,
        check=False,
    )


def cand(i: int) -> dict[str, Any]:
    return {"path": f"m{i}.py", "start": 1, "end": 1, "content": "x" * 500, "reason": "search", "score": 1}


FAILING_TEST = "def test_x():\n    assert helper() == 2\n\n\ndef helper():\n    return 1\n"


def pytest_log(path: str) -> str:
    """A pytest log whose one failure is ``test_x`` at line 2 of ``path``."""
    return (
        "=================================== FAILURES ===================================\n"
        "____________________________________ test_x ____________________________________\n"
        "\n"
        "    def test_x():\n"
        ">       assert helper() == 2\n"
        "E       assert 1 == 2\n"
        "\n"
        f"{path}:2: AssertionError\n"
        "=========================== short test summary info ============================\n"
        f"FAILED {path}::test_x - assert 1 == 2\n"
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``big.json`` (an output far larger than a pipe's buffer), ``small.json``, a repository
    with a failing test and its log, an empty cases file for ``eval``."""
    folder = tmp_path_factory.mktemp("inputs")
    big = folder / "big.json"
    big.write_text(json.dumps({"candidates": [cand(i) for i in range(2000)], "max_chars": 10**7}))
    small = folder / "small.json"
    small.write_text(json.dumps({"candidates": [cand(0)], "max_chars": 1000}))
    repo = folder / "repo"
    repo.mkdir()
    (repo / "test_x.py").write_text(FAILING_TEST)
    log = folder / "pytest.log"
    log.write_text(pytest_log("test_x.py"))
    cases = folder / "cases.json"
    cases.write_text("[]")
    return {"big": big, "small": small, "repo": repo, "log": log, "cases": cases, "work": folder / "work"}


def commands(inputs: dict[str, Path]) -> dict[str, list[str]]:
    """Every subcommand, with arguments that succeed and print something."""
    return {
        "build": ["build", str(inputs["small"])],
        "build-markdown": ["build", "--format", "markdown", str(inputs["small"])],
        "context": ["context", "--repo", str(inputs["repo"]), "--pytest-log", str(inputs["log"])],
        "context-json": [
            "context",
            "--repo",
            str(inputs["repo"]),
            "--pytest-log",
            str(inputs["log"]),
            "--format",
            "json",
        ],
        "eval": ["eval", "--cases", str(inputs["cases"]), "--work", str(inputs["work"])],
        "help": ["--help"],
        "build-help": ["build", "--help"],
    }


COMMANDS = ["build", "build-markdown", "context", "context-json", "eval", "help", "build-help"]


def prefix(name: str) -> str:
    """The ``bugcontext ...`` prefix of the error line of command ``name``."""
    return "bugcontext" if name.endswith("help") else f"bugcontext {name.split('-')[0]}"


# --- 12. broken pipes and closed streams ---------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_succeeds_normally(inputs: dict[str, Path], name: str) -> None:
    proc = run(*commands(inputs)[name])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_on_a_full_device_exits_1_with_one_line(inputs: dict[str, Path], name: str) -> None:
    with open("/dev/full", "wb") as full:
        proc = run(*commands(inputs)[name], stdout=full)
    assert proc.returncode == 1
    assert proc.stderr.decode().endswith(
        f"{prefix(name)}: cannot write the output: No space left on device\n"
    )
    assert "Traceback" not in proc.stderr.decode()
    if name != "eval":  # eval reports its progress on standard error first
        assert proc.stderr.decode().count("\n") == 1


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_with_standard_output_closed_exits_1_with_one_line(
    inputs: dict[str, Path], name: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", *commands(inputs)[name]],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(),
        preexec_fn=lambda: os.close(1),
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr.decode().endswith(
        f"{prefix(name)}: cannot write the output: standard output is closed\n"
    )
    assert "Traceback" not in proc.stderr.decode()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_standard_error_closed_too_still_exits_1(inputs: dict[str, Path]) -> None:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "bugcontext", "build", str(inputs["small"])],
            stdin=subprocess.DEVNULL,
            stdout=full,
            preexec_fn=lambda: os.close(2),
            timeout=TIMEOUT,
            check=False,
        )
    assert proc.returncode == 1


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_pipe_closed_after_ten_bytes_exits_1_not_0(
    inputs: dict[str, Path], unbuffered: bool, fmt: str
) -> None:
    """``bugcontext build big.json | head -c10``: the reader goes away after 10 bytes, so
    the output is cut short, which must not pass for success."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bugcontext", "build", "--format", fmt, str(inputs["big"])],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=TIMEOUT) == 1
    assert len(head) == 10
    assert err.decode() == "bugcontext build: cannot write the output: Broken pipe\n"


def test_closed_standard_input_is_invalid_input() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "build"],
        capture_output=True,
        preexec_fn=lambda: os.close(0),
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert (
        proc.stderr.decode() == "bugcontext build: cannot read standard input: standard input is closed\n"
    )


def test_eval_report_file_that_cannot_be_written_exits_1(inputs: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "eval.md").mkdir()  # the report's name is taken by a folder
    proc = run(*commands(inputs)["eval"], "--out", str(tmp_path))
    assert proc.returncode == 1
    assert proc.stderr.decode().endswith(
        f"bugcontext eval: cannot write {tmp_path}/eval.md: is a folder\n"
    )
    assert (tmp_path / "eval.md").is_dir()


def test_write_stream_writes_everything_to_a_pipe() -> None:
    """``os.write`` may write part of a large text: ``write_stream`` writes the rest."""
    read_end, write_end = os.pipe()
    text = "é" * 300_000  # 600,000 bytes: many pipe buffers
    got: list[bytes] = []

    def reader() -> None:
        with os.fdopen(read_end, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=reader)
    thread.start()
    with os.fdopen(write_end, "w", encoding="utf-8") as stream:
        _io.write_stream(stream, text)
    thread.join(TIMEOUT)
    assert got == [text.encode("utf-8")]


def test_write_stream_to_none_and_to_a_closed_file() -> None:
    with pytest.raises(_io.OutputError, match=r"^cannot write the output: standard output is closed$"):
        _io.write_stream(None, "x")
    read_end, write_end = os.pipe()
    stream = os.fdopen(write_end, "w")
    stream.close()
    os.close(read_end)
    with pytest.raises(_io.OutputError, match=r"^cannot write the output: standard output is closed$"):
        _io.write_stream(stream, "x")


# --- 13. unbounded or hanging reads ---------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "field", "limit"),
    [("--pytest-log", "pytest_log", "max_log_bytes"), ("--junit-xml", "junit_xml", "max_junit_bytes")],
)
def test_endless_log_or_report_is_exit_2_naming_the_limit(
    inputs: dict[str, Path], option: str, field: str, limit: str
) -> None:
    args = ["context", "--repo", str(inputs["repo"]), "--pytest-log", str(inputs["log"])]
    args += [option, "/dev/zero"]
    proc = run(*args)
    assert proc.returncode == 2
    assert proc.stdout == b""
    value = getattr(DEFAULT_LIMITS, limit)
    assert proc.stderr.decode() == (
        f"bugcontext context: {option}: /dev/zero is more than {value} bytes, "
        f"over the limit {limit} = {value} bytes\n"
    )


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_oversized_build_input_is_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    with open("/dev/zero", "rb") as zero:
        if source == "stdin":
            monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": zero})())
            status = cli.main(["build", "--limit", "max_input_bytes=1000"])
            shown = "standard input"
        else:
            status = cli.main(["build", "/dev/zero", "--limit", "max_input_bytes=1000"])
            shown = "/dev/zero"
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert err == (
        f"bugcontext build: input field 'input': {shown} is more than 1000 bytes, "
        "over the limit max_input_bytes = 1000 bytes\n"
    )


def test_oversized_regular_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "log"
    big.write_bytes(b"x" * 101)
    small = Limits(max_log_bytes=100)
    with pytest.raises(ResourceLimitError) as caught:
        _io.read_capped(big, "max_log_bytes", field="pytest_log", limits=small)
    assert (caught.value.field, caught.value.limit, caught.value.value, caught.value.maximum) == (
        "pytest_log",
        "max_log_bytes",
        101,
        100,
    )
    assert str(caught.value) == (
        f"input field 'pytest_log': {big} is 101 bytes, over the limit max_log_bytes = 100 bytes"
    )
    fits = Limits(max_log_bytes=101)
    assert _io.read_capped(big, "max_log_bytes", field="pytest_log", limits=fits) == b"x" * 101


def test_eval_cases_file_is_capped() -> None:
    proc = run("eval", "--cases", "/dev/zero")
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        f"bugcontext eval: input field 'cases': /dev/zero is more than {_io.MAX_INPUT_BYTES} bytes, "
        f"over the limit max_input_bytes = {_io.MAX_INPUT_BYTES} bytes\n"
    )


def test_run_context_caps_the_log(inputs: dict[str, Path]) -> None:
    with pytest.raises(ResourceLimitError) as caught:
        cli.run_context(inputs["repo"], inputs["log"], limits=Limits(max_log_bytes=10))
    size = inputs["log"].stat().st_size
    assert (caught.value.limit, caught.value.value, caught.value.maximum) == ("max_log_bytes", size, 10)


def test_resource_limit_error_pickles_with_its_limit() -> None:
    error = ResourceLimitError("pytest_log", "too big", limit="max_log_bytes", value=8, maximum=7)
    back = pickle.loads(pickle.dumps(error))
    assert (type(back), back.field, back.problem, back.index, back.limit, back.value, back.maximum) == (
        ResourceLimitError,
        "pytest_log",
        "too big",
        None,
        "max_log_bytes",
        8,
        7,
    )
    assert str(back) == str(error)
    core = ResourceLimitError("content", "total content exceeds the limit of 5 characters", 3)
    assert (core.limit, core.value, core.maximum, str(core)) == (
        None,
        None,
        None,
        "candidate 3: field 'content': total content exceeds the limit of 5 characters",
    )
    assert isinstance(error, bugcontext.InvalidInputError)


PATHOLOGICAL = "*a*a*a*a*a*a*a*a*a*a*b"


def test_pathological_gitignore_pattern_does_not_hang_context(tmp_path: Path) -> None:
    """The issue's example, through the command line, under a timeout guard: the file of
    100 ``a``s does not match (no ``b``), so it is listed; so is a Python file of that name,
    which the search source reads."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitignore").write_text(PATHOLOGICAL + "\n")
    (repo / ("a" * 100)).write_text("helper = 1\n")
    (repo / ("a" * 100 + ".py")).write_text("def helper():\n    return 1\n")
    (repo / "test_x.py").write_text(FAILING_TEST)
    log = tmp_path / "log"
    log.write_text(pytest_log("test_x.py"))
    proc = run(
        "context", "--repo", str(repo), "--pytest-log", str(log), "--format", "json", "--query", "helper"
    )
    assert proc.returncode == 0, proc.stderr
    paths = {item["path"] for item in json.loads(proc.stdout)["items"]}
    assert "a" * 100 + ".py" in paths
    assert Repository(repo).files() == [".gitignore", "a" * 100, "a" * 100 + ".py", "test_x.py"]


GIT = shutil.which("git")

ORACLE_RULES = [
    PATHOLOGICAL,
    "*.log",
    "!keep.log",
    "build/",
    "/top.txt",
    "docs/**/*.md",
    "**/cache",
    "x?z",
    "[ab]c[!d]",
    "*q*q*q*q*q*q*q*q*q*r",
    r"\#hash",
    "trailing\\ ",
    "deep/**",
]
ORACLE_FILES = [
    "a" * 100,
    "a" * 99 + "b",
    "ab",
    "b",
    "run.log",
    "keep.log",
    "sub/run.log",
    "build/out.py",
    "sub/build/out.py",
    "top.txt",
    "sub/top.txt",
    "docs/a.md",
    "docs/x/y/b.md",
    "docs/x/y/b.txt",
    "cache/f.py",
    "p/cache/f.py",
    "xyz",
    "xyyz",
    "acx",
    "bcd",
    "q" * 60,
    "q" * 60 + "r",
    "#hash",
    "trailing ",
    "deep/f.py",
    "deep/er/f.py",
    "plain.py",
]


@pytest.mark.skipif(GIT is None, reason="needs git")
def test_ignore_rules_agree_with_git_check_ignore(tmp_path: Path) -> None:
    """git itself is the oracle: a file is listed exactly when ``git check-ignore`` does not
    ignore it, for a set of rules with every kind of wildcard, and in bounded time."""
    assert GIT is not None
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run([GIT, "init", "-q", str(repo)], check=True, timeout=TIMEOUT)
    (repo / ".gitignore").write_text("\n".join(ORACLE_RULES) + "\n")
    for name in ORACLE_FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("x = 1\n")
    proc = subprocess.run(
        [GIT, "-C", str(repo), "check-ignore", "--stdin", "-z"],
        input="\0".join(ORACLE_FILES).encode() + b"\0",
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    ignored_by_git = {name for name in proc.stdout.decode().split("\0") if name}
    listed = set(Repository(repo).files())
    assert {name for name in ORACLE_FILES if name not in listed} == ignored_by_git
    assert "a" * 100 not in ignored_by_git and "q" * 60 not in ignored_by_git  # the example's verdict


def test_lone_surrogate_path_is_matched_by_the_rules(tmp_path: Path) -> None:
    name = os.fsdecode(b"bad\xff.log")
    (tmp_path / ".gitignore").write_text("*.log\n!keep*\n")
    (tmp_path / name).write_text("x\n")
    (tmp_path / os.fsdecode(b"keep\xff.log")).write_text("x\n")
    assert Repository(tmp_path).files() == [".gitignore", os.fsdecode(b"keep\xff.log")]


def test_folder_nested_1000_deep(tmp_path: Path) -> None:
    """Walking and the folder checks are iterative: a test 1,000 folders down is found and
    its context built, in this process (no ``RecursionError``)."""
    repo = tmp_path / "repo"
    here = repo
    here.mkdir()
    for _ in range(1000):
        here = here / "d"
        here.mkdir()  # one level at a time: os.makedirs itself recurses
    (here / "test_deep.py").write_text(FAILING_TEST)
    rel = "d/" * 1000 + "test_deep.py"
    (repo / ".gitignore").write_text("*.log\n")
    try:
        assert Repository(repo).files() == [".gitignore", rel]
        # The cold path: folders checked from the file.
        assert Repository(repo).relative(str(repo / rel)) == rel
        log = tmp_path / "log"
        log.write_text(pytest_log(rel))
        report = cli.run_context(repo, log)
        assert report.failure_file == rel
        assert [(item.path, item.start, item.end) for item in report.result.items][:1] == [(rel, 1, 2)]
    finally:
        # Remove the tree bottom-up here: pytest's own clean-up of old temporary folders
        # recurses and would fail on it in a later run.
        (here / "test_deep.py").unlink()
        while here != repo:
            here.rmdir()
            here = here.parent


# --- 14. names that would inject lines ------------------------------------------------------

NEWLINE_NAME = "x\n## Injected.py"


@pytest.fixture
def newline_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A failing test in a file whose name holds a newline, reached through a link ``a.py``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / NEWLINE_NAME).write_text(FAILING_TEST)
    (repo / "a.py").symlink_to(NEWLINE_NAME)
    log = tmp_path / "log"
    log.write_text(pytest_log("a.py"))
    return repo, log


def test_no_name_starts_a_line_of_its_own(newline_repo: tuple[Path, Path]) -> None:
    repo, log = newline_repo
    proc = run("context", "--repo", str(repo), "--pytest-log", str(log))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()  # the section
    report = proc.stderr.decode().splitlines()  # the failure and omission report
    assert "- failure file: x\\u000a## Injected.py" in report
    assert "### x\\u000a## Injected.py:1-2 (failure evidence in the failing file)" in lines
    assert not [line for line in lines + report if line.startswith("## Injected")]


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="1">
<testcase classname="a" name="test_x[a&#10;## Injected]" file="a.py" line="1">
<failure message="assert 1 == 2">def test_x():
&gt;       assert helper() == 2
E       assert 1 == 2

a.py:2: AssertionError</failure></testcase></testsuite></testsuites>
"""


def test_test_name_is_escaped(newline_repo: tuple[Path, Path], tmp_path: Path) -> None:
    """A JUnit report can name a test with a line break (``&#10;``): it is escaped too."""
    repo, _ = newline_repo
    report = tmp_path / "junit.xml"
    report.write_text(JUNIT)
    proc = run("context", "--repo", str(repo), "--pytest-log", str(report))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.decode().splitlines()
    report = proc.stderr.decode().splitlines()
    assert "- test: test_x[a\\u000a## Injected]" in report
    assert "- failure file: x\\u000a## Injected.py" in report
    assert not [line for line in lines + report if line.startswith("## Injected")]


def test_names_in_messages_are_escaped(tmp_path: Path) -> None:
    missing = tmp_path / "no\nsuch"
    proc = run("build", str(missing))
    assert proc.returncode == 2
    assert proc.stderr.decode() == (
        f"bugcontext build: cannot read {tmp_path}/no\\u000asuch: No such file or directory\n"
    )
    proc = run("context", "--repo", str(missing), "--pytest-log", "-")
    assert proc.stderr.decode() == f"bugcontext context: not a directory: {tmp_path}/no\\u000asuch\n"


def test_plugin_lines_escape_names() -> None:
    from bugcontext.integrations.pytest_plugin import _describe, _name

    assert _name("t.py::test[a\nb]") == "t.py::test[a\\u000ab]"
    error = OSError(2, "No such file or directory", "a\nb")
    assert _describe(error) == "No such file or directory: a\\u000ab"


# --- 15. output targets that are not regular files ------------------------------------------


def test_write_file_regular_keeps_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")
    target.chmod(0o640)
    _writer.write_file(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.md"]


def test_write_file_follows_a_link_and_keeps_it(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "made.md")
    _writer.write_file(link, "new")
    _writer.write_file(dangling, "made")
    assert link.is_symlink() and real.read_text() == "new"
    assert dangling.is_symlink() and (tmp_path / "made.md").read_text() == "made"


def _read_end(fifo: Path) -> int:
    """The FIFO's read end, opened at once (non-blocking): a writer then finds a reader,
    and what it writes (less than a pipe's buffer) waits in the pipe."""
    return os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)


def _drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_write_file_writes_through_a_pipe_and_refuses_one_without_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(_io.OutputError) as caught:
        _writer.write_file(fifo, "x")
    assert str(caught.value) == f"cannot write {fifo}: no process reads the named pipe"
    link = tmp_path / "link"
    link.symlink_to(fifo)
    reader = _read_end(fifo)
    _writer.write_file(link, "through the pipe\n")
    assert _drain(reader) == b"through the pipe\n"
    assert stat.S_ISFIFO(fifo.stat().st_mode) and link.is_symlink()


def test_write_file_to_a_character_device_writes_through(tmp_path: Path) -> None:
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    _writer.write_file(link, "discarded")
    _writer.write_file(os.devnull, "discarded")
    assert link.is_symlink()
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_write_file_refuses_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(_io.OutputError) as caught:
        _writer.write_file(folder, "x")
    assert str(caught.value) == f"cannot write {folder}: is a folder"


pytest_plugins = ["pytester"]

PLUGIN = ("-p", "bugcontext.integrations.pytest_plugin")


@pytest.fixture
def failing_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_x=FAILING_TEST)
    return pytester


def _run_plugin(pytester: pytest.Pytester, target: str) -> list[str]:
    result = pytester.runpytest_subprocess(*PLUGIN, f"--bugcontext={target}", timeout=TIMEOUT)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    return [line for line in result.outlines if line.startswith("bugcontext:")]


def test_plugin_through_a_link_to_a_regular_file_keeps_the_link(failing_project: pytest.Pytester) -> None:
    real = failing_project.path / "real.md"
    real.write_text(MARKER + "\nan older context\n")  # a context the plugin wrote: replaced
    link = failing_project.path / "context.md"
    link.symlink_to(real)
    lines = _run_plugin(failing_project, "context.md")
    assert lines == ["bugcontext: context of test_x.py::test_x written to context.md"]
    assert link.is_symlink()
    assert "- failure file: test_x.py" in real.read_text()


def test_plugin_through_a_link_to_a_device_keeps_both(failing_project: pytest.Pytester) -> None:
    link = failing_project.path / "context.md"
    link.symlink_to(os.devnull)
    lines = _run_plugin(failing_project, "context.md")
    assert lines == ["bugcontext: context of test_x.py::test_x written to context.md"]
    assert link.is_symlink() and os.readlink(link) == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_plugin_through_a_link_to_a_pipe_writes_into_the_pipe(failing_project: pytest.Pytester) -> None:
    fifo = failing_project.path / "pipe"
    os.mkfifo(fifo)
    link = failing_project.path / "context.md"
    link.symlink_to(fifo)
    reader = _read_end(fifo)
    lines = _run_plugin(failing_project, "context.md")
    got = _drain(reader)
    assert lines == ["bugcontext: context of test_x.py::test_x written to context.md"]
    assert link.is_symlink() and stat.S_ISFIFO(fifo.stat().st_mode)
    assert b"\n- failure file: test_x.py\n" in got


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_plugin_refuses_a_pipe_nobody_reads(failing_project: pytest.Pytester) -> None:
    fifo = failing_project.path / "pipe"
    os.mkfifo(fifo)
    lines = _run_plugin(failing_project, "pipe")
    assert lines == [
        f"bugcontext: cannot write the context of test_x.py::test_x: cannot write "
        f"{failing_project.path}/pipe: no process reads the named pipe"
    ]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not hasattr(os, "mknod") or os.geteuid() != 0, reason="needs root to make a device")
def test_plugin_writes_through_a_device_and_keeps_it(failing_project: pytest.Pytester) -> None:
    """A private character device (the null device's numbers), so that a failure could not
    harm the machine's own ``/dev/null``."""
    device = failing_project.path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    lines = _run_plugin(failing_project, "null")
    assert lines == ["bugcontext: context of test_x.py::test_x written to null"]
    assert stat.S_ISCHR(device.stat().st_mode)


def test_plugin_report_larger_than_the_cap_gets_no_context(
    failing_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "DEFAULT_LIMITS", Limits(max_log_bytes=10))
    result = failing_project.runpytest(*PLUGIN, "--bugcontext=context.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = [line for line in result.outlines if line.startswith("bugcontext:")]
    assert len(lines) == 1
    prefix = (
        "bugcontext: cannot write the context of test_x.py::test_x: ResourceLimitError: input field "
        "'pytest_log': the report is "
    )
    assert lines[0].startswith(prefix)
    assert lines[0].endswith(" bytes, over the limit max_log_bytes = 10 bytes")
    size = int(lines[0][len(prefix) :].split(" ")[0])
    assert size > 10
    assert not (failing_project.path / "context.md").exists()


@pytest.mark.parametrize(
    ("pattern", "bounded_by_re2"),
    [
        (PATHOLOGICAL, True),
        ("*a*b", True),
        ("**/a/**/b", True),
        ("*.py[cod]", False),
        ("build/", False),
        ("**/generated/*.txt", False),
        ("a/**/b", False),
        (".coverage.*", False),
        (r"\*\*\*x", False),
    ],
)
def test_patterns_that_could_backtrack_are_matched_by_re2(pattern: str, bounded_by_re2: bool) -> None:
    from bugcontext.job.sources.files import _rules

    spec = _rules([pattern])
    regexes = [p.regex for p in spec.patterns if getattr(p, "regex", None) is not None]
    assert [type(r).__module__.startswith("re2") for r in regexes] == [bounded_by_re2]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_plugin_problem_without_a_terminal_goes_to_standard_error(failing_project: pytest.Pytester) -> None:
    fifo = failing_project.path / "pipe"
    os.mkfifo(fifo)
    result = failing_project.runpytest_subprocess(*PLUGIN, "-p", "no:terminal", "--bugcontext=pipe")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert result.errlines == [
        f"bugcontext: cannot write the context of test_x.py::test_x: cannot write "
        f"{failing_project.path}/pipe: no process reads the named pipe"
    ]
