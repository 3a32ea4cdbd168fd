"""Definitions, references and imports of a repository's source files, with tree-sitter.

Languages: Python, JavaScript, TypeScript (and TSX), Go, Rust and Java (see
:mod:`.languages`). Every file is read through :class:`~.files.Repository` and parsed at
most once per :class:`SymbolIndex`; a file is parsed only when a name the analysis looks
for occurs in its text (each file's words are collected once), so a query touches a
fraction of a large repository.

* A :class:`Definition` is a named function or method, class, type (interface, enum,
  struct, trait, alias) or module-, class- or package-level variable or constant, with the
  lines of its whole syntactic unit: decorators, annotations and attributes included,
  trailing comments not.
* A :class:`Reference` is an identifier *read* at a line: called, used as a name, as an
  attribute (``obj.name``) or as a type. Declared names, assignment targets, parameters,
  keyword-argument names, object keys and import statements are not reads.
* An :class:`Import` is one name an import statement binds, resolved to repository files
  by :meth:`SymbolIndex.resolve_import` (Python modules and packages, relative
  JavaScript/TypeScript specifiers, Go packages under ``go.mod``'s module path, Rust
  ``crate``/``self``/``super`` paths and ``mod`` items, Java classes and packages).

Line numbers are 1-based; the lines are those of :class:`~.files.SourceFile`.
"""

from __future__ import annotations

import builtins
import functools
import posixpath
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from bugcontext.core._extras import needs
from bugcontext.job._deadline import check as check_deadline

with needs("context"):
    from tree_sitter import Node, Query, QueryCursor, Tree

from bugcontext.job.sources.files import Repository, SourceFile
from bugcontext.job.sources.languages import SUFFIXES, LanguageSpec, Loaded, language_for, load

__all__ = [
    "IMPORT_DEPTH",
    "MAX_DEFINITIONS",
    "CallSite",
    "Definition",
    "FileSummary",
    "Import",
    "ParsedFile",
    "Reference",
    "SymbolIndex",
    "source_paths",
]

#: How many imports deep the import graph of a file is followed.
IMPORT_DEPTH = 3

#: A name with more definitions than this that no import or scope narrows down (``get``,
#: ``run``, a method every subclass overrides) is too ambiguous to follow.
MAX_DEFINITIONS = 8

Kind = Literal["function", "class", "type", "variable"]
RefKind = Literal["call", "name", "attribute", "type"]

_KINDS: dict[str, Kind] = {
    "definition.function": "function",
    "definition.class": "class",
    "definition.type": "type",
    "definition.variable": "variable",
}
_DOTTED_WORD = re.compile(r"(\.?)([A-Za-z_$][\w$]*)")
_MEMBER_ASSIGNED = re.compile(r"\.\s*([A-Za-z_$][\w$]*)\s*=(?![=>])")
_LONE_CR = re.compile(r"\r(?!\n)")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")
_SIMPLE_OBJECTS = frozenset(
    {
        "identifier",
        "this",
        "self",
        "super",
        "crate",
        "package_identifier",
        "type_identifier",
        "attribute",
        "member_expression",
        "selector_expression",
        "field_access",
        "scoped_identifier",
        "field_expression",
    }
)
_JS_GLOBALS = frozenset(
    "Array Boolean Date Error JSON Map Math Number Object Promise Reflect RegExp Set String Symbol"
    " TypeError console document module exports require window globalThis process undefined"
    " parseInt parseFloat isNaN setTimeout clearTimeout describe it test expect".split()
)
# Names every file of a language can use without defining or importing them; never looked
# up across the repository.
_GLOBALS: dict[str, frozenset[str]] = {
    "python": frozenset([*dir(builtins), "self", "cls"]),
    "javascript": _JS_GLOBALS,
    "typescript": _JS_GLOBALS,
    "tsx": _JS_GLOBALS,
    "go": frozenset(
        "append cap close complex copy delete imag len make new panic print println real recover"
        " bool byte error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16"
        " uint32 uint64 uintptr any nil true false iota".split()
    ),
    "rust": frozenset(
        "Some None Ok Err Option Result Vec String Box Self self println print eprintln format"
        " vec assert assert_eq assert_ne panic unreachable todo write writeln Default Clone".split()
    ),
    "java": frozenset(
        "String Object Integer Long Double Float Boolean Character Byte Short Math System"
        " Exception RuntimeException List Map Set ArrayList HashMap HashSet Arrays Collections"
        " Override".split()
    ),
}
_JS_MEMBERS = frozenset(
    "push pop shift unshift slice splice concat join map filter reduce forEach find findIndex"
    " includes indexOf keys values entries length toString valueOf then catch finally apply call"
    " bind hasOwnProperty split replace trim toLowerCase toUpperCase startsWith endsWith match"
    " test exec get set has delete add clear size log error warn".split()
)
# Members of the standard library's everyday types (``s.split()``, ``xs.append()``): a member
# access on an object of unknown type with one of these names is not looked up across the
# repository.
_MEMBER_GLOBALS: dict[str, frozenset[str]] = {
    "python": frozenset(
        name
        for kind in (str, bytes, list, dict, set, int, float, tuple, object)
        for name in dir(kind)
        if not name.startswith("_")
    ),
    "javascript": _JS_MEMBERS,
    "typescript": _JS_MEMBERS,
    "tsx": _JS_MEMBERS,
    "go": frozenset("Error String Len Close Write Read".split()),
    "rust": frozenset(
        "iter into_iter map filter collect unwrap expect clone into as_ref as_str len push pop get"
        " insert remove is_some is_none is_ok is_err ok err to_string to_owned contains"
        " and_then unwrap_or unwrap_or_else".split()
    ),
    "java": frozenset(
        "equals hashCode toString get set add put remove size isEmpty contains length charAt"
        " substring stream map filter collect forEach append".split()
    ),
}
_JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


@dataclass(frozen=True)
class Definition:
    """``name`` is defined at lines ``start..end`` of ``path``.

    ``kind`` is ``"function"`` (functions and methods), ``"class"``, ``"type"`` or
    ``"variable"``; ``container`` names the class, struct, trait or interface the
    definition is a member of (``None`` at module level); ``scope`` is the lines of the
    function the definition is local to (``None`` if it is visible outside any function).
    """

    name: str
    path: str
    start: int
    end: int
    kind: Kind
    container: str | None = None
    scope: tuple[int, int] | None = None


@dataclass(frozen=True)
class Reference:
    """``name`` is read at ``line``: ``kind`` is ``"call"``, ``"name"``, ``"attribute"``
    (``obj.name``) or ``"type"``; ``member`` tells that it is the member of an access or
    path (``obj.name``, ``obj.name()``, ``Type::name``); ``qualifier`` is then the text of
    the object when it is a name or a chain of names (``mod`` in ``mod.f()``,
    ``self.items`` in ``self.items.add()``), else ``None``."""

    name: str
    line: int
    kind: RefKind
    qualifier: str | None = None
    member: bool = False


@dataclass(frozen=True)
class CallSite:
    """A call of a name in the file ``path`` (:meth:`SymbolIndex.call_sites`): the
    ``reference`` (its ``kind`` is ``"call"``), ``unit`` the lines of the function around it
    (:meth:`ParsedFile.unit_at`; ``None`` outside any) and ``line_count`` the file's lines. It
    needs no syntax tree to be used, so a workspace keeps it per content hash."""

    path: str
    reference: Reference
    unit: tuple[int, int] | None
    line_count: int


@dataclass(frozen=True)
class Import:
    """One name bound by an import statement at ``line``.

    ``module`` is the module as written (``pkg.mod``, ``..mod``, ``./calc``,
    ``example.com/m/util``, ``crate::util``, ``com.example.Util``); ``name`` the imported
    name within it, or ``None`` when the module itself is bound; ``local`` the name bound in
    the file (``"*"`` for a wildcard import, ``""`` for an import that binds nothing).
    """

    line: int
    module: str
    name: str | None
    local: str


def source_paths(repo: Repository) -> list[str]:
    """Repository-relative paths of every file in an analysed language, sorted (the
    repository's listing rules apply: skipped and ignored folders, links)."""
    return repo.files(sorted(SUFFIXES))


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _same(a: Node | None, b: Node) -> bool:
    return a is not None and a.start_byte == b.start_byte and a.end_byte == b.end_byte and a.type == b.type


def _contains(outer: Node, inner: Node) -> bool:
    return outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte


class ParsedFile:
    """One source file parsed with tree-sitter: its definitions and imports, and the
    references, locals and statements at any line."""

    def __init__(self, source: SourceFile, loaded: Loaded) -> None:
        self.source = source
        self.path = source.path
        self.spec: LanguageSpec = loaded.spec
        self._loaded = loaded
        text = "".join(source.lines)
        # tree-sitter counts rows at "\n" only; a lone "\r" also ends a line here.
        data = _LONE_CR.sub("\n", text).encode("utf-8", "replace")
        self.tree: Tree = loaded.parser.parse(data)
        self.definitions: tuple[Definition, ...] = tuple(self._find_definitions())
        self._by_name: dict[str, list[Definition]] = {}
        for definition in self.definitions:
            self._by_name.setdefault(definition.name, []).append(definition)
        self._imports: tuple[Import, ...] | None = None
        self._named: dict[str, list[Node]] = {}
        # Node id -> whether an ignored node lies between it and its nearest container
        # (the tree is never changed: the answers hold for the file's lifetime).
        self._in_ignored: dict[int, bool] = {}

    # -- definitions -------------------------------------------------------------------

    def defined(self, name: str) -> list[Definition]:
        """The definitions of ``name`` in this file, in line order."""
        return self._by_name.get(name, [])

    def _find_definitions(self) -> Iterator[Definition]:
        seen: set[tuple[str, int, int]] = set()
        cursor = QueryCursor(self._loaded.definitions)
        found: list[tuple[int, Definition]] = []
        for _, captures in cursor.matches(self.tree.root_node):
            for capture, nodes in captures.items():
                kind = _KINDS.get(capture)
                if kind is None:
                    continue
                node = nodes[0]
                if "name" in captures:
                    names = [captures["name"][0]]
                else:
                    names = list(self._pattern_leaves(captures["pattern"][0]))
                for definition in self._definition(node, kind, names):
                    key = (definition.name, definition.start, definition.end)
                    if key not in seen:
                        seen.add(key)
                        found.append((node.start_byte, definition))
        found.sort(key=lambda item: (item[1].start, item[0], item[1].end))
        for _, definition in found:
            yield definition

    def _definition(self, node: Node, kind: Kind, names: list[Node]) -> Iterator[Definition]:
        lang = self.spec.name
        unit = node
        if lang == "python":
            if kind == "variable":
                while unit.parent is not None and unit.parent.type in ("assignment", "expression_statement"):
                    unit = unit.parent
                if self._scope_kind(unit) == "function":
                    return
            elif unit.parent is not None and unit.parent.type == "decorated_definition":
                unit = unit.parent
        elif lang in ("javascript", "typescript", "tsx"):
            if node.type == "variable_declarator":
                unit = node.parent if node.parent is not None else node
                if self._scope_kind(unit) == "function":
                    return
                value = node.child_by_field_name("value")
                if value is not None and value.type in (
                    "arrow_function",
                    "function_expression",
                    "function",
                    "generator_function",
                ):
                    kind = "function"
                elif value is not None and value.type == "class":
                    kind = "class"
            elif node.type == "assignment_expression":
                if node.parent is None or node.parent.type != "expression_statement":
                    return
                unit = node.parent
                if self._scope_kind(unit) == "function":
                    return
            if unit.parent is not None and unit.parent.type == "export_statement":
                unit = unit.parent
        elif lang == "go":
            if node.type in ("const_spec", "var_spec", "type_spec", "type_alias"):
                declaration = node.parent
                if declaration is not None and declaration.type.endswith("_spec_list"):
                    declaration = declaration.parent
                if node.type in ("const_spec", "var_spec") and self._scope_kind(node) == "function":
                    return
                if declaration is not None and declaration.named_child_count == 1:
                    unit = declaration
                if node.type == "type_spec":
                    body = node.child_by_field_name("type")
                    if body is not None and body.type == "struct_type":
                        kind = "class"
        if lang == "rust":
            start = node
            sibling = node.prev_named_sibling
            while sibling is not None and sibling.type == "attribute_item":
                start = sibling
                sibling = sibling.prev_named_sibling
            first = start.start_point[0] + 1
        else:
            first = unit.start_point[0] + 1
        last = self._last_line(unit)
        container = self._container(node)
        scope = self._local_scope(unit)
        for name in names:
            text = _text(name)
            if text:
                yield Definition(text, self.path, first, last, kind, container, scope)

    def _local_scope(self, node: Node) -> tuple[int, int] | None:
        parent = node.parent
        while parent is not None and parent.type not in self.spec.functions:
            parent = parent.parent
        if parent is None:
            return None
        return parent.start_point[0] + 1, self._last_line(parent)

    def _scope_kind(self, node: Node) -> str:
        """``"function"``, ``"class"`` or ``"module"``: the innermost scope around ``node``."""
        parent = node.parent
        while parent is not None:
            if parent.type in self.spec.functions:
                return "function"
            if parent.type in self.spec.classes:
                return "class"
            parent = parent.parent
        return "module"

    def _container(self, node: Node) -> str | None:
        """The name of the class (struct, trait, impl, interface) ``node`` is a member of."""
        if node.type == "method_declaration" and self.spec.name == "go":
            receiver = node.child_by_field_name("receiver")
            if receiver is not None:
                for leaf in _descendants(receiver):
                    if leaf.type == "type_identifier":
                        return _text(leaf)
            return None
        parent = node.parent
        while parent is not None:
            if parent.type in self.spec.functions:
                return None
            if parent.type in self.spec.classes:
                name = parent.child_by_field_name("name") or parent.child_by_field_name("type")
                if name is not None and name.type == "generic_type":
                    name = name.child_by_field_name("type")
                return _text(name) or None
            parent = parent.parent
        return None

    def _last_line(self, node: Node) -> int:
        """The line of the last token of ``node`` that is not a comment."""
        comments = self.spec.comments
        current = node
        while current.child_count:
            children = current.children
            index = len(children) - 1
            while index >= 0 and (
                children[index].type in comments or children[index].end_byte == children[index].start_byte
            ):
                index -= 1
            if index < 0:
                break
            current = children[index]
        row, column = current.end_point
        if column == 0 and row > current.start_point[0]:
            row -= 1
        return max(row, node.start_point[0]) + 1

    # -- patterns, locals and reads ----------------------------------------------------

    def _pattern_leaves(self, node: Node) -> Iterator[Node]:
        """The identifiers a binding pattern binds (``a, (b, *c)`` binds three)."""
        spec = self.spec
        if node.type in spec.binding_leaves:
            yield node
            return
        if node.type not in spec.patterns:
            return
        follow = spec.patterns[node.type]
        if follow is None:
            for index, child in enumerate(node.children):
                if child.is_named and node.field_name_for_child(index) is None:
                    yield from self._pattern_leaves(child)
        else:
            for name in follow:
                for child in node.children_by_field_name(name):
                    yield from self._pattern_leaves(child)

    def _pattern_stores(self, node: Node) -> Iterator[Node]:
        """The member names a binding pattern assigns (``self.x`` in ``self.x = 1``)."""
        spec = self.spec
        if node.type in spec.members:
            member = node.child_by_field_name(spec.members[node.type][1])
            if member is not None:
                yield member
            return
        if node.type in spec.patterns:
            for child in node.named_children:
                yield from self._pattern_stores(child)

    def _bindings(self, node: Node) -> tuple[set[int], list[tuple[Node, Node | None, set[str]]], set[str]]:
        """Inside ``node``: the start bytes of the identifiers that are bound or stored (not
        read), every binding construct as ``(construct, value, names bound)``, and the
        names of the parameters."""
        bound: set[int] = set()
        binders: list[tuple[Node, Node | None, set[str]]] = []
        parameters: set[str] = set()
        cursor = QueryCursor(self._loaded.binders)
        cursor.set_byte_range(node.start_byte, node.end_byte)
        for _, captures in cursor.matches(node):
            pattern = captures["pattern"][0]
            leaves = list(self._pattern_leaves(pattern))
            bound.update(leaf.start_byte for leaf in leaves)
            bound.update(member.start_byte for member in self._pattern_stores(pattern))
            if "binder" in captures:
                binder = captures["binder"][0]
                value_field = self.spec.binders[binder.type][1]
                value = binder.child_by_field_name(value_field) if value_field else binder.named_child(0)
                if value is not None and _same(value, pattern):
                    value = None
                binders.append((binder, value, {_text(leaf) for leaf in leaves}))
            else:
                parameters.update(_text(leaf) for leaf in leaves)
        return bound, binders, parameters

    def locals_of(self, function: Node) -> set[str]:
        """Names bound anywhere inside ``function`` (parameters, assignment and loop
        targets, ...), less names declared ``global``/``nonlocal``."""
        _, binders, names = self._bindings(function)
        for _, _, bound_names in binders:
            names |= bound_names
        if self._loaded.globals is not None:
            declared = QueryCursor(self._loaded.globals)
            declared.set_byte_range(function.start_byte, function.end_byte)
            for node in declared.captures(function).get("global", []):
                names.discard(_text(node))
        return names

    def _identifiers(self, node: Node) -> list[Node]:
        cursor = QueryCursor(self._loaded.identifiers)
        cursor.set_byte_range(node.start_byte, node.end_byte)
        found = cursor.captures(node).get("id", [])
        return sorted(found, key=lambda n: n.start_byte)

    def identifiers_named(self, name: str) -> list[Node]:
        """Every identifier of the file spelled ``name``, in source order."""
        if not _NAME.fullmatch(name):
            return []
        found = self._named.get(name)
        if found is None:
            query = _named_query(self.spec.name, name)
            if query is None:
                return []
            found = QueryCursor(query).captures(self.tree.root_node).get("id", [])
            found = self._named[name] = sorted(found, key=lambda n: n.start_byte)
        return list(found)

    def _ignored_above(self, node: Node) -> bool:
        """Whether ``node`` or one of its ancestors below the nearest container (a function,
        a class, the module) is of an ignored type. Each node's answer is kept: the walks of
        the identifiers of one tree together read each ancestor once (a tree-sitter parent
        costs the depth of the node, so walking every identifier's ancestors would cost the
        cube of the depth in a deeply nested expression)."""
        spec = self.spec
        known = self._in_ignored
        walked: list[int] = []
        answer = False
        ancestor: Node | None = node
        while ancestor is not None:
            kept = known.get(ancestor.id)
            if kept is not None:
                answer = kept
                break
            walked.append(ancestor.id)
            if ancestor.type in spec.containers:
                break
            if ancestor.type in spec.ignored:
                answer = True
                break
            ancestor = ancestor.parent
        for id_ in walked:
            known[id_] = answer
        return answer

    def _classify(self, node: Node, bound: set[int]) -> Reference | None:
        """``node`` (an identifier) as a :class:`Reference`, or ``None`` if it is not a read."""
        spec = self.spec
        if node.start_byte in bound:
            return None
        parent = node.parent
        if parent is None:
            return None
        fields = spec.declared.get(parent.type)
        if fields is not None and any(
            _same(c, node) for f in fields for c in parent.children_by_field_name(f)
        ):
            return None
        if self._ignored_above(parent):
            return None
        name = _text(node)
        kind: RefKind = "type" if node.type == "type_identifier" else "name"
        qualifier: str | None = None
        member = False
        callee_holder = node
        member_fields = spec.members.get(parent.type)
        obj = parent.child_by_field_name(member_fields[0]) if member_fields is not None else None
        if (
            member_fields is not None
            and obj is not None
            and _same(parent.child_by_field_name(member_fields[1]), node)
        ):
            kind = "attribute"
            member = True
            if obj is not None and obj.type in _SIMPLE_OBJECTS and obj.end_byte - obj.start_byte <= 200:
                qualifier = re.sub(r"\s+", "", _text(obj))
            callee_holder = parent
        holder = callee_holder.parent if callee_holder is not node else parent
        for candidate in (parent, holder):
            if candidate is None:
                continue
            callee_field = spec.calls.get(candidate.type)
            if callee_field is not None:
                callee = candidate.child_by_field_name(callee_field)
                if callee is not None and (_same(callee, node) or _same(callee, callee_holder)):
                    kind = "call"
                    break
        return Reference(name, node.start_point[0] + 1, kind, qualifier, member)

    def reads(self, node: Node, bound: set[int] | None = None) -> list[Reference]:
        """Every read inside ``node``, in source order."""
        if bound is None:
            bound = self._bindings(node)[0]
        found: list[Reference] = []
        for leaf in self._identifiers(node):
            check_deadline()
            reference = self._classify(leaf, bound)
            if reference is not None:
                found.append(reference)
        return found

    # -- units around a line -----------------------------------------------------------

    def node_at(self, line: int) -> Node | None:
        """The smallest named node covering the text of ``line`` (``None`` if it is blank
        or out of range)."""
        if not 1 <= line <= len(self.source.lines):
            return None
        text = self.source.lines[line - 1].rstrip("\r\n")
        stripped = text.lstrip()
        if not stripped:
            return None
        start = len(text[: len(text) - len(stripped)].encode("utf-8", "replace"))
        end = len(text.encode("utf-8", "replace"))
        return self.tree.root_node.named_descendant_for_point_range((line - 1, start), (line - 1, end))

    def statement_at(self, line: int) -> Node | None:
        """The innermost statement (a named child of a statement container) whose lines
        include ``line``."""
        node = self.node_at(line)
        if node is None:
            return None
        containers = self.spec.containers
        if node.type in containers:
            row = line - 1
            for child in node.named_children:
                if child.start_point[0] <= row <= child.end_point[0] and child.type not in self.spec.comments:
                    return child
            return None
        while node.parent is not None and node.parent.type not in containers:
            node = node.parent
        if node.parent is None or node.type in self.spec.comments:
            return None
        return node

    def function_at(self, line: int) -> Node | None:
        """The innermost function (named or anonymous) whose lines include ``line``."""
        node = self.node_at(line)
        while node is not None and node.type not in self.spec.functions:
            node = node.parent
        return node

    def definition_at(self, line: int, kinds: Iterable[str] = ("function",)) -> Definition | None:
        """The innermost definition of one of ``kinds`` whose lines include ``line``."""
        return _innermost(self.definitions, line, kinds)

    def unit_at(self, line: int) -> tuple[int, int] | None:
        """The lines of the function around ``line``: the innermost named function, or an
        anonymous one with the statement it is written in (``test("x", () => {...})``)."""
        function = self.function_at(line)
        named = self.definition_at(line)
        if function is None:
            return (named.start, named.end) if named is not None else None
        if (
            named is not None
            and named.start <= function.start_point[0] + 1
            and function.end_point[0] + 1 <= named.end
        ):
            return named.start, named.end
        node = function
        while node.parent is not None and node.parent.type not in self.spec.containers:
            node = node.parent
        return node.start_point[0] + 1, self._last_line(node)

    def header_reads(self, statement: Node, line: int, bound: set[int]) -> list[Reference]:
        """The reads of ``statement`` outside its nested blocks, in the stretch of its
        header that includes ``line`` (``elif b:`` in an ``if`` statement: ``b``)."""
        blocks: list[Node] = []
        stack = [statement]
        while stack:
            node = stack.pop()
            for child in node.named_children:
                if child.type in self.spec.containers:
                    blocks.append(child)
                else:
                    stack.append(child)
        blocks.sort(key=lambda n: n.start_byte)
        gaps: list[tuple[tuple[int, int], tuple[int, int]]] = []
        previous = statement.start_point
        for block in blocks:
            gaps.append((previous, block.start_point))
            previous = block.end_point
        gaps.append((previous, statement.end_point))
        row = line - 1
        chosen = [(a, b) for a, b in gaps if a < (row + 1, 0) and b > (row, 0) and a < b]
        if not chosen:
            return []
        reads: list[Reference] = []
        for leaf in self._identifiers(statement):
            check_deadline()
            point = leaf.start_point
            if any(a <= point < b for a, b in chosen) and not any(_contains(b, leaf) for b in blocks):
                reference = self._classify(leaf, bound)
                if reference is not None:
                    reads.append(reference)
        return reads

    def scope_node(self, start: int, end: int) -> Node:
        """The innermost function whose lines are within ``start..end`` and include
        ``end``: the function of a definition or unit (the whole file if there is none)."""
        root = self.tree.root_node
        last = self.source.lines[end - 1] if 1 <= end <= len(self.source.lines) else ""
        node = (
            root.named_descendant_for_point_range(
                (start - 1, 0), (end - 1, len(last.rstrip("\r\n").encode("utf-8", "replace")))
            )
            or root
        )
        found: Node | None = None
        queue = deque([node])
        while queue:
            current = queue.popleft()
            if current.type in self.spec.functions and current.end_point[0] + 1 >= end:
                found = current
                break
            queue.extend(
                c
                for c in current.named_children
                if c.start_point[0] + 1 >= start and c.end_point[0] + 1 <= end + 1
            )
        if found is None:
            up: Node | None = node
            while up is not None and up.type not in self.spec.functions:
                up = up.parent
            found = up
        return found if found is not None else root

    def line_reads(self, line: int) -> list[tuple[Reference, float]]:
        """The reads of the statement at ``line`` with a weight: 1.0 for a name read there,
        0.5 for a name read by an assignment to a local variable read there (at or before
        ``line``). Local variables themselves are left out (``self`` among them), as are
        dunder names."""
        statement = self.statement_at(line)
        if statement is None:
            return []
        function: Node | None = statement
        while function is not None and function.type not in self.spec.functions:
            function = function.parent
        scope = function if function is not None else self.tree.root_node
        bound, binders, _ = self._bindings(scope)
        local_names = self.locals_of(function) if function is not None else set()
        found: list[tuple[Reference, float]] = []
        for reference in self.header_reads(statement, line, bound):
            if _dunder(reference.name):
                continue
            if not reference.member and reference.name in local_names:
                for binder, value, names in binders:
                    if reference.name in names and value is not None and binder.start_point[0] < line:
                        for inner in self.reads(value, bound):
                            if not _dunder(inner.name) and (inner.member or inner.name not in local_names):
                                found.append((inner, 0.5))
                continue
            found.append((reference, 1.0))
        return found

    def unit_reads(self, start: int, end: int) -> list[Reference]:
        """The reads inside lines ``start..end`` (a function), local variables and dunder
        names left out."""
        scope = self.scope_node(start, end)
        bound, _, _ = self._bindings(scope)
        local_names = self.locals_of(scope) if scope.type in self.spec.functions else set()
        return [
            r
            for r in self.reads(scope, bound)
            if start <= r.line <= end and not _dunder(r.name) and (r.member or r.name not in local_names)
        ]

    @property
    def package(self) -> str:
        """The package a Java file declares (``""`` if none; other languages: ``""``)."""
        for child in self.tree.root_node.named_children:
            if child.type == "package_declaration":
                for part in child.named_children:
                    if part.type in ("scoped_identifier", "identifier"):
                        return _text(part)
        return ""

    # -- imports -----------------------------------------------------------------------

    @property
    def imports(self) -> tuple[Import, ...]:
        """The names bound by the file's import statements, in line order."""
        if self._imports is None:
            cursor = QueryCursor(self._loaded.imports)
            nodes = sorted(cursor.captures(self.tree.root_node).get("import", []), key=lambda n: n.start_byte)
            reader = _IMPORT_READERS[self.spec.name]
            self._imports = tuple(imp for node in nodes for imp in reader(node))
        return self._imports


_KIND_NAMES = frozenset(("function", "class", "type", "variable"))


def _innermost(definitions: Iterable[Definition], line: int, kinds: Iterable[str]) -> Definition | None:
    """The innermost of ``definitions`` of one of ``kinds`` whose lines include ``line`` (the
    last of equally long ones)."""
    wanted = set(kinds)
    best: Definition | None = None
    for definition in definitions:
        if definition.kind in wanted and definition.start <= line <= definition.end:
            if best is None or definition.end - definition.start <= best.end - best.start:
                best = definition
    return best


class FileSummary:
    """What a file's parse gives that outlives its syntax tree: its definitions, imports and
    (Java) package, as :class:`ParsedFile` has them. It answers the questions of the symbol
    index that need no tree (:meth:`SymbolIndex.lookup`, :meth:`SymbolIndex.defined_in`,
    :meth:`SymbolIndex.neighbours`), so a file whose summary is kept (per content hash, in
    the workspace's cache) is not parsed again for them. :meth:`value` is its plain form
    (tuples of strings and numbers, for ``marshal``), :meth:`from_value` reads it back."""

    __slots__ = ("_by_name", "definitions", "imports", "package", "path", "spec")

    def __init__(
        self,
        path: str,
        spec: LanguageSpec,
        definitions: tuple[Definition, ...],
        imports: tuple[Import, ...],
        package: str,
    ) -> None:
        self.path = path
        self.spec = spec
        self.definitions = definitions
        self.imports = imports
        self.package = package
        self._by_name: dict[str, list[Definition]] = {}
        for definition in definitions:
            self._by_name.setdefault(definition.name, []).append(definition)

    @classmethod
    def of(cls, parsed: ParsedFile) -> FileSummary:
        """The summary of a parsed file."""
        return cls(parsed.path, parsed.spec, parsed.definitions, parsed.imports, parsed.package)

    def defined(self, name: str) -> list[Definition]:
        """The definitions of ``name`` in this file, in line order."""
        return self._by_name.get(name, [])

    def definition_at(self, line: int, kinds: Iterable[str] = ("function",)) -> Definition | None:
        """As :meth:`ParsedFile.definition_at`."""
        return _innermost(self.definitions, line, kinds)

    def value(self) -> tuple[object, ...]:
        """The plain form: ``(language, definitions, imports, package)``, a definition as
        ``(name, start, end, kind, container, scope)``, an import as ``(line, module, name,
        local)``."""
        return (
            self.spec.name,
            tuple((d.name, d.start, d.end, d.kind, d.container, d.scope) for d in self.definitions),
            tuple((i.line, i.module, i.name, i.local) for i in self.imports),
            self.package,
        )

    @classmethod
    def from_value(cls, path: str, value: object) -> FileSummary | None:
        """The summary of ``path`` from its plain form (:meth:`value`); ``None`` for a value
        of another shape or language than the file's (a damaged or foreign one)."""
        spec = language_for(path)
        if not (isinstance(value, tuple) and len(value) == 4 and spec is not None and value[0] == spec.name):
            return None
        _, raw_definitions, raw_imports, package = value
        if not (
            isinstance(raw_definitions, tuple) and isinstance(raw_imports, tuple) and isinstance(package, str)
        ):
            return None
        definitions = []
        for d in raw_definitions:
            if not (
                isinstance(d, tuple)
                and len(d) == 6
                and isinstance(d[0], str)
                and type(d[1]) is int
                and type(d[2]) is int
                and d[3] in _KIND_NAMES
                and (d[4] is None or isinstance(d[4], str))
                and (
                    d[5] is None
                    or (isinstance(d[5], tuple) and len(d[5]) == 2 and all(type(n) is int for n in d[5]))
                )
            ):
                return None
            definitions.append(Definition(d[0], path, d[1], d[2], d[3], d[4], d[5]))
        imports = []
        for i in raw_imports:
            if not (
                isinstance(i, tuple)
                and len(i) == 4
                and type(i[0]) is int
                and isinstance(i[1], str)
                and (i[2] is None or isinstance(i[2], str))
                and isinstance(i[3], str)
            ):
                return None
            imports.append(Import(i[0], i[1], i[2], i[3]))
        return cls(path, spec, tuple(definitions), tuple(imports), package)


@functools.lru_cache(maxsize=256)
def _named_query(language: str, name: str) -> Query | None:
    """A query for the identifiers spelled ``name`` (a plain identifier) in ``language``."""
    loaded = load(language)
    if loaded is None:
        return None
    kinds = sorted(loaded.spec.identifiers)
    text = " ".join(f'((({kind}) @id) (#eq? @id "{name}"))' for kind in kinds)
    return Query(loaded.language, text)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _descendants(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


def _line(node: Node) -> int:
    return node.start_point[0] + 1


def _python_imports(node: Node) -> Iterator[Import]:
    line = _line(node)
    if node.type == "import_statement":
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                module = _text(child.child_by_field_name("name"))
                yield Import(line, module, None, _text(child.child_by_field_name("alias")))
            else:
                module = _text(child)
                yield Import(line, module, None, module.split(".")[0])
        return
    module = re.sub(r"\s+", "", _text(node.child_by_field_name("module_name")))
    if any(child.type == "wildcard_import" for child in node.named_children):
        yield Import(line, module, None, "*")
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = _text(child.child_by_field_name("name"))
            yield Import(line, module, name, _text(child.child_by_field_name("alias")))
        else:
            name = _text(child)
            yield Import(line, module, name, name)


def _string_value(node: Node | None) -> str:
    text = _text(node)
    return text[1:-1] if len(text) >= 2 and text[0] in "'\"`" and text[-1] == text[0] else text


def _js_imports(node: Node) -> Iterator[Import]:
    line = _line(node)
    if node.type == "call_expression":
        arguments = node.child_by_field_name("arguments")
        module = _string_value(arguments.named_child(0) if arguments is not None else None)
        parent = node.parent
        target = (
            parent.child_by_field_name("name")
            if parent is not None and parent.type == "variable_declarator"
            else None
        )
        if target is not None and target.type == "identifier":
            yield Import(line, module, None, _text(target))
        elif target is not None and target.type == "object_pattern":
            for child in target.named_children:
                if child.type == "shorthand_property_identifier_pattern":
                    yield Import(line, module, _text(child), _text(child))
                elif child.type == "pair_pattern":
                    key, value = child.child_by_field_name("key"), child.child_by_field_name("value")
                    yield Import(line, module, _text(key), _text(value))
        else:
            yield Import(line, module, None, "")
        return
    module = _string_value(node.child_by_field_name("source"))
    bound = False
    for child in node.named_children:
        if child.type == "import_clause":
            for part in child.named_children:
                if part.type == "identifier":
                    bound = True
                    yield Import(line, module, "default", _text(part))
                elif part.type == "namespace_import":
                    bound = True
                    yield Import(line, module, None, _text(part.named_child(0)))
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        if spec.type == "import_specifier":
                            bound = True
                            name = _text(spec.child_by_field_name("name"))
                            alias = spec.child_by_field_name("alias")
                            yield Import(line, module, name, _text(alias) if alias is not None else name)
        elif child.type == "export_clause":
            for spec in child.named_children:
                if spec.type == "export_specifier":
                    bound = True
                    name = _text(spec.child_by_field_name("name"))
                    alias = spec.child_by_field_name("alias")
                    yield Import(line, module, name, _text(alias) if alias is not None else name)
    if not bound:
        star = node.type == "export_statement"
        yield Import(line, module, None, "*" if star else "")


def _go_imports(node: Node) -> Iterator[Import]:
    module = _string_value(node.child_by_field_name("path"))
    name = node.child_by_field_name("name")
    local = _text(name) if name is not None else module.rsplit("/", 1)[-1]
    yield Import(_line(node), module, None, "*" if local == "." else local)


def _rust_head(node: Node | None, prefix: list[str]) -> list[str]:
    """The path a ``use`` tree's prefix names (``a::b`` in ``a::b::{c, d}``)."""
    if node is None:
        return list(prefix)
    return next((segments for segments, _ in _rust_paths(node, prefix)), list(prefix))


def _rust_paths(node: Node, prefix: list[str]) -> Iterator[tuple[list[str], str | None]]:
    """``(path segments, alias)`` for each name a ``use`` tree binds (``*`` for a glob)."""
    kind = node.type
    if kind in ("identifier", "crate", "self", "super", "metavariable"):
        yield [*prefix, _text(node)], None
    elif kind == "scoped_identifier":
        path = node.child_by_field_name("path")
        head = _rust_head(path, prefix)
        yield [*head, _text(node.child_by_field_name("name"))], None
    elif kind == "use_as_clause":
        path = node.child_by_field_name("path")
        if path is not None:
            for segments, _ in _rust_paths(path, prefix):
                yield segments, _text(node.child_by_field_name("alias"))
    elif kind == "scoped_use_list":
        path = node.child_by_field_name("path")
        head = _rust_head(path, prefix)
        listed = node.child_by_field_name("list")
        if listed is not None:
            yield from _rust_paths(listed, head)
    elif kind == "use_list":
        for child in node.named_children:
            yield from _rust_paths(child, prefix)
    elif kind == "use_wildcard":
        inner = node.named_child(0)
        head = _rust_head(inner, prefix)
        yield [*head, "*"], None


def _rust_imports(node: Node) -> Iterator[Import]:
    line = _line(node)
    if node.type == "mod_item":
        name = _text(node.child_by_field_name("name"))
        yield Import(line, "self::" + name, None, name)
        return
    argument = node.child_by_field_name("argument")
    if argument is None:
        return
    for segments, alias in _rust_paths(argument, []):
        if segments[-1] == "*":
            yield Import(line, "::".join(segments[:-1]), None, "*")
        elif segments[-1] == "self" and len(segments) > 1:
            yield Import(line, "::".join(segments[:-1]), None, alias or segments[-2])
        else:
            yield Import(line, "::".join(segments[:-1]), segments[-1], alias or segments[-1])


def _java_imports(node: Node) -> Iterator[Import]:
    line = _line(node)
    path = ""
    wildcard = False
    for child in node.named_children:
        if child.type in ("scoped_identifier", "identifier"):
            path = _text(child)
        elif child.type == "asterisk":
            wildcard = True
    if not path:
        return
    if wildcard:
        yield Import(line, path, None, "*")
    else:
        module, _, name = path.rpartition(".")
        yield Import(line, module, name, name)


_IMPORT_READERS = {
    "python": _python_imports,
    "javascript": _js_imports,
    "typescript": _js_imports,
    "tsx": _js_imports,
    "go": _go_imports,
    "rust": _rust_imports,
    "java": _java_imports,
}


class SymbolIndex:
    """Definitions, imports and call sites across a repository, computed on demand.

    Each analysed file (see :func:`source_paths`) is read once and parsed at most once;
    its words are collected once, so that a name is looked for only in the files whose
    text contains it.
    """

    def __init__(self, repo: Repository, paths: Iterable[str] | None = None) -> None:
        self.repo = repo
        self._paths: list[str] | None = sorted(paths) if paths is not None else None
        self._words: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._parsed: dict[str, ParsedFile | None] = {}
        self._lookups: dict[str, list[Definition]] = {}
        self._resolved: dict[tuple[str, Import], tuple[str, ...]] = {}
        self._python_modules: dict[str, list[str]] | None = None
        self._go_modules: list[tuple[str, str]] | None = None
        self._distances: dict[str, dict[str, int]] = {}
        self._known: tuple[list[str], frozenset[str]] | None = None
        self._by_folder: tuple[list[str], dict[str, list[str]]] | None = None

    # -- files -------------------------------------------------------------------------

    @property
    def paths(self) -> list[str]:
        """The analysed files of the repository, sorted."""
        if self._paths is None:
            self._paths = source_paths(self.repo)
        return self._paths

    def _path_set(self) -> frozenset[str]:
        paths = self.paths
        if self._known is None or self._known[0] is not paths:
            self._known = (paths, frozenset(paths))
        return self._known[1]

    def _scan(self, path: str) -> tuple[frozenset[str], frozenset[str]]:
        scanned = self._words.get(path)
        if scanned is None:
            source = self.repo.source(path)
            text = "".join(source.lines) if source is not None else ""
            pairs = _DOTTED_WORD.findall(text)
            definable = {word for dot, word in pairs if not dot}
            if path.endswith(_JS_EXTENSIONS):  # `Foo.prototype.bar = function ...`
                definable.update(_MEMBER_ASSIGNED.findall(text))
            scanned = (frozenset(word for _, word in pairs), frozenset(definable))
            self._words[path] = scanned
        return scanned

    def words(self, path: str) -> frozenset[str]:
        """The identifier-like words of a file's text (empty if it cannot be read)."""
        return self._scan(path)[0]

    def mentioning(self, name: str) -> list[str]:
        """The analysed files whose text contains ``name`` as a word."""
        return [path for path in self.paths if name in self._scan(path)[0]]

    def _may_define(self, name: str) -> list[str]:
        """The analysed files that may define ``name``: it occurs there other than right
        after a ``.`` (a member access defines nothing, except an assignment to a member
        in JavaScript and TypeScript)."""
        return [path for path in self.paths if name in self._scan(path)[1]]

    def parsed(self, path: str) -> ParsedFile | None:
        """The parsed file at ``path`` (``None`` if it cannot be read or its language is not
        analysed); parsed once."""
        if path in self._parsed:
            return self._parsed[path]
        parsed: ParsedFile | None = None
        spec = language_for(path)
        loaded = load(spec.name) if spec is not None else None
        source = self.repo.source(path) if loaded is not None else None
        if source is not None and loaded is not None:
            parsed = ParsedFile(source, loaded)
        self._parsed[path] = parsed
        return parsed

    def summary(self, path: str) -> ParsedFile | FileSummary | None:
        """The definitions, imports and package of the file at ``path`` (``None`` as for
        :meth:`parsed`): its parse, or a kept :class:`FileSummary` of it (this index keeps
        none: a subclass may)."""
        return self.parsed(path)

    # -- definitions -------------------------------------------------------------------

    def lookup(self, name: str) -> list[Definition]:
        """Every definition of ``name`` in the repository, in path and line order."""
        found = self._lookups.get(name)
        if found is None:
            found = []
            for path in self._may_define(name):
                check_deadline()
                parsed = self.summary(path)
                if parsed is not None:
                    found.extend(parsed.defined(name))
            self._lookups[name] = found
        return found

    def defined_in(self, paths: Iterable[str], name: str, follow: int = 3) -> list[Definition]:
        """The definitions of ``name`` in ``paths``; a file that only imports ``name``
        (a package re-exporting it) is followed to the file it imports it from, up to
        ``follow`` steps."""
        found: list[Definition] = []
        for path in paths:
            parsed = self.summary(path)
            if parsed is None:
                continue
            here = [d for d in parsed.defined(name) if d.container is None and d.scope is None]
            if here:
                found.extend(here)
                continue
            if follow <= 0:
                continue
            for imp in parsed.imports:
                if imp.local == name or (imp.local == "*" and name in self._words_of_targets(path, imp)):
                    targets = self.resolve_import(path, imp)
                    inner = imp.name if imp.name not in (None, "default") else name
                    found.extend(self.defined_in(targets, inner or name, follow - 1))
        return list(dict.fromkeys(found))

    def _words_of_targets(self, path: str, imp: Import) -> frozenset[str]:
        words: frozenset[str] = frozenset()
        for target in self.resolve_import(path, imp):
            words |= self.words(target)
        return words

    # -- imports -----------------------------------------------------------------------

    def resolve_import(self, path: str, imp: Import) -> tuple[str, ...]:
        """The repository files an import in ``path`` refers to (empty for a module from
        outside the repository): the module's file, and for ``from pkg import mod`` the
        submodule's file too."""
        key = (path, imp)
        cached = self._resolved.get(key)
        if cached is not None:
            return cached
        spec = language_for(path)
        resolved: list[str] = []
        if spec is not None:
            if spec.name == "python":
                resolved = self._resolve_python(path, imp)
            elif spec.name in ("javascript", "typescript", "tsx"):
                resolved = self._resolve_js(path, imp.module)
            elif spec.name == "go":
                resolved = self._resolve_go(imp.module)
            elif spec.name == "rust":
                resolved = self._resolve_rust(path, imp)
            elif spec.name == "java":
                resolved = self._resolve_java(imp)
        result = tuple(dict.fromkeys(p for p in resolved if p != path))
        self._resolved[key] = result
        return result

    def _python_module_map(self) -> dict[str, list[str]]:
        if self._python_modules is None:
            modules: dict[str, list[str]] = {}
            for path in self.paths:
                if not path.endswith((".py", ".pyi")):
                    continue
                parts = path.rsplit(".", 1)[0].split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                for start in range(len(parts)):
                    modules.setdefault(".".join(parts[start:]), []).append(path)
            self._python_modules = modules
        return self._python_modules

    def _python_files(self, module: str) -> list[str]:
        candidates = self._python_module_map().get(module, [])
        if len(candidates) <= 1:
            return list(candidates)
        # The same dotted name under several roots: the shallowest copies win.
        depth = min(c.count("/") for c in candidates)
        return [c for c in candidates if c.count("/") == depth]

    def _python_relative(self, path: str, module: str) -> tuple[str, str]:
        level = len(module) - len(module.lstrip("."))
        base = posixpath.dirname(path)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        return base, module[level:]

    def _python_exact(self, base: str, dotted: str) -> list[str]:
        stem = posixpath.join(base, *dotted.split(".")) if dotted else base
        known = self._path_set()
        found = [p for p in (stem + ".py", stem + ".pyi", stem + "/__init__.py") if p in known]
        return found[:1]

    def _resolve_python(self, path: str, imp: Import) -> list[str]:
        module = imp.module
        if module.startswith("."):
            base, rest = self._python_relative(path, module)
            files = self._python_exact(base, rest)
            if imp.name:
                files += self._python_exact(base, f"{rest}.{imp.name}" if rest else imp.name)
            return files
        files = self._python_files(module)
        if imp.name:
            files += self._python_files(f"{module}.{imp.name}")
        return files

    def _resolve_js(self, path: str, module: str) -> list[str]:
        if not module.startswith((".", "/")):
            return []
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), module)).lstrip("/")
        known = self._path_set()
        stems = [joined]
        for extension in (".js", ".jsx", ".mjs", ".cjs"):
            if joined.endswith(extension):
                stems.append(joined[: -len(extension)])
        for stem in stems:
            candidates = [
                stem,
                *(stem + e for e in _JS_EXTENSIONS),
                *(f"{stem}/index{e}" for e in _JS_EXTENSIONS),
            ]
            for candidate in candidates:
                if candidate in known:
                    return [candidate]
        return []

    def _go_module_paths(self) -> list[tuple[str, str]]:
        if self._go_modules is None:
            modules: list[tuple[str, str]] = []
            folders = sorted({posixpath.dirname(p) for p in self.paths if p.endswith(".go")} | {""})
            for folder in folders:
                source = self.repo.source(posixpath.join(folder, "go.mod") if folder else "go.mod")
                if source is None:
                    continue
                for text in source.lines:
                    match = re.match(r"\s*module\s+(\S+)", text)
                    if match:
                        modules.append((match.group(1).strip('"'), folder))
                        break
            self._go_modules = sorted(modules, key=lambda m: -len(m[0]))
        return self._go_modules

    def _resolve_go(self, module: str) -> list[str]:
        for prefix, folder in self._go_module_paths():
            if module == prefix or module.startswith(prefix + "/"):
                rest = module[len(prefix) :].lstrip("/")
                target = posixpath.join(folder, rest) if folder else rest
                return [
                    p
                    for p in self.paths
                    if p.endswith(".go") and posixpath.dirname(p) == target and not p.endswith("_test.go")
                ]
        return []

    def _rust_module_dir(self, path: str) -> str:
        folder, name = posixpath.split(path)
        if name in ("mod.rs", "lib.rs", "main.rs"):
            return folder
        return posixpath.join(folder, name[: -len(".rs")])

    def _rust_crate_dir(self, path: str) -> str:
        folder = posixpath.dirname(path)
        known = self._path_set()
        probe = folder
        while True:
            if (
                f"{probe}/lib.rs" in known
                or f"{probe}/main.rs" in known
                or posixpath.basename(probe) == "src"
            ):
                return probe
            if not probe:
                return folder
            probe = posixpath.dirname(probe)

    def _resolve_rust(self, path: str, imp: Import) -> list[str]:
        segments = [s for s in imp.module.split("::") if s]
        if imp.name is not None:
            segments.append(imp.name)
        if not segments:
            return []
        known = self._path_set()
        bases: list[str]
        head = segments[0]
        if head == "crate":
            bases, segments = [self._rust_crate_dir(path)], segments[1:]
        elif head in ("self", "super"):
            base = self._rust_module_dir(path)
            while segments and segments[0] in ("self", "super"):
                if segments[0] == "super":
                    base = posixpath.dirname(base)
                segments = segments[1:]
            bases = [base]
        else:
            bases = [self._rust_module_dir(path), self._rust_crate_dir(path)]
        for base in bases:
            found: str | None = None
            current = base
            for segment in segments:
                file = posixpath.join(current, segment + ".rs") if current else segment + ".rs"
                folder_file = posixpath.join(current, segment, "mod.rs") if current else f"{segment}/mod.rs"
                if file in known:
                    found = file
                elif folder_file in known:
                    found = folder_file
                else:
                    break
                current = posixpath.join(current, segment) if current else segment
            if found is not None:
                return [found]
        return []

    def _resolve_java(self, imp: Import) -> list[str]:
        dotted = f"{imp.module}.{imp.name}" if imp.name else imp.module
        parts = dotted.split(".")
        java = [p for p in self.paths if p.endswith(".java")]
        for end in range(len(parts), 0, -1):
            suffix = "/".join(parts[:end]) + ".java"
            files = [p for p in java if p == suffix or p.endswith("/" + suffix)]
            if files:
                return files
        if imp.name is None:
            folder = "/".join(parts)
            return [
                p
                for p in java
                if posixpath.dirname(p) == folder or posixpath.dirname(p).endswith("/" + folder)
            ]
        return []

    def neighbours(self, path: str) -> list[str]:
        """The files ``path`` imports, and for Go and Java the other files of its package
        (its folder), which it sees without an import."""
        parsed = self.summary(path)
        if parsed is None:
            return []
        found: list[str] = []
        for imp in parsed.imports:
            found.extend(self.resolve_import(path, imp))
        found.extend(self._package_files(parsed))
        return list(dict.fromkeys(found))

    def _folders(self) -> dict[str, list[str]]:
        """The analysed files by folder, each folder's in path order (made once per list of
        paths: a package's files are looked up for every file that names one)."""
        paths = self.paths
        if self._by_folder is None or self._by_folder[0] is not paths:
            folders: dict[str, list[str]] = {}
            for p in paths:
                folders.setdefault(posixpath.dirname(p), []).append(p)
            self._by_folder = (paths, folders)
        return self._by_folder[1]

    def _package_files(self, parsed: ParsedFile | FileSummary) -> list[str]:
        """The other files of a Go package (its folder) or of a Java package (every folder
        whose path ends with the package's, ``src/main/java`` and ``src/test/java`` alike),
        in path order."""
        path = parsed.path
        folder = posixpath.dirname(path)
        folders = self._folders()
        if parsed.spec.name == "go":
            return [p for p in folders.get(folder, ()) if p != path and p.endswith(".go")]
        if parsed.spec.name != "java":
            return []
        package = parsed.package.replace(".", "/")
        chosen = [
            name
            for name in folders
            if name == folder or (package and (name == package or name.endswith("/" + package)))
        ]
        return sorted(p for name in chosen for p in folders[name] if p != path and p.endswith(".java"))

    def import_distances(self, path: str, max_depth: int = 3) -> dict[str, int]:
        """Import-graph distance from ``path`` (0) to every file within ``max_depth``
        imports of it (breadth first)."""
        key = f"{max_depth}:{path}"
        cached = self._distances.get(key)
        if cached is not None:
            return cached
        distances = {path: 0}
        queue = deque([path])
        while queue:
            current = queue.popleft()
            depth = distances[current]
            if depth >= max_depth:
                continue
            for neighbour in self.neighbours(current):
                if neighbour not in distances:
                    distances[neighbour] = depth + 1
                    queue.append(neighbour)
        self._distances[key] = distances
        return distances

    # -- resolution --------------------------------------------------------------------

    def proximity(self, origin: str, path: str) -> float:
        """``1 / (1 + d / 2)`` for import-graph distance ``d`` from ``origin`` to ``path``
        (``d = IMPORT_DEPTH + 1`` past :data:`IMPORT_DEPTH` imports)."""
        distance = self.import_distances(origin, IMPORT_DEPTH).get(path, IMPORT_DEPTH + 1)
        return 1.0 / (1.0 + distance / 2.0)

    def resolve(self, path: str, reference: Reference) -> list[tuple[Definition, float]]:
        """The definitions ``reference`` (read in file ``path``) may denote, each with its
        share of the evidence (the shares add up to at most 1).

        Scopes and imports first. A member of ``self``/``this`` (or of the enclosing class
        by name) resolves in the enclosing class; a member of an imported module or class
        in that module's files. A plain name resolves to a definition of an enclosing
        function, then of the file's module level (Java: of the enclosing class too), then
        to what an import binds to it (re-exports followed), then (Go, Java) to the other
        files of the package, then through wildcard imports. A name an import binds is
        settled there, even when the module lies outside the repository. Otherwise every
        module- or class-level definition of the name in the repository is a candidate
        (the names every file sees, such as Python's builtins, excepted), each weighted by
        its :meth:`proximity` (none if there are more than :data:`MAX_DEFINITIONS`); the
        shares then add up to the best proximity, not to 1.
        """
        # Definitions, imports and the package only: a kept summary answers, no syntax tree.
        parsed = self.summary(path)
        if parsed is None:
            return []
        name = reference.name
        enclosing = parsed.definition_at(reference.line)
        own_class = enclosing.container if enclosing is not None else None
        if reference.member:
            found, settled = self._resolve_member(path, parsed, reference, own_class)
        else:
            found, settled = self._resolve_plain(path, parsed, reference, own_class)
        if reference.kind == "type":
            found = [d for d in found if d.kind in ("class", "type")] or found
        found = list(dict.fromkeys(found))
        if found:
            return [(d, 1.0 / len(found)) for d in found]
        if settled or (not reference.member and name in _GLOBALS.get(parsed.spec.name, frozenset())):
            return []
        if reference.member and name in _MEMBER_GLOBALS.get(parsed.spec.name, frozenset()):
            return []
        candidates = [d for d in self.lookup(name) if d.scope is None]
        if reference.member:
            candidates = [d for d in candidates if d.container is not None] or candidates
        else:
            candidates = [d for d in candidates if d.container is None] or candidates
        if reference.kind == "type":
            candidates = [d for d in candidates if d.kind in ("class", "type")]
        if not candidates or len(candidates) > MAX_DEFINITIONS:
            return []
        weights = [self.proximity(path, d.path) for d in candidates]
        total = sum(weights)
        best = max(weights)
        return [(d, best * w / total) for d, w in zip(candidates, weights, strict=True)]

    def _resolve_member(
        self, path: str, parsed: ParsedFile | FileSummary, reference: Reference, own_class: str | None
    ) -> tuple[list[Definition], bool]:
        """The definitions a member ``reference`` denotes by scopes and imports (see
        :meth:`resolve`), and whether an import settles it."""
        name = reference.name
        found: list[Definition] = []
        settled = False
        parts = [p for p in re.split(r"[.:]+", reference.qualifier or "") if p]
        head = parts[0] if parts else ""
        if head in ("self", "this", "cls", "Self") or (own_class is not None and head == own_class):
            if own_class is not None and len(parts) == 1:
                found = [d for d in parsed.defined(name) if d.container == own_class]
        elif head:
            binding = [imp for imp in parsed.imports if imp.local == head]
            settled = bool(binding)
            for imp in binding:
                files = self.resolve_import(path, imp)
                found.extend(self.defined_in(files, name))
                if imp.name and not found:
                    found.extend(
                        d for f in files for d in self._file_defined(f, name) if d.container == imp.name
                    )
            if not binding and parsed.spec.name in ("rust", "java", "go", "typescript", "tsx"):
                found = [d for d in self.lookup(name) if d.container == parts[-1]]
        return found, settled

    def _resolve_plain(
        self, path: str, parsed: ParsedFile | FileSummary, reference: Reference, own_class: str | None
    ) -> tuple[list[Definition], bool]:
        """The definitions a plain name ``reference`` denotes by scopes and imports (see
        :meth:`resolve`), and whether an import settles it."""
        name = reference.name
        found: list[Definition] = []
        settled = False
        implicit = own_class if parsed.spec.name == "java" else None
        line = reference.line
        found = [
            d
            for d in parsed.defined(name)
            if (d.container is None or d.container == implicit)
            and (d.scope is None or d.scope[0] <= line <= d.scope[1])
        ]
        scoped = [d for d in found if d.scope is not None]
        if scoped:  # the innermost function's own definitions shadow the rest
            innermost = max(d.scope[0] for d in scoped if d.scope is not None)
            found = [d for d in scoped if d.scope is not None and d.scope[0] == innermost]
        if not found:
            for imp in parsed.imports:
                if imp.local == name:
                    settled = True
                    inner = imp.name if imp.name not in (None, "default") else name
                    found.extend(self.defined_in(self.resolve_import(path, imp), inner or name))
        if not found and not settled:
            for neighbour in self._package_files(parsed):
                found.extend(
                    d for d in self._file_defined(neighbour, name) if d.container is None and d.scope is None
                )
        if not found and not settled:
            for imp in parsed.imports:
                if imp.local == "*":
                    found.extend(self.defined_in(self.resolve_import(path, imp), name))
        return found, settled

    def _file_defined(self, path: str, name: str) -> list[Definition]:
        parsed = self.summary(path)
        return parsed.defined(name) if parsed is not None else []

    # -- call sites --------------------------------------------------------------------

    def call_sites(self, name: str) -> list[CallSite]:
        """Every call of ``name`` (as a function, method or constructor) in the repository,
        in path and source order."""
        return [site for path in self.mentioning(name) for site in self.calls_in(path, name)]

    def calls_in(self, path: str, name: str) -> tuple[CallSite, ...]:
        """The calls of ``name`` in the file at ``path``: a function of the file's content
        and ``name`` alone."""
        parsed = self.parsed(path)
        if parsed is None:
            return ()
        found = []
        for leaf in parsed.identifiers_named(name):
            check_deadline()
            reference = parsed._classify(leaf, set())
            if reference is not None and reference.kind == "call":
                unit = parsed.unit_at(reference.line)
                found.append(CallSite(path, reference, unit, parsed.source.line_count))
        return tuple(found)
