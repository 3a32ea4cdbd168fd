"""The on-disk cache stays in bounds (least recently used entries evicted past
``max_cache_bytes``), and ``bugcontext cache info|clear`` show and empty it."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from bugcontext import Limits, Workspace
from bugcontext.core.secrets import find_secrets
from bugcontext.integrations.cli import main
from bugcontext.job._cache import rules_version
from bugcontext.job._cache_admin import TrackedStore, cache_files, enforce
from builders import ratios_log, ratios_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return ratios_repo(tmp_path)


def _size(folder: Path) -> int:
    return sum(path.stat().st_size for path in cache_files(folder))


def test_cache_info_and_clear(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    assert main(["cache", "info", "--cache-dir", str(cache), "--format", "json"]) == 0
    empty = json.loads(capsys.readouterr().out)
    assert empty == {
        "schema": 1,
        "folder": str(cache),
        "size": 0,
        "entries": 0,
        "databases": [],
        "current": None,
        "limit": 1 << 30,
    }
    ws = Workspace(repo, cache_dir=cache)
    ws.context(ratios_log(), budget=900)
    ws.close()  # its database connection closed now, not whenever the collector frees it
    own = cache / f"derived-{rules_version()}.sqlite3"
    assert (
        main(
            [
                "cache",
                "info",
                "--cache-dir",
                str(cache),
                "--format",
                "json",
                "--limit",
                "max_cache_bytes=5000000",
            ]
        )
        == 0
    )
    found = json.loads(capsys.readouterr().out)
    assert found["entries"] > 0 and found["size"] == _size(cache) > 0
    assert (found["databases"], found["current"], found["limit"]) == ([str(own)], str(own), 5_000_000)
    assert main(["cache", "info", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"folder: {cache}",
        f"size: {_size(cache)} bytes (limit {1 << 30} bytes: max_cache_bytes)",
        f"entries: {found['entries']}",
        f"databases: 1 (this version's: {own.name})",
    ]
    # clear removes the cache's own files and nothing else.
    (cache / "notes.txt").write_text("mine", encoding="utf-8")
    (tmp_path / "target.sqlite3").write_text("not the cache's", encoding="utf-8")
    (cache / "derived-link.sqlite3").symlink_to(tmp_path / "target.sqlite3")
    # A file with the cache's name that SQLite did not write, and a journal beside it.
    (cache / "derived-mine.sqlite3").write_bytes(b"my notes, not a database")
    (cache / "derived-mine.sqlite3-journal").write_bytes(b"mine too")
    mine = {"derived-mine.sqlite3", "derived-mine.sqlite3-journal"}
    assert mine.isdisjoint(p.name for p in cache_files(cache))
    count = len(cache_files(cache))
    size = _size(cache)
    assert main(["cache", "clear", "--cache-dir", str(cache)]) == 0
    assert capsys.readouterr().out == f"removed {count} files ({size} bytes) from {cache}\n"
    assert sorted(p.name for p in cache.iterdir()) == [
        "derived-link.sqlite3",
        "derived-mine.sqlite3",
        "derived-mine.sqlite3-journal",
        "notes.txt",
    ]
    assert (cache / "derived-mine.sqlite3").read_bytes() == b"my notes, not a database"
    assert (tmp_path / "target.sqlite3").read_text(encoding="utf-8") == "not the cache's"
    assert main(["cache", "info", "--cache-dir", str(cache), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 0


def test_cache_dir_that_is_a_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f").write_text("x", encoding="utf-8")
    for action in ("info", "clear"):
        assert main(["cache", action, "--cache-dir", str(tmp_path / "f")]) == 2
        assert (
            capsys.readouterr().err == f"bugcontext cache: --cache-dir: {tmp_path / 'f'} is not a folder\n"
        )


def _values(n: int, size: int) -> list[tuple[str, object]]:
    return [(f"k{i}", os.urandom(size)) for i in range(n)]  # random bytes: zlib cannot shrink them


def test_the_least_recently_used_entries_go_past_the_limit(tmp_path: Path) -> None:
    limit = 400_000
    store = TrackedStore(tmp_path, max_bytes=limit)
    for key, value in _values(6, 40_000):
        store.put_many("docs", [(key, value)])
    assert _size(tmp_path) <= limit
    for i in range(6, 20):
        assert set(store.get_many("docs", ["k0"])) == {"k0"}  # k0 is used all along
        store.put_many("docs", [(f"k{i}", os.urandom(40_000))])
        assert _size(tmp_path) <= limit
    kept = store.get_many("docs", [f"k{i}" for i in range(20)])
    assert "k0" in kept and "k19" in kept
    assert "k1" not in kept and "k2" not in kept  # the least recently used went first
    assert 0 < len(kept) < 20


def test_other_rule_versions_go_first(tmp_path: Path) -> None:
    old = tmp_path / "derived-0000.sqlite3"  # another rules version's database
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE blobs (key TEXT PRIMARY KEY, value BLOB)")
    db.execute("INSERT INTO blobs VALUES ('k', ?)", (b"\0" * 300_000,))
    db.commit()
    db.close()
    os.utime(old, ns=(1, 1))
    store = TrackedStore(tmp_path)
    store.put_many("docs", _values(2, 10_000))
    assert enforce(store, 200_000) >= 300_000
    assert not old.exists()
    assert set(store.get_many("docs", ["k0", "k1"])) == {"k0", "k1"}  # the own entries stay
    assert enforce(store, 10 << 20) == 0  # within the limit: nothing to do


def test_a_workspace_keeps_its_cache_within_max_cache_bytes(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    free = Workspace(repo, cache_dir=cache).context(ratios_log(), budget=900)
    full = _size(cache)
    for path in cache_files(cache):
        path.unlink()
    limit = full // 2
    bounded = Workspace(repo, cache_dir=cache, limits=Limits(max_cache_bytes=limit)).context(
        ratios_log(), budget=900
    )
    assert _size(cache) <= limit
    assert bounded.section == free.section  # an evicted value is only a miss


def test_a_relative_cache_dir(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    Workspace(repo, cache_dir=tmp_path / "cache").context(ratios_log(), budget=900)
    monkeypatch.chdir(tmp_path)
    assert main(["cache", "info", "--cache-dir", "cache", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["folder"] == "cache" and found["entries"] > 0


# A realistic fake token, made here so that no file of the project holds one whole.
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TOKEN_SHOWN = "[REDACTED: GitHubTokenDetector]"
NOTE = "bugcontext cache: warning: 1 secret redacted from this output (reason policy): GitHubTokenDetector\n"


def test_the_fake_token_is_a_secret_to_the_screen() -> None:
    assert [s.kind for s in find_secrets(TOKEN)] == ["GitHubTokenDetector"]


@pytest.mark.parametrize("name", [TOKEN, f"nodir_{TOKEN}"], ids=["alone", "glued"])
def test_cache_subcommands_redact_what_they_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # As every other subcommand: a secret in a path never reaches standard output.
    folder = tmp_path / "nonexist" / name
    shown = str(folder).replace(TOKEN, TOKEN_SHOWN)
    assert main(["cache", "info", "--cache-dir", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"folder: {shown}" and TOKEN not in out
    assert err == NOTE
    assert main(["cache", "info", "--cache-dir", str(folder), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["folder"] == shown and TOKEN not in out
    assert err == NOTE
    assert main(["cache", "clear", "--cache-dir", str(folder)]) == 0
    assert capsys.readouterr() == (f"removed 0 files (0 bytes) from {shown}\n", NOTE)


def test_cache_info_redacts_the_names_of_its_databases(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / TOKEN
    Workspace(repo, cache_dir=folder).context(ratios_log(), budget=900)
    assert main(["cache", "info", "--cache-dir", str(folder), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    found = json.loads(out)
    assert TOKEN not in out and found["entries"] > 0
    assert found["current"] == str(folder / f"derived-{rules_version()}.sqlite3").replace(TOKEN, TOKEN_SHOWN)
    assert err.startswith("bugcontext cache: warning: ") and "GitHubTokenDetector" in err
    assert main(["cache", "clear", "--cache-dir", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert TOKEN not in out and out.endswith(f"from {str(folder).replace(TOKEN, TOKEN_SHOWN)}\n")
