"""Failure evidence from real test runs: every output shape, chains, frames, windows.

A small package with pytest tests, unittest tests and two crashing scripts is written to a
temporary folder (once per module); the real pytest (each ``--tb`` style, ``-q``, ``-v``,
``--color=yes``, ``--junitxml``, pytest-xdist when installed), the real ``unittest`` and
the real interpreter run on it in subprocesses, and the tests read what they printed. A
hand-written pytest-xdist log with ``[gwN]`` prefixes lives in ``tests/data/logs/``.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import bugcontext
import pytest
from bugcontext.integrations.cli import main
from bugcontext.job.sources import Repository, gather
from bugcontext.job.sources.failure import (
    assertion_in_test,
    called_code_windows,
    failure_files,
    failure_spans,
    failure_windows,
    is_test_file,
    locate_test,
    merge_windows,
    project_frames,
)
from bugcontext.job.sources.pytest_log import parse_outcomes, parse_pytest_log
from bugcontext.job.sources.reports import LogFormatError, TestFailure, is_junit_xml
from bugcontext.job.sources.runs import parse_junit_xml, parse_test_output
from bugcontext.job.sources.window import RADIUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data" / "logs"

CORE = '''\
import json
import re

LIMIT = 10


def compute(x):
    if x > LIMIT:
        raise ValueError(f"too big: {x}")
    return x


def wrap(x):
    try:
        return compute(x)
    except ValueError as exc:
        raise RuntimeError("wrapped") from exc


def handle(x):
    try:
        return compute(x)
    except ValueError:
        return {}[x]


def add(a, b):
    return a - b  # the bug


def load(text):
    return json.loads(text)


def run_code(source):
    namespace = {}
    exec(compile(source, "<string>", "exec"), namespace)
    return namespace


class Parser:
    """Parses things."""

    def __init__(self, strict):
        self.strict = strict

    @staticmethod
    def clean(v):
        return re.sub(r"a", lambda m: str(compute(int(v))), "a")

    def parse(self, text):
        return add(len(text), 1)
'''

API = "from .core import *  # noqa: F403\n"

HELPERS = """\
def expected_sum(a, b):
    return a + b
"""

TESTS = """\
import unittest

import pytest

import pkg.api as api
from pkg import core
from pkg.core import Parser, add, compute, handle, load, run_code, wrap
from tests.helpers import expected_sum


def test_ok():
    assert compute(1) == 1


def test_assert_in_body():
    value = add(2, 3)
    assert value == expected_sum(2, 3)


def test_cause():
    wrap(50)


def test_context():
    handle(50)


def test_stdlib():
    load("{bad")


def test_exec():
    run_code("from pkg.core import compute\\ncompute(99)")


@pytest.mark.parametrize("v", ["a b-[1]", "x - y"])
def test_param(v):
    assert Parser.clean(v) == "x"


@pytest.fixture
def broken():
    raise OSError("no fixture")


def test_fixture_error(broken):
    pass


def test_module_alias():
    assert api.add(1, 1) == 2


def test_instance():
    parser = Parser(strict=True)
    result = parser.parse("abc")
    assert result == 4


class TestCase(unittest.TestCase):
    def test_eq(self):
        self.assertEqual(core.add(1, 1), 2)
"""

UNITTESTS = '''\
import unittest

from pkg.core import add, wrap


class TestCase(unittest.TestCase):
    def test_eq(self):
        """Adds two numbers."""
        self.assertEqual(add(1, 1), 2)

    def test_err(self):
        wrap(50)

    def test_ok(self):
        pass

    def test_sub(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)

    def test_list(self):
        self.assertEqual([[1], []], [[1]])
'''

CRASH = """\
from pkg.core import handle


def main():
    return handle(40)


main()
"""

GROUP = """\
from pkg.core import compute


def main():
    errors = []
    for x in (11, 12):
        try:
            compute(x)
        except ValueError as exc:
            errors.append(exc)
    raise ExceptionGroup("several", errors)


main()
"""

TEST_NAMES = {
    "test_assert_in_body",
    "test_cause",
    "test_context",
    "test_stdlib",
    "test_exec",
    "test_param[a b-[1]]",
    "test_param[x - y]",
    "test_module_alias",
    "test_instance",
    "TestCase.test_eq",
}


def line_of(path: Path, text: str) -> int:
    """1-based number of the first line of ``path`` containing ``text``."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("evidence")
    files = {
        "pkg/__init__.py": "",
        "pkg/core.py": CORE,
        "pkg/api.py": API,
        "tests/__init__.py": "",
        "tests/helpers.py": HELPERS,
        "tests/test_core.py": TESTS,
        "ut/__init__.py": "",
        "ut/test_ut.py": UNITTESTS,
        "tools/crash.py": CRASH,
        "tools/group.py": GROUP,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def run(repo: Path, *args: str, expect: tuple[int, ...] = (1,)) -> str:
    """Run ``python args...`` in ``repo`` and return what it printed (both streams)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PY_COLORS", "NO_COLOR", "FORCE_COLOR"))
    }
    env["PYTHONPATH"] = str(repo)
    proc = subprocess.run(
        [sys.executable, *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode in expect, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def run_pytest(repo: Path, *args: str) -> str:
    return run(repo, "-m", "pytest", "-p", "no:cacheprovider", "tests/test_core.py", *args)


@pytest.fixture(scope="module")
def logs(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    found = {f"tb={style}": run_pytest(repo, "-rA", f"--tb={style}") for style in ("long", "short", "native")}
    found["tb=line"] = run_pytest(repo, "-rA", "--tb=line")
    found["tb=no"] = run_pytest(repo, "-rA", "--tb=no")
    found["q"] = run_pytest(repo, "-q")
    found["v"] = run_pytest(repo, "-v", "-rA")
    found["colour"] = run_pytest(repo, "-rA", "--color=yes")
    junit = tmp_path_factory.mktemp("junit") / "report.xml"
    found["junit-log"] = run_pytest(repo, "-rA", "--tb=line", f"--junitxml={junit}")
    found["junit"] = junit.read_text(encoding="utf-8")
    found["unittest"] = run(repo, "-m", "unittest", "-v", "ut.test_ut")
    found["crash"] = run(repo, "tools/crash.py")
    found["group"] = run(repo, "tools/group.py")
    return found


def by_name(failures: list[TestFailure]) -> dict[str, TestFailure]:
    return {f.name or "": f for f in failures}


def project(repo: Path, failure: TestFailure) -> list[tuple[str, int]]:
    return [(pf.path, pf.line) for pf in project_frames(Repository(repo), failure)]


# --- pytest's text output -----------------------------------------------------------------


def test_long_short_and_native_reports_agree(repo: Path, logs: dict[str, str]) -> None:
    parsed = {style: by_name(parse_pytest_log(logs[f"tb={style}"])) for style in ("long", "short", "native")}
    for style, failures in parsed.items():
        assert set(failures) == TEST_NAMES | {"ERROR at setup of test_fixture_error"}, style
        assert failures["test_cause"].test_id == "tests/test_core.py::test_cause"
        assert failures["test_param[x - y]"].test_id == "tests/test_core.py::test_param[x - y]"
        assert failures["TestCase.test_eq"].test_id == "tests/test_core.py::TestCase::test_eq"
        assert failures["ERROR at setup of test_fixture_error"].status == "error"
        assert failures["test_cause"].status == "failed"
        assert failures["test_assert_in_body"].exception_type == "AssertionError"
        assert failures["test_context"].exception_type == "KeyError"
        assert failures["test_param[a b-[1]]"].message == "invalid literal for int() with base 10: 'a b-[1]'"
    for name in TEST_NAMES:
        frames = {style: project(repo, parsed[style][name]) for style in parsed}
        assert frames["long"] == frames["short"] == frames["native"], name
        assert frames["long"], name


def test_line_style_gives_each_failure_its_crash_location_and_id(repo: Path, logs: dict[str, str]) -> None:
    failures = by_name(parse_pytest_log(logs["tb=line"]))
    assert set(failures) == TEST_NAMES | {"ERROR at setup of test_fixture_error"}
    core = repo / "pkg" / "core.py"
    cause = failures["test_cause"]
    assert (cause.test_id, cause.exception_type, cause.message) == (
        "tests/test_core.py::test_cause",
        "RuntimeError",
        "wrapped",
    )
    assert project(repo, cause) == [("pkg/core.py", line_of(core, 'raise RuntimeError("wrapped")'))]
    # Both links of the chain are there, with their messages; only the last has a frame.
    assert [(link.exception_type, link.relation) for link in cause.chain] == [
        ("ValueError", "cause"),
        ("RuntimeError", None),
    ]
    # unittest's assertEqual fails inside the standard library: the test id locates the test.
    eq = failures["TestCase.test_eq"]
    assert all("unittest" in f.path for f in eq.frames)
    tests = repo / "tests" / "test_core.py"
    assert project(repo, eq) == [("tests/test_core.py", line_of(tests, "def test_eq"))]


def test_no_traceback_summary_only_failures_are_located_by_id(repo: Path, logs: dict[str, str]) -> None:
    failures = by_name(parse_pytest_log(logs["tb=no"]))
    assert set(failures) == TEST_NAMES | {"test_fixture_error"}
    context = failures["test_context"]
    assert (context.origin, context.frames, context.exception_type, context.message) == (
        "summary",
        (),
        "KeyError",
        "50",
    )
    assert failures["test_fixture_error"].status == "error"
    tests = repo / "tests" / "test_core.py"
    assert project(repo, failures["test_param[x - y]"]) == [
        ("tests/test_core.py", line_of(tests, "def test_param"))
    ]
    gathered = gather(repo, logs["tb=no"])
    assert gathered.failure_file == "tests/test_core.py"
    assert any(c.reason == "failure" and c.path == "tests/test_core.py" for c in gathered.candidates)


def test_quiet_verbose_and_colour_runs_parse_the_same(logs: dict[str, str]) -> None:
    def summary(text: str) -> list[tuple[object, ...]]:
        # -v names the function on more location lines: compare where the frames are.
        return sorted(
            (
                f.name,
                f.test_id,
                f.status,
                f.exception_type,
                f.message,
                [(x.path, x.line, x.segment) for x in f.frames],
            )
            for f in parse_pytest_log(text)
        )

    assert "\x1b[" in logs["colour"]
    reference = summary(logs["tb=long"])
    assert summary(logs["colour"]) == reference
    assert summary(logs["v"]) == reference
    assert summary(logs["q"]) == reference  # -q: no rule around the final counts, -ra ids


def test_status_lines_before_and_after_the_id(logs: dict[str, str]) -> None:
    outcomes = {(o.test_id, o.status) for o in parse_outcomes(logs["v"])}
    expected_failed = {
        "tests/test_core.py::test_param[a b-[1]]",
        "tests/test_core.py::test_param[x - y]",
        "tests/test_core.py::TestCase::test_eq",
    }
    assert {(i, "failed") for i in expected_failed} <= outcomes
    assert ("tests/test_core.py::test_ok", "passed") in outcomes
    assert ("tests/test_core.py::test_fixture_error", "error") in outcomes
    # Every reported id is a real test id: no progress marker, no file line, once each.
    ids = [o.test_id for o in parse_outcomes(logs["v"])]
    assert all("::" in i and "%" not in i and not i.startswith("[") for i in ids)
    summary = {o.test_id: o for o in parse_outcomes(logs["tb=long"])}
    assert summary["tests/test_core.py::test_param[x - y]"].message.startswith("ValueError: invalid literal")
    assert summary["tests/test_core.py::test_cause"].message == "RuntimeError: wrapped"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("FAILED tests/t.py::test_x[a b-[1]] - AssertionError: x", ("tests/t.py::test_x[a b-[1]]", "failed")),
        ("FAILED tests/t.py::test_x[a - b] - ValueError: [1] - 2", ("tests/t.py::test_x[a - b]", "failed")),
        ("FAILED tests/t.py::test_x[a - b]", ("tests/t.py::test_x[a - b]", "failed")),
        ("ERROR tests/t.py::TestC::test_y", ("tests/t.py::TestC::test_y", "error")),
        ("FAILED tests/t.py::test_z - msg with [brackets] - and dashes", ("tests/t.py::test_z", "failed")),
        ("PASSED tests/t.py::test_ok", ("tests/t.py::test_ok", "passed")),
        (
            "tests/t.py::test_x[a b] PASSED                          [ 50%]",
            ("tests/t.py::test_x[a b]", "passed"),
        ),
        ("tests/t.py::test_x[a b] FAILED [100%]", ("tests/t.py::test_x[a b]", "failed")),
        ("tests/t.py::test_s SKIPPED (not today)    [ 75%]", ("tests/t.py::test_s", "skipped")),
        ("[gw3] [ 10%] XFAIL tests/t.py::test_x[1] ", ("tests/t.py::test_x[1]", "xfailed")),
        ("test_x (pkg.tests.TestC.test_x) ... FAIL", ("pkg.tests.TestC.test_x", "failed")),
        ("test_x (pkg.tests.TestC) ... ok", ("pkg.tests.TestC.test_x", "passed")),
        ("test_x (pkg.tests.TestC.test_x) ... skipped 'later'", ("pkg.tests.TestC.test_x", "skipped")),
    ],
)
def test_one_status_line(line: str, expected: tuple[str, str]) -> None:
    text = "=" * 10 + " short test summary info " + "=" * 10 + "\n" + line + "\n"
    assert [(o.test_id, o.status) for o in parse_outcomes(text)] == [expected]


@pytest.mark.parametrize(
    "line",
    [
        "tests/test_core.py .F.sFx                                         [ 42%]",
        "[100%]",
        ".F.                                                              [100%]",
        "[gw0] [100%]",
        "ERROR    root:app.py:12 could not connect",
        "SKIPPED [1] tests/t.py:20: unconditional skip",
        "ERROR: the build failed",
    ],
)
def test_progress_and_other_lines_are_not_tests(line: str) -> None:
    assert parse_outcomes(f"{line}\n") == []
    assert parse_pytest_log(f"{line}\n") == []


def test_xdist_run_parses_like_a_plain_run(repo: Path, logs: dict[str, str]) -> None:
    if importlib.util.find_spec("xdist") is None:
        pytest.skip("pytest-xdist is not installed")
    log = run_pytest(repo, "-p", "xdist", "-n", "2", "-v", "-rA")
    assert "[gw0]" in log or "[gw1]" in log
    xdist = by_name(parse_pytest_log(log))
    plain = by_name(parse_pytest_log(logs["tb=long"]))
    assert set(xdist) == set(plain)
    for name, failure in plain.items():
        other = xdist[name]
        assert (other.test_id, other.status, other.exception_type) == (
            failure.test_id,
            failure.status,
            failure.exception_type,
        ), name
        assert [(x.path, x.line) for x in other.frames] == [(x.path, x.line) for x in failure.frames], name


def test_hand_written_xdist_log_with_prefixes() -> None:
    text = (DATA / "xdist_prefixed.log").read_text(encoding="utf-8")
    failures = parse_pytest_log(text)
    assert [(f.name, f.test_id, f.status, f.exception_type, f.message) for f in failures] == [
        (
            "ERROR at setup of test_db",
            "tests/test_app.py::test_db",
            "error",
            "ConnectionError",
            "no database",
        ),
        (
            "test_total[a b-[1]]",
            "tests/test_app.py::test_total[a b-[1]]",
            "failed",
            "TypeError",
            "bad operand",
        ),
    ]
    assert [(f.path, f.line, f.function) for f in failures[0].frames] == [("tests/conftest.py", 5, "db")]
    assert [(f.path, f.line) for f in failures[1].frames] == [
        ("tests/test_app.py", 12),
        ("app/calc.py", 4),
        ("app/calc.py", 8),
    ]
    assert [(o.test_id, o.status) for o in parse_outcomes(text)] == [
        ("tests/test_app.py::test_ok", "passed"),
        ("tests/test_app.py::test_total[a b-[1]]", "failed"),
        ("tests/test_app.py::test_db", "error"),
        ("tests/test_app.py::test_later", "skipped"),
    ]
    # A CI job log: time stamps and colour around the same lines change nothing.
    stamped = "".join(f"2024-05-01T12:00:00.1234567Z \x1b[1m{line}\x1b[0m\n" for line in text.splitlines())
    assert parse_pytest_log(stamped) == failures


# --- JUnit XML ----------------------------------------------------------------------------


def test_junit_report_gives_the_same_failures_as_the_log(repo: Path, logs: dict[str, str]) -> None:
    assert is_junit_xml(logs["junit"]) and not is_junit_xml(logs["tb=long"])
    reported = by_name(parse_junit_xml(logs["junit"]))
    # pytest wrote the JUnit texts in the run's --tb=line style: the `E` lines alone.
    line_style = by_name(parse_pytest_log(logs["junit-log"]))
    assert set(reported) == TEST_NAMES | {"test_fixture_error"}
    cause = reported["test_cause"]
    assert (cause.test_id, cause.origin, cause.exception_type, cause.message) == (
        "tests.test_core.test_cause",
        "junit",
        "RuntimeError",
        "wrapped",
    )
    assert reported["test_fixture_error"].status == "error"
    assert reported["TestCase.test_eq"].test_id == "tests.test_core.TestCase.test_eq"
    tests = repo / "tests" / "test_core.py"
    for name in TEST_NAMES:
        assert reported[name].frames == (), name
        assert reported[name].exception_type == line_style[name].exception_type, name
        assert reported[name].message == line_style[name].message, name
        # No frame: the test's own definition, found from the class name and test name.
        function = name.split(".")[-1].split("[")[0]
        assert project(repo, reported[name]) == [("tests/test_core.py", line_of(tests, f"def {function}("))]
    # Merged with the log, the log's failures keep their node ids and crash locations.
    merged = by_name(parse_test_output(logs["junit-log"], junit_xml=logs["junit"].encode()))
    assert set(merged) == set(line_style)
    assert merged["test_cause"].test_id == "tests/test_core.py::test_cause"
    assert merged["test_cause"].frames == line_style["test_cause"].frames


def test_junit_report_fills_in_a_log_without_tracebacks(repo: Path, logs: dict[str, str]) -> None:
    long_junit = repo.parent / "long.xml"
    run_pytest(repo, f"--junitxml={long_junit}", "--tb=long")
    xml = long_junit.read_bytes()
    long = by_name(parse_pytest_log(logs["tb=long"]))
    merged = by_name(parse_test_output(logs["tb=no"], junit_xml=xml))
    for name in TEST_NAMES:
        assert merged[name].frames == long[name].frames, name
        assert merged[name].test_id == long[name].test_id, name
        assert [link.exception_type for link in merged[name].chain] == [
            link.exception_type for link in long[name].chain
        ]
    gathered = gather(repo, logs["tb=no"], junit_xml=xml)
    assert gathered.failure_file == "tests/test_core.py"  # the fixture error comes first
    assert gather(repo, xml.decode()).failure_files == gathered.failure_files


@pytest.mark.parametrize(
    "document",
    [
        '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        '<testsuite><testcase name="t"><failure message="x">&b;</failure></testcase></testsuite>',
        '<?xml version="1.0"?><!DOCTYPE t [<!ENTITY e SYSTEM "file:///etc/hostname">]>'
        '<testsuite><testcase name="t"><failure>&e;</failure></testcase></testsuite>',
        "<testsuite><testcase name='t'><failure>unclosed</testcase>",
        "<?xml version='1.0'?>",
    ],
)
def test_unsafe_or_malformed_junit_is_refused(document: str) -> None:
    with pytest.raises(LogFormatError):
        parse_junit_xml(document)
    with pytest.raises(LogFormatError):
        parse_test_output(document.encode())


def test_junit_from_other_reporters() -> None:
    # An xUnit report of a unittest run: a Python traceback in the text, the type attribute.
    document = textwrap.dedent("""\
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites>
          <testsuite name="suite" tests="2" failures="1" errors="1">
            <testcase classname="ut.test_ut.TestCase" name="test_eq">
              <failure type="AssertionError" message="0 != 2"><![CDATA[Traceback (most recent call last):
          File "ut/test_ut.py", line 9, in test_eq
            self.assertEqual(add(1, 1), 2)
        AssertionError: 0 != 2
        ]]></failure>
            </testcase>
            <testcase classname="ut.test_ut.TestCase" name="test_gone">
              <error type="ImportError" message="no module named gone"/>
            </testcase>
            <testcase classname="ut.test_ut.TestCase" name="test_ok"/>
          </testsuite>
        </testsuites>
        """)
    eq, gone = parse_test_output(document)
    assert (eq.name, eq.test_id, eq.exception_type, eq.message) == (
        "TestCase.test_eq",
        "ut.test_ut.TestCase.test_eq",
        "AssertionError",
        "0 != 2",
    )
    assert [(f.path, f.line, f.function) for f in eq.frames] == [("ut/test_ut.py", 9, "test_eq")]
    assert (gone.status, gone.exception_type, gone.message, gone.frames) == (
        "error",
        "ImportError",
        "no module named gone",
        (),
    )


# --- unittest and plain tracebacks ----------------------------------------------------------


def test_unittest_output(repo: Path, logs: dict[str, str]) -> None:
    failures = parse_pytest_log(logs["unittest"])
    assert [(f.name, f.test_id, f.status, f.origin) for f in failures] == [
        ("TestCase.test_err", "ut.test_ut.TestCase.test_err", "error", "unittest"),
        ("TestCase.test_eq", "ut.test_ut.TestCase.test_eq", "failed", "unittest"),
        ("TestCase.test_list", "ut.test_ut.TestCase.test_list", "failed", "unittest"),
        ("TestCase.test_sub (i=1)", "ut.test_ut.TestCase.test_sub", "failed", "unittest"),
    ]
    err, eq, lists, sub = failures
    assert [(link.exception_type, link.message, link.relation) for link in err.chain] == [
        ("ValueError", "too big: 50", "cause"),
        ("RuntimeError", "wrapped", None),
    ]
    core, ut = repo / "pkg" / "core.py", repo / "ut" / "test_ut.py"
    assert project(repo, err)[:2] == [
        ("pkg/core.py", line_of(core, 'raise RuntimeError("wrapped")')),
        ("ut/test_ut.py", line_of(ut, "wrap(50)")),
    ]
    assert (eq.exception_type, eq.message) == ("AssertionError", "0 != 2")
    # A multi-line assertion message is kept whole, to the end of the block.
    assert lists.message == "Lists differ: [[1], []] != [[1]]"
    assert lists.message_lines[-2:] == ("- [[1], []]", "+ [[1]]")
    assert project(repo, sub) == [("ut/test_ut.py", line_of(ut, "self.assertEqual(i, 0)"))]
    assert [(o.test_id, o.status) for o in parse_outcomes(logs["unittest"])] == [
        ("ut.test_ut.TestCase.test_err", "error"),
        ("ut.test_ut.TestCase.test_list", "failed"),
        ("ut.test_ut.TestCase.test_ok", "passed"),
        ("ut.test_ut.TestCase.test_sub", "failed"),
        ("ut.test_ut.TestCase.test_eq", "failed"),
    ]


def test_plain_traceback_with_a_handled_exception(repo: Path, logs: dict[str, str]) -> None:
    (failure,) = parse_pytest_log(logs["crash"])
    assert (failure.name, failure.origin, failure.exception_type, failure.message) == (
        None,
        "traceback",
        "KeyError",
        "40",
    )
    assert [(link.exception_type, link.relation) for link in failure.chain] == [
        ("ValueError", "context"),
        ("KeyError", None),
    ]
    core, crash = repo / "pkg" / "core.py", repo / "tools" / "crash.py"
    frames = project_frames(Repository(repo), failure)
    # The final exception's frames first (deepest first), then the root cause's.
    assert [(pf.path, pf.line, pf.frame.segment) for pf in frames] == [
        ("pkg/core.py", line_of(core, "return {}[x]"), 1),
        ("tools/crash.py", line_of(crash, "return handle(40)"), 1),
        ("tools/crash.py", len(CRASH.splitlines()), 1),
        ("pkg/core.py", line_of(core, 'raise ValueError(f"too big'), 0),
        ("pkg/core.py", line_of(core, "def handle") + 2, 0),
    ]
    assert failure_files(frames) == ["pkg/core.py", "tools/crash.py"]


def test_separate_tracebacks_are_separate_failures() -> None:
    one = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nKeyError: 1\n'
    two = 'Traceback (most recent call last):\n  File "b.py", line 2, in f\nOSError: disk\n'
    chained = f"{one}\nDuring handling of the above exception, another exception occurred:\n\n{two}"
    log = f"starting\n{one}some output\n{chained}done\n"
    first, second = parse_pytest_log(log)
    assert (first.exception_type, [f.path for f in first.frames]) == ("KeyError", ["a.py"])
    assert (second.exception_type, second.message) == ("OSError", "disk")
    assert [(link.exception_type, link.relation) for link in second.chain] == [
        ("KeyError", "context"),
        ("OSError", None),
    ]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="ExceptionGroup is new in Python 3.11")
def test_exception_group(repo: Path, logs: dict[str, str]) -> None:
    (failure,) = parse_pytest_log(logs["group"])
    types = [link.exception_type for link in failure.chain]
    assert types[0] == "ExceptionGroup"
    assert types[1:] == ["ValueError", "ValueError"]
    assert [link.relation for link in failure.chain] == ["group", "group", None]
    assert [link.message for link in failure.chain[1:]] == ["too big: 11", "too big: 12"]
    frames = project_frames(Repository(repo), failure)
    assert frames[0].path == "pkg/core.py"
    assert "tools/group.py" in failure_files(frames)


# --- chains, frames outside the repository, failure files -----------------------------------


def test_chained_exceptions_keep_every_link_in_order(repo: Path, logs: dict[str, str]) -> None:
    core = repo / "pkg" / "core.py"
    for style in ("long", "short", "native"):
        failures = by_name(parse_pytest_log(logs[f"tb={style}"]))
        cause, context = failures["test_cause"], failures["test_context"]
        assert [(link.exception_type, link.message, link.relation) for link in cause.chain] == [
            ("ValueError", "too big: 50", "cause"),
            ("RuntimeError", "wrapped", None),
        ], style
        assert [(link.exception_type, link.relation) for link in context.chain] == [
            ("ValueError", "context"),
            ("KeyError", None),
        ], style
        assert "ValueError: too big: 50" in cause.message_lines
        frames = project_frames(Repository(repo), cause)
        # The root cause's frames are project frames too, after the final exception's.
        assert [(pf.path, pf.line, pf.frame.segment, pf.distance) for pf in frames] == [
            ("pkg/core.py", line_of(core, 'raise RuntimeError("wrapped")'), 1, 0),
            ("tests/test_core.py", line_of(repo / "tests" / "test_core.py", "    wrap(50)"), 1, 1),
            ("pkg/core.py", line_of(core, 'raise ValueError(f"too big'), 0, 0),
            ("pkg/core.py", line_of(core, "        return compute(x)"), 0, 1),
        ], style
        assert failure_files(frames) == ["pkg/core.py", "tests/test_core.py"]


def test_frames_outside_the_repository_are_never_failure_files(repo: Path, logs: dict[str, str]) -> None:
    failures = by_name(parse_pytest_log(logs["tb=long"]))
    core = repo / "pkg" / "core.py"
    # json's frames (the standard library) lie below the deepest project frame.
    stdlib = failures["test_stdlib"]
    assert any(f.path.endswith(("json/decoder.py", "json\\decoder.py")) for f in stdlib.frames)
    frames = project_frames(Repository(repo), stdlib)
    assert (frames[0].path, frames[0].line) == ("pkg/core.py", line_of(core, "return json.loads(text)"))
    # exec'd code: the `<string>` frame is skipped, the code it called is the failure file.
    native = by_name(parse_pytest_log(logs["tb=native"]))["test_exec"]
    assert any(f.path == "<string>" for f in native.frames)
    frames = project_frames(Repository(repo), native)
    assert (frames[0].path, frames[0].line) == ("pkg/core.py", line_of(core, 'raise ValueError(f"too big'))
    assert "<string>" not in failure_files(frames)
    # re.sub between two project frames: the lambda's frame is the deepest.
    param = failures["test_param[x - y]"]
    frames = project_frames(Repository(repo), param)
    assert [pf.path for pf in frames] == ["pkg/core.py", "pkg/core.py", "tests/test_core.py"]
    assert frames[0].line == line_of(core, "return re.sub")


def test_site_packages_and_frozen_frames_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("def go():\n    return dep.call()\n", encoding="utf-8")
    site = tmp_path / "lib" / "site-packages" / "dep"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("def call():\n    raise ValueError('deep')\n", encoding="utf-8")
    log = textwrap.dedent(f"""\
        Traceback (most recent call last):
          File "<frozen runpy>", line 198, in _run_module_as_main
          File "{tmp_path}/app/main.py", line 2, in go
            return dep.call()
          File "{site}/__init__.py", line 2, in call
            raise ValueError('deep')
          File "<string>", line 1, in <module>
        ValueError: deep
        """)
    (failure,) = parse_pytest_log(log)
    assert len(failure.frames) == 4
    frames = project_frames(Repository(tmp_path), failure)
    assert [(pf.path, pf.line) for pf in frames] == [("app/main.py", 2)]
    gathered = gather(tmp_path, log)
    assert (gathered.failure_file, gathered.failure_files) == ("app/main.py", ("app/main.py",))


def test_failure_files_rank_first_in_error_order(repo: Path, logs: dict[str, str]) -> None:
    gathered = gather(repo, logs["tb=long"])  # the first failure: the fixture error
    # Its own frames are in the test file; the other failing tests add the code under test.
    assert gathered.failure_files == ("tests/test_core.py", "pkg/core.py")
    first = gathered.failing_tests[0].test
    assert gather(repo, logs["tb=long"], test=first).failure_files == ("tests/test_core.py",)
    log = logs["tb=long"]
    # Keep only the chained test_cause report.
    start = log.index("_ test_cause _")
    start = log.rindex("\n", 0, start) + 1
    end = log.index("_ test_context _")
    end = log.rindex("\n", 0, end) + 1
    text = "=" * 10 + " FAILURES " + "=" * 10 + "\n" + log[start:end]
    gathered = gather(repo, text)
    assert gathered.failure_file == "pkg/core.py"
    assert gathered.failure_files == ("pkg/core.py", "tests/test_core.py")
    data = gathered.build_input(100_000)
    assert data["failure_files"] == ["pkg/core.py", "tests/test_core.py"]
    assert "failure_file" not in data
    result = bugcontext.build(data)
    assert result == bugcontext.reference.build(data)
    assert result.failure_files == ("pkg/core.py", "tests/test_core.py")
    paths = [item.path for item in result.items]
    failing = [p for p in paths if p in gathered.failure_files]
    # Every window of a failing file comes before every other window, the files in order.
    assert paths[: len(failing)] == failing
    assert failing == sorted(failing, key=list(gathered.failure_files).index)


# --- the assertion in the test body -----------------------------------------------------------


def test_assertion_in_the_test_body_makes_the_called_code_reference_evidence(
    repo: Path, logs: dict[str, str]
) -> None:
    failures = by_name(parse_pytest_log(logs["tb=long"]))
    r = Repository(repo)
    core = repo / "pkg" / "core.py"
    body = failures["test_assert_in_body"]
    frames = project_frames(r, body)
    assert assertion_in_test(body, frames)
    assert failure_files(frames) == ["tests/test_core.py"]
    windows = called_code_windows(r, body, frames, base_score=5.0)
    add = ("pkg/core.py", line_of(core, "def add"), line_of(core, "return a - b"))
    # add() computed the value the assertion reads; expected_sum is a test helper, not code under test.
    assert [(w.path, w.start, w.end, w.reason) for w in windows] == [(*add, "reference")]
    assert 5.0 < windows[0].score <= 6.0
    assert windows[0].content == "".join(
        core.read_text(encoding="utf-8").splitlines(True)[add[1] - 1 : add[2]]
    )
    # Through a module alias whose names come from `from .core import *`.
    alias = failures["test_module_alias"]
    spans = [(w.path, w.start) for w in called_code_windows(r, alias, project_frames(r, alias))]
    assert spans == [("pkg/core.py", line_of(core, "def add"))]
    # `parser = Parser(...)`, then `parser.parse(...)`: the method, and the class itself.
    instance = failures["test_instance"]
    spans = [(w.path, w.start) for w in called_code_windows(r, instance, project_frames(r, instance))]
    assert spans[0] == ("pkg/core.py", line_of(core, "def parse"))
    assert ("pkg/core.py", line_of(core, "class Parser")) in spans
    # unittest's assertEqual raises in the standard library: still the test body's assertion.
    eq = failures["TestCase.test_eq"]
    assert assertion_in_test(eq, project_frames(r, eq))
    assert [w.start for w in called_code_windows(r, eq, project_frames(r, eq))] == [line_of(core, "def add")]
    # An error raised by the code under test is not an assertion in the test body.
    cause = failures["test_cause"]
    assert not assertion_in_test(cause, project_frames(r, cause))
    assert called_code_windows(r, cause, project_frames(r, cause)) == []


def test_gather_puts_the_called_code_among_the_references(repo: Path, logs: dict[str, str]) -> None:
    log = logs["tb=long"]
    start = log.rindex("\n", 0, log.index("_ test_assert_in_body _")) + 1
    end = log.rindex("\n", 0, log.index("_ test_cause _")) + 1
    gathered = gather(repo, "=" * 10 + " FAILURES " + "=" * 10 + "\n" + log[start:end])
    assert gathered.failure_file == "tests/test_core.py"
    core = repo / "pkg" / "core.py"
    references = [(c.path, c.start) for c in gathered.candidates if c.reason == "reference"]
    assert ("pkg/core.py", line_of(core, "def add")) in references
    assert len(references) == len(set(references))
    result = bugcontext.build(gathered.build_input(100_000))
    assert ("pkg/core.py", "reference") in {(i.path, i.reason) for i in result.items}


def test_is_test_file() -> None:
    assert is_test_file("tests/test_x.py") and is_test_file("test_x.py") and is_test_file("pkg/x_test.py")
    assert is_test_file("tests/helpers.py") and is_test_file("conftest.py") and is_test_file("app/tests.py")
    assert not is_test_file("pkg/core.py") and not is_test_file("pkg/testing/utils.py")
    assert not is_test_file("src/contest.py")


# --- failure windows are whole syntactic units ------------------------------------------------

UNITS = (
    '''\
"""A module."""
import os

TABLE = {
'''
    + "".join(f"    'k{i}': {i},\n" for i in range(30))
    + """\
}

SMALL = 1
OTHER = os.sep


class Config:
    name = "x"
    size = len(name)

    @property
    def width(self):
        return self.size * 2


def long_function(values):
    total = 0
"""
    + "".join(f"    total += {i}\n" for i in range(15))
    + """\
    for value in values:
        if value > 3:
            total += value
            raise ValueError(value)
        total -= 1
"""
    + "".join(f"    total -= {i}\n" for i in range(15))
    + """\
    return total


if __name__ == "__main__":
    long_function([1, 2, 5])
"""
)


def cuts_a_statement(tree: ast.Module, start: int, end: int) -> bool:
    """Whether lines ``start..end`` hold part of a statement but not all of it (a window
    inside one statement does not count: only a too long statement is clipped)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            a = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            b = node.end_lineno or node.lineno
            # A statement partly inside the window, and not because the window is inside it.
            inside_start = start <= a <= end
            inside_end = start <= b <= end
            if inside_start != inside_end and not (a <= start and end <= b):
                return True
    return False


def test_failure_windows_are_whole_syntactic_units(tmp_path: Path) -> None:
    (tmp_path / "units.py").write_text(UNITS, encoding="utf-8")
    source = Repository(tmp_path).source("units.py")
    assert source is not None and source.tree is not None
    path = tmp_path / "units.py"
    lines = path.read_text(encoding="utf-8").splitlines()

    def spans(text: str) -> list[tuple[int, int]]:
        return failure_spans(source, line_of(path, text))

    # A method: the whole method, its decorator included.
    assert spans("return self.size * 2") == [
        (line_of(path, "@property"), line_of(path, "return self.size * 2"))
    ]
    # A long function: the whole function, and a bounded run of whole statements inside it.
    line = line_of(path, "raise ValueError(value)")
    whole, run = spans("raise ValueError(value)")
    assert whole == (line_of(path, "def long_function"), line_of(path, "return total"))
    assert run[0] <= line <= run[1] and run[1] - run[0] <= 2 * RADIUS
    assert line - RADIUS <= run[0] and run[1] <= line + RADIUS
    assert not cuts_a_statement(source.tree, *run)
    assert lines[run[0] - 1].strip() == "total += 8"  # 10 lines above: a whole statement
    # A line in a module-level statement longer than the bound: clipped inside that statement.
    ((start, end),) = spans("'k20': 20")
    assert (start, end) == (line_of(path, "'k20': 20") - RADIUS, line_of(path, "'k20': 20") + RADIUS)
    # A short module-level statement: whole neighbouring statements, never a cut one.
    ((start, end),) = spans("SMALL = 1")
    assert start > line_of(path, "'k29'")  # not into the long TABLE statement above
    assert end == line_of(path, "return self.size * 2")  # the class below fits: whole
    assert not cuts_a_statement(source.tree, start, end)
    assert start <= line_of(path, "SMALL = 1") <= end
    # A class attribute: the class fits the bound: the whole class and its whole neighbours.
    ((start, end),) = spans("size = len(name)")
    assert start <= line_of(path, "class Config") and line_of(path, "return self.size * 2") <= end
    assert not cuts_a_statement(source.tree, start, end) and end - start <= 2 * RADIUS
    # Module-level code at the end of the file: bounded by the file.
    ((start, end),) = spans("long_function([1, 2, 5])")
    assert end == len(lines) and not cuts_a_statement(source.tree, start, end)
    for text in ("raise ValueError(value)", "SMALL = 1", "long_function([1, 2, 5])", "import os"):
        for a, b in spans(text):
            assert 1 <= a <= b <= len(lines)
            assert not cuts_a_statement(source.tree, a, b)


def test_failure_windows_of_frames_are_exact_and_scored(repo: Path, logs: dict[str, str]) -> None:
    failure = by_name(parse_pytest_log(logs["tb=long"]))["test_param[x - y]"]
    r = Repository(repo)
    windows = failure_windows(r, project_frames(r, failure), base_score=2.0)
    core = repo / "pkg" / "core.py"
    clean = ("pkg/core.py", line_of(core, "@staticmethod"), line_of(core, "return re.sub"))
    assert (windows[0].path, windows[0].start, windows[0].end) == clean  # the lambda's method
    assert [(w.path, w.start, w.end) for w in windows].count(clean) == 1
    assert windows[0].score == 3.0
    for w in windows:
        text = (repo / w.path).read_text(encoding="utf-8").splitlines(True)
        assert w.content == "".join(text[w.start - 1 : w.end]) and w.reason == "failure"


def test_locate_test_from_every_id_shape(repo: Path) -> None:
    r = Repository(repo)
    tests = repo / "tests" / "test_core.py"
    eq = line_of(tests, "def test_eq")
    for test_id in (
        "tests/test_core.py::TestCase::test_eq",
        "tests.test_core.TestCase.test_eq",
        "ci.checkout.tests.test_core.TestCase.test_eq",  # JUnit class name from a parent folder
    ):
        failure = TestFailure("x", (), None, "", (), test_id=test_id)
        located = locate_test(r, failure)
        assert located is not None and (located.path, located.line) == ("tests/test_core.py", eq), test_id
    failure = TestFailure("x", (), None, "", (), test_id="tests/test_core.py::test_param[a b-[1]]")
    located = locate_test(r, failure)
    assert located is not None and located.line == line_of(tests, "def test_param")
    for missing in ("tests/test_core.py::test_nothing", "tests/test_core.py", "nowhere.test_x", None):
        assert locate_test(r, TestFailure("x", (), None, "", (), test_id=missing)) is None


def test_merge_windows_keeps_the_best_of_equal_spans(repo: Path) -> None:
    source = Repository(repo).source("pkg/core.py")
    assert source is not None
    from bugcontext.job.sources.window import make_window

    a = make_window(source, 1, 2, "reference", 1.5)
    b = make_window(source, 1, 2, "reference", 1.9)
    c = make_window(source, 3, 4, "reference", 1.7)
    assert merge_windows([a, c], [b]) == [b, c]


# --- the command line ---------------------------------------------------------------------------


def test_context_reads_junit_xml(
    repo: Path, logs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.xml"
    report.write_text(logs["junit"], encoding="utf-8")
    log = tmp_path / "run.log"
    log.write_text(logs["tb=no"], encoding="utf-8")
    assert main(["context", "--repo", str(repo), "--pytest-log", str(report), "--format", "json"]) == 0
    from_xml = capsys.readouterr().out
    assert main(["context", "--repo", str(repo), "--pytest-log", str(log), "--junit-xml", str(report)]) == 0
    out = capsys.readouterr().err  # the report; standard output holds the section alone
    assert "- test: test_fixture_error" in out  # the first failure the status lines report
    assert "- failure file: tests/test_core.py" in out
    assert '"failure_files": ["tests/test_core.py"]' in from_xml
    bad = tmp_path / "bad.xml"
    bad.write_text("<testsuite><testcase>", encoding="utf-8")
    assert main(["context", "--repo", str(repo), "--pytest-log", str(log), "--junit-xml", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bugcontext context: --junit-xml: invalid JUnit XML") and err.count("\n") == 1
    missing = tmp_path / "missing.xml"
    assert main(["context", "--repo", str(repo), "--pytest-log", str(log), "--junit-xml", str(missing)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_context_warns_when_no_log_path_is_in_the_repository(
    repo: Path, logs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same run with file names no file of the repository has: no frame path resolves
    # here, but the test id still locates the test, and the warning says the paths matched
    # nothing. (A run made in another checkout folder maps by path suffix: see
    # tests/test_failure_kinds.py.)
    moved = logs["tb=native"].replace(str(repo), "/elsewhere/checkout").replace('.py"', '_x.py"')
    log = tmp_path / "moved.log"
    log.write_text(moved, encoding="utf-8")
    assert main(["context", "--repo", str(repo), "--pytest-log", str(log)]) == 0
    captured = capsys.readouterr()
    assert "warning: no traceback frame of the log is a file of" in captured.err
    assert "- failure file: tests/test_core.py" in captured.err


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "=" * 20 + " FAILURES " + "=" * 20,
                    "=" * 20 + " ERRORS " + "=" * 20,
                    "=" * 20 + " short test summary info " + "=" * 20,
                    "=" * 70,
                    "-" * 70,
                    "_" * 10 + " test_x[a b-[1]] " + "_" * 10,
                    "FAIL: test_x (m.C.test_x)",
                    "ERROR: test_y (m.C)",
                    "Traceback (most recent call last):",
                    '  File "pkg/m.py", line 3, in f',
                    "pkg/m.py:3: in f",
                    "pkg/m.py:4: ValueError",
                    "E   ValueError: boom",
                    "ValueError: boom",
                    "The above exception was the direct cause of the following exception:",
                    "During handling of the above exception, another exception occurred:",
                    "  | ValueError: x",
                    "  +-+---------------- 1 ----------------",
                    "FAILED pkg/t.py::test_x[a - b] - ValueError: [",
                    "[gw0] [ 50%] ERROR pkg/t.py::test_y",
                    "pkg/t.py::test_z PASSED [100%]",
                    "",
                ]
            ),
            st.text(max_size=30),
        ),
        max_size=30,
    )
)
def test_any_text_parses_without_error(lines: list[str]) -> None:
    text = "\n".join(lines)
    for failure in parse_test_output(text):
        assert all(1 <= frame.line <= 2**31 - 1 for frame in failure.frames)
        assert [link.segment for link in failure.chain] == list(range(len(failure.chain)))
        assert {frame.segment for frame in failure.frames} <= set(range(max(len(failure.chain), 1)))
        assert failure.status in ("failed", "error")
    for outcome in parse_outcomes(text):
        assert outcome.test_id and outcome.status
