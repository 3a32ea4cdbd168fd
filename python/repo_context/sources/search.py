"""Search windows: function-level chunks of the repository ranked by BM25 against a query.

Ranking uses the ``bm25s`` library (Lucene's BM25 variant, ``k1 = 1.5``, ``b = 0.75``)
over code-aware tokens: identifiers are lower-cased and also split at ``_`` and
camel-case boundaries (``unescapeHTML`` gives ``unescapehtml``, ``unescape``, ``html``),
English stop words and one-letter tokens are dropped.
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from .files import Repository, SourceFile, node_span
from .pytest_log import TestFailure
from .window import Window, make_window

__all__ = [
    "CHUNK_LINES",
    "MAX_PER_FILE",
    "TOP_K",
    "Chunk",
    "build_query",
    "chunk_spans",
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

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SUBWORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# bm25s.stopwords.STOPWORDS_EN, spelled out so that importing this module stays cheap.
_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)
# Words every test name carries by pytest's naming convention: no information.
_TEST_WORDS = frozenset({"test", "tests"})


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
    parts = [p.lower() for p in _SUBWORD.findall(identifier)]
    whole = identifier.lower().strip("_")
    candidates = [whole, *parts] if len(parts) > 1 else [whole]
    return tuple(t for t in candidates if len(t) > 1 and t not in _STOPWORDS)


def build_query(failure: TestFailure | None, extra: str | None = None) -> list[str]:
    """Query tokens, each once, in this order: exception type, message lines, the test
    name (without the ``test`` words of pytest's naming convention), then ``extra``."""
    tokens: list[str] = []
    if failure is not None:
        if failure.exception_type:
            tokens += tokenize(failure.exception_type)
        for line in failure.message_lines or (failure.message,):
            tokens += tokenize(line)
        if failure.name:
            tokens += [t for t in tokenize(failure.name) if t not in _TEST_WORDS]
    if extra:
        tokens += tokenize(extra)
    return list(dict.fromkeys(tokens))


@dataclass(frozen=True)
class Chunk:
    """Lines ``start..end`` (1-based, closed) of the repository file ``path``."""

    path: str
    start: int
    end: int


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


def chunk_spans(source: SourceFile) -> list[tuple[int, int]]:
    """The chunks of one file as closed line ranges, in file order.

    A parsed file is cut at its functions and methods (nested functions stay inside
    theirs; decorators included); a class contributes its head (class line, docstring
    and attributes up to the first method) and its methods; runs of other module- or
    class-level statements are grouped up to ``CHUNK_LINES`` lines; plain ``import``
    statements at those levels are left out (a name imported is not a name explained). A
    file that does not parse is cut into consecutive ``CHUNK_LINES``-line pieces.
    """
    if source.line_count == 0:
        return []
    if source.tree is None:
        return list(_split(1, source.line_count, CHUNK_LINES))
    spans: list[tuple[int, int]] = []

    def flush(pending: list[tuple[int, int]]) -> None:
        if not pending:
            return
        group_start, group_end = pending[0]
        for start, end in pending[1:]:
            if end - group_start + 1 > CHUNK_LINES:
                spans.extend(_split(group_start, group_end, CHUNK_LINES))
                group_start = start
            group_end = end
        spans.extend(_split(group_start, group_end, CHUNK_LINES))
        pending.clear()

    def visit(body: Iterable[ast.stmt]) -> None:
        pending: list[tuple[int, int]] = []
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                flush(pending)
                start, end = node_span(stmt)
                spans.extend(_split(start, end, CHUNK_LINES * 3 // 2))
            elif isinstance(stmt, ast.ClassDef):
                flush(pending)
                start, end = node_span(stmt)
                members = [
                    s
                    for s in stmt.body
                    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                ]
                head_end = node_span(members[0])[0] - 1 if members else end
                if head_end >= start:
                    spans.extend(_split(start, head_end, CHUNK_LINES))
                if members:
                    first = stmt.body.index(members[0])
                    visit(stmt.body[first:])
            elif not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                pending.append(node_span(stmt))
        flush(pending)

    visit(source.tree.body)
    return spans


def search_windows(
    repo: Repository, query: list[str], top_k: int = TOP_K, max_per_file: int = MAX_PER_FILE
) -> list[Window]:
    """The ``top_k`` chunks of the repository's ``.py`` files that score best for
    ``query`` (tokens from :func:`build_query`), as ``search`` windows, best first, taking
    at most ``max_per_file`` chunks of one file.

    ``score`` is the chunk's BM25 score (rounded to 4 decimals); chunks scoring 0 are
    left out, so an empty query gives no windows. Ties keep file and line order.
    """
    if not query or top_k <= 0:
        return []
    chunks: list[Chunk] = []
    corpus: list[list[str]] = []
    sources: dict[str, SourceFile] = {}
    for source in repo.python_sources():
        sources[source.path] = source
        path_tokens = tokenize(source.path)
        for start, end in chunk_spans(source):
            chunks.append(Chunk(source.path, start, end))
            corpus.append(path_tokens + tokenize(source.text(start, end)))
    if not chunks:
        return []
    scores = _bm25_scores(corpus, query)
    ranked = sorted((i for i, score in enumerate(scores) if score > 0), key=lambda i: (-scores[i], i))
    windows: list[Window] = []
    per_file: dict[str, int] = {}
    for i in ranked:
        chunk = chunks[i]
        if len(windows) == top_k:
            break
        if per_file.get(chunk.path, 0) == max_per_file:
            continue
        per_file[chunk.path] = per_file.get(chunk.path, 0) + 1
        windows.append(
            make_window(sources[chunk.path], chunk.start, chunk.end, "search", round(scores[i], 4))
        )
    return windows


def _bm25_scores(corpus: list[list[str]], query: list[str]) -> list[float]:
    """BM25 score of every document of ``corpus`` (lists of tokens) for ``query``."""
    import bm25s  # type: ignore[import-untyped]  # imported here: it loads numpy

    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    terms = list(dict.fromkeys(query))  # each query term counts once
    return [float(score) for score in retriever.get_scores(terms)]
