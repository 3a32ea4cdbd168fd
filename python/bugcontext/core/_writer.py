"""The one writer of every file the package writes.

Every output a command or the API writes to a path (``rerank --out`` and ``--summary``,
``context --report``, ``eval --out DIR``'s files, the plugin's context files, the files ``eval``
prepares in its work folder, and build traces) goes through this module. The rules, for the
path as given:

* a **regular file** is replaced atomically: the output is written to a temporary file in the
  same folder, flushed to disk (``fsync``), renamed over the file, and the folder is flushed;
  the file keeps its permission bits (and, for root, its owner). A file the user may not write
  (``os.access``), or one with no write permission bit at all (so that even root does not
  replace a read-only file), is refused. A **new file** gets the usual mode (``0o666`` less the
  umask). A file with other hard links is replaced under the name written to only (its other
  names keep the old content). A file in a folder where no temporary file can be made is a
  write failure: it is never written in place;
* a **symbolic link** is followed: its target is replaced as above, and the link stays;
* a **character device** (``/dev/null``, a terminal) or a **named pipe** is written in place;
  a pipe no process reads is refused at once rather than waited on;
* a **folder** is refused where a file is expected (``cannot write PATH: is a folder``), and so
  is a block device or a socket;
* a missing folder, a full disk, a permission: :class:`~bugcontext.core._io.OutputError`
  ``cannot write PATH: reason`` (the command line exits 1); a symbolic link to a missing file
  in a missing folder is named as such;
* an output that is the same file as an input (same device and inode), two outputs on one
  path, or an output that is the file or pipe of the standard output or error the command
  writes itself (``--report /dev/stdout > file``), is refused before any work by
  :func:`refuse_same_files` (:class:`OutputConflictError`; the command line exits 2);
* an output of a run that reads a repository or folder is refused before any work by
  :func:`repository_output_problem` when it is an existing file anywhere under that folder
  (read or not, ``.git`` included; through links and hard links) or any path inside its git
  folder (the command line exits 2; the API raises ``InvalidInputError`` naming the field);
  Character devices are streams, not files: two outputs may both be ``/dev/null``;
* the temporary file is made and renamed relative to the target's folder, opened once, so a
  folder swapped for a link while the output is written does not redirect it;
* several outputs of one run are put in place together by :func:`commit_all` (every one
  flushed to disk before any is renamed; SIGINT and SIGTERM held back during the renames).

A temporary file is named ``.NAME.PID.RANDOM.bugcontext-tmp`` (``PID`` the writing process).
It is removed when the write fails, on any exception, and on SIGINT or SIGTERM (a handler is
installed while a temporary file exists, in the main thread, unless the signal is ignored;
then the signal's previous handling goes on: ``KeyboardInterrupt``, or death by the signal; a
program's own handler that returns lets the process, and the output, go on).
The first write of a process into a folder removes the temporary files of this naming there
whose process is gone (no process with that id exists), owned by the same user; a live run's
are never touched (process ids are this machine's: a run in another container that shares the
folder is not seen). A process killed with SIGKILL leaves its temporary file, under that name,
until the next run cleans it: never a file that looks complete but is not.

A trace is appended (:func:`append_file`), not replaced: under an exclusive lock (``flock``),
in one write, flushed to disk; a failed or interrupted append cuts the file back to its size
before the append, so the file never ends with a part of a line, and a last line without its
line break (left by an append killed with SIGKILL) is cut off before the next record.
"""

from __future__ import annotations

import errno
import io
import os
import re
import secrets
import signal
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, BinaryIO

from bugcontext.core._io import OutputError
from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError, ScreenedError

__all__ = [
    "TEMP_SUFFIX",
    "AtomicFile",
    "OutputConflictError",
    "append_file",
    "atomic_output",
    "check_output",
    "check_trace_path",
    "commit_all",
    "existing_file",
    "git_folders",
    "input_file_problem",
    "make_folder",
    "missing_link",
    "reads_output",
    "refuse_same_files",
    "repository_output_problem",
    "write_file",
]

#: The ending of every temporary file's name.
TEMP_SUFFIX = ".bugcontext-tmp"
# .NAME.PID.RANDOM.bugcontext-tmp
_TEMP_NAME = re.compile(r"\A\..*\.(?P<pid>[0-9]{1,10})\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX) + r"\Z", re.S)
# Bytes of the target's name kept in the temporary name (a name is at most 255 bytes).
_NAME_BYTES = 160

PathArg = str | os.PathLike[str]


class OutputConflictError(ScreenedError, ValueError):
    """An output names the same file as an input, or two outputs name one file: a usage error,
    found before any work (the command line exits 2). The message is one line (screened for
    secrets)."""


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


# ---------------------------------------------------------------------------
# What a path names
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    shown: str  # the path as given, escaped for messages
    real: str  # symbolic links resolved
    info: os.stat_result | None  # None: no file yet

    @property
    def stream(self) -> bool:
        return self.info is not None and not stat.S_ISREG(self.info.st_mode)

    @property
    def fifo(self) -> bool:
        return self.info is not None and stat.S_ISFIFO(self.info.st_mode)


def _target(path: PathArg) -> _Target:
    """What ``path`` names, checked as an output; raises ``OutputError`` for a target that is
    refused (a folder, a block device or socket, a read-only file, a missing folder)."""
    shown = header_path(os.fspath(path))
    if os.fspath(path) == "":
        raise OutputError("cannot write an output with an empty name")
    if "\0" in os.fspath(path):
        raise OutputError(f"cannot write {shown}: a path cannot hold a NUL character")
    if os.fspath(path).endswith((os.sep, os.altsep or os.sep)) and not os.path.isdir(path):
        raise OutputError(f"cannot write {shown}: a name ending in {os.sep} names a folder, not a file")
    try:
        info: os.stat_result | None = os.stat(path)  # links followed (/dev/stdout's too)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise OutputError(f"cannot write {shown}: {_why(exc)}") from exc
    if info is not None and (stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        return _Target(shown, os.fspath(path), info)  # a stream: opened as named (a pipe's fd link)
    real = os.path.realpath(path)
    if info is not None and stat.S_ISREG(info.st_mode):
        try:
            same = os.stat(real)
        except OSError:
            same = None
        if same is None or (same.st_dev, same.st_ino) != (info.st_dev, info.st_ino):
            raise OutputError(f"cannot write {shown}: its folder cannot be found (a deleted file)")
    if info is None:
        folder = os.path.dirname(real)
        if not os.path.isdir(folder):
            raise OutputError(f"cannot write {shown}: {_missing_folder(os.fspath(path), folder)}")
        return _Target(shown, real, None)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {shown}: is a folder")
    if stat.S_ISREG(mode):
        if not os.access(real, os.W_OK) or not mode & 0o222:
            raise OutputError(f"cannot write {shown}: the file is read-only (it is not replaced)")
        return _Target(shown, real, info)
    raise OutputError(f"cannot write {shown}: not a regular file, character device or named pipe")


def _missing_folder(path: str, folder: str) -> str:
    """Why the new file ``path`` cannot be made, its real folder ``folder`` (links resolved)
    missing: ``path`` is a symbolic link to a missing file in a missing folder, a folder above
    it is a link to a missing target (:func:`missing_link`), or its folder does not exist."""
    if os.path.islink(path):
        target = os.readlink(path)
        return f"it is a symbolic link to {header_path(target)}, a missing file in a missing folder"
    given = os.path.dirname(path) or folder
    link = missing_link(given)
    if link is None:
        return f"the folder {header_path(given)} does not exist"
    if link == given:
        return f"its folder {_link_words(link)}"
    return f"the folder {header_path(given)} does not exist ({_link_words(link)})"


def missing_link(path: PathArg) -> str | None:
    """The nearest of ``path`` and the folders above it (as given, not resolved) that is a
    symbolic link to a missing target, or ``None``: what a message names when a folder to be
    written in "does not exist" although its name is there."""
    here = os.fspath(path)
    while here:
        if os.path.lexists(here):
            return here if os.path.islink(here) and not os.path.exists(here) else None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


def _link_words(link: str) -> str:
    try:
        target = os.readlink(link)
    except OSError:
        return f"{header_path(link)} is a symbolic link to a missing target"
    return f"{header_path(link)} is a symbolic link to {header_path(target)}, which does not exist"


def make_folder(folder: PathArg) -> None:
    """Make the folder ``folder`` and the folders above it (``mkdir -p``). Raises
    :class:`~bugcontext.core._io.OutputError` (``cannot write FOLDER: reason``) when it cannot
    be made: a file stands there (``not a folder``), it or a folder above it is a symbolic
    link to a missing target (named), a permission."""
    shown = header_path(os.fspath(folder))
    link = missing_link(folder)
    if link is not None:
        words = _link_words(link)
        if link == os.fspath(folder):
            words = "it" + words[len(header_path(link)) :]
        raise OutputError(f"cannot write {shown}: {words}")
    try:
        os.makedirs(folder, exist_ok=True)
    except FileExistsError as exc:
        raise OutputError(f"cannot write {shown}: not a folder") from exc
    except OSError as exc:
        raise OutputError(f"cannot write {shown}: {_why(exc)}") from exc


def check_output(path: PathArg) -> None:
    """Check, before any work, that ``path`` can be written as an output under the rules of
    this module (not a folder, a block device or a socket; not a read-only file; its folder
    exists). Raises :class:`~bugcontext.core._io.OutputError` (``cannot write PATH: reason``)."""
    _target(path)


# ---------------------------------------------------------------------------
# Cleaning up: on exceptions, on SIGINT/SIGTERM, and after killed runs
# ---------------------------------------------------------------------------

_LOCK = threading.RLock()
_UNDO: dict[int, Callable[[], None]] = {}  # what to undo if the process is stopped now
_SAVED: dict[int, Any] = {}  # signal -> its handler before ours
_SIGNALS = tuple(s for s in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)) if s)
_CLEANED: set[str] = set()  # folders whose stale temporary files were removed
_next_id = iter(range(1 << 62))


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Undo every output being written when the signal stops the process: after the previous
    handler raised (``KeyboardInterrupt``), or before the signal's default action ends the
    process. A previous handler that returns lets the process, and its outputs, go on."""
    with _LOCK:
        previous = _SAVED.get(signum, signal.SIG_DFL)
    if callable(previous):
        try:
            previous(signum, frame)
        except BaseException:
            _undo_all()
            raise
        return
    _undo_all()
    signal.signal(signum, signal.SIG_DFL)  # end as the signal ends a process
    os.kill(os.getpid(), signum)


def _undo_all() -> None:
    with _LOCK:
        undo = list(_UNDO.values())
        _UNDO.clear()
        _restore()
    for action in undo:
        try:
            action()
        except Exception:  # best effort: the process is being stopped
            pass


def _install() -> None:
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set handlers; exceptions still clean up
    for signum in _SIGNALS:
        try:
            current = signal.getsignal(signum)
        except (OSError, ValueError):
            continue
        if current in (signal.SIG_IGN, None) or current is _on_signal:
            continue  # an ignored signal stops nothing: nothing to clean
        try:
            signal.signal(signum, _on_signal)
        except (OSError, ValueError):
            continue
        _SAVED[signum] = current


def _restore() -> None:
    for signum, previous in list(_SAVED.items()):
        try:
            if signal.getsignal(signum) is _on_signal:
                signal.signal(signum, previous)
        except (OSError, ValueError):
            pass
        del _SAVED[signum]


def _arm(undo: Callable[[], None]) -> int:
    with _LOCK:
        if not _SAVED:
            _install()
        key = next(_next_id)
        _UNDO[key] = undo
        return key


def _disarm(key: int) -> None:
    with _LOCK:
        _UNDO.pop(key, None)
        if not _UNDO:
            _restore()


def _euid() -> int:
    geteuid = getattr(os, "geteuid", None)
    return -1 if geteuid is None else int(geteuid())


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts)."""
    if pid <= 0:
        return True  # not a name this module writes: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists
        return True
    return True


_LIVE_TEMPS: set[str] = set()  # this process's temporary files (full paths)


def _clean_stale(folder: str) -> None:
    """Remove, once per process and folder, the temporary files of this module's naming in
    ``folder`` whose writing process is gone (owned by this user, regular files)."""
    with _LOCK:
        if folder in _CLEANED:
            return
        _CLEANED.add(folder)
        live = set(_LIVE_TEMPS)
    me, uid = os.getpid(), _euid()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        found = _TEMP_NAME.match(entry.name)
        if found is None:
            continue
        pid = int(found["pid"])
        if pid == me:
            if entry.path in live:
                continue  # ours, being written (the same id of a gone process is stale)
        elif _alive(pid):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_uid == uid:
                os.unlink(entry.path)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


class _Sink(io.FileIO):
    """A file descriptor opened for writing that counts what it wrote (``tell``), so that a
    writer that asks for its position (pyarrow's Parquet writer) works on a pipe as well."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd, "wb", closefd=True)
        self._written = 0

    def write(self, data: Any) -> int:
        n = super().write(data)
        self._written += n or 0
        return n or 0

    def tell(self) -> int:
        return self._written

    def seekable(self) -> bool:
        return False


def _temp_name(real: str) -> str:
    folder, name = os.path.split(real)
    raw = os.fsencode(name)[:_NAME_BYTES]
    short = os.fsdecode(raw)
    return os.path.join(folder, f".{short}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


class AtomicFile:
    """An output being written: ``file`` is a binary file object (a temporary file beside the
    target, or the device or pipe itself); :meth:`commit` puts it in place, :meth:`abort`
    removes what was written. Made by :func:`atomic_output` (or directly, for outputs that
    are put in place together, as ``rerank`` does)."""

    def __init__(self, path: PathArg) -> None:
        self._target = _target(path)
        self.shown = self._target.shown
        self._temp: str | None = None
        self._key: int | None = None
        self._dirfd: int | None = None  # the target's folder, opened once (names are taken in it)
        self.file: BinaryIO
        target = self._target
        fd = -1
        try:
            if target.stream:
                flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0)
                if target.fifo:
                    flags |= os.O_NONBLOCK  # ENXIO at once when no process reads it
                fd = os.open(target.real, flags)
                if target.fifo:
                    os.set_blocking(fd, True)
            else:
                folder = os.path.dirname(target.real)
                self._dirfd = _open_folder(folder, self.shown)
                _clean_stale(folder)
                temp = _temp_name(target.real)
                dirfd = self._dirfd
                self._key = _arm(lambda: _unlink(temp, dirfd))
                with _LOCK:
                    _LIVE_TEMPS.add(temp)
                self._temp = temp
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                try:
                    if self._dirfd is None:  # pragma: no cover - not a POSIX system
                        fd = os.open(temp, flags, 0o666)
                    else:
                        fd = os.open(os.path.basename(temp), flags, 0o666, dir_fd=self._dirfd)
                except OSError as exc:
                    raise OutputError(
                        f"cannot write {self.shown}: {_why(exc)} (no temporary file can be made in its "
                        f"folder {header_path(folder)}; the file is never written in place)"
                    ) from exc
                if target.info is not None:
                    self._keep_owner_and_mode(fd, target.info)
        except BaseException as exc:
            if fd >= 0:
                os.close(fd)
            self._drop()
            if isinstance(exc, OSError):
                raise self.error(exc) from exc
            raise
        self.file = io.BufferedWriter(_Sink(fd))

    @staticmethod
    def _keep_owner_and_mode(fd: int, info: os.stat_result) -> None:
        if _euid() == 0 and (info.st_uid, info.st_gid) != (0, os.getegid()):
            try:
                os.fchown(fd, info.st_uid, info.st_gid)
            except OSError:
                pass
        os.fchmod(fd, stat.S_IMODE(info.st_mode))

    def error(self, exc: BaseException) -> OutputError:
        """The :class:`~bugcontext.core._io.OutputError` for a failure ``exc`` while writing this
        output: ``cannot write PATH: reason``."""
        if isinstance(exc, OutputError):
            return exc
        if isinstance(exc, OSError):
            if exc.errno == errno.ENXIO:
                return OutputError(f"cannot write {self.shown}: no process reads the named pipe")
            why = _why(exc)
        else:
            why = " ".join(str(exc).split()) or type(exc).__name__
        return OutputError(f"cannot write {self.shown}: {why}")

    def commit(self) -> None:
        """Flush what was written and put it in place (rename the temporary file over the
        target, then flush the folder). Raises ``OutputError``; the temporary file is then
        removed."""
        self.prepare()
        self.put()

    def prepare(self) -> None:
        """Flush what was written to disk (``fsync``) and close it, without putting it in
        place yet (:meth:`put`). Raises ``OutputError``; the output is then aborted."""
        try:
            self.file.flush()
            if self._temp is not None:
                os.fsync(self.file.fileno())
            self.file.close()
        except BaseException as exc:
            self.abort()
            if isinstance(exc, (OSError, ValueError)):
                raise self.error(exc) from exc
            raise

    def put(self) -> None:
        """Put a prepared output in place: rename its temporary file over the target (by
        name inside the folder opened when the output was made, so a folder swapped for a
        link meanwhile does not redirect it) and flush the folder. Raises ``OutputError``."""
        try:
            dirfd = self._dirfd
            if self._temp is not None and dirfd is None:  # pragma: no cover - not POSIX
                os.replace(self._temp, self._target.real)
            elif self._temp is not None and dirfd is not None:
                # (POSIX rename replaces its target, as os.replace does)
                os.rename(
                    os.path.basename(self._temp),
                    os.path.basename(self._target.real),
                    src_dir_fd=dirfd,
                    dst_dir_fd=dirfd,
                )
                try:
                    os.fsync(dirfd)
                except OSError:
                    pass  # some file systems cannot sync a folder; the rename is done
        except BaseException as exc:
            self.abort()
            if isinstance(exc, (OSError, ValueError)):
                raise self.error(exc) from exc
            raise
        self._forget()

    def abort(self) -> None:
        """Close the output and remove the temporary file (a device or pipe keeps what it was
        given). Never raises."""
        try:
            self.file.close()
        except (OSError, ValueError, AttributeError):
            pass
        self._drop()

    def _drop(self) -> None:
        if self._temp is not None:
            _unlink(self._temp, self._dirfd)
        self._forget()

    def _forget(self) -> None:
        if self._temp is not None:
            with _LOCK:
                _LIVE_TEMPS.discard(self._temp)
        if self._key is not None:
            _disarm(self._key)
        self._key = None
        self._temp = None
        if self._dirfd is not None:
            try:
                os.close(self._dirfd)
            except OSError:
                pass
            self._dirfd = None


def commit_all(outputs: Sequence[AtomicFile]) -> None:
    """Put several outputs of one run in place together: every output is first flushed to
    disk and closed (:meth:`AtomicFile.prepare`); only when all are, their temporary files are
    renamed over their targets, in order (a rename needs no space, so a full disk fails the
    run before any output is replaced). If one cannot be prepared, every output is aborted
    and ``OutputError`` raised: no target changes. A device or pipe among them was written as
    the run went. SIGINT and SIGTERM are held back while the renames run (in the main
    thread), so a stopped run has replaced all of its outputs or none. What remains: a
    process killed with SIGKILL (or a power cut) between two renames leaves the first outputs
    new and the later ones old."""
    try:
        for out in outputs:
            out.prepare()
    except BaseException:
        for out in outputs:
            out.abort()
        raise
    # SIGINT and SIGTERM wait until every rename is done (then they act as they would have).
    blocked = _block_signals()
    try:
        for out in outputs:
            out.put()
    except BaseException:
        for out in outputs:
            out.abort()
        raise
    finally:
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def _block_signals() -> set[int | signal.Signals] | None:
    """Block SIGINT and SIGTERM in the main thread; the mask before, or ``None`` if nothing
    was blocked (another thread, or a system without ``pthread_sigmask``)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        return None  # pragma: no cover - not POSIX, or not the main thread
    return signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)


#: Whether files can be made and renamed relative to a folder descriptor (POSIX).
_DIR_FD = all(call in os.supports_dir_fd for call in (os.open, os.rename, os.unlink))


def _open_folder(folder: str, shown: str) -> int | None:
    """A descriptor of ``folder`` (resolved), opened once so that the temporary file is made
    and renamed inside this folder even if its path is changed meanwhile; ``None`` where
    ``dir_fd`` is not supported."""
    if not _DIR_FD:
        return None  # pragma: no cover - not a POSIX system
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(folder, flags)
    except OSError as exc:
        raise OutputError(f"cannot write {shown}: {_why(exc)} (its folder cannot be opened)") from exc


def _unlink(path: str, dirfd: int | None = None) -> None:
    try:
        if dirfd is not None:
            os.unlink(os.path.basename(path), dir_fd=dirfd)
        else:
            os.unlink(path)
    except OSError:
        pass


@contextmanager
def atomic_output(path: PathArg) -> Iterator[AtomicFile]:
    """Write one output to ``path`` under the rules of this module: ``with atomic_output(p) as
    out:`` write to ``out.file`` (a binary file object; it has a file descriptor and counts
    its position); on leaving the block normally the output is put in place, on any exception
    (``KeyboardInterrupt`` included) the temporary file is removed and the exception goes on
    unchanged (a failure of the writer itself becomes ``OutputError`` through ``out.error``).

    Raises :class:`~bugcontext.core._io.OutputError` (``cannot write PATH: reason``) when the
    target is refused or opening or putting it in place fails.
    """
    out = AtomicFile(path)
    try:
        yield out
    except BaseException:
        out.abort()
        raise
    out.commit()


def _encoded(data: str | bytes) -> bytes:
    return data if isinstance(data, bytes) else data.encode("utf-8", errors="backslashreplace")


def write_file(path: PathArg, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, lone surrogates as backslash escapes; line endings as
    given) to ``path`` under the rules of this module (a regular file replaced atomically, a
    link kept, a device or pipe written in place, a folder refused). Raises
    :class:`~bugcontext.core._io.OutputError` (``cannot write PATH: reason``)."""
    raw = _encoded(data)
    with atomic_output(path) as out:
        try:
            out.file.write(raw)
        except OSError as exc:
            raise out.error(exc) from exc


def append_file(path: PathArg, data: str | bytes) -> None:
    """Append ``data`` (text as UTF-8) to ``path`` (a trace): a regular file (or a new one) is
    appended to under an exclusive lock in one write and flushed to disk; if the append fails
    or is interrupted, the file is cut back to its size before it, so it never ends in a part
    of ``data``. A link is followed; a device or pipe is written in place; a folder is refused.
    Raises :class:`~bugcontext.core._io.OutputError` (``cannot write PATH: reason``)."""
    raw = _encoded(data)
    target = _target(path)
    if target.stream:
        write_file(path, raw)
        return
    try:
        _append(target, raw)
    except OSError as exc:
        raise OutputError(f"cannot write {target.shown}: {_why(exc)}") from exc


def _append(target: _Target, raw: bytes) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not a POSIX system: no lock
        fcntl = None  # type: ignore[assignment]

    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)  # read: its last line
    folder = os.path.dirname(target.real)
    dirfd = _open_folder(folder, target.shown)  # opened once: a swapped folder redirects nothing
    try:
        if dirfd is None:  # pragma: no cover - not a POSIX system
            fd = os.open(target.real, flags, 0o666)
        else:
            fd = os.open(os.path.basename(target.real), flags, 0o666, dir_fd=dirfd)
    except BaseException:
        if dirfd is not None:
            os.close(dirfd)
        raise
    key: int | None = None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since it was checked
            raise OSError(errno.EINVAL, "not a regular file")
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # one append at a time; released when fd closes
        size = _whole_lines(fd)
        key = _arm(lambda: os.ftruncate(fd, size))
        try:
            view = memoryview(raw)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        except BaseException:
            try:
                os.ftruncate(fd, size)
            except OSError:
                pass
            raise
        if target.info is None and dirfd is not None:
            try:
                os.fsync(dirfd)
            except OSError:
                pass  # some file systems cannot sync a folder
    finally:
        if key is not None:
            _disarm(key)
        os.close(fd)
        if dirfd is not None:
            os.close(dirfd)


def _whole_lines(fd: int) -> int:
    """The size of the file ``fd`` after cutting off a last line without its line break (the
    part of a record an append killed with SIGKILL left: garbage that would fuse with the next
    record); the file is cut back to its last ``\n`` (to nothing when it holds none)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        chunk = os.pread(fd, end - start, start)
        at = chunk.rfind(b"\n")
        if at >= 0:
            end = start + at + 1
            break
        end = start
    os.ftruncate(fd, end)
    return end


# ---------------------------------------------------------------------------
# Outputs that are inputs
# ---------------------------------------------------------------------------


def existing_file(path: PathArg) -> tuple[str, os.stat_result] | None:
    """The real path (links resolved) and the stat of the existing regular file ``path``
    names, or ``None`` (no such file, not a regular file, a path the system refuses)."""
    try:
        real = os.path.realpath(path)
        info = os.stat(real)
    except (OSError, ValueError):
        return None
    return (real, info) if stat.S_ISREG(info.st_mode) else None


def reads_output(
    path: PathArg,
    inside: Callable[[str], bool],
    files: Callable[[], Iterable[PathArg]],
    *,
    follow: bool = True,
) -> bool:
    """Whether the output ``path`` is an existing regular file that a reader reads: one whose
    real path (symbolic links and ``..`` resolved; a relative path is taken from the current
    folder) the reader reads (``inside(real)``), or, for a file with other hard links, the
    same file (device and inode) as one of the reader's files (``files()``: their paths,
    listed only then; a listed link is followed unless ``follow`` is false). The outputs of a
    run are checked by the stricter :func:`repository_output_problem` (every existing file
    under the folder, read or not, and its git folder)."""
    found = existing_file(path)
    if found is None:
        return False
    real, info = found
    if inside(real):
        return True
    if info.st_nlink <= 1:
        return False
    identity = (info.st_dev, info.st_ino)
    for name in files():
        try:
            other = os.stat(name) if follow else os.lstat(name)
        except (OSError, ValueError):
            continue
        if (other.st_dev, other.st_ino) == identity:
            return True
    return False


def _folder_files(base: str) -> Iterator[str]:
    for folder, _, names in os.walk(base):
        for name in names:
            yield os.path.join(folder, name)


def _under(base: str, real: str) -> bool:
    try:
        return os.path.commonpath([base, real]) == base
    except ValueError:  # one relative, or another drive
        return False


def git_folders(root: PathArg) -> list[str]:
    """The real paths of the git folders of the repository ``root``: ``root/.git`` when it is a
    folder (links resolved); for a ``.git`` file (a worktree, a submodule), the folder its
    ``gitdir:`` line names and that folder's ``commondir`` (the main repository's git folder).
    ``[]`` without any."""
    dot = os.path.join(os.fspath(root), ".git")
    if os.path.isdir(dot):
        return [os.path.realpath(dot)]
    try:
        with open(dot, "rb") as handle:
            first = handle.read(4096).decode("utf-8", errors="replace").splitlines()
    except (OSError, ValueError):
        return []
    if not first or not first[0].startswith("gitdir:"):
        return []
    gitdir = os.path.join(os.path.dirname(dot), first[0][len("gitdir:") :].strip())
    if not os.path.isdir(gitdir):
        return []
    found = [os.path.realpath(gitdir)]
    try:
        with open(os.path.join(gitdir, "commondir"), "rb") as handle:
            common = handle.read(4096).decode("utf-8", errors="replace").strip()
    except (OSError, ValueError):
        common = ""
    if common:
        main = os.path.realpath(os.path.join(gitdir, common))
        if os.path.isdir(main) and main not in found:
            found.append(main)
    return found


def repository_output_problem(root: PathArg, path: PathArg, what: str = "repository") -> str | None:
    """Why the output ``path`` may not be written for a run that reads the folder ``root`` (the
    ``what``: ``"repository"``, ``"verify folder"``), or ``None`` when it may. The one check of
    the rule that an output never damages the folder being read, made before any work by the
    command line's ``--report`` and ``--trace`` (``context``; ``build --verify-root``) and the
    API's ``trace=`` (:func:`check_trace_path`). Refused:

    * any path, new or existing, inside the folder's git folder (``root/.git``, or the
      ``gitdir`` of a ``.git`` file and its ``commondir``: :func:`git_folders`), links and
      ``..`` resolved (a relative path is taken from the current folder);
    * an existing regular file anywhere under ``root``, whether the reader reads it or not
      (an ignored file, a file in a hidden or skipped folder), links resolved; and a file
      with other hard links that is the same file (device and inode) as one under ``root``
      or in its git folders.

    A new file elsewhere inside ``root`` is allowed."""
    text = os.fspath(path)
    if "\0" in text:
        return None  # names no file (refused where it is used)
    base = os.path.realpath(root)
    real = os.path.realpath(text)
    gits = git_folders(root)
    for git in gits:
        if _under(git, real):
            return (
                f"{header_path(text)} is inside the git folder {header_path(_shown_git(root, git))} of the "
                f"{what} {header_path(os.fspath(root))} (refusing to write there)"
            )
    found = existing_file(text)
    if found is None:
        return None
    real, info = found
    inside = _under(base, real)
    if not inside and info.st_nlink > 1:
        identity = (info.st_dev, info.st_ino)
        for folder in (base, *gits):
            for name in _folder_files(folder):
                try:
                    other = os.lstat(name)
                except (OSError, ValueError):
                    continue
                if (other.st_dev, other.st_ino) == identity:
                    inside = True
                    break
            if inside:
                break
    return input_file_problem(text, what, root) if inside else None


def _shown_git(root: PathArg, git: str) -> str:
    """The git folder ``git`` as a message names it: ``ROOT/.git`` when it is that folder."""
    dot = os.path.join(os.fspath(root), ".git")
    return dot if os.path.realpath(dot) == git else git


def input_file_problem(path: PathArg, what: str, root: PathArg) -> str:
    """How a refused output is described: ``PATH is a file of the WHAT ROOT (refusing to
    replace an existing file of the folder being read)``."""
    return (
        f"{header_path(os.fspath(path))} is a file of the {what} {header_path(os.fspath(root))} "
        "(refusing to replace an existing file of the folder being read)"
    )


def check_trace_path(trace: object, root: PathArg | None, what: str = "repository") -> None:
    """Check the API's ``trace=`` path before any work: ``InvalidInputError`` (field ``trace``)
    for a NUL character, or, when a folder ``root`` is read (the repository, a verify folder),
    for a path :func:`repository_output_problem` refuses (an existing file under ``root``,
    through a link or a hard link; any path inside its git folder);
    :class:`~bugcontext.core._io.OutputError` for a path that cannot be written
    (:func:`check_output`). A text stream is not checked here."""
    if not isinstance(trace, (str, os.PathLike)):
        return
    path = os.fspath(trace)
    if not isinstance(path, str):
        raise InvalidInputError("trace", f"must be a str path or a text stream, not {type(trace).__name__}")
    if "\0" in path:
        raise InvalidInputError("trace", "must not contain a NUL character")
    if root is not None:
        problem = repository_output_problem(root, path, what)
        if problem is not None:
            raise InvalidInputError("trace", problem)
    check_output(path)


def _identity(path: PathArg | None, *, stdin: bool) -> tuple[str | None, tuple[int, int] | None]:
    """The resolved path and ``(st_dev, st_ino)`` of a file (``None`` when it does not exist;
    ``-`` with ``stdin``: standard input); a character device has no identity (a stream)."""
    if path is None:
        return None, None
    text = os.fspath(path)
    if "\0" in text:
        return None, None  # names no file (refused where it is used)
    try:
        if stdin and text == "-":
            info = os.fstat(0)
            real = None
        else:
            real = os.path.realpath(text)
            info = os.stat(text)  # links followed, /dev/stdout's (a pipe's) too
    except OSError:
        return (None if stdin and text == "-" else os.path.realpath(text)), None
    if stat.S_ISCHR(info.st_mode):
        return None, None
    return real, (info.st_dev, info.st_ino)


def _stream_identity(fd: int) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the standard stream ``fd`` when it is a regular file or a pipe
    (``None`` for a terminal or another character device, or a closed stream)."""
    try:
        info = os.fstat(fd)
    except OSError:
        return None
    if stat.S_ISCHR(info.st_mode):
        return None
    return info.st_dev, info.st_ino


def refuse_same_files(
    outputs: Sequence[tuple[str, PathArg | None]],
    inputs: Sequence[tuple[str, PathArg | None]] = (),
    *,
    streams: Sequence[int] = (1, 2),
) -> None:
    """Raise :class:`OutputConflictError` if an output is the same file as an input (equal
    ``st_dev`` and ``st_ino``, links followed; an input ``-`` is standard input, compared by
    its descriptor) or two outputs name one file (equal resolved paths, or equal device and
    inode), or an output is the file or pipe standard output or standard error is
    (``/dev/stdout`` while standard output goes to a file or a pipe), for the standard
    streams the command writes itself (``streams``: file descriptors, default both; a
    command that writes nothing on standard output passes ``(2,)``). Each entry is ``(label,
    path)``, the label as the message names it (``"--out"``, ``"the input"``); a ``None`` path is left out.
    Character devices (``/dev/null``, a terminal) are streams and never conflict. Call it before any work."""
    seen: list[tuple[str, PathArg, str | None, tuple[int, int] | None]] = []
    for label, path in outputs:
        if path is None:
            continue
        real, ident = _identity(path, stdin=False)
        if real is None and ident is None:
            continue  # a character device
        for other_label, other, other_real, other_ident in seen:
            if (real is not None and real == other_real) or (ident is not None and ident == other_ident):
                raise OutputConflictError(
                    f"{other_label} and {label} name the same file {header_path(os.fspath(path))}"
                    if os.fspath(path) == os.fspath(other)
                    else f"{other_label} {header_path(os.fspath(other))} and {label} "
                    f"{header_path(os.fspath(path))} are the same file"
                )
        seen.append((label, path, real, ident))
    for label, fd in (("standard output", 1), ("standard error", 2)):
        ident = _stream_identity(fd) if fd in streams else None
        if ident is None:
            continue
        for out_label, out, _, out_ident in seen:
            if ident == out_ident:
                raise OutputConflictError(
                    f"{out_label} {header_path(os.fspath(out))} is the same file as {label} "
                    "(its output would be lost or mixed with the other)"
                )
    for label, path in inputs:
        if path is None:
            continue
        _, ident = _identity(path, stdin=True)
        if ident is None:
            continue
        for out_label, out, _, out_ident in seen:
            if ident == out_ident:
                shown = "standard input" if os.fspath(path) == "-" else header_path(os.fspath(path))
                raise OutputConflictError(
                    f"{out_label} {header_path(os.fspath(out))} is the same file as {label} {shown} "
                    "(refusing to overwrite an input)"
                )
