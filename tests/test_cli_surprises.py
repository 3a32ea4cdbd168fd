"""The command line never surprises: ``--version``; a log without a failing test says so on
standard error, and exits 5 with ``--require-failure``; Ctrl-C in the subcommands the
interrupt tests cannot reach through a named pipe is one line and exit 130."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

import pytest
from bugcontext.integrations.cli import EXIT_INTERRUPTED, EXIT_MISSING_EVIDENCE, main


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (f"bugcontext {version('bugcontext')}\n", "")


def test_version_in_a_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bugcontext", "--version"], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"bugcontext {version('bugcontext')}\n", "")


@pytest.mark.parametrize(
    ("log", "why"),
    [
        ("", "the log is empty"),
        ("  \n\n", "the log is empty"),
        (
            "collected 3 items\n\ntests/test_a.py ...    [100%]\n\n3 passed in 0.01s\n",
            "no failing test found in the log",
        ),
        ("\x00\xff garbage that is no test output at all\n", "no failing test found in the log"),
    ],
)
@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_no_failing_test_is_a_clear_line_and_exit_5_when_required(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], log: str, why: str, fmt: str
) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "t.log").write_text(log, encoding="utf-8", errors="surrogateescape")
    args = ["context", "--repo", str(tmp_path / "repo"), "--pytest-log", str(tmp_path / "t.log")]
    args += ["--no-cache", "--format", fmt]
    line = f"bugcontext context: warning: {why}: the context has no failure evidence"
    assert main(args) == 0
    _, err = capsys.readouterr()
    assert err.splitlines()[0] == line
    assert main([*args, "--require-failure"]) == EXIT_MISSING_EVIDENCE == 5
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == line + " (exit 5: --require-failure)"
    if fmt == "json":  # the document is still printed; the Markdown section is empty
        assert json.loads(out)["failure"] is None
    else:
        assert out == ""


# A child that sends itself SIGINT from inside the command's work (a real signal, so the
# whole way from the signal to the exit status is the program's own).
CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    import importlib

    module, name = sys.argv[1], sys.argv[2]
    target = importlib.import_module(module)

    def interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)

    setattr(target, name, interrupted)
    from bugcontext.integrations.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


def _interrupted(module: str, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, module, name, *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_ctrl_c_in_rerank_is_one_line_and_exit_130(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    (tmp_path / "in.parquet").write_bytes(b"")
    done = _interrupted(
        "pyarrow.parquet",
        "ParquetFile",
        "rerank",
        str(tmp_path / "in.parquet"),
        "--out",
        str(tmp_path / "out.parquet"),
        "--budget",
        "10",
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT_INTERRUPTED,
        "",
        "bugcontext rerank: interrupted\n",
    )
    assert not (tmp_path / "out.parquet").exists()


def test_ctrl_c_in_build_jsonl_is_one_line_and_exit_130(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"candidates": [], "max_chars": 1}\n', encoding="utf-8")
    done = _interrupted(
        "bugcontext.core.builder", "ContextBuilder", "build", "--jsonl", str(tmp_path / "in.jsonl")
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT_INTERRUPTED,
        "",
        "bugcontext build: interrupted\n",
    )


def test_ctrl_c_while_the_command_line_is_read_is_one_line_and_exit_130() -> None:
    done = _interrupted("bugcontext.integrations.cli", "_parser", "build")
    assert (done.returncode, done.stdout, done.stderr) == (
        EXIT_INTERRUPTED,
        "",
        "bugcontext: interrupted\n",
    )
