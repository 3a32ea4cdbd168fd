"""Real bugs from PyPI: the cases, their preparation and their gold line ranges.

A case (one object of ``realbugs.json`` beside this module) names a PyPI package, a buggy release, the
fixed release, the regression test that fails on the buggy one and the *gold* line ranges (the
lines the real fix changed). :func:`prepare` makes a case ready to build a context for:

1. downloads both source distributions (``pip download --no-binary :all:``), once;
2. unpacks the buggy release as ``repo/`` and lays the fixed release's test folder over it;
3. makes a virtual environment with the case's test dependencies and the buggy release;
4. runs the regression test inside ``repo/`` with ``pytest -rA --tb=long`` (``repo/`` as the rootdir
   and the case's own configuration, or an empty one: never an enclosing project's) and keeps the log as
   ``failing.log`` and the JUnit XML report as ``failing.junit.xml`` (the test must fail:
   pytest exit code 1).

Everything lives under one work folder: downloads in ``<work>/sdists/``, the prepared case in
``<work>/<case id>/``, reused (marked complete by ``prepared.json``) until a refresh.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bugcontext.core._io import read_capped
from bugcontext.core._writer import write_file
from bugcontext.evaluation.preparation import (
    PreparationError,
    PreparedCase,
    extract_tar,
    make_venv,
    quiet,
    reused,
    run_checked,
    run_failing_pytest,
)

__all__ = [
    "GoldRange",
    "PreparationError",
    "PreparedCase",
    "case_dir",
    "download_sdist",
    "find_python",
    "gold_ranges",
    "gold_report",
    "load_cases",
    "prepare",
    "select_cases",
    "unpack",
]

_ARCHIVES = (".tar.gz", ".zip", ".tar.bz2")


@dataclass(frozen=True)
class GoldRange:
    """Lines ``start..end`` (1-based, closed) of ``path`` that the real fix changed."""

    path: str
    start: int
    end: int


def load_cases(cases_file: str | Path) -> list[dict[str, Any]]:
    """The cases of a cases file (a JSON list of case objects, each with an ``id``).

    Raises ``OSError`` if it cannot be read, ``ResourceLimitError`` if it is larger than
    ``Limits.max_input_bytes`` (:mod:`bugcontext.core.limits`), ``ValueError`` if it is not such a
    list."""
    data = read_capped(cases_file, "max_input_bytes", field="cases")
    cases = json.loads(data.decode("utf-8"))
    if not isinstance(cases, list) or not all(isinstance(c, dict) and "id" in c for c in cases):
        raise ValueError(f"{cases_file}: expected a JSON list of cases, each with an 'id'")
    return cases


def select_cases(cases: Sequence[dict[str, Any]], ids: Iterable[str] | None) -> list[dict[str, Any]]:
    """The cases named by ``ids`` in that order (all of them when ``ids`` is ``None`` or empty).

    Raises ``KeyError`` naming an unknown id and the known ones.
    """
    wanted = list(ids or [])
    if not wanted:
        return list(cases)
    by_id = {case["id"]: case for case in cases}
    chosen = []
    for case_id in wanted:
        if case_id not in by_id:
            known = ", ".join(by_id)
            raise KeyError(f"unknown case {case_id!r}; known cases: {known}")
        chosen.append(by_id[case_id])
    return chosen


def gold_ranges(case: dict[str, Any]) -> tuple[GoldRange, ...]:
    """The case's gold line ranges."""
    return tuple(GoldRange(str(g["path"]), int(g["start"]), int(g["end"])) for g in case.get("gold", []))


def find_python(version: str) -> str:
    """An interpreter of ``version`` (``"3.11"``): this one if it is that version, else
    ``python3.11`` on ``PATH``. Raises :class:`PreparationError` if there is none."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found:
        return found
    raise PreparationError(f"this case needs Python {version}; no python{version} on PATH")


def _archives(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*") if p.name.endswith(_ARCHIVES))


def download_sdist(package: str, version: str, work: Path, log: Callable[[str], None] = quiet) -> Path:
    """The source distribution of ``package==version``, downloaded once into
    ``work/sdists/<package>-<version>/`` with ``pip download``."""
    dest = work / "sdists" / f"{package}-{version}"
    archives = _archives(dest)
    if not archives:
        log(f"downloading {package}=={version} (sdist)")
        dest.mkdir(parents=True, exist_ok=True)
        run_checked(
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
        archives = _archives(dest)
    if len(archives) != 1:
        names = ", ".join(p.name for p in archives) or "none"
        raise PreparationError(f"expected one sdist for {package}=={version}, found {names}")
    return archives[0]


def unpack(archive: Path, dest: Path) -> None:
    """Unpack an sdist into ``dest`` (replacing it), dropping its single top-level folder."""
    tmp = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp)
    else:
        extract_tar(archive, tmp)
    tops = list(tmp.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise PreparationError(f"{archive.name}: expected a single top-level folder")
    shutil.rmtree(dest, ignore_errors=True)
    tops[0].rename(dest)
    tmp.rmdir()


def case_dir(case: dict[str, Any], work: str | Path) -> Path:
    """The folder of ``case`` under the work folder."""
    return Path(work) / str(case["id"])


def prepare(
    case: dict[str, Any],
    work: str | Path,
    *,
    refresh: bool = False,
    log: Callable[[str], None] = quiet,
) -> PreparedCase:
    """Prepare ``case`` under ``work/<case id>/`` (see the module docstring) and return it.

    A complete earlier preparation is reused unless ``refresh``. ``log`` receives progress
    lines. Raises :class:`PreparationError` when a step fails or the regression test does not
    fail (pytest exit status other than 1).
    """
    work = Path(work)
    out = case_dir(case, work)
    earlier = reused(case, out, refresh, log)
    if earlier is not None:
        return earlier
    python = find_python(case["python"])
    repo = _lay_out(case, work, out, log)
    venv_python = _install(case, python, out, log)
    config = str(_pytest_config(repo, out))
    return run_failing_pytest(
        case,
        venv_python,
        [case["test_node_id"]],
        options=[f"--rootdir={repo}", "-c", config, "--junitxml", "../failing.junit.xml"],
        repo=repo,
        pythonpath=repo / case["source_root"] if case["source_root"] else repo,
        out=out,
        log=log,
        expectation="the regression test should fail (pytest exit 1)",
    )


def _lay_out(case: dict[str, Any], work: Path, out: Path, log: Callable[[str], None]) -> Path:
    """Lay out ``out/repo``, the buggy release's tree with the fixed release's tests (the
    ``test_dir`` folder), from the two sdists (downloaded once under ``work``); returns it."""
    buggy = download_sdist(case["package"], case["buggy_version"], work, log)
    fixed = download_sdist(case["package"], case["fixed_version"], work, log)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    repo, fixed_tree = out / "repo", out / "fixed"
    unpack(buggy, repo)
    unpack(fixed, fixed_tree)
    test_dir = case["test_dir"]
    shutil.rmtree(repo / test_dir, ignore_errors=True)
    shutil.copytree(fixed_tree / test_dir, repo / test_dir)
    shutil.rmtree(fixed_tree)
    return repo


def _install(case: dict[str, Any], python: str, out: Path, log: Callable[[str], None]) -> Path:
    """Make ``out/venv`` with ``python`` and install the case's test dependencies and the
    buggy release in it; returns its interpreter."""
    venv_python = make_venv(python, out / "venv", str(case["python"]), log)
    log(f"installing {' '.join(case['test_deps'])} {case['package']}=={case['buggy_version']}")
    install = [*case["test_deps"], f"{case['package']}=={case['buggy_version']}"]
    run_checked([str(venv_python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *install])
    return venv_python


def _pytest_config(repo: Path, out: Path) -> Path:
    """The case's own pytest configuration file, or an empty one beside ``repo``: a case nested
    in another project (this checkout, say) must not inherit that project's configuration,
    which pytest would otherwise find by walking up from ``repo``."""
    sections = {
        "pytest.ini": "[pytest]",
        "pyproject.toml": "[tool.pytest.ini_options]",
        "tox.ini": "[pytest]",
        "setup.cfg": "[tool:pytest]",
    }
    for name, section in sections.items():
        path = repo / name
        if path.is_file() and section in path.read_text(encoding="utf-8", errors="replace"):
            return path
    empty = out / "pytest.ini"
    write_file(empty, "[pytest]\n")
    return empty


def gold_report(case: dict[str, Any], items: Sequence[Any]) -> list[str]:
    """One line per gold range: covered by one selected item, partly covered, or missing.

    ``items`` are the selected windows (objects with ``path``, ``start``, ``end``, ``reason``).
    """
    lines = []
    for gold in gold_ranges(case):
        where = f"{gold.path}:{gold.start}-{gold.end}"
        hits = [it for it in items if it.path == gold.path and it.start <= gold.end and gold.start <= it.end]
        full = [it for it in hits if it.start <= gold.start and gold.end <= it.end]
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
