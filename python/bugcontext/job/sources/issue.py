"""Issue evidence: the code an issue text (a bug report) names.

Agents have the issue as well as the failing test. :func:`issue_mentions` reads the code
identifiers out of it:

* names in backticks and in fenced code blocks (a pasted example or traceback): every
  identifier there (keywords, builtins and one- or two-letter names left out);
* in the prose: dotted paths (``flask.Config.from_file``, ``Config.from_file``), calls
  (``from_file(``), ``snake_case`` and ``CamelCase`` words;
* file paths (``src/flask/config.py``) and the frames of a pasted traceback
  (``File ".../flask/config.py", line 264, in from_file``).

:func:`issue_evidence` resolves them to definitions in the repository with the
:class:`~.symbols.SymbolIndex`: a traceback frame's function in the frame's file (its path
matched by its longest suffix; the line numbers of an issue are often of another version),
a dotted path's last name among the definitions whose class or module matches the rest,
a bare name among its definitions (shared among them, too ambiguous past
``MAX_DEFINITIONS``); definitions in test files are left out (the failing test is failure
evidence already). The weight of a mention is ``TRACEBACK_WEIGHT``, ``QUALIFIED_WEIGHT``,
``CODE_WEIGHT`` or ``PROSE_WEIGHT`` by its kind, shared among the definitions it resolves
to; a definition keeps its strongest mention.

The windows of the named definitions rank after every window the failing log gives
(:func:`~.gather.gather` scores them in the search tier, below the log's search windows and
above the issue's own search, :func:`issue_query`, and keeps both out of the failing files),
so the issue only fills what the log's evidence leaves of a budget: it never pushes failure,
reference or search evidence out, and never lowers a case's coverage.
"""

from __future__ import annotations

import keyword
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

from bugcontext.job.sources.failure import is_test_file
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.search import build_query, tokenize
from bugcontext.job.sources.symbols import MAX_DEFINITIONS, Definition, SymbolIndex
from bugcontext.job.sources.window import RADIUS, Window, make_window

__all__ = [
    "CODE_WEIGHT",
    "MAX_ISSUE_WINDOWS",
    "PROSE_WEIGHT",
    "QUALIFIED_WEIGHT",
    "TRACEBACK_WEIGHT",
    "IssueEvidence",
    "Mention",
    "issue_evidence",
    "issue_mentions",
    "issue_query",
    "issue_windows",
]

#: Weight of a function named by a frame of a traceback pasted in the issue.
TRACEBACK_WEIGHT = 1.0
#: Weight of a dotted path (``Class.method``, ``module.function``) that resolves.
QUALIFIED_WEIGHT = 0.8
#: Weight of a name in backticks or in a code block.
CODE_WEIGHT = 0.5
#: Weight of a code-like name in the prose.
PROSE_WEIGHT = 0.3
#: At most this many definitions are taken from the issue.
MAX_ISSUE_WINDOWS = 12

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_BACKTICK = re.compile(r"`([^`\n]+)`")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"(?<![\w./])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w/])")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b_[a-z][a-z0-9_]*\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([\w<>.]+))?')
_FRAME_LINE = re.compile(r'^.*File "[^"]+", line \d+.*$', re.M)
_FILE = re.compile(r"(?<![\w/])(/?(?:[\w.-]+/)*[\w.-]+\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java))\b")
_COMMON = frozenset(
    {
        *keyword.kwlist,
        "self",
        "cls",
        "True",
        "False",
        "None",
        "print",
        "len",
        "str",
        "int",
        "dict",
        "list",
        "set",
        "tuple",
        "type",
        "object",
        "import",
        "python",
        "Python",
        "pip",
        "install",
        "Traceback",
        "File",
        "line",
        "most",
        "recent",
        "call",
        "last",
        "Error",
        "Exception",
        "e.g",
        "i.e",
    }
)


@dataclass(frozen=True)
class Mention:
    """A code identifier the issue names: ``name`` (the last part), ``qualifier`` (the parts
    before it in a dotted path, empty otherwise), ``kind`` (``traceback``, ``qualified``,
    ``code`` or ``prose``) and, for a traceback frame or a file path, the ``path`` written."""

    name: str
    qualifier: tuple[str, ...]
    kind: str
    path: str | None = None


@dataclass(frozen=True)
class IssueEvidence:
    """Definition ``definition`` deserves a window of weight ``weight`` in ``(0, 1]``
    because of ``mention``."""

    definition: Definition
    weight: float
    mention: Mention


def _usable(name: str) -> bool:
    return len(name) > 2 and name not in _COMMON and not (name.startswith("__") and name.endswith("__"))


def issue_mentions(text: str) -> list[Mention]:
    """The code identifiers of an issue text in order of first mention, each once per kind
    (see the module docstring)."""
    found: dict[tuple[str, tuple[str, ...], str, str | None], Mention] = {}

    def add(mention: Mention) -> None:
        found.setdefault((mention.name, mention.qualifier, mention.kind, mention.path), mention)

    for match in _FRAME.finditer(text):
        function = match.group(3) or ""
        if function and _IDENT.fullmatch(function) and _usable(function):
            add(Mention(function, (), "traceback", match.group(1)))
    code = [m.group(1) for m in _FENCE.finditer(text)] + [m.group(1) for m in _BACKTICK.finditer(text)]
    # A traceback's frame lines are mentions of their own (above), not names.
    code = [_FRAME_LINE.sub("", part) for part in code]
    prose = _BACKTICK.sub(" ", _FENCE.sub(" ", text))
    for part in [*code, prose]:
        for match in _DOTTED.finditer(part):
            pieces = tuple(match.group(0).split("."))
            if all(p.isidentifier() for p in pieces) and _usable(pieces[-1]):
                add(Mention(pieces[-1], pieces[:-1], "qualified"))
    for part in code:
        for match in _IDENT.finditer(part):
            if _usable(match.group(0)):
                add(Mention(match.group(0), (), "code"))
    for pattern in (_CALL, _SNAKE, _CAMEL):
        for match in pattern.finditer(prose):
            name = match.group(1) if pattern is _CALL else match.group(0)
            if _usable(name):
                add(Mention(name, (), "prose"))
    for match in _FILE.finditer(text):
        add(Mention(posixpath.basename(match.group(1)), (), "file", match.group(1)))
    return list(found.values())


def _match_path(repo_paths: Iterable[str], written: str) -> str | None:
    """The repository file a path written in the issue (absolute, another checkout's, a
    ``site-packages`` one) means: the one sharing its longest suffix of path parts (at
    least the file name; a bare file name only when it is unique)."""
    parts = [p for p in written.replace("\\", "/").split("/") if p and p != "."]
    if not parts:
        return None
    best: list[str] = []
    best_len = 0
    for path in repo_paths:
        mine = path.split("/")
        n = 0
        while n < min(len(mine), len(parts)) and mine[-1 - n] == parts[-1 - n]:
            n += 1
        if n > best_len:
            best, best_len = [path], n
        elif n == best_len and n:
            best.append(path)
    if best_len == 0 or len(best) != 1:
        return None
    return best[0]


def issue_evidence(
    repo: Repository, text: str, index: SymbolIndex | None = None, *, limit: int = MAX_ISSUE_WINDOWS
) -> list[IssueEvidence]:
    """The definitions the issue ``text`` names, strongest first, at most ``limit`` (see
    the module docstring)."""
    index = index if index is not None else SymbolIndex(repo)
    best: dict[Definition, IssueEvidence] = {}
    order: dict[Definition, int] = {}
    weights = {
        "traceback": TRACEBACK_WEIGHT,
        "qualified": QUALIFIED_WEIGHT,
        "code": CODE_WEIGHT,
        "prose": PROSE_WEIGHT,
    }

    def keep(definition: Definition, weight: float, mention: Mention) -> None:
        if is_test_file(definition.path) or definition.scope is not None:
            return
        current = best.get(definition)
        if current is None or weight > current.weight:
            best[definition] = IssueEvidence(definition, min(1.0, weight), mention)
        order.setdefault(definition, len(order))

    paths: list[str] | None = None
    for mention in issue_mentions(text):
        if mention.kind == "file":
            continue  # a file path alone names no definition; its frames do
        definitions = [d for d in index.lookup(mention.name) if not is_test_file(d.path)]
        if not definitions:
            continue
        weight = weights[mention.kind]
        if mention.kind == "traceback" and mention.path is not None:
            if paths is None:
                paths = index.paths
            where = _match_path(paths, mention.path)
            chosen = [d for d in definitions if d.path == where]
        elif mention.qualifier:
            chosen = [d for d in definitions if _qualified(d, mention.qualifier)]
            if not chosen:
                weight = PROSE_WEIGHT
                chosen = definitions
        else:
            chosen = definitions
        if not chosen or len(chosen) > MAX_DEFINITIONS:
            continue
        for definition in chosen:
            keep(definition, weight / len(chosen), mention)
    ranked = sorted(best, key=lambda d: (-best[d].weight, order[d]))
    return [best[d] for d in ranked[:limit]]


def _qualified(definition: Definition, qualifier: tuple[str, ...]) -> bool:
    """Whether a dotted path's qualifier names the definition's class or module."""
    last = qualifier[-1]
    if definition.container == last:
        return True
    parts = definition.path.rsplit(".", 1)[0].split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return bool(parts) and parts[-1] == last


def issue_windows(
    repo: Repository,
    text: str,
    index: SymbolIndex | None = None,
    *,
    low: float = 0.0,
    high: float = 1.0,
    limit: int = MAX_ISSUE_WINDOWS,
) -> list[Window]:
    """Windows (reason ``reference``; :func:`~.gather.gather` ranks them in the search tier) of
    the definitions the issue names, best first, scoring in
    ``(low, high]``: ``low + weight * (high - low)``. A definition longer than
    ``2 * RADIUS + 1`` lines also gets a window of its first ``2 * RADIUS + 1`` lines at
    the same score (its signature and docstring: a class's attributes, say)."""
    windows: list[Window] = []
    seen: set[tuple[str, int, int]] = set()
    for evidence in issue_evidence(repo, text, index, limit=limit):
        d = evidence.definition
        source = repo.source(d.path)
        if source is None or source.line_count == 0:
            continue
        score = low + evidence.weight * (high - low)
        spans = [(d.start, d.end)]
        if d.end - d.start + 1 > 2 * RADIUS + 1:
            spans.insert(0, (d.start, d.start + 2 * RADIUS))
        for start, end in spans:
            window = make_window(source, start, end, "reference", score)
            key = (window.path, window.start, window.end)
            if key not in seen:
                seen.add(key)
                windows.append(window)
    return windows


def issue_query(text: str) -> list[str]:
    """Search tokens of the issue: the words of its text (:func:`~.search.build_query`, the
    words every test carries left out), and the tokens of the identifiers it names once more,
    so they weigh double."""
    tokens = build_query(None, text)
    named = [t for m in issue_mentions(text) if m.kind != "file" for t in tokenize(m.name)]
    return [*tokens, *dict.fromkeys(named)]
