"""The on-disk store of a :class:`bugcontext.Workspace`: what was derived from each file,
keyed by the file's content hash, in one SQLite database (the standard library's ``sqlite3``).

The database is safe under concurrent processes (SQLite's locking, write-ahead log, a busy
timeout; every write is one transaction) and is never trusted blindly: its name and a row in
it carry the version of the extraction rules (:func:`rules_version`), values are ``marshal``
data (plain strings, numbers, tuples, lists, sets, dicts, bytes: loading one runs no code)
compressed with ``zlib`` (whose checksum catches a damaged value) and decompressed no further
than ``max_value_bytes`` (``Limits.max_cache_value_bytes``: a small damaged or hostile blob
cannot expand into gigabytes; a larger value is damaged, and one that large is never stored),
and the caller checks each value's shape. A value that fails is a miss (derived again); a
database that cannot be opened or read, or that holds another version, is deleted and made
again; if that fails too the store turns itself off (every lookup a miss) and the workspace
works without it.

Keys, repository roots and paths are stored as ``BLOB``: their text as UTF-8 with a lone
surrogate in its 3-byte form (``encode("utf-8", "surrogatepass")``, the byte form of
:mod:`bugcontext.core.digest`), so a file or folder name that is not valid UTF-8 (read by Python as
lone surrogates, ``surrogateescape``) is stored and found like any other.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sqlite3
import stat
import sys
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from bugcontext.core.limits import DEFAULT_LIMITS

__all__ = ["Stat", "Store", "rules_version"]

#: A file's row in the store: ``(size, mtime_ns, ctime_ns, inode, indexed_ns, digest)``, its
#: ``lstat`` when it was last read, the wall time (ns) just before that ``lstat``, and the
#: SHA-256 (hex) of the bytes read (``""``: it could not be read).
Stat = tuple[int, int, int, int, int, str]

#: Bumped by hand when what is stored changes shape.
SCHEMA = 2

_rules: str | None = None


def rules_version() -> str:
    """A hex digest naming the extraction rules: the store's schema, the package's
    ``sources`` modules, ``workspace`` and ``secrets`` (their text: any change to how files
    are read, refused, parsed, chunked or tokenized gives another version), the compiled
    extension (its size and time: it holds the secret detector), the Python version (``ast``
    differs between versions), the ``bm25s`` version and the ``detect-secrets`` version (the
    secret rule set)."""
    global _rules
    if _rules is None:
        digest = hashlib.sha256(f"{SCHEMA}|{sys.version_info[:2]}".encode())
        here = Path(__file__).resolve().parent
        modules = [*sorted((here / "sources").rglob("*.py")), here / "workspace.py"]
        modules.append(here.parent / "core" / "secrets.py")
        for module in modules:
            digest.update(module.relative_to(here.parent).as_posix().encode())
            digest.update(module.read_bytes())
        # The extension holds the secret detector: another build may refuse other files.
        from bugcontext import _core

        built = Path(_core.__file__).stat()
        digest.update(f"{built.st_size}:{built.st_mtime_ns}".encode())
        try:
            from importlib.metadata import version

            digest.update(version("bm25s").encode())
            # The secret rule set: another version finds other secrets in the same files.
            digest.update(version("detect-secrets").encode())
        except Exception:  # not installed as a distribution: the modules still name the rules
            pass
        _rules = digest.hexdigest()[:20]
    return _rules


class Store:
    """A key-value store of derived data in ``folder`` (created if missing).

    ``get_many(kind, keys)`` and ``put_many(kind, items)`` read and write values of one
    ``kind`` (``"words"``, ``"docs"``, ``"index"``); ``stats(root)`` and ``put_stats`` keep,
    per repository root, each file's :data:`Stat` row. ``enabled`` turns false when the
    database cannot be used at all. ``max_value_bytes`` is the largest value (its ``marshal``
    form, before compression) stored or loaded (default
    ``DEFAULT_LIMITS.max_cache_value_bytes``).
    """

    def __init__(self, folder: Path, max_value_bytes: int | None = None) -> None:
        self.version = rules_version()
        most = DEFAULT_LIMITS.max_cache_value_bytes if max_value_bytes is None else max_value_bytes
        # (zlib's max_length is a Py_ssize_t; no value is larger than memory anyway.)
        self.max_value_bytes = min(most, sys.maxsize // 2)
        self.path = Path(folder) / f"derived-{self.version}.sqlite3"
        self.enabled = True
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = self._open()
        except (OSError, sqlite3.Error):
            self._db = self._recreate()

    # -- opening ---------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        _refuse_planted(self.path)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with _transaction(db):
                db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS blobs (kind TEXT NOT NULL, key BLOB NOT NULL, "
                    "value BLOB NOT NULL, PRIMARY KEY (kind, key))"
                )
                db.execute(
                    "CREATE TABLE IF NOT EXISTS stats (root BLOB NOT NULL, path BLOB NOT NULL, "
                    "size INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, "
                    "ino INTEGER NOT NULL, indexed INTEGER NOT NULL, digest TEXT NOT NULL, "
                    "PRIMARY KEY (root, path))"
                )
                db.execute("INSERT OR IGNORE INTO meta VALUES ('version', ?)", (self.version,))
                row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if row is None or row[0] != self.version:
                raise sqlite3.DatabaseError("the cache holds another version of the rules")
            db.execute("PRAGMA quick_check(1)").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _recreate(self) -> sqlite3.Connection | None:
        """Delete the database (and its journal files) and make it again; ``None`` (the store
        off) if even that fails."""
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")
        try:
            return self._open()
        except (OSError, sqlite3.Error):
            self.enabled = False
            return None

    def _failed(self) -> None:
        """A query failed on an open database: start again from an empty one."""
        self._db = self._recreate()

    def close(self) -> None:
        """Close the database (the store is off afterwards)."""
        with self._lock:
            if self._db is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._db.close()
            self._db = None
            self.enabled = False

    # -- values ----------------------------------------------------------------------------

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, object]:
        """The stored values of ``kind`` for those of ``keys`` that have one (a damaged value
        is left out, as if missing)."""
        found: dict[str, object] = {}
        with self._lock:
            if self._db is None:
                return found
            try:
                for part in _parts(keys, 500):
                    marks = ",".join("?" * len(part))
                    # A stored blob longer than zlib's largest form of a value within the
                    # bound is not even fetched.
                    rows = self._db.execute(
                        f"SELECT key, value FROM blobs WHERE kind = ? AND key IN ({marks}) "
                        "AND length(value) <= ?",
                        (kind, *map(_text_bytes, part), _compressed_bound(self.max_value_bytes)),
                    ).fetchall()
                    for key, blob in rows:
                        name = _bytes_text(key)
                        value = _decode(blob, self.max_value_bytes)
                        if name is not None and value is not _DAMAGED:
                            found[name] = value
            except sqlite3.Error:
                self._failed()
        return found

    def put_many(self, kind: str, items: Iterable[tuple[str, object]]) -> None:
        """Store the values of ``items`` (``(key, value)`` pairs) under ``kind``, in one
        transaction; a failure to write loses nothing but the cache. A value whose ``marshal``
        form is over ``max_value_bytes`` is not stored (it could not be loaded)."""
        rows = []
        for key, value in items:
            blob = _encode(value, self.max_value_bytes)
            if blob is not None:
                rows.append((kind, _text_bytes(key), blob))
        if not rows:
            return
        with self._lock:
            if self._db is None:
                return
            try:
                with _transaction(self._db):
                    self._db.executemany("INSERT OR REPLACE INTO blobs VALUES (?, ?, ?)", rows)
            except sqlite3.Error:
                self._failed()

    # -- file stats ------------------------------------------------------------------------

    def stats(self, root: str) -> dict[str, Stat]:
        """Each file's :data:`Stat` row last recorded for ``root``."""
        with self._lock:
            if self._db is None:
                return {}
            try:
                rows = self._db.execute(
                    "SELECT path, size, mtime, ctime, ino, indexed, digest FROM stats WHERE root = ?",
                    (_text_bytes(root),),
                ).fetchall()
            except sqlite3.Error:
                self._failed()
                return {}
        found: dict[str, Stat] = {}
        for path, *numbers, digest in rows:
            name = _bytes_text(path)
            if name is not None and isinstance(digest, str) and all(isinstance(n, int) for n in numbers):
                size, mtime, ctime, ino, indexed = numbers
                found[name] = (size, mtime, ctime, ino, indexed, digest)
        return found

    def put_stats(self, root: str, rows: dict[str, Stat], gone: Iterable[str]) -> None:
        """Record ``rows`` for ``root`` and forget the files ``gone``."""
        base = _text_bytes(root)
        values = [(base, _text_bytes(path), *row) for path, row in rows.items()]
        removed = [(base, _text_bytes(path)) for path in gone]
        if not values and not removed:
            return
        with self._lock:
            if self._db is None:
                return
            try:
                with _transaction(self._db):
                    self._db.executemany(
                        "INSERT OR REPLACE INTO stats VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values
                    )
                    self._db.executemany("DELETE FROM stats WHERE root = ? AND path = ?", removed)
            except sqlite3.Error:
                self._failed()


_DAMAGED = object()


def _refuse_planted(path: Path) -> None:
    """Raise ``sqlite3.DatabaseError`` if the database file or one of its journal files is
    there but is a symbolic link, not a regular file, or not the user's own (one planted to
    make the cache write into another database): the store then deletes those names (a link
    itself, never its target) and starts an empty database."""
    geteuid = getattr(os, "geteuid", None)
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            info = os.lstat(f"{path}{suffix}")
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise sqlite3.DatabaseError(f"the cache file cannot be checked: {exc}") from exc
        if not stat.S_ISREG(info.st_mode) or (geteuid is not None and info.st_uid != geteuid()):
            raise sqlite3.DatabaseError("the cache file is a link, not a regular file, or not the user's")


def _text_bytes(text: str) -> bytes:
    """A key, root or path as stored: UTF-8, a lone surrogate as its 3-byte form."""
    return text.encode("utf-8", "surrogatepass")


def _bytes_text(data: object) -> str | None:
    """A stored key, root or path as text (``None`` for anything not stored by
    :func:`_text_bytes`)."""
    if not isinstance(data, bytes):
        return None
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None


def _compressed_bound(most: int) -> int:
    """The most bytes ``zlib`` makes of ``most`` bytes (stored blocks of 16 KiB, 5 bytes of
    header each, and the stream's header and checksum), with room to spare."""
    return most + 5 * (most // 16_384 + 1) + 64


def _encode(value: object, most: int) -> bytes | None:
    """The stored form of ``value`` (``None`` if its ``marshal`` form is over ``most`` bytes)."""
    data = marshal.dumps(value)  # type: ignore[arg-type]
    return zlib.compress(data, 1) if len(data) <= most else None


def _decode(blob: object, most: int) -> object:
    """The value of a stored ``blob``, or ``_DAMAGED``: not bytes, not a complete ``zlib``
    stream (its checksum included), more than ``most`` bytes once decompressed (the
    decompressor stops at ``most + 1`` bytes: nothing larger is ever held), or not a
    ``marshal`` value."""
    if not isinstance(blob, bytes):
        return _DAMAGED
    try:
        inflate = zlib.decompressobj()
        # At most most + 1 bytes out; the rest of the stream stays compressed, unread.
        out = inflate.decompress(blob, most + 1)
        if len(out) > most or not inflate.eof or inflate.unused_data:
            return _DAMAGED
        return marshal.loads(out)
    except (zlib.error, ValueError, EOFError, TypeError):
        return _DAMAGED


def _parts(keys: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(keys), size):
        yield keys[start : start + size]


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
