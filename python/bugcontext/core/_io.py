"""Bounded reading of untrusted input and safe writing of outputs.

Reading: every file or stream the package reads on a user's behalf (a build input, a pytest
log, a JUnit XML report, an issue text, a cases file, a trace) goes through :func:`read_capped`,
which stops one byte after its limit (a setting of :class:`bugcontext.core.limits.Limits`) and
raises :class:`~bugcontext.core.errors.ResourceLimitError` naming the setting, the size found and
the setting's value, instead of reading an endless stream (``/dev/zero``, a pipe that never
ends) into memory. A path is opened by :func:`open_input`, which never waits on the open: a
named pipe no process writes to is refused at once. The repository reader has its own limit
per file (``Limits.max_file_bytes``: such a file is skipped).

Writing: :func:`write_stream` writes all of a text to a standard stream or raises
:class:`OutputError` (a full disk, a closed pipe, a closed stream: never a partial write
that passes for success). Files are written by :mod:`bugcontext.core._writer`, the one writer
of every output file (atomic replacement, links kept, devices and pipes written in place).

Names (paths, test ids) written into messages go through :func:`bugcontext.core.composer.
header_path`, the one escaping function of the package.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import sys
from pathlib import Path
from typing import IO, Any, TextIO

from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError, ScreenedError, screen
from bugcontext.core.limits import DEFAULT_LIMITS, Limits, limit_error, resolve

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_JUNIT_BYTES",
    "MAX_LOG_BYTES",
    "OutputError",
    "open_input",
    "read_capped",
    "redact_names",
    "screen_names",
    "write_stream",
]

#: The default of ``Limits.max_input_bytes`` (:mod:`bugcontext.core.limits`, where it is set):
#: 256 MiB.
MAX_INPUT_BYTES = DEFAULT_LIMITS.max_input_bytes
#: The default of ``Limits.max_log_bytes``: 64 MiB.
MAX_LOG_BYTES = DEFAULT_LIMITS.max_log_bytes
#: The default of ``Limits.max_junit_bytes``: 64 MiB.
MAX_JUNIT_BYTES = DEFAULT_LIMITS.max_junit_bytes

_CHUNK = 1 << 20


class OutputError(ScreenedError):
    """An output could not be written (a full disk, a closed pipe or stream, a target that
    may not be written). The message is one line and names the output (screened for
    secrets)."""


def read_capped(
    source: str | Path | IO[bytes] | None,
    limit: str,
    *,
    field: str,
    limits: Limits | None = None,
    what: str | None = None,
) -> bytes:
    """All the bytes of ``source`` (a file path, or an open binary stream such as
    ``sys.stdin.buffer``; ``None`` for a closed standard input), at most as many as the setting
    ``limit`` of ``limits`` (a field name of :class:`~bugcontext.core.limits.Limits`, in bytes,
    such as ``"max_log_bytes"``; ``limits`` default: ``DEFAULT_LIMITS``).

    ``field`` names the input it limits (``"pytest_log"``), ``what`` how the input is named in
    messages (default: the path, or ``"standard input"``).

    Raises:
        ResourceLimitError: the input holds more bytes than the setting allows: ``limit`` is
            the setting's name, ``maximum`` its value, ``value`` the size (a regular file's
            size, refused before reading; for a stream, ``maximum + 1``: at most that many
            bytes were read).
        InvalidInputError: naming ``field``: a path with a NUL character.
        OSError: the input cannot be opened or read (``EBADF`` for a closed standard input).
    """
    maximum: int = getattr(resolve(limits), limit)
    if source is None:
        raise OSError(errno.EBADF, "standard input is closed")
    if isinstance(source, (str, Path)):
        name = what if what is not None else str(source)
        if "\0" in str(source):
            raise InvalidInputError(field, "must not contain a NUL character (a path holds none)")
        with open_input(source) as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > maximum:
                raise limit_error(field, limit, header_path(name), info.st_size, maximum)
            return _read_stream(handle, maximum, field, name, limit)
    return _read_stream(source, maximum, field, what or "standard input", limit)


class _Prefixed(io.RawIOBase):
    """A named pipe's stream whose first bytes were read already."""

    def __init__(self, first: bytes, fd: int) -> None:
        self._first = first
        self._file = os.fdopen(fd, "rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._first:
            n = min(len(buffer), len(self._first))
            buffer[:n] = self._first[:n]
            self._first = self._first[n:]
            return n
        return self._file.readinto(buffer) or 0

    def fileno(self) -> int:
        return self._file.fileno()

    def close(self) -> None:
        self._file.close()
        super().close()


def open_input(path: str | Path) -> IO[bytes]:
    """Open the input file ``path`` for reading without ever blocking on the open: a named pipe
    no process writes to is refused at once (``OSError`` ``ENXIO``, "a named pipe with no
    writer") instead of waited on forever; a pipe with a writer is read (blocking) as a stream.
    Other ``OSError``: the file cannot be opened."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        first = b""
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            try:
                first = os.read(fd, _CHUNK)
            except BlockingIOError:  # a writer, nothing written yet
                pass
            else:
                if not first:  # end of file at once: no process has the pipe open to write
                    raise OSError(errno.ENXIO, "a named pipe with no writer", screen(str(path)))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if first:
        return io.BufferedReader(_Prefixed(first, fd))
    return os.fdopen(fd, "rb")


def _read_stream(handle: IO[bytes], maximum: int, field: str, name: str, limit: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = handle.read(min(_CHUNK, maximum + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > maximum:
            raise limit_error(field, limit, header_path(name), total, maximum, exact=False)


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def path_argument(field: str, value: object, what: str = "a path") -> str:
    """The text of the path argument ``value`` of the API (a ``str``, or an ``os.PathLike``
    giving one), checked before the operating system sees it.

    Raises:
        InvalidInputError: naming ``field``: ``value`` is of another type, or holds a NUL
            character (which no path can hold: ``os`` would raise a bare ``ValueError``).
    """
    try:
        text = os.fspath(value)  # type: ignore[call-overload]
    except TypeError:
        text = None
    if not isinstance(text, str):
        raise InvalidInputError(
            field, f"must be a str or os.PathLike naming {what}, not {type(value).__name__}"
        )
    if "\0" in text:
        raise InvalidInputError(field, "must not contain a NUL character")
    return text


def os_reason(exc: BaseException) -> str:
    """Why a path could not be used, in a few words: the system's reason for an ``OSError``
    (``File name too long``, ``Too many levels of symbolic links``, ``Not a directory``,
    ``Permission denied``); for the ``RuntimeError`` ``pathlib`` raises on a loop of links
    (``Symlink loop from ...``), the system's words for one (``Too many levels of symbolic
    links``)."""
    if isinstance(exc, OSError):
        return _why(exc)
    if isinstance(exc, RuntimeError):
        return os.strerror(errno.ELOOP)
    return " ".join(str(exc).split()) or type(exc).__name__


def path_error(field: str, path: str, exc: BaseException, doing: str = "read") -> InvalidInputError:
    """The :class:`InvalidInputError` naming ``field`` for a path argument the system refused
    (``exc``): ``cannot read PATH: File name too long``."""
    return InvalidInputError(field, f"cannot {doing} {header_path(path)}: {os_reason(exc)}")


def resolved_folder(field: str, value: object) -> Path:
    """The folder path argument ``value`` resolved (links and ``..``), as :func:`path_argument`
    checks it; a path the system refuses (a name too long, a loop of links, a file named as a
    folder, a permission) is an :class:`InvalidInputError` naming ``field`` (:func:`path_error`).
    Raises ``NotADirectoryError`` for a path that names no folder."""
    text = path_argument(field, value, "a folder")
    try:
        folder = Path(text).resolve()
        if not folder.is_dir():
            raise NotADirectoryError(screen(f"not a directory: {header_path(text)}"))
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, NotADirectoryError) and exc.errno is None:
            raise
        raise path_error(field, text, exc) from None
    return folder


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to the file descriptor ``fd`` (``os.write`` may write
    part of it: a pipe whose reader went away, a signal)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # pragma: no cover - a blocking descriptor writes or raises
            raise OSError(errno.EIO, "nothing written")
        view = view[written:]


def write_stream(
    stream: TextIO | None, text: str, *, name: str = "the output", closed: str = "standard output is closed"
) -> None:
    """Write all of ``text`` to ``stream`` and flush it; characters its encoding cannot
    carry (lone surrogates) are written as backslash escapes.

    A stream with a file descriptor gets the encoded bytes with ``os.write`` until every byte
    is written (so an unbuffered stream cannot silently drop the end of the text when a pipe
    closes); another stream (a ``StringIO``) gets ``write``. Raises :class:`OutputError`
    (``"cannot write {name}: Broken pipe"``; ``"cannot write {name}: {closed}"`` if
    ``stream`` is ``None``, closed when the program started) if any write fails; the
    stream's file descriptor is then pointed at the null device, so that Python's own flush
    at exit does not fail a second time.
    """
    if stream is None:
        raise OutputError(f"cannot write {name}: {closed}")
    try:
        try:
            fd = stream.fileno()
        except (OSError, ValueError, AttributeError):  # no file descriptor (a StringIO)
            fd = None
        if fd is None:
            stream.write(text)
            stream.flush()
            return
        stream.flush()  # whatever was written to it before, in order
        encoding = getattr(stream, "encoding", None) or "utf-8"
        _write_all(fd, text.encode(encoding, errors="backslashreplace"))
    except (OSError, ValueError) as exc:  # EPIPE, ENOSPC, EBADF; a closed file (ValueError)
        _discard(stream)
        why = _why(exc) if isinstance(exc, OSError) else closed
        raise OutputError(f"cannot write {name}: {why}") from exc


def _discard(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at the null device (the advice of Python's
    documentation for ``BrokenPipeError``), so that what is still buffered goes nowhere."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError, AttributeError):
        return
    try:
        os.dup2(devnull, fd)
    except OSError:
        pass
    finally:
        os.close(devnull)


#: Longest piece of a name between two ``_`` that :func:`redact_names` checks on its own.
_MAX_PIECE = 512
#: Shorter words are not checked piece by piece (no secret kind is that short).
_MIN_WORD = 12


def redact_names(text: str) -> str:
    """``text`` (a message, a report, a path, a file name) with its secrets replaced, also
    those glued to a name by ``_`` (``nope_ghp_...`` or ``..._AKIA..._x.md``: the detector
    wants a token to stand alone, and ``_`` is a word character to it). After
    :func:`bugcontext.core.secrets.redact_text` on the whole text, each word (a run without
    blanks, at least ``_MIN_WORD`` characters) that holds ``_`` is checked piece by piece:
    every run of ``_``-separated parts of at most ``_MAX_PIECE`` characters as a text of its
    own, and a secret found in one replaced (``[REDACTED: kind]``). The checks per word grow
    with the square of its ``_`` within ``_MAX_PIECE`` characters."""
    return screen_names(text)[0]


def screen_names(text: str) -> tuple[str, tuple[str, ...]]:
    """:func:`redact_names` of ``text``, and the kinds of the secrets replaced (in order,
    repeated), as :class:`bugcontext.core.secrets.Redaction` gives them."""
    from bugcontext.core.secrets import redact

    first = redact(text)
    text, kinds = first.text, list(first.kinds)
    if "_" not in text:
        return text, tuple(kinds)
    words = [_redact_word(word, kinds) for word in _WORDS.split(text)]
    out = "".join(words)
    if out == text:
        return text, tuple(kinds)
    last = redact(out)
    return last.text, (*kinds, *last.kinds)


_WORDS = re.compile(r"(\s+)")


def _redact_word(word: str, kinds: list[str]) -> str:
    if len(word) < _MIN_WORD or "_" not in word:
        return word
    from bugcontext.core.secrets import find_secrets, redaction

    found: list[tuple[int, int, str]] = []
    cuts = [-1, *(i for i, char in enumerate(word) if char == "_"), len(word)]
    for a, start in enumerate(cuts):
        for end in cuts[a + 1 :]:
            if end - start - 1 > _MAX_PIECE:
                break
            piece = word[start + 1 : end]
            if len(piece) < _MIN_WORD or not piece[0].isalnum():
                continue
            for secret in find_secrets(piece):
                found.append((start + 1 + secret.start, start + 1 + secret.end, secret.kind))
    if not found:
        return word
    found.sort()
    parts: list[str] = []
    at = 0
    for begin, finish, kind in found:
        if begin < at:  # overlaps one replaced already
            at = max(at, finish)
            continue
        parts += [word[at:begin], redaction(kind)]
        kinds.append(kind)
        at = finish
    parts.append(word[at:])
    return "".join(parts)


def warn(line: str) -> None:
    """Write ``line`` and a newline to standard error, its secrets redacted
    (:func:`redact_names`: every message leaves through here, and the names in it are screened
    piece by piece); a standard error that cannot be written (closed, a broken pipe) is
    ignored: there is nowhere left to report."""
    try:
        write_stream(sys.stderr, redact_names(line) + "\n", name="standard error", closed="it is closed")
    except OutputError:
        pass


def reserve_standard_fds() -> None:
    """Open the null device on each of the file descriptors 0, 1 and 2 that is closed, so
    that no file opened later takes its number (and, say, receives what is meant for standard
    output). ``sys.stdin``/``sys.stdout``/``sys.stderr`` stay ``None`` when Python found the
    descriptor closed: writing there still fails as it should."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                return
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
