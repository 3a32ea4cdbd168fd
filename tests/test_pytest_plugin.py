"""The pytest plugin: ``pytest --bugcontext=PATH`` writes the context of failing tests.

Every test runs pytest itself on a tiny project (``pytester``, in this process), with the
plugin loaded by ``-p bugcontext.integrations.pytest_plugin`` and entry-point plugins off, so that the
runs do not depend on what else is installed.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from bugcontext import TokenCounter
from bugcontext.integrations.cli import run_context
from bugcontext.integrations.pytest_plugin import MARKER, context_file_name, failure_log
from bugcontext.job.sources import parse_pytest_log

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "bugcontext.integrations.pytest_plugin")

CALC = '''
def scale(value):
    """Double ``value``."""
    return value * 2


def ratio(total, count):
    scaled = scale(total)
    return scaled / count


def average(values):
    """The mean of ``values``; an empty list averages to zero."""
    if not values:
        return 0
    return sum(values) / len(values)


def spread(values):
    """The difference between the largest and the smallest of ``values``."""
    return max(values) - min(values)
'''

TESTS = """
import pytest
from calc import average, ratio, spread


def test_ratio():
    assert ratio(4, 0) == 2


def test_average():
    assert average([1, 2, 3]) == 2


@pytest.mark.parametrize("label", ["a b [c]"])
def test_label(label):
    assert spread([len(label), 1]) == 0
"""

PASSING = """
from calc import average


def test_average():
    assert average([2, 4]) == 3
"""

BUDGET_LINE = re.compile(r"^- budget: (\d+) of (\d+) (.+) used \((.+)\)$", re.MULTILINE)


@pytest.fixture(scope="module", autouse=True)
def _sources_loaded(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build one context here first. ``pytester`` unloads the modules a run imports, and
    the sources import some lazily (numpy, through bm25s) that cannot be loaded twice in
    one process: imported here, they stay loaded."""
    folder = tmp_path_factory.mktemp("warm")
    (folder / "calc.py").write_text(CALC, encoding="utf-8")
    log = folder / "pytest.log"
    log.write_text(failure_log("test_ratio", "calc.py:8: ZeroDivisionError"), encoding="utf-8")
    run_context(folder, log)
    run_context(folder, log, cost={"unit": "tokens", "template": "xml"})


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with ``calc.py`` and ``test_calc.py``: ``test_ratio`` fails in ``calc.ratio``
    and ``test_label[a b [c]]`` fails in its own assertion; ``test_average`` passes."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(calc=CALC, test_calc=TESTS)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*PLUGIN, *args)


def summary_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if line.startswith("bugcontext:")]


def section_of(text: str) -> str:
    """The rendered section of a written context: what comes after the plugin's marker line
    and before its summary."""
    assert text.startswith(MARKER + "\n")
    summary = re.search("^## Failure$", text, flags=re.M)
    assert summary is not None
    return text[len(MARKER) + 1 : summary.start()]


def test_first_failing_test_context(project: pytest.Pytester) -> None:
    result = run(project, "--bugcontext=context.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=2)
    text = (project.path / "context.md").read_text(encoding="utf-8")
    # The failing function's code, whole, and the file the failure is in.
    assert "def ratio(total, count):\n    scaled = scale(total)\n    return scaled / count\n" in text
    assert "- failure file: calc.py" in text
    assert "- test: test_ratio" in text
    assert "- error: ZeroDivisionError: division by zero" in text
    assert "test_label" not in text.split("## Failure")[1]  # only the first failure
    assert summary_lines(result) == [
        "bugcontext: context of test_calc.py::test_ratio written to context.md (the first of 2 failures)"
    ]


def test_same_context_as_the_command_line(project: pytest.Pytester, tmp_path: Path) -> None:
    result = run(project, "--bugcontext=context.md", "--tb=long", "-k", "ratio")
    log = tmp_path / "pytest.log"
    log.write_text("\n".join(result.outlines) + "\n", encoding="utf-8")
    expected = run_context(project.path, log).markdown()
    # The plugin's marker line, then exactly what the command line prints.
    assert (project.path / "context.md").read_text(encoding="utf-8") == MARKER + "\n" + expected


@pytest.mark.parametrize("existing", [False, True], ids=["trailing-separator", "existing-directory"])
def test_directory_one_file_per_failing_test(project: pytest.Pytester, existing: bool) -> None:
    if existing:
        (project.path / "contexts").mkdir()
        option = "--bugcontext=contexts"
    else:
        option = "--bugcontext=contexts/"
    result = run(project, option)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    folder = project.path / "contexts"
    names = sorted(path.name for path in folder.iterdir())
    ids = ["test_calc.py::test_label[a b [c]]", "test_calc.py::test_ratio"]
    assert names == sorted(context_file_name(nodeid) for nodeid in ids)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+\.md", name) for name in names)
    label = (folder / context_file_name(ids[0])).read_text(encoding="utf-8")
    assert "- test: test_label[a b [c]]" in label
    assert "def test_label(label):\n    assert spread([len(label), 1]) == 0\n" in label
    assert "- failure file: test_calc.py" in label
    ratio = (folder / context_file_name(ids[1])).read_text(encoding="utf-8")
    assert "- test: test_ratio" in ratio
    assert "def ratio(total, count):" in ratio
    shown = "contexts" if existing else "contexts/"
    assert summary_lines(result) == [
        f"bugcontext: 2 context files (one per failing test) written to {shown}"
    ]


def test_directory_names_never_collide(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_names="""
        import pytest

        @pytest.mark.parametrize("x", [1, 2, 3, 4], ids=["a b", "a_b", "a/b", "a]b"])
        def test_alike(x):
            assert x == 0

        @pytest.fixture
        def resource():
            yield
            raise RuntimeError("teardown broke")

        def test_twice(resource):
            assert False, "body broke"
        """
    )
    result = run(pytester, "--bugcontext=out/")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    names = {path.name for path in (pytester.path / "out").iterdir()}
    assert len(names) == 6  # four parametrised failures; one test failed and errored
    teardown = context_file_name("test_names.py::test_twice", "teardown")
    assert teardown in names
    text = (pytester.path / "out" / teardown).read_text(encoding="utf-8")
    assert "- test: ERROR at teardown of test_twice" in text
    assert "- error: RuntimeError: teardown broke" in text


def test_setup_and_collection_errors(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_setup="""
        import pytest

        @pytest.fixture
        def database():
            raise ConnectionError("no database")

        def test_query(database):
            pass
        """
    )
    result = run(pytester, "--bugcontext=setup.md")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = (pytester.path / "setup.md").read_text(encoding="utf-8")
    assert "- test: ERROR at setup of test_query" in text
    assert "- error: ConnectionError: no database" in text
    assert 'def database():\n    raise ConnectionError("no database")\n' in text

    pytester.makepyfile(test_setup="import missing_module_for_the_plugin_test\n")
    result = run(pytester, "--bugcontext=collect.md")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    text = (pytester.path / "collect.md").read_text(encoding="utf-8")
    assert "- test: ERROR collecting test_setup.py" in text
    assert "- failure file: test_setup.py" in text


@pytest.mark.parametrize("target", ["context.md", "contexts/"])
def test_no_failure_writes_and_removes_nothing(pytester: pytest.Pytester, target: str) -> None:
    pytester.makepyfile(calc=CALC, test_ok=PASSING)
    (pytester.path / "contexts").mkdir()
    (pytester.path / "contexts" / "old.md").write_text("an earlier run\n", encoding="utf-8")
    (pytester.path / "context.md").write_text("an earlier run\n", encoding="utf-8")
    before = sorted(str(path.relative_to(pytester.path)) for path in pytester.path.rglob("*.md"))
    result = run(pytester, f"--bugcontext={target}", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    after = sorted(str(path.relative_to(pytester.path)) for path in pytester.path.rglob("*.md"))
    assert after == before
    assert (pytester.path / "context.md").read_text(encoding="utf-8") == "an earlier run\n"
    assert summary_lines(result) == ["bugcontext: no failing test, no context written"]


def test_budget_in_characters(project: pytest.Pytester) -> None:
    run(project, "--bugcontext=full.md", "--bugcontext-template=markdown")
    full = section_of((project.path / "full.md").read_text(encoding="utf-8"))
    budget = 300
    assert len(full) > budget  # the budget below leaves something out
    run(
        project,
        "--bugcontext=small.md",
        "--bugcontext-template=markdown",
        f"--bugcontext-budget={budget}",
    )
    text = (project.path / "small.md").read_text(encoding="utf-8")
    used, total, unit, counted = BUDGET_LINE.findall(text)[0]
    assert (int(total), unit, counted) == (budget, "characters", "the markdown section")
    section = section_of(text)
    assert 0 < int(used) <= budget
    assert len(section.rstrip("\n")) <= int(used) <= len(section)
    assert "def ratio(total, count):" in section  # the failure window is the first to fit


def test_budget_in_tokens(project: pytest.Pytester) -> None:
    budget = 100  # the failure element (about 25 tokens), then the failure window
    run(
        project,
        "--bugcontext=tokens.md",
        "--bugcontext-cost=tokens",
        "--bugcontext-template=xml",
        f"--bugcontext-budget={budget}",
    )
    text = (project.path / "tokens.md").read_text(encoding="utf-8")
    used, total, unit, counted = BUDGET_LINE.findall(text)[0]
    assert (int(total), unit, counted) == (budget, "o200k_base tokens", "the xml section")
    section = section_of(text)
    # The failure element first, then the code.
    assert section.startswith(
        '<failure test="test_calc.py::test_ratio" exception="ZeroDivisionError" phase="call">'
    )
    assert '</failure>\n<snippet path="calc.py"' in section
    assert 0 < int(used) <= budget
    assert TokenCounter("o200k_base").count([section.rstrip("\n")])[0] <= budget


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--bugcontext-budget=lots", "argument --bugcontext-budget: expected a whole number >= 0"),
        ("--bugcontext-budget=-1", "argument --bugcontext-budget: expected a whole number >= 0"),
        ("--bugcontext-cost=bytes", "argument --bugcontext-cost: invalid choice: 'bytes'"),
        ("--bugcontext-template=html", "argument --bugcontext-template: invalid choice: 'html'"),
        ("--bugcontext=", "argument --bugcontext: expected a file or directory path"),
    ],
)
def test_bad_option_value_is_a_usage_error(project: pytest.Pytester, option: str, message: str) -> None:
    result = run(project, "--bugcontext=context.md", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any(message in line for line in result.errlines), result.errlines
    assert "Traceback" not in result.stderr.str()
    assert not (project.path / "context.md").exists()


def test_own_failure_keeps_the_exit_status(project: pytest.Pytester) -> None:
    (project.path / "blocker").write_text("a file, not a folder\n", encoding="utf-8")
    result = run(project, "--bugcontext=blocker/context.md", "-W", "error")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=2)
    [line] = summary_lines(result)
    assert line.startswith("bugcontext: cannot write the context of test_calc.py::test_ratio: ")


def test_run_from_a_subfolder_of_the_rootdir(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makeini("[pytest]\n")  # the rootdir stays the project folder
    sub = project.mkdir("sub")
    monkeypatch.chdir(sub)
    result = run(project, "--bugcontext=context.md", str(project.path / "test_calc.py"), "-k", "ratio")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert any(line.startswith("../test_calc.py:") for line in result.outlines)  # paths from sub/
    text = (sub / "context.md").read_text(encoding="utf-8")
    assert "- failure file: calc.py" in text
    assert "def ratio(total, count):" in text


def test_failure_log_reads_back() -> None:
    text = (
        "def test_x():\n>       assert f() == 1\n\ntest_a.py:2: \n"
        "=========== not a section ===========\n"
        "____ not a header ____\n"
        "    def f():\n>       raise ValueError('bad')\nE       ValueError: bad\n\nsrc/a.py:5: ValueError"
    )
    [failure] = parse_pytest_log(failure_log("test_x[a b [c]]", text))
    assert failure.name == "test_x[a b [c]]"
    assert [(frame.path, frame.line) for frame in failure.frames] == [("test_a.py", 2), ("src/a.py", 5)]
    assert (failure.exception_type, failure.message) == ("ValueError", "bad")
    [error] = parse_pytest_log(failure_log("ERROR at setup of test_y", "src/b.py:3: OSError", error=True))
    assert error.name == "ERROR at setup of test_y"
    assert [(frame.path, frame.line) for frame in error.frames] == [("src/b.py", 3)]


def test_file_names() -> None:
    name = context_file_name("tests/test_a.py::test_b[x y-[1]]")
    assert re.fullmatch(r"tests_test_a\.py_test_b_x_y-_1-[0-9a-f]{10}\.md", name)
    alike = ["t.py::f[a b]", "t.py::f[a_b]", "t.py::f[a/b]", "t.py::f[A B]"]
    assert len({context_file_name(nodeid).casefold() for nodeid in alike}) == len(alike)
    assert context_file_name("t.py::f", "setup") != context_file_name("t.py::f", "teardown")
    assert len(context_file_name("t.py::f[" + "x" * 1000 + "]")) < 128
    assert context_file_name("../..").startswith("test-")


def test_directory_mode_applies_the_writer_rules_to_each_file(project: pytest.Pytester) -> None:
    """A name taken by a folder is refused for that test alone; an existing file keeps its
    mode; a read-only file is not replaced; no temporary file is left."""
    folder = project.path / "contexts"
    folder.mkdir()
    label, ratio = "test_calc.py::test_label[a b [c]]", "test_calc.py::test_ratio"
    (folder / context_file_name(label)).mkdir()
    (folder / context_file_name(ratio)).write_text(MARKER + "\nold", encoding="utf-8")  # the plugin's
    (folder / context_file_name(ratio)).chmod(0o600)
    result = run(project, "--bugcontext=contexts")
    assert summary_lines(result) == [
        f"bugcontext: cannot write the context of {label}: cannot write "
        f"{folder / context_file_name(label)}: is a folder",
        "bugcontext: 1 context file (one per failing test) written to contexts",
    ]
    written = folder / context_file_name(ratio)
    assert "- test: test_ratio" in written.read_text(encoding="utf-8")
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == sorted(context_file_name(n) for n in (label, ratio))

    written.chmod(0o444)
    result = run(project, "--bugcontext=contexts")
    assert summary_lines(result) == [
        f"bugcontext: cannot write the context of {ratio}: cannot write {written}: "
        "the file is read-only (it is not replaced)",
        f"bugcontext: cannot write the context of {label}: cannot write "
        f"{folder / context_file_name(label)}: is a folder",
    ]
    assert "- test: test_ratio" in written.read_text(encoding="utf-8")
    assert sorted(p.name for p in folder.iterdir()) == sorted(context_file_name(n) for n in (label, ratio))


# --- the plugin never replaces a file it did not write -----------------------------------


def _refused(path: Path) -> str:
    return (
        f"cannot write {path}: the file exists and is not a context file this plugin wrote (its "
        "first line is not the plugin's marker); it is not replaced"
    )


@pytest.mark.parametrize("form", ["space", "source", "link"])
def test_an_existing_file_it_did_not_write_is_never_replaced(project: pytest.Pytester, form: str) -> None:
    """``--bugcontext test_calc.py`` (pytest takes the test file as the option's value), a
    source file of the repository, a link to the test file: each is left as it was."""
    tests, calc = project.path / "test_calc.py", project.path / "calc.py"
    before = {path: path.read_bytes() for path in (tests, calc)}
    if form == "space":
        result = run(project, "--bugcontext", "test_calc.py")
        target = project.path / "test_calc.py"
    elif form == "source":
        result = run(project, "--bugcontext=calc.py")
        target = project.path / "calc.py"
    else:
        (project.path / "link.md").symlink_to(tests)
        result = run(project, "--bugcontext=link.md")
        target = project.path / "link.md"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert summary_lines(result) == [
        f"bugcontext: cannot write the context of test_calc.py::test_ratio: {_refused(target)}"
    ]
    assert {path: path.read_bytes() for path in (tests, calc)} == before
    assert (project.path / "link.md").is_symlink() == (form == "link")


def test_its_own_context_file_is_replaced(project: pytest.Pytester) -> None:
    run(project, "--bugcontext=context.md")
    first = (project.path / "context.md").read_text(encoding="utf-8")
    assert first.startswith(MARKER + "\n")
    (project.path / "context.md").write_text(MARKER + "\nan older context\n", encoding="utf-8")
    result = run(project, "--bugcontext=context.md")
    assert summary_lines(result)[0].startswith("bugcontext: context of test_calc.py::test_ratio written")
    assert (project.path / "context.md").read_text(encoding="utf-8") == first


def test_a_passing_run_removes_its_stale_context_only(project: pytest.Pytester) -> None:
    run(project, "--bugcontext=context.md")
    assert (project.path / "context.md").exists()
    project.makepyfile(test_calc=PASSING)
    result = run(project, "--bugcontext=context.md")
    assert result.ret == pytest.ExitCode.OK
    assert summary_lines(result) == [
        "bugcontext: no failing test, no context written (removed the previous context: context.md)"
    ]
    assert not (project.path / "context.md").exists()
    # A file the plugin did not write stays.
    (project.path / "notes.md").write_text("# my notes\n", encoding="utf-8")
    result = run(project, "--bugcontext=notes.md")
    assert summary_lines(result) == ["bugcontext: no failing test, no context written"]
    assert (project.path / "notes.md").read_text(encoding="utf-8") == "# my notes\n"


def test_directory_mode_removes_the_files_of_tests_that_no_longer_fail(project: pytest.Pytester) -> None:
    folder = project.path / "contexts"
    run(project, "--bugcontext=contexts/")
    label, ratio = "test_calc.py::test_label[a b [c]]", "test_calc.py::test_ratio"
    assert sorted(p.name for p in folder.iterdir()) == sorted(context_file_name(n) for n in (label, ratio))
    keep = folder / "x-0123456789.md"  # the plugin's naming, not its marker: not the plugin's
    keep.write_text("mine\n", encoding="utf-8")
    project.makepyfile(test_calc=TESTS.replace("assert spread([len(label), 1]) == 0", "pass"))
    run(project, "--bugcontext=contexts/")
    assert sorted(p.name for p in folder.iterdir()) == sorted([context_file_name(ratio), keep.name])
    project.makepyfile(test_calc=PASSING)
    result = run(project, "--bugcontext=contexts/")
    assert summary_lines(result) == [
        "bugcontext: no failing test, no context written (removed the previous context: 1 file in "
        "contexts/)"
    ]
    assert sorted(p.name for p in folder.iterdir()) == [keep.name]


def test_a_secret_in_a_node_id_never_reaches_a_file_name() -> None:
    token = "AKIA" + "IOSFODNN7ABCDEFQ"
    name = context_file_name(f"tests/test_a.py::test_key[{token}]")
    assert token not in name
    assert name.startswith("tests_test_a.py_test_key_REDACTED_AWSKeyDetector-")
    github = "ghp_" + "JBd0Kh8oOOL8dKLzdocJ2isAjIhKtJ0RlgLK"
    assert github not in context_file_name(f"tests/test_a.py::test_{github}_x")


def test_a_folder_that_is_a_link_to_a_missing_target_is_named(project: pytest.Pytester) -> None:
    # "out" is there, a link to nothing: the line says so, not "File exists".
    (project.path / "out").symlink_to("gone")
    result = run(project, "--bugcontext=out/context.md")
    assert summary_lines(result) == [
        "bugcontext: cannot write the context of test_calc.py::test_ratio: cannot write "
        f"{project.path / 'out'}: it is a symbolic link to gone, which does not exist",
    ]
    assert not (project.path / "gone").exists()
