"""Reading a repository's Python files: exact line text, syntax trees and spans.

Line numbers are 1-based and ranges closed, as in the build contract. A file's lines are
split the way Python's own tokenizer and tracebacks count them (``\\n``, ``\\r\\n`` and a
lone ``\\r`` end a line; form feeds and Unicode line separators do not), and each line
keeps its own line ending, so the text of lines ``start..end`` is exactly that stretch of
the file.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .._input import PathProblem, canonical_path

__all__ = [
    "MAX_FILE_BYTES",
    "Repository",
    "SourceFile",
    "decode_source",
    "enclosing_function",
    "node_span",
    "split_lines",
]

#: Python files larger than this many bytes are not read (generated tables, vendored blobs).
MAX_FILE_BYTES = 2_000_000

# Folder names never entered when walking a repository.
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages"})

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> tuple[str, ...]:
    """Split ``text`` into lines, each keeping its line ending.

    ``"".join(split_lines(text)) == text`` always holds. Only ``\\n``, ``\\r\\n`` and ``\\r``
    end a line (as for Python's tokenizer), unlike ``str.splitlines``.
    """
    return tuple(_LINE.findall(text))


def decode_source(data: bytes) -> str:
    """Decode a Python file's bytes the way Python reads source, with the BOM dropped.

    The encoding is UTF-8 unless a PEP 263 coding cookie names another. Bytes that are
    invalid in that encoding become lone surrogates (``surrogateescape``), so decoding
    never fails and the text still maps back to the file's bytes.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:  # unknown codec named by a cookie, or a BOM that contradicts it
        encoding = "utf-8-sig"
    try:
        return data.decode(encoding, errors="surrogateescape")
    except (LookupError, UnicodeError):  # codecs without surrogateescape support
        return data.decode("utf-8-sig", errors="surrogateescape")


def node_span(node: ast.stmt) -> tuple[int, int]:
    """The closed line range ``(start, end)`` of a statement, decorators included."""
    start = node.lineno
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    for decorator in decorators:
        start = min(start, decorator.lineno)
    end = node.end_lineno if node.end_lineno is not None else node.lineno
    return start, end


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def enclosing_function(tree: ast.Module, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost ``def`` (or ``async def``) whose span contains ``line``, else ``None``.

    Lambdas are not functions here: a frame inside a lambda maps to the ``def`` around it.
    """
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    best_size = 0
    for node in ast.walk(tree):
        if isinstance(node, _FUNCTIONS):
            start, end = node_span(node)
            if start <= line <= end and (best is None or end - start < best_size):
                best, best_size = node, end - start
    return best


@dataclass(frozen=True)
class SourceFile:
    """One file of the repository.

    ``path`` is repository-relative with ``/`` separators; ``lines`` hold the decoded text
    line by line (``lines[0]`` is line 1) with line endings kept; ``tree`` is the parsed
    module, or ``None`` when the file is not valid Python for this interpreter.
    """

    path: str
    lines: tuple[str, ...]
    tree: ast.Module | None

    @property
    def line_count(self) -> int:
        """Number of lines in the file."""
        return len(self.lines)

    def text(self, start: int, end: int) -> str:
        """Exactly lines ``start..end`` (1-based, closed) of the file, line endings kept.

        Raises ``ValueError`` if the range is empty or outside the file.
        """
        if not 1 <= start <= end <= len(self.lines):
            raise ValueError(f"{self.path}: lines {start}-{end} outside 1-{len(self.lines)}")
        return "".join(self.lines[start - 1 : end])

    def clamp(self, start: int, end: int) -> tuple[int, int]:
        """``(start, end)`` clipped to the file's lines (the file must have a line)."""
        last = max(len(self.lines), 1)
        return max(1, min(start, last)), max(1, min(end, last))


@dataclass
class Repository:
    """A folder of source code, read lazily and cached.

    ``root`` is the repository folder. Files are addressed by repository-relative paths
    with ``/`` separators. Symbolic links that lead outside ``root`` are never followed,
    hidden folders (``.git``, ``.venv``, ...), virtual environments and
    ``site-packages`` are skipped, and files over ``max_file_bytes`` are ignored, as are
    files whose repository-relative path the builder would reject (a backslash in a name).
    """

    root: Path
    max_file_bytes: int = MAX_FILE_BYTES
    _files: dict[str, SourceFile | None] = field(default_factory=dict, repr=False)
    _python_files: list[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root).resolve()
        if not self.root.is_dir():
            raise NotADirectoryError(f"not a directory: {self.root}")

    def relative(self, path: str) -> str | None:
        """The repository-relative form of ``path`` if it names a file of the repository.

        A relative ``path`` is taken relative to ``root``. Returns ``None`` for files
        outside the repository (after resolving symbolic links and ``..``), inside a
        skipped folder (``site-packages``, a virtual environment, a hidden folder), for
        pseudo-files such as ``<frozen importlib._bootstrap>`` and for files that do not
        exist.
        """
        if not path or path.startswith("<"):
            return None
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve()
            rel = resolved.relative_to(self.root)
        except (OSError, ValueError):
            return None
        if not resolved.is_file() or not rel.parts or not _usable(rel.as_posix()):
            return None
        parent = self.root
        for part in rel.parts[:-1]:
            parent = parent / part
            if self._skipped_dir(part, parent):
                return None
        return rel.as_posix()

    def source(self, rel: str) -> SourceFile | None:
        """The file at repository-relative ``rel``, or ``None`` if it cannot be read.

        Files are read once; ``.py`` and ``.pyi`` files are also parsed with ``ast``.
        """
        if rel in self._files:
            return self._files[rel]
        loaded: SourceFile | None = None
        path = self.root / rel
        try:
            if path.stat().st_size <= self.max_file_bytes:
                text = decode_source(path.read_bytes())
                tree: ast.Module | None = None
                if rel.endswith((".py", ".pyi")):
                    tree = _parse(text)
                loaded = SourceFile(rel, split_lines(text), tree)
        except OSError:
            loaded = None
        self._files[rel] = loaded
        return loaded

    def python_files(self) -> list[str]:
        """Repository-relative paths of every ``.py`` file, sorted."""
        if self._python_files is None:
            self._python_files = sorted(self._walk())
        return self._python_files

    def python_sources(self) -> Iterator[SourceFile]:
        """Every readable ``.py`` file of the repository, in path order."""
        for rel in self.python_files():
            source = self.source(rel)
            if source is not None:
                yield source

    def _walk(self) -> Iterator[str]:
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            dirnames[:] = sorted(
                d for d in dirnames if not (here / d).is_symlink() and not self._skipped_dir(d, here / d)
            )
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                full = here / name
                if full.is_symlink():
                    try:
                        full.resolve().relative_to(self.root)
                    except (OSError, ValueError):
                        continue
                rel = full.relative_to(self.root).as_posix()
                if _usable(rel):
                    yield rel

    @staticmethod
    def _skipped_dir(name: str, path: Path) -> bool:
        return (
            name.startswith(".")
            or name in _SKIPPED_DIRS
            or name.endswith(".egg-info")
            or (path / "pyvenv.cfg").is_file()
        )


def _usable(rel: str) -> bool:
    """Whether the builder accepts the repository-relative path ``rel`` as it is (a file
    name may hold a backslash, say, which the build contract rejects in a path)."""
    try:
        return canonical_path(rel) == rel
    except PathProblem:
        return False


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, UnicodeEncodeError, RecursionError, MemoryError):
        return None
