"""Cutting a text short without cutting a secret in two.

Every text the package shortens for a message or an output (an argument echoed in an error, a
failure message over its limit, a long test id or path) is cut here. A cut that falls inside
a secret would keep the secret's first characters, which the secret screen, run afterwards on
the whole output, no longer recognises (``ghp_`` and 20 of its 36 characters is not a token to
any rule): so the cut is moved back to where that secret starts, and the secret is left out
whole. The texts kept still pass the screen where they are output; nothing is redacted here.
"""

from __future__ import annotations

__all__ = ["cut_point", "shorten"]


def cut_point(text: str, limit: int) -> int:
    """The number of characters (code points) of ``text`` to keep when it is cut to at most
    ``limit`` (``limit >= 0``): ``limit``, or less when the cut would fall inside a secret
    (:func:`bugcontext.core.secrets.find_secrets` of the whole ``text``), then the start of
    that secret. ``len(text)`` when it fits. Linear in ``len(text)``."""
    if len(text) <= limit:
        return len(text)
    from bugcontext.core.secrets import find_secrets, unglued

    cut = limit
    # Also as the screen reads it with escapes ungluing a token (``\\x01ghp_...``): the same
    # characters at the same places, so its secrets' offsets are those of ``text``.
    blanked = unglued(text)
    for read in (text, blanked) if blanked != text else (text,):
        for secret in find_secrets(read):
            if secret.start >= cut:
                break
            if secret.end > cut:
                cut = secret.start
                break
    return cut


def shorten(text: str, limit: int, ellipsis: str = "...") -> str:
    """``text`` when it has at most ``limit`` characters, else its first :func:`cut_point`
    characters followed by ``ellipsis``."""
    if len(text) <= limit:
        return text
    return text[: cut_point(text, limit)] + ellipsis
