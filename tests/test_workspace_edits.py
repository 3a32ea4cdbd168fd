"""The workspace sees every edit: stats that do not move (``cp -p``, ``tar``, ``rsync -t``), a
write in the same timestamp tick, a table row that the check before output proves wrong; file
and folder names that are not valid UTF-8; cache values that decompress past their bound."""

from __future__ import annotations

import marshal
import os
import sqlite3
import time
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest
from bugcontext import Workspace
from bugcontext.core.limits import Limits
from bugcontext.job import _cache
from bugcontext.job import workspace as workspace_module
from bugcontext.job.sources.files import WINDOW_CHANGED
from builders import LIB

# The same size, another line 3.
EDITED = LIB.replace("int(num) / int(den)", "int(den) / int(num)")

LOG = """\
Traceback (most recent call last):
  File "tests/test_ratios.py", line 4, in test_mean_ratio
    assert mean_ratio(["1/2", "3/0"]) == 0.25
  File "lib/ratios.py", line 7, in mean_ratio
    return sum(parse_ratio(i) for i in items) / len(items)
  File "lib/ratios.py", line 3, in parse_ratio
    return int(num) / int(den)
ZeroDivisionError: division by zero
"""

TEST = """\
from lib.ratios import mean_ratio

def test_mean_ratio():
    assert mean_ratio(["1/2", "3/0"]) == 0.25
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (root / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    (root / "tests" / "test_ratios.py").write_text(TEST, encoding="utf-8")
    return root


def _fresh(root: Path | str, engine: str = "native") -> dict[str, Any]:
    """The result of the same job on a workspace that has never seen the repository."""
    return Workspace(root, cache=False).context(LOG, budget=4000, engine=engine).to_dict()


def _line3(result: Any) -> set[str]:
    """The third line of ``lib/ratios.py`` as the selected windows show it."""
    shown = set()
    for item in result.result.items:
        if item.path == "lib/ratios.py" and item.start <= 3 <= item.end:
            shown.add(item.content.splitlines()[3 - item.start].strip())
    return shown


def _edit_keeping_the_stat(path: Path, text: str) -> None:
    """Write ``text`` (of the same size) into the file in place, then set its access and
    modification times back, as ``cp -p``, ``tar -x`` and ``rsync -t`` leave a file: size,
    mtime and inode unchanged."""
    before = os.stat(path)
    with open(path, "r+b") as out:
        out.write(text.encode("utf-8"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    kept = (before.st_size, before.st_mtime_ns, before.st_ino)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == kept


def _assert_shows_the_edit(result: Any, root: Path) -> None:
    assert _line3(result) == {"return int(den) / int(num)"}
    assert all(w.why != WINDOW_CHANGED for w in result.policy_omissions)
    assert result.to_dict() == _fresh(root)


@pytest.mark.parametrize("engine", ["native", "reference"])
def test_an_edit_that_keeps_size_mtime_and_inode_is_seen(repo: Path, tmp_path: Path, engine: str) -> None:
    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    first = ws.context(LOG, budget=4000, engine=engine)
    assert _line3(first) == {"return int(num) / int(den)"}
    _edit_keeping_the_stat(repo / "lib" / "ratios.py", EDITED)
    # The same workspace, in this process: the next call sees the edit.
    again = ws.context(LOG, budget=4000, engine=engine)
    assert again.reread == ("lib/ratios.py",)
    _assert_shows_the_edit(again, repo)
    # And a new workspace on the same cache folder (a new process) sees the file as it is now.
    _edit_keeping_the_stat(repo / "lib" / "ratios.py", LIB)
    assert _line3(Workspace(repo, cache_dir=cache).context(LOG, budget=4000, engine=engine)) == {
        "return int(num) / int(den)"
    }
    _edit_keeping_the_stat(repo / "lib" / "ratios.py", EDITED)
    _assert_shows_the_edit(Workspace(repo, cache_dir=cache).context(LOG, budget=4000, engine=engine), repo)


def _forge(ws: Workspace, rel: str, *, indexed_ns: int) -> None:
    """Make the table row of ``rel`` claim the file's current stat with its old content (what
    a write within the timestamp tick of the reading leaves), here and in the cache."""
    old = ws._table[rel]
    st = os.stat(ws.root / rel)
    row = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, indexed_ns, old[5])
    ws._table[rel] = row
    assert ws._store is not None
    ws._store.put_stats(ws._key_prefix, {rel: row}, [])


def test_a_write_within_the_timestamp_tick_is_seen(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    ws.context(LOG, budget=4000)
    (repo / "lib" / "ratios.py").write_text(EDITED, encoding="utf-8")
    # The row says: this stat, the old content, read just now (the write's change time is
    # within the granularity of the reading): ambiguous, so hashed again.
    _forge(ws, "lib/ratios.py", indexed_ns=time.time_ns())
    assert workspace_module._ambiguous(ws._table["lib/ratios.py"])
    again = ws.context(LOG, budget=4000)
    assert again.reread == ("lib/ratios.py",)
    _assert_shows_the_edit(again, repo)
    # The same row in the cache, for a new workspace.
    (repo / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    ws.context(LOG, budget=4000)
    (repo / "lib" / "ratios.py").write_text(EDITED, encoding="utf-8")
    _forge(ws, "lib/ratios.py", indexed_ns=time.time_ns())
    ws.close()
    _assert_shows_the_edit(Workspace(repo, cache_dir=cache).context(LOG, budget=4000), repo)
    # A row read well after its file's last change is proven by its stat: not hashed again.
    settled = (*ws._table["lib/ratios.py"][:4], time.time_ns() + 10 * workspace_module.AMBIGUOUS_NS, "")
    assert not workspace_module._ambiguous(settled)


def test_a_row_the_check_proves_wrong_does_not_persist(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    ws.context(LOG, budget=4000)
    (repo / "lib" / "ratios.py").write_text(EDITED, encoding="utf-8")
    # A wrong row that its stat cannot reveal (read long after its last change, so not
    # ambiguous): the call may cut its windows from the old content, but the check before
    # output reads the file, withholds those windows, and forgets the row.
    _forge(ws, "lib/ratios.py", indexed_ns=time.time_ns() + 10 * workspace_module.AMBIGUOUS_NS)
    fooled = ws.context(LOG, budget=4000)
    assert all(item.content in EDITED for item in fooled.result.items if item.path == "lib/ratios.py")
    assert "lib/ratios.py" not in ws._table
    # So the next call, and a new workspace on the same cache, read it again.
    _assert_shows_the_edit(ws.context(LOG, budget=4000), repo)
    _forge(ws, "lib/ratios.py", indexed_ns=time.time_ns() + 10 * workspace_module.AMBIGUOUS_NS)
    (repo / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    ws.context(LOG, budget=4000)
    ws.close()
    again = Workspace(repo, cache_dir=cache).context(LOG, budget=4000)
    assert _line3(again) == {"return int(num) / int(den)"}


# --- names that are not valid UTF-8 -------------------------------------------------------------


@pytest.mark.parametrize("engine", ["native", "reference"])
def test_names_that_are_not_utf8_work_with_the_cache(tmp_path: Path, engine: str) -> None:
    root = os.fsdecode(os.fsencode(tmp_path) + b"/repo\xff")
    name = os.fsdecode(b"lib/r\xffatios.py")  # "lib/r\udcffatios.py"
    assert "\udcff" in root and "\udcff" in name
    os.makedirs(os.path.join(root, "lib"))
    Path(root, name).write_text(LIB, encoding="utf-8")
    Path(root, os.fsdecode(b"lib/\xff.py")).write_text("def other():\n    return 2\n", encoding="utf-8")
    log = LOG.replace("lib/ratios.py", name)
    cache = tmp_path / "cache"
    first = Workspace(root, cache_dir=cache).context(log, budget=4000, engine=engine)
    assert {item.path for item in first.result.items} == {name}
    assert first.failure_file == name
    expected = Workspace(root, cache=False).context(log, budget=4000, engine=engine).to_dict()
    assert first.to_dict() == expected
    # A new workspace on the same cache finds every file and its derived data there.
    warm = Workspace(root, cache_dir=cache)
    again = warm.context(log, budget=4000, engine=engine)
    assert again.reread == () or set(again.reread) <= {name, os.fsdecode(b"lib/\xff.py")}
    assert again.to_dict() == expected
    assert warm._store is not None
    stored = warm._store.stats(warm._key_prefix)
    assert set(stored) == {name, os.fsdecode(b"lib/\xff.py")}


# --- cache values decompressed within their bound ------------------------------------------------


def test_a_value_is_never_decompressed_past_its_bound() -> None:
    most = 1 << 20
    bomb = zlib.compress(b"\0" * (64 << 20), 9)  # 64 MiB of zeros in about 64 KB
    assert len(bomb) < 100_000
    tracemalloc.start()
    try:
        assert _cache._decode(bomb, most) is _cache._DAMAGED
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * most
    # At the bound exactly, a value loads; one byte over, it is damaged.
    value = b"x" * 1000
    data = marshal.dumps(value)
    blob = zlib.compress(data)
    assert _cache._decode(blob, len(data)) == value
    assert _cache._decode(blob, len(data) - 1) is _cache._DAMAGED
    # Truncated, or followed by other bytes: damaged.
    assert _cache._decode(blob[:-1], len(data)) is _cache._DAMAGED
    assert _cache._decode(blob + b"\0", len(data)) is _cache._DAMAGED
    # Too large to load, so never stored.
    assert _cache._encode(value, len(data) - 1) is None
    assert _cache._encode(value, len(data)) == zlib.compress(data, 1)


def test_an_oversized_cache_value_is_a_miss_and_rebuilt(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = _fresh(repo)
    ws = Workspace(repo, cache_dir=cache)
    assert ws.context(LOG, budget=4000).to_dict() == expected
    path = ws.cache_path
    assert path is not None
    ws.close()
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE blobs SET value = ?", (zlib.compress(b"\0" * (8 << 20), 9),))
    db.close()
    small = Limits(max_cache_value_bytes=1 << 20)
    assert Workspace(repo, cache_dir=cache, limits=small).context(LOG, budget=4000).to_dict() == expected
    # A limit below every value: nothing is stored, everything is derived, the result is the same.
    tiny = Workspace(repo, cache_dir=tmp_path / "tiny", limits=Limits(max_cache_value_bytes=0))
    assert tiny.context(LOG, budget=4000).to_dict() == expected
    assert tiny._store is not None and tiny._store.get_many("index", [tiny._index_key]) == {}


def test_the_search_index_of_a_repository_sees_an_edit_that_keeps_the_stat(repo: Path) -> None:
    from bugcontext.job.sources import Repository
    from bugcontext.job.sources.search import SearchIndex

    SearchIndex.clear_cache()
    first = SearchIndex.for_repository(Repository(repo))
    assert first is SearchIndex.for_repository(Repository(repo))  # unchanged: reused
    renamed = LIB.replace("int(num) / int(den)", "frobnicated(num, 0)")
    _edit_keeping_the_stat(repo / "lib" / "ratios.py", renamed)
    changed = SearchIndex.for_repository(Repository(repo))
    assert changed is not first
    assert changed.query(["frobnicated"]) != []
