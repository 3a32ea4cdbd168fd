"""Parsing test output into failures, exception chains and traceback frames.

Shapes read (:func:`parse_test_output` tells them apart by themselves):

* pytest's terminal output: the ``FAILURES`` and ``ERRORS`` parts with ``--tb=long``,
  ``short``, ``native`` or ``line`` reports (``line`` prints one location line per failure
  and no report header), ``-q`` and ``-v`` runs, ``-rA`` short summaries (``FAILED id -
  message``, ``ERROR id``), pytest-xdist's ``[gw0]`` prefixes, ANSI colour and CI time
  stamps at the start of lines;
* JUnit XML (``pytest --junitxml``, and other xUnit reporters), parsed with ``defusedxml``
  (no entity expansion, no external resources); each ``<failure>`` or ``<error>`` text is
  read as a report of its own;
* unittest's output (``FAIL: test_x (mod.Class.test_x)`` and ``ERROR:`` blocks, the
  ``Traceback`` inside, ``test_x (mod.Class.test_x) ... FAIL`` lines of ``-v``);
* plain Python tracebacks (a log without any of the above).

Frames come from the location lines pytest prints (``path:line: ExcType`` or
``path:line: in func``) and from Python's ``File "path", line N, in func`` lines. A chained
exception (``The above exception was the direct cause of the following exception:``,
``During handling of the above exception, another exception occurred:``) starts a new
*segment*: every link of the chain is kept, in printed order (the root cause first), and
the last segment is the exception the test saw.

A report header is recognised by pytest's own layout (``write_sep("_", title)``: the title
between runs of ``_`` of equal length, one ``_`` a side for a long name; the ``_ _ _`` lines
between the entries of a long traceback are never headers). Failures with no ordinary
traceback entry for the broken file are read too: a ``SyntaxError`` (``IndentationError``,
``TabError``) names its location in its message (``E     File "pkg/broken.py", line 3``),
which becomes the deepest frame; pytest's "fixture not found" report gives ``file path,
line N``; a doctest's ``path:N: UnexpectedException`` is the example, the traceback above it
goes deeper.

:func:`failing_tests` groups one test's reports (a failure and an error at teardown) and
picks the one that is its failure; :func:`summary_order` gives the order of the short test
summary; :func:`select_test` chooses a failing test by id.

Test ids (``tests/test_x.py::TestC::test_y[a b-[1]]``) come from status lines, with the
status before the id (``FAILED id - message``, ``[gw1] [ 50%] PASSED id``) or after it
(``id PASSED  [ 50%]``, ``test_x (mod.C.test_x) ... FAIL``); ids may hold blanks and
brackets. Progress lines (``tests/test_x.py .F.  [100%]``, ``[100%]``) are not tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NoReturn

from bugcontext.core._extras import needs

__all__ = [
    "BEYOND_LINE",
    "ChainLink",
    "FailingTest",
    "Frame",
    "LogFormatError",
    "TestFailure",
    "TestOutcome",
    "UnknownTestError",
    "failing_tests",
    "is_junit_xml",
    "parse_junit_xml",
    "parse_outcomes",
    "parse_pytest_log",
    "parse_test_output",
    "select_test",
    "strip_ansi",
    "summary_order",
]

Status = Literal["failed", "error"]
Phase = Literal["collect", "setup", "call", "teardown"]
Relation = Literal["cause", "context", "group"]

# Every pattern here runs in time linear in the line it reads (the log is text we did not
# write): character classes next to each other are disjoint or the repetition is possessive
# (``*+``, ``++``), so no pattern can backtrack over a long run more than once.
_ANSI = re.compile(r"\x1b\[[0-?]*+[ -/]*+[@-~]|\x1b[@-Z\\-_]")
# A time stamp that CI systems put before every line of a job log. Its blank is gone when the
# line was empty (trailing blanks are stripped first): the stamp alone is an empty line.
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z(?: |$)")
# pytest-xdist: the worker of a line (alone: an empty line), and the worker's platform line
# under a report header.
_XDIST_PREFIX = re.compile(r"^\[gw\d+\](?: |$)")
_XDIST_PLATFORM = re.compile(r"^\[gw\d+\] \S+ -- Python \S+")
# Matched at a position (``pattern.match(line, pos)``), so no ``^``.
_PROGRESS = re.compile(r"\[\s*+\d++%\]\s*+")
# `path:line: message` as pytest prints it (long/short/line styles); the path has no blanks.
_LOCATION = re.compile(r"^(?P<path><[^>\n]++>|[^\s<>]\S*?):(?P<line>\d++): ?(?P<message>.*)$")
# `file path, line N` above the test's signature (pytest's "fixture not found" report).
_FIXTURE_LOCATION = re.compile(r"^file (?P<path>.+), line (?P<line>\d++)$")
# `  File "path", line N, in func` as Python prints it (native style, bare tracebacks).
_NATIVE = re.compile(r'^\s*+File "(?P<path>[^"]++)", line (?P<line>\d++)(?:, in (?P<func>.+))?$')
_CHAIN: dict[str, Relation] = {
    "The above exception was the direct cause of the following exception": "cause",
    "During handling of the above exception, another exception occurred": "context",
}
_TRACEBACK_START = "Traceback (most recent call last):"
# Exception groups (Python 3.11+) draw their sub-exceptions in a box of `|` and `+-`.
_GROUP_MARGIN = re.compile(r"^\s*+(?:\|(?: |$))++|^\s*+\+ (?=Exception Group Traceback)")
# `+-+---- 1 ----` / `+---- ... ----`: the run of `-` and `+` before the blank ends with `-`.
_GROUP_SPLIT = re.compile(r"^\s*+\+[-+]*+(?<=-) (?:\d++|\.\.\.) -++$")
_EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*+): ?(?P<message>.*)$")
_EXCEPTION_NAME = re.compile(r"^[A-Za-z_][\w.]*+$")
# The last line of a Python traceback, "ValueError: message", as printed at column 0.
_TRACEBACK_TAIL = re.compile(
    r"^[A-Za-z_][\w.]*+(?:(?<=Error)|(?<=Exception)|(?<=Exit)|(?<=Interrupt)|(?<=Iteration)"
    r"|(?<=Failed)|(?<=Group)|(?<=Warning))(?::|$)"
)
# unittest: the rule above a report, its header, and the rule under the header.
_UNITTEST_RULE = re.compile(r"^={20,}$")
_UNITTEST_HEADER = re.compile(r"^(?P<kind>FAIL|ERROR|UNEXPECTED SUCCESS): (?P<desc>.+)$")
_UNITTEST_BODY_RULE = re.compile(r"^-{20,}$")
_UNITTEST_RAN = re.compile(r"^Ran \d+ tests? in ")
# `test_x (mod.Class.test_x)`, maybe followed by a subtest's parameters `(i=1)`.
_UNITTEST_DESC = re.compile(r"^(?P<name>\S+) \((?P<id>[^()\s]+)\)(?P<sub> \(.*\))?$")
_UNITTEST_VERBOSE = re.compile(
    r"^\s*(?P<desc>\S+ \([^()\s]+\)(?: \(.*\))?) \.\.\. "
    r"(?P<status>ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$"
)
_PHASE_HEADERS: tuple[tuple[str, Phase], ...] = (
    ("ERROR at setup of ", "setup"),
    ("ERROR at teardown of ", "teardown"),
    ("ERROR collecting ", "collect"),
)
_PYTEST_STATUS = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}
_STATUS_FIRST = re.compile(r"^(?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?P<rest>\S.*)$")
# `id STATUS`, `id STATUS (reason)`, either maybe followed by `  [ 50%]` (:func:`_status_last`).
_ID_START = re.compile(r"[^\s:]++::\S")
_STATUS_WORD = re.compile(r" (?P<status>PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
_UNITTEST_STATUS = {
    "ok": "passed",
    "FAIL": "failed",
    "ERROR": "error",
    "expected failure": "xfailed",
    "unexpected success": "xpassed",
}

# A line number that no file can reach: past the builder's largest line (2**31 - 1). Such
# digits are not even converted (``int`` refuses more than a few thousand digits).
_MAX_LINE = 2**31 - 1
_MAX_LINE_DIGITS = len(str(_MAX_LINE))


class LogFormatError(ValueError):
    """The test output cannot be read: JUnit XML that is malformed or unsafe (an entity
    declaration, an external reference)."""


def _rule_title(line: str, rule: str) -> str | None:
    """The title of a rule line such as ``===== FAILURES =====`` drawn with ``rule`` (one
    character), or ``None`` if ``line`` is not one.

    A rule line is at least 3 ``rule`` characters, the title, and at least 3 ``rule``
    characters (a line of ``rule`` only needs 6 of them, its title then being empty); one
    blank on each side of the title is not part of it. This is the regular expression
    ``^R{3,} ?(.*?) ?R{3,}$`` computed in linear time: the expression backtracks cubically
    on a long run of ``R``.
    """
    length = len(line)
    lead = length - len(line.lstrip(rule))
    if lead < 3:
        return None
    if lead == length:
        return "" if length >= 6 else None
    trail = length - len(line.rstrip(rule))
    if trail < 3:
        return None
    title = line[lead : length - trail]
    if title.startswith(" "):
        title = title[1:]
    if title.endswith(" "):
        title = title[:-1]
    return title


def _is_entry_separator(line: str) -> bool:
    """Whether ``line`` is the ``_ _ _ _`` line pytest's long style prints between the
    entries of one traceback (trailing blank stripped): never a report header."""
    size = len(line)
    return size >= 3 and line == "_ " * (size // 2) + "_" * (size % 2)


def _report_title(line: str, width: int | None, *, strict: bool = False) -> str | None:
    """The title of a pytest report header line, or ``None`` if ``line`` is not one.

    pytest's terminal writer draws a header as ``write_sep("_", title)``: ``N`` times ``_``,
    a blank, the title, a blank, ``N`` times ``_`` and one more ``_`` when the line still
    fits the terminal width ``W``, with ``N = max((W - len(title) - 2) // 2, 1)``; so a long
    test name gets runs of 1 to 3 ``_`` only. A line is a header when its runs of ``_`` are
    as long as each other (the right one maybe by one more), its title is not made of ``_``
    and blanks only (the ``_ _ _`` frame separators of ``--tb=long``), and, when ``width``
    (the terminal width, known from the ``=`` rule above the reports) is given and the runs
    are shorter than 3 (or ``strict``: the line comes after a report's captured output,
    which any program can print), the line is exactly what pytest would draw at that width.
    """
    size = len(line)
    if size < 5 or line[0] != "_" or line[-1] != "_":
        return None
    left = size - len(line.lstrip("_"))
    right = size - len(line.rstrip("_"))
    if left == size or right - left not in (0, 1):
        return None
    if line[left] != " " or line[size - right - 1] != " " or size - right - 1 <= left:
        return None
    title = line[left + 1 : size - right - 1]
    if not title.strip(" _"):
        return None
    if width is None or (left >= 3 and not strict):
        return title
    fill = max((width - len(title) - 2) // 2, 1)
    drawn = 2 * fill + len(title) + 2
    extra = 1 if drawn + 1 <= width else 0
    return title if left == fill and right == fill + extra else None


def _phase_of(name: str | None, status: Status) -> Phase | None:
    """The phase a report header names (``ERROR at setup of x``), ``"call"`` for any other
    failed test, ``None`` for an error of unknown phase."""
    if name is not None:
        for prefix, phase in _PHASE_HEADERS:
            if name.startswith(prefix):
                return phase
    return "call" if status == "failed" else None


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
    """``text`` without ANSI escape sequences (colours, bold, cursor movement)."""
    return _ANSI.sub("", text)


def _clean_lines(text: str) -> list[str]:
    """The lines of ``text`` as the parsers read them: no ANSI escapes, no CI time stamps,
    no pytest-xdist ``[gwN]`` prefixes (the worker platform lines dropped), no trailing
    blanks."""
    lines: list[str] = []
    for raw in strip_ansi(text).splitlines():
        line = raw.rstrip()
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


@dataclass
class _Segment:
    frames: list[Frame] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # E lines and native tails
    location_type: str | None = None  # `path:N: ExcType` (long style, --tb=line)
    tail_type: str | None = None  # the type named by a native traceback's last line
    # The location a SyntaxError (IndentationError, TabError) names inside its message
    # (`E     File "path", line N`): the deepest frame, though no traceback entry shows it.
    syntax_frames: list[Frame] = field(default_factory=list)
    quoted: set[int] = field(default_factory=set)  # messages that quote source, not the error


class _Builder:
    """Reads the lines of one report (or of a whole bare log) into a :class:`TestFailure`.

    ``bounded``: the lines are one report whose end is known (a unittest block, a JUnit
    element, a pytest report), so every line after a native traceback's last line belongs
    to the message; in an unbounded log the message ends at the first blank line.
    """

    def __init__(self, name: str | None, *, bounded: bool = True) -> None:
        self.name = name
        self.bounded = bounded
        self.segments: list[_Segment] = [_Segment()]
        self.relations: list[Relation] = []
        self.in_capture = False
        self.after_frame = False  # inside a native frame (its source and caret lines)
        self.in_tail = False  # after a native traceback's last line
        self.in_syntax = False  # inside a SyntaxError's quoted location (file line, source, caret)
        self.frame_count = 0
        self.beyond: list[Frame] = []  # frames past 2**31 - 1 (TestFailure.beyond)
        self._beyond_seen: set[Frame] = set()  # the same, to tell a repeated one in O(1)

    @property
    def current(self) -> _Segment:
        return self.segments[-1]

    def _new_segment(self, relation: Relation) -> None:
        if self.current.frames or self.current.messages:
            self.segments.append(_Segment())
            self.relations.append(relation)
        self.after_frame = self.in_tail = False

    def feed(self, line: str) -> None:
        if _rule_title(line, "-") is not None:
            self.in_capture = True  # "Captured stdout call" and similar: not traceback text
            return
        if self.in_capture:
            return
        if line.lstrip()[:1] in ("|", "+"):
            # An exception group: each sub-exception is a segment; the box is not text.
            if _GROUP_SPLIT.match(line):
                self._new_segment("group")
                return
            margin = _GROUP_MARGIN.match(line)
            if margin is not None:
                line = line[margin.end() :]
        stripped = line.strip()
        relation = next((rel for text, rel in _CHAIN.items() if stripped.startswith(text)), None)
        if relation is not None:
            self._new_segment(relation)
            return
        if stripped == _TRACEBACK_START or stripped.startswith("Exception Group Traceback"):
            self.after_frame = self.in_tail = False
            return
        if line.startswith("E") and (len(line) == 1 or line[1] in " \t"):
            self._message(line[1:].strip())
            self.after_frame = self.in_tail = False
            return
        if self.in_syntax and line[:1] in (" ", "\t"):
            # --tb=line and JUnit: only the first line of a SyntaxError's text has the `E`.
            self._message(stripped)
            return
        self.in_syntax = False
        fixture = _FIXTURE_LOCATION.match(line)
        if fixture is not None:  # pytest's "fixture 'x' not found": `file path, line N`
            number = _line_number(fixture["line"])
            if number is not None:
                self._add_frame(Frame(fixture["path"], number, None, len(self.segments) - 1))
            else:
                self._past(fixture["path"], fixture["line"], None)
            return
        native = _NATIVE.match(line)
        if native:
            number = _line_number(native["line"])
            if number is not None:
                self._add_frame(Frame(native["path"], number, native["func"], len(self.segments) - 1))
            else:
                self._past(native["path"], native["line"], native["func"])
            self.after_frame, self.in_tail = True, False
            return
        location = _LOCATION.match(line)
        if location:
            message = location["message"].strip()
            function = message[3:].strip() if message.startswith("in ") else None
            number = _line_number(location["line"])
            if number is not None:
                frame = Frame(location["path"], number, function, len(self.segments) - 1)
                if message == "UnexpectedException":
                    # A doctest example that raised: the example is the outermost frame, the
                    # traceback printed above it goes deeper, and its last line is the error.
                    self.current.frames.insert(0, frame)
                    self.frame_count += 1
                    self.after_frame = self.in_tail = False
                    return
                self._add_frame(frame)
            else:
                self._past(location["path"], location["line"], function)
            syntax = _NATIVE.match(message) if message.startswith("File ") else None
            if syntax is not None and syntax["func"] is None:
                self._message(message)  # --tb=line: `path:N:   File "broken.py", line 3`
                self.after_frame = self.in_tail = False
                return
            if message and function is None:
                exc_type, _, rest = message.partition(":")
                if _EXCEPTION_NAME.match(exc_type.strip()):
                    self.current.location_type = exc_type.strip()
                    if rest.strip() and not self.current.messages:
                        self.current.messages.append(message)  # --tb=line: `path:N: Type: message`
            self.after_frame = self.in_tail = False
            return
        if self.in_tail:
            if not stripped and not self.bounded:
                self.in_tail = False
            else:
                self.current.messages.append(stripped)
            return
        at_column_0 = not line.startswith((" ", "\t", ">"))
        if at_column_0 and stripped and self.current.frames:
            tail = _EXCEPTION_LINE.match(stripped) or _EXCEPTION_NAME.match(stripped)
            if (self.after_frame and tail) or _TRACEBACK_TAIL.match(stripped):
                # The last line of a native traceback: "ValueError: message" at column 0.
                self.current.tail_type = stripped.split(":", 1)[0]
                self.current.messages.append(stripped)
                self.after_frame, self.in_tail = False, True
                return
        if at_column_0:
            self.after_frame = False

    def _add_frame(self, frame: Frame) -> None:
        self.current.frames.append(frame)
        self.frame_count += 1

    def _past(self, path: str, digits: str, function: str | None) -> None:
        """A frame whose line number is no line (``0``) or past ``2**31 - 1``: the latter is
        kept in :attr:`beyond`, to be reported as past the end of its file."""
        if _beyond(digits):
            frame = Frame(path, BEYOND_LINE, function, len(self.segments) - 1)
            if frame not in self._beyond_seen:
                self._beyond_seen.add(frame)
                self.beyond.append(frame)

    def _message(self, text: str) -> None:
        """One message line: a SyntaxError's ``File "path", line N`` (no function) is its
        location, a frame; the quoted source and caret lines under it are kept as message
        lines but are not the error's message."""
        segment = self.current
        syntax = _NATIVE.match(text) if text.startswith("File ") else None
        if syntax is not None and syntax["func"] is None:
            number = _line_number(syntax["line"])
            if number is not None:
                frame = Frame(syntax["path"], number, None, len(self.segments) - 1)
                if frame not in segment.syntax_frames:
                    segment.syntax_frames.append(frame)
                    self.frame_count += 1
            else:
                self._past(syntax["path"], syntax["line"], None)
            self.in_syntax = True
            segment.quoted.add(len(segment.messages))
        elif self.in_syntax:
            if _TRACEBACK_TAIL.match(text):
                self.in_syntax = False  # `SyntaxError: invalid syntax`: the error itself
            else:
                segment.quoted.add(len(segment.messages))
        segment.messages.append(text)

    @staticmethod
    def _exception(segment: _Segment) -> tuple[str | None, str]:
        exception_type = segment.location_type or segment.tail_type
        message = ""
        for index, text in enumerate(segment.messages):
            if not text or index in segment.quoted:
                continue
            match = _EXCEPTION_LINE.match(text)
            if match and (
                exception_type is None
                or match["type"] == exception_type
                or match["type"].endswith("." + exception_type)
                or exception_type.endswith("." + match["type"])
            ):
                exception_type = exception_type or match["type"]
                message = match["message"]
            elif exception_type is None and _EXCEPTION_NAME.match(text) and _TRACEBACK_TAIL.match(text):
                exception_type = text
            else:
                message = text
            break
        if exception_type is None and message.startswith("assert "):
            exception_type = "AssertionError"  # pytest's rewritten `assert` explains itself
        return exception_type, message

    def build(
        self,
        *,
        test_id: str | None = None,
        status: Status = "failed",
        origin: str = "pytest",
    ) -> TestFailure:
        links: list[ChainLink] = []
        for index, segment in enumerate(self.segments):
            for frame in segment.syntax_frames:
                if not segment.frames or segment.frames[-1] != frame:
                    segment.frames.append(frame)
            segment.syntax_frames = []
            exception_type, message = self._exception(segment)
            relation = self.relations[index] if index < len(self.relations) else None
            links.append(ChainLink(index, exception_type, message, tuple(segment.frames), relation))
        # The exception the test saw: the last link that says anything.
        final = next(
            (link for link in reversed(links) if link.exception_type or link.message or link.frames),
            links[-1],
        )
        frames = tuple(frame for segment in self.segments for frame in segment.frames)
        all_lines = tuple(line for segment in self.segments for line in segment.messages)
        return TestFailure(
            self.name,
            frames,
            final.exception_type,
            final.message,
            all_lines,
            test_id=test_id,
            status=status,
            chain=tuple(links),
            origin=origin,
            phase=_phase_of(self.name, status),
            beyond=tuple(self.beyond),
        )


# --- status lines --------------------------------------------------------------------


def _split_id(rest: str) -> tuple[str, str]:
    """``(test_id, message)`` from the text after a status: ``id`` or ``id - message``.

    A parametrised id's brackets may hold blanks, `` - `` and more brackets
    (``test_x[a - b-[1]]``): the id ends at the first ``]`` that balances the brackets
    opened after its last ``::`` and is followed by the end or by `` - ``.
    """
    head, sep, _ = rest.partition(" - ")
    opening = rest.find("[", rest.find("::") + 1 if "::" in head else 0)
    if opening == -1 or (sep and opening > len(head)):
        return head.strip(), rest[len(head) + len(sep) :].strip() if sep else ""
    depth = 0
    fallback: int | None = None
    for index in range(opening, len(rest)):
        char = rest[index]
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            # (no slicing here: a line of many `]` would copy its rest once per `]`)
            if index + 1 == len(rest) or rest.startswith(" - ", index + 1):
                if depth == 0:
                    return rest[: index + 1], rest[index + 4 :].strip()
                if fallback is None:
                    fallback = index
    if fallback is not None:
        return rest[: fallback + 1], rest[fallback + 1 :][3:].strip()
    return head.strip(), rest[len(head) + len(sep) :].strip() if sep else ""


def _unittest_id(desc: str) -> tuple[str, str] | None:
    """``(test_id, name)`` of a unittest description ``test_x (mod.Class.test_x)`` (before
    Python 3.11: ``test_x (mod.Class)``), or ``None``; a subtest's parameters are kept in
    the name."""
    match = _UNITTEST_DESC.match(desc)
    if match is None:
        return None
    method, where = match["name"], match["id"]
    test_id = where if where.endswith("." + method) else f"{where}.{method}"
    parts = test_id.split(".")
    qualified = next((i for i, part in enumerate(parts) if part[:1].isupper()), len(parts) - 1)
    name = ".".join(parts[qualified:]) + (match["sub"] or "")
    return test_id, name


def _status_last(line: str) -> tuple[str, str] | None:
    r"""``(test_id, status word)`` of a ``-v`` status line ``id STATUS``, ``id STATUS
    (reason)``, either maybe followed by blanks and ``[ 50%]``; ``None`` for another line.

    The id starts ``name::`` and ends at the first `` STATUS`` after which only the
    reason and the progress may follow (the expression
    ``^([^\s:]+::\S.*?) (STATUS)(?: \(.*\))?(?:\s+\[\s*\d+%\])?$``, computed in linear time).
    """
    body = line
    if line.endswith("%]"):
        opening = line.rfind("[")
        inner = line[opening + 1 : -2].strip()
        head = line[:opening].rstrip()
        if opening > 0 and inner.isdecimal() and len(head) < opening:
            body = head
    start = _ID_START.match(body)
    if start is None:
        return None
    end = len(body)
    for word in _STATUS_WORD.finditer(body, start.end()):
        after = word.end()
        if after == end or (end - after >= 3 and body.startswith(" (", after) and body.endswith(")")):
            return body[: word.start()].strip(), word["status"]
    return None


def _outcome_lines(lines: Iterable[str]) -> Iterator[tuple[int, TestOutcome]]:
    in_summary = False
    for index, raw in enumerate(lines):
        section = _rule_title(raw, "=")
        if section is not None and section:
            in_summary = section.strip().lower() == "short test summary info"
            continue
        position = 0
        while True:  # `[gw0] [ 50%] PASSED id` (the [gwN] prefix is already gone)
            progress = _PROGRESS.match(raw, position)
            if progress is None or progress.end() == position:
                break
            position = progress.end()
        line = raw[position:]
        prefixed = position > 0
        if not line:
            continue
        first = _STATUS_FIRST.match(line)
        if first is not None:
            rest = first["rest"]
            if first["status"] == "SKIPPED" and rest.startswith("["):
                continue  # `SKIPPED [1] path:line: reason` names a location, not a test
            test_id, message = _split_id(rest)
            if test_id and (in_summary or prefixed or "::" in test_id):
                yield index, TestOutcome(test_id, _PYTEST_STATUS[first["status"]], message)
            continue
        last = _status_last(line)
        if last is not None:
            yield index, TestOutcome(last[0], _PYTEST_STATUS[last[1]])
            continue
        verbose = _UNITTEST_VERBOSE.match(line)
        if verbose is not None:
            found = _unittest_id(verbose["desc"])
            if found is not None:
                word = verbose["status"]
                status = "skipped" if word.startswith("skipped") else _UNITTEST_STATUS[word]
                yield index, TestOutcome(found[0], status)
            continue
        header = _UNITTEST_HEADER.match(line)
        if header is not None:
            found = _unittest_id(header["desc"])
            if found is not None:
                status = {"FAIL": "failed", "ERROR": "error"}.get(header["kind"], "xpassed")
                yield index, TestOutcome(found[0], status)


def parse_outcomes(text: str) -> list[TestOutcome]:
    """Every test outcome that a status line of ``text`` reports, in log order, each
    ``(test_id, status)`` once (the first line that reports it, with the message of the
    first line that has one).

    Read: pytest's ``-rA`` short summary (``FAILED id - message``, ``ERROR id``, ``PASSED
    id``), ``-v`` lines (``id PASSED  [ 50%]``), pytest-xdist's ``[gw0] [ 50%] FAILED id``,
    unittest's ``test_x (mod.C.test_x) ... FAIL`` and ``FAIL: test_x (mod.C.test_x)``.
    Progress lines and ``SKIPPED [N] path:line: reason`` summaries are not outcomes.
    """
    return _unique_outcomes(outcome for _, outcome in _outcome_lines(_clean_lines(text)))


def _unique_outcomes(outcomes: Iterable[TestOutcome]) -> list[TestOutcome]:
    found: dict[tuple[str, str], TestOutcome] = {}
    for outcome in outcomes:
        key = (outcome.test_id, outcome.status)
        known = found.get(key)
        if known is None:
            found[key] = outcome
        elif not known.message and outcome.message:
            found[key] = replace(known, message=outcome.message)
    return list(found.values())


def _header_key(name: str) -> str:
    """The test part of a pytest report header (``ERROR at setup of test_x`` → ``test_x``)."""
    for prefix in ("ERROR at setup of ", "ERROR at teardown of ", "ERROR collecting "):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name[len("[doctest] ") :] if name.startswith("[doctest] ") else name


def _id_key(test_id: str) -> str:
    """The report-header form of a pytest node id: the part after the file, ``::`` as
    ``.`` (``tests/t.py::C::test_x[1]`` → ``C.test_x[1]``); a file id stays itself."""
    if "::" not in test_id:
        return test_id
    return test_id.split("::", 1)[1].replace("::", ".")


def _dotted(test_id: str) -> str:
    """A test id as dotted names, parameters kept: ``tests/t.py::C::x[1]`` →
    ``tests.t.C.x[1]``, ``tests.t.C.x[1]`` unchanged."""
    base, bracket, params = test_id.partition("[")
    if "::" in base:
        path, _, rest = base.partition("::")
        path = path[:-3] if path.endswith(".py") else path
        base = path.replace("/", ".") + "." + rest.replace("::", ".")
    elif base.endswith(".py") and not bracket:  # a module's collection error: `tests/t.py`
        base = base[:-3].replace("/", ".")
    return base + bracket + params


def _summary_failure(outcome: TestOutcome) -> TestFailure:
    """A failure known from its status line alone (``FAILED id - message``)."""
    exc_type: str | None = None
    message = outcome.message
    match = _EXCEPTION_LINE.match(message)
    if match is not None:
        exc_type, message = match["type"], match["message"]
    elif message.startswith("assert "):
        exc_type = "AssertionError"
    status: Status = "error" if outcome.status == "error" else "failed"
    frames: tuple[Frame, ...] = ()
    beyond: tuple[Frame, ...] = ()
    syntax = _NATIVE.match(message) if message.startswith("File ") else None
    if syntax is not None and syntax["func"] is None:
        # `FAILED id -   File "pkg/broken.py", line 3`: a SyntaxError's location
        number = _line_number(syntax["line"])
        frames = (Frame(syntax["path"], number),) if number is not None else ()
        if number is None and _beyond(syntax["line"]):
            beyond = (Frame(syntax["path"], BEYOND_LINE),)
        message = ""
    return TestFailure(
        _id_key(outcome.test_id),
        frames,
        exc_type,
        message,
        (outcome.message,) if outcome.message else (),
        test_id=outcome.test_id,
        status=status,
        origin="summary",
        phase=_phase_of(None, status),
        beyond=beyond,
    )


# --- pytest ---------------------------------------------------------------------------


def _pytest_reports(lines: list[str]) -> tuple[list[tuple[int, TestFailure]], bool]:
    """The reports of pytest's ``FAILURES`` and ``ERRORS`` parts with their line index, and
    whether the log has such a part."""
    failures: list[tuple[int, TestFailure]] = []
    current: _Builder | None = None
    start = 0
    status: Status = "failed"
    in_reports = False
    saw_reports = False
    width: int | None = None  # the terminal's, from the `=` rule above the reports
    capturing = False  # in the captured output of a --tb=line failure
    pending: list[str] = []  # `E` lines of a --tb=line failure, before its location line
    pending_links: list[tuple[list[str], Relation]] = []

    def finish() -> None:
        nonlocal current
        if current is not None:
            failures.append((start, current.build(status=status)))
            current = None

    for index, line in enumerate(lines):
        section = _rule_title(line, "=")
        if section is not None:
            finish()
            title = section.strip().upper()
            in_reports = title in ("FAILURES", "ERRORS")
            status = "error" if title == "ERRORS" else "failed"
            if in_reports:
                width = len(line)
            saw_reports = saw_reports or in_reports
            pending, pending_links, capturing = [], [], False
            continue
        if not in_reports:
            continue
        strict = capturing or (current is not None and current.in_capture)
        header = _report_title(line, width, strict=strict) if line.startswith("_") else None
        if header is not None:
            finish()
            current, start = _Builder(header), index
            continue
        if current is not None:
            if not _is_entry_separator(line):
                current.feed(line)
            continue
        # No report header: `--tb=line` prints each failure as `E` lines and one location
        # (a SyntaxError's text goes on in indented lines without the `E`); the test's
        # captured output comes between them, and any program can print a location there:
        # the location that ends it repeats the message of the `E` lines.
        if _rule_title(line, "-") is not None:
            capturing = True
            continue
        if capturing:
            found = _LOCATION.match(line)
            said = {text[1:].strip() for text in pending} - {""}
            if found is None or (said and found["message"].strip() not in said):
                continue
        if line.startswith("E") and (len(line) == 1 or line[1] in " \t"):
            pending.append(line)
            continue
        if pending and line[:1] in (" ", "\t"):
            pending.append(line)
            continue
        relation = next((rel for text, rel in _CHAIN.items() if line.strip().startswith(text)), None)
        if relation is not None and pending:
            pending_links.append((pending, relation))
            pending = []
            continue
        location = _LOCATION.match(line)
        if location:
            builder = _Builder(None)
            for lines_of_link, link_relation in pending_links:
                for text in lines_of_link:
                    builder.feed(text)
                builder._new_segment(link_relation)
            for text in pending:
                builder.feed(text)
            builder.in_syntax = False
            builder.feed(line)
            failures.append((index, builder.build(status=status)))
            pending, pending_links, capturing = [], [], False
    finish()
    return failures, saw_reports


def _link_ids(
    failures: list[tuple[int, TestFailure]], outcomes: list[TestOutcome]
) -> tuple[list[tuple[int, TestFailure]], list[TestOutcome]]:
    """Give each report its test id from the status lines, and return the failed or
    errored outcomes that no report claimed.

    A report with a header takes the first unclaimed outcome of its status whose id has
    that header's test part; a report without one (``--tb=line``) the first unclaimed
    outcome of its status, in order.
    """
    unclaimed = [o for o in outcomes if o.status in ("failed", "error")]
    linked: list[tuple[int, TestFailure]] = []
    for index, failure in failures:
        if failure.test_id is not None:  # unittest: the header named it
            known = next(
                (o for o in unclaimed if o.status == failure.status and o.test_id == failure.test_id), None
            )
            if known is not None:
                unclaimed.remove(known)
            linked.append((index, failure))
            continue
        pick: TestOutcome | None = None
        if failure.name is not None:
            key = _header_key(failure.name)
            pick = next(
                (o for o in unclaimed if o.status == failure.status and _id_key(o.test_id) == key), None
            )
            if pick is None:  # unittest: `C.test_x` for id `mod.C.test_x`
                pick = next(
                    (
                        o
                        for o in unclaimed
                        if o.status == failure.status
                        and (_dotted(o.test_id) == key or _dotted(o.test_id).endswith("." + key))
                    ),
                    None,
                )
        else:
            pick = next((o for o in unclaimed if o.status == failure.status), None)
        if pick is None:
            linked.append((index, failure))
            continue
        unclaimed.remove(pick)
        name = failure.name if failure.name is not None else _id_key(pick.test_id)
        linked.append((index, replace(failure, name=name, test_id=pick.test_id)))
    return linked, unclaimed


# --- unittest -------------------------------------------------------------------------


def _unittest_reports(lines: list[str]) -> list[tuple[int, TestFailure]]:
    """unittest's ``FAIL:``/``ERROR:`` blocks: a rule of ``=``, the header (maybe a
    docstring line), a rule of ``-``, the traceback; the block ends at the next rule of
    ``=`` or at the ``-`` rule above ``Ran N tests``."""
    failures: list[tuple[int, TestFailure]] = []
    index = 0
    count = len(lines)
    while index < count:
        if not (_UNITTEST_RULE.match(lines[index]) and index + 1 < count):
            index += 1
            continue
        header = _UNITTEST_HEADER.match(lines[index + 1])
        if header is None:
            index += 1
            continue
        start = index + 1
        body = start + 1
        while body < count and not _UNITTEST_BODY_RULE.match(lines[body]) and body - start <= 3:
            body += 1
        if body >= count or not _UNITTEST_BODY_RULE.match(lines[body]):
            index += 1
            continue
        end = body + 1
        while end < count:
            if _UNITTEST_RULE.match(lines[end]):
                break
            if (
                _UNITTEST_BODY_RULE.match(lines[end])
                and end + 1 < count
                and _UNITTEST_RAN.match(lines[end + 1])
            ):
                break
            end += 1
        found = _unittest_id(header["desc"])
        test_id, name = found if found is not None else (None, header["desc"])
        builder = _Builder(name)
        for line in lines[body + 1 : end]:
            builder.feed(line)
        while builder.current.messages and not builder.current.messages[-1]:
            builder.current.messages.pop()
        status: Status = "error" if header["kind"] == "ERROR" else "failed"
        report = builder.build(test_id=test_id, status=status, origin="unittest")
        failures.append((start, replace(report, phase=_unittest_phase(report, test_id))))
        index = end
    return failures


# The methods unittest runs around a test: an error in one of them is a setup or teardown error.
_UNITTEST_SETUP = frozenset({"setUp", "asyncSetUp", "setUpClass", "setUpModule"})
_UNITTEST_TEARDOWN = frozenset(
    {"tearDown", "asyncTearDown", "tearDownClass", "tearDownModule", "doCleanups", "doClassCleanups"}
)


def _unittest_phase(report: TestFailure, test_id: str | None) -> Phase | None:
    """The phase of a unittest report, from the function of the first frame of its
    exception's traceback that is the test method or a setup or teardown method; a
    ``FAIL`` without one is ``"call"``."""
    method = test_id.rsplit(".", 1)[-1] if test_id else None
    last = report.chain[-1].frames if report.chain else report.frames
    for frame in last:
        if frame.function in _UNITTEST_SETUP:
            return "setup"
        if frame.function in _UNITTEST_TEARDOWN:
            return "teardown"
        if method is not None and frame.function == method:
            return "call"
    return "call" if report.status == "failed" else None


# --- bare tracebacks ------------------------------------------------------------------

# Parts of a pytest log whose `path:line: text` lines are not traceback frames.
_NOT_TRACEBACKS = frozenset({"warnings summary", "short test summary info", "passes"})


def _bare_tracebacks(lines: list[str]) -> list[tuple[int, TestFailure]]:
    """Plain tracebacks: one failure per traceback (a chained one is one failure); a
    ``Traceback (most recent call last):`` line that no chain sentence announces starts
    the next. Only tracebacks with a usable frame count."""
    failures: list[tuple[int, TestFailure]] = []
    builder = _Builder(None, bounded=False)
    start = 0
    announced = False
    skipping = False
    for index, line in enumerate(lines):
        section = _rule_title(line, "=")
        if section:
            # pytest's summaries print `path:line: Warning` locations that are no frames.
            skipping = section.strip().lower() in _NOT_TRACEBACKS
            continue
        if skipping:
            continue
        stripped = line.strip()
        if any(stripped.startswith(text) for text in _CHAIN):
            announced = True
        elif stripped == _TRACEBACK_START and not announced and builder.frame_count:
            failures.append((start, builder.build(origin="traceback")))
            builder, start = _Builder(None, bounded=False), index
        elif stripped:
            announced = announced and stripped == _TRACEBACK_START
        builder.feed(line)
    if builder.frame_count:
        failures.append((start, builder.build(origin="traceback")))
    return failures


# --- JUnit XML ------------------------------------------------------------------------


def is_junit_xml(text: str | bytes) -> bool:
    """Whether ``text`` looks like an XML document (a JUnit report) rather than a log."""
    head = text[:512].lstrip()
    if isinstance(head, bytes):
        head = head.lstrip(b"\xef\xbb\xbf").decode("ascii", errors="replace")
    head = head.lstrip("\ufeff").lstrip()
    return head.startswith(("<?xml", "<testsuite", "<testsuites", "<testcase"))


_JUNIT_PHASES: tuple[tuple[str, Phase], ...] = (
    ("failed on setup with", "setup"),
    ("failed on teardown with", "teardown"),
    ("collection failure", "collect"),
)


def _local(tag: object) -> str:
    name = tag if isinstance(tag, str) else ""
    return name.rsplit("}", 1)[-1]


def parse_junit_xml(data: str | bytes) -> list[TestFailure]:
    """The failures of a JUnit XML report, in document order: one per ``<failure>`` or
    ``<error>`` element of a ``<testcase>``.

    The element's text (pytest writes the report in the run's ``--tb`` style; other
    reporters a Python traceback) is read like a report of a text log; the ``message``
    and ``type`` attributes fill in what the text does not say. ``name`` is the test case's
    name (with its class, ``TestC.test_x``, when the ``classname`` ends with one);
    ``test_id`` is ``classname.name`` (``file::name`` for a report with a ``file`` but no
    ``classname``).

    Parsing is done by ``defusedxml``: a document that declares entities or refers to
    external resources is refused. Raises :class:`LogFormatError` for such a document,
    malformed XML or an XML declaration naming an unknown (or not a text) encoding.
    """
    from xml.etree.ElementTree import Element, ParseError

    with needs("context"):
        from defusedxml import DefusedXmlException  # type: ignore[import-untyped,unused-ignore]
        from defusedxml.ElementTree import fromstring  # type: ignore[import-untyped,unused-ignore]

    try:
        root: Element = fromstring(data, forbid_dtd=True)
    except (ParseError, DefusedXmlException, ValueError, LookupError) as exc:
        # LookupError: the XML declaration names an encoding Python does not know
        # (``encoding="utf-9"``) or one that is not a text encoding (``"rot13"``, ``"hex"``).
        raise LogFormatError(f"invalid JUnit XML: {exc}") from None
    failures: list[TestFailure] = []
    for case in root.iter():
        if _local(case.tag) != "testcase":
            continue
        classname = case.get("classname") or ""
        case_name = case.get("name") or ""
        if classname:
            test_id = f"{classname}.{case_name}" if case_name else classname
        else:
            file = case.get("file") or ""
            test_id = f"{file}::{case_name}" if file and case_name else (case_name or file)
        owner = classname.rsplit(".", 1)[-1]
        name = f"{owner}.{case_name}" if owner[:1].isupper() and case_name else case_name or None
        for element in case:
            kind = _local(element.tag)
            if kind not in ("failure", "error"):
                continue
            builder = _Builder(name)
            for line in _clean_lines(element.text or ""):
                if not _is_entry_separator(line):
                    builder.feed(line)
            status: Status = "error" if kind == "error" else "failed"
            failure = builder.build(test_id=test_id or None, status=status, origin="junit")
            if not failure.frames and not failure.beyond and element.text:
                # Not a Python report: a JavaScript, Java, Go or Rust trace (:mod:`.logs`).
                from bugcontext.job.sources.logs import report_text_failure

                other = report_text_failure(
                    element.text, name, test_id=test_id or None, status=status, package=classname
                )
                failure = other if other is not None else failure
            attr_type = (element.get("type") or "").strip() or None
            attr_message = (element.get("message") or "").strip()
            exc_type = failure.exception_type or attr_type
            message = failure.message
            if not message and attr_message:
                match = _EXCEPTION_LINE.match(attr_message)
                if match is not None and (exc_type is None or match["type"].endswith(exc_type)):
                    exc_type, message = exc_type or match["type"], match["message"]
                else:
                    message = attr_message
            lines = failure.message_lines or ((attr_message,) if attr_message else ())
            phase = failure.phase
            if kind == "error":  # pytest: "failed on setup with ...", "collection failure"
                phase = next((p for word, p in _JUNIT_PHASES if attr_message.startswith(word)), None)
            failures.append(
                replace(failure, exception_type=exc_type, message=message, message_lines=lines, phase=phase)
            )
    return failures


# --- entry points ---------------------------------------------------------------------


def parse_pytest_log(text: str) -> list[TestFailure]:
    """Parse a test run's text output into its failures, in report order.

    ``text`` may contain ANSI colour codes, CI time stamps, pytest-xdist prefixes and any
    line endings. pytest's ``FAILURES`` and ``ERRORS`` parts are read (warnings summaries,
    captured output and passed-test reports are ignored, so paths in warnings never pose
    as frames); failed or errored tests that only a status line reports (``--tb=no``) come
    after them. Without pytest reports, unittest's ``FAIL:``/``ERROR:`` blocks are read;
    without either, each plain traceback with a usable frame is one failure (``name``
    ``None``). Each report gets its test id from the status lines when they name it.
    """
    lines = _clean_lines(text)
    reports, saw_reports = _pytest_reports(lines)
    if not saw_reports:
        reports = _unittest_reports(lines)
    outcomes = _unique_outcomes(outcome for _, outcome in _outcome_lines(lines))
    linked, unclaimed = _link_ids(reports, outcomes)
    failures = [failure for _, failure in sorted(linked, key=lambda item: item[0])]
    if not failures and not saw_reports:
        failures = [failure for _, failure in _bare_tracebacks(lines)]
        if failures and unclaimed:  # a lone traceback of a test the status lines name
            failures[0] = replace(
                failures[0], name=_id_key(unclaimed[0].test_id), test_id=unclaimed[0].test_id
            )
            unclaimed = unclaimed[1:]
    failures.extend(_summary_failure(outcome) for outcome in unclaimed)
    return failures


def _matches(failure: TestFailure, other: TestFailure) -> bool:
    """Whether two failures (one from a text log, one from a JUnit report) are one test."""
    mine = failure.test_id or failure.name
    theirs = other.test_id or other.name
    if mine is None or theirs is None or failure.status != other.status:
        return False
    left, right = _dotted(mine), _dotted(theirs)
    if failure.test_id is None:
        left = _header_key(mine)
    return left == right or right.endswith("." + left) or left.endswith("." + right)


def parse_test_output(text: str | bytes = "", junit_xml: str | bytes | None = None) -> list[TestFailure]:
    """The failures of a test run, from its text output, its JUnit XML report, or both.

    ``text`` is read as JUnit XML when it is an XML document (:func:`is_junit_xml`), else
    as a log (:func:`parse_pytest_log`; bytes as UTF-8, undecodable bytes replaced).

    With ``junit_xml`` too (the JUnit report of the same run), the report is the authority:
    the failures are the report's, in its order, with its frames, chain, exception and
    phase; from the log's failure for the same test come the pytest node id and report
    name (and the frames, when the report's text has none). A failure the log shows and
    the report does not is left out. Raises :class:`LogFormatError` for unreadable XML.
    """
    if is_junit_xml(text):
        failures = parse_junit_xml(text)
    else:
        from bugcontext.job.sources.logs import parse_log

        log = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
        failures = parse_log(log)  # pytest's shapes, or another runner's (:mod:`.logs`)
    if junit_xml is None:
        return failures
    reported = parse_junit_xml(junit_xml)
    merged: list[TestFailure] = []
    used: set[int] = set()
    for other in reported:
        match = next((i for i, mine in enumerate(failures) if i not in used and _matches(mine, other)), None)
        if match is None:
            merged.append(other)
            continue
        used.add(match)
        mine = failures[match]
        frames, chain = (other.frames, other.chain) if other.frames else (mine.frames, mine.chain)
        merged.append(
            replace(
                other,
                name=mine.name or other.name,
                test_id=mine.test_id or other.test_id,
                frames=frames,
                chain=chain,
                beyond=tuple(dict.fromkeys((*other.beyond, *mine.beyond))),
                exception_type=other.exception_type or mine.exception_type,
                message=other.message or mine.message,
                message_lines=other.message_lines or mine.message_lines,
                phase=other.phase or mine.phase,
            )
        )
    return merged


# --- failing tests ----------------------------------------------------------------------


class UnknownTestError(LookupError):
    """The test asked for (``--test NODEID``) is not among the failing tests of the log.

    ``test`` is the id asked for; ``known`` the ids (or names) of the failing tests found.
    """

    def __init__(self, test: str, known: Sequence[str]) -> None:
        self.test = test
        self.known = tuple(known)
        listed = ", ".join(self.known[:10]) + (", ..." if len(self.known) > 10 else "")
        super().__init__(
            f"no failing test {test!r} in the log"
            + (f" (failing tests: {listed})" if self.known else " (it has no failing test)")
        )


@dataclass(frozen=True)
class FailingTest:
    """One failing test and every report the log has of it.

    ``test`` is its id (the pytest node id when the log gives one), else its name, else
    ``None``; ``failure`` is the report that is the failure (:func:`failing_tests` says
    which); ``others`` are the test's other reports in log order, extra evidence (an error
    at teardown after the failure).
    """

    __test__ = False  # not a pytest test class

    test: str | None
    failure: TestFailure
    others: tuple[TestFailure, ...] = ()


# Which report of one test is its failure: the call's failure, else a setup error (the call
# never ran), else a collection error, an error of unknown phase, a teardown error last.
_PHASE_RANK: dict[Phase | None, int] = {"call": 0, "setup": 1, "collect": 2, None: 3, "teardown": 4}


def summary_order(text: str | bytes) -> list[str]:
    """The ids of the failed and errored tests in the order of the short test summary
    (``FAILED id``, ``ERROR id`` lines under ``short test summary info``), each once; a log
    without that summary gives the order of its other status lines. A JUnit XML document
    gives ``[]``."""
    if is_junit_xml(text):
        return []
    log = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    lines = _clean_lines(log)
    sections: list[tuple[int, bool]] = []  # (line index of a `=` rule, opens the summary)
    for index, line in enumerate(lines):
        title = _rule_title(line, "=") if line.startswith("===") else None
        if title:
            sections.append((index, title.strip().lower() == "short test summary info"))
    in_summary: list[str] = []
    elsewhere: list[str] = []
    part = 0
    for index, outcome in _outcome_lines(lines):
        while part < len(sections) and sections[part][0] < index:
            part += 1
        if outcome.status in ("failed", "error"):
            summary = part > 0 and sections[part - 1][1]
            (in_summary if summary else elsewhere).append(outcome.test_id)
    return list(dict.fromkeys(in_summary or elsewhere))


def failing_tests(failures: Sequence[TestFailure], order: Sequence[str] = ()) -> list[FailingTest]:
    """The failing tests of ``failures`` (as parsed, in report order), each once.

    Reports of one test (the same test id; without an id, the same test name, so that
    ``ERROR at teardown of test_x`` joins ``test_x``) are grouped: the call's failure is
    the test's failure; a setup error is when the call never ran; a teardown error is
    extra evidence (``others``), the failure only when the test has nothing else. Tests
    are ordered by ``order`` (ids, as :func:`summary_order` gives them), those it does not
    name after, in report order.
    """
    groups: list[list[TestFailure]] = []
    by_id: dict[str, int] = {}
    by_name: dict[str, int] = {}
    for failure in failures:
        key = _dotted(failure.test_id) if failure.test_id else None
        name = _header_key(failure.name) if failure.name is not None else None
        found = by_id.get(key) if key is not None else None
        if found is None and name is not None and (key is None or name not in by_id):
            candidate = by_name.get(name)
            if candidate is not None:
                first = groups[candidate][0]
                if key is None or first.test_id is None or _dotted(first.test_id) == key:
                    found = candidate
        if found is None:
            found = len(groups)
            groups.append([])
        groups[found].append(failure)
        if key is not None:
            by_id.setdefault(key, found)
        if name is not None:
            by_name.setdefault(name, found)
    position: dict[str, int] = {}
    for rank, test_id in enumerate(order):
        position.setdefault(_dotted(test_id), rank)
    ranked: list[tuple[int, int, FailingTest]] = []
    for index, group in enumerate(groups):
        best = min(range(len(group)), key=lambda i: _PHASE_RANK.get(group[i].phase, 3))
        failure = group[best]
        test = next((f.test_id for f in group if f.test_id), None)
        if test is None and failure.name is not None:
            test = _header_key(failure.name)
        others = tuple(f for i, f in enumerate(group) if i != best)
        rank = position.get(_dotted(test), len(position)) if test else len(position)
        ranked.append((rank, index, FailingTest(test, failure, others)))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [item[2] for item in ranked]


def select_test(tests: Sequence[FailingTest], test: str | None = None) -> FailingTest | None:
    """The failing test ``test`` names among ``tests`` (:func:`failing_tests`), or the first
    one when ``test`` is ``None`` (``None`` when there is none).

    ``test`` is a pytest node id (``tests/test_x.py::TestC::test_y[1]``), a unittest or
    JUnit dotted id (``tests.test_x.TestC.test_y``) or a test name (``TestC.test_y``);
    exact ids first, then the same test written another way. A parametrised test's base id
    (``tests/t.py::test_x`` when the log has ``test_x[1]`` and ``test_x[2]``) covers all its
    failed parametrisations: one ``FailingTest`` whose ``test`` is the id given, whose
    ``failure`` is the first one's and whose ``others`` are the first one's other reports, then
    each further parametrisation's reports. A node id whose module (or a folder above it) could
    not be collected (``ERROR collecting tests/t.py``: an import error, say) gives that
    collection failure: the test never ran. Raises :class:`UnknownTestError` when no failing
    test matches.
    """
    if test is None:
        return tests[0] if tests else None
    for found in tests:
        if found.test == test or found.failure.test_id == test:
            return found
    wanted = _dotted(test)
    for found in tests:
        ids = [f.test_id for f in (found.failure, *found.others) if f.test_id]
        names = [_header_key(f.name) for f in (found.failure, *found.others) if f.name]
        if any(_dotted(i) == wanted or _dotted(i).endswith("." + wanted) for i in ids) or test in names:
            return found
    return _parametrised(tests, test, wanted) or _uncollected(tests, test) or _unknown(tests, test)


def _parametrised(tests: Sequence[FailingTest], test: str, wanted: str) -> FailingTest | None:
    """The failed parametrisations of the test whose base id (dotted: ``wanted``) is ``test``
    as one :class:`FailingTest` (see :func:`select_test`), or ``None`` when there is none."""
    if "[" in test:
        return None
    found: list[FailingTest] = []
    for candidate in tests:
        reports = (candidate.failure, *candidate.others)
        ids = [f.test_id for f in reports if f.test_id and "[" in f.test_id]
        names = [_header_key(f.name) for f in reports if f.name and "[" in f.name]
        bases = [_dotted(i).partition("[")[0] for i in ids]
        if any(b == wanted or b.endswith("." + wanted) for b in bases) or any(
            n.partition("[")[0] == test for n in names
        ):
            found.append(candidate)
    if not found:
        return None
    first, rest = found[0], found[1:]
    others = (*first.others, *(r for t in rest for r in (t.failure, *t.others)))
    return FailingTest(test, first.failure, others)


def _uncollected(tests: Sequence[FailingTest], test: str) -> FailingTest | None:
    """The collection failure of the module (or a folder above it) of the node id ``test``,
    or ``None``."""
    path = test.split("::", 1)[0].rstrip("/")
    for candidate in tests:
        if candidate.failure.phase != "collect" or not candidate.test:
            continue
        module = candidate.test.rstrip("/")
        if path == module or path.startswith(module + "/"):
            return candidate
    return None


def _unknown(tests: Sequence[FailingTest], test: str) -> NoReturn:
    """Raise :class:`UnknownTestError` for ``test``, naming the failing tests (a collection
    failure as ``ID (collection error)``)."""
    known = [
        (t.test or "(unnamed)") + (" (collection error)" if t.failure.phase == "collect" else "")
        for t in tests
    ]
    raise UnknownTestError(test, known)
