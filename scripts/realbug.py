#!/usr/bin/env python3
"""Prepare one real bug from PyPI and run ``bugcontext context`` on it.

Usage::

    python3 scripts/realbug.py [CASE_ID] [--max-chars N] [--format markdown|json]
                               [--engine native|reference] [--refresh] [--prepare-only] [--list]

A case (``bugcontext/evaluation/realbugs.json``, package data) names a PyPI package, a buggy
release, the fixed release and the regression test that fails on the buggy one. The preparation
(``bugcontext.evaluation.realbugs.prepare``)

1. downloads both source distributions (``pip download --no-binary :all:``),
2. unpacks the buggy release as ``repo/`` and lays the fixed release's test folder over it,
3. makes a virtual environment with the case's test dependencies and the buggy release,
4. runs the regression test inside ``repo/`` with ``pytest -rA --tb=long`` and keeps the
   log as ``failing.log`` and the JUnit XML report as ``failing.junit.xml`` (the test must
   fail: pytest exit code 1);

then the script runs ``bugcontext context --repo repo --pytest-log failing.log``, prints
the context, then one line per gold range (the lines the real fix changed) saying whether
the selected context covers it.

Everything is cached under ``work/realbugs/`` in the repository (git-ignored): downloads
in ``work/realbugs/sdists/``, the prepared case in ``work/realbugs/<case id>/``. A
prepared case is reused until ``--refresh``. Needs the Python version the case names
(``python3.11`` on ``PATH``, or the interpreter running this script if it is that
version) and the ``bugcontext`` package importable by the interpreter running this
script. Exit status: 0 when the case was prepared and the context printed, 1 when
preparation failed, 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bugcontext.evaluation.evaluate import DEFAULT_CASES
from bugcontext.evaluation.realbugs import PreparationError, gold_report, load_cases, prepare, select_cases

ROOT = Path(__file__).resolve().parent.parent
CASES = DEFAULT_CASES
WORK = ROOT / "work" / "realbugs"
DEFAULT_CASE = "ytdl_unescape_html"


def log(message: str) -> None:
    """Print a progress line on stderr (stdout carries the context only)."""
    print(f"[realbug] {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("case", nargs="?", default=DEFAULT_CASE, help="case id (default %(default)s)")
    parser.add_argument("--cases", type=Path, default=CASES, help="cases file")
    parser.add_argument("--max-chars", type=int, default=None, help="context budget (characters)")
    parser.add_argument("--format", choices=["markdown", "json"], default="markdown")
    parser.add_argument("--engine", choices=["native", "reference"], default="native")
    parser.add_argument("--query", default=None, help="extra search text")
    parser.add_argument("--refresh", action="store_true", help="prepare the case again")
    parser.add_argument(
        "--prepare-only", action="store_true", help="prepare the case (download, venv, failing log) and stop"
    )
    parser.add_argument("--list", action="store_true", help="list the case ids and exit")
    args = parser.parse_args(argv)

    cases = load_cases(args.cases)
    if args.list:
        for case in cases:
            print(
                f"{case['id']}\t{case['package']} {case['buggy_version']} -> "
                f"{case['fixed_version']}\t{case['failure_type']}"
            )
        return 0
    try:
        (case,) = select_cases(cases, [args.case])
    except KeyError as exc:
        parser.error(str(exc.args[0]))
    try:
        prepared = prepare(case, WORK, refresh=args.refresh, log=log)
    except PreparationError as exc:
        print(f"[realbug] {case['id']}: preparation failed: {exc}", file=sys.stderr)
        return 1
    if args.prepare_only:
        print(prepared.log)
        return 0

    from bugcontext.integrations.cli import result_json, run_context

    repo, pytest_log = prepared.repo, prepared.log
    command = [
        "bugcontext",
        "context",
        "--repo",
        os.path.relpath(repo),
        "--pytest-log",
        os.path.relpath(pytest_log),
        "--format",
        args.format,
        "--engine",
        args.engine,
    ]
    if args.max_chars is not None:
        command += ["--max-chars", str(args.max_chars)]
    if args.query:
        command += ["--query", args.query]
    log("$ " + " ".join(command))
    # What `bugcontext context` runs, called in process to check the result against the gold.
    # (Markdown output: the budget counts the rendered Markdown section, as the command's does.)
    cost = {"template": "markdown"} if args.format == "markdown" else None
    report = run_context(
        repo, pytest_log, query=args.query, max_chars=args.max_chars, engine=args.engine, cost=cost
    )
    if args.format == "json":
        print(result_json(report.result))
    else:
        print(report.markdown())
    notes = sys.stderr if args.format == "json" else sys.stdout
    print(
        f"{case['id']}: failure file {report.failure_file or '(none)'}; "
        f"{len(report.result.items)} windows selected, {report.result.used} of "
        f"{report.result.budget} characters",
        file=notes,
    )
    for line in gold_report(case, report.result.items):
        print(f"{case['id']}: {line}", file=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
