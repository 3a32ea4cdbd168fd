"""The on-disk store of a :class:`repo_context.Workspace`: what was derived from each file,
keyed by the file's content hash, in one SQLite database (the standard library's ``sqlite3``).

The database is safe under concurrent processes (SQLite's locking, write-ahead log, a busy
timeout; every write is one transaction) and is never trusted blindly: its name and a row in
it carry the version of the extraction rules (:func:`rules_version`), values are ``marshal``
data (plain strings, numbers, tuples, lists, sets, dicts, bytes: loading one runs no code)
compressed with ``zlib`` (whose checksum catches a damaged value), and the caller checks each
value's shape. A value that fails is a miss; a database that cannot be opened or read, or that
holds another version, is deleted and made again; if that fails too the store turns itself
off (every lookup a miss) and the workspace works without it.
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

__all__ = ["Store", "rules_version"]

#: Bumped by hand when what is stored changes shape.
SCHEMA = 1

_rules: str | None = None


def rules_version() -> str:
    """A hex digest naming the extraction rules: the store's schema, the package's
    ``sources`` modules, ``workspace`` and ``secrets`` (their text: any change to how files
    are read, refused, parsed, chunked or tokenized gives another version), the compiled
    extension (its size and time: it holds the secret detector), the Python version (``ast``
    differs between versions) and the ``bm25s`` version."""
    global _rules
    if _rules is None:
        digest = hashlib.sha256(f"{SCHEMA}|{sys.version_info[:2]}".encode())
        here = Path(__file__).resolve().parent
        modules = [*sorted((here / "sources").glob("*.py")), here / "workspace.py", here / "secrets.py"]
        for module in modules:
            digest.update(module.name.encode())
            digest.update(module.read_bytes())
        # The extension holds the secret detector: another build may refuse other files.
        from . import _core

        built = Path(_core.__file__).stat()
        digest.update(f"{built.st_size}:{built.st_mtime_ns}".encode())
        try:
            from importlib.metadata import version

            digest.update(version("bm25s").encode())
        except Exception:  # not installed as a distribution: the modules still name the rules
            pass
        _rules = digest.hexdigest()[:20]
    return _rules


class Store:
    """A key-value store of derived data in ``folder`` (created if missing).

    ``get_many(kind, keys)`` and ``put_many(kind, items)`` read and write values of one
    ``kind`` (``"words"``, ``"docs"``, ``"index"``); ``stats(root)`` and ``put_stats`` keep,
    per repository root, each file's ``(size, mtime_ns, inode, digest)``. ``enabled`` turns
    false when the database cannot be used at all.
    """

    def __init__(self, folder: Path) -> None:
        self.version = rules_version()
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
                    "CREATE TABLE IF NOT EXISTS blobs (kind TEXT NOT NULL, key TEXT NOT NULL, "
                    "value BLOB NOT NULL, PRIMARY KEY (kind, key))"
                )
                db.execute(
                    "CREATE TABLE IF NOT EXISTS stats (root TEXT NOT NULL, path TEXT NOT NULL, "
                    "size INTEGER NOT NULL, mtime INTEGER NOT NULL, ino INTEGER NOT NULL, "
                    "digest TEXT NOT NULL, PRIMARY KEY (root, path))"
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
                    rows = self._db.execute(
                        f"SELECT key, value FROM blobs WHERE kind = ? AND key IN ({marks})", (kind, *part)
                    ).fetchall()
                    for key, blob in rows:
                        value = _decode(blob)
                        if value is not _DAMAGED:
                            found[key] = value
            except sqlite3.Error:
                self._failed()
        return found

    def put_many(self, kind: str, items: Iterable[tuple[str, object]]) -> None:
        """Store the values of ``items`` (``(key, value)`` pairs) under ``kind``, in one
        transaction; a failure to write loses nothing but the cache."""
        rows = [(kind, key, _encode(value)) for key, value in items]
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

    def stats(self, root: str) -> dict[str, tuple[int, int, int, str]]:
        """Each file's ``(size, mtime_ns, inode, digest)`` last recorded for ``root``."""
        with self._lock:
            if self._db is None:
                return {}
            try:
                rows = self._db.execute(
                    "SELECT path, size, mtime, ino, digest FROM stats WHERE root = ?", (root,)
                ).fetchall()
            except sqlite3.Error:
                self._failed()
                return {}
        return {
            path: (size, mtime, ino, digest)
            for path, size, mtime, ino, digest in rows
            if isinstance(path, str)
            and isinstance(digest, str)
            and all(isinstance(n, int) for n in (size, mtime, ino))
        }

    def put_stats(self, root: str, rows: dict[str, tuple[int, int, int, str]], gone: Iterable[str]) -> None:
        """Record ``rows`` for ``root`` and forget the files ``gone``."""
        values = [(root, path, *row) for path, row in rows.items()]
        removed = [(root, path) for path in gone]
        if not values and not removed:
            return
        with self._lock:
            if self._db is None:
                return
            try:
                with _transaction(self._db):
                    self._db.executemany("INSERT OR REPLACE INTO stats VALUES (?, ?, ?, ?, ?, ?)", values)
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


def _encode(value: object) -> bytes:
    return zlib.compress(marshal.dumps(value), 1)  # type: ignore[arg-type]


def _decode(blob: object) -> object:
    if not isinstance(blob, bytes):
        return _DAMAGED
    try:
        return marshal.loads(zlib.decompress(blob))
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
