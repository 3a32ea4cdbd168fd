"""Reference windows: where the names used on the failing lines are defined.

For each project frame, the names read on its line are taken from the syntax tree: the
``Name`` and ``Attribute`` nodes of the innermost statement around the line (for a
compound statement such as ``if``/``for``/``with``, its header only). A name that is a
local variable of the enclosing function is not looked up itself; the names read by the
assignments that bind it in that function are, at half weight (one step of data flow, so
``actual = f(x)`` followed by a failing ``assert actual == ...`` leads to ``f``). From the
deepest frame's line the search goes one step down the call graph: the names read inside
the functions used there are looked up too, at a quarter of their weight.

Definitions are found with ``ast`` over every ``.py`` file of the repository: functions
and methods (any depth), classes, and assignments at module or class level (inside
``if``/``try``/``with`` blocks too).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from .failure import ProjectFrame
from .files import Repository, SourceFile, enclosing_function, node_span
from .window import RADIUS, Window, make_window

__all__ = [
    "CALLEE_WEIGHT",
    "MAX_DEFINITIONS",
    "Definition",
    "DefinitionIndex",
    "names_in_function",
    "names_on_line",
    "reference_windows",
]

#: Names with more definitions than this in the repository (``get``, ``run``, a method
#: every subclass overrides) are too ambiguous to follow.
MAX_DEFINITIONS = 8

#: Weight of a name read inside a function that is called on a deepest frame's line.
CALLEE_WEIGHT = 0.25

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign)


@dataclass(frozen=True)
class Definition:
    """``name`` is defined at lines ``start..end`` of ``path``; ``kind`` is ``"function"``,
    ``"class"`` or ``"assignment"``."""

    name: str
    path: str
    start: int
    end: int
    kind: str
    node: ast.stmt = field(compare=False, repr=False)


class DefinitionIndex:
    """Every definition of the repository by name, built once from its ``.py`` files."""

    def __init__(self, repo: Repository) -> None:
        self._by_name: dict[str, list[Definition]] = {}
        for source in repo.python_sources():
            if source.tree is not None:
                for definition in _definitions(source.path, source.tree.body, "module"):
                    self._by_name.setdefault(definition.name, []).append(definition)

    def lookup(self, name: str) -> list[Definition]:
        """The definitions of ``name``, in path and line order (empty if none)."""
        return self._by_name.get(name, [])


def _definitions(path: str, body: Iterable[ast.stmt], level: str) -> Iterator[Definition]:
    """Definitions in a statement list; ``level`` is ``module``, ``class`` or ``function``."""
    for stmt in body:
        start, end = node_span(stmt)
        if isinstance(stmt, _FUNCTIONS):
            yield Definition(stmt.name, path, start, end, "function", stmt)
            yield from _definitions(path, stmt.body, "function")
        elif isinstance(stmt, ast.ClassDef):
            yield Definition(stmt.name, path, start, end, "class", stmt)
            yield from _definitions(path, stmt.body, "class")
        elif isinstance(stmt, _ASSIGNMENTS):
            if level != "function":
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in _bound_names(target):
                        yield Definition(name, path, start, end, "assignment", stmt)
        else:
            for block_name in ("body", "orelse", "finalbody", "handlers", "cases"):
                block = getattr(stmt, block_name, None)
                if isinstance(block, list):
                    for item in block:
                        if isinstance(item, (ast.ExceptHandler, ast.match_case)):
                            yield from _definitions(path, item.body, level)
                        elif isinstance(item, ast.stmt):
                            yield from _definitions(path, [item], level)


def _bound_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _statement_at(scope: ast.AST, line: int) -> ast.stmt | None:
    """The innermost statement of ``scope`` whose span contains ``line``."""
    best: ast.stmt | None = None
    best_size = 0
    for node in ast.walk(scope):
        if isinstance(node, ast.stmt):
            start, end = node_span(node)
            if start <= line <= end and (best is None or end - start <= best_size):
                best, best_size = node, end - start
    return best


def _header_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``stmt`` outside its nested statement blocks."""
    for child in ast.iter_child_nodes(stmt):
        if not isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield from ast.walk(child)


def _locals(scope: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names bound in a function: parameters, assignment and loop targets, lambda and
    comprehension variables (imports and ``global``/``nonlocal`` names are not locals)."""
    names: set[str] = set()
    declared: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
    return names - declared


def _reads(nodes: Iterable[ast.AST]) -> Iterator[tuple[str, bool]]:
    """``(name, is_plain_name)`` for every name read among ``nodes``."""
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id, True
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            yield node.attr, False


def _binding_values(scope: ast.FunctionDef | ast.AsyncFunctionDef, name: str, line: int) -> Iterator[ast.AST]:
    """The expressions assigned to local ``name`` in ``scope`` at or before ``line``."""
    for node in ast.walk(scope):
        if getattr(node, "lineno", line) > line:  # nodes without a line: keep
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
        if value is not None and any(name in set(_bound_names(t)) for t in targets):
            yield value


def names_on_line(source: SourceFile, line: int) -> dict[str, float]:
    """The names read on ``line`` of ``source`` with a weight: 1.0 for names read on the
    line, 0.5 for names read by the assignments of a local variable read on the line.

    Local variables themselves, ``self``/``cls`` among them, and dunder names are left
    out. Empty if the file does not parse.
    """
    if source.tree is None:
        return {}
    function = enclosing_function(source.tree, line)
    scope: ast.AST = function if function is not None else source.tree
    stmt = _statement_at(scope, line)
    if stmt is None:
        return {}
    local_names = _locals(function) if function is not None else set()
    weights: dict[str, float] = {}

    def add(name: str, weight: float) -> None:
        if not (name.startswith("__") and name.endswith("__")):
            weights[name] = max(weights.get(name, 0.0), weight)

    for name, plain in _reads(_header_nodes(stmt)):
        if plain and name in local_names:
            if function is None:
                continue
            for value in _binding_values(function, name, line):
                for inner, inner_plain in _reads(ast.walk(value)):
                    if not (inner_plain and inner in local_names):
                        add(inner, 0.5)
        else:
            add(name, 1.0)
    return weights


def names_in_function(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The non-local names read in a function's body (its callees and globals, and the
    attributes it reads), dunder names left out."""
    local_names = _locals(function)
    body = (node for stmt in function.body for node in ast.walk(stmt))
    return {
        name
        for name, plain in _reads(body)
        if not (plain and name in local_names) and not (name.startswith("__") and name.endswith("__"))
    }


def reference_windows(
    repo: Repository,
    frames: list[ProjectFrame],
    index: DefinitionIndex,
    base_score: float = 0.0,
) -> list[Window]:
    """``reference`` windows for the names used on the lines of ``frames``.

    A name's weight is its :func:`names_on_line` weight divided by ``1 + distance`` of the
    nearest frame using it. The names read in the body of a function used on a deepest
    frame's line (distance 0) are followed too, with ``CALLEE_WEIGHT`` times that name's
    weight divided by ``n``, the number of definitions of the called name. A definition scores
    ``base_score + weight / n``, ``n`` being the name's number of definitions (names with
    more than ``MAX_DEFINITIONS`` are skipped). The window is the whole definition; a
    definition longer than ``2 * RADIUS + 1`` lines also gets a bounded window of its first
    ``2 * RADIUS + 1`` lines (signature, docstring, class attributes). Windows come best-first; a window
    identical to an earlier one is not repeated.
    """
    weights: dict[str, float] = {}

    def add(name: str, weight: float) -> None:
        weights[name] = max(weights.get(name, 0.0), weight)

    deepest: dict[str, float] = {}
    for pf in frames:
        source = repo.source(pf.path)
        if source is None:
            continue
        for name, weight in names_on_line(source, pf.line).items():
            add(name, weight / (1 + pf.distance))
            if pf.distance == 0:
                deepest[name] = max(deepest.get(name, 0.0), weight)
    # One step down the call graph from the deepest lines: what the functions called
    # there call (the bug behind a failed assertion is often a callee of the call).
    for name in sorted(deepest):
        definitions = index.lookup(name)
        if len(definitions) > MAX_DEFINITIONS:
            continue
        for definition in definitions:
            if isinstance(definition.node, _FUNCTIONS):
                for callee in names_in_function(definition.node):
                    add(callee, CALLEE_WEIGHT * deepest[name] / len(definitions))

    scored: list[tuple[float, int, Definition]] = []
    order = 0
    for name, weight in weights.items():
        definitions = index.lookup(name)
        if not definitions or len(definitions) > MAX_DEFINITIONS:
            continue
        for definition in definitions:
            scored.append((weight / len(definitions), order, definition))
            order += 1
    scored.sort(key=lambda item: (-item[0], item[1]))

    windows: list[Window] = []
    seen: set[tuple[str, int, int]] = set()
    for weight, _, definition in scored:
        source = repo.source(definition.path)
        if source is None:
            continue
        spans = [(definition.start, definition.end)]
        if definition.end - definition.start + 1 > 2 * RADIUS + 1:
            spans.append((definition.start, definition.start + 2 * RADIUS))
        for start, end in spans:
            window = make_window(source, start, end, "reference", base_score + weight)
            key = (window.path, window.start, window.end)
            if key not in seen:
                seen.add(key)
                windows.append(window)
    return windows
