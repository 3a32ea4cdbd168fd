#!/usr/bin/env python3
"""Prepare one real bug from PyPI and run ``repo-context context`` on it.

Usage::

    python3 scripts/realbug.py [CASE_ID] [--max-chars N] [--format markdown|json]
                               [--engine native|reference] [--refresh] [--list]

A case (``data/realbugs/cases.json``) names a PyPI package, a buggy release, the fixed
release and the regression test that fails on the buggy one. The script

1. downloads both source distributions (``pip download --no-binary :all:``),
2. unpacks the buggy release as ``repo/`` and lays the fixed release's test folder over it,
3. makes a virtual environment with the case's test dependencies and the buggy release,
4. runs the regression test inside ``repo/`` with ``pytest -rA --tb=long`` and keeps the
   log as ``failing.log`` (the test must fail: pytest exit code 1),
5. runs ``repo-context context --repo repo --pytest-log failing.log`` and prints the
   context, then one line per gold range (the lines the real fix changed) saying whether
   the selected context covers it.

Everything is cached under ``work/realbugs/`` in the repository (git-ignored): downloads
in ``work/realbugs/sdists/``, the prepared case in ``work/realbugs/<case id>/``. A
prepared case is reused until ``--refresh``. Needs the Python version the case names
(``python3.11`` on ``PATH``, or the interpreter running this script if it is that
version) and the ``repo_context`` package importable by the interpreter running this
script. Exit status: 0 when the case was prepared and the context printed, 1 when
preparation failed, 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "data" / "realbugs" / "cases.json"
WORK = ROOT / "work" / "realbugs"
DEFAULT_CASE = "ytdl_unescape_html"


def log(message: str) -> None:
    """Print a progress line on stderr (stdout carries the context only)."""
    print(f"[realbug] {message}", file=sys.stderr, flush=True)


def load_case(cases_file: Path, case_id: str) -> dict[str, Any]:
    """Return the case named ``case_id``; exit 2 naming the known ids if there is none."""
    cases: list[dict[str, Any]] = json.loads(cases_file.read_text(encoding="utf-8"))
    for case in cases:
        if case["id"] == case_id:
            return case
    known = ", ".join(c["id"] for c in cases)
    sys.exit(f"unknown case {case_id!r}; known cases: {known}")


def find_python(version: str) -> str:
    """Return an interpreter of ``version`` (``"3.11"``): ``python3.11`` or this one."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found:
        return found
    raise SystemExit(f"this case needs Python {version}; no python{version} on PATH")


def run(cmd: Sequence[str], **kwargs: Any) -> None:
    """Run ``cmd``; raise ``SystemExit`` with its output tail if it fails."""
    proc = subprocess.run(list(cmd), capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-20:]
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}\n" + "\n".join(tail))


def download_sdist(package: str, version: str) -> Path:
    """Download the sdist of ``package==version`` once (cached) and return the archive."""
    dest = WORK / "sdists" / f"{package}-{version}"
    archives = [p for p in dest.glob("*") if p.name.endswith((".tar.gz", ".zip", ".tar.bz2"))]
    if not archives:
        log(f"downloading {package}=={version} (sdist)")
        dest.mkdir(parents=True, exist_ok=True)
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"{package}=={version}",
                "-d",
                str(dest),
            ]
        )
        archives = [p for p in dest.glob("*") if p.name.endswith((".tar.gz", ".zip", ".tar.bz2"))]
    if len(archives) != 1:
        raise SystemExit(f"expected one sdist for {package}=={version} in {dest}, found {archives}")
    return archives[0]


def unpack(archive: Path, dest: Path) -> None:
    """Unpack an sdist into ``dest``, dropping its single top-level folder."""
    tmp = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp)
    else:
        with tarfile.open(archive) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(tmp, filter="data")
            else:  # Python without extraction filters (before 3.10.12 / 3.11.4)
                tf.extractall(tmp)
    (top,) = list(tmp.iterdir())
    shutil.rmtree(dest, ignore_errors=True)
    top.rename(dest)
    tmp.rmdir()


def prepare(case: dict[str, Any], refresh: bool) -> Path:
    """Prepare ``case`` under ``work/realbugs/<id>/`` and return that folder.

    The folder holds ``repo/`` (buggy source with the fixed tests), ``venv/`` and
    ``failing.log``; a complete earlier preparation (marked by ``prepared.json``) is reused.
    """
    out = WORK / case["id"]
    marker = out / "prepared.json"
    if marker.exists() and not refresh:
        log(f"using the prepared case in {out.relative_to(ROOT)}")
        return out
    python = find_python(case["python"])
    buggy = download_sdist(case["package"], case["buggy_version"])
    fixed = download_sdist(case["package"], case["fixed_version"])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    repo, fixed_tree = out / "repo", out / "fixed"
    unpack(buggy, repo)
    unpack(fixed, fixed_tree)
    test_dir = case["test_dir"]
    shutil.rmtree(repo / test_dir, ignore_errors=True)
    shutil.copytree(fixed_tree / test_dir, repo / test_dir)
    shutil.rmtree(fixed_tree)

    log(f"creating a virtual environment with {python}")
    run([python, "-m", "venv", str(out / "venv")])
    venv_python = out / "venv" / "bin" / "python"
    log(f"installing {' '.join(case['test_deps'])} {case['package']}=={case['buggy_version']}")
    run(
        [
            str(venv_python),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *case["test_deps"],
            f"{case['package']}=={case['buggy_version']}",
        ]
    )

    log(f"running {case['test_node_id']}")
    source_root = repo / case["source_root"] if case["source_root"] else repo
    env = dict(os.environ, PYTHONPATH=str(source_root))
    env.pop("PYTHONHOME", None)
    with open(out / "failing.log", "w", encoding="utf-8") as fh:
        proc = subprocess.run(
            [
                str(venv_python),
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-rA",
                "--tb=long",
                case["test_node_id"],
            ],
            cwd=repo,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if proc.returncode != 1:
        raise SystemExit(
            f"the regression test should fail (pytest exit 1), got exit {proc.returncode}; "
            f"see {(out / 'failing.log').relative_to(ROOT)}"
        )
    marker.write_text(json.dumps({"case": case["id"], "pytest_exit": 1}) + "\n", encoding="utf-8")
    return out


def gold_report(case: dict[str, Any], items: Sequence[Any]) -> list[str]:
    """One line per gold range: covered by a selected item, partly covered, or missing."""
    lines = []
    for gold in case["gold"]:
        where = f"{gold['path']}:{gold['start']}-{gold['end']}"
        hits = [
            it
            for it in items
            if it.path == gold["path"] and it.start <= gold["end"] and gold["start"] <= it.end
        ]
        full = [it for it in hits if it.start <= gold["start"] and gold["end"] <= it.end]
        if full:
            it = full[0]
            lines.append(f"gold {where}: IN the context ({it.reason} window {it.path}:{it.start}-{it.end})")
        elif hits:
            it = hits[0]
            lines.append(
                f"gold {where}: PARTLY in the context ({it.reason} window {it.path}:{it.start}-{it.end})"
            )
        else:
            lines.append(f"gold {where}: NOT in the context")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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

    if args.list:
        for case in json.loads(args.cases.read_text(encoding="utf-8")):
            print(
                f"{case['id']}\t{case['package']} {case['buggy_version']} -> "
                f"{case['fixed_version']}\t{case['failure_type']}"
            )
        return 0
    case = load_case(args.cases, args.case)
    try:
        out = prepare(case, args.refresh)
    except SystemExit as exc:
        print(f"[realbug] {case['id']}: preparation failed: {exc}", file=sys.stderr)
        return 1
    if args.prepare_only:
        print(out / "failing.log")
        return 0

    from repo_context.cli import result_json, run_context

    repo, pytest_log = out / "repo", out / "failing.log"
    command = [
        "repo-context",
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
    # What `repo-context context` runs, called in process to check the result against the gold.
    report = run_context(repo, pytest_log, query=args.query, max_chars=args.max_chars, engine=args.engine)
    if args.format == "json":
        print(result_json(report.result))
    else:
        print(report.markdown())
    notes = sys.stderr if args.format == "json" else sys.stdout
    print(
        f"{case['id']}: failure file {report.failure_file or '(none)'}; "
        f"{len(report.result.items)} windows selected, {report.result.used_chars} of "
        f"{report.max_chars} characters",
        file=notes,
    )
    for line in gold_report(case, report.result.items):
        print(f"{case['id']}: {line}", file=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
