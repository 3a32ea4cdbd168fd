"""Run the build benchmarks (or read their JSON) and print a Markdown table.

    python benches/report.py                  # run the build benchmarks, then print the table
    python benches/report.py -- -k 10k        # pass extra arguments to pytest
    python benches/report.py --json FILE      # only read a --benchmark-json file

Run from anywhere: pytest is started from the repository root, and the JSON is kept in
``.benchmarks/build.json`` there unless ``--out`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_SPEEDUP = 50.0  # native at least this many times faster than the reference ...
TARGET_AT = (10_000, "20%")  # ... at this (n, budget)
TARGET_FLOOR = 2.0  # native at most this many times the field-reading floor


def run_benchmarks(out: str, extra: list[str]) -> int:
    cmd = [
        "-m",
        "pytest",
        "benches/test_bench_build.py",
        "--benchmark-only",
        f"--benchmark-json={out}",
        *extra,
    ]
    print("Running: python " + " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run([sys.executable, *cmd], cwd=ROOT, stdout=sys.stderr).returncode


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if seconds >= scale or unit == "µs":
            value = seconds / scale
            digits = 0 if value >= 100 else 1 if value >= 10 else 2
            return f"{value:.{digits}f} {unit}"
    raise AssertionError("unreachable")


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def size_label(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def collect(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (n, budget) with the median of each implementation."""
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    for bench in data["benchmarks"]:
        info = bench["extra_info"]
        key = (info["n"], info["budget"])
        row = rows.setdefault(key, {"n": info["n"], "budget": info["budget"]})
        row["selected"] = info["selected"]
        row["max_chars"] = info["max_chars"]
        row[info["impl"]] = bench["stats"]["median"]
    order = {"2%": 0, "20%": 1, "100%": 2}
    result = sorted(rows.values(), key=lambda r: (r["n"], order.get(r["budget"], 9)))
    for row in result:
        native, ref, floor = row.get("native"), row.get("reference"), row.get("floor")
        row["ref_over_native"] = ref / native if ref and native else None
        row["native_over_floor"] = native / floor if native and floor else None
    return result


def render(data: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    machine = data.get("machine_info", {})
    cpu = machine.get("cpu", {})
    lines = [
        "Command: `"
        + data.get("command", "python -m pytest benches/test_bench_build.py --benchmark-only")
        + "`",
        "",
        f"Machine: {machine.get('python_implementation', '?')} "
        f"{machine.get('python_version', '?')}, {cpu.get('brand_raw', '?')}, "
        f"{cpu.get('count', '?')} CPUs; times are medians.",
        "",
        "| n | budget | selected | native | reference | floor | reference / native | native / floor |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {size_label(r['n'])} | {r['budget']} | {r['selected']:,} "
            f"| {fmt_time(r.get('native'))} | {fmt_time(r.get('reference'))} "
            f"| {fmt_time(r.get('floor'))} | {fmt_ratio(r['ref_over_native'])} "
            f"| {fmt_ratio(r['native_over_floor'])} |"
        )
    lines += ["", "Targets:"]
    at = [r for r in rows if (r["n"], r["budget"]) == TARGET_AT]
    n_at, budget_at = TARGET_AT
    if at and at[0]["ref_over_native"] is not None:
        speedup = at[0]["ref_over_native"]
        verdict = "met" if speedup >= TARGET_SPEEDUP else "NOT met"
        lines.append(
            f"- native >= {TARGET_SPEEDUP:g}x the reference at n={size_label(n_at)}, "
            f"budget {budget_at}: {speedup:.1f}x, {verdict}"
        )
    else:
        lines.append(f"- native vs reference at n={size_label(n_at)}, {budget_at}: not measured")
    floors = [r for r in rows if r["native_over_floor"] is not None]
    if floors:
        worst = max(floors, key=lambda r: r["native_over_floor"])
        misses = [r for r in floors if r["native_over_floor"] > TARGET_FLOOR]
        verdict = "met in every row" if not misses else f"NOT met in {len(misses)} of {len(floors)} rows"
        lines.append(
            f"- native <= {TARGET_FLOOR:g}x the floor: worst {worst['native_over_floor']:.2f}x "
            f"(n={size_label(worst['n'])}, budget {worst['budget']}), {verdict}"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="read this file instead of running")
    parser.add_argument("--out", default=".benchmarks/build.json", help="where the run writes its JSON")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    args = parser.parse_args()
    code = 0
    if args.json:
        path = Path(args.json)
    else:
        path = ROOT / args.out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)  # never report a stale run
        code = run_benchmarks(args.out, args.pytest_args)
        if code != 0:
            print(f"pytest exited with {code}", file=sys.stderr)
            if not path.exists():
                return code
    data = json.loads(path.read_text(encoding="utf-8"))
    print(render(data, collect(data)))
    return code


if __name__ == "__main__":
    sys.exit(main())
