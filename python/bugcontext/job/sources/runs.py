"""A test run's failures, from its text output, its JUnit XML report, or both, and the
failing test chosen among them.

:func:`parse_test_output` reads a run's output (a log of any runner, :mod:`.logs`; JUnit XML
(``pytest --junitxml``, and other xUnit reporters), parsed with ``defusedxml``: no entity
expansion, no external resources; each ``<failure>`` or ``<error>`` text is read as a report
of its own).

:func:`failing_tests` groups one test's reports (a failure and an error at teardown) and
picks the one that is its failure; :func:`summary_order` gives the order of the short test
summary; :func:`select_test` chooses a failing test by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NoReturn

from bugcontext.core._extras import needs
from bugcontext.core.errors import ScreenedError, screen
from bugcontext.job.sources.logs import parse_log, report_text_failure
from bugcontext.job.sources.pytest_log import (
    _EXCEPTION_LINE,
    _Builder,
    _dotted,
    _header_key,
    _is_entry_separator,
    _outcome_lines,
    _rule_title,
)
from bugcontext.job.sources.reports import (
    LogFormatError,
    Phase,
    Status,
    TestFailure,
    _clean_lines,
    is_junit_xml,
)

__all__ = [
    "FailingTest",
    "UnknownTestError",
    "failing_tests",
    "failing_tests_under",
    "parse_junit_xml",
    "parse_test_output",
    "select_test",
    "summary_order",
]


# --- JUnit XML ------------------------------------------------------------------------


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


# --- the run's failures -----------------------------------------------------------------


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


def _parsed_junit(data: str | bytes, field: str) -> list[TestFailure]:
    """:func:`parse_junit_xml` of ``data``, its :class:`LogFormatError` naming ``field``."""
    try:
        return parse_junit_xml(data)
    except LogFormatError as exc:
        raise LogFormatError(str(exc), field) from None


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
        failures = _parsed_junit(text, "pytest_log")
    else:
        log = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
        failures = parse_log(log)  # pytest's shapes, or another runner's (:mod:`.logs`)
    if junit_xml is None:
        return failures
    reported = _parsed_junit(junit_xml, "junit_xml")
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


class UnknownTestError(ScreenedError, LookupError):
    """The test asked for (``--test NODEID``) is not among the failing tests of the log.

    ``test`` is the id asked for; ``known`` the ids (or names) of the failing tests found; both
    screened for secrets (:func:`bugcontext.core.errors.screen`), as the message is.
    """

    def __init__(self, test: str, known: Sequence[str]) -> None:
        self.test = screen(test)
        self.known = tuple(screen(name) for name in known)
        test = self.test
        listed = ", ".join(self.known[:10]) + (", ..." if len(self.known) > 10 else "")
        super().__init__(
            f"no failing test {test!r} in the log"
            + (f" (failing tests: {listed})" if self.known else " (it has no failing test)")
        )

    def __reduce__(self) -> tuple[type[UnknownTestError], tuple[str, tuple[str, ...]]]:
        return (type(self), (self.test, self.known))


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
    collection failure: the test never ran. A node id of a folder, a file or a class that
    matches no failing test itself (``tests``, ``tests/``, ``tests/test_x.py``,
    ``tests/test_x.py::TestC``; ``.`` for the whole repository) gives the first failing test
    under it, in ``tests``' order (:func:`failing_tests_under`). Raises :class:`UnknownTestError` when
    no failing test matches.
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
    return (
        _parametrised(tests, test, wanted)
        or _uncollected(tests, test)
        or next(iter(failing_tests_under(tests, test)), None)
        or _unknown(tests, test)
    )


def _collection_key(test: str) -> str | None:
    """The dotted prefix of the tests under the pytest node id ``test`` of a folder, a file
    or a class (``tests/``, ``./tests/test_x.py``, ``tests/test_x.py::TestC`` → ``tests``,
    ``tests.test_x``, ``tests.test_x.TestC``), ``""`` for the whole repository (``.``), or
    ``None`` when ``test`` is not such an id (it has parameters, or an empty part)."""
    if "[" in test:
        return None
    path, sep, rest = test.partition("::")
    while path.startswith("./"):
        path = path[2:]
    path = path.rstrip("/")
    if path in ("", "."):
        return None if sep else ""
    path = path[:-3] if path.endswith(".py") else path
    parts = path.split("/") + (rest.split("::") if sep else [])
    if any(part in ("", ".", "..") for part in parts):
        return None
    return ".".join(parts)


def failing_tests_under(tests: Sequence[FailingTest], test: str) -> list[FailingTest]:
    """The failing tests of ``tests`` under ``test``, a pytest node id of a folder, a file or
    a class (``tests``, ``tests/``, ``tests/test_x.py``, ``tests/test_x.py::TestC``; ``.``:
    every one), in their order: those whose id (a pytest node id or a dotted JUnit id), as
    dotted names, starts with the selection's names, whole names only (``tests/test_x.py::test_y``
    is under ``tests`` and ``tests/test_x.py``; ``tests/test_xy.py::test_z`` is not under
    ``tests/test_x.py``). ``[]`` when ``test`` names no such collection."""
    key = _collection_key(test)
    if key is None:
        return []
    found: list[FailingTest] = []
    for candidate in tests:
        ids = [f.test_id for f in (candidate.failure, *candidate.others) if f.test_id]
        if candidate.test:
            ids.append(candidate.test)
        dotted = [_dotted(i).partition("[")[0] for i in ids]
        if any(not key or d == key or d.startswith(key + ".") for d in dotted):
            found.append(candidate)
    return found


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
