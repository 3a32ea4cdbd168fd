"""The traced re-run: real pytest runs on small repositories, under the tracer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import bugcontext
import pytest
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import Limits
from bugcontext.integrations.cli import main
from bugcontext.job.sources.rerun import TRACER_DIR, rerun, rerun_python
from bugcontext.job.sources.reruns import rerun_for_log

CALC = textwrap.dedent(
    """\
    import functools


    def logged(f):
        @functools.wraps(f)
        def inner(*args):
            return f(*args)

        return inner


    @logged
    def helper(x):
        return x - 1  # the bug: x + 1


    def compute(x):
        value = helper(x)
        return [v * 2 for v in [value]][0]


    def unused():
        return 42
    """
)

TESTS = textwrap.dedent(
    """\
    import subprocess
    import sys

    from pkg.calc import compute


    def test_fails():
        assert compute(1) == 4


    def test_passes():
        assert compute(0) != 99


    def test_child():
        code = "from pkg.calc import compute; print(compute(3))"
        out = subprocess.check_output([sys.executable, "-c", code])
        assert out.strip() == b"8"
    """
)

FAILING = ("tests/test_calc.py::test_fails", "tests/test_calc.py::test_child")


def _repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(TESTS, encoding="utf-8")
    return root


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return _repo(tmp_path / "repo")


@pytest.fixture
def log(repo: Path) -> str:
    """The failing run's log, as pytest writes it."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    assert done.returncode == 1, done.stdout
    return done.stdout


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_the_failing_tests_run_again_with_their_lines_calls_and_outcomes(repo: Path, log: str) -> None:
    before = _tree(repo)
    record, report = rerun_for_log(repo, log, python=sys.executable)
    assert report.notes == ()
    assert report.failing == FAILING and report.tests == FAILING
    assert report.returncode == 1 and not report.timed_out
    assert report.outcomes == {FAILING[0]: "failed", FAILING[1]: "failed"}
    assert report.python_version == ".".join(map(str, sys.version_info[:3]))
    assert report.monitoring is (sys.version_info >= (3, 12))
    assert report.processes == 2  # pytest and the test's child process
    assert record.source == "rerun" and record.per_test
    runs = {run.test: run for run in record.runs}
    assert set(runs) == {None, *FAILING}
    helper_body = _line(CALC, "return x - 1")
    compute_def, helper_def = _line(CALC, "def compute"), _line(CALC, "def helper")
    inner_def = _line(CALC, "def inner")
    fails = runs[FAILING[0]]
    assert fails.failed is True
    assert helper_body in fails.lines["pkg/calc.py"]
    assert _line(CALC, "return 42") not in record.executed("pkg/calc.py")
    assert _line(TESTS, "assert compute(1) == 4") in fails.lines["tests/test_calc.py"]
    # Call edges by the line of the def keyword (a decorated function's too); the wrapper
    # is what compute really calls; the comprehension counts as compute.
    assert fails.edges == {
        (("tests/test_calc.py", _line(TESTS, "def test_fails")), ("pkg/calc.py", compute_def)),
        (("pkg/calc.py", compute_def), ("pkg/calc.py", inner_def)),
        (("pkg/calc.py", inner_def), ("pkg/calc.py", helper_def)),
    }
    # The child process's code is the test's: traced, under the test's id.
    child = runs[FAILING[1]]
    assert child.failed is True
    assert helper_body in child.lines["pkg/calc.py"]
    assert (("pkg/calc.py", compute_def), ("pkg/calc.py", inner_def)) in child.edges
    # Imports ran outside any test; every Python file of the repository was measured.
    assert runs[None].failed is None and 1 in runs[None].lines["pkg/calc.py"]
    assert record.measured == {"pkg/__init__.py", "pkg/calc.py", "tests/test_calc.py"}
    # Nothing was written into the repository (no cache, no bytecode).
    assert _tree(repo) == before
    assert not [name for name in before if "__pycache__" in name or "cache" in name]


def test_files_mode_runs_the_passing_tests_of_those_files_too(repo: Path, log: str) -> None:
    record, report = rerun_for_log(repo, log, python=sys.executable, mode="files", plain=True)
    assert report.tests == ("tests/test_calc.py",) and report.notes == ()
    assert report.outcomes["tests/test_calc.py::test_passes"] == "passed"
    passed = next(run for run in record.runs if run.test == "tests/test_calc.py::test_passes")
    assert passed.failed is False
    assert _line(CALC, "return x - 1") in passed.lines["pkg/calc.py"]
    # The plain run is timed too.
    assert report.plain_seconds is not None and report.plain_seconds > 0
    assert report.overhead == pytest.approx(report.seconds / report.plain_seconds)
    assert report.to_dict()["overhead"] == round(report.overhead, 3)


def test_test_narrows_the_rerun_to_one_failing_test(repo: Path, log: str) -> None:
    record, report = rerun_for_log(repo, log, python=sys.executable, test=FAILING[0])
    assert report.tests == (FAILING[0],)
    assert {run.test for run in record.runs} == {None, FAILING[0]}


def test_a_test_that_no_longer_fails_is_reported(repo: Path, log: str) -> None:
    (repo / "pkg" / "calc.py").write_text(CALC.replace("x - 1", "x + 1"), encoding="utf-8")
    record, report = rerun_for_log(repo, log, python=sys.executable)
    assert report.returncode == 0
    assert report.notes == tuple(f"test {test} no longer fails (passed)" for test in FAILING)
    assert all(run.failed is not True for run in record.runs)


def test_a_collection_error_is_reported(repo: Path, log: str) -> None:
    (repo / "tests" / "test_calc.py").write_text("def broken(:\n", encoding="utf-8")
    _, report = rerun_for_log(repo, log, python=sys.executable)
    assert report.returncode in (2, 4)
    assert any("pytest" in note and "exit" in note for note in report.notes)
    assert f"test {FAILING[0]} was not run (not collected)" in report.notes
    assert "SyntaxError" in report.output or "ERROR" in report.output


def test_a_run_past_its_time_limit_is_killed_and_reported(repo: Path) -> None:
    (repo / "tests" / "test_slow.py").write_text(
        "import time\n\ndef test_slow():\n    time.sleep(60)\n", encoding="utf-8"
    )
    record, report = rerun(
        repo, ["tests/test_slow.py::test_slow"], python=sys.executable, limits=Limits(rerun_seconds=2)
    )
    assert report.timed_out and report.returncode is None
    assert report.seconds < 30
    assert report.notes == (
        "the run took more than 2 seconds, over the limit rerun_seconds = 2 seconds and was killed: "
        "no execution evidence from it",
    )
    assert record.runs == ()


def test_ids_that_pytest_cannot_take_are_left_out(repo: Path) -> None:
    record, report = rerun(repo, ["-x", "@args", "tests.test_calc.test_fails"], python=sys.executable)
    assert report.returncode is None and record.runs == ()
    assert report.notes == (
        "test -x left out: an option or argument file, not a test id",
        "test @args left out: an option or argument file, not a test id",
        "test tests.test_calc.test_fails left out: not a pytest node id (file.py::test)",
        "no failing test to re-run (the log names no pytest node id)",
    )
    with pytest.raises(InvalidInputError, match="rerun"):
        rerun(repo, [FAILING[0]], python=sys.executable, mode="everything")


def test_the_targets_own_sitecustomize_still_runs(repo: Path, log: str, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "marker"
    (site / "sitecustomize.py").write_text(
        f"import os\nwith open({str(marker)!r}, 'a') as f:\n    f.write('x')\n", encoding="utf-8"
    )
    record, report = rerun_for_log(repo, log, python=sys.executable, env={"PYTHONPATH": str(site)})
    assert report.notes == ()
    assert marker.read_text() == "xx"  # pytest and its child
    assert any(run.test == FAILING[0] for run in record.runs)


def test_a_tracer_that_does_not_start_is_reported(repo: Path, log: str, tmp_path: Path) -> None:
    # An interpreter that ignores PYTHONPATH (isolated mode) never imports the tracer.
    wrapper = tmp_path / "isolated-python"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -I "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    record, report = rerun_for_log(repo, log, python=wrapper)
    assert report.processes == 0 and record.runs == ()
    assert "the tracer did not start: no process wrote a trace record" in report.notes
    assert (TRACER_DIR / "sitecustomize.py").is_file()


def test_the_interpreter_rule(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    assert rerun_python(root) == Path(sys.executable)
    with pytest.raises(InvalidInputError, match="python"):
        rerun_python(root, current=False)
    with pytest.raises(InvalidInputError, match="python"):
        rerun_python(root, root / "nothing")
    venv = root / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert rerun_python(root, current=False) == venv.resolve() / "bin" / "python"


def test_the_context_api_and_command_line(repo: Path, log: str, tmp_path: Path, capsys) -> None:
    result = bugcontext.context(repo, log, cache=False, rerun=True, python=sys.executable)
    assert result.rerun is not None and result.rerun.notes == ()
    assert result.gathered.execution is not None and result.gathered.execution.source == "rerun"
    assert result.to_dict()["rerun"]["outcomes"] == {FAILING[0]: "failed", FAILING[1]: "failed"}
    assert "- re-run (failing): 2 test ids, exit 1" in result.summary()
    with pytest.raises(InvalidInputError, match="rerun"):
        bugcontext.context(repo, log, cache=False, rerun="all")
    with pytest.raises(InvalidInputError, match="rerun"):
        bugcontext.context(repo, log, cache=False, rerun=True, coverage=b"{}")
    with pytest.raises(InvalidInputError, match="python"):
        bugcontext.context(repo, log, cache=False, python=sys.executable)

    log_file = tmp_path / "failing.log"
    log_file.write_text(log, encoding="utf-8")
    base = ["context", "--repo", str(repo), "--pytest-log", str(log_file), "--no-cache"]
    assert main([*base, "--python", sys.executable]) == 2
    assert "--python and --rerun-env are for --rerun" in capsys.readouterr().err
    assert main([*base, "--rerun", "--rerun-env", "novalue"]) == 2
    assert "--rerun-env must be NAME=VALUE" in capsys.readouterr().err
    assert main([*base, "--rerun=files", "--python", sys.executable, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rerun"]["mode"] == "files"
    assert out["rerun"]["outcomes"]["tests/test_calc.py::test_passes"] == "passed"
    (repo / "pkg" / "calc.py").write_text(CALC.replace("x - 1", "x + 1"), encoding="utf-8")
    assert main([*base, "--rerun", "--test", FAILING[0]]) == 0
    err = capsys.readouterr().err
    assert f"warning: re-run: test {FAILING[0]} no longer fails (passed)" in err


# -- several interpreters ---------------------------------------------------------------


def _pythons() -> list[tuple[str, str]]:
    """(version, path) of the pyenv interpreters 3.6 to 3.13 on this machine."""
    base = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    found = {}
    if base.is_dir():
        for folder in sorted(base.iterdir()):
            python = folder / "bin" / "python"
            parts = folder.name.split(".")
            if python.is_file() and len(parts) >= 2 and parts[0] == "3" and parts[1].isdigit():
                if 6 <= int(parts[1]) <= 13:
                    found.setdefault(f"3.{parts[1]}", str(python))
    return sorted(found.items(), key=lambda item: int(item[0].split(".")[1]))


PYTHONS = _pythons()

SCRIPT = textwrap.dedent(
    """\
    import subprocess
    import sys

    from pkg.calc import compute

    compute(1)
    if len(sys.argv) == 1:
        subprocess.check_call([sys.executable, "main.py", "child"])
    """
)


@pytest.mark.parametrize(("version", "python"), PYTHONS or [pytest.param("", "", marks=pytest.mark.skip)])
def test_the_tracer_runs_unchanged_on_every_python(
    version: str, python: str, repo: Path, tmp_path: Path
) -> None:
    """The tracer alone (no pytest needed): a script and its child process, traced."""
    (repo / "main.py").write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    # The target's own sitecustomize, after the tracer's on the path, runs too.
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "marker"
    (site / "sitecustomize.py").write_text(
        f"with open({str(marker)!r}, 'a') as f:\n    f.write('x')\n", encoding="utf-8"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("BUGCONTEXT_TRACE_")},
        "PYTHONPATH": os.pathsep.join([str(TRACER_DIR), str(site)]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "BUGCONTEXT_TRACE_DIR": str(out),
        "BUGCONTEXT_TRACE_ROOT": str(repo),
    }
    subprocess.run([python, "main.py"], cwd=repo, env=env, check=True, capture_output=True)
    records = [json.loads(path.read_text()) for path in sorted(out.glob("trace-*.json"))]
    assert len(records) == 2
    assert marker.read_text() == "xx"
    minor = int(version.split(".")[1])
    compute_def = _line(CALC, "def compute")
    for record in records:
        assert record["python"].startswith(version + ".") and record["error"] is None
        assert record["monitoring"] is (minor >= 12)
        (run,) = record["runs"]
        assert run["test"] is None
        assert _line(CALC, "return x - 1") in run["lines"]["pkg/calc.py"]
        assert ["main.py", 0, "pkg/calc.py", compute_def] in run["edges"]
        # A decorated function's code starts at its first decorator.
        assert ["pkg/calc.py", _line(CALC, "def inner") - 1, "pkg/calc.py", _line(CALC, "@logged")] in run[
            "edges"
        ]


def _extra_path(version: str) -> dict[str, str]:
    """An interpreter's extra ``PYTHONPATH`` for pytest, if one is set for it
    (``BUGCONTEXT_TEST_PYTHONPATH_3_6`` for 3.6, say: a folder pytest was installed into)."""
    found = os.environ.get("BUGCONTEXT_TEST_PYTHONPATH_" + version.replace(".", "_"))
    return {"PYTHONPATH": found} if found else {}


def _has_pytest(python: str, version: str) -> bool:
    env = {**os.environ, **_extra_path(version)}
    done = subprocess.run([python, "-c", "import pytest"], capture_output=True, check=False, env=env)
    return done.returncode == 0


@pytest.mark.parametrize(("version", "python"), PYTHONS or [pytest.param("", "", marks=pytest.mark.skip)])
def test_the_rerun_on_every_python_that_has_pytest(version: str, python: str, repo: Path, log: str) -> None:
    if not _has_pytest(python, version):
        pytest.skip(f"no pytest in Python {version}")
    record, report = rerun_for_log(repo, log, python=python, mode="files", env=_extra_path(version) or None)
    assert report.notes == ()
    assert report.python_version is not None and report.python_version.startswith(version + ".")
    assert report.outcomes == {
        FAILING[0]: "failed",
        "tests/test_calc.py::test_passes": "passed",
        FAILING[1]: "failed",
    }
    runs = {run.test: run for run in record.runs}
    compute_def = _line(CALC, "def compute")
    assert (("tests/test_calc.py", _line(TESTS, "def test_fails")), ("pkg/calc.py", compute_def)) in runs[
        FAILING[0]
    ].edges
    assert _line(CALC, "return x - 1") in runs[FAILING[1]].lines["pkg/calc.py"]


def test_the_mcp_server_reruns_only_when_allowed(repo: Path, log: str) -> None:
    pytest.importorskip("mcp")
    import anyio
    from bugcontext.integrations.mcp_server import create_server
    from mcp import Client

    async def call(server: object, **arguments: object) -> object:
        async with Client(server) as client:  # type: ignore[arg-type]
            return await client.call_tool(
                "context_for_failure", {"repository": str(repo), "test_log": log, **arguments}
            )

    closed = create_server(cache=False, roots=[repo])
    refused = anyio.run(lambda: call(closed, rerun=True))
    assert refused.is_error  # type: ignore[attr-defined]
    assert "rerun: running tests is disabled" in refused.content[0].text  # type: ignore[attr-defined]
    opened = create_server(cache=False, roots=[repo], allow_run=True, python=sys.executable)
    both = anyio.run(lambda: call(opened, rerun="files", coverage_file=str(repo / "x")))
    assert "rerun: give coverage_file or rerun, not both" in both.content[0].text  # type: ignore[attr-defined]
    unknown = anyio.run(lambda: call(opened, rerun="everything"))
    assert "rerun: must be true or one of failing, files" in unknown.content[0].text  # type: ignore[attr-defined]
    done = anyio.run(lambda: call(opened, rerun="files"))
    assert not done.is_error  # type: ignore[attr-defined]
    found = done.structured_content["result"]["rerun"]  # type: ignore[attr-defined]
    # The interpreter is named, not shown with its path on the server's machine.
    assert found["python"] == "python" and found["command"][0] == "python"
    assert found["outcomes"]["tests/test_calc.py::test_passes"] == "passed"
    assert found["notes"] == []
    assert "- re-run (files): 1 test id, exit 1" in done.structured_content["report"]  # type: ignore[attr-defined]


def test_node_ids_are_made_relative_to_the_repository(tmp_path: Path) -> None:
    # pytest's root folder is the parent (its ini file is there): its node ids start with
    # repo/; the record's and the outcomes' are the repository's.
    repo = _repo(tmp_path / "repo")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    record, report = rerun(repo, [FAILING[0]], python=sys.executable)
    assert report.outcomes == {FAILING[0]: "failed"} and report.notes == ()
    assert {run.test for run in record.runs} == {None, FAILING[0]}


PYTESTER = textwrap.dedent(
    """\
    pytest_plugins = ["pytester"]


    def test_inner(pytester):
        pytester.makepyfile(
            "from pkg.calc import compute\\n"
            "def test_it():\\n"
            "    assert compute(2) == 6\\n"
        )
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
        result.assert_outcomes(passed=1)
    """
)


def test_pytesters_subprocess_runs_are_traced_as_the_outer_test(repo: Path) -> None:
    (repo / "tests" / "test_pytester.py").write_text(PYTESTER, encoding="utf-8")
    test_id = "tests/test_pytester.py::test_inner"
    record, report = rerun(repo, [test_id], python=sys.executable, env={"PYTHONPATH": str(repo)})
    assert report.outcomes == {test_id: "failed"}  # compute(2) is 2, not 6: the bug
    assert report.processes == 2
    (inner,) = [run for run in record.runs if run.test == test_id]
    assert _line(CALC, "return x - 1") in inner.lines["pkg/calc.py"]
    compute_def, inner_def = _line(CALC, "def compute"), _line(CALC, "def inner")
    assert (("pkg/calc.py", compute_def), ("pkg/calc.py", inner_def)) in inner.edges


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring: tools coexist")
def test_a_tracer_replaced_by_another_is_reported(repo: Path, log: str) -> None:
    (repo / "tests" / "conftest.py").write_text(
        "import sys\n\ndef pytest_collection_finish(session):\n    sys.settrace(None)\n", encoding="utf-8"
    )
    _, report = rerun_for_log(repo, log, python=sys.executable, test=FAILING[0])
    assert any("another tracer" in note and "replaced the tracer" in note for note in report.notes)


def test_a_log_cannot_make_the_rerun_import_code_outside_the_repository(tmp_path: Path) -> None:
    from bugcontext.job.sources.rerun import _runnable

    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "evil.py").write_text("")
    (root / "tests" / "link.py").symlink_to(tmp_path / "evil.py")
    assert _runnable("tests/test_a.py::test_a", root) is None
    for test_id in (f"{tmp_path}/evil.py::test_x", "../evil.py::test_x", "tests/link.py::test_x"):
        assert _runnable(test_id, root) == "its file is outside the repository"
