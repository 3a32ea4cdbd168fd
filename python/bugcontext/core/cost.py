"""The cost model: what a candidate costs against the budget, and in which unit.

A build's ``budget`` is counted in one unit, reported with the result:

* ``unit="chars"`` (the default): characters, i.e. Python code points (never bytes).
* ``unit="tokens"``: exact tokens of a named OpenAI encoding (``o200k_base`` or
  ``cl100k_base``), counted offline in Rust from data embedded in the extension (the
  ``bpe-openai`` crate), equal to the ``tiktoken`` package's ``encode_ordinary`` counts.

With ``template=None`` a candidate costs its content alone. With ``template="markdown"`` or
``"xml"`` it costs its whole rendered block (header, label, fences or tags, separators, and line
numbers when ``line_numbers`` is on: see :func:`bugcontext.core.composer.render_block`), and the
budget bounds the rendered section exactly: ``cost(render(result)) <= budget``. Character costs
of blocks add up exactly; token counts do not add up across concatenation, so after packing the
whole section is rendered (in ``order``) and counted, and whole items are removed from the
lowest-ranked end until it fits (idea: a hard budget on the rendered text, which FIELD.md notes
few context builders guarantee).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bugcontext.core.errors import InvalidInputError

__all__ = ["ENCODINGS", "ORDERS", "TEMPLATES", "UNITS", "Cost"]

UNITS = ("chars", "tokens")
ENCODINGS = ("o200k_base", "cl100k_base")
TEMPLATES = ("markdown", "xml")
ORDERS = ("rank", "file")
_KEYS = {
    "unit": "unit",
    "encoding": "encoding",
    "template": "template",
    "line_numbers": "line_numbers",
    "lineNumbers": "line_numbers",
    "order": "order",
}


def _one_of(value: object, choices: tuple[str, ...], field: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, str) or value not in choices:
        shown = ", ".join(repr(c) for c in choices) + (" or None" if allow_none else "")
        raise InvalidInputError(field, f"must be one of {shown}, got {value!r}")


@dataclass(frozen=True)
class Cost:
    """How candidates are costed; immutable.

    Attributes:
        unit: ``"chars"`` (code points) or ``"tokens"``.
        encoding: the token encoding, ``"o200k_base"`` (default when ``unit="tokens"``) or
            ``"cl100k_base"``; ``None`` for characters.
        template: ``None`` (cost the content only), ``"markdown"`` or ``"xml"`` (cost the
            rendered block).
        line_numbers: render line numbers (counted in the cost); only with a template.
        order: the render order of the section, ``"rank"`` (selection order) or ``"file"``
            (grouped by path in line order); it matters for token counts of the whole section.

    Raises:
        InvalidInputError: an invalid value; ``field`` is ``"cost.<name>"``.
    """

    unit: str = "chars"
    encoding: str | None = None
    template: str | None = None
    line_numbers: bool = False
    order: str = "rank"

    def __post_init__(self) -> None:
        _one_of(self.unit, UNITS, "cost.unit")
        if self.unit == "tokens":
            if self.encoding is None:
                object.__setattr__(self, "encoding", ENCODINGS[0])
            _one_of(self.encoding, ENCODINGS, "cost.encoding")
        elif self.encoding is not None:
            raise InvalidInputError("cost.encoding", "is only for unit 'tokens'")
        _one_of(self.template, TEMPLATES, "cost.template", allow_none=True)
        if not isinstance(self.line_numbers, bool):
            raise InvalidInputError("cost.line_numbers", "must be a bool")
        if self.line_numbers and self.template is None:
            raise InvalidInputError("cost.line_numbers", "needs a template")
        _one_of(self.order, ORDERS, "cost.order")

    @classmethod
    def parse(cls, value: object) -> Cost:
        """A :class:`Cost` from itself, ``None`` (the default) or a mapping (the JSON form,
        alias ``lineNumbers``)."""
        if value is None:
            return cls()
        if isinstance(value, Cost):
            return value
        if not isinstance(value, Mapping):
            raise InvalidInputError("cost", f"must be a Cost or a mapping, not {type(value).__name__}")
        fields: dict[str, Any] = {}
        for key, item in value.items():
            name = _KEYS.get(key) if isinstance(key, str) else None
            if name is None:
                raise InvalidInputError(f"cost.{key}", "is not a known cost key")
            if name in fields:
                raise InvalidInputError(f"cost.{name}", "given twice")
            fields[name] = item
        return cls(**fields)

    @property
    def rendered(self) -> bool:
        """True when a candidate costs its rendered block."""
        return self.template is not None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "unit": self.unit,
            "encoding": self.encoding,
            "template": self.template,
            "line_numbers": self.line_numbers,
            "order": self.order,
        }
