"""Failure shapes without an ordinary traceback frame, the choice of a test's failure among
its reports, frames from other machines and past the end of a file, report headers of any
width, and parsing in linear time.

Logs come from the real pytest run in subprocesses on small repositories written to
``tmp_path`` (each ``--tb`` style: long, short, native, line, auto), except where the shape
cannot be produced here (a Windows log): those are written by hand in pytest's layout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from bugcontext.core.terminal import TERMINAL_SEQUENCE
from bugcontext.integrations.cli import main
from bugcontext.job.sources import Repository, gather, reports
from bugcontext.job.sources import pytest_log as pl
from bugcontext.job.sources.failure import FRAME_PAST_END, resolve_frames
from bugcontext.job.sources.files import PolicyOmission
from bugcontext.job.sources.paths import FRAME_AMBIGUOUS, FRAME_UNMATCHED
from bugcontext.job.sources.pytest_log import parse_outcomes, parse_pytest_log
from bugcontext.job.sources.reports import Frame, TestFailure, strip_ansi
from bugcontext.job.sources.runs import (
    UnknownTestError,
    failing_tests,
    parse_junit_xml,
    parse_test_output,
    summary_order,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

STYLES = ("long", "short", "native", "line", "auto")


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def run_pytest(root: Path, *args: str, columns: int | None = None) -> str:
    """Run pytest in ``root`` (no cache, no ini file, ``root`` as rootdir); both streams."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PY_COLORS", "NO_COLOR", "FORCE_COLOR", "COLUMNS"))
    }
    env["PYTHONPATH"] = str(root)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-c",
            os.devnull,
            "--rootdir",
            str(root),
            *args,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode in (1, 2, 4), proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def compiled_error(source: str, name: str) -> tuple[str, str, int]:
    """What this Python says about a file that does not compile: type, message, line."""
    try:
        compile(source, name, "exec")
    except SyntaxError as exc:
        assert exc.lineno is not None
        return type(exc).__name__, exc.msg, exc.lineno
    raise AssertionError(f"{name} compiles")


# --- errors without an ordinary traceback frame -------------------------------------------

BROKEN = "x = 1\n\ndef bad(:\n    pass\n"
INDENTED = "def f():\n    x = 1\n      y = 2\n    return x\n"
TABBED = "def f():\n        x = 1\n\ty = 2\n        return x\n"

# kind: (files, broken file, extra pytest args, failing files in error order)
UNCOMPILABLE = {
    "syntax": (
        {
            "pkg/broken.py": BROKEN,
            "tests/test_syn.py": "from pkg.broken import bad\n\n\ndef test_x():\n    bad()\n",
        },
        "pkg/broken.py",
        ["pkg/broken.py", "tests/test_syn.py"],
    ),
    "indentation": (
        {"pkg/ind.py": INDENTED, "tests/test_ind.py": "from pkg.ind import f\n\n\ndef test_x():\n    f()\n"},
        "pkg/ind.py",
        ["pkg/ind.py", "tests/test_ind.py"],
    ),
    "tab": (
        {"pkg/tab.py": TABBED, "tests/test_tab.py": "from pkg.tab import f\n\n\ndef test_x():\n    f()\n"},
        "pkg/tab.py",
        ["pkg/tab.py", "tests/test_tab.py"],
    ),
    "test file": (
        {"tests/test_self.py": "def test_x():\n    pass\n\ndef test_y(:\n    pass\n"},
        "tests/test_self.py",
        ["tests/test_self.py"],
    ),
    "conftest": (
        {"tests/conftest.py": "import os\n\nx = (1,\n", "tests/test_a.py": "def test_a():\n    pass\n"},
        "tests/conftest.py",
        ["tests/conftest.py"],
    ),
    "at run time": (
        {
            "pkg/broken.py": BROKEN,
            "tests/test_rt.py": (
                "import importlib\n\n\ndef test_rt():\n    importlib.import_module('pkg.broken')\n"
            ),
        },
        "pkg/broken.py",
        ["pkg/broken.py", "tests/test_rt.py"],
    ),
}


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("kind", sorted(UNCOMPILABLE))
def test_a_file_that_does_not_compile_is_the_failure_file(tmp_path: Path, kind: str, style: str) -> None:
    files, broken, failing = UNCOMPILABLE[kind]
    root = write(tmp_path, {"pkg/__init__.py": "", **files})
    exc_type, message, line = compiled_error(files[broken], broken)
    log = run_pytest(root, "-rA", f"--tb={style}", f"--junitxml={tmp_path / 'junit.xml'}")
    for junit in (None, (tmp_path / "junit.xml").read_bytes() if kind != "conftest" else None):
        gathered = gather(root, log, junit_xml=junit)
        assert gathered.failure is not None
        assert (gathered.failure.exception_type, gathered.failure.message) == (exc_type, message)
        # --tb=line prints the crash location alone: a test file shows up only when an
        # error at collection prints its whole traceback.
        in_log = failing if style != "line" or kind != "at run time" else failing[:1]
        assert list(gathered.failure_files) == in_log
        assert (gathered.frames[0].path, gathered.frames[0].line) == (broken, line)
        first = gathered.candidates[0]
        assert (first.path, first.reason) == (broken, "failure") and first.start <= line <= first.end
        assert gathered.policy_omissions == ()


@pytest.mark.parametrize("style", STYLES)
def test_collection_and_setup_errors_of_every_kind(tmp_path: Path, style: str) -> None:
    cases = {
        "missing": (
            {
                "pkg/uses.py": "import os\nimport missing_dep\n",
                "tests/test_m.py": "import pkg.uses\n\n\ndef test_m():\n    pass\n",
            },
            ["pkg/uses.py", "tests/test_m.py"],
            ("ModuleNotFoundError", "No module named 'missing_dep'"),
            ("pkg/uses.py", 2),
        ),
        "conftest import": (
            {
                "tests/conftest.py": "import os\nimport nothere_module\n",
                "tests/test_a.py": "def test_a():\n    pass\n",
            },
            ["tests/conftest.py"],
            ("ModuleNotFoundError", "No module named 'nothere_module'"),
            ("tests/conftest.py", 2),
        ),
        "conftest raises": (
            {
                "tests/conftest.py": "def boom():\n    raise RuntimeError('bad conf')\n\n\nboom()\n",
                "tests/test_a.py": "def test_a():\n    pass\n",
            },
            ["tests/conftest.py"],
            ("RuntimeError", "bad conf"),
            ("tests/conftest.py", 2),
        ),
        "fixture": (
            {"tests/test_f.py": "def test_ok():\n    pass\n\n\ndef test_f(nofix):\n    assert nofix\n"},
            ["tests/test_f.py"],
            (None, "fixture 'nofix' not found"),
            ("tests/test_f.py", 5),
        ),
    }
    for name, (files, failing, error, deepest) in cases.items():
        root = write(tmp_path / name.replace(" ", "_"), {"pkg/__init__.py": "", **files})
        gathered = gather(root, run_pytest(root, "-rA", f"--tb={style}"))
        assert gathered.failure is not None, name
        assert (gathered.failure.exception_type, gathered.failure.message) == error, name
        assert list(gathered.failure_files) == failing, name
        assert (gathered.frames[0].path, gathered.frames[0].line) == deepest, name


@pytest.mark.parametrize("style", STYLES)
def test_doctest_failures(tmp_path: Path, style: str) -> None:
    mod = (
        "def f(x):\n    '''Double.\n\n    >>> f(2)\n    5\n    '''\n    return x * 2\n\n\n"
        "def g(x):\n    '''\n    >>> g(1)\n    1\n    '''\n    raise ValueError('no g')\n"
    )
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": mod})
    log = run_pytest(root, "-rA", f"--tb={style}", "--doctest-modules")
    tests = failing_tests(parse_test_output(log), summary_order(log))
    assert [t.test for t in tests] == ["pkg/mod.py::pkg.mod.f", "pkg/mod.py::pkg.mod.g"]
    f, g = (t.failure for t in tests)
    assert (f.exception_type, [(x.path.endswith("pkg/mod.py"), x.line) for x in f.frames]) == (
        "DocTestFailure",
        [(True, 4)],
    )
    repo = Repository(root)
    frames, _ = resolve_frames(repo, g)
    if style == "line":  # one location line: the example
        assert [(pf.path, pf.line) for pf in frames] == [("pkg/mod.py", 12)]
    else:  # the example, then the code it ran, deepest first
        assert g.exception_type == "ValueError" and g.message == "no g"
        assert [(pf.path, pf.line) for pf in frames] == [("pkg/mod.py", 15), ("pkg/mod.py", 12)]


# --- a test's failure among its reports -----------------------------------------------------

LIB = "def inner(v):\n    return v + 'x'\n\n\ndef outer(v):\n    return inner(v)\n"
TEARDOWN = """\
import pytest
from pkg.lib import outer


@pytest.fixture
def res():
    yield 1
    raise RuntimeError('teardown complaint')


def test_td(res):
    outer(res)


@pytest.fixture
def broken_setup():
    raise KeyError('no setup')


def test_setup(broken_setup):
    pass


def test_second():
    outer(2)
"""


@pytest.mark.parametrize("style", STYLES)
def test_the_call_failure_is_the_failure_and_teardown_errors_are_extra(tmp_path: Path, style: str) -> None:
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/lib.py": LIB, "tests/test_td.py": TEARDOWN})
    log = run_pytest(root, "-rA", f"--tb={style}", "-p", "no:randomly")
    gathered = gather(root, log, test="tests/test_td.py::test_td")
    failure = gathered.failure
    assert failure is not None
    assert (failure.status, failure.phase, failure.exception_type) == ("failed", "call", "TypeError")
    # --tb=line: the crash location alone, and no location for the error at teardown.
    failing = ["pkg/lib.py"] if style == "line" else ["pkg/lib.py", "tests/test_td.py"]
    assert list(gathered.failure_files) == failing
    chosen = next(t for t in gathered.failing_tests if t.failure is failure)
    assert [(o.status, o.phase, o.exception_type) for o in chosen.others] == [
        ("error", "teardown", "RuntimeError")
    ]
    if style != "line":  # --tb=line prints no location for an error at teardown
        assert ("tests/test_td.py", 8) in [(pf.path, pf.line) for pf in gathered.frames]
    # Every failing test, in the short summary's order; the default is the first.
    order = summary_order(log)
    assert [t.test for t in gathered.failing_tests] == order
    assert set(order) == {
        "tests/test_td.py::test_td",
        "tests/test_td.py::test_setup",
        "tests/test_td.py::test_second",
    }
    setup = gather(root, log, test="tests/test_td.py::test_setup").failure
    assert setup is not None and (setup.status, setup.phase, setup.exception_type) == (
        "error",
        "setup",
        "KeyError",
    )
    assert gather(root, log).failure == next(t.failure for t in gathered.failing_tests if t.test == order[0])
    with pytest.raises(UnknownTestError, match=r"no failing test 'tests/test_td\.py::test_nothing'"):
        gather(root, log, test="tests/test_td.py::test_nothing")


def test_context_test_option_and_the_json_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/lib.py": LIB, "tests/test_td.py": TEARDOWN})
    log = tmp_path / "run.log"
    log.write_text(run_pytest(root, "-rA", "--tb=short", "-p", "no:randomly"), encoding="utf-8")
    args = ["context", "--repo", str(root), "--pytest-log", str(log), "--format", "json"]
    assert main([*args, "--test", "tests/test_td.py::test_second"]) == 0
    out = json.loads(capsys.readouterr().out)
    listed = {t["test"]: t for t in out["failing_tests"]}
    assert set(listed) == {
        "tests/test_td.py::test_td",
        "tests/test_td.py::test_setup",
        "tests/test_td.py::test_second",
    }
    assert listed["tests/test_td.py::test_second"] == {
        "test": "tests/test_td.py::test_second",
        "name": "test_second",
        "status": "failed",
        "phase": "call",
        "exception": "TypeError",
        "message": "unsupported operand type(s) for +: 'int' and 'str'",
        "selected": True,
    }
    assert [t["selected"] for t in out["failing_tests"]].count(True) == 1
    assert listed["tests/test_td.py::test_td"]["phase"] == "call"
    assert listed["tests/test_td.py::test_setup"]["phase"] == "setup"
    assert out["failure_files"] == ["pkg/lib.py", "tests/test_td.py"]
    assert main([*args, "--test", "tests/test_td.py::test_none"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no failing test 'tests/test_td.py::test_none' in the log" in captured.err


# --- frames from other machines, frames past the end -------------------------------------

CALC = "def ratio(a, b):\n    return a / b\n\n\ndef use():\n    return ratio(1, 0)\n"


def windows_log(prefix: str) -> str:
    sep = "\\"
    return (
        "================================== FAILURES ===================================\n"
        "__________________________________ test_use ___________________________________\n"
        f"tests{sep}test_calc.py:4: in test_use\n"
        "    use()\n"
        f"{prefix}pkg{sep}calc.py:6: in use\n"
        "    return ratio(1, 0)\n"
        f"{prefix}pkg{sep}calc.py:2: in ratio\n"
        "    return a / b\n"
        "E   ZeroDivisionError: division by zero\n"
        "=========================== short test summary info ===========================\n"
        "FAILED tests/test_calc.py::test_use - ZeroDivisionError: division by zero\n"
    )


@pytest.mark.parametrize("prefix", ["", "C:\\Users\\dev\\repo1\\"])
def test_windows_paths_map_to_the_repository(tmp_path: Path, prefix: str) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/calc.py": CALC,
            "tests/test_calc.py": "from pkg.calc import use\n\n\ndef test_use():\n    use()\n",
        },
    )
    gathered = gather(root, windows_log(prefix))
    assert [(pf.path, pf.line) for pf in gathered.frames] == [
        ("pkg/calc.py", 2),
        ("pkg/calc.py", 6),
        ("tests/test_calc.py", 4),
    ]
    assert gathered.policy_omissions == ()
    native = (
        "Traceback (most recent call last):\n"
        f'  File "{prefix}tests\\test_calc.py", line 4, in test_use\n'
        "    use()\n"
        f'  File "{prefix}pkg\\calc.py", line 6, in use\n'
        "    return ratio(1, 0)\n"
        f'  File "{prefix}pkg\\calc.py", line 2, in ratio\n'
        "    return a / b\n"
        "ZeroDivisionError: division by zero\n"
    )
    assert list(gather(root, native).failure_files) == ["pkg/calc.py", "tests/test_calc.py"]


@pytest.mark.parametrize("style", ["long", "short", "native", "line"])
def test_a_run_in_another_checkout_folder_maps_by_suffix(tmp_path: Path, style: str) -> None:
    root = write(
        tmp_path / "here",
        {
            "pkg/__init__.py": "",
            "pkg/calc.py": CALC,
            "tests/test_calc.py": "from pkg.calc import use\n\n\ndef test_use():\n    use()\n",
        },
    )
    log = run_pytest(root, "-rA", f"--tb={style}")
    moved = log.replace(str(root), "/home/runner/work/proj/proj")
    assert str(root) not in moved
    gathered = gather(root, moved)
    expected = (
        [("pkg/calc.py", 2)]
        if style == "line"
        else [("pkg/calc.py", 2), ("pkg/calc.py", 6), ("tests/test_calc.py", 5)]
    )
    assert [(pf.path, pf.line) for pf in gathered.frames] == expected
    assert gathered.policy_omissions == ()


def test_ambiguous_and_unmatched_frames_are_omissions(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "a/util.py": "def f():\n    pass\n",
            "b/util.py": "def f():\n    pass\n",
            "json/decoder.py": "x = 1\n",
        },
    )
    failure = TestFailure(
        "test_x",
        (
            Frame("C:\\ci\\repo\\util.py", 2),  # a/util.py or b/util.py
            Frame("C:\\ci\\repo\\gone.py", 1),  # no such file
            Frame("C:\\ci\\repo\\b\\util.py", 1),  # b/util.py alone
            Frame("C:\\Python311\\Lib\\json\\decoder.py", 1),  # installed: never mapped
            Frame("/opt/hostedtoolcache/Python/3.11.4/x64/lib/python3.11/json/decoder.py", 1),
            Frame("/home/runner/.venv/lib/site-packages/b/util.py", 1),
        ),
        "ValueError",
        "x",
        (),
    )
    frames, omitted = resolve_frames(Repository(root), failure)
    assert [(pf.path, pf.line) for pf in frames] == [("b/util.py", 1)]
    assert omitted == [
        PolicyOmission("C:/ci/repo/util.py", 2, 2, "failure", FRAME_AMBIGUOUS),
        PolicyOmission("C:/ci/repo/gone.py", 1, 1, "failure", FRAME_UNMATCHED),
    ]


def test_a_frame_past_the_end_of_its_file_is_reported(tmp_path: Path) -> None:
    root = write(
        tmp_path, {"pkg/__init__.py": "", "pkg/three.py": "a = 1\nb = 2\nc = 3\n", "pkg/calc.py": CALC}
    )
    log = (
        "Traceback (most recent call last):\n"
        '  File "pkg/calc.py", line 6, in use\n'
        "    return ratio(1, 0)\n"
        '  File "pkg/three.py", line 10, in ratio\n'
        "    return a / b\n"
        "ZeroDivisionError: division by zero\n"
    )
    gathered = gather(root, log)
    assert [(pf.path, pf.line) for pf in gathered.frames] == [("pkg/calc.py", 6)]
    assert gathered.policy_omissions[0] == PolicyOmission("pkg/three.py", 10, 10, "failure", FRAME_PAST_END)
    assert all(c.path != "pkg/three.py" or c.reason != "failure" for c in gathered.candidates)


# --- report headers of any width -----------------------------------------------------------


def pytest_sep(title: str, width: int, char: str = "_") -> str:
    """pytest's ``TerminalWriter.sep(char, title)`` at ``width`` columns."""
    fill = char * max((width - len(title) - 2) // 2, 1)
    line = f"{fill} {title} {fill}"
    return line + char if len(line) + 1 <= width else line


@pytest.mark.parametrize("style", ["long", "short", "native", "auto"])
def test_long_test_names_on_a_narrow_terminal(tmp_path: Path, style: str) -> None:
    # Names longer than the terminal: headers of one `_` a side, among `_ _ _` separators.
    names = [f"test_{'abc_' * 12}{i}" for i in range(3)]
    body = "from pkg.calc import use\n\n\n" + "\n\n".join(f"def {n}():\n    use()\n" for n in names)
    root = write(tmp_path, {"pkg/__init__.py": "", "pkg/calc.py": CALC, "tests/test_long.py": body})
    junit = tmp_path / "junit.xml"
    log = run_pytest(root, "-rA", f"--tb={style}", f"--junitxml={junit}", columns=40)
    assert f"_ {names[0]} _" in log
    failures = parse_pytest_log(log)
    assert [f.name for f in failures] == names
    for failure in failures:
        ours = [x for x in failure.frames if not x.path.startswith(("<", sys.prefix, sys.base_prefix))]
        assert [(Path(x.path).name, x.line) for x in ours] == [
            ("test_long.py", 5 + 4 * names.index(failure.name or "")),
            ("calc.py", 6),
            ("calc.py", 2),
        ]
    merged = parse_test_output(log, junit_xml=junit.read_bytes())
    assert [(f.test_id, f.exception_type) for f in merged] == [
        (f"tests/test_long.py::{n}", "ZeroDivisionError") for n in names
    ]


NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=120)
PARAM = st.text(alphabet="abc _-[]0123", max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(NAME, PARAM, st.lists(st.integers(1, 5000), min_size=1, max_size=8)), min_size=1, max_size=6
    ),
    st.integers(40, 200),
    st.sampled_from(["long", "short", "native"]),
)
def test_a_log_of_n_failures_parses_back_into_n_failures(
    tests: list[tuple[str, str, list[int]]], width: int, style: str
) -> None:
    lines = [pytest_sep("test session starts", width, "="), pytest_sep("FAILURES", width, "=")]
    expected = []
    for index, (name, param, depth) in enumerate(tests):
        title = f"test_{name}{index}" + (f"[{param}]" if param else "")
        lines.append(pytest_sep(title, width))
        frames = [(f"pkg/mod_{i}.py", line) for i, line in enumerate(depth)]
        if style == "native":
            lines.append("Traceback (most recent call last):")
            for path, line in frames:
                lines += [f'  File "{path}", line {line}, in f', "    g()", "    ^^^"]
            lines.append("ValueError: bad")
        for number, (path, line) in enumerate(frames if style != "native" else ()):
            last = number == len(frames) - 1
            if style == "long":
                lines += ["", "    def f():", ">       g()"]
                if last:
                    lines += ["E       ValueError: bad", "", f"{path}:{line}: ValueError"]
                else:
                    lines += ["", f"{path}:{line}: ", "_ " * (width // 2)]
            else:
                lines += [f"{path}:{line}: in f", "    g()"]
                if last:
                    lines.append("E   ValueError: bad")
        expected.append((title, frames))
    lines.append(pytest_sep("short test summary info", width, "="))
    failures = parse_pytest_log("\n".join(lines) + "\n")
    assert [(f.name, [(x.path, x.line) for x in f.frames]) for f in failures] == expected
    assert all((f.exception_type, f.message) == ("ValueError", "bad") for f in failures)


@pytest.mark.parametrize(
    ("line", "width", "title"),
    [
        ("_ test_x _", None, "test_x"),
        ("_ test_x _", 10, "test_x"),
        ("_ test_x _", 80, None),  # at 80 columns pytest draws longer runs
        (pytest_sep("test_x", 80), 80, "test_x"),
        (pytest_sep("test_x", 81), 81, "test_x"),
        ("__ test_" + "y" * 70 + " ___", 80, None),  # runs pytest never draws at that width
        ("_ _ _ _ _ _ _ _", None, None),
        ("_ _ _ _ _ _ _ _", 16, None),
        ("___ _ _ ___", None, None),
        ("___ test_a b ___", None, "test_a b"),
        ("___ test_a b _____", None, None),
        ("____", None, None),
    ],
)
def test_report_titles(line: str, width: int | None, title: str | None) -> None:
    assert pl._report_title(line, width) == title


# --- linear time on text we did not write -------------------------------------------------

MB = 1 << 20


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (a guard against super-linear backtracking, not a timing)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_every_pattern_runs_in_linear_time_on_adversarial_lines() -> None:
    cases = [
        # No final byte: the escape and its bracket alone are a sequence (stripped).
        (TERMINAL_SEQUENCE, "\x1b[" + "0" * MB, 0),
        (TERMINAL_SEQUENCE, "\x1b[" + "0" * MB + "m", 0),
        (TERMINAL_SEQUENCE, "\x1b]" + "0" * MB, 0),
        (reports._TIMESTAMP, "2026-" + "1" * MB, None),
        (reports._XDIST_PREFIX, "[gw" + "1" * MB, None),
        (reports._XDIST_PLATFORM, "[gw0] " + "a" * MB + " -- Pytho", None),
        (pl._LOCATION, "x:" + "1" * MB, None),
        (pl._LOCATION, "x" + ":1" * (MB // 2), 0),
        (pl._LOCATION, "<" + "a" * MB, None),
        (pl._FIXTURE_LOCATION, "file " + ", line 1" * (MB // 8) + "x", None),
        (pl._NATIVE, '  File "' + "a" * MB, None),
        (pl._NATIVE, " " * MB + "x", None),
        (pl._GROUP_MARGIN, "| " * (MB // 2) + "x", 0),
        (pl._GROUP_SPLIT, "+" + "-" * MB + "x", None),
        (pl._GROUP_SPLIT, "+" + "-+" * (MB // 2) + " 1 x", None),
        (pl._EXCEPTION_LINE, "A" * MB, None),
        (pl._EXCEPTION_NAME, "A" * MB + " ", None),
        (pl._TRACEBACK_TAIL, "A" + "Error" * (MB // 5) + "x", None),
        (pl._TRACEBACK_TAIL, "A" + "Error" * (MB // 5) + ":", 0),
        (pl._UNITTEST_RULE, "=" * MB + "x", None),
        (pl._UNITTEST_HEADER, "FAIL: " + " " * MB, 0),
        (pl._UNITTEST_BODY_RULE, "-" * MB + "x", None),
        (pl._UNITTEST_DESC, "a (b) (" + ")" * MB + "x", None),
        (pl._UNITTEST_VERBOSE, "a (b) (" + ") ... z" * (MB // 7), None),
        (pl._STATUS_FIRST, "FAILED " + " " * MB, None),
        (pl._ID_START, "a" * MB + ":", None),
        (pl._PROGRESS, "[" + " " * MB + "1", None),
        (pl._STATUS_WORD, " PASSE" * (MB // 6), None),
    ]
    with time_limit(60):
        for pattern, text, found in cases:
            match = pattern.match(text)
            assert (None if match is None else match.start()) == found, pattern.pattern
        # The patterns tried at every position (`sub`, `finditer`) on a megabyte.
        assert TERMINAL_SEQUENCE.sub("", ("\x1b[" + "0" * 1000) * (MB // 1000)) == ("0" * 1000) * (MB // 1000)
        assert TERMINAL_SEQUENCE.sub("", ("\x1b]" + "0" * 1000) * (MB // 1000)) == ""
        assert list(pl._STATUS_WORD.finditer(" PASSE" * (MB // 6))) == []


def test_the_parsers_run_in_linear_time_with_the_right_result() -> None:
    with time_limit(120):
        # `-v` status lines that almost end a status many times over.
        assert parse_outcomes("a::b" + " PASSED (x)" * (MB // 11) + "y\n") == []
        line = "tests/t.py::test_x PASSED (x)" + " PASSED (x)" * (MB // 11)
        assert parse_outcomes(line + "\n") == [reports.TestOutcome("tests/t.py::test_x", "passed")]
        # Brackets that never balance, progress prefixes, a long run of blanks.
        assert parse_outcomes("FAILED a::b[" + "]" * MB + "\n") == [
            reports.TestOutcome("a::b[" + "]" * MB, "failed", "")
        ]
        assert parse_outcomes("[ 1%] " * (MB // 6) + "FAILED a::b\n") == [
            reports.TestOutcome("a::b", "failed")
        ]
        assert parse_outcomes("a::b PASSED" + " " * MB + "[ 50%]\n") == [
            reports.TestOutcome("a::b", "passed")
        ]
        # Rules, headers and separators of a megabyte.
        assert (
            parse_pytest_log(
                "=" * MB
                + " FAILURES "
                + "=" * MB
                + "\n"
                + "_" * MB
                + " test_x "
                + "_" * MB
                + "\nE   ValueError: v\nt.py:3: ValueError\n"
            )[0].name
            == "test_x"
        )
        assert parse_pytest_log("=== FAILURES ===\n___ test_y ___\n" + "_ " * MB + "\nt.py:1: in f\n")[
            0
        ].frames == (Frame("t.py", 1, "f"),)
        # An escape sequence with no final byte: the escape and its bracket are dropped.
        assert strip_ansi("\x1b[" + "0" * MB) == "0" * MB
        assert strip_ansi("\x1b]" + "0" * MB + "\x07x") == "x"
        assert (
            parse_pytest_log(
                "Traceback (most recent call last):\n" + '  File "' + "a" * MB + "\nValueError: x\n"
            )
            == []
        )
        big = "A" * MB
        case = f'<testcase classname="t" name="x"><failure message="{big}">{big}</failure></testcase>'
        report = parse_junit_xml(f"<testsuite>{case}</testsuite>")
        assert [(f.test_id, f.exception_type, f.message) for f in report] == [("t.x", None, big)]


@pytest.mark.parametrize("style", STYLES)
def test_captured_output_that_looks_like_a_header_is_not_a_report(tmp_path: Path, style: str) -> None:
    test = (
        "def test_p():\n"
        "    print('______ fake header ______')\n"
        "    print('pkg/x.py:3: in f')\n"
        "    assert 1 == 2\n"
        "\n\n"
        "def test_q():\n"
        "    assert 2 == 3\n"
    )
    root = write(tmp_path, {"tests/test_p.py": test})
    junit = tmp_path / "junit.xml"
    log = run_pytest(root, "-rA", f"--tb={style}", f"--junitxml={junit}")
    assert "______ fake header ______" in log
    expected = [("tests/test_p.py::test_p", "AssertionError"), ("tests/test_p.py::test_q", "AssertionError")]
    for failures in (parse_test_output(log), parse_test_output(log, junit_xml=junit.read_bytes())):
        assert [(f.test_id, f.exception_type) for f in failures] == expected
        assert [Path(f.frames[-1].path).as_posix()[-len("tests/test_p.py") :] for f in failures] == [
            "tests/test_p.py",
            "tests/test_p.py",
        ]
        assert not any(x.path == "pkg/x.py" for f in failures for x in f.frames)


def test_context_names_the_syntax_error_and_the_broken_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files, broken, failing = UNCOMPILABLE["syntax"]
    root = write(tmp_path / "repo", {"pkg/__init__.py": "", **files})
    exc_type, message, line = compiled_error(files[broken], broken)
    log = tmp_path / "run.log"
    log.write_text(run_pytest(root, "-rA", "--tb=short"), encoding="utf-8")
    assert main(["context", "--repo", str(root), "--pytest-log", str(log)]) == 0
    report = capsys.readouterr().err  # standard output holds the section alone
    assert f"- error: {exc_type}: {message}\n" in report
    assert "- failure file: pkg/broken.py\n" in report
    assert main(["context", "--repo", str(root), "--pytest-log", str(log), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["failure_files"] == failing
    first = data["items"][0]
    assert (first["path"], first["reason"]) == (broken, "failure") and first["start"] <= line <= first["end"]
    assert data["failing_tests"] == [
        {
            "test": "tests/test_syn.py",
            "name": "ERROR collecting tests/test_syn.py",
            "status": "error",
            "phase": "collect",
            "exception": exc_type,
            "message": message,
            "selected": True,
        }
    ]


def test_unittest_teardown_errors_are_extra_evidence(tmp_path: Path) -> None:
    test = (
        "import unittest\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def tearDown(self):\n"
        "        raise RuntimeError('teardown complaint')\n\n"
        "    def test_a(self):\n"
        "        1 + 'x'\n\n"
        "    def test_b(self):\n"
        "        self.assertEqual(1, 2)\n"
    )
    root = write(tmp_path, {"test_u.py": test})
    proc = subprocess.run(
        [sys.executable, "-m", "unittest", "-v", "test_u"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    log = proc.stdout + proc.stderr
    # unittest prints test_b's error at teardown before its failure.
    assert log.index("ERROR: test_b") < log.index("FAIL: test_b")
    gathered = gather(root, log)
    assert [t.test for t in gathered.failing_tests] == ["test_u.T.test_a", "test_u.T.test_b"]
    summary = [
        (
            t.failure.status,
            t.failure.phase,
            t.failure.exception_type,
            [(o.phase, o.exception_type) for o in t.others],
        )
        for t in gathered.failing_tests
    ]
    assert summary == [
        ("error", "call", "TypeError", [("teardown", "RuntimeError")]),
        ("failed", "call", "AssertionError", [("teardown", "RuntimeError")]),
    ]
    assert gathered.failure is gathered.failing_tests[0].failure
    chosen = gather(root, log, test="test_u.T.test_b")
    assert chosen.failure is not None and chosen.failure.exception_type == "AssertionError"
    assert [(pf.path, pf.line) for pf in chosen.frames] == [("test_u.py", 12), ("test_u.py", 6)]


@pytest.mark.parametrize(
    ("sequence", "kind"),
    [
        ("\x1b[31m", "colour (CSI)"),
        ("\x1b[2K\x1b[1G", "erase line, cursor to column 1 (CSI)"),
        ("\x9b1m", "CSI in its one-character C1 form"),
        ("\x1b]0;evil title\x07", "window title (OSC, ended by BEL)"),
        ("\x1b]8;;http://evil\x1b\\", "OSC 8 link start (ended by ESC backslash)"),
        ("\x1b]8;;\x1b\\", "OSC 8 link end"),
        ("\x1bP1$r0m\x1b\\", "device control string (DCS)"),
        ("\x1b_private\x1b\\", "application program command (APC)"),
        ("\x1b(B", "character set designation (ECMA-35)"),
        ("\x1b=", "keypad mode (two characters)"),
        ("\x07", "a bell alone"),
        ("\x08", "a backspace alone"),
    ],
)
def test_every_terminal_sequence_is_stripped_whole(sequence: str, kind: str) -> None:
    """A window title or link around an exception's words once left ``0;evil title`` and a
    bell (``^G``) in the section, and hid the exception type; every kind of sequence goes whole,
    and no control character stays."""
    line = f"FAILED tests/test_x.py::test_x - Assertion{sequence}Error: bo{sequence}om"
    assert strip_ansi(line) == "FAILED tests/test_x.py::test_x - AssertionError: boom", kind
    log = f"{line}\n{sequence}= 1 failed in 0.01s =\n"
    failure = parse_test_output(log)[0]
    assert (failure.test_id, failure.exception_type, failure.message) == (
        "tests/test_x.py::test_x",
        "AssertionError",
        "boom",
    ), kind


def test_a_title_and_a_link_in_the_section_of_a_real_log(tmp_path: Path) -> None:
    """The context section of a log whose summary line carries a window title and an OSC 8
    link holds the words and no control character."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_x.py").write_text("def test_x():\n    assert 1 == 2\n", encoding="utf-8")
    log = tmp_path / "osc.log"
    log.write_text(
        "FAILED tests/test_x.py::test_x - AssertionError: boom\x1b]0;evil title\x07 tail"
        "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.md"
    args = ["context", "--repo", str(repo), "--log", str(log), "--no-cache", "--max-chars", "2000"]
    with open(out, "w", encoding="utf-8") as stdout:
        command = [sys.executable, "-m", "bugcontext", *args]
        proc = subprocess.run(command, stdout=stdout, stderr=subprocess.PIPE)
    assert proc.returncode == 0, proc.stderr
    section = out.read_text(encoding="utf-8")
    assert "AssertionError: boom taillink" in section
    assert not any((ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in section)
