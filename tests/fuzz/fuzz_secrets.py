"""Fuzz target: the secret detector (``bugcontext.core.secrets``, Rust ``regex`` rules).

The input is a text as bytes in reverse order (UTF-8 once turned around; undecodable bytes
kept as lone surrogates, as the reader keeps them): the committed corpus holds realistic
secrets, and stored backwards none of its files is a secret to a scanner. Invariants:

* ``find_secrets`` and ``redact`` raise nothing for any ``str``;
* the secrets are sorted, inside the text, non-empty and never overlapping, each of a
  known kind;
* the plain reading (``secrets._redact_plain``) replaces exactly those spans by
  ``[REDACTED: kind]`` (the line endings inside a secret kept after it), again on its result
  until nothing is found, so the text keeps its lines, and lists their kinds in order;
* ``redact`` is that plain reading, exactly, for a text that none of its other readings applies
  to (no backslash, ``&``, ``" | "``, ``PRIVATE KEY`` or ``base64`` in it: escapes, XML
  references, numbered lines, a private key's tail, base64 fields); for any text it keeps the
  lines, leaves nothing any reading finds (``redact`` of its result is that result, with no
  kind) and nothing ``find_secrets`` finds; a text without secrets to any reading is returned
  as it is;
* ``redact_json`` redacts a string like ``redact``;
* bounded time per input byte (the rules are documented linear).

Run: ``python tests/fuzz/fuzz_secrets.py [libFuzzer arguments] [corpus folders]``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fuzz_main, instrumented

with instrumented():
    from bugcontext.core import secrets
    from bugcontext.job.sources.files import split_lines


#: What the other readings of ``redact`` look for first (see the module docstring).
_OTHER_READINGS = ("\\", "&", " | ", "PRIVATE KEY", "base64")


def check(data: bytes) -> None:
    """One text: the invariants in the module docstring."""
    text = data[::-1].decode("utf-8", errors="surrogateescape")
    found = secrets.find_secrets(text)
    at = 0
    for secret in found:
        assert secret.kind in secrets.KINDS, secret
        assert at <= secret.start < secret.end <= len(text), (secret, at, len(text))
        at = secret.end

    done = secrets.redact(text)
    other = any(mark in text for mark in _OTHER_READINGS)
    if not found and not other:
        assert done.text is text
    expected, kinds = text, []
    while found:  # each pass replaces exactly the spans found, until none is found
        parts: list[str] = []
        at = 0
        for secret in found:
            inside = expected[secret.start : secret.end]
            # A "\n" completing a "\r" before the secret stays before the replacement; the
            # secret's own endings follow it, a lone "\r" as "\n" unless it ends the secret.
            lead = ""
            if inside.startswith("\n") and secret.start > 0 and expected[secret.start - 1] == "\r":
                lead, inside = "\n", inside[1:]
            ends = re.findall(r"\r\n|\r|\n", inside)
            ends = [
                e if e != "\r" or (i == len(ends) - 1 and inside.endswith("\r")) else "\n"
                for i, e in enumerate(ends)
            ]
            marker = secrets.redaction(secret.kind)
            if secret.end == len(expected) and ends and not inside.endswith(("\n", "\r")):
                # The secret ends the text on a line without an ending: the replacement goes
                # on that line, after the endings (else the line would be lost).
                if not lead and secret.start > 0 and expected[secret.start - 1] == "\r" and ends[0] == "\n":
                    ends[0] = "\r\n"  # not "\n", which would complete the "\r" before it
                parts += [expected[at : secret.start], lead, "".join(ends), marker]
            else:
                parts += [expected[at : secret.start], lead, marker, "".join(ends)]
            at = secret.end
        parts.append(expected[at:])
        expected = "".join(parts)
        kinds += [secret.kind for secret in found]
        found = secrets.find_secrets(expected)
    plain = secrets._redact_plain(text)
    assert plain.text == expected
    assert plain.kinds == tuple(kinds)
    if not other:
        assert done.text == expected
        assert done.kinds == tuple(kinds)
    assert all(kind in secrets.KINDS for kind in done.kinds), done.kinds
    if not done.kinds:
        assert done.text is text
    assert len(split_lines(done.text)) == len(split_lines(text)), "redacting changed the line count"
    assert secrets.find_secrets(done.text) == []

    again = secrets.redact(done.text)
    assert again.text == done.text, f"redacted text still holds secrets: {again.kinds}"
    assert again.kinds == ()
    value, records = secrets.redact_json({"k": text})
    assert value == {"k": done.text}
    assert [record["kind"] for record in records] == list(done.kinds)


if __name__ == "__main__":
    fuzz_main(check)
