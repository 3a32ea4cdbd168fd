"""The reports read from a test run's output: failures, exception chains, traceback frames
and status-line outcomes (:class:`TestFailure`, :class:`ChainLink`, :class:`Frame`,
:class:`TestOutcome`), and what every log reader shares (:func:`strip_ansi`, the cleaned lines,
line numbers past the end of every file, telling JUnit XML from a log).

The readers build these: :mod:`.pytest_log` (pytest, unittest, Python tracebacks),
:mod:`.logs` (other runners), :mod:`.runs` (JUnit XML, and choosing the failing test).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bugcontext.core.errors import ScreenedError
from bugcontext.core.terminal import strip_terminal

__all__ = [
    "BEYOND_LINE",
    "ChainLink",
    "Frame",
    "LogFormatError",
    "Phase",
    "Relation",
    "Status",
    "TestFailure",
    "TestOutcome",
    "is_junit_xml",
    "strip_ansi",
]


Status = Literal["failed", "error"]
Phase = Literal["collect", "setup", "call", "teardown"]
Relation = Literal["cause", "context", "group"]


# Every pattern here runs in time linear in the line it reads (the log is text we did not
# write): character classes next to each other are disjoint or the repetition is possessive
# (``*+``, ``++``), so no pattern can backtrack over a long run more than once.
# A time stamp that CI systems put before every line of a job log. Its blank is gone when the
# line was empty (trailing blanks are stripped first): the stamp alone is an empty line.
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z(?: |$)")
# pytest-xdist: the worker of a line (alone: an empty line), and the worker's platform line
# under a report header.
_XDIST_PREFIX = re.compile(r"^\[gw\d+\](?: |$)")
_XDIST_PLATFORM = re.compile(r"^\[gw\d+\] \S+ -- Python \S+")

# A line number that no file can reach: past the builder's largest line (2**31 - 1). Such
# digits are not even converted (``int`` refuses more than a few thousand digits).
_MAX_LINE = 2**31 - 1
_MAX_LINE_DIGITS = len(str(_MAX_LINE))


class LogFormatError(ScreenedError, ValueError):
    """The test output cannot be read: JUnit XML that is malformed or unsafe (an entity
    declaration, an external reference). ``field`` names the input it came from when that is
    known: ``"pytest_log"`` (the test output, read as JUnit XML) or ``"junit_xml"`` (the JUnit
    report given beside it); else ``None``. The message is screened for secrets."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field

    def __reduce__(self) -> tuple[type[LogFormatError], tuple[str, str | None]]:
        return (type(self), (str(self), self.field))


def _line_number(digits: str) -> int | None:
    """The line number written as ``digits``, or ``None`` if no file can have that line
    (0: lines are 1-based; more digits than ``2**31 - 1`` has, leading zeros aside, or a
    larger value): such a frame is unusable."""
    if len(digits.lstrip("0")) > _MAX_LINE_DIGITS:
        return None
    line = int(digits)
    return line if 1 <= line <= _MAX_LINE else None


def _beyond(digits: str) -> bool:
    """Whether the line number written as ``digits`` is past ``2**31 - 1``: past the end of
    every file (such a frame is kept apart, :attr:`TestFailure.beyond`, to be reported)."""
    significant = digits.lstrip("0")
    return len(significant) > _MAX_LINE_DIGITS or (significant != "" and int(significant) > _MAX_LINE)


#: The line a frame past ``2**31 - 1`` is given in :attr:`TestFailure.beyond`.
BEYOND_LINE = _MAX_LINE + 1


def strip_ansi(text: str) -> str:
    """``text`` without terminal sequences (colours, cursor movement, window titles, OSC 8
    links: :data:`bugcontext.core.terminal.TERMINAL_SEQUENCE`) and without the control
    characters left after them (a bell, a backspace; tabs and line breaks stay)."""
    return strip_terminal(text)


#: The control characters of :data:`bugcontext.core.terminal.CONTROL_CHARACTERS` but the line
#: endings ``splitlines`` splits at (carriage return, vertical tab, form feed, the separators
#: \x1c-\x1e and NEL): a text without any has no terminal sequence and no control character
#: inside its lines (every terminal sequence starts with ESC or a C1 character).
_CONTROL_BUT_ENDINGS = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")


def _clean_lines(text: str) -> list[str]:
    """The lines of ``text`` as the parsers read them: no terminal sequences or control
    characters (:func:`strip_ansi`), no CI time stamps,
    no pytest-xdist ``[gwN]`` prefixes (the worker platform lines dropped), no trailing
    blanks."""
    lines: list[str] = []
    # A log with no control character but line endings (most logs) has nothing to strip: each
    # line is then only cut of its trailing blanks (the same lines, in a third of the time).
    plain = _CONTROL_BUT_ENDINGS.search(text) is None
    for raw in text.splitlines():  # split first: a carriage return still ends a line
        line = raw.rstrip() if plain else strip_terminal(raw).rstrip()
        if line[:1].isdigit():
            line = _TIMESTAMP.sub("", line, count=1)
        if line.startswith("[gw"):
            if _XDIST_PLATFORM.match(line):
                continue
            line = _XDIST_PREFIX.sub("", line, count=1)
        lines.append(line)
    return lines


@dataclass(frozen=True)
class Frame:
    """One traceback entry: ``path`` as printed in the log, 1-based ``line``.

    ``function`` is the function name when the log gives it (short and native styles),
    else ``None``; ``segment`` is the 0-based index of the exception in a chain, the last
    segment being the exception the test saw.
    """

    path: str
    line: int
    function: str | None = None
    segment: int = 0


@dataclass(frozen=True)
class ChainLink:
    """One exception of a chain, in printed order: the root cause first, the exception
    the test saw last.

    ``segment`` is its index (the ``segment`` of its frames); ``exception_type`` and
    ``message`` as in :class:`TestFailure`; ``frames`` its own frames, outermost first;
    ``relation`` how it leads to the next link: ``"cause"`` (``raise ... from``, "The
    above exception was the direct cause"), ``"context"`` ("During handling of the above
    exception"), ``"group"`` (a sub-exception of an exception group), or ``None`` for the
    last link.
    """

    segment: int
    exception_type: str | None
    message: str
    frames: tuple[Frame, ...]
    relation: Relation | None = None


@dataclass(frozen=True)
class TestFailure:
    """One failed (or errored) test as reported in the log.

    ``name`` is the report header (``TestUtil.test_x``, ``test_y[a b-1]``, ``ERROR at setup
    of test_z``), or, without a header, the test's name from its id; ``None`` when the log
    names no test. ``frames`` are in printed order, outermost call first within each
    segment. ``exception_type`` is the type of the exception the test saw
    (``ValueError``), or ``None`` when the log does not name it; ``message`` is its message
    (for a failed ``assert``, pytest's explanation's first line). ``message_lines`` are
    all the message lines of the report (``E`` lines without the prefix, native tails),
    every segment's.

    ``test_id`` is the test's id when the log gives one (a pytest node id
    ``tests/test_x.py::TestC::test_y[1]`` from a status line; ``mod.Class.test_x`` from
    unittest; ``classname.name`` from JUnit XML). ``status`` is ``"failed"`` or
    ``"error"`` (pytest's ``ERRORS`` part, unittest's ``ERROR:``, JUnit's ``<error>``).
    ``chain`` holds every exception of the chain in printed order (the root cause first).
    ``origin`` names the shape read: ``pytest``, ``unittest``, ``junit``, ``traceback``
    or ``summary`` (a status line without any report).

    ``phase`` is when the test went wrong, as far as the log says: ``"collect"`` (pytest's
    ``ERROR collecting``, JUnit's ``collection failure``), ``"setup"`` or ``"teardown"``
    (``ERROR at setup of``, ``failed on teardown with``), ``"call"`` (a failed test), or
    ``None`` (an error of unknown phase).

    ``beyond`` holds the frames whose line is past ``2**31 - 1`` (past the end of every file;
    ``line`` is :data:`BEYOND_LINE`): they are not in ``frames`` (a frame there is a line of
    its file), and :func:`bugcontext.job.sources.failure.resolve_frames` reports each one under
    the repository as past the end of its file, so no frame is dropped in silence. (A line
    ``0`` names no line at all and is dropped.)
    """

    __test__ = False  # not a pytest test class

    name: str | None
    frames: tuple[Frame, ...]
    exception_type: str | None
    message: str
    message_lines: tuple[str, ...]
    test_id: str | None = None
    status: Status = "failed"
    chain: tuple[ChainLink, ...] = ()
    origin: str = "pytest"
    phase: Phase | None = None
    beyond: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class TestOutcome:
    """One test's outcome as a status line reports it.

    ``test_id`` as printed (``tests/test_x.py::test_y[a b]``, ``mod.Class.test_x``);
    ``status`` one of ``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``,
    ``xpassed``; ``message`` the text after ``id - `` in a short summary (else ``""``).
    """

    __test__ = False  # not a pytest test class

    test_id: str
    status: str
    message: str = ""


# --- one report's traceback ----------------------------------------------------------


def is_junit_xml(text: str | bytes) -> bool:
    """Whether ``text`` looks like an XML document (a JUnit report) rather than a log."""
    head = text[:512].lstrip()
    if isinstance(head, bytes):
        head = head.lstrip(b"\xef\xbb\xbf").decode("ascii", errors="replace")
    head = head.lstrip("\ufeff").lstrip()
    return head.startswith(("<?xml", "<testsuite", "<testsuites", "<testcase"))
