"""``max_threads``: every way to ask for worker threads is clamped to the limit, said once on
standard error (``threads=`` of ``build_many`` and ``build_table``, ``--threads`` of ``build
--jsonl`` and ``rerank``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import bugcontext
import bugcontext.reference as reference
import pytest
from bugcontext import ContextBuilder, build_table
from bugcontext.core.limits import Limits, clamp_threads, cores

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TWO = Limits(max_threads=2)


def table(n: int = 40) -> Any:
    return pa.table(
        {
            "task": [f"t{i * 5 // n}" for i in range(n)],
            "path": [f"m{i % 3}.py" for i in range(n)],
            "start": [1 + i for i in range(n)],
            "end": [3 + i for i in range(n)],
            "content": ["x" * (i % 7) for i in range(n)],
            "reason": ["search"] * n,
            "score": [float(i % 4) for i in range(n)],
        }
    )


def one_input(i: int) -> dict[str, Any]:
    return {
        "candidates": [
            {"path": "a.py", "start": 1, "end": 2 + i, "content": "x", "reason": "search", "score": 1}
        ],
        "budget": 10,
    }


def said(requested: int, maximum: int) -> str:
    limit = f"over the limit max_threads = {maximum} threads: using {maximum}"
    return f"bugcontext: {requested} threads asked, {limit}\n"


def test_clamp_threads_rules(capfd: pytest.CaptureFixture[str]) -> None:
    assert clamp_threads(1, TWO) == 1
    assert clamp_threads(2, TWO) == 2
    assert clamp_threads(None, TWO) == min(cores(), 2)
    assert clamp_threads(5, Limits(max_threads=0)) == 1
    assert capfd.readouterr().err.count("max_threads = 1 threads") == 1
    assert clamp_threads(7919, TWO) == 2
    assert clamp_threads(7919, TWO) == 2
    err = capfd.readouterr().err
    assert err == said(7919, 2)


@pytest.mark.parametrize("build", [build_table, reference.build_table], ids=["native", "reference"])
def test_build_table_clamps(build: Any, capfd: pytest.CaptureFixture[str]) -> None:
    data = table()
    expected = build_table(data, budget=20, group_by="task", threads=1)
    assert build(data, budget=20, group_by="task", threads=100_003, limits=TWO) == expected
    assert build(data, budget=20, group_by="task", threads=100_003, limits=TWO) == expected
    assert capfd.readouterr().err.count("100003 threads asked") <= 1


def test_build_table_passes_the_clamped_count(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = bugcontext._core.build_table

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["threads"])
        return real(*args, **kwargs)

    monkeypatch.setattr(bugcontext._core, "build_table", spy)
    build_table(table(), budget=20, group_by="task", threads=100_019, limits=TWO)
    build_table(table(), budget=20, group_by="task", limits=Limits(max_threads=1))
    build_table(table(), budget=20, group_by="task", threads=1, limits=TWO)
    assert seen == [2, 1, 1]


def test_build_many_passes_the_clamped_count(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    real = bugcontext._core.build_many

    def spy(inputs: Any, check: Any, threads: int, return_errors: bool) -> Any:
        seen.append(threads)
        return real(inputs, check, threads, return_errors)

    monkeypatch.setattr(bugcontext._core, "build_many", spy)
    inputs = [one_input(i) for i in range(8)]
    builder = ContextBuilder(limits=TWO)
    assert builder.build_many(inputs, threads=100_021) == [builder.build(x) for x in inputs]
    assert seen == [2]
    assert reference.ContextBuilder(limits=TWO).build_many(inputs, threads=100_021) == [
        reference.ContextBuilder().build(x) for x in inputs
    ]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_command_line_threads_are_clamped_and_said_once(tmp_path: Path) -> None:
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table(), source)
    proc = run(
        "rerank", str(source), "--group-by", "task", "--budget", "20", "--threads", "100000",
        "--batch-rows", "7", "--limit", "max_threads=2", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stderr == "bugcontext: 100000 threads asked, over the limit max_threads = 2 threads: using 2\n"
    )
    assert pq.read_table(out).equals(build_table(table(), budget=20, group_by="task").decisions)
    lines = "".join(json.dumps(one_input(i)) + "\n" for i in range(5))
    proc = run("build", "--jsonl", "-", "--threads", "100000", "--limit", "max_threads=1", stdin=lines)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stderr == "bugcontext: 100000 threads asked, over the limit max_threads = 1 threads: using 1\n"
    )
    assert len(proc.stdout.splitlines()) == 5
