"""A re-run under the toolchain's own coverage: the failing Go and Node tests run again, as
execution evidence, with nothing installed.

:func:`toolchain_rerun` re-runs the failing tests of a ``go test`` or ``node --test`` log in
the repository, with the toolchain found on ``PATH`` (never a path from the log):

* Go: one ``go test -json -count=1 -vet=off -run '^(?:TestX)$' -coverpkg=./...
  -coverprofile=FILE ./pkg`` per failing top-level test (a subtest runs with its parent), in
  the folder of the module (``go.mod``) that holds the test's package; the package comes from
  the test id (``example.com/m/calc.TestX``: the import path under the module's path) or,
  without one, from the folder of the test's ``_test.go`` frame. One run per test, because a
  test that panics ends the test binary before it writes the profile: the other tests keep
  theirs. The environment asks for no download (``GOPROXY=off``, ``GOTOOLCHAIN=local``) and
  no workspace file (``GOWORK=off``); the build cache is Go's own.
* Node: one ``node --test --experimental-test-coverage --test-reporter=lcov
  --test-reporter-destination=FILE --test-reporter=tap --test-reporter-destination=stdout
  --test-name-pattern='^(?:title|...)$' -- FILES`` in the repository folder, for the failing
  tests' files (files that use ``node:test``).

Each profile is read with the coverage readers (:func:`~.coverage.read_coverage_file`: a Go
cover profile, LCOV) into an :class:`~.execution.ExecutionRecord` (source ``"rerun"``; Go:
one run per test with its outcome from the ``-json`` events; Node: one run of the failing
tests) and a :class:`~.rerun.RerunReport` whose ``python`` field names the toolchain. Test
names are untrusted log text: a Go name must be a Go identifier (``Test...``, ``Example...``,
``Fuzz...``), a Node title may hold no control character; each is regex-escaped and passed as
one argument, never through a shell; a test file must resolve inside the repository (the
rule of the pytest re-run's test ids). What went wrong (the toolchain is not on ``PATH``, a
name refused, a timeout, no profile written, a test that no longer fails) is a note of the
report, never an exception.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError, ResourceLimitError
from bugcontext.core.limits import Limits, resolve
from bugcontext.job.sources.coverage import read_coverage_file
from bugcontext.job.sources.execution import ExecutionRecord, TestRun
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.logs.go import go_json_text
from bugcontext.job.sources.logs.node import parse_node_tap
from bugcontext.job.sources.paths import map_path
from bugcontext.job.sources.rerun import (
    RERUN_MODES,
    RERUN_SOURCE,
    RerunReport,
    _run,
    _tail,
    _with,
    inside_repository,
)
from bugcontext.job.sources.runs import FailingTest

__all__ = ["GO_TEST_NAME", "NODE_SUFFIXES", "toolchain_of", "toolchain_rerun", "toolchain_tests"]

#: A Go test function's name: a Go identifier starting with ``Test``, ``Example`` or
#: ``Fuzz`` (the part of a test id before a subtest's ``/``).
GO_TEST_NAME = re.compile(r"(?:Test|Example|Fuzz)\w*")
#: The files ``node --test`` is given: JavaScript that Node runs as it is.
NODE_SUFFIXES = (".js", ".mjs", ".cjs")
#: The longest test name handed to a toolchain.
MAX_NAME = 1000
# What a Node test file holds when it uses Node's runner.
_NODE_TEST = re.compile(r"""(?:['"]node:test['"]|require\(\s*['"]test['"]\s*\))""")
# Characters a JavaScript regular expression gives a meaning to.
_JS_SPECIAL = re.compile(r"[\\^$.*+?()\[\]{}|/-]")
_TAP_OK = re.compile(r"^\s*+ok \d++(?: -)? (?P<title>[^#]*+)(?P<directive>#.*+)?$")
_PYTEST = ("pytest", "unittest", "traceback")


def toolchain_of(test: FailingTest) -> str | None:
    """``"go"`` or ``"node"`` for a failing test whose log came from ``go test`` or from
    Node's runner (its ``spec`` or TAP reporter; a JUnit XML report whose frames are ``.go``
    or JavaScript files), else ``None``."""
    failure = test.failure
    origin = failure.origin
    paths = [frame.path for frame in failure.frames]
    if origin == "go" or (origin == "junit" and any(p.endswith(".go") for p in paths)):
        return "go"
    if origin in ("node-test", "tap") or (
        origin == "junit" and any(p.endswith(NODE_SUFFIXES) for p in paths)
    ):
        return "node"
    return None


def toolchain_tests(tests: Sequence[FailingTest]) -> str | None:
    """The toolchain that re-runs ``tests`` (``"go"`` or ``"node"``: the first test's that
    has one), or ``None`` when any of them is a pytest or unittest test (the traced re-run's)
    or none has one."""
    if any(t.failure.origin in _PYTEST or ("::" in (t.test or "")) for t in tests):
        return None
    return next((kind for kind in map(toolchain_of, tests) if kind is not None), None)


def _js_escaped(text: str) -> str:
    return _JS_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def _refused_name(name: str, kind: str) -> str | None:
    """Why the test name ``name`` is not handed to the toolchain ``kind``, or ``None``."""
    if not name:
        return "the log gives no test name"
    if len(name) > MAX_NAME:
        return f"a name longer than {MAX_NAME} characters"
    if kind == "go":
        if GO_TEST_NAME.fullmatch(name) is None:
            return "not a Go test name (an identifier starting with Test, Example or Fuzz)"
    elif any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a test name holding a control character"
    return None


def _read_small(path: Path, maximum: int = 1 << 16) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(maximum).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _go_modules(repo: Repository, root: Path) -> list[tuple[str, str]]:
    """The repository's Go modules: ``(module path, folder relative to root)``, the longest
    module path first."""
    found: list[tuple[str, str]] = []
    for rel in repo.files([".mod"]):
        folder, _, name = rel.rpartition("/")
        if name != "go.mod" or not inside_repository(root, rel):
            continue
        for line in _read_small(root / rel).splitlines():
            words = line.split("//", 1)[0].split()
            if len(words) == 2 and words[0] == "module":
                found.append((words[1].strip('"`'), folder))
                break
    return sorted(found, key=lambda item: (-len(item[0]), item[1]))


def _go_package(
    repo: Repository, root: Path, modules: Sequence[tuple[str, str]], test: FailingTest, name: str
) -> tuple[str, str] | None:
    """``(module folder, package folder relative to it)`` of a failing Go test: its test id's
    import path under a module's path, else the folder of its ``_test.go`` frame."""
    test_id = test.test or test.failure.test_id or ""
    full = test.failure.name or name
    package = test_id[: -len(full) - 1] if test_id.endswith("." + full) else ""
    for module, folder in modules:
        if package == module or package.startswith(module + "/"):
            rest = package[len(module) :].strip("/")
            parts = rest.split("/") if rest else []
            if any(p in ("", ".", "..") for p in parts):
                return None
            rel = "/".join(p for p in (folder, rest) if p)
            if (root / rel).is_dir() and inside_repository(root, rel or "."):
                return folder, rest
    names: dict[str, list[str]] = {}
    for frame in test.failure.frames:
        if frame.path.endswith("_test.go"):
            rel_file = map_path(repo, frame.path, names)[0]
            if rel_file is None or not inside_repository(root, rel_file):
                continue
            place = rel_file.rpartition("/")[0]
            for _, folder in sorted(modules, key=lambda item: -len(item[1])):
                if not folder or place == folder or place.startswith(folder + "/"):
                    return folder, place[len(folder) :].strip("/")
    return None


def _node_file(repo: Repository, root: Path, test: FailingTest) -> str | None:
    """The repository file of a failing Node test: the file part of its id (``file >
    title``), else the outermost of its frames in a JavaScript file, when it resolves inside
    the repository and uses Node's runner."""
    test_id = test.test or test.failure.test_id or ""
    candidates = [test_id.split(" > ", 1)[0]] if " > " in test_id else []
    candidates.extend(frame.path for frame in test.failure.frames)
    names: dict[str, list[str]] = {}
    for path in candidates:
        if not path.endswith(NODE_SUFFIXES):
            continue
        rel = map_path(repo, path, names)[0]
        if rel is not None and inside_repository(root, rel) and _NODE_TEST.search(_read_small(root / rel)):
            return rel
    return None


def _environment(extra: Mapping[str, str] | None, kind: str) -> dict[str, str]:
    env = dict(os.environ)
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    if kind == "go":
        env.update({"GOPROXY": "off", "GOTOOLCHAIN": "local", "GOWORK": "off", "GOFLAGS": ""})
    return env


def _read_profile(
    path: Path, repo: Repository, limits: Limits, notes: list[str], what: str
) -> ExecutionRecord | None:
    if not path.is_file() or path.stat().st_size == 0:
        notes.append(f"{what} wrote no coverage report: no execution evidence from it")
        return None
    try:
        return read_coverage_file(path, repo, limits)
    except (InvalidInputError, ResourceLimitError, OSError) as exc:
        notes.append(f"the coverage report of {what} could not be read: {exc}")
        return None


def _merged(record: ExecutionRecord) -> dict[str, frozenset[int]]:
    """The lines every run of ``record`` executed, by file."""
    return {path: record.executed(path) for path in record.files}


def _go_outcomes(output: str) -> dict[str, str]:
    """Each top-level test's last action (``pass``, ``fail``, ``skip``) in ``go test -json``
    output."""
    outcomes: dict[str, str] = {}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(event, dict) and event.get("Action") in ("pass", "fail", "skip"):
            test = event.get("Test")
            if isinstance(test, str) and "/" not in test:
                outcomes[test] = str(event["Action"])
    return outcomes


@dataclass(frozen=True)
class _Run:
    """What a toolchain's re-run runs with: the repository (and its resolved folder), the
    toolchain's path, the report so far, the limits, the environment and the deadline."""

    repo: Repository
    root: Path
    tool: str
    base: RerunReport
    limits: Limits
    env: Mapping[str, str]
    deadline: float | None


def toolchain_rerun(
    repo: Repository | str | os.PathLike[str],
    tests: Sequence[FailingTest],
    *,
    mode: str = "failing",
    limits: Limits | None = None,
    env: Mapping[str, str] | None = None,
    deadline: float | None = None,
) -> tuple[ExecutionRecord, RerunReport]:
    """Re-run the failing Go or Node tests ``tests`` (from :func:`~.pytest_log.failing_tests`;
    the toolchain is :func:`toolchain_tests`'s) of the repository ``repo`` under the
    toolchain's coverage (see the module). ``env`` are extra environment variables (``PATH``
    among them chooses where the toolchain is found). Each run is bounded by
    ``limits.rerun_seconds`` (the Go runs together too: the tests left when it has passed are
    not run and noted) and ``deadline`` (``time.monotonic()``), its output by
    ``limits.max_log_bytes`` (the rest dropped), each profile by ``max_coverage_bytes``.
    ``mode`` ``"files"`` re-runs the failing tests only (the profiles are not per test) and
    says so.

    Returns the record (source ``"rerun"``; ``per_test`` for Go, one run per test with
    ``failed`` from its outcome) and the report (``python``: the toolchain's path, ``tests``
    the names run, ``outcomes`` each test's ``"passed"``/``"failed"``/``"skipped"``,
    ``processes`` the coverage reports read, ``notes`` what went wrong).

    Raises:
        InvalidInputError: ``mode`` is not one of :data:`~.rerun.RERUN_MODES` (field
            ``rerun``).
        TimeoutError: ``deadline`` passed before or during a run.
    """
    if mode not in RERUN_MODES:
        raise InvalidInputError("rerun", f"must be one of {', '.join(RERUN_MODES)}, got {mode!r}")
    repository = repo if isinstance(repo, Repository) else Repository(Path(repo), limits=limits)
    chosen = resolve(limits)
    root = Path(os.path.realpath(repository.root))
    kind = toolchain_tests(tests) or "go"
    run_env = _environment(env, kind)
    notes: list[str] = []
    if mode != "failing":
        notes.append(f"--rerun={mode} is for pytest: only the failing {kind} tests were re-run")
    failing = tuple(t.test or t.failure.test_id or t.failure.name or "" for t in tests)
    tool = shutil.which(kind, path=run_env.get("PATH", os.defpath))
    base = RerunReport(mode, kind if tool is None else tool, failing, ())
    empty = ExecutionRecord(RERUN_SOURCE, (), kind == "go")
    others = [t for t in tests if toolchain_of(t) != kind]
    for test in others:
        notes.append(f"test {header_path(test.test or '?')} left out: not a {kind} test")
    chosen_tests = [t for t in tests if toolchain_of(t) == kind]
    if tool is None:
        notes.append(f"{kind} is not on PATH: the failing tests were not re-run, no execution evidence")
        return empty, _with(base, notes=tuple(notes))
    if deadline is not None and time.monotonic() > deadline:
        raise TimeoutError("the call's time limit passed")
    run = _Run(repository, root, tool, base, chosen, run_env, deadline)
    return (_go if kind == "go" else _node)(run, chosen_tests, notes)


def _go_plan(run: _Run, tests: Sequence[FailingTest], notes: list[str]) -> dict[str, tuple[str, str, str]]:
    """The Go tests to re-run: top-level name -> (test id, module folder, package folder); a
    test whose name is refused or whose package is in no Go module of the repository is left
    out with a note."""
    modules = _go_modules(run.repo, run.root)
    planned: dict[str, tuple[str, str, str]] = {}
    for test in tests:
        shown = header_path(test.test or test.failure.name or "?")
        full = test.failure.name or (test.test or "").rsplit(".", 1)[-1]
        name = full.split("/", 1)[0]
        why = _refused_name(name, "go")
        place = None if why is not None else _go_package(run.repo, run.root, modules, test, name)
        if why is None and place is None:
            why = "its package is not a folder of a Go module (go.mod) of the repository"
        if why is not None or place is None:
            notes.append(f"test {shown} left out: {why}")
            continue
        planned.setdefault(name, (test.test or name, *place))
    return planned


def _go_command(tool: str, name: str, package: str, profile: Path) -> list[str]:
    """``go test`` of the one top-level test ``name`` of ``package`` under coverage."""
    return [
        tool,
        "test",
        "-json",
        "-count=1",
        "-vet=off",
        "-run",
        f"^(?:{re.escape(name)})$",
        "-coverpkg=./...",
        f"-coverprofile={profile}",
        f"./{package}" if package else ".",
    ]


@dataclass
class _GoRuns:
    """What the Go runs gave so far (:func:`_go_one` adds one run)."""

    runs: list[TestRun] = field(default_factory=list)
    outcomes: dict[str, str] = field(default_factory=dict)
    measured: set[str] = field(default_factory=set)
    commands: list[str] = field(default_factory=list)
    seconds: float = 0.0
    timed_out: bool = False
    returncode: int | None = None
    tail: str = ""
    read: int = 0


def _go_one(
    run: _Run, state: _GoRuns, notes: list[str], planned: tuple[str, str, str, str], profile: Path
) -> None:
    """Run one Go test (``planned``: name, test id, module, package) under coverage into
    ``profile`` and add what it gave to ``state`` (a note for what went wrong)."""
    name, test_id, module, package = planned
    command = _go_command(run.tool, name, package, profile)
    if not state.commands:
        state.commands = [c if c != command[-2] else "-coverprofile=FILE" for c in command]
    cwd = run.root / module if module else run.root
    code, took, output, killed = _run(command, cwd, run.env, run.limits, run.deadline, notes, whole=True)
    state.seconds += took
    state.timed_out = state.timed_out or killed
    if code is None:
        return
    state.returncode = code if state.returncode in (None, 0) else state.returncode
    text = go_json_text(output.splitlines())
    state.tail = _tail(text.encode())
    outcome = _go_outcomes(output).get(name)
    words = {"pass": "passed", "fail": "failed", "skip": "skipped"}
    state.outcomes[test_id] = words.get(outcome or "", "not run")
    if outcome is None:
        notes.append(f"test {name} was not run (go test ended with status {code})")
    elif outcome != "fail":
        notes.append(f"test {name} no longer fails ({state.outcomes[test_id]})")
    record = _read_profile(profile, run.repo, run.limits, notes, f"go test -run {name}")
    if record is None:
        return
    state.read += 1
    state.measured |= record.measured
    lines = _merged(record)
    if not lines:
        if "panic: " in text:
            notes.append(
                f"test {name} panicked: go test ended before it wrote the cover profile, "
                "no execution evidence from it (its traceback's frames still are)"
            )
        else:
            notes.append(f"go test -run {name} executed no line: no execution evidence from it")
        return
    state.runs.append(TestRun(test_id, lines, None if outcome is None else outcome == "fail"))


def _go(run: _Run, tests: Sequence[FailingTest], notes: list[str]) -> tuple[ExecutionRecord, RerunReport]:
    """Re-run each failing top-level Go test alone (a panic ends the test binary before it
    writes its profile: one run per test keeps the others' coverage)."""
    planned = _go_plan(run, tests, notes)
    state = _GoRuns()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bugcontext-gocover-") as folder:
        for index, (name, place) in enumerate(planned.items()):
            if time.monotonic() - started >= run.limits.rerun_seconds:
                notes.append(
                    f"test {name} not re-run: the re-run reached rerun_seconds = {run.limits.rerun_seconds}"
                )
                continue
            _go_one(run, state, notes, (name, *place), Path(folder) / f"cover-{index}.out")
    record = ExecutionRecord(RERUN_SOURCE, tuple(state.runs), True, frozenset(state.measured))
    if not planned:
        notes.append("no failing Go test to re-run")
    report = _with(
        run.base,
        tests=tuple(planned),
        command=tuple(state.commands),
        returncode=state.returncode,
        seconds=state.seconds,
        timed_out=state.timed_out,
        outcomes=state.outcomes,
        processes=state.read,
        notes=tuple(notes),
        output=state.tail,
    )
    return record, report


def _node_plan(run: _Run, tests: Sequence[FailingTest], notes: list[str]) -> tuple[dict[str, str], list[str]]:
    """The node tests to re-run: title -> test id, and their test files (repository paths);
    a test whose title is refused or whose file is not a ``node:test`` file of the repository
    is left out with a note."""
    titles: dict[str, str] = {}
    files: list[str] = []
    for test in tests:
        title = test.failure.name or ""
        shown = header_path(test.test or title or "?")
        why = _refused_name(title, "node")
        file = None if why is not None else _node_file(run.repo, run.root, test)
        if why is None and file is None:
            why = "its test file is not a JavaScript file of the repository that uses node:test"
        if why is not None or file is None:
            notes.append(f"test {shown} left out: {why}")
            continue
        titles.setdefault(title, test.test or title)
        if file not in files:
            files.append(file)
    return titles, files


def _node_outcomes(output: str, titles: Mapping[str, str], notes: list[str]) -> dict[str, str]:
    """Each re-run test's outcome (test id -> ``failed``, ``passed``, ``not run``) from the
    run's TAP output; a note for each test that did not fail."""
    lines = output.splitlines()
    failed = {f.name for f in parse_node_tap(lines)}
    passed = set()
    for line in lines:
        match = _TAP_OK.match(line)
        if match is not None and "SKIP" not in (match["directive"] or "").upper():
            passed.add(match["title"].strip())
    outcomes: dict[str, str] = {}
    for title, test_id in titles.items():
        outcome = "failed" if title in failed else "passed" if title in passed else "not run"
        outcomes[test_id] = outcome
        if outcome != "failed":
            said = "no longer fails (passed)" if outcome == "passed" else "was not run"
            notes.append(f"test {header_path(test_id)} {said}")
    return outcomes


def _node(run: _Run, tests: Sequence[FailingTest], notes: list[str]) -> tuple[ExecutionRecord, RerunReport]:
    titles, files = _node_plan(run, tests, notes)
    empty = ExecutionRecord(RERUN_SOURCE, (), False)
    if not titles:
        notes.append("no failing node test to re-run")
        return empty, _with(run.base, notes=tuple(notes))
    pattern = "^(?:" + "|".join(_js_escaped(t) for t in titles) + ")$"
    with tempfile.TemporaryDirectory(prefix="bugcontext-nodecover-") as folder:
        lcov = Path(folder) / "lcov.info"
        command = [
            run.tool,
            "--test",
            "--experimental-test-coverage",
            "--test-reporter=lcov",
            f"--test-reporter-destination={lcov}",
            "--test-reporter=tap",
            "--test-reporter-destination=stdout",
            f"--test-name-pattern={pattern}",
            "--",
            *files,
        ]
        code, seconds, output, timed_out = _run(
            command, run.root, run.env, run.limits, run.deadline, notes, whole=True
        )
        record = None
        if code is not None:
            record = _read_profile(lcov, run.repo, run.limits, notes, "node --test")
    outcomes = _node_outcomes(output, titles, notes) if code is not None else {}
    runs: tuple[TestRun, ...] = ()
    if record is not None:
        runs = (TestRun(None, _merged(record)),)
    result = ExecutionRecord(
        RERUN_SOURCE, runs, False, record.measured if record is not None else frozenset()
    )
    shown_command = [
        c if not c.startswith("--test-reporter-destination=/") else "--test-reporter-destination=FILE"
        for c in command
    ]
    report = _with(
        run.base,
        tests=tuple(titles),
        command=tuple(shown_command),
        returncode=code,
        seconds=seconds,
        timed_out=timed_out,
        outcomes=outcomes,
        processes=1 if record is not None else 0,
        notes=tuple(notes),
        output=_tail(output.encode("utf-8", errors="replace")),
    )
    return result, report
