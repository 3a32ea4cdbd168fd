"""Failure windows: the code around each traceback frame that lies in the repository."""

from __future__ import annotations

from dataclasses import dataclass

from .files import Repository, enclosing_function, node_span
from .pytest_log import Frame, TestFailure
from .window import RADIUS, Window, make_window

__all__ = ["ProjectFrame", "failure_windows", "project_frames"]


@dataclass(frozen=True)
class ProjectFrame:
    """A traceback frame in a file of the repository.

    ``path`` is repository-relative; ``line`` 1-based; ``distance`` counts the project
    frames between this one and the deepest project frame of its exception segment
    (0 for the deepest); ``frame`` is the frame as parsed from the log.
    """

    path: str
    line: int
    distance: int
    frame: Frame


def project_frames(repo: Repository, failure: TestFailure) -> list[ProjectFrame]:
    """The frames of ``failure`` whose file is in ``repo``, most relevant first.

    Frames in ``site-packages``, the standard library, ``<frozen ...>`` modules or
    anywhere outside the repository are dropped, as are frames whose line is past the
    end of the file. Order: the exception the test saw first (its deepest frame first),
    then the exceptions it was chained from, latest first. So the first frame, if any, is
    the deepest project frame of the final exception: its file is the failure file.
    """
    by_segment: dict[int, list[ProjectFrame]] = {}
    for frame in failure.frames:
        rel = repo.relative(frame.path)
        if rel is None:
            continue
        source = repo.source(rel)
        if source is None or not 1 <= frame.line <= source.line_count:
            continue
        by_segment.setdefault(frame.segment, []).append(ProjectFrame(rel, frame.line, 0, frame))
    ordered: list[ProjectFrame] = []
    for segment in sorted(by_segment, reverse=True):
        deepest_first = list(reversed(by_segment[segment]))
        ordered.extend(
            ProjectFrame(pf.path, pf.line, distance, pf.frame) for distance, pf in enumerate(deepest_first)
        )
    return ordered


def failure_windows(repo: Repository, frames: list[ProjectFrame], base_score: float = 0.0) -> list[Window]:
    """One or two ``failure`` windows per project frame, in the order of ``frames``.

    The window is the smallest enclosing function or method (decorators included, to its
    last line); when that function is longer than ``2 * RADIUS + 1`` lines a second,
    bounded window of ``RADIUS`` lines either side of the frame's line (inside the
    function) follows it, so the failing line survives a budget the whole function does
    not fit. A frame outside any function gets the bounded window only, clipped to the
    file. Score: ``base_score + 1 / (1 + distance)``. A window identical to an earlier
    one is not repeated.
    """
    windows: list[Window] = []
    seen: set[tuple[str, int, int]] = set()
    for pf in frames:
        source = repo.source(pf.path)
        if source is None:
            continue
        score = base_score + 1.0 / (1 + pf.distance)
        spans: list[tuple[int, int]] = []
        function = enclosing_function(source.tree, pf.line) if source.tree else None
        if function is not None:
            start, end = node_span(function)
            spans.append((start, end))
            if end - start + 1 > 2 * RADIUS + 1:
                spans.append((max(start, pf.line - RADIUS), min(end, pf.line + RADIUS)))
        else:
            spans.append(source.clamp(pf.line - RADIUS, pf.line + RADIUS))
        for start, end in spans:
            window = make_window(source, start, end, "failure", score)
            key = (window.path, window.start, window.end)
            if key not in seen:
                seen.add(key)
                windows.append(window)
    return windows
