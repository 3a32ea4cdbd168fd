"""Java (JVM) test output: JUnit 4's ``JUnitCore``, the JUnit 5 console launcher, Maven
Surefire (console and ``target/surefire-reports/*.txt``) and Gradle.

* JUnit 4: ``1) method(pkg.Class)`` then the exception and its ``at`` frames;
* JUnit 5 console launcher: the ``Failures (N):`` part, each entry's ``MethodSource
  [className = 'pkg.Class', methodName = 'm', ...]`` and ``=> exception`` with its frames
  (printed without ``at``);
* Surefire: ``method(pkg.Class)  Time elapsed: 0.01 s  <<< FAILURE!`` (2.x) or
  ``pkg.Class.method -- Time elapsed: 0.01 s <<< ERROR!`` (3.x), with or without Maven's
  ``[ERROR]`` prefix;
* Gradle: ``pkg.Class > method() FAILED`` then the exception, its frames in full
  (``exceptionFormat = FULL``) or the short ``Exception at Class.java:12``.

A frame ``at pkg.Class.method(File.java:12)`` is the file ``pkg/File.java``, which the
source root that holds it ends with (``src/main/java/pkg/File.java``, ``src/test/java/...``,
any folder); the JDK's, the test frameworks' and the build tools' classes are dropped
(:data:`~._common.JAVA_DEPENDENCIES`). ``Caused by:`` starts the next exception of the chain
(the root cause is the last one printed). Test ids: ``pkg.Class.method``.
"""

from __future__ import annotations

import re

from bugcontext.job.sources.logs._common import build_failure, java_frame, trace_segments
from bugcontext.job.sources.reports import Status, TestFailure

__all__ = ["parse_java"]

_MAVEN_PREFIX = re.compile(r"^\[(?:ERROR|INFO|WARNING|WARN|DEBUG)\] ?")
_JUNIT4 = re.compile(r"^\d++\) (?P<method>[^\s()]++)\((?P<cls>[\w$.]++)\)$")
_SUREFIRE2 = re.compile(
    r"^(?P<method>[^\s()]++)\((?P<cls>[\w$.]++)\)\s++Time elapsed: [\d.,]++ s(?:ec)?+\s++"
    r"<<< (?P<kind>FAILURE|ERROR)!$"
)
_SUREFIRE3 = re.compile(
    r"^(?P<full>[\w$.]++)(?:\(\))?+(?:\[[^\]]*+\])?+ "
    r"-- Time elapsed: [\d.,]++ s\s++<<< (?P<kind>FAILURE|ERROR)!$"
)
_GRADLE = re.compile(r"^(?P<cls>[\w$.]++) > (?P<method>.+?) FAILED$")
_GRADLE_SHORT = re.compile(r"^\s++(?P<type>[\w$.]++) at (?P<file>[\w$]++\.\w++):(?P<line>\d++)$")
_JUNIT5_START = re.compile(r"^Failures \(\d++\):$")
_JUNIT5_ENTRY = re.compile(r"^  (?P<title>\S[^:]*+:.+)$")
_JUNIT5_SOURCE = re.compile(
    r"MethodSource \[className = '(?P<cls>[^']*+)', methodName = '(?P<method>[^']*+)'"
)
_END = re.compile(r"^(?:FAILURES!!!|Tests run: |Results ?:|BUILD |\d++ tests? completed|Test run finished)")


def _header(line: str) -> tuple[str, str, Status] | None:
    """``(class, method, status)`` of a report header line of JUnit 4, Surefire or Gradle."""
    for pattern in (_JUNIT4, _SUREFIRE2):
        match = pattern.match(line)
        if match is not None:
            kind = match.groupdict().get("kind")
            return match["cls"], match["method"], "error" if kind == "ERROR" else "failed"
    match = _SUREFIRE3.match(line)
    if match is not None:
        cls, dot, method = match["full"].rpartition(".")
        if dot and cls:
            return cls, method, "error" if match["kind"] == "ERROR" else "failed"
    match = _GRADLE.match(line)
    if match is not None:
        return match["cls"], match["method"].removesuffix("()"), "failed"
    return None


def _failure(cls: str, method: str, status: Status, body: list[str]) -> TestFailure:
    lines: list[str] = []
    for line in body:
        stripped = line.strip()
        if stripped.startswith("=> "):
            lines.append(stripped[3:])
        elif java_frame(stripped, bare=True) is not None and not stripped.startswith("at "):
            lines.append("at " + stripped)
        else:
            short = _GRADLE_SHORT.match(line)
            if short is not None:
                lines.append(short["type"] + ":")
                function = method if method.isidentifier() else "test"
                lines.append(f"at {cls}.{function}({short['file']}:{short['line']})")
            else:
                lines.append(line)
    segments = trace_segments(lines)
    owner = cls.rsplit(".", 1)[-1]
    return build_failure(
        f"{owner}.{method}", segments, test_id=f"{cls}.{method}", status=status, origin="java"
    )


def parse_java(lines: list[str]) -> list[TestFailure]:
    """The failures of a JVM test run's console output or Surefire text report, in report
    order (a test reported twice, by the run and again by its summary, once)."""
    cleaned = [_MAVEN_PREFIX.sub("", line, count=1) for line in lines]
    failures: list[TestFailure] = []
    seen: set[str] = set()
    current: tuple[str, str, Status] | None = None
    body: list[str] = []

    def finish() -> None:
        nonlocal current
        if current is not None:
            key = f"{current[0]}.{current[1]}"
            if key not in seen:
                seen.add(key)
                failures.append(_failure(*current, body))
        current = None
        body.clear()

    in_junit5 = False
    junit5_title: str | None = None
    for line in cleaned:
        if _JUNIT5_START.match(line):
            finish()
            in_junit5 = True
            continue
        if in_junit5:
            entry = _JUNIT5_ENTRY.match(line)
            if entry is not None:
                finish()
                junit5_title = entry["title"]
                current = ("", junit5_title, "failed")
                continue
            source = _JUNIT5_SOURCE.search(line)
            if source is not None and current is not None:
                current = (source["cls"], source["method"], current[2])
                continue
            if line and not line.startswith(" "):
                finish()
                in_junit5 = False
            elif current is not None:
                body.append(line)
            continue
        header = _header(line)
        if header is not None:
            finish()
            current = header
            continue
        if current is not None and (_END.match(line) or (not line.strip() and body and not body[-1].strip())):
            finish()
            continue
        if current is not None:
            body.append(line)
    finish()
    return failures
