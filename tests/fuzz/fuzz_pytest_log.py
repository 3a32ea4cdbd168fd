"""Fuzz target: the test-output parser (``bugcontext.job.sources.pytest_log``).

The input is a test log as bytes, read as the command line reads it (UTF-8, undecodable
bytes replaced). Invariants:

* ``parse_pytest_log``, ``parse_test_output`` (any runner's log: ``sources.logs.parse_log``,
  the same as ``parse_pytest_log`` for a log detected as Python's), ``parse_outcomes``, ``summary_order``,
  ``failing_tests`` and ``select_test`` raise nothing, except the documented
  ``LogFormatError`` (the text is an XML document that is not readable JUnit) and
  ``UnknownTestError`` (never for an id the log itself gives);
* every failure is well formed: line numbers in ``1..2**31-1``, non-empty paths, each frame's
  ``segment`` one link of the chain, the frames the chain's frames in order;
* line endings do not matter: the log with ``\\r\\n`` or ``\\r`` gives the same failures;
* CI time stamps do not matter: every line prefixed with one gives the same failures;
* ``failing_tests`` puts every report in exactly one test, and each test's own id selects it;
* bounded time per input byte (``_common.guarded``).

Run: ``python tests/fuzz/fuzz_pytest_log.py [libFuzzer arguments] [corpus folders]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fuzz_main, instrumented

with instrumented():
    from bugcontext.job.sources import pytest_log as pl
    from bugcontext.job.sources import reports, runs

_MAX_LINE = 2**31 - 1
_STAMP = "2024-05-01T10:00:00.1234567Z "
# pytest's shapes, and the other runners' (``bugcontext.job.sources.logs``).
ORIGINS = ("pytest", "unittest", "junit", "traceback", "summary")
ORIGINS += ("vitest", "jest", "mocha", "node-test", "tap", "go", "cargo", "java", "stack-trace")


def _well_formed(failures: list[reports.TestFailure]) -> None:
    for failure in failures:
        assert isinstance(failure, reports.TestFailure)
        assert failure.status in ("failed", "error"), failure.status
        assert failure.phase in (None, "collect", "setup", "call", "teardown"), failure.phase
        assert failure.origin in ORIGINS, failure.origin
        assert all(isinstance(line, str) for line in failure.message_lines)
        for index, link in enumerate(failure.chain):
            assert link.segment == index, (link.segment, index)
            assert (link.relation is None) == (index == len(failure.chain) - 1), failure.chain
            assert all(frame.segment == index for frame in link.frames)
        if failure.chain:
            chained = tuple(frame for link in failure.chain for frame in link.frames)
            assert chained == failure.frames, (chained, failure.frames)
        for frame in failure.frames:
            assert isinstance(frame.path, str) and frame.path, frame
            assert "\n" not in frame.path and "\r" not in frame.path, frame
            assert 1 <= frame.line <= _MAX_LINE, frame
            assert frame.function is None or isinstance(frame.function, str)
        for frame in failure.beyond:  # past every file: kept apart, reported as past the end
            assert frame.line == reports.BEYOND_LINE == _MAX_LINE + 1, frame
            assert isinstance(frame.path, str) and frame.path and "\n" not in frame.path, frame
        assert len(set(failure.beyond)) == len(failure.beyond), failure.beyond


def _parse(text: str) -> list[reports.TestFailure]:
    failures = pl.parse_pytest_log(text)
    assert isinstance(failures, list)
    return failures


def check(data: bytes) -> None:
    """One log: the invariants in the module docstring."""
    text = data.decode("utf-8", errors="replace")
    failures = _parse(text)
    _well_formed(failures)

    if reports.is_junit_xml(data):
        try:
            runs.parse_test_output(data)
        except reports.LogFormatError:
            pass
    else:
        # Any runner's log: the format told from the content (a pytest log reads as before).
        from bugcontext.job.sources.logs import detect_format, parse_log

        read = parse_log(text)
        _well_formed(read)
        assert runs.parse_test_output(data) == read
        if detect_format(text) == "python":
            # A Python log reads as before; one where the pytest reader finds no failure is
            # read for bare stack traces of any language (parse_log's documented fallback).
            from bugcontext.job.sources.logs import clean_lines, parse_stack_traces

            assert read == (failures or parse_stack_traces(clean_lines(text)))
        if "\r" not in text:
            assert parse_log(text.replace("\n", "\r\n")) == read, "CRLF line endings changed the failures"
    outcomes = pl.parse_outcomes(text)
    assert all(o.status in ("passed", "failed", "error", "skipped", "xfailed", "xpassed") for o in outcomes)
    order = runs.summary_order(data)
    assert len(set(order)) == len(order), order

    tests = runs.failing_tests(failures, order)
    assert sum(1 + len(t.others) for t in tests) == len(failures)
    grouped = [id(f) for t in tests for f in (t.failure, *t.others)]
    assert sorted(grouped) == sorted(id(f) for f in failures)
    assert runs.select_test(tests) is (tests[0] if tests else None)
    for test in tests:
        if test.test is not None:
            chosen = runs.select_test(tests, test.test)
            assert chosen is not None and test.test in (chosen.test, chosen.failure.test_id), (test, chosen)

    if "\r" not in text:
        assert _parse(text.replace("\n", "\r\n")) == failures, "CRLF line endings changed the failures"
        assert _parse(text.replace("\n", "\r")) == failures, "CR line endings changed the failures"
    lines = reports.strip_ansi(text).splitlines()
    if "\x1b" not in text and not any(line[:1].isdigit() for line in lines):
        stamped = "".join(_STAMP + line + "\n" for line in text.splitlines())
        assert _parse(stamped) == failures, "CI time stamps changed the failures"


if __name__ == "__main__":
    fuzz_main(check)
