"""Keeping the on-disk cache in bounds, and looking at it: ``bugcontext cache info|clear``.

A cache folder (``--cache-dir``, by default :func:`bugcontext.job.workspace.default_cache_dir`)
holds one SQLite database per version of the extraction rules (``derived-VERSION.sqlite3``
and its ``-wal``/``-shm``/``-journal`` files, :mod:`bugcontext.job._cache`); the default folder
also holds the secret screen's translated rules (``secret-rules-KEY.json``, one per
detect-secrets installation: :mod:`bugcontext.core.secrets`). Its *size* is the bytes of those
files; its *entries* the stored values of the databases (one row of ``blobs`` each: a file's
words, parse, chunks, a search index).

:class:`TrackedStore` is the workspace's store with use times: every value read or written
has its time recorded (a ``used`` table in the same database, ``(kind, key, used_ns)``), and
after each write the folder is kept within ``Limits.max_cache_bytes``
(:func:`enforce`): first the databases of other rule versions go (the least recently
modified first: the running version never reads them), then the least recently used entries
of the database in use, until the folder is at most :data:`LOW_WATER` of the limit; the
database is then compacted (``VACUUM``) so the file shrinks. Going over the limit is not an
error (an evicted value is a miss: derived again).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bugcontext.job._cache import Store, _text_bytes

__all__ = ["LOW_WATER", "CacheInfo", "TrackedStore", "cache_files", "clear", "enforce", "info"]

#: After an eviction the folder holds at most this share of ``max_cache_bytes``.
LOW_WATER = 0.8
_SUFFIXES = ("", "-wal", "-shm", "-journal")


#: The first bytes of every SQLite database file (its header string).
SQLITE_HEADER = b"SQLite format 3\x00"


def _is_database(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) that SQLite wrote: it starts with the
    SQLite header, or is empty (a database created and not yet written)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        head = os.read(fd, len(SQLITE_HEADER))
    except OSError:
        return False
    finally:
        os.close(fd)
    return head in (b"", SQLITE_HEADER)


def _is_rule_file(folder: Path, name: str) -> bool:
    """Whether ``name`` is a rules file of the secret screen: a regular file (not a link)
    named ``secret-rules-`` and 32 lowercase hexadecimal digits ``.json``."""
    key = name[len("secret-rules-") : -len(".json")]
    if not (name.startswith("secret-rules-") and name.endswith(".json") and len(key) == 32):
        return False
    if any(c not in "0123456789abcdef" for c in key):
        return False
    try:
        return stat.S_ISREG(os.lstat(folder / name).st_mode)
    except OSError:
        return False


def cache_files(folder: Path) -> list[Path]:
    """The cache's own files in ``folder``, sorted by name: each regular file named
    ``derived-*.sqlite3`` that is a SQLite database (:func:`_is_database`: a file of that name
    holding anything else is not ours and is left alone), and the journal files
    (``-wal``, ``-shm``, ``-journal``) of such a database; the secret screen's rules files
    (:func:`_is_rule_file`); never a link or anything else.
    ``[]`` when the folder does not exist. ``folder`` itself is taken as named (a link to a
    folder is followed, as for any path the user gives)."""
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    databases = {
        name
        for name in names
        if name.startswith("derived-") and name.endswith(".sqlite3") and _is_database(folder / name)
    }
    found = []
    for name in sorted(names):
        base = next((name[: -len(s)] for s in _SUFFIXES[1:] if name.endswith(s)), name)
        if base in databases:
            with contextlib.suppress(OSError):
                if stat.S_ISREG(os.lstat(folder / name).st_mode):
                    found.append(folder / name)
        elif _is_rule_file(folder, name):
            found.append(folder / name)
    return found


def _size(files: Iterable[Path]) -> int:
    total = 0
    for path in files:
        with contextlib.suppress(OSError):
            total += os.lstat(path).st_size
    return total


@dataclass(frozen=True)
class CacheInfo:
    """What a cache folder holds: ``folder``; ``size`` in bytes (its databases and their
    journals, and the secret screen's rules files); ``entries`` the values stored in them;
    ``databases`` the database files (one per rules version; ``current`` the one this version
    uses, or ``None`` when it is not there); ``limit`` the size limit in bytes
    (``Limits.max_cache_bytes``)."""

    folder: Path
    size: int
    entries: int
    databases: tuple[Path, ...]
    current: Path | None
    limit: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"schema", "folder", "size", "entries", "databases", "current",
        "limit"}`` (paths as strings)."""
        return {
            "schema": 1,
            "folder": str(self.folder),
            "size": self.size,
            "entries": self.entries,
            "databases": [str(p) for p in self.databases],
            "current": None if self.current is None else str(self.current),
            "limit": self.limit,
        }


def _entries(path: Path) -> int:
    """The rows of ``blobs`` in the database ``path``, read only (0 when it cannot be read)."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return 0
    try:
        row = db.execute("SELECT count(*) FROM blobs").fetchone()
        return int(row[0]) if row else 0
    except sqlite3.Error:
        return 0
    finally:
        db.close()


def info(folder: str | os.PathLike[str], limit: int, current: str | None = None) -> CacheInfo:
    """What ``folder`` holds (:class:`CacheInfo`); ``current`` is the file name of the
    database this version uses (default: none marked). Changes no entry; the size is measured
    after the entries are counted, since reading a database in write-ahead-log mode may leave
    its ``-shm``/``-wal`` files beside it."""
    where = Path(folder)
    databases = tuple(p for p in cache_files(where) if p.name.endswith(".sqlite3"))
    entries = sum(_entries(p) for p in databases)
    chosen = next((p for p in databases if p.name == current), None)
    return CacheInfo(where, _size(cache_files(where)), entries, databases, chosen, limit)


def clear(folder: str | os.PathLike[str]) -> tuple[int, int]:
    """Remove the cache's own files from ``folder`` (:func:`cache_files`; nothing else, the
    folder stays); returns how many files and bytes were removed. Raises ``OSError`` if one
    cannot be removed."""
    files = cache_files(Path(folder))
    removed = 0
    count = 0
    for path in files:
        size = _size([path])
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        removed += size
        count += 1
    return count, removed


class TrackedStore(Store):
    """A :class:`bugcontext.job._cache.Store` that records when each value was last read or
    written and keeps its folder within ``max_bytes`` (:func:`enforce`, after each write)."""

    def __init__(
        self, folder: Path, max_value_bytes: int | None = None, max_bytes: int | None = None
    ) -> None:
        super().__init__(folder, max_value_bytes)
        self.max_bytes = max_bytes
        self._track_ready = False

    def _track(self, kind: str, keys: Sequence[str]) -> None:
        """Record now as the use time of ``keys`` of ``kind`` (a failure loses only the record)."""
        if not keys:
            return
        now = time.time_ns()
        rows = [(kind, _text_bytes(key), now) for key in keys]
        with self._lock:
            if self._db is None:
                return
            try:
                if not self._track_ready:
                    self._db.execute(
                        "CREATE TABLE IF NOT EXISTS used (kind TEXT NOT NULL, key BLOB NOT NULL, "
                        "used INTEGER NOT NULL, PRIMARY KEY (kind, key))"
                    )
                    self._track_ready = True
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany("INSERT OR REPLACE INTO used VALUES (?, ?, ?)", rows)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error:
                pass

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, object]:
        found = super().get_many(kind, keys)
        self._track(kind, list(found))
        return found

    def put_many(self, kind: str, items: Iterable[tuple[str, object]]) -> None:
        pairs = list(items)
        super().put_many(kind, pairs)
        self._track(kind, [key for key, _ in pairs])
        if self.max_bytes is not None:
            enforce(self, self.max_bytes)


def enforce(store: Store, max_bytes: int) -> int:
    """Keep ``store``'s folder within ``max_bytes``: remove the databases of other rule
    versions, least recently modified first, then the least recently used entries of
    ``store``'s own database (those never recorded first), until the folder is at most
    :data:`LOW_WATER` of ``max_bytes``, and compact the database. Returns the bytes the
    folder shrank by (0 when it was within the limit). Errors lose only the eviction."""
    folder = store.path.parent
    files = cache_files(folder)
    before = _size(files)
    if before <= max_bytes:
        return 0
    target = int(max_bytes * LOW_WATER)
    own = {f"{store.path.name}{suffix}" for suffix in _SUFFIXES}
    others = sorted((p for p in files if p.name.endswith(".sqlite3") and p.name not in own), key=_modified)
    for database in others:
        for suffix in _SUFFIXES:
            with contextlib.suppress(OSError):
                os.unlink(f"{database}{suffix}")
        if _size(cache_files(folder)) <= target:
            return before - _size(cache_files(folder))
    for _ in range(3):  # each pass measures again what the database's own overhead is
        _checkpoint(store)
        now = _size(cache_files(folder))
        if now <= target:
            break
        stored = _stored_bytes(store)
        if stored is None or stored == 0:
            break
        _evict_entries(store, stored - (now - target))
    return before - _size(cache_files(folder))


def _modified(path: Path) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:
        return 0


def _checkpoint(store: Store) -> None:
    """Move the write-ahead log into ``store``'s database and truncate it."""
    with store._lock:
        if store._db is not None:
            with contextlib.suppress(sqlite3.Error):
                store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _stored_bytes(store: Store) -> int | None:
    """The bytes of ``store``'s keys and values (``None`` when it cannot be read)."""
    with store._lock:
        if store._db is None:
            return None
        try:
            row = store._db.execute(
                "SELECT coalesce(sum(length(key) + length(value)), 0) FROM blobs"
            ).fetchone()
        except sqlite3.Error:
            return None
    return int(row[0]) if row else 0


def _evict_entries(store: Store, room: int) -> None:
    """Delete ``store``'s least recently used values until its stored values take at most
    ``room`` bytes (keys and compressed values counted; at least nothing is left), then
    compact the database and truncate its write-ahead log."""
    with store._lock:
        db = store._db
        if db is None:
            return
        try:
            db.execute(
                "CREATE TABLE IF NOT EXISTS used (kind TEXT NOT NULL, key BLOB NOT NULL, "
                "used INTEGER NOT NULL, PRIMARY KEY (kind, key))"
            )
            rows = db.execute(
                "SELECT b.kind, b.key, length(b.key) + length(b.value), coalesce(u.used, 0) "
                "FROM blobs b LEFT JOIN used u ON u.kind = b.kind AND u.key = b.key "
                "ORDER BY 4 DESC"
            ).fetchall()
            keep = max(room, 0)
            total = 0
            doomed: list[tuple[str, bytes]] = []
            for kind, key, size, _ in rows:  # most recently used first: kept while they fit
                total += int(size)
                if total > keep:
                    doomed.append((kind, key))
            if not doomed:
                return
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("DELETE FROM blobs WHERE kind = ? AND key = ?", doomed)
                db.executemany("DELETE FROM used WHERE kind = ? AND key = ?", doomed)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
