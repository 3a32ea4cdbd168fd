"""Coverage reports as execution evidence: four formats, detected by content.

:func:`read_coverage` reads a report's bytes into an
:class:`~bugcontext.job.sources.execution.ExecutionRecord`:

* coverage.py's data file (``.coverage``, SQLite), through coverage.py's own
  ``CoverageData``, with its per-test contexts when it has them (``--cov-context=test``,
  ``dynamic_context = test_function``): one run per context;
* coverage.py's JSON report (``coverage json``; with ``--show-contexts``, one run per
  context);
* LCOV (``lcov.info``: ``SF:``/``DA:`` records; node's ``--experimental-test-coverage
  --test-reporter=lcov``, c8/istanbul, cargo-llvm-cov) and Cobertura XML (``coverage xml``,
  parsed with defusedxml): one run of every test of the report;
* Go cover profiles (``go test -coverprofile``: ``mode: set|count|atomic``, then
  ``file.go:l.c,l.c statements count`` blocks; the paths are import paths, mapped by their
  tail) and JaCoCo XML (``<report>``: ``<package name="com/x">``, ``<sourcefile
  name="X.java">``, ``<line nr ci>``; the package path and the file name, mapped by their
  tail to the source root that holds them): one run of every test of the report.

Each file's path is mapped to the repository as traceback frames are
(:func:`~bugcontext.job.sources.paths.map_path`: a relative path from the repository
folder, a path from another machine by its longest common tail); a path that names no
repository file is listed in ``ExecutionRecord.unmapped``.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bugcontext.core._extras import needs
from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import Limits, limit_error, resolve
from bugcontext.job.sources.execution import ExecutionRecord, TestRun, context_test_id
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.paths import map_path

if TYPE_CHECKING:  # (the XML readers import it when a report is read)
    from xml.etree.ElementTree import Element

__all__ = [
    "FORMATS",
    "CoverageInput",
    "detect_format",
    "execution_record",
    "read_coverage",
    "read_coverage_file",
]

#: The formats :func:`read_coverage` reads, by the name :func:`detect_format` gives.
FORMATS = ("coverage-data", "coverage-json", "lcov", "cobertura", "go-cover", "jacoco")

FIELD = "coverage"
_SQLITE = b"SQLite format 3\x00"
# The root element of a JaCoCo XML report (after the XML declaration and its DOCTYPE).
_JACOCO = re.compile(rb"^(?:<\?[^>]*+>\s*+)?(?:<!DOCTYPE report[^>]*+>\s*+)?<report[\s>]")
# A Go cover profile block: `path:startline.col,endline.col statements count`.
_GO_BLOCK = re.compile(r"^(?P<path>.+):(?P<start>\d++)\.\d++,(?P<end>\d++)\.\d++ \d++ (?P<count>\d++)$")
_CHUNK = 1 << 20

# A raw report: context (None: no per-test data) -> report path -> executed lines.
_Raw = dict[str | None, dict[str, set[int]]]


def detect_format(data: bytes) -> str | None:
    """The format of a report's bytes (one of :data:`FORMATS`), by content alone, or
    ``None``: an SQLite database is coverage.py's data file, a JSON object coverage.py's JSON
    report, an XML document whose root is ``<report>`` JaCoCo, another XML document
    Cobertura, text starting with ``mode: set|count|atomic`` a Go cover profile, text with
    ``SF:`` records LCOV."""
    if data.startswith(_SQLITE):
        return "coverage-data"
    text = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(b"{"):
        return "coverage-json"
    if text.startswith(b"<"):
        return "jacoco" if _JACOCO.search(text) is not None else "cobertura"
    for line in data[: 1 << 16].splitlines():
        line = line.strip()
        if not line or line.startswith((b"TN:", b"#")):
            continue
        if line.startswith(b"mode:") and line[5:].strip() in (b"set", b"count", b"atomic"):
            return "go-cover"
        return "lcov" if line.startswith(b"SF:") else None
    return None


def read_coverage_file(
    path: str | os.PathLike[str], repo: Repository, limits: Limits | None = None
) -> ExecutionRecord:
    """:func:`read_coverage` of the regular file at ``path``, read only up to the limit
    ``limits.max_coverage_bytes``.

    Raises:
        ResourceLimitError: the file is larger than ``max_coverage_bytes`` (field
            ``coverage``), refused before it is read.
        InvalidInputError: field ``coverage``: not a regular file (a folder, a FIFO, a
            device), a path with a NUL character, or what :func:`read_coverage` raises.
        OSError: the file cannot be opened or read.
    """
    maximum: int = resolve(limits).max_coverage_bytes
    shown = header_path(os.fspath(path))
    if "\0" in os.fspath(path):
        raise InvalidInputError(FIELD, "must not contain a NUL character (a path holds none)")
    # Opened without blocking (a FIFO does not wait for a writer), checked before reading.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInputError(FIELD, f"not a regular file: {shown}")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > maximum:
            raise limit_error(FIELD, "max_coverage_bytes", shown, info.st_size, maximum)
        data = handle.read(maximum + 1)
    if len(data) > maximum:
        raise limit_error(FIELD, "max_coverage_bytes", shown, len(data), maximum, exact=False)
    return read_coverage(data, repo, limits=limits)


def read_coverage(data: bytes | str, repo: Repository, *, limits: Limits | None = None) -> ExecutionRecord:
    """The execution record of a coverage report's content (``bytes``; a ``str`` is taken
    as UTF-8 text), in any of :data:`FORMATS`, detected by content (:func:`detect_format`),
    its paths mapped to ``repo``.

    Raises:
        ResourceLimitError: more than ``limits.max_coverage_bytes`` bytes (field
            ``coverage``).
        InvalidInputError: field ``coverage``: not a ``bytes`` or ``str``, an unknown format,
            or a damaged report of a known one (an SQLite file that is not a coverage.py data
            file, invalid JSON, XML or LCOV, a line number that is not a positive integer).
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidInputError(FIELD, f"must be bytes, str or a path, not {type(data).__name__}")
    data = bytes(data)
    maximum: int = resolve(limits).max_coverage_bytes
    if len(data) > maximum:
        raise limit_error(FIELD, "max_coverage_bytes", "the report", len(data), maximum)
    kind = detect_format(data)
    if kind is None:
        raise InvalidInputError(
            FIELD,
            "unknown format: not a coverage.py data file (SQLite), coverage.py JSON, LCOV, "
            "Cobertura XML, Go cover profile or JaCoCo XML report (to read a file, pass a path, "
            "os.PathLike)",
        )
    reader = {
        "coverage-data": _data_file,
        "coverage-json": _json_report,
        "lcov": _lcov,
        "cobertura": _cobertura,
        "go-cover": _go_cover,
        "jacoco": _jacoco,
    }[kind]
    raw, per_test, measured = reader(data)
    return _record(kind, raw, per_test, measured, repo)


def _damaged(kind: str, problem: object) -> InvalidInputError:
    return InvalidInputError(FIELD, f"damaged {kind} report: {problem}")


def _line(value: object, kind: str) -> int:
    """A line number as an ``int`` (coverage.py writes ``0`` for an empty module, and arcs
    hold negative numbers: callers keep the positive ones)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _damaged(kind, f"line number {value!r} is not an integer")
    try:
        number = int(value)
    except ValueError:
        raise _damaged(kind, f"line number {value!r} is not an integer") from None
    return number


def _data_file(data: bytes) -> tuple[_Raw, bool, set[str]]:
    """coverage.py's SQLite data file, read with ``CoverageData`` from a private copy."""
    with needs("context"):
        from coverage import CoverageData
        from coverage.exceptions import CoverageException

    raw: _Raw = {}
    measured: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="bugcontext-coverage-") as folder:
        copy = Path(folder) / "data"
        copy.write_bytes(data)
        try:
            # CoverageData gives an SQLite database without its schema one (an empty data
            # file): a database that is not coverage.py's is refused first, read-only.
            with sqlite3.connect(f"{copy.as_uri()}?mode=ro", uri=True) as db:
                tables = {row[0] for row in db.execute("select name from sqlite_master where type = 'table'")}
            db.close()
            if not {"coverage_schema", "file"} <= tables:
                raise _damaged("coverage.py data", "an SQLite database without coverage.py's tables")
            cov = CoverageData(basename=str(copy), suffix=None, no_disk=False)
            cov.read()
            files = sorted(cov.measured_files())
            contexts = [c for c in cov.measured_contexts() if c]
            for path in files:
                measured.add(path)
                if contexts:
                    for line, names in cov.contexts_by_lineno(path).items():
                        for name in names or [""]:
                            if line > 0:
                                raw.setdefault(context_test_id(name), {}).setdefault(path, set()).add(line)
                else:
                    executed = (n for n in cov.lines(path) or () if n > 0)
                    raw.setdefault(None, {}).setdefault(path, set()).update(executed)
            cov.close()
        except (CoverageException, sqlite3.Error) as exc:
            raise _damaged("coverage.py data", str(exc).replace(str(copy), "file")) from None
    return raw, bool(contexts), measured


def _json_report(data: bytes) -> tuple[_Raw, bool, set[str]]:
    kind = "coverage.py JSON"
    try:
        report = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:
        raise _damaged(kind, exc) from None
    if not isinstance(report, dict) or not isinstance(report.get("files"), dict):
        raise _damaged(kind, 'no "files" object (is it a coverage.py JSON report?)')
    raw: _Raw = {}
    measured: set[str] = set()
    per_test = False
    for path, entry in report["files"].items():
        if not isinstance(entry, dict):
            raise _damaged(kind, f"file {path!r} is not an object")
        measured.add(path)
        executed = entry.get("executed_lines", [])
        contexts = entry.get("contexts")
        if not isinstance(executed, list) or (contexts is not None and not isinstance(contexts, dict)):
            raise _damaged(kind, f"file {path!r}: executed_lines or contexts of the wrong type")
        if contexts:
            per_test = True
            for line, names in contexts.items():
                number = _line(line, kind)
                if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                    raise _damaged(kind, f"file {path!r}: contexts of line {line} are not a list of names")
                for name in names or [""]:
                    if number > 0:
                        raw.setdefault(context_test_id(name), {}).setdefault(path, set()).add(number)
        else:
            numbers = (_line(n, kind) for n in executed)
            raw.setdefault(None, {}).setdefault(path, set()).update(n for n in numbers if n > 0)
    return raw, per_test, measured


def _lcov(data: bytes) -> tuple[_Raw, bool, set[str]]:
    kind = "LCOV"
    lines: dict[str, set[int]] = {}
    current: str | None = None
    for number, raw_line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        text = raw_line.strip()
        if text.startswith("SF:"):
            current = text[3:]
            if not current:
                raise _damaged(kind, f"line {number}: SF: without a path")
            lines.setdefault(current, set())
        elif text == "end_of_record":
            current = None
        elif text.startswith("DA:"):
            if current is None:
                raise _damaged(kind, f"line {number}: DA: outside a SF: record")
            parts = text[3:].split(",")
            if len(parts) < 2:
                raise _damaged(kind, f"line {number}: DA: needs a line and a count")
            try:
                hits = int(parts[1])
            except ValueError:
                raise _damaged(kind, f"line {number}: count {parts[1]!r} is not an integer") from None
            line = _line(parts[0], kind)
            if hits > 0 and line > 0:
                lines[current].add(line)
    return {None: lines}, False, set(lines)


def _cobertura(data: bytes) -> tuple[_Raw, bool, set[str]]:
    from xml.etree.ElementTree import ParseError

    with needs("context"):
        from defusedxml import DefusedXmlException  # type: ignore[import-untyped,unused-ignore]
        from defusedxml.ElementTree import fromstring  # type: ignore[import-untyped,unused-ignore]

    kind = "Cobertura XML"
    try:
        # A DOCTYPE is allowed (Cobertura's own reports name their DTD); entities and
        # external references are refused.
        root: Element = fromstring(data)
    except (ParseError, DefusedXmlException, ValueError, LookupError) as exc:
        raise _damaged(kind, exc) from None
    if root.tag != "coverage":
        raise _damaged(kind, f"root element <{root.tag}>, not <coverage>")
    sources = [s.text.strip() for s in root.iter("source") if s.text and s.text.strip()]
    lines: dict[str, set[int]] = {}
    for cls in root.iter("class"):
        name = cls.get("filename")
        if not name:
            raise _damaged(kind, "a <class> without a filename")
        # A relative file name is relative to one of the report's sources: the first that
        # names a file, else as written (mapped like any other path).
        path = name
        if not os.path.isabs(name) and not (len(name) > 1 and name[1] == ":"):
            for source in sources:
                joined = f"{source.rstrip('/')}/{name}"
                if os.path.isfile(joined):
                    path = joined
                    break
            else:
                if sources:
                    path = f"{sources[0].rstrip('/')}/{name}"
        _executed_lines(cls, "hits", "number", kind, lines.setdefault(path, set()))
    return {None: lines}, False, set(lines)


def _executed_lines(element: Element, count: str, number: str, kind: str, found: set[int]) -> None:
    """Add to ``found`` the line (attribute ``number``) of every ``<line>`` under ``element``
    whose attribute ``count`` (hits, covered instructions) is positive."""
    for line in element.iter("line"):
        try:
            hits = int(line.get(count, "0"))
        except ValueError:
            raise _damaged(kind, f"{count} {line.get(count)!r} is not an integer") from None
        at = _line(line.get(number), kind)
        if hits > 0 and at > 0:
            found.add(at)


def _go_cover(data: bytes) -> tuple[_Raw, bool, set[str]]:
    """A Go cover profile: every line of a block run at least once is executed (a block's
    lines from its first to its last, both included)."""
    kind = "Go cover profile"
    lines: dict[str, set[int]] = {}
    for number, raw_line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        text = raw_line.strip()
        if not text or text.startswith("mode:"):
            continue
        match = _GO_BLOCK.match(text)
        if match is None:
            raise _damaged(kind, f"line {number}: not a block 'file.go:l.c,l.c statements count'")
        start, end = _line(match["start"], kind), _line(match["end"], kind)
        found = lines.setdefault(match["path"], set())
        if int(match["count"]) > 0 and 0 < start <= end:
            if end - start > 1_000_000:
                raise _damaged(kind, f"line {number}: a block of more than a million lines")
            found.update(range(start, end + 1))
    return {None: lines}, False, set(lines)


def _jacoco(data: bytes) -> tuple[_Raw, bool, set[str]]:
    """A JaCoCo XML report (parsed with defusedxml: its DOCTYPE is allowed, entities and
    external references are refused): a line with covered instructions (``ci > 0``) is
    executed; a source file's path is its package's path and its name."""
    from xml.etree.ElementTree import ParseError

    with needs("context"):
        from defusedxml import DefusedXmlException  # type: ignore[import-untyped,unused-ignore]
        from defusedxml.ElementTree import fromstring  # type: ignore[import-untyped,unused-ignore]

    kind = "JaCoCo XML"
    try:
        root: Element = fromstring(data)
    except (ParseError, DefusedXmlException, ValueError, LookupError) as exc:
        raise _damaged(kind, exc) from None
    if root.tag != "report":
        raise _damaged(kind, f"root element <{root.tag}>, not <report>")
    lines: dict[str, set[int]] = {}
    for package in root.iter("package"):
        prefix = (package.get("name") or "").strip("/")
        for source in package.iter("sourcefile"):
            name = source.get("name")
            if not name:
                raise _damaged(kind, "a <sourcefile> without a name")
            path = f"{prefix}/{name}" if prefix else name
            _executed_lines(source, "ci", "nr", kind, lines.setdefault(path, set()))
    return {None: lines}, False, set(lines)


def _record(
    kind: str, raw: _Raw, per_test: bool, measured: Iterable[str], repo: Repository
) -> ExecutionRecord:
    names: dict[str, list[str]] = {}
    mapped: dict[str, str | None] = {}
    unmapped: list[str] = []

    def where(path: str) -> str | None:
        if path not in mapped:
            rel = map_path(repo, path, names)[0]
            mapped[path] = rel
            if rel is None:
                unmapped.append(path)
        return mapped[path]

    runs: list[TestRun] = []
    for context in sorted(raw, key=lambda c: (c is not None, c or "")):
        files: dict[str, set[int]] = {}
        for path, lines in sorted(raw[context].items()):
            rel = where(path)
            if rel is not None:
                files.setdefault(rel, set()).update(lines)
        runs.append(TestRun(context, _frozen(files)))
    known = frozenset(rel for rel in (where(p) for p in sorted(measured)) if rel is not None)
    return ExecutionRecord(kind, tuple(runs), per_test, known, tuple(unmapped))


def _frozen(files: Mapping[str, set[int]]) -> dict[str, frozenset[int]]:
    return {path: frozenset(lines) for path, lines in files.items()}


#: What ``coverage=`` accepts: a report's content (``bytes``, or ``str`` text), the path of a
#: report (``os.PathLike``), or a record already read (a tracer's, say).
CoverageInput = bytes | str | os.PathLike[str] | ExecutionRecord


def execution_record(
    coverage: CoverageInput, repo: Repository, limits: Limits | None = None
) -> ExecutionRecord:
    """The execution record ``coverage`` gives: itself when it is one; the report at a path
    (:func:`read_coverage_file`); a report's content (:func:`read_coverage`). Raises as
    those do (``InvalidInputError`` naming the field ``coverage`` for anything else)."""
    if isinstance(coverage, ExecutionRecord):
        return coverage
    if isinstance(coverage, os.PathLike):
        return read_coverage_file(coverage, repo, limits)
    return read_coverage(coverage, repo, limits=limits)
