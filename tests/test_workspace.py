"""The workspace: the context job as an API, kept current between calls and cached on disk."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext import ContextResult, Workspace
from bugcontext.integrations.cli import main
from bugcontext.job import workspace as workspace_module
from bugcontext.job.sources import Repository, gather
from bugcontext.job.sources.symbols import SymbolIndex
from builders import LIB, OTHER, ratios_log, ratios_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return ratios_repo(tmp_path)


def _spent(result: bugcontext.ContextResult) -> int:
    """What the failure blocks at the head of ``result``'s section cost (characters)."""
    return sum(len(block.text) for block in result.failure_blocks)


def _plain(root: Path, log: str, budget: int, cost: dict[str, Any]) -> bugcontext.BuildResult:
    """The same job without a workspace: gather, stamp each candidate with its provenance (the
    SHA-256 of its file's bytes, the source that proposed it), then build verified against the
    folder."""
    bugcontext.job.sources.search.SearchIndex.clear_cache()
    gathered = gather(root, log)
    data = gathered.build_input(budget)
    stamped = [
        {
            **w.to_dict(),
            "source_sha256": hashlib.sha256((root / w.path).read_bytes()).hexdigest(),
            "source_id": w.source,
        }
        for w in gathered.candidates
    ]
    return bugcontext.build(
        {
            "candidates": stamped,
            "failure_files": data["failure_files"],
            "budget": budget,
            "cost": cost,
        },
        verify=bugcontext.folder_reader(root),
    )


def test_context_is_the_job_without_a_workspace(repo: Path, tmp_path: Path) -> None:
    ws = Workspace(repo, cache_dir=tmp_path / "cache")
    result = ws.context(ratios_log(), budget=900)
    assert isinstance(result, ContextResult)
    # The default cost is the rendered Markdown section, so the section is within the budget.
    assert result.result.cost.to_dict() == bugcontext.Cost.parse({"template": "markdown"}).to_dict()
    assert len(result.section) == result.used <= 900 == result.budget
    # The failure blocks open the section; the windows were built in what they left.
    assert result.section.startswith("".join(b.text for b in result.failure_blocks))
    assert result.result.budget == 900 - sum(b.cost for b in result.failure_blocks) < 900
    assert result.used == result.result.used + sum(b.cost for b in result.failure_blocks)
    assert (
        result.result.to_dict()
        == _plain(repo, ratios_log(), result.result.budget, {"template": "markdown"}).to_dict()
    )
    assert result.failure is not None and result.failure.name == "test_mean_ratio"
    assert [f.name for f in result.failures] == ["test_mean_ratio", "test_other"]
    assert result.failure_file == "lib/ratios.py"
    assert set(result.timings) == {"refresh", "derive", "gather", "build", "total"}
    assert all(t >= 0 for t in result.timings.values())
    assert sorted(result.reread) == [
        "lib/__init__.py", "lib/other.py", "lib/ratios.py", "tests/test_ratios.py",
    ]  # fmt: skip
    assert result.to_dict() == {
        **result.result.to_dict(),
        "budget": 900,
        "used": result.used,
        "build_budget": result.result.budget,
        "build_used": result.result.used,
        "failure_blocks": [b.to_dict() for b in result.failure_blocks],
        "failure_blocks_left_out": [],
        "schema": 1,
        "policy_omitted": [],
        "failure": {
            "test": "test_mean_ratio",
            "test_id": "tests/test_ratios.py::test_mean_ratio",
            "error": "ZeroDivisionError",
            "message": "division by zero",
            "failure_file": "lib/ratios.py",
        },
        "failing_tests": [
            {
                "test": "tests/test_ratios.py::test_mean_ratio",
                "name": "test_mean_ratio",
                "status": "failed",
                "phase": "call",
                "exception": "ZeroDivisionError",
                "message": "division by zero",
                "selected": True,
            },
            {
                "test": "tests/test_ratios.py::test_other",
                "name": "test_other",
                "status": "failed",
                "phase": "call",
                "exception": "AssertionError",
                "message": "assert 4 == 5",
                "selected": False,
            },
        ],
        "policy_redacted": [],
    }
    # The one-call form gives the same.
    once = bugcontext.context(repo, ratios_log(), budget=900, cache_dir=tmp_path / "cache")
    assert once.result.to_dict() == result.result.to_dict()
    # Tokens and another template.
    tokens = ws.context(
        ratios_log(), budget=120, cost={"unit": "tokens", "template": "xml"}, engine="reference"
    )
    assert (
        tokens.result.to_dict()
        == _plain(repo, ratios_log(), tokens.result.budget, {"unit": "tokens", "template": "xml"}).to_dict()
    )
    counter = bugcontext.TokenCounter("o200k_base")
    assert counter.count_one(tokens.section) == tokens.used <= 120


def test_test_chooses_the_failure(repo: Path) -> None:
    ws = Workspace(repo, cache=False)
    other = ws.context(ratios_log(), test="tests/test_ratios.py::test_other", budget=2000)
    assert other.failure is not None and other.failure.name == "test_other"
    assert other.failure_file == "tests/test_ratios.py"
    assert ws.context(ratios_log(), test="test_other", budget=2000).failure == other.failure
    with pytest.raises(LookupError, match="test_nothing"):
        ws.context(ratios_log(), test="test_nothing", budget=2000)


def test_only_changed_files_are_read_again(repo: Path, tmp_path: Path) -> None:
    ws = Workspace(repo, cache_dir=tmp_path / "cache")
    first = ws.context(ratios_log(), budget=4000)
    again = ws.context(ratios_log(), budget=4000)
    assert again.reread == ()
    assert again.result.to_dict() == first.result.to_dict()
    # Touching a file without changing it: read again (its stat changed), nothing re-derived.
    path = repo / "lib" / "other.py"
    path.write_text(OTHER, encoding="utf-8")
    derived: list[str] = []
    original = workspace_module._doc

    def counting(reader: Any, rel: str) -> Any:
        derived.append(rel)
        return original(reader, rel)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(workspace_module, "_doc", counting)
        touched = ws.context(ratios_log(), budget=4000)
        assert touched.reread == ("lib/other.py",) and derived == []
        # One edited file is derived again alone, and the context shows the edit.
        (repo / "lib" / "ratios.py").write_text(LIB.replace("int(den)", "int(den)  # den may be 0"))
        edited = ws.context(ratios_log(), budget=4000)
    assert edited.reread == ("lib/ratios.py",) and derived == ["lib/ratios.py"]
    # Only the current content of a file stays in memory.
    current = ("lib/ratios.py", ws._digest("lib/ratios.py"))
    assert [k for k in ws._docs if k[0] == "lib/ratios.py"] == [current]
    assert any("# den may be 0" in item.content for item in edited.result.items)
    assert (
        edited.result.to_dict()
        == _plain(repo, ratios_log(), 4000 - _spent(edited), {"template": "markdown"}).to_dict()
    )
    # A removed file leaves the index.
    (repo / "lib" / "other.py").unlink()
    removed = ws.context(ratios_log(), budget=4000)
    assert all(item.path != "lib/other.py" for item in removed.result.items)
    assert (
        removed.result.to_dict()
        == _plain(repo, ratios_log(), 4000 - _spent(removed), {"template": "markdown"}).to_dict()
    )


def _no_derivation(mp: pytest.MonkeyPatch) -> None:
    def fail(*args: Any) -> Any:
        raise AssertionError("derived again although cached")

    mp.setattr(workspace_module, "_doc", fail)
    mp.setattr(workspace_module, "_bm25_index", fail)
    mp.setattr(SymbolIndex, "_scan", fail)


def test_a_new_workspace_reuses_the_cache(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = Workspace(repo, cache_dir=cache).context(ratios_log(), budget=4000)
    with pytest.MonkeyPatch.context() as mp:
        _no_derivation(mp)
        ws = Workspace(repo, cache_dir=cache)
        warm = ws.context(ratios_log(), budget=4000)
    assert ws.cache_path is not None and ws.cache_path.parent == cache
    assert warm.reread == ()
    assert warm.result.to_dict() == first.result.to_dict()
    # A file read from the cache is the file as the reader reads it, parsed on demand.
    cached = ws.repository.source("lib/ratios.py")
    fresh = Repository(repo).source("lib/ratios.py")
    assert isinstance(cached, workspace_module._CachedSource)
    assert fresh is not None and not isinstance(fresh, workspace_module._CachedSource)
    assert (cached.path, cached.lines, cached.refused, cached.undecodable, cached.digest) == (
        fresh.path, fresh.lines, fresh.refused, fresh.undecodable, fresh.digest,
    )  # fmt: skip
    assert cached.tree is not None and fresh.tree is not None
    assert ast.dump(cached.tree, include_attributes=True) == ast.dump(fresh.tree, include_attributes=True)
    # Without the cache nothing is kept on disk.
    other = tmp_path / "elsewhere"
    assert Workspace(repo, cache_dir=other, cache=False).cache_path is None
    assert not other.exists()


def test_default_cache_folder_is_under_the_user_cache(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    ws = Workspace(repo)
    assert ws.cache_path is not None
    assert ws.cache_path.parent == tmp_path / "xdg" / "bugcontext"


@pytest.mark.parametrize("damage", ["garbage", "version", "blobs", "stats"])
def test_a_damaged_or_foreign_cache_is_rebuilt(repo: Path, tmp_path: Path, damage: str) -> None:
    cache = tmp_path / "cache"
    ws = Workspace(repo, cache_dir=cache)
    expected = ws.context(ratios_log(), budget=4000).result.to_dict()
    path = ws.cache_path
    assert path is not None
    ws.close()
    assert ws.cache_path is None
    if damage == "garbage":
        for suffix in ("-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        path.write_bytes(b"this is not a database" * 100)
    else:
        db = sqlite3.connect(path)
        with db:
            if damage == "version":
                db.execute("UPDATE meta SET value = 'another' WHERE key = 'version'")
            elif damage == "blobs":
                db.execute("UPDATE blobs SET value = X'00FF00'")
            else:
                db.execute("UPDATE stats SET digest = 'not a digest'")
        db.close()
    again = Workspace(repo, cache_dir=cache)
    assert again.context(ratios_log(), budget=4000).result.to_dict() == expected
    assert again.cache_path == path
    # And the rebuilt cache serves the next process.
    with pytest.MonkeyPatch.context() as mp:
        _no_derivation(mp)
        assert (
            Workspace(repo, cache_dir=cache).context(ratios_log(), budget=4000).result.to_dict() == expected
        )


def test_an_unusable_cache_folder_leaves_the_cache_off(repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    ws = Workspace(repo, cache_dir=blocker / "cache")
    assert ws.cache_path is None
    assert (
        ws.context(ratios_log(), budget=4000).result.to_dict()
        == Workspace(repo, cache=False).context(ratios_log(), budget=4000).result.to_dict()
    )


def test_workspaces_share_a_cache_concurrently(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    expected = Workspace(repo, cache=False).context(ratios_log(), budget=4000).result.to_dict()
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(
                Workspace(repo, cache_dir=cache).context(ratios_log(), budget=4000).result.to_dict()
            )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert results == [expected] * 4


# --- what context prints fits the budget ---------------------------------------------------

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé_ ", min_size=1, max_size=12)


@st.composite
def _repositories(draw: st.DrawFn) -> dict[str, str]:
    files: dict[str, str] = {}
    for i in range(draw(st.integers(1, 4))):
        body = []
        for j in range(draw(st.integers(1, 4))):
            words = draw(st.lists(_WORDS, min_size=1, max_size=6))
            body.append(f"def f{i}_{j}(x):\n    # {' '.join(words)}\n    return x + {j}\n\n")
        files[f"pkg/m{i}.py"] = "".join(body)
    return files


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    files=_repositories(),
    budget=st.integers(0, 1500),
    unit=st.sampled_from(["chars", "tokens"]),
    template=st.sampled_from([None, "markdown", "xml"]),
    line_numbers=st.booleans(),
)
def test_printed_section_fits_the_budget(
    files: dict[str, str], budget: int, unit: str, template: str | None, line_numbers: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "repo"
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        frames = "".join(
            f'  File "{rel}", line 3, in f{i}_0\n    return x + 0\n' for i, rel in enumerate(sorted(files))
        )
        log = Path(folder) / "log.txt"
        log.write_text(f"Traceback (most recent call last):\n{frames}ValueError: f0 x\n", encoding="utf-8")
        args = ["context", "--repo", str(root), "--pytest-log", str(log), "--budget", str(budget)]
        args += ["--cost", unit, "--no-cache"]
        if template is not None:
            args += ["--template", template]
            if line_numbers:
                args.append("--line-numbers")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(args) == 0, err.getvalue()
        printed = out.getvalue()
        cost = len(printed) if unit == "chars" else bugcontext.TokenCounter("o200k_base").count_one(printed)
        assert cost <= budget
        assert "## Omitted" in err.getvalue() and "## Omitted" not in printed


def test_progress_bar_on_standard_error(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(workspace_module, "PROGRESS_FILES", 0)
    shown = Workspace(repo, cache=False, progress=True).context(ratios_log(), budget=4000)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "indexing 4 files" in captured.err
    hidden = Workspace(repo, cache=False, progress=False).context(ratios_log(), budget=4000)
    assert capsys.readouterr().err == ""
    assert shown.result.to_dict() == hidden.result.to_dict()


def test_command_line_cache_options(repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "failing.log"
    log.write_text(ratios_log(), encoding="utf-8")
    base = ["context", "--repo", str(repo), "--pytest-log", str(log)]
    assert main([*base, "--no-cache", "--cache-dir", str(tmp_path / "unused")]) == 0
    uncached = capsys.readouterr().out
    assert not (tmp_path / "unused").exists()
    assert main([*base, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert capsys.readouterr().out == uncached
    assert [p.name for p in (tmp_path / "cache").glob("derived-*.sqlite3")] == [
        f"derived-{bugcontext.job._cache.rules_version()}.sqlite3"
    ]
    # A second process-like run on the warm cache prints the same.
    assert main([*base, "--cache-dir", str(tmp_path / "cache")]) == 0
    assert capsys.readouterr().out == uncached


@pytest.mark.parametrize(
    ("budget", "problem"),
    [
        (True, "must be an int, not bool"),
        (False, "must be an int, not bool"),
        ("300", "must be an int, not str"),
        (300.0, "must be an int, not float"),
        (-1, "must be >= 0, got -1"),
    ],
)
def test_a_bad_budget_is_refused_before_any_work(repo: Path, budget: Any, problem: str) -> None:
    """``budget=True`` once built an empty section and reported the budget ``True``; the
    context job refuses every budget ``build`` refuses, in the same words, in both engines and
    in the one-call form."""
    for call in (
        lambda: Workspace(repo, cache=False).context(ratios_log(), budget=budget),
        lambda: Workspace(repo, cache=False).context(ratios_log(), budget=budget, engine="reference"),
        lambda: bugcontext.context(repo, ratios_log(), budget=budget, cache=False),
    ):
        with pytest.raises(bugcontext.InvalidInputError) as caught:
            call()
        assert (caught.value.field, caught.value.problem) == ("budget", problem)
    with pytest.raises(bugcontext.InvalidInputError) as caught:
        bugcontext.build({"candidates": [], "budget": budget, "cost": {"unit": "chars"}})
    assert (caught.value.field, caught.value.problem) == ("budget", problem)


def test_a_log_that_is_not_text_is_refused(repo: Path) -> None:
    for log in (None, 3, ["a"]):
        with pytest.raises(bugcontext.InvalidInputError) as caught:
            Workspace(repo, cache=False).context(log, budget=900)  # type: ignore[arg-type]
        assert caught.value.field == "log_text"
        assert caught.value.problem == f"must be a str (the test output), not {type(log).__name__}"


def _many_files_repo(root: Path) -> str:
    """A repository of 1,500 modules (its index takes seconds to build) and a failure in one."""
    (root / "pkg").mkdir(parents=True)
    body = "".join(f"def helper_{i}(value):\n    return value + {i}\n\n\n" for i in range(40))
    for n in range(1500):
        (root / "pkg" / f"mod_{n}.py").write_text(body, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_mod.py").write_text(
        "from pkg.mod_7 import helper_3\n\n\ndef test_helper():\n    assert helper_3(1) == 5\n",
        encoding="utf-8",
    )
    return (
        "___ test_helper ___\n\n    def test_helper():\n>       assert helper_3(1) == 5\n"
        "E       assert 4 == 5\n\ntests/test_mod.py:5: AssertionError\n"
        "=== short test summary info ===\nFAILED tests/test_mod.py::test_helper - assert 4 == 5\n"
    )


@pytest.mark.parametrize("make", [_many_files_repo])
def test_a_deadline_stops_the_work_inside_its_stage(tmp_path: Path, make: Any) -> None:
    # The deadline is checked inside the long loops of the stages (the symbol analysis, the
    # index build), not only between them: the call stops soon after it, and the workspace,
    # used again without a deadline, gives the same result as a new one.
    import time

    log = make(tmp_path / "repo")
    ws = Workspace(tmp_path / "repo", cache=False)
    deadline = time.monotonic() + 0.3
    with pytest.raises(TimeoutError, match="the call's time limit passed"):
        ws.context(log, deadline=deadline)
    assert time.monotonic() - deadline < 0.5
    again = ws.context(log, budget=3000)
    fresh = Workspace(tmp_path / "repo", cache=False).context(log, budget=3000)
    assert again.section == fresh.section
    assert again.failure is not None and again.failure.test_id is not None
