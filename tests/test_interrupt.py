"""Ctrl-C (SIGINT) during a large build raises ``KeyboardInterrupt`` promptly, in both ``build``
and ``build_many``, and leaves the builder whole (its token cache included).

Each case runs in a child process that first times the whole build, then starts the same build
again on a fresh builder and is sent SIGINT shortly after; the interrupted build must end well
before a whole build would (a comparison within one process, not an absolute time).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """
    import sys, time
    import bugcontext as rc

    mode, n = sys.argv[1], int(sys.argv[2])
    cands = [
        {"path": f"p{i % 1000}.py", "start": i // 1000 + 1, "end": i // 1000 + 1,
         "content": f"value_{i} = {i} * 2\\n", "reason": "search", "score": float(i % 97)}
        for i in range(n)
    ]
    if mode == "tokens":
        make = lambda: rc.ContextBuilder(cost=rc.Cost(unit="tokens", template="markdown"))
        data = {"candidates": cands, "budget": 50_000}
    else:
        make = rc.ContextBuilder
        data = {"candidates": cands, "max_chars": 200_000}
    if mode == "many":
        step = n // 8
        batch = [{"candidates": cands[i:i + step], "max_chars": 25_000} for i in range(0, n, step)]
        run = lambda b: b.build_many(batch, threads=2)
    else:
        run = lambda b: b.build(data)

    t0 = time.perf_counter()
    run(make())
    print("full", time.perf_counter() - t0, flush=True)

    builder = make()
    print("go", flush=True)
    t0 = time.perf_counter()
    try:
        run(builder)
        print("finished", time.perf_counter() - t0, flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - t0, flush=True)
    # Nothing half-written: the interrupted builder still gives a fresh builder's result.
    small = {**data, "candidates": cands[:5000]}
    print("whole", builder.build(small) == make().build(small), flush=True)
    """
)


@pytest.mark.parametrize(("mode", "n"), [("chars", 1_500_000), ("tokens", 300_000), ("many", 1_500_000)])
def test_sigint_interrupts_a_large_build_promptly(mode: str, n: int) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(n)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        full_line = proc.stdout.readline().split()
        assert full_line[0] == "full", full_line
        full = float(full_line[1])
        assert proc.stdout.readline().strip() == "go"
        time.sleep(min(0.05, full / 20))
        proc.send_signal(signal.SIGINT)
        kind, elapsed = proc.stdout.readline().split()
        assert kind == "interrupted", (kind, elapsed, full)
        # Honoured well before the build would have ended (it takes `full` seconds).
        assert float(elapsed) < full / 2, (elapsed, full)
        assert proc.stdout.readline().strip() == "whole True"
        assert proc.wait(timeout=300) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# --- Ctrl-C on the command line: one line on standard error, exit 130 ------------------------


def _interrupt_on_fifo(tmp_path: Path, args: list[str], fifo: Path) -> subprocess.CompletedProcess[str]:
    """Run ``bugcontext ARGS`` that reads the named pipe ``fifo``; once it has opened it (our
    open for writing returns then) and waits for data, send SIGINT."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bugcontext", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        fd = os.open(fifo, os.O_WRONLY)  # returns when the command opened the pipe to read it
        try:
            time.sleep(0.3)  # into its read
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        finally:
            os.close(fd)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize("command", ["build", "context", "replay", "eval"])
def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    repo = tmp_path / "repo"
    repo.mkdir()
    args = {
        "build": ["build", str(fifo)],
        "context": ["context", "--repo", str(repo), "--pytest-log", str(fifo), "--no-cache"],
        "replay": ["replay", str(fifo)],
        "eval": ["eval", "--cases", str(fifo), "--work", str(tmp_path / "work")],
    }[command]
    done = _interrupt_on_fifo(tmp_path, args, fifo)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", f"bugcontext {command}: interrupted\n")


def test_ctrl_c_stops_the_mcp_server_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bugcontext", "mcp", "--root", str(tmp_path), "--no-cache"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        assert '"id":1' in proc.stdout.readline().replace(" ", "")  # serving
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, err) == (130, "bugcontext mcp: interrupted\n")
