"""Score `bugcontext context` on prepared cases of the language set, as a user would run it.

    python scripts/langbugs_context.py WORK [BUDGET]

For each case of ``python/bugcontext/evaluation/langbugs.json`` prepared under ``WORK`` (by
``bugcontext eval --cases .../langbugs.json --work WORK``), runs
``bugcontext context --repo WORK/<id>/repo --log WORK/<id>/failing.log --format json
--cost tokens --budget BUDGET`` (default 8000) and prints, per case and per language, whether every
gold file has a window in the context and whether every gold hunk's lines are all in it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from bugcontext.evaluation.langbugs import DEFAULT_LANG_CASES


def main() -> int:
    work = Path(sys.argv[1])
    budget = sys.argv[2] if len(sys.argv) > 2 else "8000"
    cases = json.loads(DEFAULT_LANG_CASES.read_text(encoding="utf-8"))
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    print("| case | language | gold files | gold hunks | tokens |")
    print("|---|---|---:|---:|---:|")
    for case in cases:
        folder = work / case["id"]
        if not (folder / "prepared.json").is_file():
            print(f"| {case['id']} | {case['language']} | not prepared | | |")
            continue
        command = [
            sys.executable, "-m", "bugcontext", "context", "--repo", str(folder / "repo"),
            "--log", str(folder / "failing.log"), "--format", "json", "--cost", "tokens", "--budget", budget,
        ]  # fmt: skip
        proc = subprocess.run(command, capture_output=True, text=True, check=True)
        result = json.loads(proc.stdout)
        held = {(i["path"], line) for i in result["items"] for line in range(i["start"], i["end"] + 1)}
        paths = {i["path"] for i in result["items"]}
        gold = case["gold"]
        files = {g["path"] for g in gold}
        files_in = len(files & paths)
        hunks_in = sum(all((g["path"], n) in held for n in range(g["start"], g["end"] + 1)) for g in gold)
        row = totals[case["language"]]
        row[0] += 1
        row[1] += files_in == len(files)
        row[2] += hunks_in == len(gold)
        cells = [
            case["id"],
            case["language"],
            f"{files_in}/{len(files)}",
            f"{hunks_in}/{len(gold)}",
            result["used"],
        ]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    print()
    print("| language | cases | every gold file | every gold hunk |")
    print("|---|---:|---:|---:|")
    totals["all"] = [sum(v[i] for v in totals.values()) for i in range(3)]
    for language, (n, f, h) in totals.items():
        print(f"| {language} | {n} | {f}/{n} | {h}/{n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
