"""SWE-bench-style real bugs: a repository tree at the buggy commit, its failing tests, its issue.

A case (one object of ``realbugs2.json`` beside this module) names an upstream repository at a
``base_commit``, the Python it was verified with, the pinned ``pip install`` commands of its test
environment, the ``fail_to_pass`` pytest node ids that fail before the fix, the pytest exit
status expected then (``expected_exit``: 1 when the tests fail, 3 for a pytest INTERNALERROR),
the *gold* line ranges (per hunk of the real fix, the base file's lines it removes, or the two
lines around a pure insertion) and ``query``, the issue text (its first 2,000 characters).

The trees are not shipped with the package: they come with the data set these cases were
taken from, as ``<trees>/<id>.tar.gz`` (the repository at ``base_commit`` with the instance's
test changes applied, not the fix). :func:`prepare` makes a case ready to build a context for:

1. unpacks ``<trees>/<id>.tar.gz`` as ``<work>/<id>/repo/``;
2. makes ``<work>/<id>/venv/`` with the case's Python (``python3.X`` on ``PATH``, or a pyenv
   ``3.X.*`` installation) and runs the case's install commands in ``repo/`` with the virtual
   environment first on ``PATH``; the environment is kept and reused while its stamp (the
   interpreter's ``sys.version`` and the commands) is unchanged;
3. runs ``python -m pytest -p no:cacheprovider -rA --tb=long <fail_to_pass...>`` inside
   ``repo/`` with ``PYTHONPATH=repo/<pythonpath>`` (the project is not installed, so traceback
   frames point into ``repo/``), keeping ``failing.log`` and ``failing.junit.xml``; the exit
   status must be ``expected_exit``.

A complete preparation is marked by ``<work>/<id>/prepared.json`` and reused until a refresh.
The layout is the one of the data set's own ``prepare.sh``, whose environments are reused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bugcontext.core._writer import write_file
from bugcontext.evaluation.realbugs import PreparationError, PreparedCase, pytest_command, run_failing_tests

__all__ = ["DEFAULT_CASES2", "find_case_python", "is_tree_case", "prepare_tree_case"]

#: The SWE-bench-style cases file (package data).
DEFAULT_CASES2 = Path(__file__).with_name("realbugs2.json")


def _quiet(message: str) -> None:
    """The default progress callback: say nothing."""


def is_tree_case(case: dict[str, Any]) -> bool:
    """Whether ``case`` is a SWE-bench-style case (a tree, ``fail_to_pass`` tests), not a
    PyPI release pair."""
    return "fail_to_pass" in case


def _version_of(python: str) -> str | None:
    try:
        proc = subprocess.run(
            [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def find_case_python(version: str) -> str:
    """An interpreter of ``version`` (``"3.9"``): this one if it is that version, else
    ``python3.9`` on ``PATH``, else the newest pyenv ``3.9.*`` installation (under
    ``$PYENV_ROOT`` or ``~/.pyenv``). Raises :class:`PreparationError` when there is none."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found and _version_of(found) == version:
        return found
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = sorted(
        (root / "versions").glob(f"{version}.*/bin/python"),
        key=lambda p: [int(x) if x.isdigit() else -1 for x in p.parent.parent.name.split(".")],
    )
    for candidate in reversed(candidates):
        if _version_of(str(candidate)) == version:
            return str(candidate)
    raise PreparationError(
        f"this case needs Python {version}; no python{version} on PATH and no pyenv {version}.x"
    )


def _stamp(python: str, install: Sequence[str]) -> str:
    proc = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True)
    return proc.stdout.rstrip("\n") + "\n" + "\n".join(install)


def _unpack_tree(tarball: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    with tarfile.open(tarball) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
        else:  # Python without extraction filters (before 3.10.12 / 3.11.4)
            tf.extractall(dest)


def _venv(case: dict[str, Any], out: Path, log: Callable[[str], None]) -> Path:
    python = find_case_python(str(case["python"]))
    install = [str(c) for c in case.get("install", [])]
    stamp = _stamp(python, install)
    venv = out / "venv"
    stamp_file = venv / ".prepare-stamp"
    venv_python = venv / "bin" / "python"
    current = stamp_file.read_text(encoding="utf-8") if stamp_file.is_file() else None
    if venv_python.is_file() and current == stamp:
        return venv_python
    shutil.rmtree(venv, ignore_errors=True)
    log(f"creating a virtual environment with Python {case['python']}")
    proc = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise PreparationError(f"cannot make the virtual environment: {proc.stderr.strip()[-500:]}")
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    for command in install:
        log(f"+ {command}")
        proc = subprocess.run(
            ["bash", "-c", command], cwd=out / "repo", env=env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-20:]
            raise PreparationError(f"command failed ({proc.returncode}): {command}\n" + "\n".join(tail))
    write_file(stamp_file, stamp)
    return venv_python


def prepare_tree_case(
    case: dict[str, Any],
    work: str | Path,
    trees: str | Path | None,
    *,
    refresh: bool = False,
    log: Callable[[str], None] = _quiet,
) -> PreparedCase:
    """Prepare the SWE-bench-style ``case`` under ``work/<id>/`` (see the module docstring)
    from ``trees/<id>.tar.gz`` and return it.

    A complete earlier preparation is reused unless ``refresh`` (then ``trees`` may be
    ``None``). Raises :class:`PreparationError` when the tree is missing, the Python is not
    found, an install command fails, or the failing tests do not exit with ``expected_exit``.
    """
    out = Path(work) / str(case["id"])
    marker = out / "prepared.json"
    if marker.exists() and not refresh:
        log(f"using the prepared case {case['id']}")
        return _prepared(case, out)
    if trees is None:
        raise PreparationError(
            "needs the repository tree: pass --trees DIR, a folder of <id>.tar.gz "
            "(the trees come with the data set, they are not shipped)"
        )
    tarball = Path(trees) / f"{case['id']}.tar.gz"
    if not tarball.is_file():
        raise PreparationError(f"missing tree {tarball.name} in {trees}")
    find_case_python(str(case["python"]))  # before anything is unpacked
    out.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    for name in ("failing.log", "failing.junit.xml"):
        (out / name).unlink(missing_ok=True)
    log(f"unpacking {tarball.name}")
    _unpack_tree(tarball, out / "repo")
    venv_python = _venv(case, out, log)
    pythonpath = str(case.get("pythonpath") or "")
    repo = out / "repo"
    env = dict(os.environ)
    env.pop("PYTHONHOME", None)
    env["PATH"] = f"{venv_python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(repo / pythonpath) if pythonpath else str(repo)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    log(f"running {' '.join(case['fail_to_pass'])}")
    expected = int(case.get("expected_exit", 1))
    run_failing_tests(
        pytest_command(venv_python, *case["fail_to_pass"], f"--junitxml={out / 'failing.junit.xml'}"),
        cwd=repo,
        env=env,
        out=out,
        case_id=str(case["id"]),
        expected=expected,
    )
    write_file(marker, json.dumps({"case": case["id"], "pytest_exit": expected}) + "\n")
    return _prepared(case, out)


def _prepared(case: dict[str, Any], folder: Path) -> PreparedCase:
    junit = folder / "failing.junit.xml"
    return PreparedCase(
        case=case,
        folder=folder,
        repo=folder / "repo",
        log=folder / "failing.log",
        junit=junit if junit.is_file() else None,
    )
