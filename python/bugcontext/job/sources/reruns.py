"""The re-run of a log's failing tests, by their toolchain: pytest tests under the Python
tracer (:mod:`.rerun`), ``go test`` and ``node --test`` tests under the toolchain's own coverage
(:mod:`.toolchain_rerun`). Above both, so that neither imports the other."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from bugcontext.core.limits import Limits
from bugcontext.job.sources.execution import ExecutionRecord
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.rerun import RerunReport, log_failing_tests, rerun, rerun_python, test_ids
from bugcontext.job.sources.toolchain_rerun import toolchain_rerun, toolchain_tests

__all__ = ["rerun_for_log"]


def rerun_for_log(
    repo: Repository | str | os.PathLike[str],
    log_text: str,
    *,
    junit_xml: str | bytes | None = None,
    test: str | None = None,
    mode: str = "failing",
    python: str | os.PathLike[str] | None = None,
    current: bool = True,
    limits: Limits | None = None,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
    check: Callable[[str], str | None] | None = None,
    plain: bool = False,
) -> tuple[ExecutionRecord, RerunReport]:
    """:func:`~.rerun.rerun` of the failing tests of ``log_text`` (every failing test of the log,
    in summary order; only ``test`` when given, :func:`~.runs.select_test`), the
    interpreter chosen by :func:`~.rerun.rerun_python` (``python``, ``current``).

    Failing tests of ``go test`` or Node's runner (:func:`~.toolchain_rerun.toolchain_tests`)
    are re-run by :func:`~.toolchain_rerun.toolchain_rerun` instead, under the toolchain's
    own coverage (``python``, ``current`` and ``check`` unused).

    Raises what :func:`~.rerun.rerun_python` and :func:`~.rerun.rerun` raise, ``UnknownTestError`` if
    ``test`` names no failing test of the log, ``LogFormatError`` for unreadable JUnit XML.
    """
    repository = repo if isinstance(repo, Repository) else Repository(Path(repo), limits=limits)
    found = log_failing_tests(log_text, junit_xml=junit_xml, test=test)
    if toolchain_tests(found) is not None:  # go test, node --test: under their own coverage
        return toolchain_rerun(repository, found, mode=mode, limits=limits, env=env, deadline=deadline)
    interpreter = rerun_python(repository.root, python, current=current)
    return rerun(
        repository,
        test_ids(found),
        python=interpreter,
        mode=mode,
        limits=limits,
        env=env,
        deadline=deadline,
        check=check,
        plain=plain,
    )
