"""Fuzz target: the JUnit XML reader (``bugcontext.job.sources.runs.parse_junit_xml``).

The input is a JUnit XML document as bytes. Invariants:

* ``parse_junit_xml`` returns failures or raises ``LogFormatError`` (malformed or unsafe
  XML: a DTD, entities, external references), nothing else; ``parse_test_output`` with the
  document as ``junit_xml`` (and an empty log) does the same;
* one failure per ``<failure>`` or ``<error>`` child of a ``<testcase>``, in document order
  (counted independently with the standard library's parser), each well formed (as in
  ``fuzz_pytest_log``), with the element's status;
* the document as ``str`` reads like the bytes (when it is UTF-8 and declares no other
  encoding);
* bounded time per input byte.

Run: ``python tests/fuzz/fuzz_junit.py [libFuzzer arguments] [corpus folders]``.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fuzz_main, instrumented

with instrumented("defusedxml"):
    from bugcontext.job.sources import reports, runs

from fuzz_pytest_log import _well_formed

_ENCODING_DECL = re.compile(rb"^\s*<\?xml[^>]*encoding", re.IGNORECASE)


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _statuses(data: bytes) -> list[str] | None:
    """The status of each ``<failure>``/``<error>`` of each ``<testcase>``, in document
    order, by the standard library's parser (``None`` if it cannot read ``data``)."""
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError):
        return None
    return [
        "error" if _local(child.tag) == "error" else "failed"
        for case in root.iter()
        if _local(case.tag) == "testcase"
        for child in case
        if _local(child.tag) in ("failure", "error")
    ]


def check(data: bytes) -> None:
    """One document: the invariants in the module docstring."""
    try:
        failures = runs.parse_junit_xml(data)
    except reports.LogFormatError as exc:
        assert str(exc).startswith("invalid JUnit XML: "), str(exc)
        try:
            runs.parse_test_output("", junit_xml=data)
        except reports.LogFormatError:
            return
        raise AssertionError("parse_test_output read a document parse_junit_xml refused") from None
    _well_formed(failures)
    assert all(failure.origin == "junit" for failure in failures)
    if b"<!" not in data:  # no DTD: the standard library reads it the same way
        statuses = _statuses(data)
        assert statuses is not None, "defusedxml read what the standard library refuses"
        assert [failure.status for failure in failures] == statuses
    assert runs.parse_test_output("", junit_xml=data) == failures
    if reports.is_junit_xml(data):
        assert runs.parse_test_output(data) == failures
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    if not _ENCODING_DECL.match(data) and not text.startswith("\ufeff"):
        try:
            again = runs.parse_junit_xml(text)
        except reports.LogFormatError as exc:
            raise AssertionError(f"the document as str is refused: {exc}") from None
        assert again == failures, "the document as str reads differently"


if __name__ == "__main__":
    fuzz_main(check)
