"""Verified provenance: a candidate's window checked against the file it claims to come from.

A line range alone does not prove its content. A candidate may carry two optional fields:

* ``source_sha256``: the SHA-256 (64 lower-case hex digits) of the bytes of the file its
  content was read from;
* ``source_id``: which source proposed it (a non-empty ``str`` of at most
  :data:`MAX_SOURCE_ID` characters: the parser, the reference analyser, the search tool, a
  plug-in).

They are read like ``group`` (a mapping key, an attribute, or the keyword-only fields of
:class:`~bugcontext.Candidate`; a missing one is ``None``), validated with the other fields
(:class:`~bugcontext.InvalidCandidateError` naming the index and field), and kept on the
selected items (``Candidate.source_sha256``, ``source_id``, the JSON form, the result digest).

Given a reader (``build(input, verify=reader)``: a callable ``path -> bytes | None`` called
with each canonical path once, in order of first appearance, after validation and before
ranking), every candidate is checked, whether or not it carries ``source_sha256``: it is
**stale** when its file is missing (``None``), when its ``source_sha256`` is not the SHA-256 of
the bytes read, or when its content is not exactly the file's lines ``start..end``. A stale
candidate is omitted with reason ``"stale"`` at its rank; it takes no budget and blocks no
other window. So a plug-in cannot pass off arbitrary text as code, and a window does not
survive an edit of its file. Without a reader the fields are carried and not checked.

The file's lines (:func:`file_lines`) are cut as the sources in :mod:`bugcontext.job.sources`
cut windows: the bytes decoded as UTF-8 with a leading byte-order mark dropped and invalid
bytes kept as lone surrogates (``surrogateescape``), split after ``\\n``, ``\\r\\n`` and a
lone ``\\r``, each line keeping its line ending. A Python file that declares another encoding
(PEP 263) is checked as UTF-8 all the same, so its non-ASCII windows are stale: pass a reader
that returns the file re-encoded as UTF-8, and stamp the SHA-256 of what it returns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from bugcontext.core.errors import InvalidInputError

__all__ = ["MAX_SOURCE_ID", "FolderReader", "Reader", "check_verify", "file_lines", "folder_reader"]

#: Longest ``source_id`` accepted, in characters (code points).
MAX_SOURCE_ID = 256

#: One line with its ending, as ``bugcontext.job.sources.files.split_lines`` cuts them.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

#: A ``verify`` reader: the current bytes of the file at a canonical path, or ``None``.
Reader = Callable[[str], "bytes | None"]


def check_verify(verify: object) -> None:
    """Check the ``verify`` argument of ``build``.

    Raises:
        InvalidInputError: ``field`` ``"verify"``: not ``None`` and not callable.
    """
    if verify is not None and not callable(verify):
        raise InvalidInputError("verify", f"must be callable or None, not {type(verify).__name__}")


def file_lines(data: bytes) -> tuple[str, ...]:
    """The lines of a file's bytes as the check sees them: UTF-8, a leading BOM dropped, invalid
    bytes as lone surrogates, split after ``\\n``, ``\\r\\n`` and a lone ``\\r`` (line endings
    kept; ``lines[0]`` is line 1)."""
    return tuple(_LINE.findall(data.decode("utf-8-sig", errors="surrogateescape")))


class FolderReader:
    """The ``verify`` reader of :func:`folder_reader`: ``root`` is its folder, resolved. A
    build that writes a trace (``build(input, trace=PATH, verify=folder_reader(root))``)
    refuses a ``PATH`` that is a file under ``root`` (the check of ``build --verify-root``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, path: str) -> bytes | None:
        base = self.root
        try:
            target = (base / path).resolve()
            if not target.is_relative_to(base) or not target.is_file():
                return None
            return target.read_bytes()
        except (OSError, RuntimeError, ValueError):  # unreadable, a loop of links, a NUL
            return None


def folder_reader(root: str | os.PathLike[str]) -> Reader:
    """A ``verify`` reader over the files under ``root``: ``reader(path)`` is the bytes of the
    regular file ``root/path``, or ``None`` when it does not exist, cannot be read, is not a
    regular file or resolves (through a symbolic link) outside ``root``.

    Raises:
        InvalidInputError: field ``root``: not a ``str`` or ``os.PathLike``, a NUL character,
            or a path the system refuses to resolve (a loop of symbolic links).
    """
    from bugcontext.core._io import path_argument, path_error

    text = path_argument("root", root, "a folder")
    try:
        base = Path(text).resolve()
    except (OSError, RuntimeError) as exc:
        raise path_error("root", text, exc) from None
    return FolderReader(base)
