"""What the symbol finder knows about each language: file suffixes, the tree-sitter grammar,
and which node types play which syntactic role.

Grammars come from the ``tree-sitter-language-pack`` wheel, which bundles them compiled (no
download at run time). A language whose grammar cannot be loaded is not analysed.

A definitions query captures the defining node as ``@definition.<kind>`` (``function``,
``class``, ``type`` or ``variable``) and its name as ``@name``, or, for an assignment, the
target as ``@pattern`` (``a, (b, c) = ...`` defines three names).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from bugcontext.core._extras import needs

with needs("context"):
    from tree_sitter import Language, Parser, Query

__all__ = ["LANGUAGES", "LanguageSpec", "Loaded", "language_for", "load"]

#: Pattern children to follow: ``None`` follows every named child that has no field name.
Follow = tuple[str, ...] | None


@dataclass(frozen=True)
class LanguageSpec:
    """The syntactic roles of one language's node types.

    * ``identifiers``: leaf types that name something (read or declared);
    * ``containers``: node types whose children are statements (a *statement* is a named
      child of a container);
    * ``functions``: node types of function bodies, named or anonymous (the scope of local
      variables); ``classes``: node types whose definitions contain methods and fields;
    * ``members``: member-access node type → ``(object field, member field)``;
    * ``calls``: call node type → the field of the callee;
    * ``binders``: binding construct → ``(target field, value field)`` (``""``: the value is
      the construct's first named child), for local variables and one step of data flow;
    * ``parameters``: a query capturing parameter patterns as ``@pattern``;
    * ``patterns``: pattern node type → the children that bind names (see :data:`Follow`);
    * ``binding_leaves``: leaf types a pattern binds;
    * ``declared``: node type → fields holding declared names, never reads (a definition's
      name, a keyword argument's name, an object key);
    * ``ignored``: node types inside which no identifier is a read (imports, package
      clauses, attributes of items);
    * ``imports``: a query capturing import statements as ``@import``;
    * ``comments``: comment node types (not part of a definition's last line).
    """

    name: str
    grammar: str
    suffixes: tuple[str, ...]
    definitions: str
    identifiers: frozenset[str]
    containers: frozenset[str]
    functions: frozenset[str]
    classes: frozenset[str]
    members: dict[str, tuple[str, str]]
    calls: dict[str, str]
    binders: dict[str, tuple[str, str]]
    parameters: str
    patterns: dict[str, Follow]
    declared: dict[str, tuple[str, ...]]
    ignored: frozenset[str]
    imports: str
    binding_leaves: frozenset[str] = frozenset({"identifier"})
    comments: frozenset[str] = frozenset({"comment"})
    globals_query: str = ""


#: A definition whose name is a field of the defining node: ``(node type, name field, name
#: node type, role)``. Such a name is declared, never a read: one row gives both the
#: definitions query's pattern and the ``declared`` entry.
_Named = tuple[str, str, str, str]


def _named_query(rows: tuple[_Named, ...]) -> str:
    """The definitions query's patterns of ``rows``, in their order."""
    return "".join(
        f"\n({node} {field}: ({name}) @name) @definition.{role}" for node, field, name, role in rows
    )


def _named_declared(rows: tuple[_Named, ...]) -> dict[str, tuple[str, ...]]:
    """The ``declared`` entries of ``rows``: each node type's name field."""
    return {node: (field,) for node, field, _, _ in rows}


_PYTHON_NAMED: tuple[_Named, ...] = (
    ("function_definition", "name", "identifier", "function"),
    ("class_definition", "name", "identifier", "class"),
)

_PYTHON = LanguageSpec(
    name="python",
    grammar="python",
    suffixes=(".py", ".pyi"),
    definitions=_named_query(_PYTHON_NAMED)
    + """
(assignment left: (_) @pattern) @definition.variable
(augmented_assignment left: (_) @pattern) @definition.variable
""",
    identifiers=frozenset({"identifier"}),
    containers=frozenset({"module", "block"}),
    functions=frozenset({"function_definition"}),
    classes=frozenset({"class_definition"}),
    members={"attribute": ("object", "attribute")},
    calls={"call": "function"},
    binders={
        "assignment": ("left", "right"),
        "augmented_assignment": ("left", "right"),
        "for_statement": ("left", "right"),
        "for_in_clause": ("left", "right"),
        "named_expression": ("name", "value"),
        "as_pattern": ("alias", ""),
    },
    parameters="(parameters (_) @pattern) (lambda_parameters (_) @pattern)",
    patterns={
        "pattern_list": None,
        "tuple_pattern": None,
        "list_pattern": None,
        "list_splat_pattern": None,
        "dictionary_splat_pattern": None,
        "tuple": None,
        "list": None,
        "parenthesized_expression": None,
        "as_pattern_target": None,
        "expression_list": None,
        "list_splat": None,
        "typed_parameter": None,
        "default_parameter": ("name",),
        "typed_default_parameter": ("name",),
    },
    declared={**_named_declared(_PYTHON_NAMED), "keyword_argument": ("name",)},
    ignored=frozenset(
        {
            "import_statement",
            "import_from_statement",
            "future_import_statement",
            "global_statement",
            "nonlocal_statement",
        }
    ),
    imports="(import_statement) @import (import_from_statement) @import",
    globals_query="(global_statement (identifier) @global) (nonlocal_statement (identifier) @global)",
)

_JS_NAMED: tuple[_Named, ...] = (
    ("function_declaration", "name", "identifier", "function"),
    ("generator_function_declaration", "name", "identifier", "function"),
    ("class_declaration", "name", "_", "class"),
    ("method_definition", "name", "_", "function"),
)

_TS_NAMED: tuple[_Named, ...] = (
    ("public_field_definition", "name", "_", "variable"),
    ("abstract_class_declaration", "name", "_", "class"),
    ("abstract_method_signature", "name", "_", "function"),
    ("function_signature", "name", "identifier", "function"),
    ("interface_declaration", "name", "_", "type"),
    ("type_alias_declaration", "name", "_", "type"),
    ("enum_declaration", "name", "_", "type"),
)

#: JavaScript's own: a class field (TypeScript's is ``public_field_definition``).
_JS_FIELD: tuple[_Named, ...] = (("field_definition", "property", "_", "variable"),)

_JS_DEFINITIONS = (
    _named_query(_JS_NAMED)
    + """
(variable_declarator name: (identifier) @name) @definition.variable
(assignment_expression
  left: (member_expression property: (property_identifier) @name)
  right: [(function_expression) (arrow_function) (generator_function) (class)]) @definition.function
"""
)

_JS_IDENTIFIERS = frozenset(
    {"identifier", "property_identifier", "shorthand_property_identifier", "private_property_identifier"}
)

_JS_DECLARED: dict[str, tuple[str, ...]] = {
    **_named_declared(_JS_NAMED + _JS_FIELD),
    "function_expression": ("name",),
    "class": ("name",),
    "pair": ("key",),
}

_TS_DECLARED: dict[str, tuple[str, ...]] = {
    **_JS_DECLARED,
    **_named_declared(_TS_NAMED),
    "method_signature": ("name",),
    "property_signature": ("name",),
    "enum_body": ("name",),
    "enum_assignment": ("name",),
    "type_parameter": ("name",),
}


def _javascript(name: str, grammar: str, suffixes: tuple[str, ...], typed: bool) -> LanguageSpec:
    return LanguageSpec(
        name=name,
        grammar=grammar,
        suffixes=suffixes,
        definitions=_JS_DEFINITIONS + _named_query(_TS_NAMED if typed else _JS_FIELD),
        identifiers=_JS_IDENTIFIERS | {"type_identifier"} if typed else _JS_IDENTIFIERS,
        containers=frozenset(
            {
                "program",
                "statement_block",
                "class_body",
                "switch_case",
                "switch_default",
                "class_static_block",
            }
        ),
        functions=frozenset(
            {
                "function_declaration",
                "generator_function_declaration",
                "function_expression",
                "function",
                "generator_function",
                "arrow_function",
                "method_definition",
            }
        ),
        classes=frozenset({"class_declaration", "class", "abstract_class_declaration"}),
        members={"member_expression": ("object", "property")},
        calls={"call_expression": "function", "new_expression": "constructor"},
        binders={
            "variable_declarator": ("name", "value"),
            "assignment_expression": ("left", "right"),
            "augmented_assignment_expression": ("left", "right"),
            "for_in_statement": ("left", "right"),
        },
        parameters="(formal_parameters (_) @pattern) (arrow_function parameter: (identifier) @pattern)"
        " (catch_clause parameter: (_) @pattern)",
        patterns={
            "object_pattern": None,
            "array_pattern": None,
            "pair_pattern": ("value",),
            "assignment_pattern": ("left",),
            "object_assignment_pattern": ("left",),
            "rest_pattern": None,
            "required_parameter": ("pattern",),
            "optional_parameter": ("pattern",),
        },
        binding_leaves=frozenset({"identifier", "shorthand_property_identifier_pattern"}),
        declared=_TS_DECLARED if typed else _JS_DECLARED,
        ignored=frozenset({"import_statement", "export_clause", "statement_identifier"}),
        imports="(import_statement) @import (export_statement source: (_)) @import"
        ' (call_expression function: (identifier) @require (#eq? @require "require")'
        " arguments: (arguments . (string))) @import",
    )


_GO_NAMED: tuple[_Named, ...] = (
    ("function_declaration", "name", "identifier", "function"),
    ("method_declaration", "name", "field_identifier", "function"),
    ("type_spec", "name", "type_identifier", "type"),
    ("type_alias", "name", "type_identifier", "type"),
)

_GO = LanguageSpec(
    name="go",
    grammar="go",
    suffixes=(".go",),
    definitions=_named_query(_GO_NAMED)
    + """
(const_spec name: (identifier) @name) @definition.variable
(var_spec name: (identifier) @name) @definition.variable
""",
    identifiers=frozenset({"identifier", "field_identifier", "type_identifier", "package_identifier"}),
    containers=frozenset(
        {
            "source_file",
            "block",
            "statement_list",
            "expression_case",
            "default_case",
            "type_case",
            "communication_case",
        }
    ),
    functions=frozenset({"function_declaration", "method_declaration", "func_literal"}),
    classes=frozenset({"type_spec"}),
    members={"selector_expression": ("operand", "field"), "qualified_type": ("package", "name")},
    calls={"call_expression": "function"},
    binders={
        "short_var_declaration": ("left", "right"),
        "assignment_statement": ("left", "right"),
        "var_spec": ("name", "value"),
        "const_spec": ("name", "value"),
        "range_clause": ("left", "right"),
    },
    parameters="(parameter_declaration name: (_) @pattern)"
    " (variadic_parameter_declaration name: (_) @pattern)",
    patterns={"expression_list": None},
    declared={
        **_named_declared(_GO_NAMED),
        "field_declaration": ("name",),
        "method_elem": ("name",),
    },
    ignored=frozenset({"import_declaration", "package_clause", "label_name"}),
    imports="(import_spec) @import",
)

_RUST_NAMED: tuple[_Named, ...] = (
    ("function_item", "name", "identifier", "function"),
    ("function_signature_item", "name", "identifier", "function"),
    ("struct_item", "name", "type_identifier", "class"),
    ("enum_item", "name", "type_identifier", "type"),
    ("union_item", "name", "type_identifier", "type"),
    ("trait_item", "name", "type_identifier", "type"),
    ("type_item", "name", "type_identifier", "type"),
    ("const_item", "name", "identifier", "variable"),
    ("static_item", "name", "identifier", "variable"),
    ("macro_definition", "name", "identifier", "function"),
)

_RUST = LanguageSpec(
    name="rust",
    grammar="rust",
    suffixes=(".rs",),
    definitions=_named_query(_RUST_NAMED),
    identifiers=frozenset(
        {"identifier", "field_identifier", "type_identifier", "shorthand_field_identifier"}
    ),
    containers=frozenset({"source_file", "block", "declaration_list", "match_arm"}),
    functions=frozenset({"function_item", "closure_expression"}),
    classes=frozenset({"struct_item", "enum_item", "union_item", "trait_item", "impl_item"}),
    members={"field_expression": ("value", "field"), "scoped_identifier": ("path", "name")},
    calls={"call_expression": "function", "macro_invocation": "macro"},
    binders={
        "let_declaration": ("pattern", "value"),
        "assignment_expression": ("left", "right"),
        "compound_assignment_expr": ("left", "right"),
        "for_expression": ("pattern", "value"),
        "let_condition": ("pattern", "value"),
    },
    parameters="(parameters (parameter pattern: (_) @pattern)) (closure_parameters (_) @pattern)",
    patterns={
        "tuple_pattern": None,
        "slice_pattern": None,
        "tuple_struct_pattern": None,
        "struct_pattern": None,
        "field_pattern": ("pattern", "name"),
        "ref_pattern": None,
        "mut_pattern": None,
        "reference_pattern": None,
        "captured_pattern": None,
        "or_pattern": None,
        "parameter": ("pattern",),
    },
    binding_leaves=frozenset({"identifier", "shorthand_field_identifier"}),
    declared={
        **_named_declared(_RUST_NAMED),
        "field_declaration": ("name",),
        "enum_variant": ("name",),
        "mod_item": ("name",),
        "field_initializer": ("field",),
        "field_pattern": ("name",),
    },
    ignored=frozenset({"use_declaration", "attribute_item", "inner_attribute_item", "lifetime", "label"}),
    imports="(use_declaration) @import (mod_item !body) @import",
    comments=frozenset({"line_comment", "block_comment"}),
)

_JAVA_NAMED: tuple[_Named, ...] = (
    ("class_declaration", "name", "identifier", "class"),
    ("record_declaration", "name", "identifier", "class"),
    ("interface_declaration", "name", "identifier", "type"),
    ("enum_declaration", "name", "identifier", "type"),
    ("annotation_type_declaration", "name", "identifier", "type"),
    ("method_declaration", "name", "identifier", "function"),
    ("constructor_declaration", "name", "identifier", "function"),
    ("enum_constant", "name", "identifier", "variable"),
)

_JAVA = LanguageSpec(
    name="java",
    grammar="java",
    suffixes=(".java",),
    definitions=_named_query(_JAVA_NAMED)
    + """
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.variable
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @definition.variable
""",
    identifiers=frozenset({"identifier", "type_identifier"}),
    containers=frozenset(
        {
            "program",
            "block",
            "class_body",
            "interface_body",
            "enum_body_declarations",
            "constructor_body",
            "switch_block_statement_group",
            "annotation_type_body",
        }
    ),
    functions=frozenset(
        {
            "method_declaration",
            "constructor_declaration",
            "lambda_expression",
            "compact_constructor_declaration",
        }
    ),
    classes=frozenset(
        {
            "class_declaration",
            "record_declaration",
            "interface_declaration",
            "enum_declaration",
            "annotation_type_declaration",
        }
    ),
    members={"field_access": ("object", "field"), "method_invocation": ("object", "name")},
    calls={"method_invocation": "name", "object_creation_expression": "type"},
    binders={
        "variable_declarator": ("name", "value"),
        "assignment_expression": ("left", "right"),
        "enhanced_for_statement": ("name", "value"),
        "resource": ("name", "value"),
    },
    parameters="(formal_parameter name: (_) @pattern) (catch_formal_parameter name: (_) @pattern)"
    " (spread_parameter (variable_declarator name: (_) @pattern))"
    " (inferred_parameters (identifier) @pattern) (lambda_expression parameters: (identifier) @pattern)",
    patterns={},
    declared={**_named_declared(_JAVA_NAMED), "element_value_pair": ("key",)},
    ignored=frozenset({"import_declaration", "package_declaration"}),
    imports="(import_declaration) @import",
    comments=frozenset({"line_comment", "block_comment"}),
)

#: The analysed languages, by name.
LANGUAGES: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in (
        _PYTHON,
        _javascript("javascript", "javascript", (".js", ".jsx", ".mjs", ".cjs"), typed=False),
        _javascript("typescript", "typescript", (".ts", ".mts", ".cts"), typed=True),
        _javascript("tsx", "tsx", (".tsx",), typed=True),
        _GO,
        _RUST,
        _JAVA,
    )
}

#: Every suffix of an analysed file.
SUFFIXES: frozenset[str] = frozenset(s for spec in LANGUAGES.values() for s in spec.suffixes)

_BY_SUFFIX = {suffix: spec for spec in LANGUAGES.values() for suffix in spec.suffixes}


def language_for(path: str) -> LanguageSpec | None:
    """The language of a file, by its suffix (``None`` if it is not analysed)."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    return _BY_SUFFIX.get(path[dot:].lower())


@dataclass(frozen=True)
class Loaded:
    """A language's parser and compiled queries."""

    spec: LanguageSpec
    language: Language
    parser: Parser
    definitions: Query
    identifiers: Query
    binders: Query
    imports: Query
    globals: Query | None


@functools.cache
def load(name: str) -> Loaded | None:
    """The parser and queries of language ``name``, or ``None`` if its grammar is missing
    (the grammar package has no grammar for it); ``MissingExtraError`` without the grammar
    package (the ``context`` extra)."""
    spec = LANGUAGES[name]
    with needs("context"):
        import tree_sitter_language_pack
    try:
        language = tree_sitter_language_pack.get_language(spec.grammar)  # type: ignore[arg-type]
    except Exception:
        return None
    identifiers = " ".join(f"({kind}) @id" for kind in sorted(spec.identifiers))
    binders = " ".join(
        f"({kind} {target}: (_) @pattern) @binder" for kind, (target, _) in sorted(spec.binders.items())
    )
    return Loaded(
        spec=spec,
        language=language,
        parser=Parser(language),
        definitions=Query(language, spec.definitions),
        identifiers=Query(language, identifiers),
        binders=Query(language, binders + " " + spec.parameters),
        imports=Query(language, spec.imports),
        globals=Query(language, spec.globals_query) if spec.globals_query else None,
    )
