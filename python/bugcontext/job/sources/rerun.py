"""A traced re-run: the failing tests run again under a tracer, as execution evidence.

:func:`rerun` runs pytest on the given test ids in the repository, in the target's own
interpreter, with the folder ``_trace`` of this package first on ``PYTHONPATH``: its
``sitecustomize`` starts a tracer in every Python process of the run (pytest itself and the
child Python processes the tests start, which inherit the environment: ``subprocess`` of
``sys.executable``, pytest's ``runpytest_subprocess``), and its pytest plugin
(``-p _bugcontext_pytest``) names each test to the tracer and records its outcome. Nothing
is installed or changed in the target environment (bytecode is not written either:
``PYTHONDONTWRITEBYTECODE``); a target's own ``sitecustomize`` still runs (chained). The
tracer runs unchanged on Python 3.6 to 3.13: ``sys.monitoring`` from 3.12, ``sys.settrace``
before. It records, per test and for repository files only, the executed lines and the
call edges between repository functions; each process writes one record at exit
(at most ``Limits.max_trace_bytes``). :func:`rerun` reads them into an
:class:`~.execution.ExecutionRecord` (source ``"rerun"``, one run per test with its outcome
and its call edges, :attr:`~.execution.TestRun.edges`) and a :class:`RerunReport` that
says what happened, never hiding the run's own failure: the interpreter could not start, the
run timed out (``Limits.rerun_seconds``), a test no longer fails or was not run, a
collection error, the tracer did not start, records cut or left out. :func:`~.reruns.rerun_for_log`
takes the failing tests from a test log (:func:`~.runs.failing_tests`).

The interpreter (:func:`rerun_python`): the one given, else the repository's own ``.venv`` or
``venv`` (:func:`repository_python`, the MCP server's rule), else, where allowed (the command
line and the API, never the MCP server), the current one.
"""

from __future__ import annotations

import ast
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import Limits, over, resolve
from bugcontext.job._run import RERUN_MODES, RunError, StartError, TimedOut, repository_python, run_bounded
from bugcontext.job.sources.execution import ExecutionRecord, TestRun, _same_test
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.runs import (
    FailingTest,
    failing_tests,
    parse_test_output,
    select_test,
    summary_order,
)

__all__ = [
    "RERUN_MODES",
    "RERUN_SOURCE",
    "TRACER_DIR",
    "RerunReport",
    "inside_repository",
    "log_failing_tests",
    "repository_python",
    "rerun",
    "rerun_python",
    "test_ids",
]

#: The ``ExecutionRecord.source`` of a re-run's record.
RERUN_SOURCE = "rerun"
#: The folder put first on the target's ``PYTHONPATH`` (``sitecustomize`` and the plugin).
TRACER_DIR = Path(__file__).resolve().parent / "_trace"
#: pytest's options before ``--`` and the test ids: every result reported, short tracebacks,
#: no cache written into the repository, no doctest collection, the tracer's plugin.
PYTEST_OPTIONS = ("-rA", "--tb=short", "-p", "no:cacheprovider", "-p", "no:doctest")
PLUGIN = "_bugcontext_pytest"

_ENV_PREFIX = "BUGCONTEXT_TRACE_"
_FAILED = ("failed", "error")
_TAIL_LINES = 30
_TAIL_CHARS = 4000


@dataclass(frozen=True)
class RerunReport:
    """What a traced re-run did.

    ``mode`` is one of :data:`RERUN_MODES`; ``python`` the interpreter's path and
    ``python_version`` the version the tracer reported (``None`` without a record);
    ``failing`` the failing tests it was run for (ids as given), ``tests`` the ids passed to
    pytest (the failing tests, or their files), ``command`` the command line;
    ``returncode`` pytest's exit status (``None`` when it did not end by itself);
    ``seconds`` the traced run's wall time and ``plain_seconds`` the same run's without the
    tracer (``None`` unless asked for), both in seconds; ``timed_out`` whether the traced run
    reached ``Limits.rerun_seconds``; ``outcomes`` each test's outcome as the plugin recorded
    it (node id to ``"passed"``, ``"failed"``, ``"error"``, ``"skipped"``, ``"xfailed"``);
    ``processes`` the trace records read (one per traced process) and ``monitoring``
    whether they came from ``sys.monitoring`` (else ``sys.settrace``); ``notes`` what went
    wrong, one sentence each (empty when the run went as expected); ``output`` the last
    lines of pytest's output (at most 4,000 characters).
    """

    mode: str
    python: str
    failing: tuple[str, ...]
    tests: tuple[str, ...]
    command: tuple[str, ...] = ()
    returncode: int | None = None
    seconds: float = 0.0
    plain_seconds: float | None = None
    timed_out: bool = False
    outcomes: Mapping[str, str] = field(default_factory=dict)
    processes: int = 0
    monitoring: bool | None = None
    python_version: str | None = None
    notes: tuple[str, ...] = ()
    output: str = ""

    @property
    def overhead(self) -> float | None:
        """The traced run's wall time over the plain run's (``None`` without a plain run,
        or when it took no measurable time)."""
        if self.plain_seconds is None or self.plain_seconds <= 0:
            return None
        return self.seconds / self.plain_seconds

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (every field, and ``overhead``)."""
        return {
            "mode": self.mode,
            "python": self.python,
            "python_version": self.python_version,
            "failing": list(self.failing),
            "tests": list(self.tests),
            "command": list(self.command),
            "returncode": self.returncode,
            "seconds": round(self.seconds, 3),
            "plain_seconds": None if self.plain_seconds is None else round(self.plain_seconds, 3),
            "overhead": None if self.overhead is None else round(self.overhead, 3),
            "timed_out": self.timed_out,
            "outcomes": dict(self.outcomes),
            "processes": self.processes,
            "monitoring": self.monitoring,
            "notes": list(self.notes),
            "output": self.output,
        }

    def lines(self) -> list[str]:
        """The report in Markdown list lines (no leading ``-``): the run, then each note."""
        ran = f"{len(self.tests)} test id{'s' if len(self.tests) != 1 else ''}"
        timing = f"{self.seconds:.2f} s traced"
        if self.plain_seconds is not None:
            timing += f", {self.plain_seconds:.2f} s plain"
            if self.overhead is not None:
                timing += f" (x{self.overhead:.2f})"
        status = "timed out" if self.timed_out else f"exit {self.returncode}"
        head = f"re-run ({self.mode}): {ran}, {status}, {timing}, {self.processes} traced process"
        head += "es" if self.processes != 1 else ""
        return [head, *(f"re-run: {note}" for note in self.notes)]


def rerun_python(
    root: str | os.PathLike[str], python: str | os.PathLike[str] | None = None, *, current: bool = True
) -> Path:
    """The interpreter of a re-run in the repository ``root``: ``python`` if given, else the
    repository's own virtual environment (:func:`repository_python`), else, with ``current``
    (the command line and the API), this process's interpreter.

    Raises:
        InvalidInputError: field ``python``: ``python`` is not an executable file, or there
            is no interpreter (no virtual environment and not ``current``).
    """
    if python is not None:
        path = Path(os.path.abspath(python))
        if "\0" in os.fspath(python) or not os.path.isfile(path) or not os.access(path, os.X_OK):
            raise InvalidInputError("python", f"not an executable file: {header_path(os.fspath(python))}")
        return path
    found = repository_python(Path(root))
    if found is not None:
        return found
    if current and sys.executable:
        return Path(sys.executable)
    raise InvalidInputError(
        "python",
        "no interpreter to re-run the tests with: the repository has no virtual environment "
        "(.venv or venv, with pyvenv.cfg and bin/python) and none was given",
    )


def test_ids(tests: Sequence[FailingTest]) -> list[str]:
    """The pytest node ids of ``tests`` (each test's id, else its failure's), each once, in
    order; a test without one is left out."""
    out: list[str] = []
    for found in tests:
        for test_id in (found.test, found.failure.test_id):
            if test_id and test_id not in out:
                out.append(test_id)
                break
    return out


def _runnable(test_id: str, root: Path) -> str | None:
    """Why pytest cannot be given ``test_id`` (``None``: it can): an option or an argument
    file (a leading ``-`` or ``@``), not a node id (no ``::`` and no ``.py`` file part), or a
    file part that resolves (links followed) outside the repository folder ``root`` (a log
    is untrusted: it must not make the re-run import code from elsewhere)."""
    if not test_id or test_id[0] in "-@":
        return "an option or argument file, not a test id"
    part = test_id.split("::", 1)[0]
    if "::" not in test_id and not part.endswith(".py"):
        return "not a pytest node id (file.py::test)"
    if "\0" in test_id:
        return "holds a NUL character"
    if not inside_repository(root, part):
        return "its file is outside the repository"
    return None


def inside_repository(root: Path, part: str) -> bool:
    """Whether the path ``part`` (relative to the repository folder ``root``, itself
    resolved) stays inside it once links and ``..`` are resolved."""
    return Path(os.path.realpath(root / part)).is_relative_to(root)


def log_failing_tests(
    log_text: str, *, junit_xml: str | bytes | None = None, test: str | None = None
) -> list[FailingTest]:
    """The failing tests of ``log_text`` a re-run is for: every one, in summary order, or only
    ``test`` when given (:func:`~.pytest_log.select_test`). Raises ``UnknownTestError`` if
    ``test`` names none, ``LogFormatError`` for unreadable JUnit XML."""
    found = failing_tests(parse_test_output(log_text, junit_xml=junit_xml), summary_order(log_text))
    if test is not None:
        chosen = select_test(found, test)
        found = [chosen] if chosen is not None else []
    return found


def rerun(
    repo: Repository | str | os.PathLike[str],
    tests: Sequence[str],
    *,
    python: str | os.PathLike[str],
    mode: str = "failing",
    limits: Limits | None = None,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
    check: Callable[[str], str | None] | None = None,
    plain: bool = False,
) -> tuple[ExecutionRecord, RerunReport]:
    """Re-run the failing tests ``tests`` (pytest node ids, relative to the repository
    folder) of the repository ``repo`` under the tracer, with the interpreter ``python``.

    ``mode`` ``"failing"`` runs ``tests``; ``"files"`` every test of their files (the
    passing ones too: a spectrum). ``env`` are extra environment variables over this
    process's (``PYTHONPATH`` among them is kept, after the tracer's folder). The run is
    bounded by ``limits.rerun_seconds`` and ``deadline`` (``time.monotonic()``), its output
    by ``limits.max_log_bytes`` (the rest is dropped), the tracer's records by
    ``limits.max_trace_bytes``. ``check`` may refuse a test id (it returns why, or ``None``):
    the id is left out and noted. With ``plain``, the same pytest run is made again without
    the tracer, to time it (``RerunReport.plain_seconds``).

    Returns the record (source :data:`RERUN_SOURCE`, ``per_test``: one
    :class:`~.execution.TestRun` per test, with ``failed`` from the plugin's outcomes and
    ``edges``; code run outside any test has ``test`` ``None``; ``measured`` every Python
    file of the repository when the run completed, else the files it executed) and the
    report. A run that failed in itself (see the module) gives what it could and says so in
    ``RerunReport.notes``; it is not an exception.

    Raises:
        InvalidInputError: ``mode`` is not one of :data:`RERUN_MODES` (field ``rerun``).
        TimeoutError: ``deadline`` passed before or during the run.
    """
    if mode not in RERUN_MODES:
        raise InvalidInputError("rerun", f"must be one of {', '.join(RERUN_MODES)}, got {mode!r}")
    repository = repo if isinstance(repo, Repository) else Repository(Path(repo), limits=limits)
    chosen = resolve(limits)
    root = Path(os.path.realpath(repository.root))
    notes: list[str] = []
    failing = _runnable_tests(tests, root, check, notes)
    ids = failing if mode == "failing" else list(dict.fromkeys(t.split("::", 1)[0] for t in failing))
    base = RerunReport(mode, os.fspath(python), tuple(tests), tuple(ids))
    empty = ExecutionRecord(RERUN_SOURCE, (), True)
    if not ids:
        notes.append("no failing test to re-run (the log names no pytest node id)")
        return empty, _with(base, notes=tuple(notes))
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError("the call's time limit passed")
    command = [os.fspath(python), "-m", "pytest", *PYTEST_OPTIONS, "-p", PLUGIN, "--", *ids]
    plain_env = _environment(env, None)
    with tempfile.TemporaryDirectory(prefix="bugcontext-rerun-") as folder:
        traced_env = _environment(env, (folder, root, chosen.max_trace_bytes))
        returncode, seconds, output, timed_out = _run(command, root, traced_env, chosen, deadline, notes)
        records, read_notes = _read_records(Path(folder), chosen.max_trace_bytes)
    notes.extend(read_notes)
    plain_seconds: float | None = None
    if plain and returncode is not None:
        plain_seconds = _plain_seconds(command, root, plain_env, chosen, deadline, notes)
    record, outcomes, processes, monitoring, version = _record(repository, records, not timed_out)
    notes.extend(_outcome_notes(failing, outcomes, returncode, records, timed_out))
    report = _with(
        base,
        command=tuple(command),
        returncode=returncode,
        seconds=seconds,
        plain_seconds=plain_seconds,
        timed_out=timed_out,
        outcomes=outcomes,
        processes=processes,
        monitoring=monitoring,
        python_version=version,
        notes=tuple(notes),
        output=output,
    )
    return record, report


def _runnable_tests(
    tests: Sequence[str], root: Path, check: Callable[[str], str | None] | None, notes: list[str]
) -> list[str]:
    """The test ids of ``tests`` that may run (each once, in order); each one left out is
    noted in ``notes`` with why."""
    failing: list[str] = []
    for test_id in dict.fromkeys(tests):
        why = _runnable(test_id, root) or (check(test_id) if check is not None else None)
        if why is not None:
            notes.append(f"test {header_path(test_id)} left out: {why}")
        else:
            failing.append(test_id)
    return failing


def _plain_seconds(
    command: list[str],
    root: Path,
    plain_env: dict[str, str],
    chosen: Limits,
    deadline: float | None,
    notes: list[str],
) -> float | None:
    """The seconds the same pytest run takes without the tracer (``None`` when it did not
    run); its notes join ``notes``."""
    plain_command = _plain(command)
    plain_notes: list[str] = []
    found = _run(plain_command, root, plain_env, chosen, deadline, plain_notes)
    notes.extend(f"plain run: {note}" for note in plain_notes)
    return found[1] if found[0] is not None else None


def _with(report: RerunReport, **changes: Any) -> RerunReport:
    from dataclasses import replace

    return replace(report, **changes)


def _plain(command: Sequence[str]) -> list[str]:
    """``command`` without the tracer's plugin (``-p _bugcontext_pytest``)."""
    out: list[str] = []
    skip = False
    for i, part in enumerate(command):
        if skip:
            skip = False
            continue
        if part == "-p" and i + 1 < len(command) and command[i + 1] == PLUGIN:
            skip = True
            continue
        out.append(part)
    return out


def _environment(extra: Mapping[str, str] | None, trace: tuple[str, Path, int] | None) -> dict[str, str]:
    """The run's environment: this process's, ``extra`` over it, no tracer variables
    inherited; with ``trace`` (the output folder, the repository root, the byte limit) the
    tracer's variables and its folder first on ``PYTHONPATH``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_ENV_PREFIX)}
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if trace is not None:
        folder, root, limit = trace
        path = env.get("PYTHONPATH", "")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (os.fspath(TRACER_DIR), path) if p)
        env[_ENV_PREFIX + "DIR"] = folder
        env[_ENV_PREFIX + "ROOT"] = os.fspath(root)
        env[_ENV_PREFIX + "MAX_BYTES"] = str(limit)
    return env


def _tail(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]


def _run(
    command: Sequence[str],
    root: Path,
    env: Mapping[str, str],
    limits: Limits,
    deadline: float | None,
    notes: list[str],
    whole: bool = False,
) -> tuple[int | None, float, str, bool]:
    """One bounded pytest run: (exit status or ``None``, seconds, its output's tail (with
    ``whole``, all of it that was read), whether it timed out); what went wrong is appended
    to ``notes``."""
    started = time.monotonic()
    try:
        done = run_bounded(
            command,
            root,
            seconds=limits.rerun_seconds,
            max_output=limits.max_log_bytes,
            deadline=deadline,
            env=env,
            overflow="truncate",
        )
    except StartError as exc:
        notes.append(f"cannot start the interpreter {header_path(command[0])}: {exc}")
        return None, time.monotonic() - started, "", False
    except TimedOut as exc:
        words = over("rerun_seconds", 0, limits.rerun_seconds, exact=False)
        notes.append(f"the run took {words} and was killed: no execution evidence from it")
        return None, time.monotonic() - started, _tail(exc.output), True
    except RunError:
        raise TimeoutError("the call's time limit passed") from None
    if done.truncated:
        notes.append(f"the run's output was longer than max_log_bytes = {limits.max_log_bytes} bytes (cut)")
    text = done.output.decode("utf-8", errors="replace") if whole else _tail(done.output)
    return done.returncode, done.seconds, text, False


def _read_records(folder: Path, maximum: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The tracer's records in ``folder``, newest first (pytest's own, which ends last, before
    its children's), at most ``maximum`` bytes of them together; the rest, and records that
    are not valid, are noted."""
    names = sorted(folder.glob("trace-*.json"), key=lambda p: (-p.stat().st_mtime_ns, p.name))
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    total = 0
    left_out = 0
    for path in names:
        size = path.stat().st_size
        if total + size > maximum:
            left_out += 1
            continue
        total += size
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError, RecursionError):  # the traced code can write there too
            notes.append("a trace record could not be read (not valid JSON)")
            continue
        if isinstance(data, dict) and isinstance(data.get("runs", []), list):
            records.append(data)
    if left_out:
        notes.append(
            f"{left_out} trace record{'s' if left_out != 1 else ''} left out: over max_trace_bytes = "
            f"{maximum} bytes together"
        )
    for data in records:
        if data.get("error"):
            notes.append(f"the tracer could not start in process {data.get('pid')}: {data['error']}")
        if data.get("displaced"):
            notes.append(
                f"in process {data.get('pid')} another tracer (coverage, a debugger) replaced the "
                "tracer during the run: lines and calls may be missing"
            )
        if data.get("truncated"):
            notes.append(
                f"the trace record of process {data.get('pid')} was over max_trace_bytes: "
                f"{data['truncated']} left out"
            )
    return records, notes


def _def_lines(repo: Repository, path: str) -> dict[int, int]:
    """For ``path``'s decorated definitions: the first decorator's line (a code object's
    ``co_firstlineno``) to the line of its ``def`` or ``class``."""
    source = repo.source(path)
    tree = source.tree if source is not None else None
    out: dict[int, int] = {}
    if tree is None:
        return out
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
            first = min(d.lineno for d in node.decorator_list)
            out.setdefault(first, node.lineno)
    return out


def _record(
    repo: Repository, records: Sequence[Mapping[str, Any]], complete: bool
) -> tuple[ExecutionRecord, dict[str, str], int, bool | None, str | None]:
    """The execution record of the tracer's ``records`` (one run per test, the processes'
    runs of one test merged), the tests' outcomes, the number of records, whether they used
    ``sys.monitoring`` and the interpreter's version."""
    outcomes: dict[str, str] = {}
    lines: dict[str | None, dict[str, set[int]]] = {}
    edges: dict[str | None, set[tuple[tuple[str, int], tuple[str, int]]]] = {}
    known: dict[str, bool] = {}
    defs: dict[str, dict[int, int]] = {}
    monitoring: bool | None = None
    version: str | None = None
    rootdir = next((str(d["rootdir"]) for d in records if isinstance(d.get("rootdir"), str)), None)
    rebased: dict[str, str] = {}

    def node(test: str) -> str:
        if test not in rebased:
            rebased[test] = _rebase(test, rootdir, repo.root)
        return rebased[test]

    def usable(path: object) -> bool:
        if not isinstance(path, str):
            return False
        if path not in known:
            known[path] = repo.relative(path) == path and repo.source(path) is not None
        return known[path]

    def at(path: str, line: int) -> tuple[str, int]:
        if path not in defs:
            defs[path] = _def_lines(repo, path)
        return path, defs[path].get(line, line)

    for data in records:
        found = data.get("outcomes")
        if isinstance(found, dict):
            for test, outcome in found.items():
                if isinstance(test, str) and isinstance(outcome, str):
                    outcomes.setdefault(node(test), outcome)
        if monitoring is None and isinstance(data.get("monitoring"), bool):
            monitoring = bool(data["monitoring"])
        if version is None and isinstance(data.get("python"), str):
            version = str(data["python"])
        for run in data.get("runs", []):
            if not isinstance(run, dict):
                continue
            test = run.get("test")
            key = node(test) if isinstance(test, str) else None
            here = lines.setdefault(key, {})
            for path, numbers in (run.get("lines") or {}).items():
                if usable(path) and isinstance(numbers, list):
                    here.setdefault(path, set()).update(
                        n for n in numbers if isinstance(n, int) and not isinstance(n, bool) and n > 0
                    )
            calls = edges.setdefault(key, set())
            for edge in run.get("edges") or []:
                if (
                    isinstance(edge, list)
                    and len(edge) == 4
                    and usable(edge[0])
                    and usable(edge[2])
                    and isinstance(edge[1], int)
                    and isinstance(edge[3], int)
                ):
                    calls.add((at(edge[0], edge[1]), at(edge[2], edge[3])))
    runs = _test_runs(lines, edges, outcomes)
    if complete and records:
        measured = frozenset(repo.files([".py"]))
    else:
        measured = frozenset(path for run in runs for path in run.lines)
    record = ExecutionRecord(RERUN_SOURCE, tuple(runs), True, measured)
    return record, outcomes, len(records), monitoring, version


def _test_runs(
    lines: dict[str | None, dict[str, set[int]]],
    edges: dict[str | None, set[tuple[tuple[str, int], tuple[str, int]]]],
    outcomes: dict[str, str],
) -> list[TestRun]:
    """One run per test of the merged ``lines`` and ``edges`` (code run outside any test
    first, as test ``None``), ``failed`` from the tests' ``outcomes``."""
    runs: list[TestRun] = []
    for key in sorted(set(lines) | set(edges), key=lambda t: (t is not None, t or "")):
        failed: bool | None = None
        if key is not None:
            outcome = outcomes.get(key)
            failed = None if outcome is None else outcome in _FAILED
        runs.append(
            TestRun(
                key,
                {path: frozenset(found) for path, found in sorted(lines.get(key, {}).items()) if found},
                failed,
                frozenset(edges.get(key, set())),
            )
        )
    return runs


def _rebase(test: str, rootdir: str | None, root: Path) -> str:
    """The node id ``test`` (relative to pytest's root folder ``rootdir``) relative to the
    repository folder ``root``, when its file lies inside it; else as it is."""
    if rootdir is None:
        return test
    part, sep, rest = test.partition("::")
    try:
        full = Path(os.path.realpath(os.path.join(rootdir, part)))
        rel = full.relative_to(Path(os.path.realpath(root))).as_posix()
    except (ValueError, OSError):
        return test
    return rel + sep + rest if rel != "." else test


def _outcome_notes(
    failing: Sequence[str],
    outcomes: Mapping[str, str],
    returncode: int | None,
    records: Sequence[Mapping[str, Any]],
    timed_out: bool,
) -> list[str]:
    """What the run's outcome says went wrong: no record (the tracer did not start), a
    pytest exit status for errors, a failing test that passed or was not run."""
    notes: list[str] = []
    if returncode is None:
        return notes
    if not records:
        notes.append("the tracer did not start: no process wrote a trace record")
    if returncode == 2:
        notes.append("pytest stopped with errors (exit 2: a collection error or an interruption)")
    elif returncode == 3:
        notes.append("pytest had an internal error (exit 3)")
    elif returncode == 4:
        notes.append("pytest refused the command line (exit 4)")
    elif returncode == 5:
        notes.append("pytest collected no test (exit 5)")
    elif returncode not in (0, 1):
        notes.append(f"pytest ended with status {returncode}")
    if records and not outcomes and returncode in (0, 1):
        notes.append("the tracer's pytest plugin recorded no test outcome")
    for test_id in failing:
        matched = [o for t, o in outcomes.items() if _same_test(t, test_id)]
        if not matched:
            if outcomes or returncode in (2, 4, 5):
                notes.append(f"test {header_path(test_id)} was not run (not collected)")
        elif not any(o in _FAILED for o in matched):
            notes.append(f"test {header_path(test_id)} no longer fails ({', '.join(sorted(set(matched)))})")
    return notes
