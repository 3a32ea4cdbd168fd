"""``bugcontext rerank``: build_table over a Parquet file read in record batches, groups
carried over batch boundaries, and ``bugcontext.batch.ray.rerank`` on a local Ray cluster."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bugcontext import build_table
from bugcontext.integrations.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def candidates(n_groups: int, per_group: int, seed: int = 7, key: str = "task") -> Any:
    """Rows grouped by key (contiguous), with overlaps, ties and every reason."""
    rng = random.Random(seed)
    rows: dict[str, list[Any]] = {
        c: [] for c in ("id", key, "path", "start", "end", "content", "reason", "score")
    }
    for g in range(n_groups):
        for i in range(per_group):
            start = rng.randint(1, 60)
            rows["id"].append(len(rows["id"]))
            rows[key].append(f"task-{g:04d}")
            rows["path"].append(f"src/m{rng.randint(0, 4)}.py")
            rows["start"].append(start)
            rows["end"].append(start + rng.randint(0, 12))
            rows["content"].append("é" * rng.randint(0, 40) + str(i))
            rows["reason"].append(rng.choice(["failure", "reference", "search"]))
            rows["score"].append(rng.choice([0.5, 1.0, 2.0, rng.random()]))
    return pa.table(rows)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_rerank_streams_batches_and_carries_groups_over(tmp_path: Path) -> None:
    table = candidates(30, 17)
    source = tmp_path / "in.parquet"
    # Row groups of 40 rows and batches of 25: groups of 17 rows span both boundaries.
    pq.write_table(table, source, row_group_size=40)
    out, summary = tmp_path / "out.parquet", tmp_path / "summary.parquet"
    args = ["rerank", str(source), "--group-by", "task", "--budget", "120", "--out", str(out)]
    assert main([*args, "--summary", str(summary), "--batch-rows", "25"]) == 0
    expected = build_table(table, budget=120, group_by="task")
    assert pq.read_table(out).equals(expected.decisions)
    assert pq.read_table(summary).equals(expected.groups)


def test_rerank_budget_column_and_one_batch(tmp_path: Path) -> None:
    table = candidates(5, 9)
    table = table.append_column("limit", pa.array([40 + 10 * (i // 9) for i in range(table.num_rows)]))
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, source)
    proc = cli("rerank", str(source), "--group-by", "task", "--budget", "limit", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress bar when standard error is not a terminal
    assert pq.read_table(out).equals(build_table(table, budget="limit", group_by="task").decisions)


def test_rerank_without_groups_is_one_build(tmp_path: Path) -> None:
    table = candidates(3, 10)
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, source)
    assert main(["rerank", str(source), "--budget", "200", "--out", str(out), "--batch-rows", "7"]) == 0
    assert pq.read_table(out).equals(build_table(table, budget=200).decisions)


def test_rerank_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    table = candidates(4, 10)
    start = table.column("start").to_pylist()
    start[33] = 0
    bad = table.set_column(table.column_names.index("start"), "start", pa.array(start))
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(bad, source)
    proc = cli(
        "rerank", str(source), "--group-by", "task", "--budget", "50", "--out", str(out), "--batch-rows", "8"
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "bugcontext rerank: candidate 33: field 'start': must be >= 1, got 0 "
        "(group 'task-0003', row 3 of the group)\n"
    )
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == [source]

    proc = cli("rerank", str(tmp_path / "missing.parquet"), "--budget", "5", "--out", str(out))
    assert proc.returncode == 2
    assert proc.stderr.startswith("bugcontext rerank: cannot read ")
    assert proc.stderr.count("\n") == 1

    proc = cli("rerank", str(source), "--group-by", "nope", "--budget", "5", "--out", str(out))
    assert (proc.returncode, proc.stderr) == (
        2,
        "bugcontext rerank: input field 'nope': is not a column of the table\n",
    )


def test_rerank_rejects_a_file_not_grouped_by_the_key(tmp_path: Path) -> None:
    table = candidates(3, 10)
    shuffled = table.take(pa.array([*range(0, 30, 2), *range(1, 30, 2)]))
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(shuffled, source)
    proc = cli(
        "rerank", str(source), "--group-by", "task", "--budget", "50", "--out", str(out), "--batch-rows", "8"
    )
    assert proc.returncode == 2
    assert proc.stderr == (
        "bugcontext rerank: the input is not grouped by task: key 'task-0000' appears again "
        "after its group ended (sort the file by task)\n"
    )
    assert not out.exists()


def test_ray_rerank_equals_build_table() -> None:
    ray = pytest.importorskip("ray")
    from bugcontext.batch.ray import rerank

    table = candidates(12, 15, seed=3)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        dataset = ray.data.from_arrow(table).repartition(4)
        out = rerank(dataset, group_by="task", budget=90, order_by="id", keep=["id"])
        got = pa.concat_tables(list(out.iter_batches(batch_format="pyarrow"))).sort_by("id")
    finally:
        ray.shutdown()
    expected = build_table(table, budget=90, group_by="task").decisions
    assert got.column("id").to_pylist() == table.column("id").to_pylist()
    assert got.drop_columns("id").to_pylist() == expected.to_pylist()


@pytest.mark.parametrize(
    "kind",
    ["int64", "uint8", "string", "large_string", "string_view", "dictionary"],
)
def test_rerank_reads_every_key_type_build_table_accepts(tmp_path: Path, kind: str) -> None:
    table = candidates(12, 9)
    names = table.column("task").to_pylist()
    order = {name: i for i, name in enumerate(dict.fromkeys(names))}
    if kind in ("int64", "uint8"):
        keys = pa.array([order[n] for n in names], getattr(pa, kind)())
    elif kind == "dictionary":
        keys = pa.array(names).dictionary_encode()
    else:
        keys = pa.array(names, getattr(pa, kind)())
    table = table.set_column(table.schema.get_field_index("task"), "task", keys)
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(table, source, row_group_size=20)
    read_back = pq.read_table(source)
    assert str(read_back.schema.field("task").type).startswith(kind)
    assert (
        main(
            [
                "rerank",
                str(source),
                "--group-by",
                "task",
                "--budget",
                "60",
                "--out",
                str(out),
                "--batch-rows",
                "7",
            ]
        )
        == 0
    )
    expected = build_table(read_back, budget=60, group_by="task")
    assert pq.read_table(out).equals(expected.decisions)
    assert expected.decisions.drop_columns("group").equals(
        build_table(table, budget=60, group_by="task").decisions.drop_columns("group")
    )
