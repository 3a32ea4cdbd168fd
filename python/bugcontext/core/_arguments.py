"""What the command lines (``bugcontext``, its ``rerank`` and ``eval``, the pytest plugin) share
in reading their arguments: whole-number options and integers of JSON input, read so that a
value of any length gives a short error (never a 5,000-digit echo, nor Python's own advice on
``sys.set_int_max_str_digits``), and JSON objects whose keys are each given once (the
command's input, a trace)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from bugcontext.core._cut import cut_point, shorten

__all__ = [
    "MAX_OPTION_DIGITS",
    "add_unit_options",
    "json_int",
    "shown_text",
    "unique_keys",
    "whole_number",
]

#: The most digits a whole-number option takes: 2**64 has 20, and every setting is below it.
MAX_OPTION_DIGITS = 20


def shown_text(text: str, limit: int = 40) -> str:
    """``repr(text)``, cut after ``limit`` characters (``'12345...'``)."""
    return repr(text) if len(text) <= limit else repr(text[: cut_point(text, limit)]) + "..."


def whole_number(minimum: int = 0) -> Callable[[str], int]:
    """An ``argparse`` type: a whole number (ASCII digits, an optional sign, at most
    :data:`MAX_OPTION_DIGITS` digits) of at least ``minimum``; anything else is an
    ``ArgumentTypeError`` that shows the value cut short."""

    def parse(text: str) -> int:
        body = text.strip()
        digits = body[1:] if body[:1] in ("+", "-") else body
        if digits.isascii() and digits.isdigit() and len(digits) <= MAX_OPTION_DIGITS:
            value = int(body)
            if value >= minimum:
                return value
        wanted = f"a whole number >= {minimum}"
        if len(digits) > MAX_OPTION_DIGITS and digits.isascii() and digits.isdigit():
            wanted += f" of at most {MAX_OPTION_DIGITS} digits"
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {shown_text(text)}")

    return parse


def json_int(text: str) -> int:
    """``json.loads``'s ``parse_int``: ``int(text)``, or a ``ValueError`` naming the number of
    digits when Python would refuse to read that many (``sys.get_int_max_str_digits``)."""
    most = sys.get_int_max_str_digits()
    digits = len(text.lstrip("-"))
    if most and digits > most:
        raise ValueError(f"an integer of {digits} digits (at most {most} are read)")
    return int(text)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: a JSON object as a ``dict``; a ``ValueError``
    naming a key given twice in it (shown in at most 80 characters)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                shown = json.dumps(key)
                if len(shown) > 80:
                    shown = shorten(shown, 76, '..."')
                raise ValueError(f"key {shown} given twice in one object")
            seen.add(key)
    return obj


def add_unit_options(parser: Any, default: str | None) -> None:
    """Add ``--cost chars|tokens`` (default ``default``) and ``--encoding``, the budget's unit,
    to an ``argparse`` parser or group (``build``, ``context``, ``rerank``)."""
    parser.add_argument(
        "--cost",
        choices=["chars", "tokens"],
        default=default,
        help="the budget's unit: characters (default) or tokens",
    )
    parser.add_argument(
        "--encoding",
        choices=["o200k_base", "cl100k_base"],
        default=None,
        help="token encoding with --cost tokens (default o200k_base)",
    )
