"""Benchmarks of ``build_table``: 1M candidates as 10k groups of 100 and as 100 groups of 10k,
costed in characters.

Run with ``python -m pytest benches/test_bench_table.py --benchmark-only -s`` (``-s`` shows the
ratio table printed at the end). Every shape is one pytest-benchmark group with these lines:

* ``table-1t`` / ``table-2t`` / ``table-all``: ``build_table(table, budget=..., group_by="task",
  threads=1 | 2 | None)`` on a ``pyarrow.Table`` (several record batches);
* ``build-loop``: a loop of ``bugcontext.build`` over the same groups, as lists of
  ``Candidate`` objects made once outside the timing;
* ``python``: the best pure-Python per-group builder we know over ``to_pylist()`` rows (rank
  by a key tuple, per-path sorted lists of selected windows searched with ``bisect``, no
  validation), the ``to_pylist()`` included;
* ``to_pylist``: ``table.to_pylist()`` alone.

Outside the timing every line's decisions are checked equal to ``build_table``'s. The memory
line runs ``build_table`` on the 1M-row table in a fresh process and reports its peak RSS
against the table's own Arrow buffers.
"""

from __future__ import annotations

import bisect
import functools
import os
import random
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")

import bugcontext  # noqa: E402
from bugcontext import build_table  # noqa: E402

N = 1_000_000
SHAPES = {"10k x 100": (10_000, 100), "100 x 10k": (100, 10_000)}
#: Budget per group as a share of its content: binding, so both omission kinds occur.
BUDGET_SHARE = 0.3
ROUNDS = {"table-1t": 5, "table-2t": 5, "table-all": 5, "build-loop": 2, "python": 1, "to_pylist": 2}
LINES = tuple(ROUNDS)
_TIMES: dict[tuple[str, str], float] = {}
#: Median CPU seconds of the process (all threads) per call: on a shared machine the wall time
#: also counts waiting for a core.
_CPU: dict[tuple[str, str], float] = {}
#: CPU seconds of each thread that worked during the median call of the 2-thread line, busiest
#: first (sampled from /proc while the call runs, as the pool's threads end with it).
_THREADS: dict[str, list[float]] = {}
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _thread_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of every live thread of this process, by thread id."""
    out: dict[int, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(tid)] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


class ThreadSampler:
    """Polls every thread's CPU time while a call runs (the call releases the GIL)."""

    def __init__(self) -> None:
        self.before = _thread_cpu()
        self.last: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        me = threading.get_native_id()
        while not self.stop.wait(0.01):
            self.last.update((t, c) for t, c in _thread_cpu().items() if t != me)

    def done(self) -> list[float]:
        self.stop.set()
        self.thread.join()
        used = [c - self.before.get(t, 0.0) for t, c in self.last.items()]
        return sorted((u for u in used if u > 0), reverse=True)


_WORDS = "user config path items result value node parser token buffer cache index count offset".split()


def make_rows(n_groups: int, per_group: int, seed: int = 1) -> dict[str, list[Any]]:
    """Candidate rows grouped by ``task``: per group about ``per_group / 10`` files, windows of
    1-12 lines of about 30 characters (a few non-ASCII), a third placed to overlap; reasons
    10/30/60% failure/reference/search; scores with ties. Content strings come from a pool of
    20,000 distinct texts (about 190 characters on average)."""
    rng = random.Random(seed)
    pool = []
    for i in range(20_000):
        lines = rng.randint(1, 12)
        words = [
            f"{rng.choice(_WORDS)}_{rng.randint(0, 99)} = {rng.choice(_WORDS)}({i})" for _ in range(lines)
        ]
        if i % 50 == 0:
            words.append("naïve → 日本語")
        pool.append("\n".join(words) + "\n")
    reasons = ["failure"] * 1 + ["reference"] * 3 + ["search"] * 6
    rows: dict[str, list[Any]] = {
        c: [] for c in ("task", "path", "start", "end", "content", "reason", "score")
    }
    files = max(1, per_group // 10)
    for g in range(n_groups):
        task = f"task-{g:05d}"
        for _ in range(per_group):
            content = pool[rng.randrange(len(pool))]
            span = content.count("\n")
            start = rng.randint(1, 400)
            rows["task"].append(task)
            rows["path"].append(f"src/pkg_{g % 97}/mod_{rng.randrange(files)}.py")
            rows["start"].append(start)
            rows["end"].append(start + span - 1)
            rows["content"].append(content)
            rows["reason"].append(rng.choice(reasons))
            score = rng.gammavariate(2.0, 2.0)
            rows["score"].append(round(score, 1) if rng.random() < 0.2 else score)
    return rows


@functools.lru_cache(maxsize=1)
def shape_data(shape: str) -> dict[str, Any]:
    n_groups, per_group = SHAPES[shape]
    rows = make_rows(n_groups, per_group)
    table = pa.table(
        {
            "task": pa.array(rows["task"], pa.string()),
            "path": pa.array(rows["path"], pa.string()),
            "start": pa.array(rows["start"], pa.int32()),
            "end": pa.array(rows["end"], pa.int32()),
            "content": pa.array(rows["content"], pa.large_string()),
            "reason": pa.array(rows["reason"], pa.string()).dictionary_encode(),
            "score": pa.array(rows["score"], pa.float64()),
        }
    )
    table = pa.Table.from_batches(table.to_batches(max_chunksize=65_536))
    mean_chars = sum(len(c) for c in rows["content"][:per_group]) / per_group
    budget = int(BUDGET_SHARE * mean_chars * per_group)
    return {"table": table, "rows": rows, "budget": budget, "groups": n_groups, "per_group": per_group}


@functools.lru_cache(maxsize=1)
def candidate_groups(shape: str) -> list[list[Any]]:
    data = shape_data(shape)
    rows, per = data["rows"], data["per_group"]
    fields = ("path", "start", "end", "content", "reason", "score")
    cands = [bugcontext.Candidate(*values) for values in zip(*(rows[f] for f in fields), strict=True)]
    return [cands[i : i + per] for i in range(0, len(cands), per)]


GROUP = {"reference": 1, "failure": 2, "search": 3}


def python_build(rows: list[dict[str, Any]], budget: int) -> list[tuple[int, int, str | None, int | None]]:
    """Per row: (rank, order or -1, omission, overlaps): ranking by a key tuple, selection with
    per-path sorted start and end lists searched by bisect."""
    order = sorted(range(len(rows)), key=lambda i: (GROUP[rows[i]["reason"]], -rows[i]["score"], i))
    out: list[Any] = [None] * len(rows)
    windows: dict[str, tuple[list[int], list[int], list[int]]] = {}
    used = 0
    chosen = 0
    for rank, i in enumerate(order):
        row = rows[i]
        starts, ends, owners = windows.setdefault(row["path"], ([], [], []))
        start, end = row["start"], row["end"]
        pos = bisect.bisect_left(ends, start)
        if pos < len(starts) and starts[pos] <= end:
            out[i] = (rank, -1, "overlap", owners[pos])
            continue
        cost = len(row["content"])
        if used + cost > budget:
            out[i] = (rank, -1, "budget", None)
            continue
        starts.insert(pos, start)
        ends.insert(pos, end)
        owners.insert(pos, i)
        used += cost
        out[i] = (rank, chosen, None, None)
        chosen += 1
    return out


def python_table(table: Any, per_group: int, budget: int) -> list[Any]:
    rows = table.to_pylist()
    out: list[Any] = []
    for lo in range(0, len(rows), per_group):
        out.extend(python_build(rows[lo : lo + per_group], budget))
    return out


def build_loop(groups: list[list[Any]], budget: int) -> list[Any]:
    return [bugcontext.build({"candidates": cands, "max_chars": budget}) for cands in groups]


@functools.lru_cache(maxsize=2)
def expected(shape: str) -> Any:
    data = shape_data(shape)
    return build_table(data["table"], budget=data["budget"], group_by="task").decisions


def check(line: str, shape: str, got: Any) -> None:
    want = expected(shape)
    if line.startswith("table"):
        assert got.decisions.equals(want)
    elif line == "build-loop":
        orders = want.column("order").to_pylist()
        per = shape_data(shape)["per_group"]
        for g, result in enumerate(got[:50]):
            base = g * per
            mine = sorted((orders[base + i], i) for i in range(per) if orders[base + i] is not None)
            assert [i for _, i in mine] == list(result.selected)
    elif line == "python":
        ranks, orders = want.column("rank").to_pylist(), want.column("order").to_pylist()
        omissions, overlaps = want.column("omission").to_pylist(), want.column("overlaps").to_pylist()
        mine = [
            (r, -1 if o is None else o, m, v)
            for r, o, m, v in zip(ranks, orders, omissions, overlaps, strict=True)
        ]
        assert got == mine
    else:
        assert len(got) == N


@pytest.fixture(scope="module", autouse=True)
def ratio_table() -> Any:
    yield
    if not _TIMES:
        return
    cores = os.cpu_count()
    print(f"\nos.cpu_count() = {cores}; {N:,} candidates, chars cost")
    print("| shape | line | wall s | CPU s | candidates/s (wall) | per CPU-second | vs table-1t (CPU) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for shape in SHAPES:
        base = _CPU.get((shape, "table-1t"))
        for line in LINES:
            wall, cpu = _TIMES.get((shape, line)), _CPU.get((shape, line))
            if wall is None or cpu is None:
                continue
            ratio = f"{cpu / base:.1f}x" if base else "-"
            rates = f"{N / wall:,.0f} | {N / cpu:,.0f}"
            print(f"| {shape} | {line} | {wall:.3f} | {cpu:.3f} | {rates} | {ratio} |")
        one, two = _TIMES.get((shape, "table-1t")), _TIMES.get((shape, "table-2t"))
        if one and two:
            print(f"| {shape} | scaling 2 threads / 1 thread (wall) | {one / two:.2f}x | | | | |")
        per_thread = _THREADS.get(shape)
        if per_thread:
            shown = ", ".join(f"{c:.3f}" for c in per_thread)
            print(f"| {shape} | table-2t CPU s per thread | {shown} | | | | |")


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_table(benchmark: Any, shape: str, line: str) -> None:
    data = shape_data(shape)
    table, budget, per = data["table"], data["budget"], data["per_group"]
    benchmark.group = f"build_table {shape}"
    benchmark.extra_info.update(line=line, n=N, groups=data["groups"], budget=budget, cpus=os.cpu_count())
    calls = {
        "table-1t": lambda: build_table(table, budget=budget, group_by="task", threads=1),
        "table-2t": lambda: build_table(table, budget=budget, group_by="task", threads=2),
        "table-all": lambda: build_table(table, budget=budget, group_by="task"),
        "build-loop": functools.partial(
            build_loop, candidate_groups(shape) if line == "build-loop" else [], budget
        ),
        "python": lambda: python_table(table, per, budget),
        "to_pylist": table.to_pylist,
    }
    cpu: list[float] = []
    threads: list[list[float]] = []
    call = calls[line]

    def timed() -> Any:
        sampler = ThreadSampler() if line == "table-2t" else None
        before = time.process_time()
        out = call()
        cpu.append(time.process_time() - before)
        if sampler is not None:
            threads.append(sampler.done())
        return out

    got = benchmark.pedantic(timed, rounds=ROUNDS[line], warmup_rounds=0)
    check(line, shape, got)
    _TIMES[(shape, line)] = benchmark.stats.stats.median
    _CPU[(shape, line)] = statistics.median(cpu)
    if threads:
        _THREADS[shape] = threads[sorted(range(len(cpu)), key=cpu.__getitem__)[len(cpu) // 2]]
    benchmark.extra_info["cpu_seconds"] = _CPU[(shape, line)]


MEMORY_SCRIPT = textwrap.dedent(
    """
    import gc, resource, sys
    sys.path.insert(0, {benches!r})
    import pyarrow as pa
    from bugcontext import build_table
    from test_bench_table import shape_data

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()

    data = shape_data({shape!r})
    del data["rows"]
    gc.collect()
    table = data["table"]
    buffers = table.get_total_buffer_size()
    after_table = rss()
    result = build_table(table, budget=data["budget"], group_by="task")
    after_build = rss()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(buffers, after_table, after_build, peak, result.decisions.num_rows)
    """
)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_table_memory(shape: str) -> None:
    """RSS growth of build_table over a 1M-row table, against the table's own buffers."""
    benches = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT.format(benches=benches, shape=shape)],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    buffers, after_table, after_build, peak, rows = map(int, proc.stdout.split())
    assert rows == N
    growth = after_build - after_table
    print(
        f"\nmemory {shape}: table buffers {buffers / 2**20:.0f} MiB; RSS after the table "
        f"{after_table / 2**20:.0f} MiB, after build_table {after_build / 2**20:.0f} MiB "
        f"(+{growth / 2**20:.0f} MiB = {growth / buffers:.1%} of the buffers; "
        f"(table + build_table growth) / buffers = {(buffers + growth) / buffers:.2f}x); "
        f"peak RSS {peak / 2**20:.0f} MiB"
    )
