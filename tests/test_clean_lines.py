"""The lines the log parsers read: a log without control characters takes the fast path
(no terminal stripping per line), which must give the very lines of the full path."""

from __future__ import annotations

from bugcontext.core.terminal import strip_terminal
from bugcontext.job.sources import reports
from bugcontext.job.sources.reports import _clean_lines
from hypothesis import given, settings
from hypothesis import strategies as st

# Every character the line splitting, the terminal stripping and the prefixes react to.
CONTROLS = [chr(c) for c in range(0x20)]
CHARACTERS = [*"ab1 \t[]gw:-", *CONTROLS, "\x7f", "\x85", "\x9b", "\x9c", "\x9d", "\u2028"]
PIECES = ["\x1b[31m", "[gw0] ", "2024-01-02T03:04:05.1234567Z ", "\r\n"]
ALPHABET = st.sampled_from([*CHARACTERS, *PIECES])


def _slow(text: str) -> list[str]:
    """:func:`_clean_lines` with every line stripped (the path for any text)."""
    saved = reports._CONTROL_BUT_ENDINGS
    reports._CONTROL_BUT_ENDINGS = reports.re.compile(r"[\s\S]")  # every text "has" one
    try:
        return _clean_lines(text)
    finally:
        reports._CONTROL_BUT_ENDINGS = saved


@settings(max_examples=400, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_the_fast_path_gives_the_same_lines(text: str) -> None:
    assert _clean_lines(text) == _slow(text)


def test_the_line_endings_alone_take_the_fast_path_and_a_control_character_does_not() -> None:
    plain = "FAILED a.py::t - x  \r\nnext\x0bline\x0c\x1c\x1d\x1e\x85end\u2028"
    assert reports._CONTROL_BUT_ENDINGS.search(plain) is None
    assert _clean_lines(plain) == ["FAILED a.py::t - x", "next", "line", "", "", "", "", "end"]
    coloured = "\x1b[31mFAILED\x1b[0m a.py::t\x07 - x\n"
    assert reports._CONTROL_BUT_ENDINGS.search(coloured) is not None
    assert _clean_lines(coloured) == ["FAILED a.py::t - x"] == [strip_terminal(coloured).rstrip()]
