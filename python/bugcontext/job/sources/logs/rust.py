"""``cargo test`` and ``cargo nextest`` output.

A failed test is named by cargo's ``test NAME ... FAILED`` line or nextest's ``FAIL [ 0.004s]
crate::binary NAME`` line; its report is the block under ``---- NAME stdout ----`` (cargo)
or ``STDOUT:``/``STDERR:`` headers (nextest). In it:

* ``thread 'NAME' panicked at src/x.rs:12:9:`` (Rust 1.73 and later: the message on the lines
  after it, an assertion's ``left:``/``right:`` diff among them) or ``thread 'NAME' panicked
  at 'message', src/x.rs:12:9`` (earlier): the deepest frame;
* a ``RUST_BACKTRACE=1`` backtrace (``  3: crate::module::function`` then ``at
  ./src/x.rs:12:9``): the frames from the panic outwards, Rust's own library (``/rustc/...``)
  and Cargo's registry dropped;
* a doc test (``---- src/lib.rs - add (line 5) stdout ----``): its own ``src/lib.rs:5`` is the
  outermost frame, the panic of its ``main`` thread the deepest.

Test ids: the test's path (``tests::adds``), after the source file of its test binary when the
run prints it (``Running tests/calc.rs (...)``: ``tests/calc.rs::adds``).
"""

from __future__ import annotations

import re

from bugcontext.job.sources.logs._common import Segment, build_failure, split_location, trace_segments
from bugcontext.job.sources.reports import TestFailure

__all__ = ["parse_cargo_test"]

_RUNNING = re.compile(r"^\s*+Running (?:unittests )?(?P<source>\S++)(?: \(.*\))?$")
_FAILED = re.compile(r"^test (?P<name>.+?) \.\.\. FAILED$")
_NEXTEST_FAIL = re.compile(
    r"^\s*+(?:FAIL|SIGSEGV|SIGABRT|SIGBUS|TIMEOUT|ABORT|LEAK-FAIL)(?: \[\s*+[\d.]++m?s\])?+ "
    r"(?P<binary>\S++) (?P<name>\S.*)$"
)
_CARGO_HEADER = re.compile(r"^---- (?P<name>.+?) stdout ----$")
_NEXTEST_HEADER = re.compile(
    r"^(?:──── |--- )(?:STDOUT|STDERR):\s++(?P<binary>\S++) (?P<name>\S.*?)(?: ---)?$"
)
_PANIC = re.compile(r"^thread '(?P<thread>[^']*+)' (?:\(\d++\) )?panicked at (?P<rest>.*)$")
_DOCTEST = re.compile(r"^(?P<file>\S++) - (?P<item>.*?) \(line (?P<line>\d++)\)$")


def _panic_location(rest: str) -> tuple[tuple[str, str] | None, str]:
    """The location and message of a panic line's tail: ``src/x.rs:12:9:`` (message on the
    next lines) or ``'message', src/x.rs:12:9``."""
    if rest.endswith(":"):
        found = split_location(rest[:-1])
        if found is not None:
            return (found[0].removeprefix("./"), found[1]), ""
    if rest.startswith("'"):
        message, _, location = rest[1:].rpartition("', ")
        found = split_location(location)
        if found is not None:
            return (found[0].removeprefix("./"), found[1]), message
    return None, rest


def parse_cargo_test(lines: list[str]) -> list[TestFailure]:
    """The failures of a ``cargo test`` or ``cargo nextest run`` output, in the order of
    their reports (tests that failed without one, after them, in the order named)."""
    source: str | None = None
    named: list[tuple[str, str | None]] = []  # failed tests as named, with their binary's source
    named_set: set[str] = set()
    reports: dict[str, tuple[str | None, list[str]]] = {}
    order: list[str] = []
    current: list[str] | None = None
    for line in lines:
        running = _RUNNING.match(line)
        if running is not None:
            source, current = running["source"], None
            continue
        failed = _FAILED.match(line)
        nextest = _NEXTEST_FAIL.match(line) if failed is None else None
        if failed is not None or nextest is not None:
            name = (failed or nextest)["name"].strip()  # type: ignore[index]
            if name not in named_set:
                named_set.add(name)
                named.append((name, source if failed is not None else nextest["binary"]))  # type: ignore[index]
            if nextest is not None:
                current = None
            continue
        header = _CARGO_HEADER.match(line) or _NEXTEST_HEADER.match(line)
        if header is not None:
            name = header["name"].strip()
            if name not in reports:
                order.append(name)
                reports[name] = (source, [])
            current = reports[name][1]
            continue
        if line.startswith(("failures:", "test result:")):
            current = None
            continue
        if current is not None:
            current.append(line)
    failures: list[TestFailure] = []
    sources = dict(named)
    for name in order:
        origin_source, body = reports[name]
        if not any(_PANIC.match(b) for b in body) and name not in sources:
            continue  # a passing test's captured output (`--nocapture`, `--show-output`)
        failures.append(_failure(name, sources.get(name, origin_source), body))
    for name, binary in named:
        if name not in reports:
            failures.append(_failure(name, binary, []))
    return failures


def _failure(name: str, binary: str | None, body: list[str]) -> TestFailure:
    frames: list[tuple[str, str, str | None]] = []
    messages: list[str] = []
    message = ""
    start = next((i for i, b in enumerate(body) if _PANIC.match(b)), None)
    if start is not None:
        panic = _PANIC.match(body[start])
        assert panic is not None
        where, message = _panic_location(panic["rest"])
        rest = body[start + 1 :]
        cut = next((i for i, b in enumerate(rest) if b.startswith(("note: ", "stack backtrace:"))), len(rest))
        messages = [b.rstrip() for b in rest[:cut] if b.strip()]
        if not message and messages:
            message = messages[0]
        backtrace = trace_segments(rest[cut:])[0].frames if cut < len(rest) else []
        if where is not None:
            frames.append((where[0], where[1], None))
        for path, digits, function in backtrace:
            path = path.removeprefix("./")
            if frames and (path, digits) == frames[0][:2] and len(frames) == 1:
                frames[0] = (path, digits, function)
                continue
            frames.append((path, digits, function))
    doctest = _DOCTEST.match(name)
    if doctest is not None:
        frames.append((doctest["file"], doctest["line"], doctest["item"]))
        test_id = name
    else:
        test_id = f"{binary}::{name}" if binary and binary.endswith(".rs") else name
    kind = "panic" if start is not None else None
    if start is None:
        messages = [b.strip() for b in body if b.strip()]
        message = messages[0] if messages else ""
        messages = messages[1:]
    segment = Segment(
        kind, message, frames, messages if start is None else [m for m in messages if m != message]
    )
    return build_failure(name, [segment], test_id=test_id, origin="cargo")
