"""A pytest plugin that writes the bugcontext context of failing tests.

``pytest --bugcontext=PATH [--bugcontext-budget N] [--bugcontext-cost chars|tokens]
[--bugcontext-template markdown|xml]``

At the end of the session, the context of the first failing test is written to ``PATH``
(a Markdown file), exactly as ``bugcontext context`` prints it for that test: the
selected windows, then the failure and a summary of what was omitted and why. When
``PATH`` is an existing directory or ends with a path separator, one file per failing
test is written in it (the directory is created if needed), named after the test's node
id: secrets in it redacted, unsafe characters replaced, and a short hash of the node id
(and of the phase, for a setup or teardown error) appended, so that two tests never share a
file and a test keeps its file name from one run to the next.

A failing test is a test whose call failed, a setup or teardown error, or a collection
error, taken in the order they happened. Each report (``longreprtext``) is turned into
the report section of pytest's own terminal output and given to the same sources as
``bugcontext context`` (:func:`bugcontext.job.sources.gather`), with pytest's rootdir as
the repository; the context is built with the native engine. The budget defaults to
``bugcontext context``'s (16,000 characters); ``--bugcontext-cost`` and
``--bugcontext-template`` choose the cost model as ``--cost`` and ``--template`` do there.

Secrets never reach the files or the terminal: the context is the Markdown of
``bugcontext context`` (every secret replaced by ``[REDACTED: kind]`` and the redaction
reported), and every terminal line passes through ``bugcontext.core.secrets.redact``.

Every context file begins with the line :data:`MARKER` (an HTML comment, hidden when the
Markdown is shown), so that the plugin knows its own files. **An existing file is replaced only
if it is a context file this plugin wrote** (its first line is :data:`MARKER`): any other
existing file, such as a test file pytest took as the option's value (``pytest --bugcontext
tests/test_x.py``), a source file of the repository, or a link to one, is refused with a
terminal line and left as it is. When no test failed, the plugin's own previous output is
removed (``PATH`` if it is such a file; in directory mode, every file of the plugin's naming
that begins with :data:`MARKER`), so that no stale context passes for a current one; in
directory mode, a run with failures also removes the plugin's files of tests that no longer
fail. No other file is ever removed. A terminal summary line says where the context went.
``PATH`` (and each file in directory mode) is written by
:func:`bugcontext.core._writer.write_file`, under its rules: a regular file through a temporary
file renamed over it (its mode kept; a read-only file is refused), a symbolic link's target
rather than the link, a character device (a terminal, ``/dev/null``) or a named pipe in place;
a folder, block device or socket is refused with a terminal line. The report text of one
failure is used up to ``Limits.max_log_bytes`` (of ``bugcontext.core.limits.DEFAULT_LIMITS``); a
longer one gets no context, with a terminal line naming the limit.
Node ids and paths in the terminal lines have their control characters escaped as in the
context (:func:`bugcontext.core.composer.header_path`).

The plugin never changes the outcome or the exit status of the run: a context that cannot
be built or written is reported as a terminal line (on standard error when there is no
terminal reporter), not as an error or a warning. It loads with the core install alone (it is
loaded by every pytest run where the package is installed) and does nothing unless
``--bugcontext`` is given; without the ``context`` extra such a run records nothing and says
so in one terminal line naming the extra (the ``MissingExtraError``'s).

The plugin's ``pytest11`` entry point is named after its module, so that
``-p bugcontext.integrations.pytest_plugin`` loads it whether or not the entry points are loaded
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), and ``-p no:bugcontext.integrations.pytest_plugin`` disables it.

PYTEST_DONT_REWRITE
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from bugcontext.core._arguments import whole_number
from bugcontext.core._extras import MissingExtraError, require
from bugcontext.core._io import OutputError, warn
from bugcontext.core._writer import make_folder, write_file
from bugcontext.core.composer import header_path
from bugcontext.core.limits import check_text

if TYPE_CHECKING:
    from bugcontext import ContextBuilder
    from bugcontext.job.sources import Repository
    from bugcontext.job.workspace import Workspace

__all__ = ["MARKER", "ContextWriter", "context_file_name", "failure_log"]

#: The first line of every context file the plugin writes: an existing file is replaced (or,
#: when no test failed, removed) only if it begins with this line.
MARKER = "<!-- bugcontext: context of a failing test, written by pytest --bugcontext -->"
# A file name of directory mode: the stem, a 10-digit hash, maybe a repeat count.
_CONTEXT_NAME = re.compile(r"\A.+-[0-9a-f]{10}(?:-[0-9]+)?\.md\Z", re.S)

#: Longest readable part of a file name written in directory mode (the hash and the
#: extension follow it), well inside the 255 bytes file systems allow.
MAX_STEM = 100

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# A location line of pytest's long and short styles: `path:line: message`, at column 0.
_LOCATION = re.compile(r"^(?P<path>[^\s<>]\S*?)(?P<rest>:\d+:(?: .*)?)$")
# A frame line of Python's own traceback (pytest's native style): `  File "path", line N`.
_NATIVE = re.compile(r'^(?P<head>\s*File ")(?P<path>[^"]+)(?P<rest>", line \d+.*)$')


def _path_value(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("expected a file or directory path, got an empty string")
    if "\0" in text:
        raise argparse.ArgumentTypeError("the path contains a NUL character")
    return text


#: ``--bugcontext-budget``: a whole number >= 0 (a value of any length gives a short error).
_budget_value = whole_number()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bugcontext", "code context of failing tests (bugcontext)")
    group.addoption(
        "--bugcontext",
        dest="bugcontext",
        metavar="PATH",
        type=_path_value,
        default=None,
        help="write the code context of the first failing test to PATH (Markdown), or, when "
        "PATH is a directory or ends with a path separator, one file per failing test in it",
    )
    group.addoption(
        "--bugcontext-budget",
        dest="bugcontext_budget",
        metavar="N",
        type=_budget_value,
        default=None,
        help="budget of each context, in the cost's unit (default 16000)",
    )
    group.addoption(
        "--bugcontext-cost",
        dest="bugcontext_cost",
        choices=["chars", "tokens"],
        default=None,
        help="unit of the budget: characters (default) or o200k_base tokens",
    )
    group.addoption(
        "--bugcontext-template",
        dest="bugcontext_template",
        choices=["markdown", "xml"],
        default=None,
        help="cost each window as its rendered block and fit the rendered section to the budget",
    )


def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("bugcontext", None)
    if not isinstance(target, str) or hasattr(config, "workerinput"):
        return  # not asked for, or a pytest-xdist worker: the controller writes
    config.pluginmanager.register(ContextWriter(config, target), "bugcontext-writer")


@dataclass(frozen=True)
class _Failure:
    """What the plugin keeps of one failed report."""

    nodeid: str
    when: str  # "call", "setup", "teardown" or "collect"
    title: str  # the report header as pytest's terminal output prints it
    text: str  # ``report.longreprtext``
    cwd: str | None  # the working directory when the report was made


def context_file_name(nodeid: str, when: str = "call") -> str:
    """The file name, in directory mode, of the context of ``nodeid``'s failure in phase
    ``when``: letters, digits, ``.``, ``_`` and ``-`` only, at most ``MAX_STEM`` characters of
    the node id, then a hash of the node id and phase that tells apart ids which read alike.

    >>> context_file_name("tests/test_a.py::test_b[x y-[1]]")
    'tests_test_a.py_test_b_x_y-_1-afe1978a07.md'
    """
    from bugcontext.core._io import redact_names  # no secret of the node id in a file name

    stem = _UNSAFE.sub("_", redact_names(nodeid)).strip("._-")[:MAX_STEM].rstrip("._-") or "test"
    if when != "call":
        stem += f".{when}"
    key = f"{nodeid}\0{when}".encode("utf-8", "surrogatepass")
    return f"{stem}-{hashlib.sha256(key).hexdigest()[:10]}.md"


def _absolute_paths(text: str, cwd: str) -> str:
    """``text`` with the relative paths of its location and ``File "..."`` lines made
    absolute from ``cwd`` (pytest prints paths relative to the working directory), where
    the file exists."""

    def absolute(path: str) -> str:
        if os.path.isabs(path):
            return path
        full = os.path.normpath(os.path.join(cwd, path))
        return full if os.path.isfile(full) else path

    lines = []
    for line in text.split("\n"):
        location = _LOCATION.match(line)
        native = None if location else _NATIVE.match(line)
        if location:
            line = absolute(location["path"]) + location["rest"]
        elif native:
            line = native["head"] + absolute(native["path"]) + native["rest"]
        lines.append(line)
    return "\n".join(lines)


def _is_rule(line: str) -> bool:
    """Whether ``line`` (one line) is one the log parser would take for a section rule
    (``==== ERRORS ====``: three ``=`` or more at each end) or a report header (``____ test_x
    ____``: three ``_`` or more, a blank, text, a blank, three ``_`` or more); inside one report
    it can only be text of the test's own. The regular expression
    ``^(?:={3,}.*={3,}|_{3,} .+ _{3,})$``, decided with string operations in time linear in
    the line (the expression backtracks cubically on a long run of ``=``)."""
    if len(line) >= 6 and line.startswith("===") and line.endswith("==="):
        return True
    head = len(line) - len(line.lstrip("_"))
    tail = len(line) - len(line.rstrip("_"))
    return head >= 3 and tail >= 3 and head + tail + 3 <= len(line) and line[head] == line[-tail - 1] == " "


def failure_log(title: str, text: str, *, error: bool = False) -> str:
    """The pytest terminal output of one failed report: the ``FAILURES`` (or, for an
    ``error``, ``ERRORS``) section with one report headed ``title`` whose body is ``text``
    (a report's ``longreprtext``). Lines of ``text`` that would read as a section rule or a
    report header are indented by one blank."""
    title = " ".join(title.splitlines()) or "test session"
    body = "\n".join(" " + line if _is_rule(line.rstrip()) else line for line in text.splitlines())
    section = "ERRORS" if error else "FAILURES"
    return f"{'=' * 30} {section} {'=' * 30}\n{'_' * 20} {title} {'_' * 20}\n\n{body}\n"


class ContextWriter:
    """The plugin object of one session with ``--bugcontext``: it records the failed
    reports and writes their contexts when the session finishes."""

    def __init__(self, config: pytest.Config, target: str) -> None:
        self._config = config
        self._target = target
        self._path = Path(config.invocation_params.dir, os.path.expanduser(target))
        seps = tuple(sep for sep in (os.sep, os.altsep) if sep)
        self._directory = target.endswith(seps) or self._path.is_dir()
        self._budget: int | None = config.getoption("bugcontext_budget", None)
        cost = {
            "unit": config.getoption("bugcontext_cost", None),
            "template": config.getoption("bugcontext_template", None),
        }
        self._cost = {key: value for key, value in cost.items() if value is not None} or None
        self._failures: list[_Failure] = []
        self._failed = 0  # failed reports seen
        self._lines: list[tuple[str, bool]] = []  # (terminal line, is a problem)
        self._reported = False
        self._workspace: Workspace | None = None
        # Without the context extra nothing is recorded: the summary says so in one line.
        self._missing: str | None = None
        try:
            require("bugcontext.job.workspace", "context")
        except MissingExtraError as exc:
            self._missing = str(exc)

    # -- recording ---------------------------------------------------------------------

    def _record(self, report: pytest.TestReport | pytest.CollectReport, when: str) -> None:
        self._failed += 1
        if (self._failures and not self._directory) or self._missing is not None:
            return  # one file: only the first failure is needed (none without the extra)
        try:
            head = report.head_line or report.nodeid or "test session"
            if when == "collect":
                title = f"ERROR collecting {head}"
            elif when == "call":
                title = head
            else:
                title = f"ERROR at {when} of {head}"
            try:
                cwd: str | None = os.getcwd()
            except OSError:
                cwd = None
            self._failures.append(_Failure(report.nodeid, when, title, report.longreprtext, cwd))
        except Exception as exc:
            self._lines.append((f"cannot read the report of {_name(report.nodeid)}: {_describe(exc)}", True))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self._record(report, report.when or "call")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self._record(report, "collect")

    # -- writing -----------------------------------------------------------------------

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        try:
            self._write_all()
        except Exception as exc:
            self._lines.append((f"cannot write the context: {_describe(exc)}", True))

    def _write_all(self) -> None:
        if self._missing is not None and self._failed:
            self._lines.append((f"no context written: {self._missing}", True))
            return
        if not self._failures:
            removed = self._remove_stale(keep=set())
            also = f" (removed the previous context: {removed})" if removed else ""
            self._lines.append((f"no failing test, no context written{also}", False))
            return
        from bugcontext import ContextBuilder
        from bugcontext.job.sources import Repository

        root = Path(self._config.rootpath)
        repo = Repository(root)
        builder = ContextBuilder()
        if not self._directory:
            failure = self._failures[0]
            if self._write_one(failure, self._path, repo, builder):
                also = f" (the first of {self._failed} failures)" if self._failed > 1 else ""
                where = _name(self._target)
                self._lines.append((f"context of {_name(failure.nodeid)} written to {where}{also}", False))
            return
        self._path.mkdir(parents=True, exist_ok=True)
        used: set[str] = set()
        written = 0
        for failure in self._failures:
            name = context_file_name(failure.nodeid, failure.when)
            stem, count = name[: -len(".md")], 2
            while name.casefold() in used:  # the same test and phase reported twice
                name, count = f"{stem}-{count}.md", count + 1
            used.add(name.casefold())
            written += self._write_one(failure, self._path / name, repo, builder)
        self._remove_stale(keep=used)
        if written:
            self._lines.append(
                (
                    f"{written} context file{'s' if written != 1 else ''} (one per failing test) "
                    f"written to {_name(self._target)}",
                    False,
                )
            )

    def _remove_stale(self, keep: set[str]) -> str:
        """Remove the plugin's own earlier outputs: ``PATH`` (one-file mode) or, in directory
        mode, the files of the plugin's naming whose names (case-folded) are not in ``keep``;
        only files that begin with :data:`MARKER`. Returns what was removed, as printed."""
        if not self._directory:
            if _ours(self._path):
                _remove(self._path)
                return _name(self._target)
            return ""
        try:
            entries = sorted(os.scandir(self._path), key=lambda entry: entry.name)
        except OSError:
            return ""
        removed = 0
        for entry in entries:
            if entry.name.casefold() in keep or not _CONTEXT_NAME.match(entry.name):
                continue
            if _ours(Path(entry.path)):
                removed += _remove(Path(entry.path))
        return f"{removed} file{'s' if removed != 1 else ''} in {_name(self._target)}" if removed else ""

    def _write_one(
        self, failure: _Failure, destination: Path, repo: Repository, builder: ContextBuilder
    ) -> bool:
        try:
            _refuse_foreign(destination)
            text = MARKER + "\n" + self._context(failure, repo, builder)
            _write_text(destination, text)
        except Exception as exc:
            self._lines.append(
                (f"cannot write the context of {_name(failure.nodeid)}: {_describe(exc)}", True)
            )
            return False
        return True

    def _context(self, failure: _Failure, repo: Repository, builder: ContextBuilder) -> str:
        from bugcontext.core.cost import Cost
        from bugcontext.core.types import BuildResult
        from bugcontext.job._failure_block import build_with_failures, used_failures
        from bugcontext.job.workspace import (
            DEFAULT_MAX_CHARS,
            ContextResult,
            Workspace,
            _restamped,
            _stamped,
            _verifier,
            _with_withheld_failures,
            reader_redactions,
        )

        text = failure.text
        check_text(text, "pytest_log", "max_log_bytes", None, "the report")
        if failure.cwd is not None and Path(failure.cwd).resolve() != repo.root:
            text = _absolute_paths(text, failure.cwd)
        log = failure_log(failure.title, text, error=failure.when != "call")
        budget = DEFAULT_MAX_CHARS if self._budget is None else self._budget
        # One workspace per session: what a failure's context derived serves the next one.
        if self._workspace is None or self._workspace.root != repo.root:
            self._workspace = Workspace(repo.root, cache=False, gitignore=repo.gitignore)
        gathered = self._workspace.gather(log)
        data = dict(gathered.build_input(budget))
        if self._cost is not None:
            data.pop("max_chars", None)
            data["budget"] = budget
            data["cost"] = self._cost
        # Verified provenance, as Workspace.context: stamped candidates, checked by the reader
        # that gathered them.
        reader = self._workspace._reader
        if reader is not None:
            data["candidates"] = _stamped(reader, gathered.candidates)
        room = "budget" if "budget" in data else "max_chars"

        def build(left: int, final: bool) -> BuildResult:
            data[room] = left
            return builder.build(data, verify=None if reader is None else _verifier(reader))

        # As Workspace.context: the section opens with the failure, inside the budget.
        model = Cost.parse(self._cost) if self._cost is not None else Cost()
        # (the report's own log names no node id: the block names the test by pytest's)
        used = [
            dataclasses.replace(report, test_id=report.test_id or failure.nodeid)
            for report in used_failures(gathered.failing_tests, gathered.failure, None)
        ]
        result, blocks, total = build_with_failures(used, model, budget, build, limits=self._workspace.limits)
        redactions: tuple[dict[str, Any], ...] = ()
        if reader is not None:
            # As Workspace.context: provenance of redacted files, withheld failure windows, and
            # the reader's redactions reported.
            result = _with_withheld_failures(_restamped(result, reader), gathered)
            redactions = reader_redactions(reader, result)
        return ContextResult(
            result,
            gathered,
            redactions=redactions,
            failure_blocks=blocks,
            full_budget=budget,
            full_used=total,
        ).markdown()

    # -- reporting ---------------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        try:
            for line, problem in self._lines:
                terminalreporter.write_line(_redacted(f"bugcontext: {line}"), yellow=problem)
            self._reported = True
        except Exception:
            pass  # reported on standard error at unconfigure

    def pytest_unconfigure(self) -> None:
        if self._reported:
            return
        for line, problem in self._lines:
            if problem:
                warn(f"bugcontext: {line}")  # (secrets redacted; a closed standard error is ignored)


def _name(name: str) -> str:
    """A node id or path as printed: control characters escaped (``header_path``)."""
    return header_path(name)


def _redacted(line: str) -> str:
    """``line`` with its secrets replaced (``bugcontext.core._io.redact_names``)."""
    from bugcontext.core._io import redact_names

    return redact_names(line)


def _first_line(path: Path) -> bytes | None:
    """The first line of the regular file ``path`` names (links followed), without its line
    break, read no further than the marker's length; ``None`` if it is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, len(MARKER.encode()) + 2)
    except OSError:
        return None
    finally:
        os.close(fd)
    return head.split(b"\n", 1)[0].rstrip(b"\r")


def _ours(path: Path) -> bool:
    """Whether ``path`` names a regular file this plugin wrote (it begins with MARKER)."""
    return _first_line(path) == MARKER.encode()


def _remove(path: Path) -> int:
    """Remove the context file ``path`` names (the file a link points to, the link kept);
    1 if it was removed, else 0."""
    try:
        os.unlink(os.path.realpath(path))
    except OSError:
        return 0
    return 1


def _refuse_foreign(path: Path) -> None:
    """Raise ``OutputError`` if ``path`` names an existing regular file (links followed) that
    is not a context file of this plugin: it is never replaced."""
    try:
        info = os.stat(path)
    except OSError:
        return  # no file yet (or one the writer reports)
    if stat.S_ISREG(info.st_mode) and not _ours(path):
        raise OutputError(
            f"cannot write {_name(str(path))}: the file exists and is not a context file this plugin "
            "wrote (its first line is not the plugin's marker); it is not replaced"
        )


def _describe(exc: BaseException) -> str:
    """``exc`` on one line: its type, and its message if it has one."""
    if isinstance(exc, OutputError):
        return " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {_name(str(exc.filename))}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8; lone surrogates as backslash escapes) with
    :func:`bugcontext.core._writer.write_file`: a regular file is never left half written, a link
    or device is never replaced. Missing folders above ``path`` are created
    (:func:`bugcontext.core._writer.make_folder`: ``OutputError`` naming a folder that is a
    file or a link to a missing target)."""
    make_folder(path.parent)
    write_file(path, text)
