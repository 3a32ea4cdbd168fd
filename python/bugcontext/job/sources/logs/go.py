"""``go test`` output: plain, ``-v`` and ``-json``.

* ``--- FAIL: TestX (0.00s)`` (subtests ``TestX/case``, indented) names a failed test; its
  output (under ``=== RUN   TestX`` with ``-v``, indented under the ``--- FAIL`` line
  without) holds the ``file_test.go:12: message`` lines of ``t.Error``/``t.Fatal``, each a
  frame (the first printed the deepest);
* a panic (``panic: ...``, ``[recovered]``) is the failure of the test running, its frames
  those of the first goroutine's trace (``pkg.Func(...)`` then ``\\t/path/file.go:12 +0x1d``),
  Go's own library and the module cache dropped;
* a package that does not build (``# pkg`` then ``./file.go:5:2: message``, ``FAIL pkg
  [build failed]``) is one ``error`` whose frames are the compiler's locations;
* ``-json`` (one JSON object a line): the ``Output`` of the ``output`` events, in order, read
  as the plain output.

A file the output names by its base name (``calc_test.go:12``) is given as the package's
import path and that name (``example.com/m/calc/calc_test.go``, from the ``FAIL  pkg`` line
after it), so that the repository file with the longest common tail is found. Test ids are
``pkg.TestX`` (``TestX`` when the package is not printed).
"""

from __future__ import annotations

import bisect
import json
import re

from bugcontext.job.sources.logs._common import Segment, build_failure, is_dependency_path
from bugcontext.job.sources.reports import TestFailure

__all__ = ["go_json_text", "parse_go_test"]

_RUN = re.compile(r"^\s*+=== (?:RUN|CONT|PAUSE|NAME)\s++(?P<name>\S++)$")
_RESULT = re.compile(r"^(?P<indent>\s*+)--- (?P<status>FAIL|PASS|SKIP): (?P<name>\S++) \([\d.]++s\)$")
_PACKAGE = re.compile(r"^(?:FAIL|ok)\s++(?P<package>\S++)(?:\s++(?:[\d.]++s|\(cached\)|\[[^\]]*+\]).*+)?$")
_ERROR_LINE = re.compile(r"^\s++(?P<file>[^\s:]++)(?<=\.go):(?P<line>\d++): ?(?P<message>.*+)$")
_BUILD_HEADER = re.compile(r"^# (?P<package>\S++)$")
_BUILD_LINE = re.compile(r"^(?P<path>[^\s:]++)(?<=\.go):(?P<line>\d++):(?:\d++:)? (?P<message>.*+)$")
_TRACE_LOCATION = re.compile(r"^\t(?P<path>[^\s:]++)(?<=\.go):(?P<line>\d++)(?: \+0x[0-9a-f]++)?$")


def go_json_text(lines: list[str]) -> str:
    """The text output of a ``go test -json`` run: the ``Output`` of its ``output`` events,
    in order; a line that is not a JSON object (a build error) is kept as it is."""
    parts: list[str] = []
    for line in lines:
        if not line.startswith("{"):
            parts.append(line + "\n")
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            parts.append(line + "\n")
            continue
        if isinstance(event, dict) and event.get("Action") == "output":
            output = event.get("Output")
            if isinstance(output, str):
                parts.append(output)
    return "".join(parts)


class _Test:
    def __init__(self, name: str) -> None:
        self.name = name
        self.output: list[str] = []
        self.failed = False
        self.package: str | None = None
        self.panic: Segment | None = None


def _panic(lines: list[str], start: int) -> tuple[Segment, int]:
    """The panic starting at ``lines[start]`` (``panic: message``) and the index after its
    first goroutine's trace."""
    message = lines[start][len("panic: ") :].removesuffix(" [recovered]")
    segment = Segment("panic", message)
    index = start + 1
    while index < len(lines) and not lines[index].startswith("goroutine "):
        if lines[index].strip():
            segment.messages.append(lines[index].strip())
        index += 1
        if index - start > 50:  # not followed by a trace
            return segment, start + 1
    index += 1
    function: str | None = None
    while index < len(lines) and lines[index].strip():
        line = lines[index]
        if line.startswith(("FAIL", "ok ", "--- ", "=== ", "exit status ", "PASS")):
            break  # the trace is over (go test prints no blank line after it)
        location = _TRACE_LOCATION.match(line)
        if location is not None:
            if not is_dependency_path(location["path"]):
                name = function.rsplit("/", 1)[-1] if function else None
                segment.frames.append((location["path"], location["line"], name))
        elif not line.startswith("\t"):
            open_at = line.rfind("(")
            function = line[:open_at] if open_at > 0 else line
        index += 1
    return segment, index


def parse_go_test(lines: list[str]) -> list[TestFailure]:
    """The failures of a ``go test`` run (plain or ``-v`` text), in the order of their
    ``--- FAIL`` lines (a build failure where its ``FAIL`` line is)."""
    tests: dict[str, _Test] = {}
    order: list[_Test | TestFailure] = []
    running: _Test | None = None  # whose output the next indented lines are
    pending: list[_Test] = []  # failed tests whose package is not known yet
    build: tuple[str, list[tuple[str, str, str | None]], list[str]] | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        run = _RUN.match(line)
        if run is not None:
            running = tests.setdefault(run["name"], _Test(run["name"]))
            index += 1
            continue
        result = _RESULT.match(line)
        if result is not None:
            test = tests.setdefault(result["name"], _Test(result["name"]))
            if result["status"] == "FAIL" and not test.failed:
                test.failed = True
                order.append(test)
                pending.append(test)
            running = test
            index += 1
            continue
        if line.startswith("panic: "):
            segment, index = _panic(lines, index)
            target = running or (pending[-1] if pending else None)
            if target is None:
                target = _Test("(panic)")
                order.append(target)
                pending.append(target)
            if target.panic is None:
                target.panic = segment
            if not target.failed:
                target.failed = True
                order.append(target)
                pending.append(target)
            continue
        header = _BUILD_HEADER.match(line)
        if header is not None:
            build = (header["package"], [], [])
            index += 1
            continue
        if build is not None:
            compiled = _BUILD_LINE.match(line)
            if compiled is not None:
                build[1].insert(0, (compiled["path"], compiled["line"], None))
                build[2].append(compiled["message"])
                index += 1
                continue
        package = _PACKAGE.match(line)
        if package is not None:
            for test in pending:
                test.package = package["package"]
            pending = []
            if build is not None and build[1] and ("[build failed]" in line or "[setup failed]" in line):
                name, frames, messages = build
                segment = Segment("build failed", messages[0] if messages else "", frames, messages[1:])
                order.append(build_failure(name, [segment], test_id=name, status="error", origin="go"))
                build = None
            running = None
            tests = {}
            index += 1
            continue
        if running is not None and line.startswith((" ", "\t")):
            running.output.append(line)
        index += 1
    return _reported(order)


def _reported(order: list[_Test | TestFailure]) -> list[TestFailure]:
    """The failures of the failed tests and build failures of ``order``, in that order; a test
    that failed only because its subtests did is left out."""
    names = sorted(item.name for item in order if isinstance(item, _Test))

    def has_failed_subtest(name: str) -> bool:
        at = bisect.bisect_left(names, name + "/")
        return at < len(names) and names[at].startswith(name + "/")

    failures: list[TestFailure] = []
    for item in order:
        if isinstance(item, TestFailure):
            failures.append(item)
        elif item.panic is not None or item.output or not has_failed_subtest(item.name):
            # (a test that failed only because its subtests did is left out)
            failures.append(_failure(item))
    return failures


def _failure(test: _Test) -> TestFailure:
    prefix = test.package + "/" if test.package else ""
    segment = test.panic or Segment("FAIL")
    reported: list[tuple[str, str, str | None]] = []
    messages: list[str] = []
    for line in test.output:
        found = _ERROR_LINE.match(line)
        if found is not None:
            path = found["file"]
            if "/" not in path:
                path = prefix + path
            reported.append((path, found["line"], None))
            messages.append(found["message"])
        elif line.strip() and not _RESULT.match(line):
            messages.append(line.strip())
    if test.panic is None:
        segment.message = messages[0] if messages else ""
        segment.messages = messages[1:]
        segment.frames = reported
    else:
        # The test's own `file_test.go:N:` lines come before the panic, farther out.
        segment.frames = [*segment.frames, *reversed(reported)]
        segment.messages = [*segment.messages, *messages]
    test_id = f"{test.package}.{test.name}" if test.package else test.name
    return build_failure(test.name, [segment], test_id=test_id, origin="go")
