"""The index at scale: the symbol summaries kept per content hash (a new process on an
unchanged repository does not parse again what only names definitions and imports), the
cyclic collector paused during a call and turned back on, and the same context whatever
was kept."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from bugcontext import Workspace
from bugcontext.core.composer import CALLER_SOURCE
from bugcontext.job.sources import symbols as symbols_module
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.symbols import FileSummary, ParsedFile, SymbolIndex

UTIL = """\
def helper(value):
    return value * 2


class Scale:
    factor = 3

    def apply(self, value):
        return helper(value) * self.factor
"""

CORE = """\
from lib.util import helper, Scale


def compute(items):
    total = 0
    for item in items:
        total += helper(item)
    return Scale().apply(total) / ratio(0)
"""

TEST = """\
from lib.core import compute


def test_compute():
    assert compute([1, 2]) == 18
"""

# Other files that mention the names (the symbol index looks at each of them).
OTHER = """\
from lib.util import helper


def other_{n}(x, ratio):
    return helper(x) + ratio
"""

# ``ratio`` (read in core.py without an import) is looked up across the repository.
RATIO = """\
def ratio(value):
    return value
"""

GO = """\
package calc

import (
\t"fmt"
\t"strings"
)

type Box struct {
\tWidth int
}

func (b Box) Area() int { return b.Width * b.Width }

func Describe(b Box) string {
\treturn strings.TrimSpace(fmt.Sprint(b.Area()))
}
"""

LOG = """\
Traceback (most recent call last):
  File "tests/test_core.py", line 5, in test_compute
    assert compute([1, 2]) == 18
  File "lib/core.py", line 8, in compute
    return Scale().apply(total) / ratio(0)
ZeroDivisionError: division by zero
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (root / "lib" / "util.py").write_text(UTIL, encoding="utf-8")
    (root / "lib" / "core.py").write_text(CORE, encoding="utf-8")
    for n in range(6):
        (root / "lib" / f"other_{n}.py").write_text(OTHER.format(n=n), encoding="utf-8")
    (root / "lib" / "ratio.py").write_text(RATIO, encoding="utf-8")
    (root / "tests" / "test_core.py").write_text(TEST, encoding="utf-8")
    (root / "calc").mkdir()
    (root / "calc" / "box.go").write_text(GO, encoding="utf-8")
    return root


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths parsed with tree-sitter from now on."""
    seen: list[str] = []
    original = ParsedFile.__init__

    def counting(self: ParsedFile, source: Any, loaded: Any) -> None:
        seen.append(source.path)
        original(self, source, loaded)

    monkeypatch.setattr(symbols_module.ParsedFile, "__init__", counting)
    return seen


def _shape(result: Any) -> list[tuple[str, int, int, str]]:
    return [(i.path, i.start, i.end, str(i.reason)) for i in result.result.items]


def test_summary_round_trip(repo: Path) -> None:
    index = SymbolIndex(Repository(repo))
    for path in ("lib/util.py", "lib/core.py", "calc/box.go"):
        parsed = index.parsed(path)
        assert parsed is not None
        summary = FileSummary.of(parsed)
        back = FileSummary.from_value(path, summary.value())
        assert back is not None
        assert back.definitions == parsed.definitions
        assert back.imports == parsed.imports
        assert back.package == parsed.package
        assert back.spec is parsed.spec
        for definition in parsed.definitions:
            assert back.defined(definition.name) == parsed.defined(definition.name)
    go = FileSummary.of(index.parsed("calc/box.go"))  # type: ignore[arg-type]
    assert {d.name for d in go.definitions} >= {"Box", "Area", "Describe"}
    assert [i.module for i in go.imports] == ["fmt", "strings"]


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: v[:3],  # too short
        lambda v: ("go", *v[1:]),  # another language than the file's
        lambda v: (v[0], ((1, 2, 3),), v[2], v[3]),  # a definition of another shape
        lambda v: (v[0], ((*v[1][0][:3], "macro", *v[1][0][4:]),), v[2], v[3]),  # unknown kind
        lambda v: (v[0], v[1], (("1", "m", None, "m"),), v[3]),  # an import line as text
        lambda v: (v[0], v[1], v[2], 7),  # package not text
        lambda v: [*v],  # a list, not a tuple
    ],
)
def test_damaged_summary_is_none(repo: Path, damage: Any) -> None:
    parsed = SymbolIndex(Repository(repo)).parsed("lib/util.py")
    assert parsed is not None
    value = FileSummary.of(parsed).value()
    assert FileSummary.from_value("lib/util.py", damage(value)) is None


def test_new_process_parses_only_what_needs_a_tree(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    cold = Workspace(repo, cache_dir=cache).context(LOG)
    parsed = _parses(monkeypatch)  # counting starts now
    warm = Workspace(repo, cache_dir=cache).context(LOG)
    assert _shape(warm) == _shape(cold)
    assert warm.section == cold.section
    # The files only looked up for their definitions and imports are not parsed again.
    warm_parses = set(parsed)
    assert not any(path.startswith("lib/other_") for path in warm_parses)
    # Without a cache every file the analysis reaches is parsed, those files too.
    parsed.clear()
    fresh = Workspace(repo, cache=False).context(LOG)
    assert _shape(fresh) == _shape(cold)
    assert any(path.startswith("lib/other_") for path in parsed)
    assert warm_parses < set(parsed)


def test_summary_follows_the_content(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = Workspace(repo, cache_dir=cache).context(LOG)
    assert ("lib/util.py", 1, 2) in {(i.path, i.start, i.end) for i in first.result.items}
    # helper moves down two lines: a kept summary of the old content must not be used.
    (repo / "lib" / "util.py").write_text("import os\n\n" + UTIL, encoding="utf-8")
    edited = Workspace(repo, cache_dir=cache).context(LOG)
    fresh = Workspace(repo, cache=False).context(LOG)
    assert _shape(edited) == _shape(fresh)
    spans = {(i.path, i.start, i.end) for i in edited.result.items}
    assert ("lib/util.py", 3, 4) in spans
    assert ("lib/util.py", 1, 2) not in spans


@pytest.mark.parametrize("enabled", [True, False])
def test_collector_state_is_restored(repo: Path, enabled: bool) -> None:
    was = gc.isenabled()
    try:
        if enabled:
            gc.enable()
        else:
            gc.disable()
        seen: list[bool] = []
        ws = Workspace(repo, cache=False)
        original = ws._search_index

        def spying(*args: Any) -> Any:
            seen.append(gc.isenabled())
            return original(*args)

        ws._search_index = spying  # type: ignore[method-assign]
        ws.context(LOG)
        assert seen == [False]  # paused during the call
        assert gc.isenabled() is enabled
        with pytest.raises(LookupError):
            ws.context(LOG, test="no_such_test")
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()
        else:
            gc.disable()


def test_kept_neighbours_follow_the_listing(repo: Path, tmp_path: Path) -> None:
    """A Python file's neighbours are kept per content while the analysed paths are the
    same: a file added that an import names is found (the listing changed)."""
    from bugcontext.job.workspace import _Symbols

    (repo / "lib" / "core.py").write_text("import lib.extra\n" + CORE, encoding="utf-8")
    cache = tmp_path / "cache"

    def both() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        ws = Workspace(repo, cache_dir=cache)
        ws.context(LOG)
        reader = ws.repository
        kept = _Symbols(reader, symbols_module.source_paths(reader))  # type: ignore[arg-type]
        plain = SymbolIndex(Repository(repo))
        return (
            {p: kept.neighbours(p) for p in kept.paths},
            {p: plain.neighbours(p) for p in plain.paths},
        )

    kept, plain = both()
    assert kept == plain
    assert "lib/extra.py" not in kept["lib/core.py"]
    (repo / "lib" / "extra.py").write_text("VALUE = 1\n", encoding="utf-8")
    kept, plain = both()
    assert kept == plain
    assert "lib/extra.py" in kept["lib/core.py"]


def test_an_edit_updates_the_latest_index(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After one file is edited, the search index is the latest one updated for that file
    (in the same workspace, and in a new one through the cache), not indexed again: the
    same context as a workspace without a cache."""
    from bugcontext.job import workspace as workspace_module

    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    ws.context(LOG)
    derived: list[str] = []
    built: list[int] = []
    doc = workspace_module._doc
    bm25 = workspace_module._bm25_index

    def counting_doc(reader: Any, rel: str) -> Any:
        derived.append(rel)
        return doc(reader, rel)

    def counting_bm25(keys: Any, corpus: Any) -> Any:
        built.append(len(keys))
        return bm25(keys, corpus)

    monkeypatch.setattr(workspace_module, "_doc", counting_doc)
    monkeypatch.setattr(workspace_module, "_bm25_index", counting_bm25)
    edits = ["def helper(value):\n    return value * 3\n", UTIL + "\n\ndef more():\n    pass\n"]
    for n, text in enumerate(edits):
        (repo / "lib" / "util.py").write_text(text, encoding="utf-8")
        same = ws.context(LOG)
        assert derived == ["lib/util.py"] and built == []
        derived.clear()
        other = Workspace(repo, cache_dir=cache).context(LOG)
        assert derived == [] and built == []  # the updated index was stored
        plain = Workspace(repo, cache=False)
        fresh = plain.context(LOG)
        derived.clear()
        built.clear()
        assert _shape(same) == _shape(other) == _shape(fresh), n
        assert same.section == fresh.section
        assert ws._index is not None and plain._index is not None
        assert (ws._index.lines, ws._index.files) == (plain._index.lines, plain._index.files)
        assert ws._index.chunks == plain._index.chunks
    # A new workspace after an edit made elsewhere starts from the latest stored index.
    (repo / "lib" / "core.py").write_text(CORE + "\n# note\n", encoding="utf-8")
    later = Workspace(repo, cache_dir=cache).context(LOG)
    assert derived == ["lib/core.py"] and built == []
    assert _shape(later) == _shape(Workspace(repo, cache=False).context(LOG))


@pytest.mark.parametrize("after", [0, 32])
def test_an_updated_index_is_stored_past_a_few_files(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int
) -> None:
    from bugcontext.job import workspace as workspace_module

    monkeypatch.setattr(workspace_module, "STORE_AFTER_FILES", after)
    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    ws.context(LOG)
    assert ws._index is not None and set(ws._index.timings) == {"build"}
    (repo / "lib" / "util.py").write_text(UTIL + "\n# edited\n", encoding="utf-8")
    first = ws.context(LOG)
    assert set(ws._index.timings) == {"update"}
    other = Workspace(repo, cache_dir=cache)
    second = other.context(LOG)
    assert other._index is not None
    # Stored after one changed file when the threshold is 0; else updated from the stored one.
    assert set(other._index.timings) == ({"load"} if after == 0 else {"update"})
    assert _shape(first) == _shape(second) == _shape(Workspace(repo, cache=False).context(LOG))


def _store_kinds(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The ``(kind, number of keys)`` of every cache look-up from now on."""
    from bugcontext.job._cache import Store

    seen: list[tuple[str, int]] = []
    original = Store.get_many

    def counting(self: Store, kind: str, keys: Any) -> Any:
        seen.append((kind, len(keys)))
        return original(self, kind, keys)

    monkeypatch.setattr(Store, "get_many", counting)
    return seen


def test_a_new_process_answers_look_ups_from_the_word_index(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new workspace on an unchanged repository loads the word index of its files (one
    value), not each file's words, and gives the context of a workspace without a cache;
    the files it names are the ones whose words hold each name."""
    from bugcontext.job.workspace import _Symbols

    cache = tmp_path / "cache"
    cold = Workspace(repo, cache_dir=cache).context(LOG)
    looked = _store_kinds(monkeypatch)
    ws = Workspace(repo, cache_dir=cache)
    warm = ws.context(LOG)
    assert ("words-index", 1) in looked
    assert not [n for kind, n in looked if kind == "words" and n > 1]
    assert ws._word_index is not None
    fresh = Workspace(repo, cache=False).context(LOG)
    assert _shape(warm) == _shape(cold) == _shape(fresh)
    assert warm.section == fresh.section
    reader = ws.repository
    kept = _Symbols(reader, symbols_module.source_paths(reader))  # type: ignore[arg-type]
    plain = SymbolIndex(Repository(repo))
    for name in ("helper", "ratio", "Scale", "compute", "factor", "nothing_here", "Box", "apply"):
        assert kept.mentioning(name) == plain.mentioning(name), name
        assert kept._may_define(name) == plain._may_define(name), name


def test_the_word_index_follows_edits(repo: Path, tmp_path: Path) -> None:
    """A file edited after the word index was made is looked at through its own words (in
    the same workspace and in a new one): a name added or removed there is seen."""
    from bugcontext.job.workspace import _Symbols

    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    ws.context(LOG)
    assert ws._word_index is not None
    made = ws._word_index
    (repo / "lib" / "ratio.py").write_text("def quotient(value):\n    return value\n", encoding="utf-8")
    (repo / "lib" / "other_0.py").write_text("def ratio(value):\n    return 1\n", encoding="utf-8")
    for workspace in (ws, Workspace(repo, cache_dir=cache)):
        result = workspace.context(LOG)
        assert _shape(result) == _shape(Workspace(repo, cache=False).context(LOG))
        reader = workspace.repository
        kept = _Symbols(reader, symbols_module.source_paths(reader))  # type: ignore[arg-type]
        plain = SymbolIndex(Repository(repo))
        for name in ("ratio", "quotient", "helper", "other_0"):
            assert kept.mentioning(name) == plain.mentioning(name), name
            assert kept._may_define(name) == plain._may_define(name), name
    assert ws._word_index is made  # two changed files: the index is kept, not made again
    assert "lib/ratio.py" in SymbolIndex(Repository(repo)).mentioning("quotient")


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: {**v, "words": {w: (b"\xff\xff\xff\x7f", b"") for w in v["words"]}},  # past the files
        lambda v: {**v, "words": {w: (b"\x00", b"") for w in v["words"]}},  # not whole numbers
        lambda v: {**v, "words": {w: "x" for w in v["words"]}},  # not a pair of bytes
        lambda v: {**v, "keys": [("a", 1)]},  # a key of another shape
        lambda v: [v],
    ],
)
def test_a_damaged_word_index_is_not_used(repo: Path, tmp_path: Path, damage: Any) -> None:
    from bugcontext.job import workspace as workspace_module

    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    cold = ws.context(LOG)
    assert ws._store is not None
    key = ws._word_index_key
    value = ws._store.get_many("words-index", [key])[key]
    ws._store.put_many("words-index", [(key, damage(value))])
    warm = Workspace(repo, cache_dir=cache).context(LOG)
    assert _shape(warm) == _shape(cold)
    assert warm.section == cold.section
    # Refused when loaded, or when a look-up reads the damaged entry.
    index = workspace_module._WordIndex.from_value(damage(value))
    assert index is None or any(index.holding(word, 0) is None for word in index.table)


def test_kept_folder_listings_follow_changes(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace keeps each folder's listing between calls: a folder whose stat is
    unchanged (and was not modified around the time it was listed) is not listed again; a
    file added, removed or renamed changes its folder's stat and is seen."""
    from bugcontext.job.sources import files as files_module

    ws = Workspace(repo, cache=False)
    ws.context(LOG)
    assert "lib" in ws._folders

    def age() -> None:  # as if listed long after the folders' last change
        for base, (key, stamp, listed) in list(ws._folders.items()):
            ws._folders[base] = (key, stamp + 10 * files_module.FOLDER_AMBIGUOUS_NS, listed)

    listed: list[str] = []
    scandir = files_module.os.scandir

    def counting(path: Any) -> Any:
        listed.append(str(path))
        return scandir(path)

    monkeypatch.setattr(files_module.os, "scandir", counting)
    age()
    same = ws.context(LOG)
    assert listed == []
    assert _shape(same) == _shape(Workspace(repo, cache=False).context(LOG))
    (repo / "lib" / "late.py").write_text("def ratio(value):\n    return 2\n", encoding="utf-8")
    (repo / "lib" / "other_1.py").rename(repo / "lib" / "moved_1.py")
    (repo / "lib" / "other_2.py").unlink()
    age()
    listed.clear()
    after = ws.context(LOG)
    assert [p for p in listed if p.endswith("/lib")]
    assert not [p for p in listed if p.endswith("/calc")]
    files = ws.repository.files()
    assert "lib/late.py" in files and "lib/moved_1.py" in files
    assert "lib/other_1.py" not in files and "lib/other_2.py" not in files
    assert files == Repository(repo).files()
    assert _shape(after) == _shape(Workspace(repo, cache=False).context(LOG))


def test_a_damaged_latest_word_index_is_not_built_on(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new workspace starting from a damaged latest word index (an entry that is not whole
    numbers) with more files changed than it updates one by one makes no index from it and
    gives the context of a workspace without a cache."""
    from bugcontext.job import workspace as workspace_module

    monkeypatch.setattr(workspace_module, "STORE_AFTER_FILES", 0)
    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    ws.context(LOG)
    assert ws._store is not None
    key = ws._word_index_key
    value = ws._store.get_many("words-index", [key])[key]
    damaged = {**value, "words": {w: (b"\x00", b"") for w in value["words"]}}
    ws._store.put_many("words-index", [(key, damaged)])
    (repo / "lib" / "util.py").write_text(UTIL + "\n# edited\n", encoding="utf-8")
    other = Workspace(repo, cache_dir=cache)
    result = other.context(LOG)
    assert other._word_index is None
    assert _shape(result) == _shape(Workspace(repo, cache=False).context(LOG))


# -- the calls of a name, kept per content hash -------------------------------------------

USE = """\
from lib.core import compute


def use_{n}(values):
    return compute(values) + {n}
"""


@pytest.fixture
def called(repo: Path) -> Path:
    """``repo`` with files that call the failing function ``compute``."""
    for n in range(4):
        (repo / "lib" / f"use_{n}.py").write_text(USE.format(n=n), encoding="utf-8")
    return repo


def _windows(result: Any) -> set[tuple[str, int, int, str | None]]:
    """The selected windows of a context (a budget that holds them all, see ``_context``)."""
    assert all(o.reason == "overlap" for o in result.result.omitted)
    return {(i.path, i.start, i.end, i.source_id) for i in result.result.items}


def _context(repo: Path, **options: Any) -> Any:
    result = Workspace(repo, **options).context(LOG, budget=100_000)
    return result


def _call_searches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The ``(path, name)`` of every search of a parsed file for a name's identifiers (how
    the calls of a name are found) from now on."""
    seen: list[tuple[str, str]] = []
    original = ParsedFile.identifiers_named

    def counting(self: ParsedFile, name: str) -> Any:
        seen.append((self.path, name))
        return original(self, name)

    monkeypatch.setattr(symbols_module.ParsedFile, "identifiers_named", counting)
    return seen


def test_a_new_process_does_not_search_the_callers_again(
    called: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    searched = _call_searches(monkeypatch)
    cold = _context(called, cache_dir=cache)
    callers = {w for w in _windows(cold) if w[0].startswith("lib/use_") and w[3] == CALLER_SOURCE}
    assert {w[:3] for w in callers} == {(f"lib/use_{n}.py", 4, 5) for n in range(4)}
    assert {(f"lib/use_{n}.py", "compute") for n in range(4)} <= set(searched)
    searched.clear()
    warm = _context(called, cache_dir=cache)
    assert warm.to_dict() == cold.to_dict()
    # The calls of compute come from the cache (a caller may still be parsed where another
    # source needs its syntax tree: the extent of its import block).
    assert not [s for s in searched if s[1] == "compute"]
    # Without a cache the callers are searched again.
    fresh = _context(called, cache=False)
    assert fresh.to_dict() == cold.to_dict()
    assert {(f"lib/use_{n}.py", "compute") for n in range(4)} <= set(searched)


def test_kept_calls_follow_the_content(called: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _context(called, cache_dir=cache)
    # use_0's call moves down three lines: the kept calls of the old content must not be used.
    text = USE.format(n=0).replace("def use_0", "import os\n\n\ndef use_0")
    (called / "lib" / "use_0.py").write_text(text, encoding="utf-8")
    edited = _context(called, cache_dir=cache)
    fresh = _context(called, cache=False)
    assert edited.to_dict() == fresh.to_dict()
    spans = {w[:3] for w in _windows(edited)}
    assert ("lib/use_0.py", 7, 8) in spans
    assert ("lib/use_0.py", 4, 5) not in spans


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: [*v],  # a list, not a tuple
        lambda v: ((v[0][0], None, False, (4, 5)),),  # a call of another shape
        lambda v: (("4", *v[0][1:]),),  # its line as text
        lambda v: ((*v[0][:2], 1, *v[0][3:]),),  # member not a bool
        lambda v: ((*v[0][:3], (4,), v[0][4]),),  # a unit of one line number
        lambda v: ((*v[0][:4], 5.0),),  # the line count not an int
    ],
)
def test_damaged_kept_calls_are_derived_again(
    called: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    from bugcontext.job import workspace as workspace_module

    cache = tmp_path / "cache"
    cold = _context(called, cache_dir=cache)
    stored = []
    original = workspace_module._calls_from_value

    def damaged(path: str, name: str, value: object) -> Any:
        if path == "lib/use_1.py" and name == "compute":
            assert isinstance(value, tuple) and len(value) == 1  # the one call, as stored
            stored.append(value)
            value = damage(value)
            assert original(path, name, value) is None
        return original(path, name, value)

    monkeypatch.setattr(workspace_module, "_calls_from_value", damaged)
    searched = _call_searches(monkeypatch)
    warm = _context(called, cache_dir=cache)
    assert stored, "the kept calls of lib/use_1.py were read"
    assert warm.to_dict() == cold.to_dict()
    assert [s for s in searched if s[1] == "compute"] == [("lib/use_1.py", "compute")]
