"""The one writer of every output file (:mod:`bugcontext.core._writer`), with real files: a
regular file replaced atomically with its mode, a link kept and its target replaced, devices
and pipes written in place, folders and read-only files refused, outputs that are inputs (or
each other) refused before any work, write failures named as such (exit 1), temporary files
removed on SIGINT/SIGTERM and stale ones of dead runs cleaned, never a live run's."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from bugcontext.core import _writer
from bugcontext.core._io import OutputError
from bugcontext.integrations.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TIMEOUT = 120  # seconds: a guard against hangs, not a speed test
SUFFIX = _writer.TEMP_SUFFIX


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(SUFFIX))


def table(rows: int, groups: int = 1) -> Any:
    per = max(1, rows // groups)
    return pa.table(
        {
            "task": [f"t{i // per:06d}" for i in range(rows)],
            "path": [f"m{i % 7}.py" for i in range(rows)],
            "start": [1 + i % 50 for i in range(rows)],
            "end": [3 + i % 50 for i in range(rows)],
            "content": [f"line {i}\n" for i in range(rows)],
            "reason": ["search"] * rows,
            "score": [float(i % 13) for i in range(rows)],
        }
    )


@pytest.fixture
def parquet_in(tmp_path: Path) -> Path:
    source = tmp_path / "in.parquet"
    pq.write_table(table(30, 3), source)
    return source


def rerank(source: Path, *extra: str) -> list[str]:
    return ["rerank", str(source), "--budget", "40", "--group-by", "task", *extra]


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


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_x.py").write_text(FAILING_TEST)
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    data = tmp_path / "in.json"
    data.write_text(
        json.dumps(
            {
                "candidates": [
                    {"path": "a.py", "start": 1, "end": 1, "content": "x\n", "reason": "search", "score": 1}
                ],
                "max_chars": 100,
            }
        )
    )
    return {"repo": repo, "log": log, "input": data, "folder": tmp_path}


def context(project: dict[str, Path], *extra: str) -> list[str]:
    return [
        "context",
        "--repo",
        str(project["repo"]),
        "--pytest-log",
        str(project["log"]),
        "--no-cache",
        *extra,
    ]


# --- the rules, on write_file --------------------------------------------------------------


def test_a_regular_file_is_replaced_keeping_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")
    target.chmod(0o604)
    before = target.stat().st_ino
    _writer.write_file(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604
    assert target.stat().st_ino != before  # a new file renamed over the old one
    assert [p.name for p in tmp_path.iterdir()] == ["out.md"]


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        _writer.write_file(tmp_path / "new.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640


def test_a_link_is_kept_and_its_target_replaced(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "out.md"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "link.md"
    link.symlink_to(Path("real") / "out.md")
    _writer.write_file(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(Path("real") / "out.md")
    assert real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o600
    assert temps(tmp_path) == [] and temps(tmp_path / "real") == []


def test_a_read_only_file_is_refused_even_for_root(tmp_path: Path) -> None:
    """``os.access`` lets root write anything; a file with no write permission bit is still
    not replaced (the rule holds for every user)."""
    target = tmp_path / "ro.md"
    target.write_text("keep")
    target.chmod(0o444)
    with pytest.raises(OutputError) as caught:
        _writer.write_file(target, "new")
    assert str(caught.value) == f"cannot write {target}: the file is read-only (it is not replaced)"
    assert target.read_text() == "keep" and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert temps(tmp_path) == []


def test_the_null_device_is_written_in_place(tmp_path: Path) -> None:
    before = os.stat(os.devnull)
    _writer.write_file(os.devnull, "discarded")
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_full_device_is_a_write_failure() -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with pytest.raises(OutputError) as caught:
        _writer.write_file("/dev/full", "x" * 100_000)
    assert str(caught.value) == "cannot write /dev/full: No space left on device"


@pytest.mark.parametrize("kind", ["folder", "link to a folder"])
def test_a_folder_is_refused(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    target = folder if kind == "folder" else tmp_path / "link"
    if kind != "folder":
        target.symlink_to(folder)
    with pytest.raises(OutputError) as caught:
        _writer.write_file(target, "x")
    assert str(caught.value) == f"cannot write {target}: is a folder"
    assert list(folder.iterdir()) == [] and temps(tmp_path) == []


def test_a_name_ending_in_a_separator_is_not_taken_for_a_file(tmp_path: Path) -> None:
    with pytest.raises(OutputError) as caught:
        _writer.write_file(f"{tmp_path}/out/", "x")
    assert str(caught.value) == f"cannot write {tmp_path}/out/: a name ending in / names a folder, not a file"
    with pytest.raises(OutputError) as caught:
        _writer.write_file(f"{tmp_path}/", "x")
    assert str(caught.value) == f"cannot write {tmp_path}/: is a folder"
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "out.md"
    with pytest.raises(OutputError) as caught:
        _writer.write_file(target, "x")
    assert str(caught.value) == f"cannot write {target}: the folder {target.parent} does not exist"


def test_a_link_to_a_missing_target_is_named_as_such(tmp_path: Path) -> None:
    # The folder the path names exists: the message says what is missing.
    (tmp_path / "t").mkdir()
    dangling = tmp_path / "t" / "dangling"
    dangling.symlink_to("missing/out.md")
    with pytest.raises(OutputError) as caught:
        _writer.write_file(dangling, "x")
    assert str(caught.value) == (
        f"cannot write {dangling}: it is a symbolic link to missing/out.md, a missing file in a missing "
        "folder"
    )
    (tmp_path / "t" / "gone").symlink_to("nowhere")
    for target, problem in (
        (tmp_path / "t" / "gone" / "x.md", f"its folder {tmp_path}/t/gone is a symbolic link to nowhere"),
        (
            tmp_path / "t" / "gone" / "a" / "x.md",
            f"the folder {tmp_path}/t/gone/a does not exist ({tmp_path}/t/gone is a symbolic link to nowhere",
        ),
    ):
        for check in (_writer.check_output, lambda path: _writer.append_file(path, "x\n")):
            with pytest.raises(OutputError) as caught:
                check(target)
            assert str(caught.value).startswith(f"cannot write {target}: {problem}")
            assert "which does not exist" in str(caught.value)
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["dangling", "gone"]


@pytest.mark.parametrize("option", ["--report", "--trace"])
def test_context_names_a_link_to_a_missing_target(project: dict[str, Path], capsys: Any, option: str) -> None:
    folder = project["folder"] / "t"
    folder.mkdir()
    (folder / "dangling").symlink_to("missing/r.md")
    assert main(context(project, option, str(folder / "dangling"))) == 1
    assert capsys.readouterr() == (
        "",
        f"bugcontext context: cannot write {folder / 'dangling'}: it is a symbolic link to missing/r.md, "
        "a missing file in a missing folder\n",
    )


def test_a_socket_is_refused(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(OutputError) as caught:
            _writer.write_file(path, "x")
    finally:
        server.close()
    assert str(caught.value) == f"cannot write {path}: not a regular file, character device or named pipe"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")

    def full(self: Any, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_writer._Sink, "write", full)
    with pytest.raises(OutputError) as caught:
        _writer.write_file(target, "x" * (1 << 20))
    assert str(caught.value) == f"cannot write {target}: No space left on device"
    assert target.read_text() == "old" and temps(tmp_path) == []


def test_an_exception_inside_atomic_output_removes_the_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(KeyboardInterrupt), _writer.atomic_output(target) as out:
        out.file.write(b"half")
        assert len(temps(tmp_path)) == 1
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_the_temporary_name_is_recognisable_and_fits(tmp_path: Path) -> None:
    long = "é" * 120 + ".md"  # 243 bytes: the temporary name is cut to fit 255
    with _writer.atomic_output(tmp_path / long) as out:
        (name,) = temps(tmp_path)
        out.file.write(b"x")
    assert name.startswith(".") and f".{os.getpid()}." in name and name.endswith(SUFFIX)
    assert len(os.fsencode(name)) <= 255
    assert [p.name for p in tmp_path.iterdir()] == [long]


# --- named pipes ------------------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_nobody_reads_is_refused_at_once(parquet_in: Path, capsys: Any) -> None:
    fifo = parquet_in.parent / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert main(rerank(parquet_in, "--out", str(fifo))) == 1
    assert time.monotonic() - started < 30
    assert (
        capsys.readouterr().err
        == f"bugcontext rerank: cannot write {fifo}: no process reads the named pipe\n"
    )
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_parquet_through_a_pipe_is_whole(parquet_in: Path) -> None:
    fifo = parquet_in.parent / "pipe"
    os.mkfifo(fifo)
    # The read end, opened at once: the output (a few KB) waits in the pipe's buffer.
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert main(rerank(parquet_in, "--out", str(fifo))) == 0
        got = b""
        while chunk := os.read(reader, 1 << 16):
            got += chunk
    finally:
        os.close(reader)
    from bugcontext import build_table

    expected = build_table(pq.read_table(parquet_in), budget=40, group_by="task").decisions
    assert pq.read_table(pa.BufferReader(got)).equals(expected)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


# --- every command ----------------------------------------------------------------------------


def test_rerank_keeps_the_link_and_the_mode_of_its_outputs(parquet_in: Path) -> None:
    folder = parquet_in.parent
    real, summary = folder / "real.parquet", folder / "summary.parquet"
    real.write_bytes(b"old")
    real.chmod(0o640)
    summary.write_bytes(b"old")
    link = folder / "out.parquet"
    link.symlink_to("real.parquet")
    assert main(rerank(parquet_in, "--out", str(link), "--summary", str(summary))) == 0
    assert link.is_symlink() and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert pq.read_table(real).num_rows == 30 and pq.read_table(summary).num_rows == 3
    assert temps(folder) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the machine's /dev/null is only at risk as root")
def test_rerank_to_dev_null_as_root_keeps_the_device(parquet_in: Path) -> None:
    before = os.stat(os.devnull)
    assert main(rerank(parquet_in, "--out", os.devnull, "--summary", os.devnull)) == 0
    after = os.stat(os.devnull)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode)


def test_rerank_to_a_full_disk_is_exit_1_not_a_read_error(parquet_in: Path, capsys: Any) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    assert main(rerank(parquet_in, "--out", "/dev/full")) == 1
    assert capsys.readouterr().err == "bugcontext rerank: cannot write /dev/full: No space left on device\n"


@pytest.mark.parametrize("option", ["--out", "--summary"])
def test_rerank_output_problems_exit_1_and_name_the_output(
    parquet_in: Path, capsys: Any, option: str
) -> None:
    folder = parquet_in.parent
    (folder / "dir").mkdir()
    ro = folder / "ro.parquet"
    ro.write_bytes(b"keep")
    ro.chmod(0o444)
    other = "--summary" if option == "--out" else "--out"
    cases = {
        str(folder / "dir"): "is a folder",
        str(folder / "no" / "x.parquet"): f"the folder {folder / 'no'} does not exist",
        str(ro): "the file is read-only (it is not replaced)",
    }
    for target, why in cases.items():
        assert main(rerank(parquet_in, option, target, other, str(folder / "ok.parquet"))) == 1
        assert capsys.readouterr().err == f"bugcontext rerank: cannot write {target}: {why}\n"
        assert sorted(p.name for p in folder.iterdir()) == ["dir", "in.parquet", "ro.parquet"]
    assert ro.read_bytes() == b"keep" and list((folder / "dir").iterdir()) == []


def test_rerank_refuses_an_output_that_is_the_input(parquet_in: Path, capsys: Any) -> None:
    folder = parquet_in.parent
    before = parquet_in.read_bytes()
    link = folder / "link.parquet"
    link.symlink_to(parquet_in)
    hard = folder / "hard.parquet"
    os.link(parquet_in, hard)
    for option in ("--out", "--summary"):
        for name in (parquet_in, link, hard):
            extra = (
                [option, str(name)] if option == "--out" else ["--out", str(folder / "o"), option, str(name)]
            )
            assert main(rerank(parquet_in, *extra)) == 2
            assert capsys.readouterr().err == (
                f"bugcontext rerank: {option} {name} is the same file as the input {parquet_in} "
                "(refusing to overwrite an input)\n"
            )
    assert parquet_in.read_bytes() == before
    assert sorted(p.name for p in folder.iterdir()) == ["hard.parquet", "in.parquet", "link.parquet"]


def test_rerank_refuses_out_equal_to_summary(parquet_in: Path, capsys: Any) -> None:
    folder = parquet_in.parent
    out = folder / "out.parquet"
    assert main(rerank(parquet_in, "--out", str(out), "--summary", str(out))) == 2
    assert capsys.readouterr().err == f"bugcontext rerank: --out and --summary name the same file {out}\n"
    out.write_bytes(b"old")
    (folder / "alias.parquet").symlink_to(out)
    assert main(rerank(parquet_in, "--out", str(out), "--summary", str(folder / "alias.parquet"))) == 2
    assert capsys.readouterr().err == (
        f"bugcontext rerank: --out {out} and --summary {folder / 'alias.parquet'} are the same file\n"
    )
    assert out.read_bytes() == b"old"


def test_context_report_problems(project: dict[str, Path], capsys: Any) -> None:
    folder, log = project["folder"], project["log"]
    before = log.read_text()
    assert main(context(project, "--report", str(log))) == 2
    assert capsys.readouterr().err == (
        f"bugcontext context: --report {log} is the same file as --log {log} "
        "(refusing to overwrite an input)\n"
    )
    assert main(context(project, "--trace", str(log))) == 2
    assert "--trace" in capsys.readouterr().err
    report = folder / "report.md"
    assert main(context(project, "--report", str(report), "--trace", str(report))) == 2
    assert (
        capsys.readouterr().err == f"bugcontext context: --report and --trace name the same file {report}\n"
    )
    assert main(context(project, "--report", str(folder))) == 1
    assert capsys.readouterr().err == f"bugcontext context: cannot write {folder}: is a folder\n"
    missing = folder / "none" / "r.md"
    assert main(context(project, "--report", str(missing))) == 1
    assert capsys.readouterr().err == (
        f"bugcontext context: cannot write {missing}: the folder {missing.parent} does not exist\n"
    )
    assert log.read_text() == before and temps(folder) == []
    assert main(context(project, "--report", str(report))) == 0
    assert "- failure file: test_x.py" in report.read_text()


def test_context_report_equal_to_a_log_read_from_standard_input(project: dict[str, Path]) -> None:
    log = project["log"]
    args = [
        "context",
        "--repo",
        str(project["repo"]),
        "--pytest-log",
        "-",
        "--no-cache",
        "--report",
        str(log),
    ]
    with log.open("rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "bugcontext", *args],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    assert (proc.returncode, proc.stderr) == (
        2,
        f"bugcontext context: --report {log} is the same file as --log standard input "
        "(refusing to overwrite an input)\n",
    )
    assert log.read_text() == LOG


def test_build_trace_equal_to_the_input_is_refused(project: dict[str, Path], capsys: Any) -> None:
    data = project["input"]
    before = data.read_text()
    assert main(["build", str(data), "--trace", str(data)]) == 2
    assert capsys.readouterr().err == (
        f"bugcontext build: --trace {data} is the same file as the input {data} "
        "(refusing to overwrite an input)\n"
    )
    assert data.read_text() == before
    assert main(["build", str(data), "--trace", str(project["folder"])]) == 1
    assert capsys.readouterr().err == f"bugcontext build: cannot write {project['folder']}: is a folder\n"


def test_eval_out_refuses_a_cases_file_it_would_replace(tmp_path: Path, capsys: Any) -> None:
    cases = tmp_path / "eval.md"
    cases.write_text("[]")
    assert main(["eval", "--cases", str(cases), "--work", str(tmp_path / "w"), "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"bugcontext eval: --out {cases} is the same file as --cases {cases} "
        "(refusing to overwrite an input)\n"
    )
    assert cases.read_text() == "[]"
    file = tmp_path / "file"
    file.write_text("x")
    assert main(["eval", "--cases", str(cases), "--work", str(tmp_path / "w"), "--out", str(file)]) == 1
    assert capsys.readouterr().err == f"bugcontext eval: cannot write {file}: not a folder\n"
    (tmp_path / "gone").symlink_to("nowhere")
    missing = "is a symbolic link to nowhere, which does not exist"
    for out, problem in (
        (tmp_path / "gone", f"it {missing}"),
        (tmp_path / "gone" / "sub", f"{tmp_path}/gone {missing}"),
    ):
        assert main(["eval", "--cases", str(cases), "--work", str(tmp_path / "w"), "--out", str(out)]) == 1
        assert capsys.readouterr().err == f"bugcontext eval: cannot write {out}: {problem}\n"
    assert not (tmp_path / "nowhere").exists()


def test_make_folder_names_a_link_to_a_missing_target(tmp_path: Path) -> None:
    (tmp_path / "gone").symlink_to("nowhere")
    missing = "is a symbolic link to nowhere, which does not exist"
    for folder, problem in (
        (tmp_path / "gone", f"it {missing}"),
        (tmp_path / "gone" / "a" / "b", f"{tmp_path}/gone {missing}"),
    ):
        with pytest.raises(OutputError) as caught:
            _writer.make_folder(folder)
        assert str(caught.value) == f"cannot write {folder}: {problem}"
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError) as caught:
        _writer.make_folder(tmp_path / "file")
    assert str(caught.value) == f"cannot write {tmp_path / 'file'}: not a folder"
    _writer.make_folder(tmp_path / "new" / "deep")
    assert (tmp_path / "new" / "deep").is_dir()


# --- traces: appended, never left with part of a line ----------------------------------------


def test_a_failed_append_cuts_the_trace_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"first": 1}\n')
    real_write = os.write

    def half_then_full(fd: int, data: Any) -> int:
        if len(data) > 4:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OutputError) as caught:
        _writer.append_file(trace, '{"second": 2}\n')
    monkeypatch.undo()
    assert str(caught.value) == f"cannot write {trace}: No space left on device"
    assert trace.read_text() == '{"first": 1}\n'
    _writer.append_file(trace, '{"second": 2}\n')
    assert trace.read_text() == '{"first": 1}\n{"second": 2}\n'


def test_a_trace_through_a_link_is_appended_to_its_target(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("a\n")
    real.chmod(0o600)
    link = tmp_path / "t.jsonl"
    link.symlink_to(real)
    _writer.append_file(link, "b\n")
    assert link.is_symlink() and real.read_text() == "a\nb\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    with pytest.raises(OutputError) as caught:
        _writer.append_file(tmp_path, "x\n")
    assert str(caught.value) == f"cannot write {tmp_path}: is a folder"


# --- killed runs ------------------------------------------------------------------------------


CHILD = textwrap.dedent(
    """
    import sys, time
    from bugcontext.core._writer import atomic_output
    with atomic_output(sys.argv[1]) as out:
        out.file.write(b"partial output")
        out.file.flush()
        print("writing", flush=True)
        time.sleep(60)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_write_leaves_no_temporary_and_the_old_file(tmp_path: Path, signum: int) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "writing\n"
    assert len(temps(tmp_path)) == 1
    proc.send_signal(signum)
    proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signum  # ended by the signal, as without the handler
    assert [p.name for p in tmp_path.iterdir()] == ["out.md"]
    assert target.read_text() == "old"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_rerank_killed_mid_run_leaves_no_output_and_no_temporary(tmp_path: Path, signum: int) -> None:
    source = tmp_path / "in.parquet"
    pq.write_table(table(400_000, 40_000), source, row_group_size=5_000)
    out = tmp_path / "out.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bugcontext", *rerank(source, "--out", str(out), "--batch-rows", "500")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + TIMEOUT
    while not temps(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert temps(tmp_path), "the run ended before it started writing"
    time.sleep(0.3)  # well into the work
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=TIMEOUT)
    if signum == signal.SIGINT:  # Ctrl-C: one line, the shell's status for it
        assert (proc.returncode, err) == (130, b"bugcontext rerank: interrupted\n")
    else:
        assert proc.returncode == -signum
    assert [p.name for p in tmp_path.iterdir()] == ["in.parquet"]


def test_stale_temporaries_of_dead_runs_are_removed_never_a_live_runs(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {
            "dead": f".out.md.{dead_pid}.0123abcd{SUFFIX}",
            "live": f".out.md.{live.pid}.89abcdef{SUFFIX}",
            "mine, not being written": f".other.md.{os.getpid()}.deadbeef{SUFFIX}",
            "not of this naming": f".out.md.{dead_pid}.tmp",
            "a folder of this naming": f".x.{dead_pid}.00000000{SUFFIX}",
        }
        for what, name in names.items():
            if what.startswith("a folder"):
                (tmp_path / name).mkdir()
            else:
                (tmp_path / name).write_text(what)
        _writer.write_file(tmp_path / "out.md", "new")
        left = {p.name for p in tmp_path.iterdir()}
    finally:
        live.kill()
        live.wait()
    assert left == {
        "out.md",
        names["live"],
        names["not of this naming"],
        names["a folder of this naming"],
    }


def test_cleanup_runs_in_the_folder_written_to(tmp_path: Path, parquet_in: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    (tmp_path / "sub").mkdir()
    stale = tmp_path / "sub" / f".out.parquet.{int(dead.stdout)}.0badc0de{SUFFIX}"
    stale.write_bytes(b"PAR1 half")
    assert main(rerank(parquet_in, "--out", str(tmp_path / "sub" / "out.parquet"))) == 0
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["out.parquet"]


# --- traces through the commands and the API ---------------------------------------------------


def test_a_trace_on_a_full_disk_is_a_write_failure_of_every_command(
    project: dict[str, Path], capsys: Any
) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    assert main(["build", str(project["input"]), "--trace", "/dev/full"]) == 1
    assert capsys.readouterr().err == "bugcontext build: cannot write /dev/full: No space left on device\n"
    assert main(context(project, "--trace", "/dev/full")) == 1
    err = capsys.readouterr().err
    assert err.endswith("bugcontext context: cannot write /dev/full: No space left on device\n")
    assert "cannot read" not in err


def test_a_trace_the_api_cannot_write_is_refused_before_the_build(tmp_path: Path) -> None:
    import bugcontext

    data: dict[str, Any] = {
        "candidates": [{"path": "a.py", "start": 1, "end": 1, "content": "x", "reason": "search", "score": 1}]
    }
    data["max_chars"] = 10
    read_only = tmp_path / "ro.jsonl"
    read_only.write_text("")
    read_only.chmod(0o444)
    for engine in (bugcontext, bugcontext.reference):
        for target, why in (
            (tmp_path, "is a folder"),
            (read_only, "the file is read-only (it is not replaced)"),
        ):
            with pytest.raises(bugcontext.OutputError) as caught:
                engine.build(data, trace=target)
            assert str(caught.value) == f"cannot write {target}: {why}"
    assert read_only.read_text() == ""
    good = tmp_path / "t.jsonl"
    bugcontext.build(data, trace=good)
    bugcontext.reference.build(data, trace=good)
    assert [json.loads(line)["engine"] for line in good.read_text().splitlines()] == ["native", "reference"]


def test_build_trace_equal_to_the_input_read_from_standard_input(project: dict[str, Path]) -> None:
    data = project["input"]
    before = data.read_text()
    with data.open("rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "bugcontext", "build", "-", "--trace", str(data)],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f"bugcontext build: --trace {data} is the same file as the input standard input "
        "(refusing to overwrite an input)\n"
    )
    assert data.read_text() == before


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away")
def test_root_replacing_a_users_file_keeps_its_owner(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("old")
    os.chown(target, 4321, 4322)
    _writer.write_file(target, "new")
    info = target.stat()
    assert (info.st_uid, info.st_gid, target.read_text()) == (4321, 4322, "new")


def test_rerank_on_a_full_disk_keeps_the_old_output(
    parquet_in: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = parquet_in.parent / "out.parquet"
    out.write_bytes(b"old")

    def full(self: Any, data: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_writer._Sink, "write", full)
    assert main(rerank(parquet_in, "--out", str(out))) == 1
    err = capsys.readouterr().err
    assert err == f"bugcontext rerank: cannot write {out}: No space left on device\n"
    assert out.read_bytes() == b"old" and temps(parquet_in.parent) == []


APPENDER = textwrap.dedent(
    """
    import os, sys, time
    from bugcontext.core import _writer

    real_fsync = os.fsync
    def slow_fsync(fd):  # the line is written: stopped now, the append must be undone
        print("appended", flush=True)
        time.sleep(60)
    os.fsync = slow_fsync
    _writer.append_file(sys.argv[1], '{"second": 2}\\n')
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_append_stopped_by_a_signal_is_undone(tmp_path: Path, signum: int) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"first": 1}\n')
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "appended\n"
    assert trace.read_text() == '{"first": 1}\n{"second": 2}\n'  # written, not yet flushed
    proc.send_signal(signum)
    proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signum
    assert trace.read_text() == '{"first": 1}\n'


def test_however_a_run_ends_its_output_is_absent_old_or_whole(tmp_path: Path) -> None:
    """The property, on ``rerank`` stopped at many moments (before, during and after the
    work): the output is the old file or the whole new one, never a part, and no temporary
    file is left."""
    from bugcontext import build_table

    source = tmp_path / "in.parquet"
    data = table(100_000, 10_000)
    pq.write_table(data, source, row_group_size=5_000)
    expected = build_table(data, budget=40, group_by="task").decisions
    out = tmp_path / "out.parquet"
    out.write_bytes(b"old")
    seen = set()
    for n, delay in enumerate([0.0, 0.3, 0.6, 0.9, 1.2, 1.5, 2.0, 3.0]):
        signum = signal.SIGTERM if n % 2 else signal.SIGINT
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "bugcontext.integrations.cli",
                *rerank(source, "--out", str(out), "--batch-rows", "500"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        proc.send_signal(signum)
        proc.wait(TIMEOUT)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet", "out.parquet"]
        if out.read_bytes() == b"old":
            seen.add("old")
        else:
            assert pq.read_table(out).equals(expected)
            seen.add("whole")
            out.write_bytes(b"old")
    assert "old" in seen  # some runs were stopped before they finished


def test_a_signal_whose_own_handler_goes_on_leaves_the_output_to_finish(tmp_path: Path) -> None:
    """A program's own SIGTERM handler that does not stop it: the write goes on and ends whole."""
    child = textwrap.dedent(
        """
        import os, signal, sys
        from bugcontext.core._writer import atomic_output
        signal.signal(signal.SIGTERM, lambda signum, frame: print("handled", flush=True))
        with atomic_output(sys.argv[1]) as out:
            out.file.write(b"first ")
            os.kill(os.getpid(), signal.SIGTERM)
            out.file.write(b"second")
        print(signal.getsignal(signal.SIGTERM).__name__, flush=True)  # its own handler again
        """
    )
    target = tmp_path / "out.md"
    proc = subprocess.run(
        [sys.executable, "-c", child, str(target)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (0, "handled\n<lambda>\n"), proc.stderr
    assert target.read_text() == "first second" and temps(tmp_path) == []


def test_standard_output_by_name_is_written_in_place(parquet_in: Path) -> None:
    """``--out /dev/stdout`` with standard output a pipe (its name resolves to no file)."""
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", *rerank(parquet_in, "--out", "/dev/stdout")],
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    from bugcontext import build_table

    expected = build_table(pq.read_table(parquet_in), budget=40, group_by="task").decisions
    assert pq.read_table(pa.BufferReader(proc.stdout)).equals(expected)
    assert temps(parquet_in.parent) == []


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0, reason="needs root to become another user")
def test_another_user_never_replaces_a_file_it_may_not_write() -> None:
    """As an ordinary user (``nobody``): a file in a folder anyone may write, but the file
    itself not theirs to write, is refused (a rename would have replaced it); a folder where
    no temporary file can be made is a write failure, the file is not written in place."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="rc-writer-"))
    try:
        folder.chmod(0o777)
        theirs = folder / "theirs.md"
        theirs.write_text("root's")
        theirs.chmod(0o644)
        closed = folder / "closed"
        closed.mkdir()
        closed.chmod(0o755)
        (closed / "open.md").write_text("root's")
        (closed / "open.md").chmod(0o666)
        targets = [theirs, closed / "open.md", closed / "new.md", folder / "mine.md"]
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: become nobody, try each target, report
            try:
                os.setgid(65534)
                os.setuid(65534)
                got = []
                for target in targets:
                    try:
                        _writer.write_file(target, "nobody's")
                        got.append("written")
                    except OutputError as exc:
                        got.append(str(exc))
                os.write(write_end, json.dumps(got).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as pipe:
            got = json.loads(pipe.read())
        os.waitpid(pid, 0)
        hint = f"(no temporary file can be made in its folder {closed}; the file is never written in place)"
        assert got == [
            f"cannot write {theirs}: the file is read-only (it is not replaced)",
            f"cannot write {closed / 'open.md'}: Permission denied {hint}",
            f"cannot write {closed / 'new.md'}: Permission denied {hint}",
            "written",
        ]
        assert theirs.read_text() == "root's" and (closed / "open.md").read_text() == "root's"
        assert (folder / "mine.md").stat().st_uid == 65534
        assert sorted(p.name for p in folder.iterdir()) == ["closed", "mine.md", "theirs.md"]
        assert sorted(p.name for p in closed.iterdir()) == ["open.md"]
    finally:
        shutil.rmtree(folder)


# --- a trace killed mid-append: the fragment is cut before the next record ----------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('{"first": 1}\n{"seco', '{"first": 1}\n'),  # killed mid-line
        ('{"fir', ""),  # killed in the first line: no whole line at all
        ('{"first": 1}\n', '{"first": 1}\n'),  # whole: kept
        ("", ""),
    ],
    ids=["mid-line", "no-line", "whole", "empty"],
)
def test_an_append_cuts_an_unfinished_last_line_first(tmp_path: Path, before: str, after: str) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(before)
    _writer.append_file(trace, '{"next": 2}\n')
    assert trace.read_text() == after + '{"next": 2}\n'


def test_a_long_fragment_is_cut_back_to_the_last_line_break(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(b'{"first": 1}\n' + b"x" * 200_000)  # longer than one read back
    _writer.append_file(trace, b'{"next": 2}\n')
    assert trace.read_bytes() == b'{"first": 1}\n{"next": 2}\n'


def test_build_after_a_killed_append_gives_a_replayable_trace(project: dict[str, Path], capsys: Any) -> None:
    trace = project["folder"] / "trace.jsonl"
    assert main(["build", str(project["input"]), "--trace", str(trace)]) == 0
    whole = trace.read_bytes()
    trace.write_bytes(whole + whole[: len(whole) // 2])  # a second append killed half-way
    assert main(["build", str(project["input"]), "--trace", str(trace)]) == 0
    assert trace.read_bytes().count(b"\n") == 2 and trace.read_bytes().startswith(whole)
    capsys.readouterr()
    assert main(["replay", str(trace)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in out if line.startswith("turn")] == [["turn", "1:"], ["turn", "2:"]]


# --- outputs that are standard output or standard error -----------------------------------


def _cli(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args], timeout=TIMEOUT, check=False, **kwargs
    )


@pytest.mark.parametrize("name", ["/dev/stdout", "/proc/self/fd/1"])
def test_an_output_that_is_standard_output_is_refused(
    project: dict[str, Path], parquet_in: Path, name: str
) -> None:
    if not os.path.exists(name):
        pytest.skip(f"no {name}")
    folder = project["folder"]
    both = folder / "both.out"
    for args, label in (
        (context(project, "--report", name), "--report"),
        (context(project, "--trace", name), "--trace"),
        (["build", str(project["input"]), "--trace", name], "--trace"),
    ):
        with both.open("wb") as stdout:
            proc = _cli(*args, stdout=stdout, stderr=subprocess.PIPE)
        command = args[0]
        assert (proc.returncode, proc.stderr.decode()) == (
            2,
            f"bugcontext {command}: {label} {name} is the same file as standard output (its output "
            "would be lost or mixed with the other)\n",
        )
        assert both.read_bytes() == b""  # refused before any work
    # rerank writes nothing on standard output: --out /dev/stdout is its one writer there.
    with both.open("wb") as stdout:
        proc = _cli(*rerank(parquet_in, "--out", name), stdout=stdout, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(both).num_rows == 30


def test_an_output_that_is_standard_error_is_refused(project: dict[str, Path], parquet_in: Path) -> None:
    err = project["folder"] / "err.out"
    with err.open("wb") as stderr:
        proc = _cli(*rerank(parquet_in, "--out", "/dev/stderr"), stdout=subprocess.PIPE, stderr=stderr)
    assert proc.returncode == 2
    assert err.read_text() == (
        "bugcontext rerank: --out /dev/stderr is the same file as standard error (its output would be "
        "lost or mixed with the other)\n"
    )


def test_a_terminal_or_the_null_device_as_standard_output_is_no_conflict(project: dict[str, Path]) -> None:
    report = project["folder"] / "report.md"
    proc = _cli(
        *context(project, "--report", "/dev/stdout"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.returncode == 0, proc.stderr
    proc = _cli(*context(project, "--report", str(report)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.returncode == 0 and report.read_text().startswith("## Failure")


# --- outputs that are files of the repository ------------------------------------------------


@pytest.mark.parametrize("option", ["--report", "--trace"])
def test_context_refuses_an_output_that_is_a_file_of_the_repository(
    project: dict[str, Path], capsys: Any, option: str
) -> None:
    repo = project["repo"]
    (repo / "pkg").mkdir()
    (repo / "pkg" / "calc.py").write_text("x = 1\n")
    (repo / "link.md").symlink_to(repo / "pkg" / "calc.py")
    for target in (repo / "test_x.py", repo / "pkg" / "calc.py", repo / "link.md"):
        before = (repo / "test_x.py").read_bytes(), (repo / "pkg" / "calc.py").read_bytes()
        assert main(context(project, option, str(target))) == 2
        assert capsys.readouterr() == (
            "",
            f"bugcontext context: {option} {target} is a file of the repository {repo} (refusing to "
            "replace an existing file of the folder being read)\n",
        )
        assert ((repo / "test_x.py").read_bytes(), (repo / "pkg" / "calc.py").read_bytes()) == before


@pytest.mark.parametrize("option", ["--report", "--trace"])
def test_context_refuses_a_hard_link_to_a_file_of_the_repository(
    project: dict[str, Path], capsys: Any, option: str
) -> None:
    # A hard link outside the repository is the same file (device and inode) as the one inside.
    repo = project["repo"]
    link = project["folder"] / "hard.py"
    os.link(repo / "test_x.py", link)
    before = (repo / "test_x.py").read_bytes()
    assert main(context(project, option, str(link))) == 2
    assert capsys.readouterr() == (
        "",
        f"bugcontext context: {option} {link} is a file of the repository {repo} (refusing to "
        "replace an existing file of the folder being read)\n",
    )
    assert (repo / "test_x.py").read_bytes() == before
    assert os.stat(link).st_ino == os.stat(repo / "test_x.py").st_ino  # the link is not replaced


def test_context_writes_a_hard_linked_file_that_is_not_of_the_repository(project: dict[str, Path]) -> None:
    other = project["folder"] / "other.jsonl"
    other.write_text("")
    os.link(other, project["folder"] / "other-link.jsonl")
    assert main(context(project, "--trace", str(other))) == 0
    assert (project["folder"] / "other-link.jsonl").read_text().count("\n") == 1


def test_build_refuses_a_trace_that_is_a_file_of_the_verify_root(
    project: dict[str, Path], capsys: Any
) -> None:
    repo = project["repo"]
    link = project["folder"] / "hard.py"
    os.link(repo / "test_x.py", link)
    before = (repo / "test_x.py").read_bytes()
    for target in (repo / "test_x.py", link):
        assert main(["build", str(project["input"]), "--verify-root", str(repo), "--trace", str(target)]) == 2
        assert capsys.readouterr() == (
            "",
            f"bugcontext build: --trace {target} is a file of the --verify-root folder {repo} (refusing "
            "to replace an existing file of the folder being read)\n",
        )
    assert (repo / "test_x.py").read_bytes() == before


def test_context_writes_a_new_file_inside_the_repository(project: dict[str, Path]) -> None:
    repo = project["repo"]
    (repo / ".gitignore").write_text("*.md\n")
    assert main(context(project, "--report", str(repo / "report.md"))) == 0
    assert (repo / "report.md").read_text().startswith("## Failure")
    assert main(context(project, "--trace", str(repo / "new-trace.jsonl"))) == 0
    assert (repo / "new-trace.jsonl").read_text().count("\n") == 1


def _git_folder(repo: Path) -> dict[str, bytes]:
    """A ``.git`` folder as git makes one (the files the tests watch), and their content."""
    git = repo / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n\trepositoryformatversion = 0\n")
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    return {name: (git / name).read_bytes() for name in ("config", "HEAD")}


@pytest.mark.parametrize("option", ["--report", "--trace"])
def test_context_refuses_any_output_inside_the_git_folder(
    project: dict[str, Path], capsys: Any, option: str
) -> None:
    # The reader skips .git, so no file of it is read; an output there would still damage the
    # repository (its config, a new hook): existing or new, directly or through a link.
    repo, folder = project["repo"], project["folder"]
    before = _git_folder(repo)
    git = repo / ".git"
    (folder / "config-link").symlink_to(git / "config")
    (folder / "git-link").symlink_to(git)
    os.link(git / "HEAD", folder / "head-hard")
    for target in (
        git / "config",
        git / "HEAD",
        git / "hooks" / "pre-commit",
        git / "new.md",
        folder / "config-link",
        folder / "git-link" / "hooks" / "post-checkout",
        repo / "sub" / ".." / ".git" / "description",
    ):
        assert main(context(project, option, str(target))) == 2, target
        assert capsys.readouterr() == (
            "",
            f"bugcontext context: {option} {target} is inside the git folder {git} of the repository "
            f"{repo} (refusing to write there)\n",
        )
    assert main(context(project, option, str(folder / "head-hard"))) == 2
    assert capsys.readouterr().err == (
        f"bugcontext context: {option} {folder / 'head-hard'} is a file of the repository {repo} "
        "(refusing to replace an existing file of the folder being read)\n"
    )
    assert {name: (git / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in (git / "hooks").iterdir()) == [] and not (git / "new.md").exists()


def test_context_refuses_an_output_in_the_gitdir_of_a_git_file(project: dict[str, Path], capsys: Any) -> None:
    # A worktree's (or submodule's) .git is a file naming its git folder, elsewhere.
    repo, folder = project["repo"], project["folder"]
    gitdir = folder / "main.git" / "worktrees" / "repo"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    (folder / "main.git" / "config").write_text("[core]\n")
    (repo / ".git").write_text(f"gitdir: {gitdir}\n")
    for target, where in (
        (gitdir / "HEAD", gitdir),
        (folder / "main.git" / "config", folder / "main.git"),
        (folder / "main.git" / "hooks-new", folder / "main.git"),
    ):
        assert main(context(project, "--report", str(target))) == 2
        assert capsys.readouterr().err == (
            f"bugcontext context: --report {target} is inside the git folder {where} of the repository "
            f"{repo} (refusing to write there)\n"
        )
    assert (folder / "main.git" / "config").read_text() == "[core]\n"
    assert main(context(project, "--report", str(repo / ".git"))) == 2  # the .git file itself
    assert capsys.readouterr().err == (
        f"bugcontext context: --report {repo / '.git'} is a file of the repository {repo} "
        "(refusing to replace an existing file of the folder being read)\n"
    )
    assert (repo / ".git").read_text() == f"gitdir: {gitdir}\n"


@pytest.mark.parametrize("option", ["--report", "--trace"])
def test_context_refuses_an_existing_file_the_reader_does_not_read(
    project: dict[str, Path], capsys: Any, option: str
) -> None:
    # Ignored files, hidden and skipped folders: not read, still the repository's files.
    repo = project["repo"]
    (repo / ".gitignore").write_text("*.md\nbuild/\n")
    (repo / "build").mkdir()
    (repo / ".venv").mkdir()
    (repo / "node_modules").mkdir()
    targets = [
        repo / "notes.md",
        repo / "build" / "out.jsonl",
        repo / ".venv" / "pyvenv.cfg",
        repo / "node_modules" / "x.js",
        repo / ".gitignore",
    ]
    for target in targets[:-1]:
        target.write_text("keep me\n")
    for target in targets:
        before = target.read_bytes()
        assert main(context(project, option, str(target))) == 2
        assert capsys.readouterr() == (
            "",
            f"bugcontext context: {option} {target} is a file of the repository {repo} (refusing to "
            "replace an existing file of the folder being read)\n",
        )
        assert target.read_bytes() == before


def test_build_refuses_a_trace_inside_the_git_folder_of_the_verify_root(
    project: dict[str, Path], capsys: Any
) -> None:
    repo = project["repo"]
    before = _git_folder(repo)
    for target in (repo / ".git" / "config", repo / ".git" / "new.jsonl"):
        assert main(["build", str(project["input"]), "--verify-root", str(repo), "--trace", str(target)]) == 2
        assert capsys.readouterr() == (
            "",
            f"bugcontext build: --trace {target} is inside the git folder {repo / '.git'} of the "
            f"--verify-root folder {repo} (refusing to write there)\n",
        )
    assert (repo / ".git" / "config").read_bytes() == before["config"]
    assert not (repo / ".git" / "new.jsonl").exists()


# --- several outputs: all or nothing ---------------------------------------------------------


def test_rerank_with_a_summary_that_cannot_be_written_keeps_the_old_out(
    parquet_in: Path, capsys: Any
) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    out = parquet_in.parent / "out.parquet"
    out.write_bytes(b"old")
    assert main(rerank(parquet_in, "--out", str(out), "--summary", "/dev/full")) == 1
    assert capsys.readouterr().err == "bugcontext rerank: cannot write /dev/full: No space left on device\n"
    assert out.read_bytes() == b"old" and temps(parquet_in.parent) == []


def test_commit_all_replaces_none_when_one_cannot_be_flushed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("old a")
    second.write_text("old b")
    outputs = [_writer.AtomicFile(first), _writer.AtomicFile(second)]
    for out, text in zip(outputs, (b"new a", b"new b"), strict=True):
        out.file.write(text)
    real_fsync, calls = os.fsync, []

    def fsync_fails_second(fd: Any) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync_fails_second)
    with pytest.raises(OutputError) as caught:
        _writer.commit_all(outputs)
    monkeypatch.undo()
    assert str(caught.value) == f"cannot write {second}: No space left on device"
    assert (first.read_text(), second.read_text(), temps(tmp_path)) == ("old a", "old b", [])


def test_commit_all_puts_every_output_in_place(tmp_path: Path) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text("old a")
    outputs = [_writer.AtomicFile(first), _writer.AtomicFile(second)]
    for out, text in zip(outputs, (b"new a", b"new b"), strict=True):
        out.file.write(text)
    _writer.commit_all(outputs)
    assert (first.read_text(), second.read_text(), temps(tmp_path)) == ("new a", "new b", [])


# --- a folder swapped for a link while the output is written ------------------------------------


def test_a_folder_swapped_for_a_link_mid_write_does_not_redirect_the_output(tmp_path: Path) -> None:
    folder, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (elsewhere / "report.md").write_text("precious")
    with _writer.atomic_output(folder / "report.md") as out:
        out.file.write(b"new report")
        folder.rename(tmp_path / "moved")
        folder.symlink_to(elsewhere)
    assert (elsewhere / "report.md").read_text() == "precious"
    assert (tmp_path / "moved" / "report.md").read_text() == "new report"
    assert temps(elsewhere) == [] and temps(tmp_path / "moved") == []


# --- secrets in names and messages -------------------------------------------------------------

GITHUB = "ghp_" + "JBd0Kh8oOOL8dKLzdocJ2isAjIhKtJ0RlgLK"
AWS = "AKIA" + "IOSFODNN7ABCDEFQ"


def test_path_errors_of_every_command_are_redacted(
    project: dict[str, Path], parquet_in: Path, capsys: Any
) -> None:
    folder = project["folder"]
    missing = f"nope_{GITHUB}.txt"
    shown = "nope_[REDACTED: GitHubTokenDetector].txt"
    cases = [
        (
            ["context", "--repo", str(project["repo"]), "--pytest-log", missing],
            2,
            f"bugcontext context: cannot read {shown}: No such file or directory\n",
        ),
        (
            ["context", "--repo", f"{folder}/nope_{AWS}", "--pytest-log", str(project["log"])],
            2,
            f"bugcontext context: not a directory: {folder}/nope_[REDACTED: AWSKeyDetector]\n",
        ),
        (
            context(project, "--report", f"{folder}/nodir_{GITHUB}/x.md"),
            1,
            f"bugcontext context: cannot write {folder}/nodir_[REDACTED: GitHubTokenDetector]/x.md: "
            f"the folder {folder}/nodir_[REDACTED: GitHubTokenDetector] does not exist\n",
        ),
        (["build", missing], 2, f"bugcontext build: cannot read {shown}: No such file or directory\n"),
        (["replay", missing], 2, f"bugcontext replay: cannot read {shown}: No such file or directory\n"),
        (
            rerank(parquet_in, "--out", f"{folder}/nodir_{GITHUB}/o.parquet"),
            1,
            f"bugcontext rerank: cannot write {folder}/nodir_[REDACTED: GitHubTokenDetector]/o.parquet: "
            f"the folder {folder}/nodir_[REDACTED: GitHubTokenDetector] does not exist\n",
        ),
    ]
    for args, status, message in cases:
        assert main(args) == status, args
        err = capsys.readouterr().err
        assert err == message
        assert GITHUB not in err and AWS not in err


def test_replay_prints_paths_redacted(tmp_path: Path, capsys: Any) -> None:
    path = f"pkg/{GITHUB}.py"
    trace = tmp_path / "trace.jsonl"
    for budget in (100, 5):
        data = tmp_path / f"in{budget}.json"
        window = {"path": path, "start": 1, "end": 1, "content": "x = 1\n", "reason": "search", "score": 1}
        data.write_text(json.dumps({"candidates": [window], "max_chars": budget}))
        assert main(["build", str(data), "--trace", str(trace)]) == 0
    capsys.readouterr()
    assert main(["replay", str(trace)]) == 0
    out = capsys.readouterr().out
    assert GITHUB not in out
    assert "  dropped pkg/[REDACTED: GitHubTokenDetector].py:1-1 (budget)\n" in out


# --- eval: arguments before anything is made; --out only for a complete run ------------------


def test_eval_with_an_unknown_case_creates_nothing(tmp_path: Path, capsys: Any) -> None:
    cases = tmp_path / "cases.json"
    cases.write_text("[]")
    out = tmp_path / "results"
    assert (
        main(["eval", "--cases", str(cases), "--case", "nope", "--out", str(out), "--work", str(tmp_path)])
        == 2
    )
    assert capsys.readouterr().err.startswith("bugcontext eval: ")
    assert not out.exists()


def test_a_failed_eval_leaves_out_as_it_was(
    tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bugcontext.evaluation import command

    real = command.evaluate

    def none_prepared(cases: Any, work: Any, **kwargs: Any) -> Any:
        evaluation, _ = real([], work, **kwargs)
        return evaluation, [("case-1", "download failed")]

    monkeypatch.setattr(command, "evaluate", none_prepared)
    cases = tmp_path / "cases.json"
    cases.write_text("[]")
    out = tmp_path / "results"
    out.mkdir()
    (out / "eval.md").write_text("a good report\n")
    assert main(["eval", "--cases", str(cases), "--out", str(out), "--work", str(tmp_path / "work")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[-2:] == [
        "bugcontext eval: case-1: preparation failed: download failed",
        f"bugcontext eval: {out} left as it was: 1 case(s) not prepared",
    ]
    assert sorted(p.name for p in out.iterdir()) == ["eval.md"]
    assert (out / "eval.md").read_text() == "a good report\n"


RENAMES = textwrap.dedent(
    """
    import os, signal, sys
    from bugcontext.core import _writer

    real_rename = os.rename
    def rename_then_stopped(*args, **kwargs):
        real_rename(*args, **kwargs)
        os.kill(os.getpid(), int(sys.argv[3]))  # stopped between the two renames
    os.rename = rename_then_stopped
    outputs = [_writer.AtomicFile(sys.argv[1]), _writer.AtomicFile(sys.argv[2])]
    for out in outputs:
        out.file.write(b"new")
    _writer.commit_all(outputs)
    print("after the renames", flush=True)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_between_two_renames_waits_until_both_are_done(tmp_path: Path, signum: int) -> None:
    first, second = tmp_path / "out.parquet", tmp_path / "sum.parquet"
    first.write_text("old")
    second.write_text("old")
    proc = subprocess.run(
        [sys.executable, "-c", RENAMES, str(first), str(second), str(int(signum))],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if signum == signal.SIGTERM:
        assert proc.returncode == -signum
    else:  # KeyboardInterrupt once the signal is let through (Python then ends by SIGINT)
        assert proc.returncode == -signum and proc.stderr.rstrip().endswith("KeyboardInterrupt")
    assert proc.stdout == ""
    assert (first.read_text(), second.read_text(), temps(tmp_path)) == ("new", "new", [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"cannot read nope_{GITHUB}.txt", "cannot read nope_[REDACTED: GitHubTokenDetector].txt"),
        (f"a_{GITHUB}_b", "a_[REDACTED: GitHubTokenDetector]_b"),
        (f"x_{AWS}_y and z_{GITHUB}", "x_[REDACTED: AWSKeyDetector]_y and z_[REDACTED: GitHubTokenDetector]"),
        (f"{GITHUB}.py", "[REDACTED: GitHubTokenDetector].py"),  # standing alone: the detector's own
        ("tests_test_a.py_test_key_value-afe1978a07.md", "tests_test_a.py_test_key_value-afe1978a07.md"),
        ("plain message, no secret_in_it", "plain message, no secret_in_it"),
    ],
)
def test_redact_names_finds_secrets_glued_by_underscores(text: str, expected: str) -> None:
    from bugcontext.core._io import redact_names

    assert redact_names(text) == expected
    assert redact_names(expected) == expected


def test_a_trace_folder_swapped_for_a_link_does_not_redirect_the_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    (folder / "t.jsonl").write_text('{"first": 1}\n')
    (elsewhere / "t.jsonl").write_text("precious\n")
    real_open = _writer._open_folder

    def then_swapped(path: str, shown: str) -> int | None:
        fd = real_open(path, shown)  # the folder is opened; then it is swapped for a link
        folder.rename(tmp_path / "moved")
        folder.symlink_to(elsewhere)
        return fd

    monkeypatch.setattr(_writer, "_open_folder", then_swapped)
    _writer.append_file(folder / "t.jsonl", '{"next": 2}\n')
    assert (elsewhere / "t.jsonl").read_text() == "precious\n"
    assert (tmp_path / "moved" / "t.jsonl").read_text() == '{"first": 1}\n{"next": 2}\n'


def test_a_secret_glued_to_a_file_name_never_reaches_the_markdown(tmp_path: Path, capsys: Any) -> None:
    name = f"calc_{AWS}.py"
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / name).write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text(
        f"from pkg.calc_{AWS} import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    )
    log = tmp_path / "pytest.log"
    log.write_text(
        LOG.replace("test_x.py", "test_calc.py")
        .replace("test_x", "test_add")
        .replace("    def test_add():\n>       assert helper() == 2\nE       assert 1 == 2\n", "")
        .replace("test_calc.py:2:", f"pkg/{name}:2:")
    )
    assert main(["context", "--repo", str(repo), "--pytest-log", str(log), "--no-cache"]) == 0
    out, err = capsys.readouterr()
    assert "### pkg/calc_[REDACTED: AWSKeyDetector].py:1-2" in out
    assert AWS not in out and AWS not in err
    assert "bugcontext context: warning: 1 secret redacted from this output (reason policy): " in err
    window = {
        "path": f"pkg/{name}",
        "start": 1,
        "end": 1,
        "content": "x = 1\n",
        "reason": "search",
        "score": 1,
    }
    data = tmp_path / "in.json"
    data.write_text(json.dumps({"candidates": [window], "max_chars": 100}))
    assert main(["build", str(data), "--format", "markdown"]) == 0
    out, err = capsys.readouterr()
    assert "pkg/calc_[REDACTED: AWSKeyDetector].py" in out and AWS not in out
    note = "1 secret redacted from this output (reason policy): AWSKeyDetector"
    assert err == f"bugcontext build: warning: {note}\n"
