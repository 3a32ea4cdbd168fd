"""The steps every real-bug preparation shares (:mod:`~bugcontext.evaluation.realbugs`,
:mod:`~bugcontext.evaluation.realbugs2`, :mod:`~bugcontext.evaluation.langbugs`).

A case is prepared under ``<work>/<id>/``: ``repo/`` (the tree), often ``venv/`` (its test
environment), ``failing.log`` and ``failing.junit.xml`` (the run of its failing tests) and
``prepared.json``, the mark of a complete preparation, reused until a refresh. Here: the
prepared case and its mark, a checked command, a tar archive unpacked with the data filter, the
virtual environment, and the run of the failing tests (pytest's command and environment).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bugcontext.core._writer import atomic_output, write_file
from bugcontext.core.errors import ScreenedError

__all__ = [
    "PreparationError",
    "PreparedCase",
    "extract_tar",
    "make_venv",
    "mark_prepared",
    "prepared_case",
    "pytest_command",
    "quiet",
    "reused",
    "run_checked",
    "run_failing_pytest",
    "run_failing_tests",
    "start_afresh",
    "venv_environment",
]

#: The mark of a complete preparation, in the case's folder.
MARKER = "prepared.json"


class PreparationError(ScreenedError):
    """A case could not be prepared (a download, the virtual environment, the test run)."""


@dataclass(frozen=True)
class PreparedCase:
    """A prepared case: its folder, the repository, the failing log and the JUnit report
    (``None`` for a case prepared before reports were kept)."""

    case: dict[str, Any]
    folder: Path
    repo: Path
    log: Path
    junit: Path | None

    @property
    def id(self) -> str:
        """The case id."""
        return str(self.case["id"])


def quiet(message: str) -> None:
    """The default progress callback: say nothing."""


def prepared_case(case: Mapping[str, Any], folder: Path) -> PreparedCase:
    """``case`` as prepared in ``folder``."""
    junit = folder / "failing.junit.xml"
    return PreparedCase(
        case=dict(case),
        folder=folder,
        repo=folder / "repo",
        log=folder / "failing.log",
        junit=junit if junit.is_file() else None,
    )


def reused(
    case: Mapping[str, Any], out: Path, refresh: bool, log: Callable[[str], None]
) -> PreparedCase | None:
    """The complete earlier preparation of ``case`` in ``out``, unless ``refresh``."""
    if (out / MARKER).exists() and not refresh:
        log(f"using the prepared case {case['id']}")
        return prepared_case(case, out)
    return None


def start_afresh(out: Path) -> None:
    """Make ``out`` and remove what marks it, or a run in it, as done."""
    out.mkdir(parents=True, exist_ok=True)
    for name in (MARKER, "failing.log", "failing.junit.xml"):
        (out / name).unlink(missing_ok=True)


def mark_prepared(case: Mapping[str, Any], out: Path, **facts: object) -> PreparedCase:
    """Mark the preparation of ``case`` in ``out`` complete (``facts``: the exit status the
    failing tests gave) and return it."""
    write_file(out / MARKER, json.dumps({"case": case["id"], **facts}) + "\n")
    return prepared_case(case, out)


def run_checked(
    cmd: Sequence[str],
    *,
    what: str = "command",
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    tail: int = 20,
) -> str:
    """Run ``cmd`` and return its standard output. Raises :class:`PreparationError` (``what``,
    the command and the last ``tail`` lines of its output) when it cannot run or fails."""
    command = list(cmd)
    try:
        given = None if env is None else dict(env)
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, env=given)
    except OSError as exc:
        raise PreparationError(f"{what}: cannot run {command[0]}: {exc.strerror or exc}") from exc
    if proc.returncode != 0:
        lines = (proc.stdout + proc.stderr).strip().splitlines()[-tail:]
        raise PreparationError(f"{what} failed ({proc.returncode}): {' '.join(command)}\n" + "\n".join(lines))
    return proc.stdout


def extract_tar(tarball: Path, dest: Path) -> None:
    """Extract every member of ``tarball`` into ``dest`` (with the ``data`` filter where Python
    has one: no absolute paths, links out of ``dest`` or special files)."""
    with tarfile.open(tarball) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(dest, filter="data")
        else:  # Python without extraction filters (before 3.10.12 / 3.11.4)
            tf.extractall(dest)


def make_venv(python: str, venv: Path, version: str, log: Callable[[str], None]) -> Path:
    """A new virtual environment in ``venv`` (replacing any) made with ``python`` (Python
    ``version``, for the progress line); returns its interpreter."""
    shutil.rmtree(venv, ignore_errors=True)
    log(f"creating a virtual environment with Python {version}")
    run_checked([python, "-m", "venv", str(venv)], what="the virtual environment")
    return venv / "bin" / "python"


def venv_environment(venv_python: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a command of the virtual environment of ``venv_python``:
    its ``bin`` first on ``PATH``, no ``PYTHONHOME``, pip's version check off, and ``extra``."""
    env = dict(os.environ)
    env.pop("PYTHONHOME", None)
    env["PATH"] = f"{venv_python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


def pytest_command(venv_python: Path, *arguments: str) -> list[str]:
    """The pytest run of a case's failing tests with ``venv_python``: no cache, every
    outcome in the summary, long tracebacks, then ``arguments``."""
    return [str(venv_python), "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=long", *arguments]


def run_failing_tests(
    command: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    out: Path,
    case_id: str,
    expected: int = 1,
    expectation: str | None = None,
) -> None:
    """Run the failing tests of a case (``command`` in ``cwd`` with the environment ``env``),
    its output and errors written to ``out/failing.log``.

    Raises :class:`PreparationError` (``expectation``, default "the failing tests should exit
    ``expected``", with the exit status) when it does not exit ``expected``."""
    with atomic_output(out / "failing.log") as log_file:
        proc = subprocess.run(
            list(command),
            cwd=cwd,
            env=env,
            stdout=log_file.file,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if proc.returncode != expected:
        wanted = expectation or f"the failing tests should exit {expected}"
        raise PreparationError(f"{wanted}, got exit {proc.returncode}; see failing.log of case {case_id}")


def run_failing_pytest(
    case: Mapping[str, Any],
    venv_python: Path,
    tests: Sequence[str],
    *,
    options: Sequence[str] = (),
    repo: Path,
    pythonpath: Path,
    out: Path,
    log: Callable[[str], None],
    expected: int = 1,
    expectation: str | None = None,
) -> PreparedCase:
    """Run pytest on ``tests`` with ``options`` (:func:`pytest_command`) in ``repo`` under the
    virtual environment of ``venv_python`` with ``PYTHONPATH=pythonpath`` (the project is not
    installed there, so the frames point into ``repo``), then mark the case prepared
    (:func:`run_failing_tests`; ``pytest_exit``: ``expected``)."""
    log(f"running {' '.join(tests)}")
    env = venv_environment(venv_python, PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1")
    run_failing_tests(
        pytest_command(venv_python, *options, *tests),
        cwd=repo,
        env=env,
        out=out,
        case_id=str(case["id"]),
        expected=expected,
        expectation=expectation,
    )
    return mark_prepared(case, out, pytest_exit=expected)
