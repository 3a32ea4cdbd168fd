"""Failure evidence: the code around each traceback frame that lies in the repository.

* :func:`project_frames` keeps the frames whose file is in the repository (never
  ``site-packages``, the standard library, ``<frozen ...>`` or ``<string>``), every link of
  a chained exception included, most relevant first;
* :func:`resolve_frames` also maps frames printed on another machine or in another
  checkout folder (``C:\\repo\\pkg\\calc.py``) to the repository file with the longest
  common path tail, and reports every frame that gives no window (a line past the end of
  its file, an unreadable file, an ambiguous or unmatched path) as a policy omission;
* :func:`failure_files` lists the failing files in error order (the deepest project
  frame's file first);
* :func:`failure_windows` gives each frame its whole syntactic unit: the enclosing function
  or method (decorators included); a line at module level gets a bounded run of whole
  statements around it;
* :func:`called_code_windows`: when the assertion sits in the test body (the deepest
  project frame is in a test file and the error is an ``AssertionError``), the test file
  is the failure file and the code under test that the failing test calls is reference
  evidence.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from bugcontext.core.limits import describe
from bugcontext.job._deadline import check as check_deadline
from bugcontext.job.sources.files import (
    WINDOW_UNREADABLE,
    PolicyOmission,
    Repository,
    SourceFile,
    enclosing_function,
    node_span,
)
from bugcontext.job.sources.logs.sourcemap import original_line
from bugcontext.job.sources.paths import map_path
from bugcontext.job.sources.reports import Frame, TestFailure
from bugcontext.job.sources.symbols import ParsedFile, SymbolIndex
from bugcontext.job.sources.window import RADIUS, Window, make_window

__all__ = [
    "FRAME_PAST_END",
    "MAX_CALLED",
    "ProjectFrame",
    "assertion_in_test",
    "called_code_windows",
    "failure_files",
    "failure_spans",
    "failure_windows",
    "is_test_file",
    "locate_test",
    "merge_windows",
    "project_frames",
    "resolve_frames",
]

#: Why a traceback frame gave no window: its line is past the end of the file.
FRAME_PAST_END = "policy: line past the end of the file"

#: At most this many definitions are taken as the code under test of a failing test body.
MAX_CALLED = 8

# The largest unit (in lines) that is a window on its own: a longer function also gets a
# bounded run of whole statements around the failing line.
_UNIT = 2 * RADIUS + 1

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BLOCKS = ("body", "handlers", "orelse", "finalbody", "cases")
_TEST_DIRS = frozenset({"test", "tests", "__tests__", "__test__", "spec"})
_JS_SUFFIXES = frozenset({"js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"})
# Exceptions that mean "a check of the test failed" rather than "the code raised".
_ASSERTIONS = frozenset({"AssertionError", "Failed", "AssertionFailedError"})


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


def is_test_file(path: str) -> bool:
    """Whether the repository-relative ``path`` is a test file: Python's ``test_*.py``,
    ``*_test.py``, ``tests.py``, ``conftest.py``; JavaScript's and TypeScript's
    ``*.test.ts``, ``*.spec.js`` (any of ``.js .jsx .mjs .cjs .ts .tsx .mts .cts``); Go's
    ``*_test.go``; Java's (and Kotlin's) ``*Test.java``, ``*Tests.java``, ``Test*.java``,
    ``*IT.java``; or a file under a ``test``/``tests``/``__tests__``/``__test__``/``spec``
    folder (Rust's ``tests/*.rs``, Maven's ``src/test/java``)."""
    folders, _, name = path.rpartition("/")
    if name.startswith("test_") or name.endswith(("_test.py", "_test.go")):
        return True
    if name in ("tests.py", "conftest.py"):
        return True
    stem, dot, suffix = name.rpartition(".")
    if dot and suffix in _JS_SUFFIXES and stem.endswith((".test", ".spec")):
        return True
    if dot and suffix in ("java", "kt", "scala", "groovy") and (
        stem.endswith(("Test", "Tests", "IT")) or (stem.startswith("Test") and stem[4:5].isupper())
    ):
        return True
    return any(part in _TEST_DIRS for part in folders.split("/") if part)




def _bounded_frames(repo: Repository, frames: Sequence[Frame], what: str) -> Sequence[Frame]:
    """The ``frames`` of a failure to map, at most ``max_frames`` of the repository's limits:
    of more, the first and last halves (the test's own frames and the deepest, where it
    failed), the frames between skipped and recorded in ``repo.skipped`` under
    ``"<frames>"`` (``what`` names them in the record)."""
    maximum = repo.resource_limits.max_frames
    if len(frames) <= maximum:
        return frames
    repo.skipped["<frames>"] = describe("max_frames", what, len(frames), maximum)
    first = maximum // 2
    return [*frames[:first], *frames[len(frames) - (maximum - first) :]]


def resolve_frames(
    repo: Repository, failure: TestFailure, *, from_test_id: bool = True
) -> tuple[list[ProjectFrame], list[PolicyOmission]]:
    """The project frames of ``failure`` (:func:`project_frames`) and an omission for each
    frame under the repository that gives no window, so that no frame disappears without
    a trace.

    A frame's path is the repository file it names (a relative path taken from the
    repository folder). A path that names no file here (a Windows path
    ``pkg\\calc.py``, ``C:\\Users\\dev\\repo1\\pkg\\calc.py``, a CI checkout folder
    ``/home/runner/work/x/x/pkg/calc.py``, a path outside the repository folder or one
    whose symbolic links lead out of it) is mapped to the repository file whose path
    has the longest tail of folder and file names in common with it (``\\`` read as
    ``/``), when exactly one file has it; installed code (``site-packages``,
    ``lib/python3.11``) and pseudo-files (``<frozen ...>``) are never mapped. A frame in a
    compiled ``.js`` file whose source map is in the repository is the line of the source
    (``.ts``) it maps to (:func:`.logs.sourcemap.original_line`).

    At most ``max_frames`` frames are mapped (:mod:`bugcontext.core.limits`: of a longer
    traceback its first and last halves); a path longer than :data:`PATH_MAX` bytes names
    no file and is not looked up.

    Omissions (reason ``policy``, source ``failure``, lines ``line..line``): a frame whose
    line is past the end of its file (:data:`FRAME_PAST_END`; a line past ``2**31 - 1``,
    ``TestFailure.beyond``, is past the end of every file and reported at line ``2**31``); a file under the
    repository folder the reader will not read (ignored, binary, oversized:
    ``WINDOW_UNREADABLE``); a path from elsewhere that matches several files
    (:data:`FRAME_AMBIGUOUS`) or none (:data:`FRAME_UNMATCHED`), under the path as printed.
    """
    by_segment: dict[int, list[ProjectFrame]] = {}
    omitted: list[PolicyOmission] = []
    seen: set[tuple[str, int, str]] = set()
    names: dict[str, list[str]] = {}
    maps: dict[str, object] = {}

    def omit(path: str, line: int, why: str) -> None:
        if (path, line, why) not in seen:
            seen.add((path, line, why))
            omitted.append(PolicyOmission(path, line, line, "failure", why))

    beyond = set(failure.beyond)
    bounded = _bounded_frames(repo, failure.frames, "the traceback")
    for frame in (*bounded, *_bounded_frames(repo, failure.beyond, "the list of frames past every file")):
        check_deadline()
        if frame.path.startswith("<"):
            continue  # <frozen ...>, <string>: no file
        rel, where, why = map_path(repo, frame.path, names)
        if rel is None:
            if where is not None and why is not None:
                omit(where, frame.line, why)
            continue
        line = frame.line
        if frame not in beyond and rel.endswith((".js", ".mjs", ".cjs")):
            # Compiled JavaScript with its source map in the repository: the TypeScript source.
            mapped = original_line(repo, rel, line, maps)
            if mapped is not None:
                rel, line = mapped
        source = repo.source(rel)
        if source is None:
            omit(rel, line, WINDOW_UNREADABLE)
            continue
        if frame in beyond or not 1 <= line <= source.line_count:
            omit(rel, line, FRAME_PAST_END)
            continue
        by_segment.setdefault(frame.segment, []).append(ProjectFrame(rel, line, 0, frame))
    ordered: list[ProjectFrame] = []
    for segment in sorted(by_segment, reverse=True):
        deepest_first = list(reversed(by_segment[segment]))
        ordered.extend(
            ProjectFrame(pf.path, pf.line, distance, pf.frame) for distance, pf in enumerate(deepest_first)
        )
    if not ordered and from_test_id:
        located = locate_test(repo, failure)
        if located is not None:
            ordered.append(located)
    return ordered, omitted


def project_frames(
    repo: Repository, failure: TestFailure, *, from_test_id: bool = True
) -> list[ProjectFrame]:
    """The frames of ``failure`` whose file is in ``repo``, most relevant first.

    Frames in ``site-packages``, the standard library, ``<frozen ...>`` or ``<string>``
    modules or anywhere outside the repository are dropped, as are frames whose line is
    past the end of the file (:func:`resolve_frames` reports those). A path from another
    machine or checkout folder is mapped to the repository file it ends with
    (:func:`resolve_frames`). Order: the exception the test saw first (its deepest frame
    first), then the exceptions it was chained from, latest first, so the root cause's
    frames are kept too. So the first frame, if any, is the deepest project frame of the
    final exception: its file is the failure file.

    With ``from_test_id``, a failure whose traceback has no project frame (``--tb=line``
    pointing into the standard library, ``--tb=no``, a JUnit report without text) gets
    the failing test's own definition as its one frame, found from its test id
    (:func:`locate_test`).
    """
    return resolve_frames(repo, failure, from_test_id=from_test_id)[0]


def failure_files(frames: Sequence[ProjectFrame]) -> list[str]:
    """The failing files in error order: the file of the first (deepest) frame, then the
    other files of ``frames`` in their order (:func:`project_frames`: deep to shallow,
    the chained exceptions after the final one), each once."""
    return list(dict.fromkeys(pf.path for pf in frames))


# --- where a test is defined ------------------------------------------------------------


def _module_candidates(parts: list[str]) -> Iterator[tuple[str, list[str]]]:
    """``(module path stem, qualified name)`` splits of a dotted test id, the longest
    module first; leading parts may be folders above the repository (JUnit class names
    are relative to pytest's root)."""
    for end in range(len(parts) - 1, 0, -1):
        for begin in range(end):
            yield "/".join(parts[begin:end]), parts[end:]


def locate_test(repo: Repository, failure: TestFailure) -> ProjectFrame | None:
    """The definition of the failing test as a frame (its ``def`` line), found from
    ``failure.test_id``: a pytest node id (``tests/t.py::TestC::test_x[1]``), a unittest
    id (``tests.t.TestC.test_x``) or a JUnit ``classname.name``; ``None`` when the id
    names no function of a repository file."""
    test_id = failure.test_id
    if not test_id:
        return None
    base = test_id.split("[", 1)[0]
    candidates: list[tuple[str, list[str]]] = []
    if "::" in base:
        path, *names = base.split("::")
        candidates.append((path[:-3] if path.endswith(".py") else path, names))
    else:
        candidates.extend(_module_candidates(base.split(".")))
    for stem, names in candidates:
        if not names:
            continue
        for rel_path in (f"{stem}.py", f"{stem}/__init__.py"):
            rel = repo.relative(rel_path)
            if rel is None:
                continue
            source = repo.source(rel)
            if source is None or source.tree is None:
                continue
            node = _qualified(source.tree.body, names)
            if node is not None:
                segment = len(failure.chain) - 1 if failure.chain else 0
                return ProjectFrame(rel, node.lineno, 0, Frame(rel, node.lineno, node.name, segment))
    return None


def _qualified(body: list[ast.stmt], names: list[str]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function ``names[-1]`` inside the classes ``names[:-1]`` of a module body."""
    scope = body
    for depth, name in enumerate(names):
        found = next((n for n in _top_level(scope) if isinstance(n, _DEFINITIONS) and n.name == name), None)
        if found is None:
            return None
        if depth == len(names) - 1:
            return found if isinstance(found, _FUNCTIONS) else None
        if not isinstance(found, ast.ClassDef):
            return None
        scope = found.body
    return None


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module or class body, the blocks of its ``if``/``try``/``with``
    statements included (not function bodies)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With, ast.AsyncWith)) or type(stmt).__name__ == "TryStar":
            for name in _BLOCKS:
                block = getattr(stmt, name, None)
                if isinstance(block, list):
                    for item in block:
                        if isinstance(item, ast.ExceptHandler):
                            yield from _top_level(item.body)
                        elif isinstance(item, ast.stmt):
                            yield from _top_level([item])


# --- failure windows --------------------------------------------------------------------


def _span(node: ast.AST) -> tuple[int, int] | None:
    """Lines of a statement, ``except`` clause or ``case``, decorators included."""
    if isinstance(node, ast.stmt):
        return node_span(node)
    if isinstance(node, ast.ExceptHandler):
        return node.lineno, node.end_lineno or node.lineno
    if isinstance(node, ast.match_case) and node.body:
        last = node.body[-1]
        return node.pattern.lineno, last.end_lineno or last.lineno
    return None


def _blocks(node: ast.AST) -> Iterator[list[ast.AST]]:
    """The statement blocks nested in a compound statement (``except`` clauses and
    ``case`` blocks count as blocks of their statement)."""
    for name in _BLOCKS:
        block = getattr(node, name, None)
        if isinstance(block, list) and block:
            yield block


def _snap(block: list[ast.AST], start: int, end: int, line: int, low: int, high: int) -> tuple[int, int]:
    """``start..end`` widened to ``RADIUS`` lines around ``line`` inside ``low..high``,
    without cutting a statement of ``block``: a statement the bound would cut is left out
    (comment and blank lines between statements are free)."""
    first = min(max(low, line - RADIUS), start)
    last = max(min(high, line + RADIUS), end)
    for node in block:
        span = _span(node)
        if span is None:
            continue
        a, b = span
        if a < first <= b:
            first = b + 1
        if a <= last < b:
            last = a - 1
    return min(first, start), max(last, end)


def _statement_run(body: list[ast.AST], line: int, low: int, high: int) -> tuple[int, int]:
    """A bounded window of whole statements around ``line`` in the block ``body``
    (lines ``low..high``): the largest statement containing the line that has at most
    ``2 * RADIUS + 1`` lines, with the neighbouring statements that fit ``RADIUS`` lines
    either side. A statement longer than that whose own lines (not a nested block) hold
    the line is clipped to ``RADIUS`` lines either side."""
    block = body
    while True:
        found: tuple[ast.AST, int, int] | None = None
        for node in block:
            span = _span(node)
            if span is not None and span[0] <= line <= span[1]:
                found = (node, *span)
                break
        if found is None:  # a comment or blank line between statements
            return _snap(block, line, line, line, low, high)
        node, start, end = found
        if end - start + 1 <= _UNIT:
            return _snap(block, start, end, line, low, high)
        inner = None
        for nested in _blocks(node):
            spans = [s for s in (_span(n) for n in nested) if s is not None]
            if spans and spans[0][0] <= line <= spans[-1][1]:
                inner = (nested, spans[0][0], spans[-1][1])
                break
        if inner is None:
            return max(start, line - RADIUS), min(end, line + RADIUS)
        block, low, high = inner


def failure_spans(source: SourceFile, line: int) -> list[tuple[int, int]]:
    """The failure windows of ``line`` of ``source`` as line ranges, most complete first.

    Inside a function or method: the whole function, decorators included; when it is
    longer than ``2 * RADIUS + 1`` lines, also a bounded run of whole statements around
    the line inside it (:func:`_statement_run`), or the signature when the line is in it,
    so that the failing line survives a budget the whole function does not fit. At module
    level (or in a class body): a bounded run of whole statements around the line. A file
    that does not parse gets ``RADIUS`` lines either side, clipped to the file.
    """
    if source.tree is None:
        return [source.clamp(line - RADIUS, line + RADIUS)]
    function = enclosing_function(source.tree, line)
    if function is None:
        return [_statement_run(list(source.tree.body), line, 1, source.line_count)]
    start, end = node_span(function)
    spans = [(start, end)]
    if end - start + 1 > _UNIT and function.body:
        body_start = _span(function.body[0])
        first = body_start[0] if body_start is not None else function.lineno + 1
        if line < first:
            spans.append((start, first - 1))
        else:
            spans.append(_statement_run(list(function.body), line, first, end))
    return spans


def unit_spans(parsed: ParsedFile, line: int) -> list[tuple[int, int]] | None:
    """The failure windows of ``line`` of a file in a language parsed with tree-sitter
    (JavaScript, TypeScript, Go, Rust, Java), as line ranges, most complete first: the
    whole function (or method, or the ``test("x", () => {...})`` statement of an anonymous
    one) around the line, and when it is longer than ``2 * RADIUS + 1`` lines, also the
    ``RADIUS`` lines either side of the line inside it; ``None`` outside any function."""
    unit = parsed.unit_at(line)
    if unit is None:
        return None
    start, end = unit
    spans = [(start, end)]
    if end - start + 1 > _UNIT:
        spans.append((max(start, line - RADIUS), min(end, line + RADIUS)))
    return spans


def failure_windows(
    repo: Repository, frames: list[ProjectFrame], base_score: float = 0.0, symbols: SymbolIndex | None = None
) -> list[Window]:
    """One or two ``failure`` windows per project frame, in the order of ``frames``
    (:func:`failure_spans`: the whole enclosing function, and a bounded run of whole
    statements inside a long one; a run of whole statements at module level). A file in
    another language the ``symbols`` index parses (JavaScript, TypeScript, Go, Rust, Java)
    gets the whole syntactic unit around the line (:func:`unit_spans`). Score:
    ``base_score + 1 / (1 + distance)``. A window identical to an earlier one is not
    repeated."""
    windows: list[Window] = []
    seen: set[tuple[str, int, int]] = set()
    for pf in frames:
        source = repo.source(pf.path)
        if source is None or source.line_count == 0:
            continue
        score = base_score + 1.0 / (1 + pf.distance)
        spans: list[tuple[int, int]] | None = None
        if source.tree is None and symbols is not None and not pf.path.endswith((".py", ".pyi")):
            parsed = symbols.parsed(pf.path)
            if parsed is not None:
                spans = unit_spans(parsed, pf.line)
        for start, end in spans or failure_spans(source, pf.line):
            window = make_window(source, start, end, "failure", score)
            key = (window.path, window.start, window.end)
            if key not in seen:
                seen.add(key)
                windows.append(window)
    return windows


# --- the code a failing test body calls -----------------------------------------------


def assertion_in_test(failure: TestFailure, frames: Sequence[ProjectFrame]) -> bool:
    """Whether the assertion sits in the test body: the deepest project frame is in a test
    file and the error is an assertion failure (``AssertionError``, pytest's ``Failed``)
    raised there or below it, outside the repository (``unittest``'s ``assertEqual``)."""
    if not frames or not is_test_file(frames[0].path):
        return False
    name = (failure.exception_type or "").rsplit(".", 1)[-1]
    return name in _ASSERTIONS or name.endswith("AssertionError")


@dataclass(frozen=True)
class _Definition:
    path: str
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


# A module as a path stem (``pkg/sub/mod``, no ``.py``), and whether it is an absolute
# import (looked up under the usual source roots) or relative (a path in the repository).
_Module = tuple[str, bool]
_SOURCE_ROOTS = ("", "src/", "lib/", "python/")


class _Resolver:
    """Finds the definitions in the repository that a test file's names refer to, through
    its imports (absolute, relative, ``from m import *`` and re-exports followed)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.files = set(repo.python_files())
        self._files: dict[_Module, str | None] = {}

    def file_of(self, module: _Module) -> str | None:
        if module in self._files:
            return self._files[module]
        stem, absolute = module
        found: str | None = None
        roots = _SOURCE_ROOTS if absolute else ("",)
        for root in roots:
            for candidate in (f"{root}{stem}.py", f"{root}{stem}/__init__.py"):
                if candidate in self.files:
                    found = candidate
                    break
            if found is not None:
                break
        if found is None and absolute:
            tails = (f"/{stem}.py", f"/{stem}/__init__.py")
            matches = sorted((f for f in self.files if f.endswith(tails)), key=lambda f: (f.count("/"), f))
            found = matches[0] if matches else None
        self._files[module] = found
        return found

    @staticmethod
    def imported(path: str, node: ast.ImportFrom) -> _Module:
        """The module a ``from ... import`` in the file ``path`` names."""
        dotted = (node.module or "").replace(".", "/")
        if not node.level:
            return dotted, True
        folder = posixpath.dirname(path)
        for _ in range(node.level - 1):
            folder = posixpath.dirname(folder)
        return posixpath.join(folder, dotted).strip("/") if dotted else folder, False

    def imports(
        self, path: str, nodes: Iterable[ast.AST]
    ) -> tuple[dict[str, _Module], dict[str, tuple[_Module, str]]]:
        """Names bound by the imports among ``nodes`` of the file ``path``: modules
        (``import a.b as m``), and ``(module, name)`` for ``from module import name``."""
        modules: dict[str, _Module] = {}
        members: dict[str, tuple[_Module, str]] = {}
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        modules[alias.asname] = (alias.name.replace(".", "/"), True)
                    else:
                        top = alias.name.split(".", 1)[0]
                        modules[top] = (top, True)
            elif isinstance(node, ast.ImportFrom):
                module = self.imported(path, node)
                for alias in node.names:
                    if alias.name != "*":
                        members[alias.asname or alias.name] = (module, alias.name)
        return modules, members

    def member(self, module: _Module, name: str, depth: int = 0) -> _Definition | _Module | None:
        """What ``name`` is in ``module``: a definition there, a submodule, or what it
        imports under that name (followed up to a few re-exports)."""
        path = self.file_of(module)
        if path is None or depth > 4:
            return None
        source = self.repo.source(path)
        tree = source.tree if source is not None else None
        stars: list[_Module] = []
        if tree is not None:
            for stmt in _top_level(tree.body):
                if isinstance(stmt, _DEFINITIONS) and stmt.name == name:
                    return _Definition(path, stmt)
            for stmt in _top_level(tree.body):
                if isinstance(stmt, ast.ImportFrom):
                    target = self.imported(path, stmt)
                    for alias in stmt.names:
                        if alias.name == "*":
                            stars.append(target)
                        elif (alias.asname or alias.name) == name:
                            return self.member(target, alias.name, depth + 1)
                elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name):
                    if any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                        if stmt.value.id != name:
                            return self.member(module, stmt.value.id, depth + 1)
        if path.endswith("__init__.py"):
            sub: _Module = (f"{posixpath.dirname(path)}/{name}", False)
            if self.file_of(sub) is not None:
                return sub
        for star in stars:
            found = self.member(star, name, depth + 1)
            if found is not None:
                return found
        return None

    def attribute(self, target: _Definition | _Module, name: str) -> _Definition | _Module | None:
        if isinstance(target, tuple):
            return self.member(target, name)
        if isinstance(target.node, ast.ClassDef):
            for stmt in _top_level(target.node.body):
                if isinstance(stmt, _DEFINITIONS) and stmt.name == name:
                    return _Definition(target.path, stmt)
        return None


def _dotted_call(func: ast.expr) -> tuple[str, list[str]] | None:
    """``(base name, attributes)`` of a called ``name.attr.attr`` expression."""
    attrs: list[str] = []
    while isinstance(func, ast.Attribute):
        attrs.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    return func.id, attrs[::-1]


def _statement_at(scope: ast.AST, line: int) -> ast.stmt | None:
    best: ast.stmt | None = None
    best_size = 0
    for node in ast.walk(scope):
        if isinstance(node, ast.stmt):
            start, end = node_span(node)
            if start <= line <= end and (best is None or end - start <= best_size):
                best, best_size = node, end - start
    return best


def _header(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``stmt`` outside its nested statement blocks."""
    for child in ast.iter_child_nodes(stmt):
        if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield from ast.walk(child)


def _bindings(function: ast.AST, line: int) -> dict[str, list[ast.AST]]:
    """The values assigned to each local name in ``function`` at or before ``line``."""
    values: dict[str, list[ast.AST]] = {}
    for node in ast.walk(function):
        if getattr(node, "lineno", line) > line:
            continue
        targets: list[ast.expr] = []
        value: ast.AST | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets, value = [node.target], node.value
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            targets, value = [node.target], node.iter
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets, value = [node.optional_vars], node.context_expr
        if value is None:
            continue
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    values.setdefault(name.id, []).append(value)
    return values


def _calls(nodes: Iterable[ast.AST]) -> Iterator[ast.Call]:
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                yield inner


def called_code_windows(
    repo: Repository,
    failure: TestFailure,
    frames: Sequence[ProjectFrame],
    base_score: float = 0.0,
    *,
    limit: int = MAX_CALLED,
) -> list[Window]:
    """``reference`` windows for the code under test that a failing test body calls, when
    the assertion sits in the test body (:func:`assertion_in_test`); else none.

    The calls of the failing test function are resolved through the test file's imports
    to definitions in non-test files of the repository: the calls on the failing line
    weigh 1.0, the calls that computed the local variables read there and the rest of the
    failing statement 0.75, the test's other calls up to the failing line 0.5. Each of at
    most ``limit`` definitions (heaviest first, then in call order) is one window, the
    whole function or class (a class of more than ``2 * RADIUS + 1`` lines: its first
    ``2 * RADIUS + 1`` lines and its ``__init__``), scored ``base_score + weight``.
    """
    if not assertion_in_test(failure, frames):
        return []
    deepest = frames[0]
    source = repo.source(deepest.path)
    if source is None or source.tree is None:
        return []
    function = enclosing_function(source.tree, deepest.line)
    if function is None:
        return []
    stmt = _statement_at(function, deepest.line)
    if stmt is None or stmt is function:
        return []
    resolver = _Resolver(repo)
    modules, members = resolver.imports(deepest.path, [*_top_level(source.tree.body), *ast.walk(function)])
    local_defs = {n.name for n in ast.walk(source.tree) if isinstance(n, _DEFINITIONS)}
    bindings = _bindings(function, deepest.line)
    weighted = _weighted_calls(stmt, function, bindings)

    best: dict[tuple[str, int], tuple[float, int, _Definition]] = {}
    for order, (weight, call) in enumerate(weighted):
        definition = _resolve_call(call, resolver, modules, members, bindings, local_defs)
        if definition is None or is_test_file(definition.path):
            continue
        where = (definition.path, definition.node.lineno)
        known = best.get(where)
        if known is None or weight > known[0]:
            best[where] = (weight, known[1] if known is not None else order, definition)
    chosen = sorted(best.values(), key=lambda item: (-item[0], item[1]))[:limit]

    return _definition_windows(repo, chosen, base_score)


def _weighted_calls(
    stmt: ast.stmt, function: ast.FunctionDef | ast.AsyncFunctionDef, bindings: dict[str, list[ast.AST]]
) -> list[tuple[float, ast.Call]]:
    """The calls of the failing test function with their weights (:func:`called_code_windows`):
    on the failing statement's header 1.0, in the flow into it 0.75, up to its end 0.5."""
    _, stmt_end = node_span(stmt)
    weighted: list[tuple[float, ast.Call]] = []
    header = list(_header(stmt))
    weighted.extend((1.0, call) for call in _calls(header))
    flow: list[ast.AST] = [stmt]
    for node in header:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            flow.extend(bindings.get(node.id, []))
    weighted.extend((0.75, call) for call in _calls(flow))
    weighted.extend(
        (0.5, call) for call in _calls(list(function.body)) if getattr(call, "lineno", 0) <= stmt_end
    )
    return weighted


def _resolve_call(
    call: ast.Call,
    resolver: _Resolver,
    modules: dict[str, _Module],
    members: dict[str, tuple[_Module, str]],
    bindings: dict[str, list[ast.AST]],
    local_defs: set[str],
    depth: int = 0,
) -> _Definition | None:
    """The definition ``call`` calls, through the test file's imports (``modules``,
    ``members``) and, for ``obj.method(...)`` after ``obj = Class(...)``, the class's method."""
    dotted = _dotted_call(call.func)
    if dotted is None:
        return None
    base, attrs = dotted
    target: _Definition | _Module | None = None
    if base in members:
        target = resolver.member(*members[base])
    elif base in modules:
        target = modules[base]
    elif base in bindings and base not in local_defs and depth < 3:
        # `obj = Class(...)` then `obj.method(...)`: the class's method.
        for value in bindings[base]:
            if isinstance(value, ast.Call) and value is not call:
                made = _resolve_call(value, resolver, modules, members, bindings, local_defs, depth + 1)
                if made is not None and isinstance(made.node, ast.ClassDef):
                    target = made
                    break
    for attr in attrs:
        if target is None:
            return None
        target = resolver.attribute(target, attr)
    return target if isinstance(target, _Definition) else None


def _definition_windows(
    repo: Repository, chosen: Sequence[tuple[float, int, _Definition]], base_score: float
) -> list[Window]:
    """One ``reference`` window per chosen definition (a long class: its first lines and its
    ``__init__``), scored ``base_score + weight``, each once."""
    windows: list[Window] = []
    seen: set[tuple[str, int, int]] = set()
    for weight, _, definition in chosen:
        code = repo.source(definition.path)
        if code is None or code.line_count == 0:
            continue
        start, end = node_span(definition.node)
        spans = [(start, end)]
        if isinstance(definition.node, ast.ClassDef) and end - start + 1 > _UNIT:
            spans = [(start, start + _UNIT - 1)]
            init = next(
                (n for n in definition.node.body if isinstance(n, _FUNCTIONS) and n.name == "__init__"), None
            )
            if init is not None:
                spans.append(node_span(init))
        for a, b in spans:
            window = make_window(code, a, b, "reference", base_score + weight)
            key = (window.path, window.start, window.end)
            if key not in seen:
                seen.add(key)
                windows.append(window)
    return windows


def merge_windows(*groups: Sequence[Window]) -> list[Window]:
    """The windows of ``groups`` best first (by score, stably), a window of the same path
    and lines as an earlier one kept once, with the higher score."""
    best: dict[tuple[str, int, int], Window] = {}
    for group in groups:
        for window in group:
            key = (window.path, window.start, window.end)
            known = best.get(key)
            if known is None or window.score > known.score:
                best[key] = window
    return sorted(best.values(), key=lambda window: -window.score)
