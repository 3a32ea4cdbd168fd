"""Hostile names and inputs on the command line: a secret in a file name reaches no field of
the JSON output, a huge test id is cut in its failure block (and kept whole where it is
matched), and an input that is a named pipe no process writes to is refused at once."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from bugcontext.core._io import open_input, read_capped
from bugcontext.core.cost import Cost
from bugcontext.core.limits import DEFAULT_LIMITS, Limits
from bugcontext.core.secrets import redact_json
from bugcontext.integrations.cli import main
from bugcontext.job._failure_block import cut_test, failure_blocks
from bugcontext.job.sources.reports import TestFailure

KEY = "AKIAZ7QRSTUVWX2345AB"

TEST = f"""from {KEY}_mod import login


def test_login():
    assert login("x")
"""

LOG = """\
=================================== FAILURES ===================================
__________________________________ test_login __________________________________

    def test_login():
>       assert login("x")

tests/test_login.py:5: AssertionError
E       AssertionError: assert False

=========================== short test summary info ============================
FAILED tests/test_login.py::test_login - AssertionError: assert False
"""


def test_a_secret_in_a_file_name_is_redacted_in_every_json_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / f"{KEY}_mod.py").write_text(
        'def login(tok):\n    password = "hunter2xyz9"\n    return tok == password\n'
    )
    (repo / "tests" / "test_login.py").write_text(TEST)
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    assert main(["context", "--repo", str(repo), "--log", str(log), "--no-cache", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert KEY not in out
    data = json.loads(out)
    shown = "[REDACTED: AWSKeyDetector]_mod.py"
    assert shown in [item["path"] for item in data["items"]]
    # The reader's record of the secret in the file names the file as the items do.
    assert shown in [record.get("path") for record in data["policy_redacted"]]


def test_redact_json_names_a_key_with_a_secret_as_it_is_shown() -> None:
    shown, found = redact_json({f"{KEY}.py": "x"})
    assert shown == {"[REDACTED: AWSKeyDetector].py": "x"}
    assert [record["where"] for record in found] == ["$.<key>"]
    shown, found = redact_json({f"{KEY}.py": {"token": KEY}})
    assert [record["where"] for record in found] == ["$.<key>", "$.[REDACTED: AWSKeyDetector].py.token"]


def test_cut_test_marks_what_it_cuts_on_the_same_line() -> None:
    assert cut_test("tests/t.py::a", 100) == ("tests/t.py::a", 0)
    assert cut_test("abcdef", 2) == ("ab [... 4 characters cut]", 4)


def test_a_huge_test_id_is_cut_in_its_failure_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text("def test_a():\n    assert 1 == 2\n")
    test_id = "tests/test_x.py::" + "::".join(["a"] * 700_000)  # 2 MB
    log = tmp_path / "pytest.log"
    log.write_text(f"=== short test summary info ===\nFAILED {test_id} - AssertionError: boom\n")
    args = ["context", "--repo", str(repo), "--log", str(log), "--no-cache"]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    limit = DEFAULT_LIMITS.max_failure_test_chars
    (block,) = data["failure_blocks"]
    assert data["failure_blocks_left_out"] == []
    assert block["test"] == f"{test_id[:limit]} [... {len(test_id) - limit} characters cut]"
    assert block["test_cut"] == len(test_id) - limit
    assert data["failure"]["test_id"] == test_id  # kept whole where it is matched
    assert main(args) == 0
    section = capsys.readouterr().out
    assert section.startswith(f"### Failure: {test_id[:limit]} [... {len(test_id) - limit} characters cut]\n")
    assert "AssertionError: boom" in section


def test_a_short_test_id_is_not_cut() -> None:
    failure = TestFailure(
        name="test_a",
        frames=(),
        exception_type="E",
        message="m",
        message_lines=("m",),
        test_id="tests/t.py::test_a",
    )
    (block,) = failure_blocks([failure], Cost(), Limits(max_failure_test_chars=18))
    assert (block.test, block.test_cut) == ("tests/t.py::test_a", 0)
    (block,) = failure_blocks([failure], Cost(), Limits(max_failure_test_chars=10))
    assert (block.test, block.test_cut) == ("tests/t.py [... 8 characters cut]", 8)
    assert block.text.startswith("### Failure: tests/t.py [... 8 characters cut]\n")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["replay", "{}"],
        ["build", "{}"],
        ["build", "--jsonl", "{}"],
        ["rerank", "{}", "--budget", "5", "--out", "{out}"],
        ["context", "--repo", "{repo}", "--log", "{}", "--no-cache"],
        ["context", "--repo", "{repo}", "--junit-xml", "{}", "--no-cache"],
        ["context", "--repo", "{repo}", "--log", "{log}", "--issue", "{}", "--no-cache"],
    ],
)
def test_a_named_pipe_with_no_writer_is_refused_at_once(
    fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    if command[0] == "rerank":
        pytest.importorskip("pyarrow")
    (tmp_path / "log").write_text(LOG)
    values = {"out": str(tmp_path / "out.parquet"), "repo": str(tmp_path), "log": str(tmp_path / "log")}
    argv = [str(fifo) if part == "{}" else part.format(**values) for part in command]
    assert main(argv) == 2  # (a blocking open would never return: no process writes to it)
    err = capsys.readouterr().err
    why = "not a regular file" if command[0] == "rerank" else "a named pipe with no writer"
    assert err == f"bugcontext {command[0]}: cannot read {fifo}: {why}\n"


def test_a_named_pipe_with_a_writer_is_read_whole(fifo: Path) -> None:
    data = b"x" * (3 << 20)  # more than one read
    opened = threading.Event()

    def write() -> None:
        with open(fifo, "wb") as handle:  # blocks until the reader opens
            opened.set()
            handle.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    # The writer's open is under way before the reader opens: it counts as a writer.
    while not opened.is_set():
        try:
            got = read_capped(fifo, "max_input_bytes", field="input")
        except OSError:
            continue  # the writer had not opened yet
        break
    writer.join()
    assert got == data


def test_open_input_reads_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    with open_input(path) as handle:
        assert handle.read() == b"abc"
