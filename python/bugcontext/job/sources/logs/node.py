"""JavaScript and TypeScript test runners: vitest, jest, mocha and Node's own runner
(``node --test``, its ``spec`` and ``tap`` reporters).

* vitest: the ``FAIL  file > suite > test`` headers of the failed-tests part (several
  headers over one error share it; ``FAIL  file [ file ]``, a suite that failed to run, is
  an ``error``), the error line, the ``❯ [fn] file:line:col`` code-frame
  locations (innermost first) and any ``at fn (file:line:col)`` frames;
* jest (default and ``--verbose``): the ``FAIL  file`` lines and the ``● suite › test``
  reports under them (the summary that repeats them at the end is read once);
* mocha: the numbered reports after ``N failing`` (``1) suite`` then the test's title
  lines, the last ending in ``:``), ``"before each" hook`` failures included;
* ``node --test`` with the ``spec`` reporter: the ``✖ name (1.2ms)`` reports (the
  ``failing tests:`` part when the run prints it, with each test's ``test at file:line:col``),
  a suite that only failed because of its tests left out; with the ``tap`` reporter: the
  ``not ok N - name`` entries and their YAML block (``location``, ``error``, ``name``,
  ``stack``), ``subtestsFailed`` suites left out.

Test ids: ``file > suite > test`` (vitest, jest and spec when the file is known), else the
title as printed.
"""  # noqa: RUF002

from __future__ import annotations

import re

from bugcontext.job.sources.logs._common import (
    Segment,
    build_failure,
    is_dependency_path,
    split_location,
    tap_frame,
    trace_segments,
)
from bugcontext.job.sources.reports import Status, TestFailure

__all__ = ["parse_jest", "parse_mocha", "parse_node_spec", "parse_node_tap", "parse_vitest"]

_VITEST_FAIL = re.compile(r"^\s*+FAIL\s++(?P<title>\S.*)$")
_VITEST_RULE = "\u23af"
_JEST_FILE = re.compile(r"^\s*+FAIL\s++(?P<file>\S++)(?: \(\d[\d.]*+ m?s\))?$")
_JEST_HEADER = re.compile("^  \u25cf " r"(?P<title>\S.*)$")
_JEST_SEPARATOR = " \u203a "
_MOCHA_FAILING = re.compile(r"^\s*+\d++ failing\b")
_MOCHA_HEADER = re.compile(r"^(?P<indent>\s*+)(?P<number>\d++)\) (?P<title>\S.*)$")
_SPEC_FAIL = re.compile("^(?P<indent> *+)\u2716 " r"(?P<title>.+?) \(\d[\d.]*+m?s\)$")
_SPEC_LOCATION = re.compile(r"^test at (?P<location>\S.*)$")
_TAP_NOT_OK = re.compile(r"^(?P<indent> *+)not ok \d++(?: -)? (?P<title>[^#]*+)(?:#.*+)?$")


def _code_frame(line: str) -> tuple[str, str, str | None] | None:
    """A vitest code-frame location ``❯ fn file:line:col`` or ``❯ file:line:col``."""  # noqa: RUF002
    text = line.strip()
    if not text.startswith("\u276f "):
        return None
    words = text[2:].split()
    if not words or len(words) > 2:
        return None
    found = split_location(words[-1])
    if found is None or found[2] is None:
        return None
    return found[0], found[1], words[0] if len(words) == 2 else None


def _segments(lines: list[str]) -> list[Segment]:
    """The exceptions of a report's lines: V8 frames and vitest code frames."""
    segments = trace_segments(lines)
    extra = [frame for frame in map(_code_frame, lines) if frame is not None]
    if extra:
        known = {(path, digits) for segment in segments for path, digits, _ in segment.frames}
        kept = [f for f in extra if (f[0], f[1]) not in known and not is_dependency_path(f[0])]
        if kept:
            # The code frames come before the stack of `at` lines (both innermost first).
            segments[-1].frames[:0] = kept
    return segments


def _clean_message(segments: list[Segment]) -> None:
    """Drop code-frame and source-excerpt lines (``❯ ...``, `` 5| ...``, ``> 5 | ...``)
    from the messages."""  # noqa: RUF002
    for segment in segments:
        segment.messages = [
            m
            for m in segment.messages
            if not m.startswith(("\u276f ", "|", ">")) and not _is_excerpt(m) and _VITEST_RULE not in m
        ]


def _is_excerpt(text: str) -> bool:
    head, bar, _ = text.partition("|")
    return bool(bar) and (head.strip().isdigit() or head.strip() == "")


def parse_vitest(lines: list[str]) -> list[TestFailure]:
    """The failures of a vitest run (default or verbose reporter), in report order."""
    failures: list[TestFailure] = []
    titles: list[str] = []
    body: list[str] = []
    started = False

    def finish() -> None:
        if not titles:
            return
        segments = _segments(body)
        _clean_message(segments)
        for title in titles:
            parts = [p.strip() for p in title.split(" > ")]
            status: Status = "failed"
            name = " > ".join(parts[1:]) or title
            if len(parts) == 1 and title.endswith(" ]") and " [ " in title:
                # A suite that failed to run: `FAIL  file [ file ]` (an import, a syntax error).
                name, status = title.split(" [ ", 1)[0], "error"
            failures.append(build_failure(name, segments, test_id=title, status=status, origin="vitest"))
        titles.clear()
        body.clear()

    for line in lines:
        if "Failed Tests" in line or "Failed Suites" in line:
            started = True
            finish()
            continue
        if not started:
            continue
        match = _VITEST_FAIL.match(line)
        if match is not None:
            if body:
                finish()
            titles.append(match["title"].strip())
            continue
        if line.strip().startswith(("Test Files ", "Tests ")) and titles:
            finish()
            started = False
            continue
        if line.strip() and set(line.strip()) <= {_VITEST_RULE} | set("[]/0123456789"):
            finish()
            continue
        if titles:
            body.append(line)
    finish()
    return failures


def parse_jest(lines: list[str]) -> list[TestFailure]:
    """The failures of a jest run, in report order; the ``Summary of all failing tests``
    repeats them and is not read twice."""
    failures: list[TestFailure] = []
    seen: set[str] = set()
    current_file: str | None = None
    title: str | None = None
    body: list[str] = []

    def finish() -> None:
        nonlocal title
        if title is None:
            return
        name = title.replace(_JEST_SEPARATOR, " > ")
        test_id = f"{current_file} > {name}" if current_file else title
        if test_id not in seen:
            seen.add(test_id)
            segments = _segments(body)
            _clean_message(segments)
            status: Status = "error" if title == "Test suite failed to run" else "failed"
            failures.append(build_failure(name, segments, test_id=test_id, status=status, origin="jest"))
        title = None
        body.clear()

    for line in lines:
        file_match = _JEST_FILE.match(line)
        if file_match is not None:
            finish()
            current_file = file_match["file"]
            continue
        header = _JEST_HEADER.match(line)
        if header is not None:
            finish()
            title = header["title"].strip()
            continue
        if line.startswith(("Test Suites:", "Summary of all failing tests")):
            finish()
            continue
        if title is not None:
            body.append(line)
    finish()
    return failures


def parse_mocha(lines: list[str]) -> list[TestFailure]:
    """The failures of a mocha run (``spec`` reporter and those that print its epilogue),
    in report order."""
    start = next((i for i, line in enumerate(lines) if _MOCHA_FAILING.match(line)), None)
    if start is None:
        return []
    failures: list[TestFailure] = []
    index = start + 1
    while index < len(lines):
        header = _MOCHA_HEADER.match(lines[index])
        if header is None:
            index += 1
            continue
        parts = [header["title"].strip()]
        index += 1
        # The title's other lines: each deeper than the number, the last ending with `:`.
        while (
            not parts[-1].endswith(":")
            and index < len(lines)
            and lines[index].startswith(header["indent"] + " ")
        ):
            parts.append(lines[index].strip())
            index += 1
        parts[-1] = parts[-1][:-1] if parts[-1].endswith(":") else parts[-1]
        body: list[str] = []
        while index < len(lines) and _MOCHA_HEADER.match(lines[index]) is None:
            body.append(lines[index])
            index += 1
        segments = _segments(body)
        _clean_message(segments)
        title = " > ".join(parts)
        status: Status = "error" if '" hook' in title else "failed"
        failures.append(build_failure(title, segments, test_id=title, status=status, origin="mocha"))
    return failures


def parse_node_spec(lines: list[str]) -> list[TestFailure]:
    """The failures of ``node --test`` with the ``spec`` reporter, in report order."""
    start = next((i for i, line in enumerate(lines) if line.strip() == "\u2716 failing tests:"), None)
    region = lines[start + 1 :] if start is not None else lines
    failures: list[TestFailure] = []
    index = 0
    location: str | None = None
    while index < len(region):
        line = region[index]
        where = _SPEC_LOCATION.match(line)
        if where is not None:
            location = where["location"]
            index += 1
            continue
        match = _SPEC_FAIL.match(line)
        if match is None:
            index += 1
            continue
        indent = len(match["indent"])
        body: list[str] = []
        index += 1
        while index < len(region):
            nxt = region[index]
            if nxt.strip() and len(nxt) - len(nxt.lstrip(" ")) <= indent:
                break
            body.append(nxt)
            index += 1
        title = match["title"]
        if any(b.strip() for b in body):
            segments = _segments(body)
            _clean_message(segments)
            found = split_location(location) if location else None
            test_file = found[0] if found is not None else None
            test_id = f"{test_file} > {title}" if test_file else title
            failures.append(build_failure(title, segments, test_id=test_id, origin="node-test"))
        location = None
    return failures


def _tap_value(text: str) -> str:
    value = text.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def parse_node_tap(lines: list[str]) -> list[TestFailure]:
    """The failures of ``node --test`` with the ``tap`` reporter (and other TAP 13 producers
    whose YAML block gives ``stack``/``at``), in report order."""
    failures: list[TestFailure] = []
    index = 0
    while index < len(lines):
        match = _TAP_NOT_OK.match(lines[index])
        index += 1
        if match is None:
            continue
        indent = match["indent"]
        fields: dict[str, list[str]] = {}
        key: str | None = None
        if index < len(lines) and lines[index].strip() == "---":
            index += 1
            while index < len(lines) and lines[index].strip() != "...":
                raw = lines[index]
                index += 1
                text = raw[len(indent) + 2 :] if raw.startswith(indent + "  ") else raw.strip()
                if text and not text.startswith(" ") and ":" in text:
                    key, _, value = text.partition(":")
                    fields[key] = [] if value.strip() in ("|-", "|", ">-", ">") else [_tap_value(value)]
                elif key is not None:
                    fields[key].append(text.strip())
            index += 1
        else:  # no YAML block (mocha's TAP reporter): the indented lines under it
            body: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index].startswith(indent + " ")):
                body.append(lines[index])
                index += 1
            if any(b.strip() for b in body):
                segments = _segments(body)
                _clean_message(segments)
                title = match["title"].strip()
                status: Status = "error" if '" hook' in title else "failed"
                failures.append(build_failure(title, segments, test_id=title, status=status, origin="tap"))
                continue
        if fields.get("failureType", [""])[0] == "subtestsFailed":
            continue
        title = match["title"].strip()
        kind = fields.get("name", [""])[0] or None
        message_lines = [m for m in fields.get("error", []) if m]
        frames = [f for f in map(tap_frame, fields.get("stack", [])) if f is not None]
        segment = Segment(
            kind,
            message_lines[0] if message_lines else "",
            [f for f in frames if not is_dependency_path(f[0])],
            message_lines[1:],
        )
        location = fields.get("location", [""])[0]
        found = split_location(location) if location else None
        test_id = f"{found[0]} > {title}" if found else title
        failures.append(
            build_failure(title, [segment], test_id=test_id, message_lines=message_lines, origin="tap")
        )
    return failures
