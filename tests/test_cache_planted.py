"""The index cache never writes through a planted file: a database name (or a journal's) that
is a symbolic link, or not a regular file, is replaced by a fresh database of its own; the
file a link pointed to is left as it was."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from bugcontext.job._cache import Store, rules_version


def _tables(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return sorted(row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_planted_link_is_replaced_not_followed(tmp_path: Path, suffix: str) -> None:
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE mine (x INTEGER)")
    before = foreign.read_bytes()
    cache = tmp_path / "cache"
    cache.mkdir()
    name = cache / f"derived-{rules_version()}.sqlite3"
    if suffix:  # a real database, its journal's name planted
        Store(cache).close()
    (cache / f"{name.name}{suffix}").symlink_to(foreign)
    store = Store(cache)
    store.put_many("words", [("k", {"v": 1})])
    assert store.enabled and store.get_many("words", ["k"]) == {"k": {"v": 1}}
    store.close()
    assert foreign.read_bytes() == before and _tables(foreign) == ["mine"]
    assert not os.path.islink(name) and name.is_file()
    assert not os.path.islink(f"{name}{suffix}")


def test_a_folder_in_the_databases_place_turns_the_store_off(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / f"derived-{rules_version()}.sqlite3").mkdir(parents=True)
    store = Store(cache)
    assert not store.enabled
    assert store.get_many("words", ["k"]) == {}
