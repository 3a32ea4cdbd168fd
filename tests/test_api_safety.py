"""The Python API keeps the command line's safety rules: a trace never appends into a file of
the repository (or folder) being read, a path argument the system cannot take (a NUL character,
a name too long, a loop of links) is an ``InvalidInputError`` naming the argument, and no
exception of the package carries a secret in its message, whichever engine raised it."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext import InvalidCandidateError, InvalidInputError, OutputError, ResourceLimitError, Workspace
from bugcontext.core._io import read_capped
from bugcontext.core._writer import OutputConflictError, repository_output_problem
from bugcontext.core.errors import InternalError
from bugcontext.core.provenance import folder_reader
from bugcontext.core.secrets import find_secrets
from bugcontext.core.trace import read_trace, replay
from bugcontext.integrations.cli import main, run_context
from bugcontext.job._run import RunError
from bugcontext.job.sources import Repository, UnknownTestError
from bugcontext.job.sources.reports import LogFormatError

TIMEOUT = 120  # seconds: a guard against hangs
# A realistic fake token, made here so that no file of the project holds one whole.
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TOKEN_SHOWN = "[REDACTED: GitHubTokenDetector]"
PASSWORD = "password=" + "hunter2secret99"
PASSWORD_SHOWN = "password=[REDACTED: generic-secret]"
LONG = "a" * 300  # one component over the 255 bytes a file name may have

FAILING_TEST = "def test_x():\n    assert helper() == 2\n\n\ndef helper():\n    return 1\n"
LOG = (
    "=================================== FAILURES ===================================\n"
    "____________________________________ test_x ____________________________________\n"
    "\n"
    "    def test_x():\n"
    ">       assert helper() == 2\n"
    "E       assert 1 == 2\n"
    "\n"
    "test_x.py:2: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED test_x.py::test_x - assert 1 == 2\n"
)
INPUT = {
    "candidates": [
        {"path": "test_x.py", "start": 1, "end": 1, "content": "x\n", "reason": "search", "score": 1}
    ],
    "max_chars": 100,
}


def test_the_fake_secrets_are_secrets_to_the_screen() -> None:
    assert [s.kind for s in find_secrets(TOKEN)] == ["GitHubTokenDetector"]
    assert [s.kind for s in find_secrets(PASSWORD)] == ["generic-secret"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "test_x.py").write_text(FAILING_TEST)
    return folder


def _one_call(repo: Path, trace: object) -> Any:
    return bugcontext.context(repo, LOG, trace=trace, cache=False)


def _workspace(repo: Path, trace: object) -> Any:
    return Workspace(repo, cache=False).context(LOG, trace=trace)


CONTEXT_CALLS = [pytest.param(_one_call, id="context"), pytest.param(_workspace, id="Workspace.context")]


# --- 1. a trace is never appended into a file being read --------------------------------------


@pytest.mark.parametrize("call", CONTEXT_CALLS)
@pytest.mark.parametrize("how", ["the failing file", "a symbolic link", "a hard link", "a relative path"])
def test_the_api_refuses_a_trace_that_is_a_file_of_the_repository(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: Callable[[Path, object], Any], how: str
) -> None:
    source = repo / "test_x.py"
    trace: Path | str
    if how == "the failing file":
        trace = source
    elif how == "a symbolic link":
        trace = tmp_path / "link.jsonl"
        trace.symlink_to(source)
    elif how == "a hard link":
        trace = tmp_path / "hard.jsonl"
        os.link(source, trace)
    else:
        monkeypatch.chdir(repo)
        trace = "test_x.py"
    with pytest.raises(InvalidInputError) as caught:
        call(repo, trace)
    problem = (
        f"{trace} is a file of the repository {repo} (refusing to replace an existing file of the "
        "folder being read)"
    )
    assert (caught.value.field, caught.value.problem, caught.value.index) == ("trace", problem, None)
    assert str(caught.value) == f"input field 'trace': {problem}"
    assert source.read_text() == FAILING_TEST  # nothing appended


@pytest.mark.parametrize("call", CONTEXT_CALLS)
def test_the_api_writes_a_new_trace_inside_the_repository(
    repo: Path, call: Callable[[Path, object], Any]
) -> None:
    # As the command line: a new file outside the git folder is allowed.
    (repo / ".gitignore").write_text("*.jsonl\n")
    call(repo, repo / "new-trace.jsonl")
    assert (repo / "new-trace.jsonl").read_text().count("\n") == 1


@pytest.mark.parametrize("call", CONTEXT_CALLS)
def test_the_api_refuses_a_trace_of_an_existing_file_the_reader_does_not_read(
    repo: Path, call: Callable[[Path, object], Any]
) -> None:
    # As the command line: an ignored file or one of a hidden folder is not replaced or grown.
    (repo / ".gitignore").write_text("*.jsonl\n")
    (repo / "old.jsonl").write_text("kept\n")
    (repo / ".cache").mkdir()
    (repo / ".cache" / "x.jsonl").write_text("kept\n")
    for trace in (repo / "old.jsonl", repo / ".cache" / "x.jsonl"):
        with pytest.raises(InvalidInputError) as caught:
            call(repo, trace)
        assert (caught.value.field, caught.value.problem) == (
            "trace",
            f"{trace} is a file of the repository {repo} (refusing to replace an existing file of the folder "
            "being read)",
        )
        assert trace.read_text() == "kept\n"


@pytest.mark.parametrize("call", CONTEXT_CALLS)
def test_the_api_refuses_a_trace_inside_the_git_folder(
    repo: Path, tmp_path: Path, call: Callable[[Path, object], Any]
) -> None:
    git = repo / ".git"
    (git / "hooks").mkdir(parents=True)
    (git / "config").write_text("[core]\n")
    (tmp_path / "config-link").symlink_to(git / "config")
    for trace in (git / "config", git / "hooks" / "pre-commit", git / "new.jsonl", tmp_path / "config-link"):
        with pytest.raises(InvalidInputError) as caught:
            call(repo, trace)
        problem = f"{trace} is inside the git folder {git} of the repository {repo} (refusing to write there)"
        assert (caught.value.field, caught.value.problem) == ("trace", problem)
        assert str(caught.value) == f"input field 'trace': {problem}"
    assert (git / "config").read_text() == "[core]\n"
    assert sorted(p.name for p in git.iterdir()) == ["config", "hooks"] and not any((git / "hooks").iterdir())


@pytest.mark.parametrize(
    "engine", [bugcontext.build, bugcontext.reference.build], ids=["native", "reference"]
)
def test_build_refuses_a_trace_inside_the_git_folder_of_its_folder_reader(repo: Path, engine: Any) -> None:
    git = repo / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n")
    for trace in (git / "config", git / "new.jsonl"):
        with pytest.raises(InvalidInputError) as caught:
            engine(INPUT, trace=trace, verify=folder_reader(repo))
        assert (caught.value.field, caught.value.problem) == (
            "trace",
            f"{trace} is inside the git folder {git} of the verify folder {repo} (refusing to write there)",
        )
    assert (git / "config").read_text() == "[core]\n" and not (git / "new.jsonl").exists()


@pytest.mark.parametrize(
    "engine", [bugcontext.build, bugcontext.reference.build], ids=["native", "reference"]
)
def test_build_refuses_a_trace_under_its_folder_reader(repo: Path, tmp_path: Path, engine: Any) -> None:
    source = repo / "test_x.py"
    hard = tmp_path / "hard.jsonl"
    os.link(source, hard)
    for trace in (source, hard):
        with pytest.raises(InvalidInputError) as caught:
            engine(INPUT, trace=trace, verify=folder_reader(repo))
        assert (caught.value.field, caught.value.problem) == (
            "trace",
            f"{trace} is a file of the verify folder {repo} (refusing to replace an existing file of "
            "the folder being read)",
        )
    assert source.read_text() == FAILING_TEST
    # Outside the folder it is written, as before.
    engine(INPUT, trace=tmp_path / "t.jsonl", verify=folder_reader(repo))
    assert (tmp_path / "t.jsonl").read_text().count("\n") == 1


def test_the_command_line_and_the_api_share_the_repository_check(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hard = tmp_path / "hard.jsonl"
    os.link(repo / "test_x.py", hard)
    (repo / ".git").mkdir()
    config = repo / ".git" / "config"
    problem = repository_output_problem(repo, config)
    assert problem == (
        f"{config} is inside the git folder {repo / '.git'} of the repository {repo} "
        "(refusing to write there)"
    )
    with pytest.raises(InvalidInputError) as caught:
        Workspace(repo, cache=False).context(LOG, trace=config)
    assert caught.value.problem == problem
    assert main(["context", "--repo", str(repo), "--log", "-", "--report", str(config)]) == 2
    assert capsys.readouterr().err == f"bugcontext context: --report {problem}\n"
    file_problem = (
        f"is a file of the repository {repo} (refusing to replace an existing file of the folder being read)"
    )
    assert repository_output_problem(repo, hard) == f"{hard} {file_problem}"
    assert repository_output_problem(repo, repo / "test_x.py") == f"{repo / 'test_x.py'} {file_problem}"
    assert repository_output_problem(repo, repo / "new.md") is None
    assert repository_output_problem(repo, tmp_path / "elsewhere.md") is None
    reader = Repository(repo)
    assert reader.reads_output(hard) and reader.reads_output(repo / "test_x.py")
    assert not reader.reads_output(repo / "missing.jsonl") and not reader.reads_output(tmp_path)


# --- 2. a NUL character in a path argument -----------------------------------------------------


def _nul_cases(tmp: Path, repo: Path) -> list[tuple[str, Callable[[], Any], str]]:
    nul = str(tmp / "a\0b")
    return [
        ("build(trace=)", lambda: bugcontext.build(INPUT, trace=nul), "trace"),
        ("reference.build(trace=)", lambda: bugcontext.reference.build(INPUT, trace=nul), "trace"),
        (
            "ContextBuilder.build(trace=)",
            lambda: bugcontext.ContextBuilder().build(INPUT, trace=nul),
            "trace",
        ),
        ("context(trace=)", lambda: _one_call(repo, nul), "trace"),
        ("Workspace.context(trace=)", lambda: _workspace(repo, nul), "trace"),
        ("context(repo)", lambda: bugcontext.context(nul, LOG, cache=False), "repo"),
        ("Workspace(root)", lambda: Workspace(nul, cache=False), "root"),
        ("Workspace(cache_dir=)", lambda: Workspace(repo, cache_dir=nul), "cache_dir"),
        ("context(coverage=)", lambda: _coverage(repo, Path(nul)), "coverage"),
        ("folder_reader", lambda: folder_reader(nul), "root"),
        ("Repository", lambda: Repository(Path(nul)), "repo"),
        ("read_trace", lambda: read_trace(nul), "trace"),
        ("replay", lambda: list(replay(nul, bugcontext.build)), "trace"),
        ("run_context(pytest_log)", lambda: run_context(repo, nul), "pytest_log"),
        ("run_context(junit_xml)", lambda: run_context(repo, repo / "test_x.py", junit_xml=nul), "junit_xml"),
        ("read_capped", lambda: read_capped(nul, "max_log_bytes", field="pytest_log"), "pytest_log"),
        ("create_server(roots=)", lambda: _create_server(roots=[nul]), "root"),
        ("create_server(cache_dir=)", lambda: _create_server(roots=[repo], cache_dir=nul), "cache_dir"),
    ]


def _create_server(**options: Any) -> Any:
    mcp_server = pytest.importorskip("bugcontext.integrations.mcp_server")
    return mcp_server.create_server(**options)


def _coverage(repo: Path, path: Path) -> Any:
    return Workspace(repo, cache=False).context(LOG, coverage=path)


NUL_CASES = [
    "build(trace=)",
    "reference.build(trace=)",
    "ContextBuilder.build(trace=)",
    "context(trace=)",
    "Workspace.context(trace=)",
    "context(repo)",
    "Workspace(root)",
    "Workspace(cache_dir=)",
    "context(coverage=)",
    "folder_reader",
    "Repository",
    "read_trace",
    "replay",
    "run_context(pytest_log)",
    "run_context(junit_xml)",
    "read_capped",
    "create_server(roots=)",
    "create_server(cache_dir=)",
]


@pytest.mark.parametrize("number", range(len(NUL_CASES)), ids=NUL_CASES)
def test_a_nul_in_a_path_argument_is_an_invalid_input_naming_it(
    repo: Path, tmp_path: Path, number: int
) -> None:
    cases = _nul_cases(tmp_path, repo)
    assert [case[0] for case in cases] == NUL_CASES
    name, call, field = cases[number]
    with pytest.raises(InvalidInputError) as caught:
        call()
    assert caught.value.field == field, name
    assert "NUL character" in caught.value.problem, name
    assert "\0" not in str(caught.value)


def test_the_command_line_refuses_a_nul_in_an_output_path_in_one_line(
    repo: Path, tmp_path: Path, capsys: Any
) -> None:
    data = tmp_path / "in.json"
    data.write_text(json.dumps(INPUT))
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    assert main(["build", str(data), "--trace", "a\0b"]) == 2
    assert capsys.readouterr() == (
        "",
        "bugcontext build: --trace: a\\u0000b: a path cannot hold a NUL character\n",
    )
    assert main(["context", "--repo", str(repo), "--log", "a\0b", "--no-cache"]) == 2
    assert capsys.readouterr() == (
        "",
        "bugcontext context: --log: must not contain a NUL character (a path holds none)\n",
    )


# --- 3. a path the system refuses: a name too long, a loop of links ----------------------------


def test_a_name_too_long_or_a_loop_of_links_is_an_invalid_input_of_the_api(
    repo: Path, tmp_path: Path
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    long = str(tmp_path / LONG)
    for path, why in ((long, "File name too long"), (str(loop), "Too many levels of symbolic links")):
        for call, field in (
            (lambda p=path: Workspace(p, cache=False), "root"),
            (lambda p=path: bugcontext.context(p, LOG, cache=False), "repo"),
            (lambda p=path: Repository(Path(p)), "repo"),
            (lambda p=path: _create_server(roots=[p]), "root"),
        ):
            with pytest.raises(InvalidInputError) as caught:
                call()
            assert (caught.value.field, caught.value.problem) == (field, f"cannot read {path}: {why}")
    with pytest.raises(InvalidInputError) as loop_reader:
        folder_reader(loop)
    assert (loop_reader.value.field, loop_reader.value.problem) == (
        "root",
        f"cannot read {loop}: Too many levels of symbolic links",
    )


def test_a_file_named_as_a_folder_is_still_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"^not a directory: "):
        Workspace(tmp_path / "file" / "child", cache=False)


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
        timeout=TIMEOUT,
        check=False,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["context", "--repo", LONG, "--log", "LOG"], "--repo"),
        (["context", "--repo", "REPO", "--log", "LOG", "--cache-dir", LONG], "--cache-dir"),
        (["build", "INPUT", "--verify-root", LONG], "--verify-root"),
        (["cache", "info", "--cache-dir", LONG], "--cache-dir"),
        (["cache", "clear", "--cache-dir", LONG], "--cache-dir"),
    ],
)
def test_a_path_option_with_a_name_too_long_is_one_line_exit_2(
    repo: Path, tmp_path: Path, args: list[str], option: str
) -> None:
    data = tmp_path / "in.json"
    data.write_text(json.dumps(INPUT))
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    real = [{"LOG": str(log), "REPO": str(repo), "INPUT": str(data)}.get(a, a) for a in args]
    proc = _cli(*real)
    command = "cache" if args[0] == "cache" else args[0]
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode() == f"bugcontext {command}: {option}: cannot read {LONG}: File name too long\n"


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["mcp", "--root", LONG],
            f"bugcontext mcp: input field 'root': cannot read {LONG}: File name too long\n",
        ),
        (
            ["mcp", "--root", "LOOP"],
            "bugcontext mcp: input field 'root': cannot read LOOP: Too many levels of symbolic links\n",
        ),
        (
            ["mcp", "--python", LONG],
            f"bugcontext mcp: input field 'python': not an executable file: {LONG}\n",
        ),
        (
            ["context", "--repo", "LOOP", "--log", "LOG"],
            "bugcontext context: --repo: cannot read LOOP: Too many levels of symbolic links\n",
        ),
    ],
    ids=["mcp --root long", "mcp --root loop", "mcp --python long", "context --repo loop"],
)
def test_mcp_and_context_paths_the_system_refuses_are_one_line_exit_2(
    tmp_path: Path, args: list[str], line: str
) -> None:
    pytest.importorskip("mcp")
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(loop)
    log = tmp_path / "pytest.log"
    log.write_text(LOG)
    names = {"LOOP": str(loop), "LOG": str(log)}
    proc = _cli(*[names.get(a, a) for a in args])
    assert (proc.returncode, proc.stdout) == (2, b"")
    expected = line.replace("LOOP", str(loop))
    assert proc.stderr.decode() == expected
    assert b"Traceback" not in proc.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any folder")
def test_a_folder_that_may_not_be_read_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    (locked / "repo").mkdir(parents=True)
    locked.chmod(0)
    try:
        with pytest.raises(InvalidInputError) as caught:
            Workspace(locked / "repo", cache=False)
        assert caught.value.problem == f"cannot read {locked / 'repo'}: Permission denied"
        proc = _cli("context", "--repo", str(locked / "repo"), "--log", "-")
        assert proc.returncode == 2 and proc.stderr.count(b"\n") == 1
    finally:
        locked.chmod(0o700)


# --- 4. no secret in an exception's message ---------------------------------------------------


@pytest.mark.parametrize(
    "engine", [bugcontext.build, bugcontext.reference.build], ids=["native", "reference"]
)
def test_an_input_error_of_either_engine_has_its_secrets_redacted(engine: Any) -> None:
    bad_key = {"candidates": [], "max_chars": 10, "cost": {PASSWORD: 1}}
    bad_value = {"candidates": [{**INPUT["candidates"][0], "reason": TOKEN}], "max_chars": 10}  # type: ignore[dict-item]
    bad_top = {"candidates": [], "max_chars": 10, TOKEN: 1}
    expected = [
        (InvalidInputError, f"cost.{PASSWORD_SHOWN}", "is not a known cost key", None),
        (
            InvalidCandidateError,
            "reason",
            f"must be one of 'failure', 'reference', 'search', got '{TOKEN_SHOWN}'",
            0,
        ),
        (InvalidInputError, TOKEN_SHOWN, "is not a known input key", None),
    ]
    for data, (kind, field, problem, index) in zip((bad_key, bad_value, bad_top), expected, strict=True):
        with pytest.raises(InvalidInputError) as caught:
            engine(data)
        error = caught.value
        assert type(error) is kind
        assert (error.field, error.problem, error.index) == (field, problem, index)
        where = f"input field {field!r}" if index is None else f"candidate {index}: field {field!r}"
        assert str(error) == f"{where}: {problem}" and error.args == (str(error),)
        assert "hunter2" not in str(error) and TOKEN not in str(error)
        again = pickle.loads(pickle.dumps(error))
        assert (type(again), str(again), again.field, again.problem, again.index) == (
            kind,
            str(error),
            field,
            problem,
            index,
        )


def test_an_unknown_test_id_holding_a_token_is_redacted(repo: Path) -> None:
    asked = f"test_x.py::test_{TOKEN}"
    with pytest.raises(UnknownTestError) as caught:
        Workspace(repo, cache=False).context(LOG, test=asked)
    error = caught.value
    assert TOKEN not in str(error) and TOKEN not in repr(error.args)
    assert error.test == f"test_x.py::test_{TOKEN_SHOWN}"
    assert str(error) == f"no failing test {error.test!r} in the log (failing tests: test_x.py::test_x)"
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again), again.test, again.known) == (
        UnknownTestError,
        str(error),
        error.test,
        error.known,
    )


def test_a_trace_path_holding_a_token_is_redacted_in_the_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError) as caught:
        bugcontext.build(INPUT, trace=tmp_path / "missing" / f"{TOKEN}.jsonl")
    assert TOKEN not in str(caught.value) and TOKEN_SHOWN in str(caught.value)


def test_every_exception_class_of_the_package_screens_its_message() -> None:
    limit = ResourceLimitError(
        PASSWORD, f"the {TOKEN} is too long", limit="max_log_bytes", value=9, maximum=8
    )
    assert (limit.field, limit.problem, limit.limit, limit.value, limit.maximum) == (
        PASSWORD_SHOWN,
        f"the {TOKEN_SHOWN} is too long",
        "max_log_bytes",
        9,
        8,
    )
    again = pickle.loads(pickle.dumps(limit))
    assert (str(again), again.limit, again.value, again.maximum) == (str(limit), "max_log_bytes", 9, 8)
    log_error = LogFormatError(f"bad XML near {TOKEN}", field="junit_xml")
    run_error = RunError(f"cannot start {TOKEN}", b"out")
    for error in (
        InternalError(f"panic: {TOKEN}"),
        OutputError(f"cannot write {TOKEN}"),
        OutputConflictError(f"--trace {TOKEN} is an input"),
        log_error,
        run_error,
        UnknownTestError(TOKEN, [TOKEN]),
    ):
        assert TOKEN not in str(error) and TOKEN_SHOWN in str(error), type(error).__name__
        assert str(pickle.loads(pickle.dumps(error))) == str(error)
    assert pickle.loads(pickle.dumps(log_error)).field == "junit_xml"
    assert pickle.loads(pickle.dumps(run_error)).output == b"out"


def test_a_trace_line_holding_a_secret_is_refused_without_it(tmp_path: Path) -> None:
    from bugcontext.core.trace import TraceFormatError

    trace = tmp_path / "t.jsonl"
    bugcontext.build(INPUT, trace=trace)
    record = json.loads(trace.read_text())
    for change in (
        lambda r: r.update(engine=TOKEN),  # an unknown kind, shown
        lambda r: r["input"]["candidates"][0].update(reason=TOKEN),
    ):
        changed = json.loads(json.dumps(record))
        change(changed)
        trace.write_text(json.dumps(changed) + "\n")
        with pytest.raises(TraceFormatError) as caught:
            read_trace(trace)
        assert isinstance(caught.value, ValueError)
        assert TOKEN not in str(caught.value) and TOKEN_SHOWN in str(caught.value)
    trace.write_text('{"' + PASSWORD + '": 1, "' + PASSWORD + '": 2}\n')  # a key given twice
    with pytest.raises(TraceFormatError) as twice:
        read_trace(trace)
    assert "hunter2" not in str(twice.value)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"A": "x\0y"}, "the value of A holds a NUL character"),
        ({"A=B": "x"}, "A=B is not a variable name (it holds '=' or a NUL character)"),
        ({"A\0": "x"}, "A\\u0000 is not a variable name (it holds '=' or a NUL character)"),
        (["A=x"], "must be a mapping of names to values or None, not list"),
    ],
)
def test_a_rerun_environment_the_system_refuses_is_an_invalid_input(
    repo: Path, env: Any, problem: str
) -> None:
    for call in (
        lambda: bugcontext.context(repo, LOG, rerun=True, python=sys.executable, rerun_env=env, cache=False),
        lambda: Workspace(repo, cache=False).context(LOG, rerun=True, python=sys.executable, rerun_env=env),
    ):
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert (caught.value.field, caught.value.problem) == ("rerun_env", problem)


def test_the_api_refuses_a_trace_that_is_its_coverage_report(repo: Path, tmp_path: Path) -> None:
    # The command line refuses --trace equal to --coverage; the API refuses the same.
    report = tmp_path / "coverage.json"
    report.write_text('{"meta": {"format": 2}, "files": {}}')
    before = report.read_bytes()
    with pytest.raises(InvalidInputError) as caught:
        Workspace(repo, cache=False).context(LOG, coverage=report, trace=report)
    assert (caught.value.field, caught.value.problem) == (
        "trace",
        f"the trace {report} is the same file as the coverage report {report} "
        "(refusing to overwrite an input)",
    )
    assert report.read_bytes() == before


def test_a_table_error_naming_a_group_key_that_is_a_token_is_redacted() -> None:
    # build_table's errors are made in the Rust engine, by calling the Python classes.
    pa = pytest.importorskip("pyarrow")
    rows = {
        "task": [TOKEN],
        "path": ["a.py"],
        "start": pa.array([None], pa.int64()),
        "end": [1],
        "content": ["x\n"],
        "reason": ["search"],
        "score": [1.0],
    }
    with pytest.raises(InvalidCandidateError) as caught:
        bugcontext.build_table(pa.table(rows), group_by="task", budget=10)
    assert (caught.value.field, caught.value.index) == ("start", 0)
    assert (
        str(caught.value)
        == f"candidate 0: field 'start': is null (group '{TOKEN_SHOWN}', row 0 of the group)"
    )


# --- bad names echoed by the renderer, the token counter and the folder checks ----------------

_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


from bugcontext._core import render_block  # noqa: E402


def _empty_result() -> object:
    import bugcontext

    return bugcontext.build({"max_chars": 10, "candidates": []})


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.render(_empty_result(), template=_TOKEN),
        lambda b: b.render(_empty_result(), order=_TOKEN),
        lambda b: b.TokenCounter(_TOKEN),
        lambda b: render_block(
            "m.py", 1, 1, "x\n", "failure", failing=False, template=_TOKEN, line_numbers=False
        ),
        lambda b: render_block(
            "m.py", 1, 1, "x\n", _TOKEN, failing=False, template="markdown", line_numbers=False
        ),
        lambda b: b.build({"budget": 10, "candidates": [], "cost": {"unit": "chars", "template": _TOKEN}}),
        lambda b: b.build({"budget": 10, "candidates": [], "cost": {"unit": "tokens", "encoding": _TOKEN}}),
        lambda b: b.Workspace("missing/" + _TOKEN),
        lambda b: b.context("missing/" + _TOKEN, "FAILED t.py::test - x\n"),
    ],
)
def test_a_bad_name_holding_a_secret_is_shown_redacted(call: Any) -> None:
    import bugcontext

    with pytest.raises((ValueError, OSError)) as caught:
        call(bugcontext)
    assert _TOKEN not in str(caught.value)
    assert "[REDACTED: " in str(caught.value)
