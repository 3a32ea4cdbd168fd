"""Paths printed in a log or a report, mapped to repository files: bounded before they are
looked up, looked up only inside the repository, and at most ``max_frames`` of a traceback."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from bugcontext import Limits, Workspace
from bugcontext.core.limits import describe
from bugcontext.job.sources import Repository, resolve_frames
from bugcontext.job.sources.paths import FRAME_UNMATCHED, PATH_MAX, map_path
from bugcontext.job.sources.runs import parse_test_output


def _traceback(*frames: tuple[str, int]) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line in frames:
        lines += [f'  File "{path}", line {line}, in f', "    x()"]
    return "\n".join([*lines, "ValueError: boom", ""])


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("".join(f"x{i} = {i}\n" for i in range(20)), encoding="utf-8")
    return root


def _watch_stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path ``os.stat`` / ``os.lstat`` is asked about from now on."""
    asked: list[str] = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)

        def watched(path: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            asked.append(os.fspath(path) if not isinstance(path, int) else f"fd {path}")
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, watched)
    return asked


def test_a_path_longer_than_path_max_matches_no_file_and_is_not_looked_up(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = Repository(repo)
    names: dict[str, list[str]] = {}
    # Exactly PATH_MAX bytes: a path that can name a file, and does.
    longest = "./" * ((PATH_MAX - len("pkg/calc.py")) // 2) + "pkg/calc.py"
    assert len(longest.encode()) == PATH_MAX - 1
    assert map_path(reader, longest, names) == ("pkg/calc.py", None, None)
    asked = _watch_stats(monkeypatch)
    over = "a/" * 3000 + "calc.py"  # 6,007 bytes: names nothing
    assert map_path(reader, over, names) == (None, over[:200] + "...", FRAME_UNMATCHED)
    huge = "a/" * 4_000_000 + ".py"  # 8 MB, 4,000,000 components
    assert map_path(reader, huge, names) == (None, huge[:200] + "...", FRAME_UNMATCHED)
    # A multi-byte path over PATH_MAX bytes with fewer characters than that.
    wide = "éé/" * 1000 + "calc.py"
    assert len(wide) < PATH_MAX < len(wide.encode())
    assert map_path(reader, wide, names) == (None, wide[:200] + "...", FRAME_UNMATCHED)
    assert asked == []
    # Through a traceback: the frame is an omission, under its path cut short.
    failure = parse_test_output(_traceback((huge, 3), ("pkg/calc.py", 2)))[0]
    frames, omitted = resolve_frames(reader, failure)
    assert [(pf.path, pf.line) for pf in frames] == [("pkg/calc.py", 2)]
    assert [(o.path, o.start, o.why) for o in omitted] == [(huge[:200] + "...", 3, FRAME_UNMATCHED)]


def test_at_most_max_frames_frames_of_a_traceback_are_mapped(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    for i in range(10):
        (root / f"m{i}.py").write_text("a = 1\nb = 2\n", encoding="utf-8")
    reader = Repository(root, limits=Limits(max_frames=4))
    failure = parse_test_output(_traceback(*((f"m{i}.py", 2) for i in range(10))))[0]
    assert len(failure.frames) == 10
    frames, omitted = resolve_frames(reader, failure)
    # The first half (the test's own frames) and the last (the deepest), deepest first.
    assert [pf.path for pf in frames] == ["m9.py", "m8.py", "m1.py", "m0.py"]
    assert omitted == []
    assert reader.skipped["<frames>"] == describe("max_frames", "the traceback", 10, 4)
    assert reader.skipped["<frames>"] == (
        "the traceback is 10 frames, over the limit max_frames = 4 frames"
    )
    # At the limit, every frame is mapped and nothing is recorded.
    whole = Repository(root, limits=Limits(max_frames=10))
    assert len(resolve_frames(whole, failure)[0]) == 10
    assert "<frames>" not in whole.skipped


def test_a_path_leading_out_of_the_repository_answers_as_one_that_names_nothing(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s\n", encoding="utf-8")
    (outside / "calc.py").write_text("y = 1\n", encoding="utf-8")
    deep = tmp_path / "x" / "y"
    deep.mkdir(parents=True)
    (tmp_path / "x" / "outside").symlink_to(outside)
    (repo / "rootlink").symlink_to("/")
    (repo / "outlink").symlink_to(outside)
    (repo / "linkdir").symlink_to(deep)
    (repo / "inlink").symlink_to("pkg")  # a link that stays inside is followed
    (repo / "pkg" / "absolute.py").symlink_to(repo / "pkg" / "calc.py")
    reader = Repository(repo)
    names: dict[str, list[str]] = {}
    reader.files()  # the walk of the repository, before the stats are watched
    asked = _watch_stats(monkeypatch)
    pairs = [
        # (names a file outside, names nothing): the same answer for both.
        ("rootlink/etc/passwd", "rootlink/etc/no-such-file"),
        ("outlink/secret.txt", "outlink/no-such-file.txt"),
        ("linkdir/../outside/secret.txt", "linkdir/../outside/no-such-file.txt"),
        (str(outside / "secret.txt"), str(outside / "no-such-file.txt")),
        (str(repo / "linkdir" / ".." / "outside" / "secret.txt"), str(repo / "linkdir/../outside/none.txt")),
    ]
    answers = []
    for existing, missing in pairs:
        found, nothing = map_path(reader, existing, names), map_path(reader, missing, names)
        assert found[0] is None, existing
        assert (found[2], found[1] is None) == (nothing[2], nothing[1] is None), existing
        answers.append(found[2])
    # A path with ``..`` is not one to map by name (no omission); the others match nothing.
    assert answers == [FRAME_UNMATCHED, FRAME_UNMATCHED, None, FRAME_UNMATCHED, None]
    # A file of the repository's name reached through a link leading out is mapped by name,
    # exactly as a path from another machine (it matches the repository's pkg/calc.py).
    assert map_path(reader, "outlink/calc.py", names) == map_path(reader, "nowhere/calc.py", names)
    assert map_path(reader, "outlink/calc.py", names)[0] == "pkg/calc.py"
    # Nothing outside the repository was looked at.
    assert asked and all(Path(path).is_relative_to(repo) for path in asked), asked
    assert map_path(reader, "inlink/calc.py", names) == ("pkg/calc.py", None, None)
    assert map_path(reader, "pkg/absolute.py", names) == ("pkg/calc.py", None, None)
    assert map_path(reader, "pkg/../pkg/calc.py", names) == ("pkg/calc.py", None, None)


def test_the_workspace_stops_at_the_calls_deadline(repo: Path) -> None:
    workspace = Workspace(repo, cache=False)
    log = _traceback(("pkg/calc.py", 2))
    with pytest.raises(TimeoutError, match=r"^the call's time limit passed$"):
        workspace.context(log, deadline=time.monotonic() - 1)
    # The workspace is not left held: the next call, with time left, is served.
    result = workspace.context(log, deadline=time.monotonic() + 600)
    assert result.failure_file == "pkg/calc.py"


def test_a_coverage_reports_path_leading_out_answers_as_one_that_names_nothing(
    tmp_path: Path, repo: Path
) -> None:
    from bugcontext.job.sources.coverage import read_coverage

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("s = 1\n", encoding="utf-8")
    (repo / "rootlink").symlink_to("/")
    (repo / "outlink").symlink_to(outside)

    def lcov(*paths: str) -> str:
        return "".join(f"SF:{path}\nDA:1,1\nend_of_record\n" for path in paths)

    reader = Repository(repo)
    found = read_coverage(lcov("outlink/secret.py", "rootlink/etc/passwd", "pkg/calc.py"), reader)
    nothing = read_coverage(lcov("outlink/none.py", "rootlink/etc/none", "pkg/calc.py"), reader)
    assert found.unmapped == ("outlink/secret.py", "rootlink/etc/passwd")
    assert nothing.unmapped == ("outlink/none.py", "rootlink/etc/none")
    assert [dict(run.lines) for run in found.runs] == [dict(run.lines) for run in nothing.runs]
    assert [dict(run.lines) for run in found.runs] == [{"pkg/calc.py": frozenset({1})}]


def test_frames_past_every_file_are_bounded_by_max_frames_too(tmp_path: Path) -> None:
    from bugcontext.job.sources.failure import FRAME_PAST_END

    root = tmp_path / "repo"
    root.mkdir()
    for i in range(10):
        (root / f"m{i}.py").write_text("a = 1\n", encoding="utf-8")
    far = 2**31 + 5
    # A frame in a file, then ten past every file, one of them repeated.
    log = _traceback(("m0.py", 1), *((f"m{i}.py", far) for i in range(10)), ("m0.py", far))
    failure = parse_test_output(log)[0]
    assert [frame.path for frame in failure.beyond] == [f"m{i}.py" for i in range(10)]
    reader = Repository(root, limits=Limits(max_frames=4))
    frames, omitted = resolve_frames(reader, failure)
    assert [(pf.path, pf.line) for pf in frames] == [("m0.py", 1)]
    assert [(o.path, o.start, o.why) for o in omitted] == [
        (f"m{i}.py", 2**31, FRAME_PAST_END) for i in (0, 1, 8, 9)
    ]
    assert reader.skipped["<frames>"] == (
        "the list of frames past every file is 10 frames, over the limit max_frames = 4 frames"
    )
