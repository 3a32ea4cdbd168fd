"""The context job on a large repository: a cold call, a repeated call in one process, a call
in a new process with a warm on-disk cache, and a call after one file was edited.

The repository is the youtube-dl real-bug case (``python scripts/realbug.py
ytdl_unescape_html --prepare-only`` prepares it under ``work/realbugs/``); with
``BUGCONTEXT_BENCH_REPO=DIR`` and ``BUGCONTEXT_BENCH_LOG=FILE`` any other folder and test
log. Skipped when neither is there.

    python -m pytest benches/test_bench_workspace.py --benchmark-only
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bugcontext import Workspace

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "work" / "realbugs" / "ytdl_unescape_html"
REPO = Path(os.environ.get("BUGCONTEXT_BENCH_REPO", CASE / "repo"))
LOG = Path(os.environ.get("BUGCONTEXT_BENCH_LOG", CASE / "failing.log"))

pytestmark = pytest.mark.skipif(
    not (REPO.is_dir() and LOG.is_file()), reason="no benchmark repository (see the module docstring)"
)


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the repository (the edit benchmark changes a file)."""
    target = tmp_path_factory.mktemp("bench") / "repo"
    shutil.copytree(REPO, target, symlinks=True)
    return target


def _log() -> str:
    return LOG.read_text(encoding="utf-8", errors="replace")


def test_cold(benchmark: pytest.FixtureRequest, copy: Path) -> None:
    """A new workspace without a cache: list, read, parse, chunk and index every file."""
    log = _log()
    result = benchmark.pedantic(
        lambda: Workspace(copy, cache=False).context(log, budget=4000), rounds=3, iterations=1
    )
    assert result.result.used <= 4000


def test_warm_in_process(benchmark: pytest.FixtureRequest, copy: Path) -> None:
    """The same workspace again: only the files' stats are examined."""
    log = _log()
    ws = Workspace(copy, cache=False)
    ws.context(log, budget=4000)
    result = benchmark.pedantic(lambda: ws.context(log, budget=4000), rounds=10, iterations=1)
    assert result.reread == ()


def test_warm_new_process(benchmark: pytest.FixtureRequest, copy: Path, tmp_path: Path) -> None:
    """``bugcontext context`` in a new interpreter, the on-disk cache warm: the whole
    process, interpreter start included."""
    cache = tmp_path / "cache"
    command = [
        sys.executable, "-m", "bugcontext", "context", "--repo", str(copy),
        "--pytest-log", str(LOG), "--budget", "4000", "--cache-dir", str(cache),
    ]  # fmt: skip

    # As installed code runs: bytecode written on the first run and reused.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run() -> None:
        subprocess.run(command, check=True, capture_output=True, timeout=300, env=env)

    run()  # fills the cache
    benchmark.pedantic(run, rounds=5, iterations=1)


def test_one_file_edited(benchmark: pytest.FixtureRequest, copy: Path) -> None:
    """The same workspace after one file changed: that file is derived again, the BM25
    index rebuilt from the kept tokens of the others."""
    log = _log()
    ws = Workspace(copy, cache=False)
    ws.context(log, budget=4000)
    target = copy / "youtube_dl" / "utils.py"
    if not target.is_file():
        target = next(copy.rglob("*.py"))
    original = target.read_text(encoding="utf-8", errors="surrogateescape")
    count = [0]

    def edit() -> None:
        count[0] += 1
        target.write_text(original + f"\n# edit {count[0]}\n", encoding="utf-8", errors="surrogateescape")

    def call() -> object:
        return ws.context(log, budget=4000)

    result = benchmark.pedantic(call, setup=edit, rounds=5, iterations=1)
    assert result.reread == (target.relative_to(copy).as_posix(),)  # type: ignore[attr-defined]
    target.write_text(original, encoding="utf-8", errors="surrogateescape")
