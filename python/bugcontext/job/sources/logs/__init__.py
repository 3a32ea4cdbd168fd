"""Test output of runners in every language the sources read, told apart by content.

:func:`detect_format` names the shape of a log; :func:`parse_log` reads it into
:class:`~..reports.TestFailure` reports (the same as pytest's, with ``origin`` naming the
runner), so the rest of the evidence chain is the same for every language. Formats
(:data:`FORMATS`):

* ``python``: pytest, unittest, plain Python tracebacks (:mod:`..pytest_log`);
* ``vitest``, ``jest``, ``mocha``, ``node-test`` (``node --test``, ``spec`` reporter),
  ``tap`` (``node --test --test-reporter=tap``, TAP 13) (:mod:`.node`);
* ``go`` (``go test``, plain and ``-v``) and ``go-json`` (``go test -json``) (:mod:`.go`);
* ``cargo`` (``cargo test``, ``cargo nextest run``) (:mod:`.rust`);
* ``java`` (JUnit 4 and 5 console output, Maven Surefire, Gradle) (:mod:`.java`);
* ``stack-trace``: any other log; every stack trace in it (Node, JVM, Go, Rust frames) is
  one failure without a test name;
* ``junit-xml`` is told apart by :func:`~..reports.is_junit_xml` before any of these.

Each parser reads its log in time linear in its size.
"""

from __future__ import annotations

import re

from bugcontext.job.sources.logs._common import build_failure, clean_lines, trace_segments
from bugcontext.job.sources.logs.go import go_json_text, parse_go_test
from bugcontext.job.sources.logs.java import parse_java
from bugcontext.job.sources.logs.node import (
    parse_jest,
    parse_mocha,
    parse_node_spec,
    parse_node_tap,
    parse_vitest,
)
from bugcontext.job.sources.logs.rust import parse_cargo_test
from bugcontext.job.sources.reports import Status, TestFailure, is_junit_xml

__all__ = ["FORMATS", "detect_format", "parse_log", "parse_stack_traces", "report_text_failure"]

#: The formats :func:`detect_format` names.
FORMATS = (
    "junit-xml",
    "python",
    "vitest",
    "jest",
    "mocha",
    "node-test",
    "tap",
    "go",
    "go-json",
    "cargo",
    "java",
    "stack-trace",
)

# Markers of each format, tried in this order on the first lines that have one.
_PYTHON = re.compile(
    r"^(?:=+ (?:FAILURES|ERRORS|short test summary info|test session starts) =+$"
    r"|Traceback \(most recent call last\):$|(?:FAIL|ERROR): \S+ \([\w.]+\)$|Ran \d+ tests? in )"
)
_GO_JSON = re.compile(r'^\{.*"Action":\s*+"')
_TAP = re.compile(r"^TAP version \d++$|^\s*+# Subtest: |^not ok \d++ ")
_CARGO = re.compile(
    r"^test \S.* \.\.\. (?:FAILED|ok|ignored)$|^---- .+ stdout ----$"
    r"|^thread '[^']*+' (?:\(\d++\) )?panicked at |^\s*+(?:FAIL|PASS) \[\s*+[\d.]++m?s\] "
)
_GO = re.compile(
    r"^\s*+--- (?:FAIL|PASS): \S+ \([\d.]+s\)$|^=== RUN\s|^(?:FAIL|ok)\s+\S+\s+[\d.]+s$|^goroutine \d+ \["
)
_VITEST = re.compile(r"\u23af\u23af Failed (?:Tests|Suites) \d|^\s*+Test Files\s++\d")
_JEST = re.compile(r"^  \u25cf \S|^Test Suites: \d")
_MOCHA = re.compile(r"^\s*+\d++ (?:passing|failing) \(\d|^  \d++ failing$")
_NODE_SPEC = re.compile(r"^\u2139 (?:tests|pass|fail) \d|^\u2716 failing tests:$")
_JAVA = re.compile(
    r"^JUnit version \d|^Failures \(\d++\):$|Tests run: \d++, Failures: \d|<<< (?:FAILURE|ERROR)!$"
    r"|^\S+ > .+ FAILED$|^\s++at [\w$.]++\([\w$]++\.(?:java|kt|scala|groovy):\d++\)$"
)

_ORDER: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("go-json", _GO_JSON),
    ("python", _PYTHON),
    ("tap", _TAP),
    ("vitest", _VITEST),
    ("jest", _JEST),
    ("mocha", _MOCHA),
    ("node-test", _NODE_SPEC),
    ("cargo", _CARGO),
    ("go", _GO),
    ("java", _JAVA),
)


def detect_format(text: str | bytes) -> str:
    """The format of a test run's output, one of :data:`FORMATS`: ``junit-xml`` for an XML
    document, else the first format (in the order ``go-json``, ``python``, ``tap``,
    ``vitest``, ``jest``, ``mocha``, ``node-test``, ``cargo``, ``go``, ``java``) whose
    markers some line of the log has (a test session header, a runner's summary line, its
    report headers), else ``stack-trace``."""
    if is_junit_xml(text):
        return "junit-xml"
    log = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    lines = clean_lines(log)
    for name, pattern in _ORDER:
        if any(pattern.search(line) for line in lines):
            return name
    return "stack-trace"


def parse_stack_traces(lines: list[str]) -> list[TestFailure]:
    """Every stack trace in a log of unknown shape as one failure (``name`` ``None``,
    ``origin`` ``"stack-trace"``): a run of V8, JVM, Go (``file.go:12 +0x1d``) or Rust
    backtrace frames, with the error line above it."""
    failures: list[TestFailure] = []
    block: list[str] = []
    frames_seen = False

    def finish() -> None:
        nonlocal frames_seen
        if frames_seen:
            segments = trace_segments(_with_go_frames(block))
            if any(segment.frames for segment in segments):
                failures.append(build_failure(None, segments, origin="stack-trace"))
        block.clear()
        frames_seen = False

    for line in lines:
        framed = bool(trace_segments([line])[0].frames) or _go_location(line)
        if not line.strip() and frames_seen:
            finish()
            continue
        if (
            frames_seen
            and not framed
            and not line.startswith((" ", "\t"))
            and not line.startswith(("Caused by:", "[cause]"))
        ):
            finish()
        block.append(line)
        frames_seen = frames_seen or framed
        if len(block) > 200 and not frames_seen:
            del block[:-20]
    finish()
    return failures


_GO_TRACE = re.compile(r"^\t(?P<path>[^\s:]++)(?<=\.go):(?P<line>\d++)(?: \+0x[0-9a-f]++)?$")


def _go_location(line: str) -> bool:
    return _GO_TRACE.match(line) is not None


def _with_go_frames(lines: list[str]) -> list[str]:
    """``lines`` with Go trace locations written as V8 ``at`` frames (so that one reader
    takes every shape)."""
    out: list[str] = []
    function = ""
    for line in lines:
        match = _GO_TRACE.match(line)
        if match is not None:
            name = function.rsplit("/", 1)[-1].partition("(")[0] or "?"
            out.append(f"    at {name} ({match['path']}:{match['line']}:1)")
        else:
            function = line.strip()
            out.append(line)
    return out


def parse_log(text: str) -> list[TestFailure]:
    """The failures of a test run's text output in any of :data:`FORMATS` but ``junit-xml``
    (:func:`~..runs.parse_junit_xml` reads that), in report order.

    A log whose runner's parser finds no failure is read for bare stack traces
    (:func:`parse_stack_traces`); Python logs are read by
    :func:`~..pytest_log.parse_pytest_log`, bare Python tracebacks included."""
    from bugcontext.job.sources.pytest_log import parse_pytest_log

    fmt = detect_format(text)
    lines = clean_lines(text)
    if fmt == "python":
        failures = parse_pytest_log(text)
    elif fmt == "go-json":
        failures = parse_go_test(clean_lines(go_json_text(lines)))
    else:
        parser = _PARSERS.get(fmt)
        failures = parser(lines) if parser is not None else []
        if not failures:
            failures = parse_pytest_log(text)  # a Python traceback needs no marker line
    if not failures:
        failures = parse_stack_traces(lines)
    return failures


_PARSERS = {
    "vitest": parse_vitest,
    "jest": parse_jest,
    "mocha": parse_mocha,
    "node-test": parse_node_spec,
    "tap": parse_node_tap,
    "go": parse_go_test,
    "cargo": parse_cargo_test,
    "java": parse_java,
}


_PANIC_AT = re.compile(r"^\s*+thread '[^']*+' (?:\(\d++\) )?panicked at (?P<rest>.*)$")
_GO_ERROR = re.compile(r"^\s*+(?P<file>[^\s:]++)(?<=\.go):(?P<line>\d++): ")


def report_text_failure(
    text: str,
    name: str | None,
    *,
    test_id: str | None,
    status: Status,
    origin: str = "junit",
    package: str | None = None,
) -> TestFailure | None:
    """The failure that the text of a JUnit ``<failure>`` or ``<error>`` element gives when
    it is not a Python report: a V8, JVM, Go or Rust stack trace, a Rust panic line (the
    deepest frame), Go's ``file_test.go:12:`` lines (given the import path ``package``, the
    test case's ``classname`` in go-junit-report's reports, when it has a ``/``); ``None``
    when it has no frame."""
    from bugcontext.job.sources.logs.rust import _panic_location

    lines = clean_lines(text)
    segments = trace_segments(_with_go_frames(lines))
    extra: list[tuple[str, str, str | None]] = []
    for line in lines:
        panic = _PANIC_AT.match(line)
        if panic is not None:
            where, _ = _panic_location(panic["rest"])
            if where is not None:
                extra.append((where[0], where[1], None))
            continue
        go = _GO_ERROR.match(line)
        if go is not None:
            path = go["file"]
            if "/" not in path and package and "/" in package:
                path = f"{package.rstrip('/')}/{path}"
            extra.append((path, go["line"], None))
    if extra:
        known = {(p, d) for s in segments for p, d, _ in s.frames}
        segments[0].frames[:0] = [f for f in extra if (f[0], f[1]) not in known]
    if not any(segment.frames for segment in segments):
        return None
    return build_failure(name, segments, test_id=test_id, status=status, origin=origin)
