"""Source maps (revision 3): a frame in compiled JavaScript mapped back to its TypeScript
(or other) source, when the map is a file of the repository.

The map of ``dist/calc.js`` is the file its last ``//# sourceMappingURL=NAME`` comment names
(relative to it; a ``data:`` URL is not read), else ``dist/calc.js.map``. It is read only as a
file the repository's reader may read (inside the repository, not ignored, a regular file,
no link on the way), at most ``Limits.max_source_map_bytes`` bytes (a larger map is not
read: the frame stays on the ``.js`` file, and the map is recorded in ``Repository.skipped``).
Its ``mappings`` are decoded with the Base64 VLQ of the format (no package of PyPI that
reads source maps is kept up to date). A frame gives a line but no column here, so a
generated line maps to the source line of its first segment that names a source. The source
path is the map's ``sourceRoot`` and ``sources`` entry, relative to the map's folder, mapped
to a repository file as frames are (:func:`~..paths.map_path`).
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
from typing import TYPE_CHECKING

from bugcontext.core.limits import describe
from bugcontext.job.sources.paths import map_path

if TYPE_CHECKING:
    from bugcontext.job.sources.files import Repository

__all__ = ["decode_mappings", "encode_vlq", "original_line"]

_BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_VALUE = {c: i for i, c in enumerate(_BASE64)}
_COMPILED = (".js", ".mjs", ".cjs")


def encode_vlq(values: list[int]) -> str:
    """The Base64 VLQ text of ``values`` (the inverse of one segment of :func:`decode_mappings`)."""
    out: list[str] = []
    for value in values:
        number = (-value << 1) | 1 if value < 0 else value << 1
        while True:
            digit = number & 31
            number >>= 5
            out.append(_BASE64[digit | (32 if number else 0)])
            if not number:
                break
    return "".join(out)


def decode_mappings(mappings: str) -> list[list[tuple[int, ...]]]:
    """The segments of a map's ``mappings``, one list per generated line (0-based): each
    segment ``(column, source, line, column[, name])`` with absolute 0-based values (a
    segment of one field has only its column). Raises ``ValueError`` for a character that is
    not Base64, a value cut short, or a segment of 2, 3 or more than 5 fields."""
    lines: list[list[tuple[int, ...]]] = []
    state = [0, 0, 0, 0, 0]
    for text in mappings.split(";"):
        segments: list[tuple[int, ...]] = []
        state[0] = 0  # the generated column restarts on each line
        for piece in text.split(","):
            if not piece:
                continue
            fields: list[int] = []
            number = shift = 0
            for char in piece:
                digit = _VALUE.get(char)
                if digit is None:
                    raise ValueError(f"not a Base64 digit: {char!r}")
                number |= (digit & 31) << shift
                if digit & 32:
                    shift += 5
                    if shift > 60:
                        raise ValueError("a VLQ value too long")
                    continue
                fields.append(-(number >> 1) if number & 1 else number >> 1)
                number = shift = 0
            if shift:
                raise ValueError("a VLQ value cut short")
            if len(fields) not in (1, 4, 5):
                raise ValueError(f"a segment of {len(fields)} fields")
            for index, value in enumerate(fields):
                state[index] += value
            segments.append(tuple(state[: len(fields)]))
        lines.append(segments)
    return lines


def _map_file(repo: Repository, compiled: str) -> str | None:
    """The repository path of the source map of the repository file ``compiled``."""
    source = repo.source(compiled)
    folder = posixpath.dirname(compiled)
    if source is not None:
        for line in reversed(source.lines[-5:]):
            text = line.strip()
            if text.startswith(("//# sourceMappingURL=", "//@ sourceMappingURL=")):
                url = text.split("=", 1)[1].strip()
                if not url or url.startswith("data:") or "://" in url:
                    return None
                return repo.relative(posixpath.normpath(posixpath.join(folder, url)))
    return repo.relative(compiled + ".map")


def _read_map(repo: Repository, rel: str) -> dict[str, object] | None:
    maximum = repo.resource_limits.max_source_map_bytes
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(repo.root / rel, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            if info.st_size > maximum:
                repo.skipped[rel] = describe("max_source_map_bytes", "the source map", info.st_size, maximum)
                return None
            data = handle.read(maximum + 1)
        except OSError:
            return None
    if len(data) > maximum:
        repo.skipped[rel] = describe(
            "max_source_map_bytes", "the source map", len(data), maximum, exact=False
        )
        return None
    try:
        parsed = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def original_line(
    repo: Repository, compiled: str, line: int, cache: dict[str, object] | None = None
) -> tuple[str, int] | None:
    """``(repository path, 1-based line)`` of the source that line ``line`` of the compiled
    repository file ``compiled`` (``.js``, ``.mjs``, ``.cjs``) comes from, by the file's source
    map in the repository; ``None`` when it has none, the map is unreadable, too large or
    damaged, the line has no segment naming a source, or that source is not a repository file.
    ``cache`` keeps decoded maps between calls (pass the same ``dict``)."""
    if not compiled.endswith(_COMPILED):
        return None
    memo = cache if cache is not None else {}
    key = "map:" + compiled
    if key not in memo:
        memo[key] = _decoded(repo, compiled)
    decoded = memo[key]
    if not isinstance(decoded, tuple):
        return None
    folder, sources, lines = decoded
    if not 1 <= line <= len(lines):
        return None
    segment = next((s for s in lines[line - 1] if len(s) >= 4), None)
    if segment is None or not 0 <= segment[1] < len(sources) or segment[2] < 0:
        return None
    name = sources[segment[1]]
    if not isinstance(name, str) or not name:
        return None
    rel, _, _ = map_path(
        repo, posixpath.normpath(posixpath.join(folder, name)) if "://" not in name else name
    )
    return (rel, segment[2] + 1) if rel is not None else None


def _decoded(repo: Repository, compiled: str) -> tuple[str, list[object], list[list[tuple[int, ...]]]] | None:
    map_rel = _map_file(repo, compiled)
    if map_rel is None:
        return None
    data = _read_map(repo, map_rel)
    if data is None or data.get("version") != 3:
        return None
    sources, mappings, root = data.get("sources"), data.get("mappings"), data.get("sourceRoot") or ""
    if not isinstance(sources, list) or not isinstance(mappings, str) or not isinstance(root, str):
        return None
    try:
        lines = decode_mappings(mappings)
    except ValueError:
        return None
    folder = posixpath.join(posixpath.dirname(map_rel), root) if "://" not in root else ""
    return folder, sources, lines
