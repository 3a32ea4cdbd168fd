"""Run the adversarial-order benchmarks and print nanoseconds per candidate as a Markdown table.

    python benches/orders_report.py            # run, then print the table
    python benches/orders_report.py --json F   # only read a --benchmark-json file
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="read this --benchmark-json file instead of running")
    args = parser.parse_args()
    out = args.json or str(ROOT / ".benchmarks" / "orders.json")
    if not args.json:
        Path(out).parent.mkdir(exist_ok=True)
        cmd = ["-m", "pytest", "benches/test_bench_orders.py", "--benchmark-only", f"--benchmark-json={out}"]
        print("Running: python " + " ".join(cmd), file=sys.stderr, flush=True)
        code = subprocess.run([sys.executable, *cmd], cwd=ROOT, stdout=sys.stderr).returncode
        if code:
            return code
    data = json.loads(Path(out).read_text())
    table: dict[tuple[str, str], dict[int, float]] = {}
    sizes: set[int] = set()
    for bench in data["benchmarks"]:
        info = bench["extra_info"]
        table.setdefault((info["impl"], info["order"]), {})[info["n"]] = bench["stats"]["median"] / info["n"]
        sizes.add(info["n"])
    cols = sorted(sizes)
    print("| engine | order | " + " | ".join(f"n={n:,}" for n in cols) + " | max/min |")
    print("| --- | --- | " + " | ".join("---:" for _ in cols) + " | ---: |")
    for (impl, order), per in table.items():
        cells = [f"{per[n] * 1e9:.0f} ns" if n in per else "-" for n in cols]
        spread = max(per.values()) / min(per.values())
        print(f"| {impl} | {order} | " + " | ".join(cells) + f" | {spread:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
