"""Where a path printed by a tool (a traceback frame, a coverage report's file, a source
map's source) is in the repository: :func:`map_path`.

A path inside the repository folder is looked up there, component by component, never
leaving it through a link or ``..``; a path printed on another machine or in another checkout
folder (``C:\\repo\\pkg\\calc.py``) is matched to the repository file with the longest common
path tail; installed code and pseudo-files (``<string>``) are not mapped.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from pathlib import Path

from bugcontext.core._cut import shorten
from bugcontext.job.sources.files import WINDOW_UNREADABLE, Repository
from bugcontext.job.sources.logs._common import is_dependency_path

__all__ = ["FRAME_AMBIGUOUS", "FRAME_UNMATCHED", "PATH_MAX", "map_path"]

#: Why a frame from another machine gave no window: several repository files end with the
#: longest part of its path that any file ends with.
FRAME_AMBIGUOUS = "policy: frame path matches several files of the repository"
#: Why a frame from another machine gave no window: no repository file has its file name.
FRAME_UNMATCHED = "policy: frame path matches no file of the repository"

# Installed code on the machine that ran the tests: `site-packages`, or a Python's own
# library (`lib/python3.11/...`, Windows `Python311/Lib/...`).
_INSTALLED = frozenset({"site-packages", "dist-packages"})
# (and other languages' dependencies: ``node_modules``, the Go module cache, Cargo's registry,
# Rust's own library: :func:`.logs._common.is_dependency_path`)
_PYTHON_DIR = re.compile(r"python\d*+(?:\.\d++)*+", re.IGNORECASE)


def _foreign_parts(path: str) -> list[str] | None:
    """The folder and file names of a frame path printed on another machine (``\\`` read
    as ``/``, a drive ``C:`` dropped), or ``None`` for a pseudo-file or installed code."""
    if not path or path.startswith("<"):
        return None
    parts = [part for part in path.replace("\\", "/").split("/") if part and part != "."]
    if parts and len(parts[0]) == 2 and parts[0][1] == ":" and parts[0][0].isalpha():
        parts = parts[1:]
    if not parts or ".." in parts:
        return None
    lowered = [part.lower() for part in parts]
    if _INSTALLED & set(lowered) or is_dependency_path(path):
        return None
    for before, after in itertools.pairwise(lowered):
        if (before == "lib" and _PYTHON_DIR.fullmatch(after)) or (
            after == "lib" and _PYTHON_DIR.fullmatch(before)
        ):
            return None
    return parts


def _map_foreign(names: dict[str, list[str]], path: str) -> tuple[str | None, str | None]:
    """``(repository path, None)`` for a frame path from another machine or checkout
    folder that the repository file with the longest common tail of path names matches,
    alone; ``(None, why)`` when several files share that longest tail
    (:data:`FRAME_AMBIGUOUS`) or none has the file name (:data:`FRAME_UNMATCHED`);
    ``(None, None)`` when the path is not one to map (installed code, a pseudo-file).
    ``names`` maps each file name to the repository files of that name."""
    parts = _foreign_parts(path)
    if parts is None:
        return None, None
    best = 0
    matches: list[str] = []
    for rel in names.get(parts[-1], ()):
        theirs = rel.split("/")
        common = 0
        while common < min(len(theirs), len(parts)) and theirs[-1 - common] == parts[-1 - common]:
            common += 1
        if common > best:
            best, matches = common, [rel]
        elif common == best:
            matches.append(rel)
    if len(matches) == 1:
        return matches[0], None
    return None, FRAME_AMBIGUOUS if matches else FRAME_UNMATCHED


def _under_root(repo: Repository, path: str) -> str | None:
    """``path`` relative to the repository folder as written (``..`` resolved, links not),
    if it lies there and outside installed code; else ``None``."""
    try:
        where = Path(path)
        full = Path(os.path.normpath(where if where.is_absolute() else repo.root / where))
        if _INSTALLED & set(full.parts) or "node_modules" in full.parts:
            return None
        return full.relative_to(repo.root).as_posix()
    except ValueError:
        return None


#: The longest path, in bytes, that can name a file (``PATH_MAX`` on Linux): a longer path
#: printed in a log names nothing, and is not looked up.
PATH_MAX = 4096

#: Symbolic links followed while resolving one path inside the repository (Linux's own).
_MAX_LINKS = 40


def _too_long(path: str) -> bool:
    """Whether ``path`` is longer than any path that can name a file (:data:`PATH_MAX`
    bytes, a lone surrogate counted as 3), told without touching the filesystem."""
    return len(path) > PATH_MAX or len(path.encode("utf-8", "surrogatepass")) > PATH_MAX


def _shortened(path: str) -> str:
    return shorten(path, 200)


def _local_file(repo: Repository, path: str) -> bool:
    """Whether ``path`` (relative: under the repository) names something inside the
    repository, resolved component by component without leaving it: a path that lies
    outside as written, or whose resolution leaves the repository through a symbolic
    link or ``..``, is not looked at past the point where it leaves, and names nothing,
    exactly as a path that names nothing (so the answer never tells what exists outside)."""
    try:
        where = Path(path)
        full = where if where.is_absolute() else repo.root / where
        rest = list(full.relative_to(repo.root).parts)  # as written: no ``..`` resolved yet
    except ValueError:
        return False
    root = str(repo.root)
    here: list[str] = []
    links = 0
    rest.reverse()
    while rest:
        name = rest.pop()
        if name in ("", "."):
            continue
        if name == "..":
            if not here:
                return False  # above the repository
            here.pop()
            continue
        current = os.path.join(root, *here, name)
        try:
            info = os.lstat(current)
        except (OSError, ValueError):
            return False
        if not stat.S_ISLNK(info.st_mode):
            here.append(name)
            continue
        links += 1
        try:
            target = os.readlink(current)
        except (OSError, ValueError):
            return False
        if links > _MAX_LINKS or len(target) > PATH_MAX:
            return False
        if os.path.isabs(target):
            try:
                parts = list(Path(target).relative_to(repo.root).parts)
            except ValueError:
                return False  # the link leads out: not followed
            here = []
        else:
            parts = list(Path(target).parts)
        rest.extend(reversed(parts))
    return True


def map_path(
    repo: Repository, path: str, names: dict[str, list[str]] | None = None
) -> tuple[str | None, str | None, str | None]:
    """The repository file a path printed by a tool names (a traceback frame, a coverage
    report's file), as :func:`.failure.resolve_frames` maps frames: ``(rel, None, None)`` for the
    repository-relative path of the file; else ``(None, where, why)``: a file inside the
    repository that the reader will not read (``why`` ``WINDOW_UNREADABLE``), or a path from
    another machine, from outside the repository folder or leading out of it through a link
    or ``..`` (looked up only inside the repository: what exists outside never changes the
    answer) that matches several files or none (``FRAME_AMBIGUOUS``, ``FRAME_UNMATCHED``) or
    is not one to map (installed code, a pseudo-file: ``why`` ``None``); a path longer than
    :data:`PATH_MAX` bytes matches no file (``FRAME_UNMATCHED``, ``where`` cut to 200
    characters). ``where`` is how to name the path in an omission. ``names`` is a cache of
    the repository's files by file name, filled on first use (pass the same ``dict`` for
    many paths)."""
    if _too_long(path):
        return None, _shortened(path.replace("\\", "/")), FRAME_UNMATCHED
    textual = _under_root(repo, path)
    if textual is not None and _local_file(repo, path):
        rel = repo.relative(path)
        if rel is not None:
            return rel, None, None
        # A file here the reader will not read (ignored, binary, oversized, a secret).
        return None, textual, WINDOW_UNREADABLE
    if names is None:
        names = {}
    if not names:
        for known in repo.files():
            names.setdefault(known.rsplit("/", 1)[-1], []).append(known)
    rel, why = _map_foreign(names, path)
    if rel is not None:
        return rel, None, None
    printed = path.replace("\\", "/")
    return None, textual if textual is not None and "\\" not in path else printed, why
