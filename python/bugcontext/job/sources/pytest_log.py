"""Parsing Python test output into failures, exception chains and traceback frames (the
reports of :mod:`.reports`).

Shapes read (:func:`parse_pytest_log` tells them apart by themselves; JUnit XML and other
runners' logs are read by :mod:`.runs` and :mod:`.logs`):

* pytest's terminal output: the ``FAILURES`` and ``ERRORS`` parts with ``--tb=long``,
  ``short``, ``native`` or ``line`` reports (``line`` prints one location line per failure
  and no report header), ``-q`` and ``-v`` runs, ``-rA`` short summaries (``FAILED id -
  message``, ``ERROR id``), pytest-xdist's ``[gw0]`` prefixes, ANSI colour and CI time
  stamps at the start of lines;
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

Test ids (``tests/test_x.py::TestC::test_y[a b-[1]]``) come from status lines, with the
status before the id (``FAILED id - message``, ``[gw1] [ 50%] PASSED id``) or after it
(``id PASSED  [ 50%]``, ``test_x (mod.C.test_x) ... FAIL``); ids may hold blanks and
brackets. Progress lines (``tests/test_x.py .F.  [100%]``, ``[100%]``) are not tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from bugcontext.job.sources.reports import (
    BEYOND_LINE,
    ChainLink,
    Frame,
    Phase,
    Relation,
    Status,
    TestFailure,
    TestOutcome,
    _beyond,
    _clean_lines,
    _line_number,
)

__all__ = [
    "parse_outcomes",
    "parse_pytest_log",
]

# Every pattern here runs in time linear in the line it reads (the log is text we did not
# write): character classes next to each other are disjoint or the repetition is possessive
# (``*+``, ``++``), so no pattern can backtrack over a long run more than once.
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
            self._fixture_frame(fixture)
            return
        native = _NATIVE.match(line)
        if native:
            self._native_frame(native)
            return
        location = _LOCATION.match(line)
        if location:
            self._location_line(location)
            return
        self._other_line(line, stripped)

    def _fixture_frame(self, fixture: re.Match[str]) -> None:
        number = _line_number(fixture["line"])
        if number is not None:
            self._add_frame(Frame(fixture["path"], number, None, len(self.segments) - 1))
        else:
            self._past(fixture["path"], fixture["line"], None)

    def _native_frame(self, native: re.Match[str]) -> None:
        number = _line_number(native["line"])
        if number is not None:
            self._add_frame(Frame(native["path"], number, native["func"], len(self.segments) - 1))
        else:
            self._past(native["path"], native["line"], native["func"])
        self.after_frame, self.in_tail = True, False

    def _location_line(self, location: re.Match[str]) -> None:
        """A ``path:line: message`` line: a frame, a doctest example, a --tb=line report."""
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

    def _other_line(self, line: str, stripped: str) -> None:
        """A line that is no frame: the tail of a native traceback, or other text."""
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
            failures.append((index, _line_report(pending_links, pending, line, status)))
            pending, pending_links, capturing = [], [], False
    finish()
    return failures, saw_reports


def _line_report(
    pending_links: list[tuple[list[str], Relation]], pending: list[str], line: str, status: Status
) -> TestFailure:
    """The failure of a ``--tb=line`` report: the ``E`` lines of each link of its chain
    (``pending_links``) and of the last (``pending``), and its location ``line``."""
    builder = _Builder(None)
    for lines_of_link, link_relation in pending_links:
        for text in lines_of_link:
            builder.feed(text)
        builder._new_segment(link_relation)
    for text in pending:
        builder.feed(text)
    builder.in_syntax = False
    builder.feed(line)
    return builder.build(status=status)


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
