"""Secrets in text: where they are, and the text with them redacted.

One detector serves the whole program: the reader (:mod:`repo_context.sources.files`) refuses a
file in which it finds a secret, and every text that leaves the program (the Markdown context
and its summary, the JSON output, error messages, the pytest plugin's files) passes through
:func:`redact` on its way out.

The detector is the Rust ``regex`` crate behind ``repo_context._core.secret_spans``: every rule
runs in time linear in the text, whatever the text (no backtracking). The rules, one per kind
(:data:`KINDS`), re-implement the published rules of gitleaks and detect-secrets:

=======================  =====================================================================
kind                     what is detected
=======================  =====================================================================
private-key              a ``-----BEGIN ... PRIVATE KEY-----`` block (to its ``END`` line when
                         the body is plain base64), a PuTTY key file header
aws-access-key-id        ``AKIA``/``ASIA``/``ABIA``/``ACCA`` and 16 upper-case letters or digits
aws-secret-access-key    40 base64 characters assigned to ``aws_secret_access_key``
github-token             ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and 36-255 letters or
                         digits; ``github_pat_`` and 22 or more
gitlab-token             ``glpat-``, ``gldt-``, ``glrt-``, ``glptt-``, ``glft-``, ``glsoat-``,
                         ``glcbt-`` and 20 or more characters
slack-token              ``xoxa-``/``xoxb-``/``xoxe-``/``xoxo-``/``xoxp-``/``xoxr-``/``xoxs-``
                         and 10 or more characters; ``xapp-`` app tokens
slack-webhook            ``hooks.slack.com/services/`` (or ``workflows``, ``triggers``) URLs
google-api-key           ``AIza`` and 35 characters
stripe-key               ``sk_``/``rk_`` then ``live_``/``test_``/``prod_`` and 20 or more
npm-token                ``npm_`` and 36 letters or digits
pypi-token               ``pypi-AgEIcHlwaS5vcmc`` (or TestPyPI's) and 50 or more characters
anthropic-key            ``sk-ant-`` (``api03-``, ``admin01-`` ...) and 20 or more characters
openai-key               ``sk-proj-``/``sk-svcacct-``/``sk-admin-`` and 40 or more characters;
                         any ``sk-`` key holding ``T3BlbkFJ``
huggingface-token        ``hf_`` (or ``api_org_``) and 30-40 letters or digits
azure-storage-key        ``AccountKey=`` and 86-90 base64 characters
jwt                      ``eyJ...`` ``.`` ``eyJ...`` ``.`` signature (a JSON Web Token)
url-password             the password of ``scheme://user:password@host``
generic-secret           a value of 16 or more characters, with letters and digits and a
                         Shannon entropy of at least 3.5 bits per character, assigned (``=``,
                         ``:``, ``:=``, ``=>``, ``==``) to a name holding ``password``,
                         ``passwd``, ``passphrase``, ``pwd``, ``secret``, ``token``,
                         ``api_key``, ``access_key``, ``auth_key``, ``private_key`` or
                         ``credential``; the value ends at a blank, a quote, a bracket,
                         ``,``, ``;``, ``=`` or ``:``, and an assignment inside the value of
                         another (``token=abc&password=...``) is found too
=======================  =====================================================================

A token must stand alone: a letter or digit right before or after it (``XAKIA...``) makes it
part of a longer word. ``url-password`` and ``generic-secret`` skip placeholders: template and
variable references (``${X}``, ``{{x}}``, ``%(x)s``, ``$X``, ``<x>``), one repeated character,
values holding ``example``, ``placeholder``, ``changeme``, ``dummy``, ``fake``, ``sample``,
``your``, ``xxxx``, ``redacted``, ``test``, ``pass``, ``secret``, ``token`` or ``todo``, dotted
names (``os.environ``) and snake-case constant names; AWS's documented example key ids (ending
in ``EXAMPLE``) are not secrets. Offsets are characters (code points).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._core import SECRET_KINDS, secret_spans

__all__ = [
    "KINDS",
    "SECRET_REDACTED",
    "Redaction",
    "Secret",
    "find_secrets",
    "redact",
    "redact_json",
    "redact_text",
    "redaction",
    "redaction_note",
]

#: The kinds of secret detected, in rule order (see the module docstring).
KINDS: tuple[str, ...] = tuple(SECRET_KINDS)


@dataclass(frozen=True)
class Secret:
    """A secret found in a text: characters ``start..end`` (code points, half-open) are a
    secret of kind ``kind`` (one of :data:`KINDS`)."""

    start: int
    end: int
    kind: str


def find_secrets(text: str) -> list[Secret]:
    """Every secret in ``text``, sorted by ``start``, never overlapping (overlapping findings
    are merged under the kind of the first). Linear in ``len(text)``. Raises ``TypeError`` if
    ``text`` is not a ``str``."""
    return [Secret(start, end, kind) for start, end, kind in secret_spans(text)]


def redaction(kind: str) -> str:
    """The text that replaces a secret of kind ``kind``: ``[REDACTED: kind]``."""
    return f"[REDACTED: {kind}]"


@dataclass(frozen=True)
class Redaction:
    """``text`` with every secret replaced, and the kinds replaced (in order, repeated)."""

    text: str
    kinds: tuple[str, ...]


def redact(text: str) -> Redaction:
    """``text`` with every secret (:func:`find_secrets`) replaced by :func:`redaction` of its
    kind, the line endings inside a secret (a private key block) kept after the replacement, so
    that the text keeps its lines; and the kinds replaced. Repeated until the text holds no
    secret (a replacement can cut a longer value that was not a secret into one that is), so
    ``find_secrets(redact(text).text) == []``. A text without secrets is returned as it is."""
    found = secret_spans(text)
    if not found:
        return Redaction(text, ())
    kinds: list[str] = []
    # Until nothing is found: replacing a secret inside the value of a keyword assignment
    # that was not a secret as a whole (its value held a placeholder word further on) cuts
    # the value at the replacement, and what is left of it may be one. Each pass replaces
    # characters of the text itself (a replacement holds no secret), so this ends.
    while found:
        parts: list[str] = []
        at = 0
        for start, end, kind in found:
            secret = text[start:end]
            endings = "".join(line[len(line.rstrip("\r\n")) :] for line in secret.splitlines(keepends=True))
            parts += [text[at:start], redaction(kind), endings]
            at = end
        parts.append(text[at:])
        text = "".join(parts)
        kinds.extend(kind for _, _, kind in found)
        found = secret_spans(text)
    return Redaction(text, tuple(kinds))


def redact_text(text: str) -> str:
    """``redact(text).text``: ``text`` with its secrets replaced."""
    return redact(text).text


#: Why a secret was replaced in an output (``"policy_redacted"`` records).
SECRET_REDACTED = "policy: secret in the output"


def redaction_note(kinds: Sequence[str]) -> str:
    """The line that reports the secrets redacted from an output (``kinds`` as
    :attr:`Redaction.kinds`)."""
    n = len(kinds)
    return f"{n} secret{'s' if n != 1 else ''} redacted from this output (reason policy): " + ", ".join(
        dict.fromkeys(kinds)
    )


def redact_json(value: Any, where: str = "$") -> tuple[Any, list[dict[str, str]]]:
    """``value`` (a JSON value: ``dict``, ``list``, ``str``, numbers) with every secret in a
    string, keys included, replaced by ``[REDACTED: kind]``; and one record per secret:
    ``{"where": JSONPath of the string, "kind", "reason": "policy", "why": "policy: secret in
    the output"}``. ``value`` is not changed."""
    found: list[dict[str, str]] = []

    def walk(item: Any, at: str) -> Any:
        if isinstance(item, str):
            done = redact(item)
            found.extend(
                {"where": at, "kind": kind, "reason": "policy", "why": SECRET_REDACTED} for kind in done.kinds
            )
            return done.text
        if isinstance(item, dict):
            return {walk(k, f"{at}.<key>"): walk(v, f"{at}.{k}") for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v, f"{at}[{i}]") for i, v in enumerate(item)]
        return item

    return walk(value, where), found
