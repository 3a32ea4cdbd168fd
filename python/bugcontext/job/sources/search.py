"""Search windows: function-level chunks of the repository ranked by BM25 against a query.

Ranking uses the ``bm25s`` library (Lucene's BM25 variant, ``k1 = 1.5``, ``b = 0.75``)
over code-aware tokens: each identifier gives itself, lower-cased and without
underscores, then its pieces split at ``_``, camel-case and digit boundaries
(``unescapeHTML`` and ``unescape_html`` both give ``unescapehtml``, ``unescape``,
``html``); a number, decimal or hexadecimal, is one token. English stop words,
programming-language keywords (``def``, ``self``, ``return``, ``function``, ...) and
one-character tokens are dropped.

The query (:func:`build_query`) is made of the failure's parts, each with a weight: a
term's weight is how many times it is repeated in the query, and ``bm25s`` adds a term's
BM25 score once per repetition, so a document's score is the weighted sum of the BM25
scores of the query terms it contains.

The index (:class:`SearchIndex`) is built once per repository and reused by every query
of the process until a file of the repository changes (files are compared by path, size,
modification time and inode).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import keyword
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bugcontext._core import python_outline
from bugcontext.core._extras import needs
from bugcontext.core.limits import Limits
from bugcontext.job._deadline import check as check_deadline
from bugcontext.job._deadline import checked
from bugcontext.job.sources.failure import project_frames
from bugcontext.job.sources.files import Repository, SourceFile, node_span, walk_around
from bugcontext.job.sources.reports import TestFailure
from bugcontext.job.sources.window import Window, make_window

__all__ = [
    "CHUNK_LINES",
    "CODE_SUFFIXES",
    "MAX_PER_FILE",
    "QUERY_WEIGHTS",
    "TOP_K",
    "Chunk",
    "Hit",
    "QueryPart",
    "SearchIndex",
    "build_query",
    "chunk_spans",
    "query_parts",
    "search_windows",
    "tokenize",
]

#: Target size of a chunk, in lines: a run of module- or class-level statements is cut
#: at about this many lines, and a function longer than ``1.5 * CHUNK_LINES`` lines is
#: cut into near-equal pieces of at most ``CHUNK_LINES`` lines.
CHUNK_LINES = 60

#: How many of the best-scoring chunks become search windows.
TOP_K = 50

#: At most this many search windows come from one file, so that one file that matches
#: the query everywhere (a big test module, say) cannot fill the top ``TOP_K``.
MAX_PER_FILE = 5

#: Suffixes of the files searched besides ``.py`` files: source code of other languages,
#: chunked at blank-line-separated top-level blocks. Data, configuration and document
#: files are not searched.
CODE_SUFFIXES = frozenset(
    {
        ".c",
        ".cc",
        ".cjs",
        ".cpp",
        ".cs",
        ".cxx",
        ".go",
        ".h",
        ".hh",
        ".hpp",
        ".hxx",
        ".java",
        ".js",
        ".jsx",
        ".kt",
        ".kts",
        ".lua",
        ".m",
        ".mjs",
        ".php",
        ".pl",
        ".pm",
        ".pxd",
        ".pyx",
        ".rb",
        ".rs",
        ".scala",
        ".sh",
        ".swift",
        ".ts",
        ".tsx",
    }
)

#: Weight of each part of the query (see :func:`query_parts`): the number of times its
#: terms are repeated in the weighted query.
QUERY_WEIGHTS: Mapping[str, int] = {
    "exception": 1,
    "message": 2,
    "evidence": 1,
    "test": 2,
    "test_context": 1,
    "failing_line": 2,
    "frame_line": 1,
    "extra": 1,
}

_IDENTIFIER = re.compile(r"0[xX][0-9A-Fa-f]+|[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SUBWORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# bm25s.stopwords.STOPWORDS_EN, spelled out so that importing this module stays cheap.
_ENGLISH = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
# Keywords of Python (soft keywords such as ``match`` and ``type`` are names too, so they
# stay) and the commonest keywords of other languages: in code they carry no topic.
_KEYWORDS = frozenset(
    {k.lower() for k in keyword.kwlist}
    | {"self", "cls"}
    | set(
        "const let var function func fn pub void null nil new public private protected static "
        "final undefined".split()
    )
)
_STOPWORDS = _ENGLISH | _KEYWORDS
# Words of the query that every test or assertion carries: no information about the bug.
_QUERY_NOISE = frozenset(
    {"test", "tests", "pytest", "unittest", "testcase", "equal", "equals", "raises", "where", "mark"}
    | {"parametrize", "fixture", "expected", "actual", "assertion", "failed"}
)
# Headers pytest gives an error report: "ERROR at setup of test_x".
_ERROR_AT = re.compile(r"^ERROR at (?:setup|teardown|call) of ", re.IGNORECASE)
# At most this many lines of a statement around a failing line go into the query.
_STATEMENT_LINES = 8
# At most this many other ``E`` lines (a long assertion diff is mostly data), and this
# many distinct project frame lines (a deep recursion repeats itself), go into the query.
_MAX_EVIDENCE_LINES = 20
_MAX_FRAME_LINES = 20


def tokenize(text: str) -> list[str]:
    """BM25 tokens of ``text``: each identifier lower-cased, then its sub-words.

    >>> tokenize("unescapeHTML(s) raises ValueError")
    ['unescapehtml', 'unescape', 'html', 'raises', 'valueerror', 'value', 'error']
    """
    tokens: list[str] = []
    for identifier in _IDENTIFIER.findall(text):
        tokens += _identifier_tokens(identifier)
    return tokens


@functools.lru_cache(maxsize=1 << 16)
def _identifier_tokens(identifier: str) -> tuple[str, ...]:
    if identifier[0].isdigit():  # a number, decimal or hexadecimal: one token
        return (identifier.lower(),) if len(identifier) > 1 else ()
    parts = [p.lower() for p in _SUBWORD.findall(identifier)]
    whole = identifier.lower().replace("_", "")
    candidates = [whole, *parts] if len(parts) > 1 else [whole]
    return tuple(t for t in candidates if len(t) > 1 and t not in _STOPWORDS)


# --------------------------------------------------------------------------------------
# The query


@dataclass(frozen=True)
class QueryPart:
    """One part of a query: where its ``tokens`` come from (``kind``, a key of
    :data:`QUERY_WEIGHTS`), its ``weight`` and the ``text`` they were taken from."""

    kind: str
    text: str
    tokens: tuple[str, ...]
    weight: int


def _query_tokens(text: str) -> tuple[str, ...]:
    """The distinct query tokens of ``text``, in order, without the query noise words
    (``test``, ``assertEqual`` and other words every test carries)."""
    tokens = (t for t in tokenize(text) if t not in _QUERY_NOISE and not t.startswith("assert"))
    return tuple(dict.fromkeys(tokens))


def query_parts(
    failure: TestFailure | None,
    extra: str | None = None,
    *,
    repo: Repository | None = None,
    weights: Mapping[str, int] = QUERY_WEIGHTS,
) -> list[QueryPart]:
    """The parts of the query for ``failure``, in this order, empty parts left out:

    * ``exception``: the exception type (``ValueError``);
    * ``message``: the exception's message (its first line);
    * ``evidence``: the other ``E`` lines of the report (assertion explanations, the
      messages of chained exceptions), the first ``_MAX_EVIDENCE_LINES``;
    * ``test``: the test function's name without its ``test`` prefix
      (``test_unescape_html`` gives ``unescapehtml``, ``unescape``, ``html``);
    * ``test_context``: the test class and the parameter id (``TestUtil``, ``[e1-None]``);
    * ``failing_line``: the identifiers of the statement on the deepest project frame's
      line (read from ``repo``; only with ``repo``);
    * ``frame_line``: those of the other project frames' lines (the test's call, say),
      one part per distinct line, at most ``_MAX_FRAME_LINES`` in all;
    * ``extra``: ``extra``, a problem statement or ``--query`` text.

    Each part's tokens are distinct and free of the words every test carries
    (``test``, ``assert...``, ``expected``); ``weights`` maps a part's kind to its weight
    (a kind it leaves out, or maps to 0, is dropped).
    """
    raw: list[tuple[str, str]] = []
    if failure is not None:
        if failure.exception_type:
            raw.append(("exception", failure.exception_type))
        if failure.message:
            raw.append(("message", failure.message))
        final = {failure.message, f"{failure.exception_type}: {failure.message}"}
        evidence = [line for line in failure.message_lines if line and line not in final]
        evidence = evidence[:_MAX_EVIDENCE_LINES]
        if evidence:
            raw.append(("evidence", "\n".join(evidence)))
        if failure.name:
            function, context = _split_test_name(failure.name)
            raw.append(("test", re.sub(r"^(?:test_?)+", "", function, flags=re.IGNORECASE) or function))
            if context:
                raw.append(("test_context", context))
        if repo is not None:
            raw.extend(_frame_lines(repo, failure))
    if extra:
        raw.append(("extra", extra))
    parts: list[QueryPart] = []
    for kind, text in raw:
        tokens = _query_tokens(text)
        weight = weights.get(kind, 0)
        if tokens and weight > 0:
            parts.append(QueryPart(kind, text, tokens, weight))
    return parts


def _split_test_name(name: str) -> tuple[str, str]:
    """``(function, context)`` of a report header: ``TestUtil.test_x[a-1]`` gives
    ``("test_x", "TestUtil [a-1]")``."""
    name = _ERROR_AT.sub("", name.strip())
    params = ""
    if name.endswith("]") and "[" in name:
        name, _, rest = name.partition("[")
        params = rest[:-1]
    qualifier, _, function = name.rpartition("::" if "::" in name else ".")
    context = " ".join(p for p in (qualifier.replace("::", " "), params) if p)
    return function, context


def _frame_lines(repo: Repository, failure: TestFailure) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` for each project frame: the statement on its line, the deepest
    project frame's as ``failing_line``, the others as ``frame_line``."""
    seen: set[tuple[str, int]] = set()
    for index, pf in enumerate(project_frames(repo, failure)):
        source = repo.source(pf.path)
        if source is None or (pf.path, pf.line) in seen:
            continue
        if len(seen) == _MAX_FRAME_LINES:
            break
        seen.add((pf.path, pf.line))
        start, end = _statement_lines(source, pf.line)
        yield ("failing_line" if index == 0 else "frame_line"), source.text(start, end)


def _statement_lines(source: SourceFile, line: int) -> tuple[int, int]:
    """The lines of the innermost statement around ``line`` (the header only for a
    compound statement such as ``if`` or ``def``), at most ``_STATEMENT_LINES`` of them
    from ``line`` on; just ``line`` when the file has no syntax tree."""
    if source.tree is None:
        return line, line
    best: ast.stmt | None = None
    for node in walk_around(source.tree, line):
        if isinstance(node, ast.stmt):
            start, end = node.lineno, node.end_lineno or node.lineno
            if start <= line <= end and (best is None or start >= best.lineno):
                best = node
    if best is None:
        return line, line
    start, end = best.lineno, best.end_lineno or best.lineno
    body = getattr(best, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        end = max(start, body[0].lineno - 1)  # header only
        if not start <= line <= end:
            return line, line
    start = max(start, line - _STATEMENT_LINES + 1)
    end = min(end, start + _STATEMENT_LINES - 1, source.line_count)
    return start, max(start, end)


def build_query(
    failure: TestFailure | None,
    extra: str | None = None,
    *,
    repo: Repository | None = None,
    weighted: bool = False,
    weights: Mapping[str, int] = QUERY_WEIGHTS,
) -> list[str]:
    """Query tokens for ``failure`` and the ``extra`` text (see :func:`query_parts`).

    Without ``weighted``, each token once, in order of first appearance: exception type,
    message, other ``E`` lines, test name, test class and parameters, the failing lines
    (only with ``repo``), then ``extra``. With ``weighted``, each token is repeated as many
    times as the weights of the parts it appears in add up to (repetitions adjacent, in
    the same order): ``bm25s`` scores a repeated term once per repetition.
    """
    totals: dict[str, int] = {}
    for part in query_parts(failure, extra, repo=repo, weights=weights):
        for token in part.tokens:
            totals[token] = totals.get(token, 0) + part.weight
    if not weighted:
        return list(totals)
    return [token for token, weight in totals.items() for _ in range(weight)]


# --------------------------------------------------------------------------------------
# Chunks


@dataclass(frozen=True)
class Chunk:
    """Lines ``start..end`` (1-based, closed) of the repository file ``path``; ``name``
    is the qualified name of the function or class the chunk covers (``Box.size``), or
    ``""`` for other code."""

    path: str
    start: int
    end: int
    name: str = ""


def _split(start: int, end: int, limit: int) -> Iterator[tuple[int, int]]:
    """``start..end`` unchanged if at most ``limit`` lines, else near-equal pieces of at most
    ``CHUNK_LINES`` lines."""
    length = end - start + 1
    if length <= limit:
        yield start, end
        return
    pieces = math.ceil(length / CHUNK_LINES)
    size = math.ceil(length / pieces)
    for first in range(start, end + 1, size):
        yield first, min(end, first + size - 1)


def _group(units: Iterable[tuple[int, int]], out: list[tuple[int, int]]) -> None:
    """Append to ``out`` the consecutive ``units`` grouped up to ``CHUNK_LINES`` lines (a
    group never splits a unit unless the unit alone is over ``CHUNK_LINES``)."""
    group: tuple[int, int] | None = None
    for start, end in units:
        if group is not None and end - group[0] + 1 > CHUNK_LINES:
            out.extend(_split(*group, CHUNK_LINES))
            group = None
        group = (start, end) if group is None else (group[0], end)
    if group is not None:
        out.extend(_split(*group, CHUNK_LINES))


def chunk_spans(source: SourceFile) -> list[tuple[int, int]]:
    """The chunks of one file as closed line ranges, in file order.

    A parsed Python file is cut at its functions and methods (nested functions stay
    inside theirs; decorators included); a class contributes its head (class line,
    docstring and attributes up to the first method) and its methods; runs of other
    module- or class-level statements are grouped up to ``CHUNK_LINES`` lines; plain
    ``import`` statements at those levels are left out (a name imported is not a name
    explained). Any other file (another language, Python that does not parse) is cut
    into blocks (see :func:`_block_spans`).
    """
    return [(c.start, c.end) for c in _chunks(source)]


def _chunks(source: SourceFile) -> list[Chunk]:
    if source.line_count == 0:
        return []
    if source.python and not source.parsed():
        # The statements' lines without a syntax tree; ``None`` where the outline cannot
        # read the text exactly as the interpreter would, and then ``ast`` decides.
        records = python_outline("".join(source.lines))
        if records is not None:
            chunks: list[Chunk] = []
            _visit_outline(source.path, records, 0, 0, "", chunks)
            return chunks
    if source.tree is None:
        return [Chunk(source.path, s, e) for s, e in _block_spans(source.lines)]
    chunks = []
    # (Module-level helpers, not closures: a recursive closure is a reference cycle, through
    # its own cell, that would keep the file and its tree until the cyclic collector ran.)
    _visit(source.path, source.tree.body, "", chunks)
    return chunks


def _flush(path: str, pending: list[tuple[int, int]], chunks: list[Chunk]) -> None:
    spans: list[tuple[int, int]] = []
    _group(pending, spans)
    chunks.extend(Chunk(path, s, e) for s, e in spans)
    pending.clear()


def _visit(path: str, body: Iterable[ast.stmt], prefix: str, chunks: list[Chunk]) -> None:
    pending: list[tuple[int, int]] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _flush(path, pending, chunks)
            start, end = node_span(stmt)
            name = prefix + stmt.name
            chunks.extend(Chunk(path, s, e, name) for s, e in _split(start, end, CHUNK_LINES * 3 // 2))
        elif isinstance(stmt, ast.ClassDef):
            _flush(path, pending, chunks)
            start, end = node_span(stmt)
            name = prefix + stmt.name
            members = [
                s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            ]
            head_end = node_span(members[0])[0] - 1 if members else end
            if head_end >= start:
                chunks.extend(Chunk(path, s, e, name) for s, e in _split(start, head_end, CHUNK_LINES))
            if members:
                first = stmt.body.index(members[0])
                _visit(path, stmt.body[first:], name + ".", chunks)
        elif not isinstance(stmt, (ast.Import, ast.ImportFrom)):
            pending.append(node_span(stmt))
    _flush(path, pending, chunks)


#: The statement kinds of :func:`bugcontext._core.python_outline`.
_FUNCTION, _CLASS, _IMPORT = 0, 1, 2


def _visit_outline(
    path: str,
    records: Sequence[tuple[int, int, int, int, str]],
    at: int,
    depth: int,
    prefix: str,
    chunks: list[Chunk],
) -> int:
    """:func:`_visit` over the outline ``records`` (``(depth, kind, start, end, name)``, a
    class before its body) from ``records[at]``, the statements at ``depth``; returns the
    index past them."""
    pending: list[tuple[int, int]] = []
    while at < len(records) and records[at][0] == depth:
        _, kind, start, end, name = records[at]
        at += 1
        if kind == _FUNCTION:
            _flush(path, pending, chunks)
            chunks.extend(
                Chunk(path, s, e, prefix + name) for s, e in _split(start, end, CHUNK_LINES * 3 // 2)
            )
        elif kind == _CLASS:
            _flush(path, pending, chunks)
            first = at
            while first < len(records) and records[first][0] > depth:
                if records[first][0] == depth + 1 and records[first][1] in (_FUNCTION, _CLASS):
                    break
                first += 1
            member = first < len(records) and records[first][0] > depth
            head_end = records[first][2] - 1 if member else end
            if head_end >= start:
                chunks.extend(
                    Chunk(path, s, e, prefix + name) for s, e in _split(start, head_end, CHUNK_LINES)
                )
            if member:
                at = _visit_outline(path, records, first, depth + 1, prefix + name + ".", chunks)
            while at < len(records) and records[at][0] > depth:
                at += 1
        elif kind != _IMPORT:
            pending.append((start, end))
    _flush(path, pending, chunks)
    return at


_CLOSER = re.compile(r"[}\])]|end\b|</")


def _block_spans(lines: Sequence[str]) -> list[tuple[int, int]]:
    """Chunks of a file read as plain text, in any language.

    A *block* starts at a line that begins in column 0 (not with a closing bracket or
    ``end``) right after a blank line, or at the file's first non-blank line; it runs to
    the next block's start, trailing blank lines dropped. Top-level definitions of most
    languages are such blocks, blank lines inside their indented bodies included.
    Consecutive blocks are grouped up to ``CHUNK_LINES`` lines, a block over
    ``1.5 * CHUNK_LINES`` lines is cut into near-equal pieces; blank lines never begin or
    end a chunk, and a file of blank lines has none.
    """
    starts: list[int] = []
    previous_blank = True
    last_text = 0
    for number, line in enumerate(lines, 1):
        blank = not line.strip()
        if not blank:
            if previous_blank and (not starts or (line[:1] not in " \t" and not _CLOSER.match(line))):
                starts.append(number)
            last_text = number
        previous_blank = blank
    units: list[tuple[int, int]] = []
    for i, start in enumerate(starts):
        end = (starts[i + 1] - 1) if i + 1 < len(starts) else last_text
        while not lines[end - 1].strip():
            end -= 1
        units.append((start, end))
    spans: list[tuple[int, int]] = []
    _group(
        (piece for unit in units for piece in _split(*unit, CHUNK_LINES * 3 // 2)),
        spans,
    )
    trimmed: list[tuple[int, int]] = []
    for start, end in spans:
        while start <= end and not lines[start - 1].strip():
            start += 1
        while end >= start and not lines[end - 1].strip():
            end -= 1
        if start <= end:
            trimmed.append((start, end))
    return trimmed


# --------------------------------------------------------------------------------------
# The index


@dataclass(frozen=True)
class Hit:
    """A chunk and its BM25 score for a query."""

    chunk: Chunk
    score: float


Fingerprint = tuple[tuple[str, int, int, int, int], ...]


def _searchable_paths(repo: Repository) -> list[str]:
    """Repository-relative paths of the files to search, sorted: the repository's ``.py``
    files and its files with a :data:`CODE_SUFFIXES` suffix (``Repository.files``: no
    ignored, hidden or skipped folder, no symbolic link leading out), ``*.min.*`` bundles
    left out."""
    return [
        rel for rel in repo.files((".py", *sorted(CODE_SUFFIXES))) if ".min." not in rel.rpartition("/")[2]
    ]


def _fingerprint(root: Path, paths: Iterable[str]) -> Fingerprint:
    """``(path, size, mtime_ns, ctime_ns, inode)`` of each file (``-1`` fields for a file that
    cannot be examined). The change time moves on every write and cannot be set back (unlike
    the modification time, which ``cp -p``, ``tar`` and ``rsync -t`` restore)."""
    rows: list[tuple[str, int, int, int, int]] = []
    for rel in paths:
        try:
            st = (root / rel).stat()
            rows.append((rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        except (OSError, ValueError):
            rows.append((rel, -1, -1, -1, -1))
    return tuple(rows)


#: A file modified or changed within this many nanoseconds (2 s) of the time an index was
#: built may have been written again in the same timestamp tick, leaving its stat as it was.
_AMBIGUOUS_NS = 2_000_000_000


def _unchanged(repo: Repository, index: SearchIndex) -> bool:
    """Whether the files of ``index`` whose stat is ambiguous (modified or changed within
    :data:`_AMBIGUOUS_NS` of the time the index was built, or later) still hold the bytes the
    index was built from (read again and hashed; the others are proven by their stat)."""
    for rel, _, mtime, ctime, _ in index.fingerprint:
        if max(mtime, ctime) >= index._built_ns - _AMBIGUOUS_NS:
            data = repo._read(rel)
            digest = hashlib.sha256(data).hexdigest() if data is not None else ""
            if index._digests.get(rel, "") != digest:
                return False
    return True


def _chunk_tokens(source: SourceFile, chunk: Chunk, path_tokens: list[str]) -> list[str]:
    """The document of a chunk: its path's tokens, its qualified name's tokens (so that a
    method is found by its class's name too) and the tokens of its lines."""
    return (
        path_tokens + tokenize(chunk.name.replace(".", " ")) + tokenize(source.text(chunk.start, chunk.end))
    )


@dataclass(eq=False)
class SearchIndex:
    """A BM25 index over the chunks of one repository.

    Build it with :meth:`build` (always fresh) or get it with :meth:`for_repository`
    (built once per repository root and reused until a file changes); query it with
    :meth:`query` or :meth:`windows`.

    ``root`` is the repository folder; ``chunks`` the indexed chunks in path and line
    order; ``fingerprint`` the ``(path, size, mtime_ns, ctime_ns, inode)`` of each file when
    the index was built; ``build_seconds`` the wall time the build took (listing, reading,
    parsing, chunking, tokenizing and indexing) and ``timings`` its parts in seconds
    (``list``: listing and examining the files; ``read``: reading and parsing them through
    the repository, which keeps them for the other sources; ``chunk``: chunking and
    tokenizing; ``bm25``: building the BM25 index); ``last_query_seconds`` is the time
    of the latest :meth:`query`; ``lines`` and ``files`` count what was indexed and
    ``max_file_bytes`` is the repository's file size limit.
    """

    root: Path
    chunks: tuple[Chunk, ...]
    fingerprint: Fingerprint
    build_seconds: float
    timings: Mapping[str, float]
    lines: int
    files: int
    max_file_bytes: int
    last_query_seconds: float = 0.0
    _retriever: Any = field(default=None, repr=False)
    _built_ns: int = field(default=0, repr=False)
    _digests: Mapping[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, repo: Repository, paths: Iterable[str] | None = None) -> SearchIndex:
        """Index the files of ``repo``: ``paths`` (repository-relative) or, by default,
        every ``.py`` file and every source file of another language
        (:data:`CODE_SUFFIXES`), all read through ``repo``: files it does not read (binary,
        too large, ignored) are left out; a file it refuses (a secret) is indexed as the
        reader gives it (its secrets redacted), so that its hits are reported as withheld."""
        started = time.perf_counter()
        listed = sorted(paths) if paths is not None else _searchable_paths(repo)
        built_ns = time.time_ns()
        fingerprint = _fingerprint(repo.root, listed)
        listed_at = time.perf_counter()
        read = 0.0
        chunks: list[Chunk] = []
        corpus: list[list[str]] = []
        lines = files = 0
        digests: dict[str, str] = {}
        for rel in listed:
            check_deadline()
            before = time.perf_counter()
            source = repo.source(rel)
            read += time.perf_counter() - before
            if source is not None:
                digests[rel] = source.digest
            if source is None or not source.line_count:
                continue  # a refused file is indexed: its hits become policy omissions
            files += 1
            lines += source.line_count
            path_tokens = tokenize(rel)
            for chunk in _chunks(source):
                chunks.append(chunk)
                corpus.append(_chunk_tokens(source, chunk, path_tokens))
        chunked_at = time.perf_counter()
        retriever = _bm25_index(corpus) if chunks else None
        finished = time.perf_counter()
        return cls(
            root=repo.root,
            chunks=tuple(chunks),
            fingerprint=fingerprint,
            build_seconds=finished - started,
            timings={
                "list": listed_at - started,
                "read": read,
                "chunk": chunked_at - listed_at - read,
                "bm25": finished - chunked_at,
            },
            lines=lines,
            files=files,
            max_file_bytes=repo.max_file_bytes,
            _retriever=retriever,
            _built_ns=built_ns,
            _digests=digests,
        )

    @classmethod
    def for_repository(cls, repo: Repository) -> SearchIndex:
        """The index of ``repo``, built on first use and cached for the process.

        The cache is keyed by the repository root (and the reader's settings: its resource
        limits, ``.gitignore`` rules on or off); an entry is
        reused while every searchable file has the size, modification time, change time and
        inode it had when the index was built, every file modified within 2 s of the time the
        index was built (a write in the same timestamp tick can leave the stat as it was) still
        has the same SHA-256, and no file was added or removed; else the index is built again.
        The last few repositories are kept.
        """
        key = (repo.root, repo.resource_limits, repo.gitignore)
        paths = _searchable_paths(repo)
        fingerprint = _fingerprint(repo.root, paths)
        with _CACHE_LOCK:
            cached = _CACHE.get(key)
            if cached is not None and cached.fingerprint == fingerprint and _unchanged(repo, cached):
                _CACHE.move_to_end(key)
                return cached
        index = cls.build(repo, paths)
        with _CACHE_LOCK:
            _CACHE[key] = index
            _CACHE.move_to_end(key)
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        return index

    @staticmethod
    def clear_cache() -> None:
        """Forget every cached index."""
        with _CACHE_LOCK:
            _CACHE.clear()

    def scores(self, query: Sequence[str]) -> list[float]:
        """The BM25 score of every chunk for ``query`` (tokens; a token repeated ``n``
        times weighs ``n`` times), in chunk order."""
        if self._retriever is None or not query:
            return [0.0] * len(self.chunks)
        return [float(s) for s in _bm25_scores(self._retriever, list(query))]

    def query(
        self,
        query: Sequence[str],
        top_k: int = TOP_K,
        max_per_file: int | None = MAX_PER_FILE,
        *,
        uncounted: Callable[[str], bool] | None = None,
    ) -> list[Hit]:
        """The ``top_k`` best chunks for ``query`` (tokens; a token repeated ``n`` times
        weighs ``n`` times), best first, at most ``max_per_file`` of one file (``None``:
        no limit). Chunks scoring 0 are left out; ties keep file and line order. The hits
        in a file for which ``uncounted(path)`` is true are returned among the others but
        do not count towards ``top_k`` (the windows the reader will withhold, reported
        without taking a place). The time taken is kept as ``last_query_seconds``."""
        started = time.perf_counter()
        hits: list[Hit] = []
        if self._retriever is not None and query and top_k > 0:
            with needs("context"):
                import numpy as np

            scores = _bm25_scores(self._retriever, list(query))
            positive = np.flatnonzero(scores > 0)
            order = positive[np.argsort(-scores[positive], kind="stable")]
            per_file: dict[str, int] = {}
            counted = 0
            for i in order.tolist():
                chunk = self.chunks[i]
                count = per_file.get(chunk.path, 0)
                if max_per_file is not None and count >= max_per_file:
                    continue
                per_file[chunk.path] = count + 1
                hits.append(Hit(chunk, float(scores[i])))
                if uncounted is None or not uncounted(chunk.path):
                    counted += 1
                    if counted == top_k:
                        break
        self.last_query_seconds = time.perf_counter() - started
        return hits

    def windows(
        self,
        repo: Repository,
        query: Sequence[str],
        top_k: int = TOP_K,
        max_per_file: int | None = MAX_PER_FILE,
    ) -> list[Window]:
        """:meth:`query`'s hits as ``search`` windows read from ``repo``, the score
        rounded to 4 decimals. Hits in a file the reader refuses (a secret) are windows too
        (of its redacted lines, for :meth:`Repository.screen` to withhold and report) but do
        not take one of the ``top_k`` places."""

        def refused(path: str) -> bool:
            source = repo.source(path)
            return source is not None and source.refused is not None

        windows: list[Window] = []
        for hit in self.query(query, top_k, max_per_file, uncounted=refused):
            source = repo.source(hit.chunk.path)
            if source is not None and source.line_count:
                chunk = hit.chunk
                windows.append(make_window(source, chunk.start, chunk.end, "search", round(hit.score, 4)))
        return windows


_CACHE: OrderedDict[tuple[Path, Limits, bool], SearchIndex] = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 4


def search_windows(
    repo: Repository,
    query: Sequence[str],
    top_k: int = TOP_K,
    max_per_file: int = MAX_PER_FILE,
    *,
    index: SearchIndex | None = None,
) -> list[Window]:
    """The ``top_k`` chunks of the repository's files that score best for ``query``
    (tokens from :func:`build_query`; a repeated token weighs more), as ``search``
    windows, best first, taking at most ``max_per_file`` chunks of one file.

    ``index`` defaults to :meth:`SearchIndex.for_repository`, so the repository is
    indexed once per process. ``score`` is the chunk's BM25 score (rounded to 4
    decimals); chunks scoring 0 are left out, so an empty query gives no windows. Ties
    keep file and line order.
    """
    if not query or top_k <= 0:
        return []
    if index is None:
        index = SearchIndex.for_repository(repo)
    return index.windows(repo, query, top_k, max_per_file)


#: The BM25 parameters (``bm25s.BM25``'s defaults: the Lucene variant, ``k1``, ``b``).
BM25_K1 = 1.5
BM25_B = 0.75


class IncrementalBM25:
    """A BM25 index (the Lucene variant with ``bm25s``'s defaults, :data:`BM25_K1` and
    :data:`BM25_B`, scores in float32 summed in query order: the scores of ``bm25s.BM25``
    over the same documents) whose documents can be replaced without indexing the others
    again.

    ``keys`` name the documents, in order (hashable, distinct), and ``corpus`` gives each
    one's tokens. Instead of the scores of every term in every document (which depend on
    the document count and the average length, so change with any edit), it keeps each
    term's postings (document slot, term frequency) in arrays, each document's length, and
    which slots are live; :meth:`get_scores` computes the scores of the query's terms only.
    :meth:`updated` gives the index of another list of keys: the documents it keeps are
    not read again, those it adds are tokenized through ``tokens_of`` and their postings
    become one more segment; the segments are merged, and the postings of removed
    documents dropped, when there are more than :attr:`MAX_SEGMENTS` or the removed
    postings pass a quarter of the total.

    Raises ``ValueError`` if ``keys`` and ``corpus`` differ in length or a key repeats.
    """

    MAX_SEGMENTS = 8

    def __init__(self, keys: Sequence[Any], corpus: Sequence[Sequence[str]]) -> None:
        with needs("context"):
            import numpy as np

        if len(keys) != len(corpus):
            raise ValueError(f"keys and corpus differ in length: {len(keys)} != {len(corpus)}")
        self._vocab: dict[str, int] = {}
        self._slot: dict[Any, int] = {}
        terms, slots, counts, lengths = self._postings(keys, corpus, 0)
        self._lengths = np.asarray(lengths, dtype=np.int64)
        self._distinct = np.bincount(np.asarray(slots, dtype=np.int64), minlength=len(lengths))
        self._alive = np.ones(len(lengths), dtype=bool)
        self._live_count = len(lengths)
        self._live_tokens = int(self._lengths.sum())
        self._order = np.arange(len(lengths), dtype=np.int64)
        self._segments = [self._segment(terms, slots, counts)]
        self._dead_postings = 0

    def _postings(
        self, keys: Sequence[Any], corpus: Sequence[Sequence[str]], first_slot: int
    ) -> tuple[list[int], list[int], list[int], list[int]]:
        """The postings of new documents (given slots from ``first_slot`` on), the vocabulary
        grown as needed."""
        from collections import Counter

        vocab = self._vocab
        terms: list[int] = []
        slots: list[int] = []
        counts: list[int] = []
        lengths: list[int] = []
        for offset, (key, tokens) in enumerate(checked(zip(keys, corpus, strict=True), 64)):
            slot = first_slot + offset
            if key in self._slot:
                raise ValueError(f"a document key repeats: {key!r}")
            self._slot[key] = slot
            lengths.append(len(tokens))
            for token, count in Counter(tokens).items():
                term = vocab.get(token)
                if term is None:
                    term = vocab[token] = len(vocab)
                terms.append(term)
                slots.append(slot)
                counts.append(count)
        return terms, slots, counts, lengths

    def _segment(self, terms: Any, slots: Any, counts: Any) -> tuple[Any, Any, Any]:
        """Postings as ``(indptr, slots, counts)`` in term order (``indptr`` over the
        vocabulary as it is now)."""
        with needs("context"):
            import numpy as np

        terms = np.asarray(terms, dtype=np.int64)
        order = np.argsort(terms, kind="stable")
        indptr = np.zeros(len(self._vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=len(self._vocab)), out=indptr[1:])
        return (
            indptr,
            np.asarray(slots, dtype=np.int64)[order],
            np.asarray(counts, dtype=np.float64)[order],
        )

    @property
    def num_docs(self) -> int:
        """The number of (live) documents."""
        return self._live_count

    def _term_postings(self, term: int) -> tuple[Any, Any]:
        with needs("context"):
            import numpy as np

        parts = []
        for indptr, slots, counts in self._segments:
            if term + 1 < len(indptr) and indptr[term] < indptr[term + 1]:
                start, end = indptr[term], indptr[term + 1]
                parts.append((slots[start:end], counts[start:end]))
        if len(parts) == 1:
            slots, counts = parts[0]
        elif parts:
            slots = np.concatenate([p[0] for p in parts])
            counts = np.concatenate([p[1] for p in parts])
        else:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        if self._dead_postings:
            live = self._alive[slots]
            slots, counts = slots[live], counts[live]
        return slots, counts

    def get_scores(self, query: Sequence[str]) -> Any:
        """The float32 numpy array of the BM25 score of every document for ``query``
        (tokens; a repeated token counts once per repetition, a token in no document
        adds nothing), in key order."""
        with needs("context"):
            import numpy as np

        n = self._live_count
        scores = np.zeros(len(self._lengths), dtype=np.float32)
        if n == 0:
            return scores[self._order]
        average = float(np.float64(self._live_tokens) / n)
        norm: Any = None
        done: dict[int, tuple[Any, Any]] = {}
        for token in query:
            term = self._vocab.get(token)
            if term is None:
                continue
            part = done.get(term)
            if part is None:
                slots, counts = self._term_postings(term)
                df = len(slots)
                if df == 0:
                    done[term] = part = (slots, None)
                else:
                    if norm is None:
                        # bm25s: k1 * (1 - b + b * l_d / l_avg), in float64
                        norm = BM25_K1 * (1 - BM25_B + BM25_B * self._lengths.astype(np.float64) / average)
                    idf = np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))
                    tfc = counts / (counts + norm[slots])
                    done[term] = part = (slots, (np.float64(idf) * tfc).astype(np.float32))
            slots, values = part
            if values is not None:
                scores[slots] += values
        return scores[self._order]

    def updated(self, keys: Sequence[Any], tokens_of: Callable[[Any], Sequence[str]]) -> IncrementalBM25:
        """The index of the documents ``keys`` (in that order): a key this index holds keeps
        its document, a new one is tokenized with ``tokens_of(key)``. This index is left as
        it was. Raises ``ValueError`` if a key repeats."""
        with needs("context"):
            import numpy as np

        if len(set(keys)) != len(keys):
            raise ValueError("a document key repeats")
        new = object.__new__(IncrementalBM25)
        new._vocab = dict(self._vocab)
        old = self._slot
        new._slot = {key: old[key] for key in keys if key in old}
        added = [key for key in keys if key not in new._slot]
        first = len(self._lengths)
        terms, slots, counts, lengths = new._postings(added, [tokens_of(k) for k in added], first)
        alive = np.zeros(first + len(added), dtype=bool)
        alive[np.fromiter(new._slot.values(), dtype=np.int64, count=len(new._slot))] = True
        new._alive = alive
        new._lengths = np.concatenate([self._lengths, np.asarray(lengths, dtype=np.int64)])
        added_distinct = np.bincount(np.asarray(slots, dtype=np.int64) - first, minlength=len(added))
        new._distinct = np.concatenate([self._distinct, added_distinct[: len(added)]])
        new._live_count = len(keys)
        new._live_tokens = int(new._lengths[alive].sum())
        new._order = np.fromiter((new._slot[k] for k in keys), dtype=np.int64, count=len(keys))
        new._segments = list(self._segments)
        if terms:
            new._segments.append(new._segment(terms, slots, counts))
        new._dead_postings = int(new._distinct[~alive].sum())
        total = int(new._distinct.sum())
        if len(new._segments) > self.MAX_SEGMENTS or new._dead_postings * 4 > total:
            new._compact()
        return new

    def _compact(self) -> None:
        """One segment of the live postings, the live slots numbered again in order."""
        with needs("context"):
            import numpy as np

        terms = np.concatenate(
            [
                np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
                for indptr, _, _ in self._segments
            ]
        )
        slots = np.concatenate([seg[1] for seg in self._segments])
        counts = np.concatenate([seg[2] for seg in self._segments])
        live = self._alive[slots]
        renumber = np.cumsum(self._alive) - 1
        alive = self._alive
        self._segments = [self._segment(terms[live], renumber[slots[live]], counts[live])]
        self._lengths = self._lengths[alive]
        self._distinct = self._distinct[alive]
        self._order = renumber[self._order]
        self._slot = {key: int(renumber[slot]) for key, slot in self._slot.items()}
        self._alive = np.ones(len(self._lengths), dtype=bool)
        self._dead_postings = 0

    def value(self) -> dict[str, Any]:
        """The plain form (for ``marshal``): the vocabulary as a list of tokens, the document
        keys and slots, and the arrays (the segments merged) as bytes, as 32-bit integers
        (``"narrow"``: half the bytes to store and load) when every value fits, else as kept;
        :meth:`from_value` reads it back."""
        with needs("context"):
            import numpy as np

        merged = self
        if len(self._segments) != 1 or not bool(self._alive.all()):
            merged = object.__new__(IncrementalBM25)
            merged.__dict__.update(self.__dict__)
            merged._compact()
        indptr, slots, counts = merged._segments[0]
        arrays = {
            "lengths": merged._lengths,
            "order": merged._order,
            "indptr": indptr,
            "slots": slots,
            "counts": counts,
        }
        # (A term frequency is a whole number: as an integer it is the same float64 again.)
        narrow = all(len(a) == 0 or (a.min() >= 0 and a.max() <= _INT32_MAX) for a in arrays.values())
        if narrow:
            arrays = {name: array.astype(np.int32) for name, array in arrays.items()}
        return {
            "tokens": list(merged._vocab),
            "keys": list(merged._slot),
            "slots": list(merged._slot.values()),
            "arrays": {name: array.tobytes() for name, array in arrays.items()},
            "narrow": narrow,
        }

    @classmethod
    def from_value(cls, value: object) -> IncrementalBM25 | None:
        """The index of a plain form (:meth:`value`); ``None`` for one whose parts do not
        fit together (a damaged value)."""
        with needs("context"):
            import numpy as np

        if not isinstance(value, dict):
            return None
        try:
            tokens, keys, slots, arrays = value["tokens"], value["keys"], value["slots"], value["arrays"]
            dtypes = {
                "lengths": np.int64,
                "order": np.int64,
                "indptr": np.int64,
                "slots": np.int64,
                "counts": np.float64,
            }
            narrow = value.get("narrow", False)
            if narrow is True:
                parts: dict[str, Any] = {
                    name: np.frombuffer(arrays[name], dtype=np.int32).astype(dtype)
                    for name, dtype in dtypes.items()
                }
            elif narrow is False:
                parts = {name: np.frombuffer(arrays[name], dtype=dtype) for name, dtype in dtypes.items()}
            else:
                return None
        except (KeyError, TypeError, ValueError):
            return None
        total = len(parts["lengths"])
        indptr = parts["indptr"]
        if not (
            isinstance(tokens, list)
            and all(isinstance(t, str) for t in tokens)
            and len(set(tokens)) == len(tokens)
            and isinstance(keys, list)
            and isinstance(slots, list)
            and len(keys) == len(slots) == total
            and sorted(s for s in slots if type(s) is int) == list(range(total))
            and len(indptr) == len(tokens) + 1
            and int(indptr[0]) == 0
            and bool(np.all(np.diff(indptr) >= 0))
            and int(indptr[-1]) == len(parts["slots"]) == len(parts["counts"])
            and bool(np.all((parts["slots"] >= 0) & (parts["slots"] < total)))
            and bool(np.all(parts["counts"] >= 1))
            and bool(np.all(parts["lengths"] >= 0))
            and len(parts["order"]) == total
            and sorted(parts["order"].tolist()) == list(range(total))
        ):
            return None
        new = object.__new__(cls)
        new._vocab = {token: i for i, token in enumerate(tokens)}
        try:
            pairs = zip((tuple(k) if isinstance(k, list) else k for k in keys), slots, strict=True)
            new._slot = dict(pairs)
        except TypeError:  # an unhashable key
            return None
        if len(new._slot) != len(keys):
            return None
        new._lengths, new._order = parts["lengths"], parts["order"]
        new._segments = [(indptr, parts["slots"], parts["counts"])]
        new._distinct = np.bincount(parts["slots"], minlength=total)
        new._alive = np.ones(total, dtype=bool)
        new._dead_postings = 0
        new._live_count = total
        new._live_tokens = int(new._lengths.sum())
        return new


_INT32_MAX = 2**31 - 1


def _bm25_index(corpus: list[list[str]]) -> Any:
    with needs("context"):
        import bm25s  # type: ignore[import-untyped]  # imported here: it loads numpy

    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    return retriever


def _bm25_scores(retriever: Any, query: list[str]) -> Any:
    """The numpy array of BM25 scores of every document for ``query``; a repeated term
    counts once per repetition."""
    return retriever.get_scores(query)
