"""The candidate sources on a tiny real repository with a genuine failing pytest run.

A small package and its tests are built (once per module) in a temporary folder; the real
pytest runs on them in a subprocess with ``-rA --tb=long`` and the tests read what it
printed. Only the query test uses a literal log excerpt.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import bugcontext
import pytest
from bugcontext.job.sources import (
    Repository,
    build_query,
    chunk_spans,
    failure_windows,
    gather,
    names_on_line,
    parse_pytest_log,
    project_frames,
    search_windows,
    strip_ansi,
    tokenize,
)
from bugcontext.job.sources.files import decode_source, split_lines
from bugcontext.job.sources.pytest_log import _rule_title
from bugcontext.job.sources.search import MAX_PER_FILE

CORE = (
    '''\
import re

LIMIT = 10


def helper(x):
    return compute(x) + 1


def compute(x):
    if x > LIMIT:
        raise ValueError(f"too big: {x}")
    return x


class Box:
    """A box."""

    @staticmethod
    def unpack(v):
        return re.sub(r"a", lambda m: str(compute(int(v))), "a")


def wrap(x):
    try:
        return compute(x)
    except ValueError as e:
        raise RuntimeError("wrapped") from e


def _add(a, b):
    return a - b  # the bug


def total(values):
    result = 0
    for v in values:
        result = _add(result, v)
    return result


def long_function(n):
    acc = 0
'''
    + "".join(f"    acc += n * {i}\n" for i in range(40))
    + """\
    if acc > 0:
        raise KeyError("deep in a long function")
"""
    + "".join(f"    acc -= {i}\n" for i in range(20))
    + """\
    return acc
"""
)

OTHER = '''\
def frobnicate_widget(widget):
    """Frobnicate the widget twice."""
    return widget * 2


def unrelated():
    return "nothing to see"
'''

BROKEN = (
    "".join(f"# line {i}\n" for i in range(1, 20))
    + "raise RuntimeError('broken')\n"
    + "".join(f"# line {i}\n" for i in range(21, 31))
)

TESTS = """\
import unittest

import pytest

from pkg.core import Box, helper, long_function, total, wrap


def test_helper():
    assert helper(20) == 21


@pytest.mark.parametrize("v", ["99", "a b"])
def test_box(v):
    assert Box.unpack(v) == "x"


def test_wrap():
    wrap(50)


def test_total():
    value = total([1, 2])
    assert value == 3


def test_long():
    long_function(1)


class TestCase(unittest.TestCase):
    def test_eq(self):
        self.assertEqual(helper(1), 3)
"""


def line_of(path: Path, text: str) -> int:
    """1-based number of the first line of ``path`` containing ``text``."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def lines_of(path: Path, start: int, end: int) -> str:
    """Lines ``start..end`` of ``path``, read independently of the code under test."""
    with open(path, encoding="utf-8", newline="") as fh:
        return "".join(fh.readlines()[start - 1 : end])


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tinyrepo")
    (root / "pkg").mkdir()
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "core.py").write_text(CORE, encoding="utf-8")
    (root / "pkg" / "other.py").write_text(OTHER, encoding="utf-8")
    (root / "pkg" / "broken.py").write_text(BROKEN, encoding="utf-8")
    (root / "tests" / "test_core.py").write_text(TESTS, encoding="utf-8")
    (root / "tests" / "test_broken.py").write_text("import pkg.broken\n", encoding="utf-8")
    return root


def run_pytest(repo: Path, *args: str) -> str:
    """Run the real pytest in ``repo`` and return its output (it must report failures)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(repo)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=long", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode in (1, 2), proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def full_log(repo: Path) -> str:
    return run_pytest(repo, "tests/test_core.py")


def test_log_lists_every_failure_with_name_type_and_message(full_log: str) -> None:
    failures = {f.name: f for f in parse_pytest_log(full_log)}
    assert set(failures) == {
        "test_helper",
        "test_box[99]",
        "test_box[a b]",
        "test_wrap",
        "test_total",
        "test_long",
        "TestCase.test_eq",
    }
    assert failures["test_helper"].exception_type == "ValueError"
    assert failures["test_helper"].message == "too big: 20"
    assert failures["test_box[a b]"].message == "invalid literal for int() with base 10: 'a b'"
    assert failures["TestCase.test_eq"].exception_type == "AssertionError"
    assert failures["TestCase.test_eq"].message == "2 != 3"


def test_frames_in_printed_order_with_relative_paths(repo: Path, full_log: str) -> None:
    failure = next(f for f in parse_pytest_log(full_log) if f.name == "test_helper")
    core, tests = repo / "pkg" / "core.py", repo / "tests" / "test_core.py"
    assert [(f.path, f.line) for f in failure.frames] == [
        ("tests/test_core.py", line_of(tests, "assert helper(20) == 21")),
        ("pkg/core.py", line_of(core, "return compute(x) + 1")),
        ("pkg/core.py", line_of(core, 'raise ValueError(f"too big')),
    ]


def test_stdlib_frames_are_not_project_frames(repo: Path, full_log: str) -> None:
    failure = next(f for f in parse_pytest_log(full_log) if f.name == "test_box[99]")
    assert any(
        "re" in Path(f.path).parts or f.path.endswith("re/__init__.py") for f in failure.frames
    )  # re.sub's frame is in the log ...
    frames = project_frames(Repository(repo), failure)
    assert {pf.path for pf in frames} == {"pkg/core.py", "tests/test_core.py"}  # ... not here
    assert frames[0].path == "pkg/core.py"
    assert frames[0].line == line_of(repo / "pkg" / "core.py", 'raise ValueError(f"too big')
    assert [pf.distance for pf in frames] == list(range(len(frames)))


def test_chained_exception_keeps_the_cause(repo: Path, full_log: str) -> None:
    failure = next(f for f in parse_pytest_log(full_log) if f.name == "test_wrap")
    core = repo / "pkg" / "core.py"
    assert failure.exception_type == "RuntimeError"
    assert failure.message == "wrapped"
    assert "ValueError: too big: 50" in failure.message_lines
    assert {f.segment for f in failure.frames} == {0, 1}
    frames = project_frames(Repository(repo), failure)
    # The exception the test saw comes first: its deepest frame names the failure file.
    assert (frames[0].path, frames[0].line) == ("pkg/core.py", line_of(core, "raise RuntimeError"))
    # The cause's deepest frame is kept, as close (distance 0) as the final one.
    cause = [pf for pf in frames if pf.frame.segment == 0]
    assert (cause[0].line, cause[0].distance) == (line_of(core, 'raise ValueError(f"too big'), 0)


def test_ansi_colour_is_ignored(repo: Path, full_log: str) -> None:
    coloured = run_pytest(repo, "tests/test_core.py", "--color=yes")
    assert "\x1b[" in coloured
    assert "\x1b[" not in strip_ansi(coloured)
    plain = [(f.name, f.frames, f.exception_type, f.message) for f in parse_pytest_log(full_log)]
    colour = [(f.name, f.frames, f.exception_type, f.message) for f in parse_pytest_log(coloured)]
    assert colour == plain


def test_short_and_native_tracebacks_give_the_same_project_frames(repo: Path) -> None:
    logs = {
        style: run_pytest(repo, "tests/test_core.py::test_helper", f"--tb={style}")
        for style in ("long", "short", "native")
    }
    found = {}
    for style, log in logs.items():
        (failure,) = parse_pytest_log(log)
        assert failure.exception_type == "ValueError", style
        found[style] = [(pf.path, pf.line) for pf in project_frames(Repository(repo), failure)]
    assert found["long"] == found["short"] == found["native"]
    assert len(found["long"]) == 3


def test_line_style_gives_one_failure_per_line(repo: Path) -> None:
    log = run_pytest(repo, "tests/test_core.py::test_helper", "tests/test_core.py::test_wrap", "--tb=line")
    failures = parse_pytest_log(log)
    assert [(f.exception_type, f.message) for f in failures] == [
        ("ValueError", "too big: 20"),
        ("RuntimeError", "wrapped"),
    ]
    frames = project_frames(Repository(repo), failures[1])
    assert [(pf.path, pf.line) for pf in frames] == [
        ("pkg/core.py", line_of(repo / "pkg" / "core.py", "raise RuntimeError"))
    ]


def test_collection_error_at_module_level(repo: Path) -> None:
    log = run_pytest(repo, "tests/test_broken.py")
    (failure,) = parse_pytest_log(log)
    assert failure.name == "ERROR collecting tests/test_broken.py"
    frames = project_frames(Repository(repo), failure)
    assert (frames[0].path, frames[0].line) == ("pkg/broken.py", 20)
    windows = failure_windows(Repository(repo), frames)
    broken = [w for w in windows if w.path == "pkg/broken.py"]
    # No function around line 20: the bounded window, 10 lines either side, clipped.
    assert [(w.start, w.end) for w in broken] == [(10, 30)]
    assert broken[0].content == lines_of(repo / "pkg" / "broken.py", 10, 30)


def test_failure_windows_are_enclosing_functions(repo: Path, full_log: str) -> None:
    failure = next(f for f in parse_pytest_log(full_log) if f.name == "test_box[99]")
    r = Repository(repo)
    windows = failure_windows(r, project_frames(r, failure), base_score=0.0)
    core = repo / "pkg" / "core.py"
    spans = [(w.path, w.start, w.end) for w in windows]
    compute = ("pkg/core.py", line_of(core, "def compute"), line_of(core, "    return x"))
    # The lambda's frame maps to the method around it, decorator included.
    unpack = ("pkg/core.py", line_of(core, "@staticmethod"), line_of(core, "return re.sub"))
    assert spans[0] == compute
    assert unpack in spans
    assert spans.count(unpack) == 1  # two frames in one method: one window
    for w in windows:
        assert w.reason == "failure"
        assert w.content == lines_of(repo / w.path, w.start, w.end)
    assert windows[0].score == 1.0
    assert all(a.score >= b.score for a, b in itertools.pairwise(windows))


def test_long_function_gets_a_bounded_window_too(repo: Path, full_log: str) -> None:
    failure = next(f for f in parse_pytest_log(full_log) if f.name == "test_long")
    r = Repository(repo)
    windows = [w for w in failure_windows(r, project_frames(r, failure)) if w.path == "pkg/core.py"]
    core = repo / "pkg" / "core.py"
    line = line_of(core, 'raise KeyError("deep')
    start = line_of(core, "def long_function")
    assert (windows[0].start, windows[0].end) == (start, line_of(core, "return acc"))
    assert (windows[1].start, windows[1].end) == (line - 10, line + 10)
    assert windows[1].content == lines_of(core, line - 10, line + 10)


def test_reference_windows_follow_names_and_data_flow(repo: Path) -> None:
    log = run_pytest(repo, "tests/test_core.py::test_total")
    (failure,) = parse_pytest_log(log)
    assert failure.exception_type == "AssertionError"
    # The failing line `assert value == 3` reads only a local; its assignment calls total().
    test_file = repo / "tests" / "test_core.py"
    source = Repository(repo).source("tests/test_core.py")
    assert source is not None
    assert names_on_line(source, line_of(test_file, "assert value == 3")) == {"total": 0.5}
    gathered = gather(repo, log)
    references = [c for c in gathered.candidates if c.reason == "reference"]
    core = repo / "pkg" / "core.py"
    spans = [(c.path, c.start, c.end) for c in references]
    total = ("pkg/core.py", line_of(core, "def total"), line_of(core, "    return result"))
    add = ("pkg/core.py", line_of(core, "def _add"), line_of(core, "return a - b"))
    assert total in spans
    # One step down the call graph: total() calls _add(), where the bug is; weaker.
    assert add in spans
    assert spans.index(total) < spans.index(add)
    for c in references:
        assert c.content == lines_of(repo / c.path, c.start, c.end)


def test_gather_reads_the_first_failure_of_the_log(repo: Path, full_log: str) -> None:
    gathered = gather(repo, full_log)
    assert gathered.failure is not None
    assert gathered.failure.name == "test_helper"
    assert gathered.failure_file == "pkg/core.py"


def test_search_finds_the_query_and_windows_are_exact(repo: Path) -> None:
    r = Repository(repo)
    windows = search_windows(r, tokenize("frobnicate widget"))
    other = repo / "pkg" / "other.py"
    assert (windows[0].path, windows[0].start, windows[0].end) == (
        "pkg/other.py",
        1,
        line_of(other, "return widget * 2"),
    )
    assert windows[0].reason == "search"
    assert windows[0].score > 0
    assert all(w.score > 0 for w in windows)
    assert all(w.content == lines_of(repo / w.path, w.start, w.end) for w in windows)
    assert search_windows(r, []) == []


def test_search_takes_at_most_a_few_windows_per_file(tmp_path: Path) -> None:
    body = "".join(f"def widget_{i}():\n    return 'widget'\n\n\n" for i in range(3 * MAX_PER_FILE))
    (tmp_path / "many.py").write_text(body, encoding="utf-8")
    (tmp_path / "one.py").write_text("def lone():\n    return 'widget'\n", encoding="utf-8")
    windows = search_windows(Repository(tmp_path), ["widget"])
    assert sum(w.path == "many.py" for w in windows) == MAX_PER_FILE
    assert any(w.path == "one.py" for w in windows)


def test_chunks_cover_functions_methods_and_module_code(repo: Path) -> None:
    source = Repository(repo).source("pkg/core.py")
    assert source is not None
    core = repo / "pkg" / "core.py"
    spans = chunk_spans(source)
    assert (line_of(core, "def helper"), line_of(core, "return compute(x) + 1")) in spans
    assert (line_of(core, "LIMIT = 10"), line_of(core, "LIMIT = 10")) in spans  # module code
    assert (line_of(core, "class Box"), line_of(core, '"""A box."""') + 1) in spans  # class head
    assert (line_of(core, "@staticmethod"), line_of(core, "return re.sub")) in spans  # method
    assert all(s <= e for s, e in spans)
    assert not any(line_of(core, "import re") in range(s, e + 1) for s, e in spans)  # imports


def test_query_has_exception_message_and_test_name_once() -> None:
    log = textwrap.dedent("""\
        =================================== FAILURES ===================================
        _____________________________ test_parse_widget ______________________________

            def test_parse_widget():
        >       parseWidget("x")
        E       ValueError: bad widget spec

        tests/test_w.py:2: ValueError
        =========================== short test summary info ============================
        """)
    (failure,) = parse_pytest_log(log)
    query = build_query(failure, "extra words")
    assert query == [
        "valueerror",
        "value",
        "error",
        "bad",
        "widget",
        "spec",
        "parsewidget",
        "parse",
        "extra",
        "words",
    ]


def test_gather_scores_order_sources_and_build_accepts_them(repo: Path) -> None:
    log = run_pytest(repo, "tests/test_core.py::test_helper")
    gathered = gather(repo, log, query="frobnicate")
    assert gathered.failure_file == "pkg/core.py"
    reasons = [c.reason for c in gathered.candidates]
    assert reasons == sorted(reasons, key=["failure", "reference", "search"].index)
    failure = [c.score for c in gathered.candidates if c.reason == "failure"]
    reference = [c.score for c in gathered.candidates if c.reason == "reference"]
    search = [c.score for c in gathered.candidates if c.reason == "search"]
    assert failure and reference and search
    assert min(failure) > max(reference) > 0
    assert min(reference) > max(search)
    result = bugcontext.build(gathered.build_input(100_000))
    assert result == bugcontext.reference.build(gathered.build_input(100_000))
    first = result.items[0]
    assert (first.path, first.reason) == ("pkg/core.py", "failure")
    assert first.content == lines_of(repo / "pkg" / "core.py", first.start, first.end)


def test_files_outside_the_repository_are_not_project_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".venv" / "lib").mkdir(parents=True)
    (repo / ".venv" / "pyvenv.cfg").write_text("", encoding="utf-8")
    (repo / ".venv" / "lib" / "dep.py").write_text("x = 1\n", encoding="utf-8")
    (repo / "site-packages").mkdir()
    (repo / "site-packages" / "dep.py").write_text("x = 1\n", encoding="utf-8")
    outside = tmp_path / "outside.py"
    outside.write_text("secret = 1\n", encoding="utf-8")
    (repo / "mod.py").write_text("y = 2\n", encoding="utf-8")
    (repo / "link.py").symlink_to(outside)
    r = Repository(repo)
    assert r.relative("mod.py") == "mod.py"
    assert r.relative(str(repo / "mod.py")) == "mod.py"
    assert r.relative(str(outside)) is None
    assert r.relative("../outside.py") is None
    assert r.relative("link.py") is None  # resolves outside
    assert r.relative(".venv/lib/dep.py") is None
    assert r.relative("site-packages/dep.py") is None
    assert r.relative("<frozen importlib._bootstrap>") is None
    assert r.python_files() == ["mod.py"]


def test_line_endings_and_bom_are_kept_exactly(tmp_path: Path) -> None:
    data = "\ufeffa = 1\r\nb = '\x0c\u2028'\rc = 3\nd = 4".encode()
    (tmp_path / "crlf.py").write_bytes(data)
    assert split_lines("a\r\nb\rc\n\x0cd\u2028e") == ("a\r\n", "b\r", "c\n", "\x0cd\u2028e")
    text = decode_source(data)
    assert not text.startswith("\ufeff")
    source = Repository(tmp_path).source("crlf.py")
    assert source is not None and source.tree is not None
    assert source.line_count == 4
    assert source.text(1, 2) == "a = 1\r\nb = '\x0c\u2028'\r"
    assert source.text(1, 4).encode() == data[len("\ufeff".encode()) :]


def test_undecodable_bytes_do_not_break_reading(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_bytes(b"x = '\xff'\ny = 2\n")
    source = Repository(tmp_path).source("bad.py")
    assert source is not None
    assert source.line_count == 2
    assert source.text(2, 2) == "y = 2\n"
    assert source.text(1, 1).encode("utf-8", "surrogateescape") == b"x = '\xff'\n"


# --- hostile logs and file names ---------------------------------------------------------


@pytest.mark.parametrize("rule", ["=", "-"])
def test_long_rule_lines_parse_in_linear_time(rule: str) -> None:
    # The rule-line test used to be a backtracking regex, cubic on a long run of "=" or "-"
    # (2,000 characters took seconds): 100,000 now take no noticeable time.
    long = rule * 100_000
    assert parse_pytest_log(long) == []
    assert parse_pytest_log(long + "x") == []
    report = f"{'=' * 10} FAILURES {'=' * 10}\n{'_' * 5} test_x {'_' * 5}\n"
    tail = "pkg/mod.py:3: ValueError\nE   ValueError: boom\n"
    # Not a rule line (it does not end with the rule): the report goes on.
    (failure,) = parse_pytest_log(report + long + "x\n" + tail)
    assert [f.line for f in failure.frames] == [3]
    # A rule line: "=" starts another section, "-" captured output; either way the
    # traceback part of the report is over.
    (failure,) = parse_pytest_log(report + long + "\n" + tail)
    assert failure.frames == ()
    (failure,) = parse_pytest_log(report + tail + long + "\n")
    assert [f.line for f in failure.frames] == [3]
    assert failure.exception_type == "ValueError"
    # A title between long rules is still read.
    wide = "=" * 100_000
    (failure,) = parse_pytest_log(f"{wide} FAILURES {wide}\n{'_' * 5} test_y {'_' * 5}\n{tail}")
    assert failure.name == "test_y" and [f.line for f in failure.frames] == [3]
    (failure,) = parse_pytest_log(f"{report}{tail}{long} Captured stdout call {long}\npkg/mod.py:9: in g\n")
    assert [f.line for f in failure.frames] == [3]


def test_rule_lines_are_read_as_the_former_regular_expression() -> None:
    # The linear reading gives the title the expression ``^R{3,} ?(.*?) ?R{3,}$`` gave, on
    # every line of up to 7 characters over a small alphabet.
    for rule, other in (("=", "-"), ("-", "=")):
        pattern = re.compile(rf"^{rule}{{3,}} ?(?P<title>.*?) ?{rule}{{3,}}$")
        for size in range(8):
            for chars in itertools.product((rule, " ", "a", other), repeat=size):
                line = "".join(chars)
                match = pattern.match(line)
                assert _rule_title(line, rule) == (match["title"] if match else None), line


def test_a_hundred_thousand_line_log_parses() -> None:
    frames = "".join(f"pkg/mod.py:{i}: in f{i}\n" for i in range(1, 50_001))
    messages = "E   ValueError: boom\n" * 49_998
    log = f"{'=' * 10} FAILURES {'=' * 10}\n{'_' * 5} test_x {'_' * 5}\n{frames}{messages}"
    assert log.count("\n") == 100_000
    (failure,) = parse_pytest_log(log)
    assert len(failure.frames) == 50_000
    assert (failure.frames[-1].line, failure.frames[-1].function) == (50_000, "f50000")
    assert (failure.exception_type, failure.message) == ("ValueError", "boom")


def test_line_numbers_too_long_for_int_are_unusable_frames(tmp_path: Path) -> None:
    # int() refuses a string of more than 4,300 digits; such a frame is skipped, not fatal.
    huge = "9" * 5000
    big = str(2**31)  # past the largest line the builder accepts
    report = f"{'=' * 10} FAILURES {'=' * 10}\n{'_' * 5} test_x {'_' * 5}\n"
    for number in (huge, big):
        long_style = f"pkg/mod.py:{number}: in f\npkg/mod.py:7: ValueError\nE   ValueError: boom\n"
        native = f'  File "pkg/mod.py", line {number}, in f\n  File "pkg/mod.py", line 7, in g\n'
        for log in (report + long_style, report + native + "E   ValueError: boom\n"):
            (failure,) = parse_pytest_log(log)
            assert [(f.path, f.line) for f in failure.frames] == [("pkg/mod.py", 7)]
            assert failure.exception_type == "ValueError"
        (failure,) = parse_pytest_log(report + f"pkg/mod.py:{number}: ValueError\nE   ValueError: boom\n")
        assert failure.frames == () and failure.exception_type == "ValueError"
        # --tb=line: the failure is kept, without its frame.
        (failure,) = parse_pytest_log(
            f"{'=' * 5} FAILURES {'=' * 5}\npkg/mod.py:{number}: ValueError: boom\n"
        )
        assert failure.frames == () and (failure.exception_type, failure.message) == ("ValueError", "boom")
        bare = (
            f'Traceback (most recent call last):\n  File "pkg/mod.py", line {number}, in f\nValueError: x\n'
        )
        assert parse_pytest_log(bare) == []
    padded = "0" * 20 + "7"
    (failure,) = parse_pytest_log(report + f"pkg/mod.py:{2**31 - 1}: ValueError\npkg/m.py:{padded}: in f\n")
    assert [f.line for f in failure.frames] == [2**31 - 1, 7]
    # And the whole pipeline goes through.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def f():\n    raise ValueError('boom')\n", encoding="utf-8")
    gathered = gather(tmp_path, report + f"pkg/mod.py:{huge}: in f\npkg/mod.py:2: ValueError\n")
    assert gathered.failure_file == "pkg/mod.py"
    bugcontext.build(gathered.build_input(1000))


@pytest.mark.skipif(sys.platform == "win32", reason="a backslash separates paths on Windows")
def test_files_whose_path_the_builder_rejects_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def widget_error():\n    return 1\n", encoding="utf-8")
    # A legal file name on POSIX, but a path the build contract rejects; it matches the query.
    odd = tmp_path / "pkg" / "odd\\name.py"
    odd.write_text("def widget_error():\n    raise ValueError('widget error')\n", encoding="utf-8")
    (tmp_path / "back\\slash").mkdir()
    (tmp_path / "back\\slash" / "inner.py").write_text("widget = 1\n", encoding="utf-8")
    repo = Repository(tmp_path)
    assert repo.python_files() == ["pkg/mod.py"]
    assert repo.relative("pkg/odd\\name.py") is None
    assert repo.relative(str(odd)) is None
    log = f'Traceback:\n  File "{odd}", line 2, in widget_error\nValueError: widget error\n'
    gathered = gather(tmp_path, log, query="widget error")
    assert gathered.failure_file is None
    assert {c.path for c in gathered.candidates} == {"pkg/mod.py"}
    result = bugcontext.build(gathered.build_input(10_000))
    assert [item.path for item in result.items] == ["pkg/mod.py"]


def test_search_hits_in_a_failing_test_file_are_left_out(tmp_path: Path) -> None:
    # The failing test file ranks first whatever the score, and its failing test is already
    # failure evidence: its other tests must not crowd out the code under test.
    (tmp_path / "widgets.py").write_text("def frobnicate_widget(x):\n    return x + 2\n")
    tests = "\n\n".join(
        f"def test_frobnicate_widget_{i}():\n    from widgets import frobnicate_widget\n"
        f"    assert frobnicate_widget({i}) == {i + 1}, 'frobnicate widget'\n"
        for i in range(6)
    )
    (tmp_path / "test_widgets.py").write_text(tests)
    log = run_pytest(tmp_path, "test_widgets.py::test_frobnicate_widget_0")
    gathered = gather(tmp_path, log)
    assert gathered.failure_file == "test_widgets.py"
    in_test_file = [c for c in gathered.candidates if c.path == "test_widgets.py"]
    assert in_test_file and all(c.reason == "failure" for c in in_test_file)
    assert any(c.path == "widgets.py" for c in gathered.candidates)


def test_a_frame_in_a_file_the_reader_will_not_read_is_reported(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "gen.py").write_text('def f():\n    raise RuntimeError("boom")\n')
    (tmp_path / ".gitignore").write_text("pkg/gen.py\n")
    (tmp_path / "test_a.py").write_text("from pkg.gen import f\n\n\ndef test_x():\n    f()\n")
    gathered = gather(tmp_path, run_pytest(tmp_path, "test_a.py"))
    assert all(c.path != "pkg/gen.py" for c in gathered.candidates)
    withheld = [(p.path, p.start, p.source, p.reason) for p in gathered.policy_omissions]
    assert ("pkg/gen.py", 2, "failure", "policy") in withheld
    assert gathered.failure_file == "test_a.py"
