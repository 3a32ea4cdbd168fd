"""Faults the fuzz targets (``tests/fuzz``, ``scripts/fuzz.sh``) found, each as the small
input that shows it and the exact right value. The inputs that found them are in the fuzz
corpora too (``tests/test_fuzz_corpus.py`` replays them through the targets' invariants)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bugcontext.core.secrets import Secret, find_secrets, redact
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.pytest_log import parse_pytest_log
from bugcontext.job.sources.reports import Frame, LogFormatError
from bugcontext.job.sources.runs import parse_junit_xml, parse_test_output

TRACEBACK = """\
Traceback (most recent call last):
  File "pkg/app.py", line {outer}, in main
    run()
  File "pkg/calc.py", line {inner}, in run
    raise ValueError("bad")
ValueError: bad
"""


def test_a_frame_at_line_zero_is_unusable() -> None:
    """Lines are 1-based: ``line 0`` (or ``path:0:``) names no line of any file, like a line
    past ``2**31 - 1``; such a frame is dropped, not passed on as line 0."""
    (failure,) = parse_pytest_log(TRACEBACK.format(outer=0, inner=7))
    assert failure.frames == (Frame("pkg/calc.py", 7, "run", 0),)
    assert (failure.exception_type, failure.message) == ("ValueError", "bad")
    assert parse_pytest_log(TRACEBACK.format(outer=0, inner="000")) == []
    (failure,) = parse_pytest_log("pkg/calc.py:0: in run\npkg/calc.py:3: ValueError\n")
    assert failure.frames == (Frame("pkg/calc.py", 3, None, 0),)


STAMP = "2024-05-01T10:00:00.1234567Z "
BARE = 'Traceback (most recent call last):\n  File "pkg/calc.py", line 3, in run\nValueError: bad\n\nDone.\n'


def test_a_time_stamped_empty_line_is_empty() -> None:
    """A CI log stamps every line; an empty line's stamp loses its blank when trailing
    blanks are stripped, and it still ends the message of a bare traceback. The same for a
    pytest-xdist ``[gw0]`` prefix alone on a line."""
    expected = parse_pytest_log(BARE)
    (failure,) = expected
    assert failure.message_lines == ("ValueError: bad",)
    assert failure.frames == (Frame("pkg/calc.py", 3, "run", 0),)
    stamped = "".join(STAMP + line + "\n" for line in BARE.splitlines())
    assert parse_pytest_log(stamped) == expected
    assert parse_pytest_log(stamped.replace(STAMP + "\n", STAMP.rstrip() + "\n")) == expected
    prefixed = "".join("[gw0] " + line + "\n" for line in BARE.splitlines())
    assert parse_pytest_log(prefixed) == expected


@pytest.mark.parametrize(
    ("encoding", "problem"),
    [
        ("utf-9", "unknown encoding: utf-9"),
        ("rot13", "'rot13' is not a text encoding; use codecs.decode() to handle arbitrary codecs"),
        ("mbcs", "unknown encoding: mbcs"),
    ],
)
def test_junit_with_an_unknown_encoding_is_a_log_format_error(encoding: str, problem: str) -> None:
    """The XML declaration names an encoding Python does not have (or one that is not a
    text encoding): the document is unreadable JUnit, ``LogFormatError`` as documented, not
    the parser's ``LookupError``."""
    data = f'<?xml version="1.0" encoding="{encoding}"?><testsuite><testcase name="t"/></testsuite>'.encode()
    with pytest.raises(LogFormatError) as caught:
        parse_junit_xml(data)
    assert str(caught.value) == f"invalid JUnit XML: {problem}"
    with pytest.raises(LogFormatError):
        parse_test_output(data)
    with pytest.raises(LogFormatError):
        parse_test_output("", junit_xml=data)


def test_a_gitignore_pattern_re_cannot_compile_is_left_out(tmp_path: Path) -> None:
    """``[z-a]`` (a character range whose end is below its start) makes pathspec pass on
    Python's ``re.error``, which is no ``ValueError``: reading the rules raised it and the
    whole repository could not be listed. The pattern matches nothing and is left out; the
    other rules apply."""
    (tmp_path / ".gitignore").write_text("[z-a].py\n*.log\n![9-0]keep.log\n")
    for name in ("a.py", "z.py", "x.log", "9keep.log"):
        (tmp_path / name).write_text("x = 1\n")
    assert Repository(tmp_path).files() == [".gitignore", "a.py", "z.py"]


J = "".join
# Assembled from harmless pieces, as in test_secrets.py: no line of this file is a secret.
PASSWORD = J(["Zq8vX2mK", "9pL4rT7w"])
STRIPE = J(["sk", "_live_", "4eC39HqLyjWDarjtT1zdp7dc"])


def test_an_assignment_inside_a_rejected_value_is_found() -> None:
    """The generic rule's value ran over ``&password=...``: the first value
    (``abc&password=...``) holds ``pass`` and is a placeholder, and the search went on after
    it, so the password was never seen; redacting something before it (or nothing) changed
    what was found. Values now end at ``=`` and ``:``, and each search starts where the
    value before it starts."""
    text = f"url = '/login?token=abc&{'pass'}word={PASSWORD}'\n"
    assert find_secrets(text) == [Secret(33, 49, "generic-secret")]
    assert text[33:49] == PASSWORD
    assert redact(text).text == "url = '/login?token=abc&password=[REDACTED: generic-secret]'\n"
    # The fuzz input: a rejected value (holding `pass` and undecodable bytes) ran into the
    # assignment after it; once the text before it was redacted, the secret appeared.
    tail = f'stripe.api_key = `{STRIPE}\udcb7R\x00password = "{PASSWORD[:8]}\x01{PASSWORD[8:]}"\n'
    once = redact(tail)
    assert once.kinds == ("StripeDetector", "generic-password")
    assert once.text == (
        'stripe.api_key = `[REDACTED: StripeDetector]\udcb7R\x00password = "[REDACTED: generic-password]"\n'
    )
    assert redact(once.text).text == once.text


def test_redaction_repeats_until_no_secret_is_left() -> None:
    """A keyword value that is not a secret as a whole (``.../test``: a placeholder word) can
    hold a token; replacing the token cut the value at ``[REDACTED``, and what was left of it
    was a secret in the output. ``redact`` now scans its own result again until nothing is
    found. Since issue 17 a placeholder word inside a value no longer makes it a placeholder:
    the whole value is one secret, and nothing of it is left."""
    text = f"api_key = {PASSWORD}/{STRIPE}/test\n"
    assert find_secrets(text) == [Secret(10, 64, "generic-secret")]
    done = redact(text)
    assert done.text == "api_key = [REDACTED: generic-secret]\n"
    assert done.kinds == ("generic-secret",)
    assert find_secrets(done.text) == []
