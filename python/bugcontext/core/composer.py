"""Rendering a build result as a prompt section: the block format and the composer.

A *section* is the concatenation of one *block* per selected item, with no other text. A block
is rendered from one item by :func:`render_block` in one of two templates:

* ``"markdown"``::

      ### {path}:{start}-{end} ({label})
      {fence}{lang}
      {body}{fence}

  followed by one empty line. ``fence`` is a run of backticks one longer than the longest run
  of backticks in the body (at least 3), so the content cannot close it early; ``lang`` comes
  from the path's extension (:func:`block_language`); a newline is added before the closing
  fence unless the body already ends with one.

* ``"xml"``: ``<snippet path=".." start=".." end=".." reason=".." label="..">{body}</snippet>``
  and a newline. Text and attribute values are escaped so that an XML parser gives back exactly
  the body and the path; a string holding a character that XML 1.0 cannot carry at all
  (control characters, lone surrogates, U+FFFE, U+FFFF) is written as base64 of its UTF-8 bytes
  (``surrogatepass``): the body with the extra attribute ``encoding="base64"``, the path as the
  attribute ``path-base64`` in place of ``path``. :func:`parse_xml_section` reads it back.

The *label* says why the item is there (:func:`label`). The *body* is the content, or with line
numbers each line of it prefixed by its right-aligned line number and ``" | "``
(:func:`number_lines`).

This module is the specification; ``src/render.rs`` renders byte-identical blocks in Rust for
the engine's ``rendered`` cost model (``bugcontext._core.render_block`` exposes it).

Lengths and positions here are in characters, i.e. Python code points.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bugcontext.core._cut import shorten
from bugcontext.core.errors import screen
from bugcontext.core.types import BuildResult


def _echo(value: object) -> str:
    """A bad argument's ``repr`` as an error shows it: secrets replaced, at most 200
    characters (:func:`bugcontext.core.errors.screen`)."""
    return screen(shorten(repr(value), 200))

__all__ = [
    "CALLER_LABEL",
    "CALLER_SOURCE",
    "FAILING_FILE_LABEL",
    "ORDERS",
    "TEMPLATES",
    "CandidateLike",
    "RenderedBlock",
    "block_language",
    "fence",
    "label",
    "missing_lines",
    "number_lines",
    "parse_xml_section",
    "plan",
    "render",
    "render_block",
    "render_markdown",
    "render_omitted",
]

#: The templates a block can be rendered in.
TEMPLATES = ("markdown", "xml")
#: The orders a section can be rendered in (see :func:`plan`).
ORDERS = ("rank", "file")

#: What the label of an item from a failing file adds to the label of its reason.
FAILING_FILE_LABEL = "in the failing file"
#: The ``source_id`` of a ``reference`` candidate that calls the failing function (the
#: context job's references source gives it); such a candidate is labelled
#: :data:`CALLER_LABEL`, not as a definition: it is the code around a call, not what is called.
CALLER_SOURCE = "reference: caller of the failing function"
#: The label of a ``reference`` item whose ``source_id`` is :data:`CALLER_SOURCE`.
CALLER_LABEL = "caller of the failing function"
_REASON_LABELS = {
    "failure": "failure evidence",
    "reference": "referenced definition",
    "search": "search hit",
}
# Plain ``str`` names, looked up by value so that a ``Reason`` member gives its plain name.
_REASON_NAMES = {name: name for name in _REASON_LABELS}

# Fence language tags of the block format, by lowercased (ASCII) extension. Fixed: the Rust
# renderer (src/render.rs) holds the same table.
_BLOCK_LANGUAGES = {
    "py": "python",
    "pyi": "python",
    "rs": "rust",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "tsx": "tsx",
    "jsx": "jsx",
    "go": "go",
    "java": "java",
    "kt": "kotlin",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "sh": "bash",
    "bash": "bash",
    "json": "json",
    "toml": "toml",
    "yaml": "yaml",
    "yml": "yaml",
    "md": "markdown",
    "sql": "sql",
    "html": "html",
    "css": "css",
}


_BACKTICKS = re.compile(r"`+")


class SpanLike(Protocol):
    """Lines ``start..end`` of ``path``: what a metric or a reader's check reads of a window."""

    @property
    def path(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


class WindowLike(SpanLike, Protocol):
    """A span with its text and the reason it was proposed (a source's window)."""

    @property
    def content(self) -> str: ...
    @property
    def reason(self) -> str: ...


class CandidateLike(WindowLike, Protocol):
    """What rendering reads of a candidate (``bugcontext.Candidate`` has it all)."""

    @property
    def score(self) -> int | float: ...


def fence(text: str) -> str:
    """A backtick fence longer than every run of backticks in ``text`` (at least 3), so
    that ``text`` cannot close the fence early."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


# Characters XML 1.0 cannot carry, escaped or not (the complement of its ``Char`` production).
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _reason_name(reason: str) -> str:
    # By the text it holds: a str subclass's own __hash__ and __eq__ play no part.
    name = _REASON_NAMES.get(str.__str__(reason)) if isinstance(reason, str) else None
    if name is None:
        raise ValueError(f"reason must be 'failure', 'reference' or 'search', got {_echo(reason)}")
    return name


def label(reason: str, failing: bool, source_id: object = None) -> str:
    """The label of an item: what the evidence is, by ``reason``: ``"failure evidence"``,
    ``"referenced definition"`` or ``"search hit"``, except that a ``reference`` item whose
    ``source_id`` is exactly :data:`CALLER_SOURCE` is ``"caller of the failing function"``; for
    an item from a failing file (``failing``) followed by ``" in the failing file"`` (``"search
    hit in the failing file"``). The label tells the evidence apart where the ranking does not:
    inside a failing file the order is by score alone.

    ``reason`` is ``"failure"``, ``"reference"`` or ``"search"`` (a ``Reason`` member is fine);
    anything else raises ``ValueError``, even when ``failing``. ``source_id`` is the item's
    provenance (any value; only the exact ``str`` text of :data:`CALLER_SOURCE` changes the label).
    """
    name = _reason_name(reason)
    base = _REASON_LABELS[name]
    if name == "reference" and _is_caller(source_id):
        base = CALLER_LABEL
    return f"{base} {FAILING_FILE_LABEL}" if failing else base


def _is_caller(source_id: object) -> bool:
    # By the text it holds: a str subclass's own __eq__ plays no part.
    return isinstance(source_id, str) and str.__str__(source_id) == CALLER_SOURCE


def block_language(path: str) -> str:
    """The fence language tag of the block format for ``path`` (``""`` if none).

    The extension is what follows the last ``.`` of the last ``/``-segment, when that dot is not
    the segment's first character (``a/.bashrc`` has none); it is matched ASCII-case-
    insensitively against a fixed table (``py``/``pyi`` → ``python``, ``rs`` → ``rust``, ...).
    """
    name = path[path.rfind("/") + 1 :]
    dot = name.rfind(".")
    if dot <= 0:
        return ""
    ext = name[dot + 1 :]
    return _BLOCK_LANGUAGES.get(ext.lower(), "") if ext.isascii() else ""


def number_lines(content: str, start: int) -> str:
    """``content`` with each line prefixed by its line number: line ``i`` (0-based) gets
    ``f"{start + i:>{w}} | "``, ``w`` being the number of digits of the last line number.

    Lines are split on ``"\n"`` only and keep it; the empty piece after a final ``"\n"`` is
    not a line, and an empty content is one empty line (``"7 | "``).
    """
    pieces = content.split("\n")
    trailing = content.endswith("\n")
    if trailing:
        pieces.pop()
    width = len(str(start + len(pieces) - 1))
    numbered = "\n".join(f"{start + i:>{width}} | {line}" for i, line in enumerate(pieces))
    return numbered + "\n" if trailing else numbered


def _xml_text(text: str) -> str:
    # "\r" as a character reference, so that the parser's newline normalisation cannot touch it.
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    return text


def _xml_attr(text: str) -> str:
    # Also the quote, and the whitespace that attribute-value normalisation would turn into spaces.
    text = _xml_text(text)
    if '"' in text:
        text = text.replace('"', "&quot;")
    if "\t" in text:
        text = text.replace("\t", "&#9;")
    if "\n" in text:
        text = text.replace("\n", "&#10;")
    return text


def _b64(text: str) -> str:
    import base64  # (here: only a path that needs it is written so)

    return base64.b64encode(text.encode("utf-8", "surrogatepass")).decode("ascii")


def _int(value: int, name: str) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {_echo(value)}")
    return operator.index(value)


def render_block(
    path: str,
    start: int,
    end: int,
    content: str,
    reason: str,
    *,
    failing: bool,
    template: str,
    line_numbers: bool,
    source_id: object = None,
) -> str:
    """One item as a block of a prompt section (see the module docstring for the format).

    ``path`` is printed as given; ``start``/``end`` are its 1-based line range (``start`` also
    numbers the lines when ``line_numbers``); ``reason`` is ``"failure"``, ``"reference"`` or
    ``"search"``; ``failing`` tells that the item comes from a failing file (its label then says
    so too, :func:`label`); ``template`` is ``"markdown"`` or ``"xml"``; ``source_id`` is the
    item's provenance (it names a caller's label, :func:`label`). A ``str`` subclass
    is rendered as the exact text it holds (``str.__str__``). Raises ``ValueError``
    for another template or reason, ``TypeError`` for a non-``str`` path or content or a
    non-integer line. The block ends with a newline; a section is its blocks concatenated.
    """
    if template not in TEMPLATES:
        raise ValueError(f"template must be 'markdown' or 'xml', got {_echo(template)}")
    if not isinstance(path, str) or not isinstance(content, str):
        raise TypeError("path and content must be str")
    # The exact text each holds: a str subclass's own methods (__str__, __format__, encode,
    # split, ...) play no part in the block.
    path, content = str.__str__(path), str.__str__(content)
    start = _int(start, "start")
    end = _int(end, "end")
    name = _reason_name(reason)
    tag = label(name, failing, source_id)
    body = number_lines(content, start) if line_numbers else content
    if template == "markdown":
        ticks = fence(body)
        nl = "" if body.endswith("\n") else "\n"
        head = header_path(path)
        return f"### {head}:{start}-{end} ({tag})\n{ticks}{block_language(path)}\n{body}{nl}{ticks}\n\n"
    where = f'path-base64="{_b64(path)}"' if _XML_INVALID.search(path) else f'path="{_xml_attr(path)}"'
    head = f'<snippet {where} start="{start}" end="{end}" reason="{name}" label="{tag}"'
    if _XML_INVALID.search(body):
        return f'{head} encoding="base64">{_b64(body)}</snippet>\n'
    return f"{head}>{_xml_text(body)}</snippet>\n"


@dataclass(frozen=True)
class RenderedBlock:
    """One rendered block of a section: the item's ``index`` in the build input, its selection
    ``rank`` (0-based position in ``result.items``), its 0-based render ``position`` in the
    section, and its ``text``."""

    index: int
    rank: int
    position: int
    text: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"index", "rank", "position", "text"}``."""
        return {"index": self.index, "rank": self.rank, "position": self.position, "text": self.text}


def plan(
    result: BuildResult,
    *,
    template: str = "markdown",
    line_numbers: bool = False,
    order: str = "rank",
) -> list[RenderedBlock]:
    """The blocks of ``result``'s section, in render order (``position`` 0, 1, ...).

    ``order="rank"`` keeps selection order (``position == rank``). ``order="file"`` groups the
    items by path: groups in the selection rank of their first item, the items of a group by
    ``(start, end, rank)``. An item is from the failure file when its path equals
    one of ``result.failure_files`` (none if the result has no such attribute). Raises
    ``ValueError`` for an unknown ``template`` or ``order``, ``TypeError`` for a mapping (such
    as the result's JSON form) in place of a result.
    """
    if template not in TEMPLATES:
        raise ValueError(f"template must be 'markdown' or 'xml', got {_echo(template)}")
    if order not in ORDERS:
        raise ValueError(f"order must be 'rank' or 'file', got {_echo(order)}")
    if isinstance(result, Mapping):
        # The JSON form (result.to_dict()) is not a result: its "items" would be dict.items.
        raise TypeError(f"result must be a BuildResult (or have its attributes), not {type(result).__name__}")
    items = result.items
    failing_files = set(getattr(result, "failure_files", ()))
    ranks: list[int] = list(range(len(items)))
    if order == "file":
        groups: dict[str, list[int]] = {}
        for rank, item in enumerate(items):
            groups.setdefault(item.path, []).append(rank)
        ranks = [
            rank
            for group in groups.values()
            for rank in sorted(group, key=lambda r: (items[r].start, items[r].end, r))
        ]
    blocks = []
    for position, rank in enumerate(ranks):
        item = items[rank]
        text = render_block(
            item.path,
            item.start,
            item.end,
            item.content,
            item.reason,
            failing=item.path in failing_files,
            template=template,
            line_numbers=line_numbers,
            source_id=getattr(item, "source_id", None),
        )
        blocks.append(RenderedBlock(index=result.selected[rank], rank=rank, position=position, text=text))
    return blocks


def header_path(path: str) -> str:
    """The path as written in a Markdown header: each line break or other control character
    (``Cc``, U+2028, U+2029) as ``\\uXXXX``, so that no path can end the header line or start a
    new Markdown line (a path with ``\\n`` is legal)."""
    return _HEADER_ESCAPE.sub(lambda m: f"\\u{ord(m.group()):04x}", path)


_HEADER_ESCAPE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def render(
    result: BuildResult,
    template: str | None = None,
    line_numbers: bool | None = None,
    order: str | None = None,
) -> str:
    """``result``'s selected items as one prompt section: the texts of :func:`plan`'s blocks,
    concatenated (``""`` when nothing was selected).

    Each option left ``None`` comes from ``result.cost`` (the section the budget was counted
    on), or defaults to ``"markdown"``, no line numbers, ``"rank"`` order. Only the result's
    own options give the section whose cost is ``result.used`` (within ``result.budget``);
    another template, order or line-number choice renders the same items at another cost.

    Raises:
        ValueError: ``template`` is not ``"markdown"`` or ``"xml"``, or ``order`` is not
            ``"rank"`` or ``"file"``.
        TypeError: ``line_numbers`` is not a ``bool`` (or ``None``), or ``result`` is a
            mapping (such as its JSON form, ``result.to_dict()``).
    """
    if line_numbers is not None and not isinstance(line_numbers, bool):
        raise TypeError(f"line_numbers must be a bool, not {type(line_numbers).__name__}")
    cost = getattr(result, "cost", None)
    if template is None:
        template = getattr(cost, "template", None) or "markdown"
    if line_numbers is None:
        line_numbers = bool(getattr(cost, "line_numbers", False))
    if order is None:
        order = getattr(cost, "order", None) or "rank"
    blocks = plan(result, template=template, line_numbers=line_numbers, order=order)
    return "".join(block.text for block in blocks)


def _unb64(value: str) -> str:
    import base64
    import binascii

    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"invalid base64: {exc}") from None
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise ValueError("base64 of bytes that are not UTF-8") from None


# What a snippet element carries: its path as one of two attributes, the rest always, except
# the optional encoding. Whitespace is XML's (not every Unicode space); lines are plain ASCII
# decimal integers, as render_block writes them.
_SNIPPET_ATTRS = frozenset({"path", "path-base64", "start", "end", "reason", "label", "encoding"})
_XML_SPACE = " \t\r\n"
_DECIMAL = re.compile(r"-?[0-9]+")


def _snippet_line(attrs: dict[str, str], name: str) -> int:
    value = attrs[name]
    if not _DECIMAL.fullmatch(value):
        raise ValueError(f"a <snippet> whose {name} is not a decimal integer: {value!r}")
    return int(value)


def parse_xml_section(text: str) -> list[dict[str, Any]]:
    """Read back an XML section: one dict per ``<snippet>``, in order, with ``path`` (str),
    ``start`` and ``end`` (int), ``reason``, ``label`` and ``content`` (the body: with line
    numbers if it was rendered with them), base64 decoded where the block says so.

    It reads what :func:`render_block` writes, and nothing looser. Raises ``TypeError`` if
    ``text`` is not a ``str``, and ``ValueError`` if it is not a sequence of snippet elements:
    text that is not well-formed XML (the parser's ``ParseError`` is re-raised as
    ``ValueError`` with its message) or holds a lone surrogate; an element other than
    ``<snippet>`` or one inside a snippet; text other than XML whitespace (space, tab, CR, LF)
    between elements; a snippet missing an attribute, with both ``path`` and ``path-base64``,
    with an attribute of another name or an ``encoding`` other than ``base64``; a ``start`` or
    ``end`` that is not a decimal integer; a ``reason`` that is not ``failure``, ``reference``
    or ``search``, or a ``label`` that is not that reason's (:func:`label`); base64 that does
    not decode to UTF-8. Comments and processing instructions are skipped.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, not {type(text).__name__}")
    import xml.etree.ElementTree as ET  # (here: the reader alone needs it)

    try:
        root = ET.fromstring(f"<section>{text}</section>")
    except ET.ParseError as exc:
        raise ValueError(f"not well-formed XML: {exc}") from None
    except UnicodeEncodeError:
        raise ValueError("a lone surrogate, which XML cannot carry") from None
    if (root.text or "").strip(_XML_SPACE):
        raise ValueError("text outside a <snippet> element")
    snippets = []
    for el in root:
        if el.tag != "snippet" or (el.tail or "").strip(_XML_SPACE) or len(el):
            raise ValueError(f"unexpected <{el.tag}> or text in a section")
        attrs = el.attrib
        unknown = sorted(set(attrs) - _SNIPPET_ATTRS)
        if unknown:
            raise ValueError(f"a <snippet> with the unknown attribute {unknown[0]!r}")
        if "path" in attrs and "path-base64" in attrs:
            raise ValueError("a <snippet> with both 'path' and 'path-base64'")
        where = "path-base64" if "path-base64" in attrs else "path"
        missing = [name for name in (where, "start", "end", "reason", "label") if name not in attrs]
        if missing:
            raise ValueError(f"a <snippet> without the attribute {missing[0]!r}")
        encoding = attrs.get("encoding", "base64")
        if encoding != "base64":
            raise ValueError(f"a <snippet> whose encoding is {encoding!r}, not 'base64'")
        start, end = _snippet_line(attrs, "start"), _snippet_line(attrs, "end")
        reason = _reason_name(attrs["reason"])
        labels = [label(reason, failing, src) for failing in (False, True) for src in (None, CALLER_SOURCE)]
        if attrs["label"] not in labels:
            raise ValueError(f"a <snippet> whose label {attrs['label']!r} is not one of reason {reason!r}")
        path = _unb64(attrs["path-base64"]) if where == "path-base64" else attrs["path"]
        content = el.text or ""
        if "encoding" in attrs:
            content = _unb64(content)
        snippets.append(
            {
                "path": path,
                "start": start,
                "end": end,
                "reason": reason,
                "label": attrs["label"],
                "content": content,
            }
        )
    return snippets


# --- the legacy Markdown section of the command line (``render_markdown``) ----------------


def _code_span(text: str) -> str:
    """``text`` as an inline code span that survives backticks inside it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _where(item: CandidateLike) -> str:
    # Control characters in the path as \uXXXX (header_path): no path can end the line.
    return f"{header_path(item.path)}:{item.start}-{item.end}"


def _score(score: float) -> str:
    return f"{score:.4g}" if isinstance(score, float) else str(score)


def render_markdown(result: BuildResult, order: str = "rank") -> str:
    """The selected items of ``result`` as the command line's Markdown section: a
    ``## Code context`` heading, then :func:`render` in the Markdown template, in ``order``
    (``"rank"``: selection order, or ``"file"``, see :func:`plan`), no line numbers, or
    ``(no code selected)``. Ends with one newline. Raises ``ValueError`` for another order.
    """
    section = render(result, template="markdown", line_numbers=False, order=order)
    return "## Code context\n\n" + (section.rstrip("\n") + "\n" if section else "(no code selected)\n")


def render_omitted(result: BuildResult, candidates: Sequence[CandidateLike]) -> str:
    """A Markdown summary of what ``result`` left out of ``candidates`` (the build's input
    candidates, in input order) and why.

    One count line by reason (``overlap``, ``budget``, then ``group`` and ``stale`` when there
    are any), then one line per omitted
    candidate in rank order: its input index, window, reason and score, and for an overlap
    the selected window it hits, for a budget omission its cost in the budget's unit (the
    characters of its content; with a rendered cost model, of its block; with a token cost
    model, the tokens of its content or block in the cost's encoding).
    """
    counts = Counter(o.reason for o in result.omitted)
    by_source = Counter(str(c.reason) for c in candidates)
    lines = [
        "## Omitted",
        "",
        f"{len(candidates)} candidates ("
        + ", ".join(f"{reason} {by_source[reason]}" for reason in sorted(by_source))
        + f"); {len(result.items)} selected, "
        + _used(result)
        + "; "
        + f"{len(result.omitted)} omitted ("
        + ", ".join(
            f"{reason} {counts[reason]}"
            for reason in ("overlap", "budget", "group", "stale")
            if reason in ("overlap", "budget") or counts[reason]
        )
        + ").",
    ]
    if result.omitted:
        lines.append("")
    for omission in result.omitted:
        cand = candidates[omission.index]
        head = f"- #{omission.index} {_code_span(_where(cand))} {cand.reason}, score {_score(cand.score)}: "
        if omission.reason == "overlap" and omission.overlaps is not None:
            hit = candidates[omission.overlaps]
            lines.append(head + f"overlaps #{omission.overlaps} {_code_span(_where(hit))} ({hit.reason})")
        elif omission.reason == "stale":
            lines.append(head + "stale (its content is not its file's lines as read now)")
        else:
            lines.append(head + f"{omission.reason} ({_candidate_cost(result, cand)})")
    return "\n".join(lines) + "\n"


def _candidate_cost(result: BuildResult, cand: CandidateLike) -> str:
    """What ``cand`` costs in ``result``'s budget unit, with the unit: its content's characters
    (no cost model, or characters of the content), its rendered block's characters, or the
    tokens of its content or block in the cost's encoding."""
    cost = getattr(result, "cost", None)
    text, what = cand.content, "of content"
    if cost is None:
        return f"{len(text)} characters {what}"
    if cost.template is not None:
        from bugcontext.core._input import canonical_path

        # As the build costed it: the block of the canonical path (the failing files are
        # canonical too), not of the path as the caller wrote it.
        path = canonical_path(cand.path)
        failing = path in set(getattr(result, "failure_files", ()))
        text = render_block(
            path,
            cand.start,
            cand.end,
            cand.content,
            cand.reason,
            failing=failing,
            template=cost.template,
            line_numbers=bool(cost.line_numbers),
        )
        what = f"as a {cost.template} block"
    if cost.unit == "chars":
        return f"{len(text)} characters {what}"
    from bugcontext._core import TokenCounter

    return f"{TokenCounter(cost.encoding).count_one(text)} {cost.encoding} tokens {what}"


def _used(result: BuildResult) -> str:
    """What the selection used, in the budget's unit: ``N characters of content``, or
    ``N of B <unit> counted on ...`` when the budget is not content characters."""
    cost = getattr(result, "cost", None)
    if cost is None or (cost.unit == "chars" and cost.template is None):
        return f"{result.used_chars} characters of content"
    unit = "characters" if cost.unit == "chars" else f"{cost.encoding} tokens"
    counted = "the content" if cost.template is None else f"the {cost.template} section"
    return f"{result.used} of {result.budget} {unit} counted on {counted}"


def missing_lines(result: BuildResult) -> list[str]:
    """One line per failing file whose failure windows were all left out: the file and why
    each window was left out (``a.py: window 3 (lines 10-80) budget``; a window the reader
    withheld: ``lines 10-80 withheld (policy: secret name)``)."""
    lines = []
    for missing in result.missing_critical:
        whys = [
            f"window {o.index} {o.reason}" + (f" of window {o.overlaps}" if o.overlaps is not None else "")
            for o in missing.omitted
        ]
        whys += [
            f"lines {w['start']}-{w['end']} withheld ({w['why']})" for w in getattr(missing, "withheld", ())
        ]
        lines.append(f"{header_path(missing.path)}: all failure windows left out ({', '.join(whys)})")
    return lines
