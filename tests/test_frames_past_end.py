"""A traceback frame into a file that has since become shorter than the frame's line is
reported (a policy omission, ``FRAME_PAST_END``), never dropped in silence: in every log shape
the parser reads, from the one-shot sources and from a workspace whose cache knew the longer
file.

Each log comes from a real run in a subprocess (pytest in each ``--tb`` style, ``-q``, ``-v``,
``-rA``, pytest-xdist, its JUnit XML report; unittest; a plain traceback), with a plain and a
chained exception, an exception group, a syntax error, a missing fixture, a doctest and a
teardown error. Then the file is cut to one line, and every frame the log gives into it must
come back as an omission at its line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bugcontext import Workspace
from bugcontext.job.sources import gather
from bugcontext.job.sources.failure import FRAME_PAST_END, resolve_frames
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.runs import failing_tests, parse_test_output, select_test

PAD = "".join(f"# line {i}\n" for i in range(1, 9))
CALC = PAD + "def divide(a, b):\n    return a / b\n"
CHAINED = (
    PAD + "def divide(a, b):\n    try:\n        return a / b\n"
    "    except ZeroDivisionError as exc:\n        raise ValueError('bad') from exc\n"
)
TEST = "from pkg.calc import divide\n\n\ndef test_divide():\n    assert divide(1, 0) == 0\n"
UNITTEST = (
    "import unittest\nfrom pkg.calc import divide\n\n\nclass T(unittest.TestCase):\n"
    "    def test_divide(self):\n        self.assertEqual(divide(1, 0), 0)\n"
)

PYTEST = ["-m", "pytest", "-p", "no:cacheprovider", "-c", os.devnull, "--rootdir", "."]
# name: the command's arguments after the interpreter (the JUnit report is written as r.xml)
RUNS = {
    "long": [*PYTEST, "--tb=long"],
    "short": [*PYTEST, "--tb=short"],
    "native": [*PYTEST, "--tb=native"],
    "line": [*PYTEST, "--tb=line"],
    "auto": [*PYTEST],
    "quiet": [*PYTEST, "-q"],
    "verbose": [*PYTEST, "-v"],
    "rA": [*PYTEST, "-rA"],
    "xdist": [*PYTEST, "-n", "2", "--tb=long"],
    "xdist native": [*PYTEST, "-n", "2", "--tb=native"],
    "unittest": ["-m", "unittest", "-v", "tests.test_ut"],
    "plain": ["-c", "from pkg.calc import divide; divide(1, 0)"],
}

# kind: (files, the file cut short, extra pytest arguments)
KINDS: dict[str, tuple[dict[str, str], str, list[str]]] = {
    "plain": ({"pkg/calc.py": CALC}, "pkg/calc.py", ["tests/test_calc.py"]),
    "chained": ({"pkg/calc.py": CHAINED}, "pkg/calc.py", ["tests/test_calc.py"]),
    "test file": ({"pkg/calc.py": CALC}, "tests/test_calc.py", ["tests/test_calc.py"]),
    "group": (
        {
            "pkg/calc.py": PAD + "def divide(a, b):\n    raise ExceptionGroup('many', [ValueError('v')])\n",
        },
        "pkg/calc.py",
        ["tests/test_calc.py"],
    ),
    "syntax": ({"pkg/calc.py": PAD + "def divide(a, b:\n    pass\n"}, "pkg/calc.py", ["tests/test_calc.py"]),
    "fixture": (
        {"pkg/calc.py": CALC, "tests/test_fx.py": PAD + "def test_x(nosuchfixture):\n    pass\n"},
        "tests/test_fx.py",
        ["tests/test_fx.py"],
    ),
    "doctest": (
        {"pkg/calc.py": PAD + "def f():\n    '''\n    >>> 1/0\n    '''\n"},
        "pkg/calc.py",
        ["--doctest-modules", "pkg"],
    ),
    "teardown": (
        {
            "pkg/calc.py": PAD + "def down():\n    raise RuntimeError('teardown')\n",
            "tests/test_td.py": (
                "import pytest\nfrom pkg.calc import down\n\n\n@pytest.fixture\ndef fx():\n"
                "    yield 1\n    down()\n\n\ndef test_x(fx):\n    assert fx == 2\n"
            ),
        },
        "pkg/calc.py",
        ["tests/test_td.py"],
    ),
}

# (The test file is in no frame of --tb=line, which prints the deepest location only, nor of the
# plain traceback, which runs no test.)
CASES = [
    *((kind, run) for kind in ("plain", "chained") for run in RUNS),
    *(("test file", run) for run in RUNS if run not in ("line", "plain", "auto", "verbose")),
    *(
        (kind, run)
        for kind in ("group", "syntax", "fixture", "doctest", "teardown")
        for run in ("long", "line")
    ),
    ("doctest", "native"),
    ("teardown", "native"),
]


def _run(root: Path, args: list[str]) -> str:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PY_COLORS", "NO_COLOR", "FORCE_COLOR", "COLUMNS"))
    }
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run(
        [sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    return proc.stdout + proc.stderr


def _frames_into(root: Path, text: str, junit: str | None, target: str) -> list[int]:
    """The lines of the frames into ``target`` that the chosen failure of the log (and its
    other reports) give, as the sources resolve them."""
    repo = Repository(root)
    failures = parse_test_output(text, junit_xml=junit)
    chosen = select_test(failing_tests(failures), None)
    assert chosen is not None and chosen.failure is not None
    lines = []
    for failure in (chosen.failure, *chosen.others):
        frames, _ = resolve_frames(repo, failure, from_test_id=False)
        lines += [pf.line for pf in frames if pf.path == target]
    return sorted(set(lines))


def _reported(omissions: object, target: str) -> list[int]:
    return sorted({o.start for o in omissions if o.path == target and o.why == FRAME_PAST_END})  # type: ignore[attr-defined]


@pytest.mark.parametrize(("kind", "run"), CASES, ids=[f"{k}-{r}" for k, r in CASES])
def test_a_frame_past_the_end_is_reported_in_every_log_shape(tmp_path: Path, kind: str, run: str) -> None:
    files, target, extra = KINDS[kind]
    if kind == "test file" and run == "unittest":
        target = "tests/test_ut.py"
    root = tmp_path / "repo"
    written = {
        "pkg/__init__.py": "",
        "tests/__init__.py": "",
        "tests/test_calc.py": TEST,
        "tests/test_ut.py": UNITTEST,
        **files,
    }
    for rel, text in written.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    args = RUNS[run]
    junit = None
    if args[:2] == ["-m", "pytest"]:
        args = [*args, "--junitxml=r.xml", *extra]
    log = _run(root, args)
    if (root / "r.xml").exists():
        junit = (root / "r.xml").read_text(encoding="utf-8")
    shapes = [(log, None)] + ([(junit, None), (log, junit)] if junit is not None else [])
    cache = tmp_path / "cache"
    expected = []
    for text, report in shapes:
        expected.append(_frames_into(root, text, report, target))
        Workspace(root, cache_dir=cache).context(text, junit_xml=report)  # the cache knows the file
    # --tb=line prints no location for a teardown error: the only shape without a frame there.
    if not (kind == "teardown" and run == "line"):
        assert any(expected), log
    (root / target).write_text("x = 1\n", encoding="utf-8")  # now one line long
    for (text, report), lines in zip(shapes, expected, strict=True):
        assert _reported(gather(root, text, junit_xml=report).policy_omissions, target) == lines
        warm = Workspace(root, cache_dir=cache).context(text, junit_xml=report)
        assert _reported(warm.policy_omissions, target) == lines


@pytest.mark.parametrize("number", [str(2**31), "9" * 5000, "0" * 30 + str(2**40)])
def test_a_frame_past_every_file_is_reported_not_dropped(tmp_path: Path, number: str) -> None:
    """A line past ``2**31 - 1`` is past the end of every file: not a frame of the failure (a
    frame is a line of its file), but reported, in each shape that prints a line number."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text(CALC, encoding="utf-8")
    report = f"{'=' * 10} FAILURES {'=' * 10}\n{'_' * 5} test_x {'_' * 5}\n"
    logs = {
        "long": report
        + f"pkg/calc.py:{number}: in divide\npkg/calc.py:10: ZeroDivisionError\nE   ZeroDivisionError\n",
        "native": report
        + f'  File "pkg/calc.py", line {number}, in divide\n  File "pkg/calc.py", line 10, in divide\n'
        "E   ZeroDivisionError: x\n",
        "line": f"{'=' * 5} FAILURES {'=' * 5}\npkg/calc.py:{number}: ZeroDivisionError: boom\n",
        "syntax": report
        + f'E     File "pkg/calc.py", line {number}\nE       def f(:\nE   SyntaxError: bad\n',
        "fixture": report
        + f"file pkg/calc.py, line {number}\n  def test_x(nosuch):\nE       fixture 'nosuch' not found\n",
        "summary": f'FAILED tests/t.py::test_x -   File "pkg/calc.py", line {number}\n',
    }
    for shape, log in logs.items():
        g = gather(root, log)
        assert g.failure is not None, shape
        assert all(f.line <= 2**31 - 1 for f in g.failure.frames), shape
        assert _reported(g.policy_omissions, "pkg/calc.py") == [2**31], shape
        warm = Workspace(root, cache_dir=tmp_path / "cache").context(log)
        assert _reported(warm.policy_omissions, "pkg/calc.py") == [2**31], shape
