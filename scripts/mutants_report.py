"""Per-file summary of a mutation-testing run (used by ``scripts/mutants.sh``).

    python3 scripts/mutants_report.py cargo DIR     # cargo-mutants: DIR/mutants.out/outcomes.json
    python3 scripts/mutants_report.py mutmut DIR    # mutmut: the *.py.meta files under DIR/mutants

Prints a Markdown table (mutants generated, killed, survived, timed out, unviable, not reached by
any selected test, not tested because the run was stopped or filtered, and the share of the
viable tested mutants killed, per file), then every surviving or timed-out mutant. Exit status 0.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

# mutmut's exit codes (mutmut/stats.py): 1 and 3 are kills, 0 a survivor.
_MUTMUT_STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    37: "unviable",  # caught by the type checker
    5: "no tests",
    33: "no tests",
    34: "skipped",
    None: "not checked",
}
_CARGO_STATUS = {
    "CaughtMutant": "killed",
    "MissedMutant": "survived",
    "Timeout": "timeout",
    "Unviable": "unviable",
}
COLUMNS = ("generated", "killed", "survived", "timeout", "unviable", "no tests", "other", "not tested")


def cargo(root: Path) -> tuple[dict[str, Counter[str]], list[str]]:
    data = json.loads((root / "mutants.out" / "outcomes.json").read_text())
    counts: dict[str, Counter[str]] = {}
    left: list[str] = []
    # Every mutant generated; one without an outcome was not tested (an interrupted run).
    for mutant in json.loads((root / "mutants.out" / "mutants.json").read_text()):
        counts.setdefault(mutant["file"], Counter()).update(("generated", "not tested"))
    for outcome in data["outcomes"]:
        scenario = outcome["scenario"]
        if not isinstance(scenario, dict) or "Mutant" not in scenario:
            continue  # the baseline
        mutant = scenario["Mutant"]
        status = _CARGO_STATUS.get(outcome["summary"], "other")
        count = counts.setdefault(mutant["file"], Counter())
        count["not tested"] -= 1
        count[status] += 1
        if status in ("survived", "timeout"):
            span = mutant.get("span", {}).get("start", {})
            where = f"{mutant['file']}:{span.get('line', '?')}"
            left.append(f"{status}: {where}: {mutant.get('name') or describe(mutant)}")
    return counts, left


def describe(mutant: dict[str, object]) -> str:
    function = mutant.get("function") or {}
    name = function.get("function_name", "?") if isinstance(function, dict) else "?"
    return f"replace in {name} with {mutant.get('replacement', '?')}"


def mutmut(root: Path) -> tuple[dict[str, Counter[str]], list[str]]:
    counts: dict[str, Counter[str]] = {}
    left: list[str] = []
    for meta in sorted((root / "mutants").rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        name = str(meta.relative_to(root / "mutants"))[: -len(".meta")]
        for key, code in data["exit_code_by_key"].items():
            status = _MUTMUT_STATUS.get(code, "other")
            count = counts.setdefault(name, Counter())
            count["generated"] += 1
            if status == "not checked":
                count["not tested"] += 1  # filtered out of this run, or the run was stopped
                continue
            count[status if status in COLUMNS else "other"] += 1
            if status in ("survived", "timeout"):
                left.append(f"{status}: {key}")
    return counts, left


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("cargo", "mutmut"):
        print(__doc__, file=sys.stderr)
        return 2
    counts, left = (cargo if argv[1] == "cargo" else mutmut)(Path(argv[2]))
    print("| file | " + " | ".join(COLUMNS) + " | killed of viable |")
    print("|---" * (len(COLUMNS) + 2) + "|")
    total: Counter[str] = Counter()
    for name, count in sorted(counts.items()):
        total.update(count)
        print(row(name, count))
    print(row("total", total))
    for line in left:
        print(line)
    return 0


def row(name: str, count: Counter[str]) -> str:
    viable = count["generated"] - count["unviable"] - count["not tested"]
    share = f"{100 * count['killed'] / viable:.1f}%" if viable else "-"
    return f"| {name} | " + " | ".join(str(count[c]) for c in COLUMNS) + f" | {share} |"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
