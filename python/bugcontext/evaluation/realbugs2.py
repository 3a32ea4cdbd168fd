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

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
    start_afresh,
    venv_environment,
)

__all__ = ["DEFAULT_CASES2", "find_case_python", "is_tree_case", "prepare_tree_case"]

#: The SWE-bench-style cases file (package data).
DEFAULT_CASES2 = Path(__file__).with_name("realbugs2.json")


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
    extract_tar(tarball, dest)


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
    make_venv(python, venv, str(case["python"]), log)
    env = venv_environment(venv_python)
    for command in install:
        log(f"+ {command}")
        run_checked(["bash", "-c", command], cwd=out / "repo", env=env)
    write_file(stamp_file, stamp)
    return venv_python


def prepare_tree_case(
    case: dict[str, Any],
    work: str | Path,
    trees: str | Path | None,
    *,
    refresh: bool = False,
    log: Callable[[str], None] = quiet,
) -> PreparedCase:
    """Prepare the SWE-bench-style ``case`` under ``work/<id>/`` (see the module docstring)
    from ``trees/<id>.tar.gz`` and return it.

    A complete earlier preparation is reused unless ``refresh`` (then ``trees`` may be
    ``None``). Raises :class:`PreparationError` when the tree is missing, the Python is not
    found, an install command fails, or the failing tests do not exit with ``expected_exit``.
    """
    out = Path(work) / str(case["id"])
    earlier = reused(case, out, refresh, log)
    if earlier is not None:
        return earlier
    if trees is None:
        raise PreparationError(
            "needs the repository tree: pass --trees DIR, a folder of <id>.tar.gz "
            "(the trees come with the data set, they are not shipped)"
        )
    tarball = Path(trees) / f"{case['id']}.tar.gz"
    if not tarball.is_file():
        raise PreparationError(f"missing tree {tarball.name} in {trees}")
    find_case_python(str(case["python"]))  # before anything is unpacked
    start_afresh(out)
    log(f"unpacking {tarball.name}")
    _unpack_tree(tarball, out / "repo")
    venv_python = _venv(case, out, log)
    pythonpath = str(case.get("pythonpath") or "")
    repo = out / "repo"
    return run_failing_pytest(
        case,
        venv_python,
        [str(test) for test in case["fail_to_pass"]],
        options=[f"--junitxml={out / 'failing.junit.xml'}"],
        repo=repo,
        pythonpath=repo / pythonpath if pythonpath else repo,
        out=out,
        log=log,
        expected=int(case.get("expected_exit", 1)),
    )
