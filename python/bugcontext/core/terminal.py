"""Terminal control sequences in text that was written for a terminal (test logs, a re-run's
output): found in one place, so that every reader strips (or masks) the same ones.

:data:`TERMINAL_SEQUENCE` matches, after ECMA-48 (the standard behind ANSI escapes): a control
sequence (CSI: ``ESC [`` or ``U+009B``, parameters, a final byte: colours, cursor movement); a
control string (OSC ``ESC ]`` — window titles, ``OSC 8`` hyperlinks —, and DCS, SOS, PM, APC:
``ESC P``, ``ESC X``, ``ESC ^``, ``ESC _``, or their one-character C1 forms) up to its
terminator (``BEL``, ``ESC \\`` or ``U+009C``), or to the end of the line when it has none; and
any other escape sequence (ECMA-35: ``ESC``, intermediate bytes, a final byte: ``ESC ( B``).
Each repetition is possessive (linear time on any text).
"""

from __future__ import annotations

import re

__all__ = ["CONTROL_CHARACTERS", "TERMINAL_SEQUENCE", "strip_terminal"]

TERMINAL_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*+[ -/]*+[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*+(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*+[0-~]?"
)
#: The control characters left once the sequences are gone (C0 but tab and line feed, DEL, C1):
#: a terminal acts on them (a bell, a carriage return over the line) and they carry no text.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_terminal(text: str) -> str:
    """``text`` without terminal sequences (:data:`TERMINAL_SEQUENCE`) and without the control
    characters left after them (:data:`CONTROL_CHARACTERS`); tabs and line feeds stay."""
    return CONTROL_CHARACTERS.sub("", TERMINAL_SEQUENCE.sub("", text))
