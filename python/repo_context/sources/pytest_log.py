"""Parsing pytest's terminal output into failures and traceback frames.

Reads what ``pytest -rA --tb=long`` prints, with or without ANSI colour; ``--tb=short``
and ``--tb=native`` reports are read too, and ``--tb=line`` ones (one location line per
failure, no test name). Each report section of the ``FAILURES`` and ``ERRORS`` parts
becomes one :class:`TestFailure`; a log without those parts (a bare Python traceback, say)
is read as a single failure.

Frames come from the location lines pytest prints (``path:line: ExcType`` or
``path:line: in func``) and from Python's ``File "path", line N, in func`` lines. A chained
exception (``The above exception was the direct cause of the following exception:``,
``During handling of the above exception, another exception occurred:``) starts a new
*segment*; the last segment is the exception the test saw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Frame", "TestFailure", "parse_pytest_log", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
_HEADER = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_ENTRY_SEPARATOR = re.compile(r"^(?:_ )+_?$")
# `path:line: message` as pytest prints it (long/short/line styles); the path has no blanks.
_LOCATION = re.compile(r"^(?P<path><[^>\n]+>|[^\s<>]\S*?):(?P<line>\d+): ?(?P<message>.*)$")
# `  File "path", line N, in func` as Python prints it (native style, bare tracebacks).
_NATIVE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$')
_CHAIN = (
    "The above exception was the direct cause of the following exception",
    "During handling of the above exception, another exception occurred",
)
_EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*): ?(?P<message>.*)$")
# The last line of a Python traceback, "ValueError: message", as printed at column 0.
_TRACEBACK_TAIL = re.compile(
    r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Iteration|Failed|Group)(?::|$)"
)


# A line number that no file can reach: past the builder's largest line (2**31 - 1). Such
# digits are not even converted (``int`` refuses more than a few thousand digits).
_MAX_LINE = 2**31 - 1
_MAX_LINE_DIGITS = len(str(_MAX_LINE))


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


def _line_number(digits: str) -> int | None:
    """The line number written as ``digits``, or ``None`` if no file can have that line
    (more digits than ``2**31 - 1`` has, leading zeros aside, or a larger value): such a
    frame is unusable."""
    if len(digits.lstrip("0")) > _MAX_LINE_DIGITS:
        return None
    line = int(digits)
    return line if line <= _MAX_LINE else None


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (colours, bold, cursor movement)."""
    return _ANSI.sub("", text)


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
class TestFailure:
    """One failed (or errored) test as reported in the log.

    ``name`` is the report header (``TestUtil.test_x``, ``test_y[a b-1]``, ``ERROR at setup
    of test_z``), or ``None`` for a log without report headers. ``frames`` are in printed
    order, outermost call first within each segment. ``exception_type`` is the type of the
    exception the test saw (``ValueError``), or ``None`` when the log does not name it;
    ``message`` is its message (for a failed ``assert``, pytest's explanation's first
    line). ``message_lines`` are all the ``E`` lines of the report, every segment's, without
    the ``E`` prefix.
    """

    __test__ = False  # not a pytest test class

    name: str | None
    frames: tuple[Frame, ...]
    exception_type: str | None
    message: str
    message_lines: tuple[str, ...]


class _Builder:
    def __init__(self, name: str | None) -> None:
        self.name = name
        self.frames: list[Frame] = []
        self.exception_type: str | None = None
        self.messages: list[list[str]] = [[]]  # E lines, per segment
        self.in_capture = False

    @property
    def segment(self) -> int:
        return len(self.messages) - 1

    def feed(self, line: str) -> None:
        if _rule_title(line, "-") is not None:
            self.in_capture = True  # "Captured stdout call" and similar: not traceback text
            return
        if self.in_capture:
            return
        stripped = line.strip()
        if any(stripped.startswith(chain) for chain in _CHAIN):
            if self.frames:
                self.messages.append([])
                self.exception_type = None
            return
        if line.startswith("E") and (len(line) == 1 or line[1] in " \t"):
            self.messages[-1].append(line[1:].strip())
            return
        native = _NATIVE.match(line)
        if native:
            number = _line_number(native["line"])
            if number is not None:
                self.frames.append(Frame(native["path"], number, native["func"], self.segment))
            return
        location = _LOCATION.match(line)
        if location:
            message = location["message"].strip()
            function = message[3:].strip() if message.startswith("in ") else None
            number = _line_number(location["line"])
            if number is not None:
                self.frames.append(Frame(location["path"], number, function, self.segment))
            if message and function is None:
                self.exception_type = message.split(":", 1)[0].strip() or None
            return
        if self.frames and not line.startswith((" ", "\t", ">")) and _TRACEBACK_TAIL.match(stripped):
            # The last line of a native traceback: "ValueError: message" at column 0.
            self.exception_type = stripped.split(":", 1)[0]
            self.messages[-1].append(stripped)

    def build(self) -> TestFailure:
        final = next((lines for lines in reversed(self.messages) if any(lines)), [])
        exception_type, message = self.exception_type, ""
        for text in final:
            if not text:
                continue
            match = _EXCEPTION_LINE.match(text)
            if (
                match
                and _TRACEBACK_TAIL.match(text)
                and (
                    exception_type is None
                    or match["type"] == exception_type
                    or match["type"].endswith("." + exception_type)
                )
            ):
                exception_type = exception_type or match["type"]
                message = match["message"]
            else:
                message = text
            break
        all_lines = tuple(line for lines in self.messages for line in lines)
        return TestFailure(self.name, tuple(self.frames), exception_type, message, all_lines)


def parse_pytest_log(text: str) -> list[TestFailure]:
    """Parse pytest terminal output into its failures, in report order.

    ``text`` may contain ANSI colour codes and any line endings. Only the ``FAILURES`` and
    ``ERRORS`` parts are read (warnings summaries, captured output and passed-test
    reports are ignored), so paths in warnings never pose as frames. A log with neither part
    is read as one failure with ``name=None`` if it shows any traceback frame; otherwise
    the result is empty.
    """
    lines = strip_ansi(text).splitlines()
    failures: list[TestFailure] = []
    current: _Builder | None = None
    in_reports = False
    saw_reports = False
    pending: list[str] = []  # `E` lines of a --tb=line failure, before its location line
    for raw in lines:
        line = raw.rstrip()
        section = _rule_title(line, "=")
        if section is not None:
            if current is not None:
                failures.append(current.build())
                current = None
            title = section.strip().upper()
            in_reports = title in ("FAILURES", "ERRORS")
            saw_reports = saw_reports or in_reports
            continue
        if not in_reports:
            continue
        header = _HEADER.match(line)
        if header and not _ENTRY_SEPARATOR.match(line):
            if current is not None:
                failures.append(current.build())
            current = _Builder(header["name"])
            continue
        if current is not None:
            if not _ENTRY_SEPARATOR.match(line):
                current.feed(line)
            continue
        # No report header: `--tb=line` prints each failure as `E` lines and one location.
        if line.startswith("E") and (len(line) == 1 or line[1] in " \t"):
            pending.append(line[1:].strip())
            continue
        location = _LOCATION.match(line)
        if location:
            exc_type, _, message = location["message"].partition(":")
            number = _line_number(location["line"])
            failures.append(
                TestFailure(
                    None,
                    () if number is None else (Frame(location["path"], number),),
                    exc_type.strip() or None,
                    message.strip(),
                    tuple(pending) or (location["message"],),
                )
            )
            pending = []
    if current is not None:
        failures.append(current.build())
    if saw_reports:
        return failures

    bare = _Builder(None)
    for raw in lines:
        bare.feed(raw.rstrip())
    built = bare.build()
    return [built] if built.frames else []
