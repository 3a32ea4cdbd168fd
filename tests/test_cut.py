"""A text cut short never keeps the first characters of a secret: the cut moves back to where
the secret starts (the screen, run on the whole output afterwards, does not know a token's
first 6 characters for one)."""

from __future__ import annotations

import pytest
from bugcontext.core._arguments import shown_text
from bugcontext.core._cut import cut_point, shorten
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import Limits
from bugcontext.core.secrets import find_secrets
from bugcontext.job._failure_block import cut_message, cut_test
from bugcontext.job.sources.paths import _shortened

TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
AWS = "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY'"


def test_the_cut_point_moves_back_to_the_start_of_a_secret_it_would_split() -> None:
    text = "x" * 190 + " " + TOKEN + " tail"
    assert [(s.start, s.end) for s in find_secrets(text)] == [(191, 231)]
    assert cut_point(text, 200) == 191
    assert cut_point(text, 191) == 191  # the cut falls just before it: kept as is
    assert cut_point(text, 231) == 231  # just after it: the whole secret is kept (then screened)
    assert cut_point(text, 230) == 191
    assert cut_point(text, 10) == 10
    assert cut_point(text, len(text)) == len(text)
    assert cut_point(TOKEN + " " + "x" * 10, 5) == 0


def test_only_the_secret_the_cut_falls_in_moves_it() -> None:
    text = TOKEN + " " + "y" * 100 + " " + AWS
    spans = [(s.start, s.end) for s in find_secrets(text)]
    assert len(spans) == 2
    inside = spans[1][0] + 7
    assert cut_point(text, inside) == spans[1][0]
    assert cut_point(text, 20) == 0  # inside the first secret
    assert cut_point(text, spans[0][1] + 3) == spans[0][1] + 3


@pytest.mark.parametrize("at", [159, 160, 170, 196, 199])
def test_shorten_never_keeps_part_of_a_token(at: int) -> None:
    text = "z" * at + " " + TOKEN + "." * 300
    short = shorten(text, 200)
    if at + 1 + len(TOKEN) <= 200:  # the whole token is kept, for the screen to redact
        assert short == text[:200] + "..." and TOKEN in short
    else:
        assert short == "z" * at + " " + "..."
        assert "ghp_" not in short


def test_every_cut_of_the_package_moves_back() -> None:
    prefix = "p" * 150 + " "
    text = prefix + TOKEN + " " + "q" * 100
    assert shown_text(text, 160) == repr(prefix) + "..."
    path = "d/" * 90 + " " + TOKEN + "/x.py"
    assert _shortened(path) == "d/" * 90 + " ..."
    assert cut_message(text, 170) == (f"{prefix}\n[... {len(text) - 151} characters cut]", len(text) - 151)
    assert cut_test(text, 170) == (f"{prefix} [... {len(text) - 151} characters cut]", len(text) - 151)
    short = "1" * 30 + " " + TOKEN
    with pytest.raises(InvalidInputError) as info:
        Limits.parse([f"max_candidates={short}"])
    assert str(info.value) == "input field 'max_candidates': must be an int, got '" + "1" * 30 + " ...'"
