"""The result digest and the input cache key: SHA-256 over a specified byte form.

An agent that checkpoints the context it acted on keeps the result's **digest**; on resume it
rebuilds and compares. The digest covers what reaches the prompt: each selected item's
canonical path, line range, content (as its SHA-256) and reason, in selection order, with the
failing files (they decide each block's label), the cost model (it decides the rendering and
the budget's unit) and :data:`POLICY_VERSION`. Scores, omissions, times and object identities
play no part, so equal selections give equal digests in every process, on every platform, from
both engines; the digest is also a key for a model's prompt cache.

The **cache key** of an input covers what decides the result: every candidate in input order
(order matters: the input index breaks rank ties), its canonical path, range, content hash,
reason and score (its exact value and type: the result carries it as given), the failing
files, the budget and the cost model, the policy version and, for a build with a ``verify``
reader, the reader's state (the SHA-256 of each file as the reader returned it). A caller that
has built an input with the same key can skip the build.

This module is the executable form of the byte form; the Rust engine (``src/digest.rs``)
computes the same bytes. Notation (integers unsigned, big-endian):

* ``S(x)``: text as UTF-8, a lone surrogate as its 3-byte form (``x.encode("utf-8",
  "surrogatepass")``), preceded by its byte length as 8 bytes.
* ``O(x)``: ``0x00`` for ``None``, else ``0x01 S(x)``. ``U(n)``: ``n`` as 8 bytes.
  ``B(b)``: one byte ``0x01`` or ``0x00``.
* ``H(x)``: the 32-byte SHA-256 of ``x``'s bytes as in ``S`` (without the length).
* ``F(s)``: the IEEE 754 binary64 bits of ``float(s) + 0.0`` as 8 bytes (``-0.0`` as ``0.0``).
* ``COST``: ``S(unit) O(encoding) O(template) B(line_numbers) S(order)``.
* ``FILES``: ``U(k)`` then ``S(f)`` for each of the ``k`` canonical failing files, in error order.

Digest: lower-case hex SHA-256 of ``S("repo-context result v1") S(POLICY_VERSION) COST FILES
U(m)`` then, per item, ``S(path) U(start) U(end) H(content) S(reason)``. Cache key: of
``S("repo-context input v1") S(POLICY_VERSION) COST U(min(budget, 2**64 - 1)) FILES U(n)``
then, per candidate, ``S(path) U(start) U(end) H(content) S(reason) F(score)``. Reasons are
their plain text (``str.__str__``), paths canonical.

Provenance (v2, a compatible extension): when some item of the result (some candidate of the
input) carries ``source_sha256`` or ``source_id`` (see :mod:`bugcontext.core.provenance`), the tag
is ``"repo-context result v2"`` (``"repo-context input v2"``) and each item (candidate) is
followed by ``O(source_sha256) O(source_id)``. Without provenance the v1 form is unchanged, so
earlier digests and keys stay valid; with it, a change of an item's provenance changes the
digest.

Groups (a compatible extension of the key): when some candidate of the input has a ``group``,
the key's form ends with ``S("groups") U(n)`` and, per candidate in input order, ``U(g)``: ``0``
for no group, else ``1 +`` the group's dense id (groups numbered in order of first appearance,
equal ids by ``==`` and ``hash`` as in a ``dict``). That is the partition of the candidates into
groups, which is what a group decides (its id's value plays no part). Without groups the form is
unchanged. The digest does not change: a group decides which items are selected, not what they
are.

Exact scores (a compatible extension of the key): ``F`` is the score as a float, which is how
both engines rank it, but a result carries each score as given, so ``1`` and ``1.0``, ``0.0``
and ``-0.0``, or two integers above ``2**53`` that round to one float, give different results.
When some candidate's score is an ``int`` or ``-0.0``, the key's form then ends (after the
groups) with ``S("scores") U(n)`` and, per candidate in input order, ``0x00`` for a float other
than ``-0.0`` (its bits are ``F``'s), ``0x01`` for ``-0.0``, ``0x02 S(d)`` for an ``int``, ``d``
its decimal digits (``-`` first when negative). An input of floats other than ``-0.0`` keeps
its key. (``bool`` is not a score: both engines refuse it.)

Verified (a compatible extension of the key): a build with a ``verify`` reader omits as
``stale`` the candidates its files no longer hold, so its key is that of the input and the
reader's state: ``cache_key(input, verify=reader)`` calls the reader as the build does (once
per canonical path, in order of first appearance) and the form ends with ``S("verified") U(p)``
and, per path in that order, ``O(h)``, ``h`` the hex SHA-256 of the bytes returned (``0x00``:
``None``, a missing file). Equal keys, equal files, equal results; a key without ``verify`` is
that of a build without a reader.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bugcontext._core import POLICY_VERSION

__all__ = [
    "INPUT_TAG",
    "INPUT_TAG_V2",
    "POLICY_VERSION",
    "RESULT_TAG",
    "RESULT_TAG_V2",
    "input_key",
    "result_digest",
    "verified_files",
]

#: Domain tag of a result digest.
RESULT_TAG = "repo-context result v1"
#: Domain tag of an input cache key.
INPUT_TAG = "repo-context input v1"
#: Domain tag of a result digest whose items carry provenance.
RESULT_TAG_V2 = "repo-context result v2"
#: Domain tag of an input cache key whose candidates carry provenance.
INPUT_TAG_V2 = "repo-context input v2"
_U64_MAX = (1 << 64) - 1


def _bytes(text: str) -> bytes:
    return str.__str__(text).encode("utf-8", "surrogatepass")


def _s(text: str) -> bytes:
    data = _bytes(text)
    return len(data).to_bytes(8, "big") + data


def _o(text: str | None) -> bytes:
    return b"\x00" if text is None else b"\x01" + _s(text)


def _u(number: int) -> bytes:
    return number.to_bytes(8, "big")


def _head(tag: str, cost: Any, budget: int | None, failure_files: Sequence[str]) -> bytes:
    parts = [
        _s(tag),
        _s(POLICY_VERSION),
        _s(cost.unit),
        _o(cost.encoding),
        _o(cost.template),
        b"\x01" if cost.line_numbers else b"\x00",
        _s(cost.order),
    ]
    if budget is not None:
        parts.append(_u(min(budget, _U64_MAX)))
    parts.append(_u(len(failure_files)))
    parts.extend(_s(path) for path in failure_files)
    return b"".join(parts)


def _window(path: str, start: int, end: int, content: str, reason: str) -> bytes:
    return b"".join((_s(path), _u(start), _u(end), hashlib.sha256(_bytes(content)).digest(), _s(reason)))


def result_digest(result: Any) -> str:
    """The digest of a :class:`~bugcontext.BuildResult` (64 lower-case hex digits).

    Equal to ``result.digest``, which the extension computes from the same bytes.
    """
    items = result.items
    provenance = [(getattr(item, "source_sha256", None), getattr(item, "source_id", None)) for item in items]
    v2 = any(sha is not None or source is not None for sha, source in provenance)
    form = hashlib.sha256(_head(RESULT_TAG_V2 if v2 else RESULT_TAG, result.cost, None, result.failure_files))
    form.update(_u(len(items)))
    for item, (sha, source) in zip(items, provenance, strict=True):
        form.update(_window(item.path, item.start, item.end, item.content, item.reason))
        if v2:
            form.update(_o(sha) + _o(source))
    return form.hexdigest()


def _score_form(score: int | float) -> bytes:
    """A candidate's entry in the ``"scores"`` extension: ``0x00`` for a float other than
    ``-0.0`` (its bits are ``F``'s), ``0x01`` for ``-0.0``, ``0x02 S(decimal)`` for an ``int``."""
    if isinstance(score, int):
        return b"\x02" + _s(int.__repr__(score))
    return b"\x01" if score == 0.0 and math.copysign(1.0, score) < 0 else b"\x00"


def input_key(
    rows: Iterable[tuple[Any, ...]],
    count: int,
    budget: int,
    failure_files: Sequence[str],
    cost: Any,
    groups: Sequence[int] = (),
    verified: Sequence[str | None] | None = None,
) -> str:
    """The cache key of a validated input: ``count`` rows ``(canonical path, start, end,
    content, reason text, score)`` or ``(..., score, source_sha256, source_id)`` in input order
    (each score the exact ``int`` or ``float`` the input holds), the budget in the cost's unit,
    the canonical failing files, the cost model, ``groups``, each candidate's dense group id
    (``-1``: none; empty: no candidate has a group) and ``verified``, the state of a ``verify``
    reader (``None``: no reader; else per canonical path in order of first appearance the hex
    SHA-256 of the bytes it returned, ``None`` for a missing file) (64 lower-case hex digits)."""
    full = [(*row, None, None) if len(row) == 6 else tuple(row) for row in rows]
    v2 = any(row[6] is not None or row[7] is not None for row in full)
    form = hashlib.sha256(_head(INPUT_TAG_V2 if v2 else INPUT_TAG, cost, budget, failure_files))
    form.update(_u(count))
    scores = []
    for path, start, end, content, reason, score, sha, source in full:
        form.update(_window(path, start, end, content, reason))
        form.update(struct.pack(">d", float(score) + 0.0))
        scores.append(_score_form(score))
        if v2:
            form.update(_o(sha) + _o(source))
    if any(g >= 0 for g in groups):
        form.update(_s("groups") + _u(len(groups)))
        for g in groups:
            form.update(_u(g + 1))
    if any(entry != b"\x00" for entry in scores):
        form.update(_s("scores") + _u(len(scores)))
        form.update(b"".join(scores))
    if verified is not None:
        form.update(_s("verified") + _u(len(verified)))
        for digest in verified:
            form.update(_o(digest))
    return form.hexdigest()


def verified_files(paths: Iterable[str], verify: Callable[[str], bytes | None]) -> list[str | None]:
    """The state of a ``verify`` reader for the key: ``verify(path)`` called once per distinct
    path of ``paths`` (canonical, in input order), in order of first appearance, as a build
    calls it; the hex SHA-256 of each file's bytes, ``None`` for a missing file.

    Raises:
        TypeError: ``verify`` returned something other than ``bytes`` or ``None``; what it
            raises propagates unchanged.
    """
    seen: set[str] = set()
    out: list[str | None] = []
    for path in paths:
        if path in seen:
            continue
        seen.add(path)
        data = verify(path)
        if data is None:
            out.append(None)
        elif isinstance(data, bytes):
            out.append(hashlib.sha256(data).hexdigest())
        else:
            raise TypeError(
                f"verify: the reader must return bytes or None, not {type(data).__name__} (for {path!r})"
            )
    return out
