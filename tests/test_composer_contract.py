"""The composer's exact contract: every error message, the whole text of ``render_omitted`` under
each cost model, the figures of ``_used`` and ``_candidate_cost``, and the exact output of the
small helpers (languages, line numbers, fences, header and XML escapes, base64 fallbacks).

Each expected value is written out in full (worked out from the block format in the module
docstring), so that a change of any message or figure fails here.
"""

from __future__ import annotations

import base64
import binascii
import re
import types
import xml.etree.ElementTree as ET
from typing import Any

import bugcontext as rc
import pytest
from bugcontext import Candidate, Cost, Reason, TokenCounter
from bugcontext.core.composer import (
    RenderedBlock,
    _candidate_cost,
    _code_span,
    _score,
    _used,
    block_language,
    fence,
    header_path,
    label,
    number_lines,
    parse_xml_section,
    plan,
    render,
    render_block,
    render_markdown,
    render_omitted,
)

REASON_ERROR = "reason must be 'failure', 'reference' or 'search', got {!r}"
TEMPLATE_ERROR = "template must be 'markdown' or 'xml', got {!r}"
STALE = "stale (its content is not its file's lines as read now)"


def exactly(message: str) -> str:
    """A ``pytest.raises`` pattern matching the whole of ``message``."""
    return "^" + re.escape(message) + "$"


def duck(**fields: Any) -> Any:
    """A result-like object with only the given attributes (no ``cost``, no ``failure_files``
    unless given)."""
    return types.SimpleNamespace(**fields)


def cand(
    path: str, start: int, end: int, content: str, reason: str, score: float, **extra: Any
) -> dict[str, Any]:
    return {
        "path": path,
        "start": start,
        "end": end,
        "content": content,
        "reason": reason,
        "score": score,
        **extra,
    }


def as_candidates(cands: list[dict[str, Any]]) -> list[Candidate]:
    fields = ("path", "start", "end", "content", "reason", "score")
    return [Candidate(**{key: c[key] for key in fields}) for c in cands]


def block(
    path: str,
    start: int,
    end: int,
    content: str,
    reason: str = "search",
    *,
    failing: bool = False,
    template: str = "markdown",
    line_numbers: bool = False,
) -> str:
    return render_block(
        path, start, end, content, reason, failing=failing, template=template, line_numbers=line_numbers
    )


# --- 1. error messages ---------------------------------------------------------------------------


@pytest.mark.parametrize("failing", [False, True])
@pytest.mark.parametrize("reason", ["budget", "Search", "search ", "", 5, None, b"search"])
def test_label_rejects_a_bad_reason_with_its_repr(reason: Any, failing: bool) -> None:
    with pytest.raises(ValueError, match=exactly(REASON_ERROR.format(reason))):
        label(reason, failing)


@pytest.mark.parametrize("reason", ["overlap", 3.5])
def test_render_block_rejects_a_bad_reason_with_its_repr(reason: Any) -> None:
    for template in ("markdown", "xml"):
        with pytest.raises(ValueError, match=exactly(REASON_ERROR.format(reason))):
            block("a.py", 1, 1, "x", reason, failing=True, template=template)


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (True, 1, "start must be an integer, got True"),
        (False, 1, "start must be an integer, got False"),
        (1, True, "end must be an integer, got True"),
        (1, False, "end must be an integer, got False"),
        (True, False, "start must be an integer, got True"),  # start is checked first
        (1.5, 1, "'float' object cannot be interpreted as an integer"),
    ],
)
def test_render_block_rejects_a_bool_or_non_integer_line(start: Any, end: Any, message: str) -> None:
    with pytest.raises(TypeError, match=exactly(message)):
        block("a.py", start, end, "x")


@pytest.mark.parametrize("template", ["html", "XML", "", None])
def test_render_block_rejects_a_bad_template(template: Any) -> None:
    with pytest.raises(ValueError, match=exactly(TEMPLATE_ERROR.format(template))):
        block("a.py", 1, 1, "x", template=template)


@pytest.mark.parametrize(("path", "content"), [(b"a.py", "x"), (None, "x"), ("a.py", b"x"), ("a.py", 5)])
def test_render_block_rejects_a_non_str_path_or_content(path: Any, content: Any) -> None:
    with pytest.raises(TypeError, match=exactly("path and content must be str")):
        block(path, 1, 1, content)


def small_result() -> rc.BuildResult:
    return rc.build({"candidates": [cand("a.py", 1, 1, "x\n", "search", 1)], "max_chars": 10})


@pytest.mark.parametrize("template", ["text", "Markdown"])
def test_plan_rejects_a_bad_template(template: str) -> None:
    with pytest.raises(ValueError, match=exactly(TEMPLATE_ERROR.format(template))):
        plan(small_result(), template=template)


@pytest.mark.parametrize("order", ["path", "RANK", ""])
def test_plan_and_render_reject_a_bad_order(order: str) -> None:
    message = f"order must be 'rank' or 'file', got {order!r}"
    with pytest.raises(ValueError, match=exactly(message)):
        plan(small_result(), order=order)
    with pytest.raises(ValueError, match=exactly(message)):
        render(small_result(), order=order)


@pytest.mark.parametrize(("value", "type_name"), [(1, "int"), (0, "int"), ("yes", "str"), (1.0, "float")])
def test_render_rejects_line_numbers_that_are_not_a_bool(value: Any, type_name: str) -> None:
    with pytest.raises(TypeError, match=exactly(f"line_numbers must be a bool, not {type_name}")):
        render(small_result(), line_numbers=value)


def stdlib_b64_error(value: str) -> str:
    """What ``base64.b64decode(value, validate=True)`` says (its wording varies by Python version)."""
    try:
        base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        return str(exc)
    raise AssertionError(f"{value!r} is valid base64")


SNIPPET_ATTRS = 'start="1" end="1" reason="search" label="search hit"'
UNEXPECTED_SNIPPET = "unexpected <snippet> or text in a section"


@pytest.mark.parametrize(
    "section",
    [
        f'<snippet path="a.py" {SNIPPET_ATTRS} encoding="base64">{{}}</snippet>',
        f'<snippet path-base64="{{}}" {SNIPPET_ATTRS}>x</snippet>',
    ],
    ids=["body", "path"],
)
@pytest.mark.parametrize("value", ["abc", "!!!", "YQ==x"])
def test_parse_xml_section_reports_invalid_base64(section: str, value: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_xml_section(section.format(value))
    assert str(caught.value) == f"invalid base64: {stdlib_b64_error(value)}"
    assert type(caught.value) is ValueError
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (f'x<snippet path="a" {SNIPPET_ATTRS}>b</snippet>', "text outside a <snippet> element"),
        (f' \n\t.<snippet path="a" {SNIPPET_ATTRS}/>', "text outside a <snippet> element"),
        ("<other/>", "unexpected <other> or text in a section"),
        (f'<snippet path="a" {SNIPPET_ATTRS}/><p>x</p>', "unexpected <p> or text in a section"),
        (f'<snippet path="a" {SNIPPET_ATTRS}>b</snippet>tail', UNEXPECTED_SNIPPET),
        (f'<snippet path="a" {SNIPPET_ATTRS}>b<i/></snippet>', UNEXPECTED_SNIPPET),
        (f'<snippet path="a" {SNIPPET_ATTRS}><i>b</i></snippet>', UNEXPECTED_SNIPPET),
    ],
)
def test_parse_xml_section_rejects_anything_but_snippets(section: str, message: str) -> None:
    with pytest.raises(ValueError, match=exactly(message)):
        parse_xml_section(section)


@pytest.mark.parametrize(
    ("section", "missing"),
    [
        ("<snippet/>", "path"),
        ('<snippet start="1" end="1" reason="search" label="l"/>', "path"),
        ('<snippet path="a" end="1" reason="search" label="l"/>', "start"),
        ('<snippet path-base64="YQ==" start="1" reason="search" label="l"/>', "end"),
        ('<snippet path="a" start="1" end="1" label="l"/>', "reason"),
        ('<snippet path="a" start="1" end="1" reason="search"/>', "label"),
    ],
)
def test_parse_xml_section_names_a_missing_attribute(section: str, missing: str) -> None:
    with pytest.raises(ValueError, match=exactly(f"a <snippet> without the attribute {missing!r}")):
        parse_xml_section(section)


@pytest.mark.parametrize("section", ["<snippet", "&bogus;", "</section><x>", "<snippet path='a'>"])
def test_parse_xml_section_raises_value_error_for_xml_that_is_not_well_formed(section: str) -> None:
    # The parser's own words (they differ between expat versions) after a fixed prefix.
    with pytest.raises(ET.ParseError) as parser:
        ET.fromstring(f"<section>{section}</section>")
    with pytest.raises(ValueError, match=exactly(f"not well-formed XML: {parser.value}")) as caught:
        parse_xml_section(section)
    assert type(caught.value) is ValueError and caught.value.__cause__ is None


def test_parse_xml_section_reads_whitespace_between_snippets_empty_and_base64_bodies() -> None:
    section = (
        f' \n<snippet path="a" {SNIPPET_ATTRS}></snippet>\n\t'
        '<snippet path-base64="YQFiLnB5" start="2" end="3" reason="failure" '
        'label="failure evidence in the failing file" encoding="base64">7aCA</snippet> '
        '<!-- a comment --><snippet path="c" start="-4" end="05" reason="reference" '
        'label="referenced definition">x</snippet>\r\n'
    )
    assert parse_xml_section(section) == [
        {"path": "a", "start": 1, "end": 1, "reason": "search", "label": "search hit", "content": ""},
        {
            "path": "a\x01b.py",
            "start": 2,
            "end": 3,
            "reason": "failure",
            "label": "failure evidence in the failing file",
            "content": "\ud800",
        },
        {
            "path": "c",
            "start": -4,
            "end": 5,
            "reason": "reference",
            "label": "referenced definition",
            "content": "x",
        },
    ]
    assert parse_xml_section("") == []


@pytest.mark.parametrize(
    ("section", "message"),
    [
        (f'<snippet path="a" {SNIPPET_ATTRS} x="1"/>', "a <snippet> with the unknown attribute 'x'"),
        (
            f'<snippet path="a" path-base64="YQ==" {SNIPPET_ATTRS}/>',
            "a <snippet> with both 'path' and 'path-base64'",
        ),
        (
            f'<snippet path="a" {SNIPPET_ATTRS} encoding="hex">61</snippet>',
            "a <snippet> whose encoding is 'hex', not 'base64'",
        ),
        (
            '<snippet path="a" start=" 1" end="1" reason="search" label="search hit"/>',
            "a <snippet> whose start is not a decimal integer: ' 1'",
        ),
        (
            '<snippet path="a" start="1" end="1_0" reason="search" label="search hit"/>',
            "a <snippet> whose end is not a decimal integer: '1_0'",
        ),
        (
            '<snippet path="a" start="\u0663" end="3" reason="search" label="search hit"/>',
            "a <snippet> whose start is not a decimal integer: '\u0663'",
        ),
        (
            '<snippet path="a" start="1" end="1" reason="x" label="search hit"/>',
            "reason must be 'failure', 'reference' or 'search', got 'x'",
        ),
        (
            '<snippet path="a" start="1" end="1" reason="search" label="L"/>',
            "a <snippet> whose label 'L' is not one of reason 'search'",
        ),
        (
            '<snippet path="a" start="1" end="1" reason="search" label="failure evidence"/>',
            "a <snippet> whose label 'failure evidence' is not one of reason 'search'",
        ),
        (f'\u00a0<snippet path="a" {SNIPPET_ATTRS}/>', "text outside a <snippet> element"),
        (f'<snippet path="a" {SNIPPET_ATTRS}/>\u00a0', UNEXPECTED_SNIPPET),
        (
            f'<snippet path="a" {SNIPPET_ATTRS} encoding="base64">/w==</snippet>',
            "base64 of bytes that are not UTF-8",
        ),
        (f'<snippet path-base64="/w==" {SNIPPET_ATTRS}/>', "base64 of bytes that are not UTF-8"),
        (f'<snippet path="a" {SNIPPET_ATTRS}>\ud800</snippet>', "a lone surrogate, which XML cannot carry"),
    ],
)
def test_parse_xml_section_reads_only_what_render_block_writes(section: str, message: str) -> None:
    with pytest.raises(ValueError, match=exactly(message)) as caught:
        parse_xml_section(section)
    assert type(caught.value) is ValueError and caught.value.__cause__ is None


@pytest.mark.parametrize(("text", "name"), [(b"<snippet/>", "bytes"), (None, "NoneType"), (5, "int")])
def test_parse_xml_section_takes_only_a_str(text: Any, name: str) -> None:
    with pytest.raises(TypeError, match=exactly(f"text must be a str, not {name}")):
        parse_xml_section(text)


# --- 2. render_omitted, _used and _candidate_cost ------------------------------------------------

A_PY = "def f():\n    return 1\n\ndef g():\n    return 2\n"
F_TEXT = "def f():\n    return 1\n"
BIG = "".join(f"line {i:03}\n" for i in range(1, 101))  # 100 lines of 9 characters
WIDE = "y = " + " + ".join(f"v{i}" for i in range(120)) + "\n"  # one line of 732 characters
G1 = "".join(f"a{i} = {i}\n" for i in range(1, 31))  # 252 characters
G2 = "".join(f"b{i} = {i}\n" for i in range(1, 31))  # 252 characters
FILES = {
    "src/a.py": A_PY,
    "big.txt": BIG,
    "`tick.py": "tick\n",
    "new\nline.py": "n1\nn2\n",
    "g.py": G1 + G2,
    "a``b.py": WIDE,
}

# Reasons in input order search, failure, reference: the count line sorts them.
OMITTING = [
    cand("a``b.py", 1, 1, WIDE, "search", 123456789),  # budget; an int score is printed whole
    cand("big.txt", 1, 100, BIG, "failure", 1),  # budget, in the failing file (its label is costed)
    cand("src/a.py", 1, 2, F_TEXT, "reference", 2.5),  # selected
    cand("src/a.py", 2, 4, "    return 1\n\ndef g():\n", "search", 7),  # overlaps #2
    cand("`tick.py", 1, 1, "tick\n", "search", 3.14159),  # selected
    cand("`tick.py", 1, 1, "tick\n", "search", 0.314159),  # overlaps #4
    cand("new\nline.py", 1, 2, "n1\nXX\n", "search", 12345.678),  # stale
    cand("src/a.py", 4, 5, "def g():\n    return 3\n", "reference", 2),  # stale
    cand("g.py", 1, 30, G1, "search", 1, group="pair"),  # group
    cand("g.py", 31, 60, G2, "search", 0, group="pair"),  # group
]


def read_files(path: str) -> bytes | None:
    text = FILES.get(path)
    return None if text is None else text.encode()


def omitting_result(cost: Cost | None, budget: int) -> rc.BuildResult:
    data: dict[str, Any] = {"candidates": OMITTING, "failure_file": "big.txt"}
    data.update({"max_chars": budget} if cost is None else {"budget": budget, "cost": cost})
    return rc.build(data, verify=read_files)


def omitting_report(used: str, wide: str, big: str, g1: str, g2: str) -> str:
    return (
        "## Omitted\n"
        "\n"
        f"10 candidates (failure 1, reference 2, search 7); 2 selected, {used}; "
        "8 omitted (overlap 2, budget 2, group 2, stale 2).\n"
        "\n"
        f"- #1 `big.txt:1-100` failure, score 1: budget ({big})\n"
        f"- #7 `src/a.py:4-5` reference, score 2: {STALE}\n"
        f"- #0 ```a``b.py:1-1``` search, score 123456789: budget ({wide})\n"
        f"- #6 `new\\u000aline.py:1-2` search, score 1.235e+04: {STALE}\n"
        "- #3 `src/a.py:2-4` search, score 7: overlaps #2 `src/a.py:1-2` (reference)\n"
        f"- #8 `g.py:1-30` search, score 1: group ({g1})\n"
        "- #5 `` `tick.py:1-1 `` search, score 0.3142: overlaps #4 `` `tick.py:1-1 `` (search)\n"
        f"- #9 `g.py:31-60` search, score 0: group ({g2})\n"
    )


def figures(unit: str, *counts: int) -> tuple[str, ...]:
    return tuple(f"{count} {unit}" for count in counts)


# (cost, budget, used, the costs of #0, #1, #8 and #9). Character figures: #1's Markdown block is
# a 57-character header (its label says "in the failing file"), "```\n", 900, "```\n\n"; its XML
# block with line numbers a 106-character tag, 100 lines of "NNN | " + 9 characters, "</snippet>\n".
OMITTING_COSTS = [
    pytest.param(
        None,
        300,
        "27 characters of content",
        figures("characters of content", 732, 900, 252, 252),
        id="content-chars",
    ),
    pytest.param(
        Cost(template="markdown"),
        300,
        "128 of 300 characters counted on the markdown section",
        figures("characters as a markdown block", 776, 966, 294, 295),
        id="markdown-chars",
    ),
    pytest.param(
        Cost(template="xml", line_numbers=True),
        400,
        "231 of 400 characters counted on the xml section",
        figures("characters as a xml block", 824, 1617, 488, 489),
        id="xml-numbered-chars",
    ),
    pytest.param(
        Cost(unit="tokens", encoding="cl100k_base"),
        100,
        "10 of 100 cl100k_base tokens counted on the content",
        figures("cl100k_base tokens of content", 362, 400, 180, 180),
        id="content-tokens",
    ),
    pytest.param(
        Cost(unit="tokens", template="markdown"),
        100,
        "45 of 100 o200k_base tokens counted on the markdown section",
        figures("o200k_base tokens as a markdown block", 380, 419, 196, 196),
        id="markdown-tokens",
    ),
    pytest.param(
        Cost(unit="tokens", encoding="cl100k_base", template="xml", line_numbers=True),
        150,
        "73 of 150 cl100k_base tokens counted on the xml section",
        figures("cl100k_base tokens as a xml block", 393, 739, 276, 267),
        id="xml-numbered-tokens",
    ),
]


@pytest.mark.parametrize(("cost", "budget", "used", "costs"), OMITTING_COSTS)
def test_render_omitted_whole_report_under_each_cost_model(
    cost: Cost | None, budget: int, used: str, costs: tuple[str, ...]
) -> None:
    result = omitting_result(cost, budget)
    assert result.selected == (2, 4)
    assert [(o.index, o.reason, o.overlaps) for o in result.omitted] == [
        (1, "budget", None),
        (7, "stale", None),
        (0, "budget", None),
        (6, "stale", None),
        (3, "overlap", 2),
        (8, "group", None),
        (5, "overlap", 4),
        (9, "group", None),
    ]
    assert render_omitted(result, as_candidates(OMITTING)) == omitting_report(used, *costs)


def token_count(encoding: str, text: str) -> int:
    return TokenCounter(encoding).count_one(text)


@pytest.mark.parametrize(("cost", "budget", "used", "costs"), OMITTING_COSTS)
def test_the_reported_figures_are_the_costs_of_content_or_block(
    cost: Cost | None, budget: int, used: str, costs: tuple[str, ...]
) -> None:
    # Where the hard-coded figures above come from: the content, or the candidate's block with
    # the result's template and line numbers (a failing file's label included), measured in
    # the unit; and the selection's cost from the result.
    result = omitting_result(cost, budget)
    unit = cost if cost is not None else Cost()
    for index, figure in zip((0, 1, 8, 9), costs, strict=True):
        c = OMITTING[index]
        text = c["content"]
        if unit.template is not None:
            text = block(
                c["path"],
                c["start"],
                c["end"],
                c["content"],
                c["reason"],
                failing=c["path"] == "big.txt",
                template=unit.template,
                line_numbers=unit.line_numbers,
            )
        count = len(text) if unit.encoding is None else token_count(unit.encoding, text)
        assert figure.split(" ")[0] == str(count)
        assert _candidate_cost(result, as_candidates(OMITTING)[index]) == figure
    assert _used(result) == used
    assert used.split(" ")[0] == str(result.used if cost is not None else result.used_chars)


def test_render_omitted_with_nothing_omitted_has_no_blank_line_after_the_count() -> None:
    cands = [cand("b.py", 1, 1, "b\n", "search", 1), cand("a.py", 1, 2, "a\nb\n", "failure", 1)]
    result = rc.build({"candidates": cands, "max_chars": 100})
    assert render_omitted(result, as_candidates(cands)) == (
        "## Omitted\n"
        "\n"
        "2 candidates (failure 1, search 1); 2 selected, 6 characters of content; "
        "0 omitted (overlap 0, budget 0).\n"
    )
    rendered = rc.build({"candidates": cands, "budget": 100, "cost": {"template": "markdown"}})
    assert render_omitted(rendered, as_candidates(cands)) == (
        "## Omitted\n"
        "\n"
        "2 candidates (failure 1, search 1); 2 selected, 94 of 100 characters counted on the markdown "
        "section; 0 omitted (overlap 0, budget 0).\n"
    )


def test_render_omitted_group_count_without_stale_and_stale_count_without_group() -> None:
    cands = [
        cand("a.py", 2, 2, "yyyy\n", "search", 1, group=(1, 2)),
        cand("a.py", 3, 3, "zz\n", "search", 1.0, group=(1, 2)),
        cand("a.py", 1, 1, "x\n", "reference", 2),
    ]
    result = rc.build({"candidates": cands, "max_chars": 9})
    assert render_omitted(result, as_candidates(cands)) == (
        "## Omitted\n"
        "\n"
        "3 candidates (reference 1, search 2); 1 selected, 2 characters of content; "
        "2 omitted (overlap 0, budget 0, group 2).\n"
        "\n"
        "- #0 `a.py:2-2` search, score 1: group (5 characters of content)\n"
        "- #1 `a.py:3-3` search, score 1: group (3 characters of content)\n"
    )
    files = {"a.py": b"x\nyyyy\nzz\n"}
    stale = [cand("a.py", 1, 1, "x\n", "search", 2), cand("a.py", 2, 2, "old\n", "failure", 0.25)]
    checked = rc.build({"candidates": stale, "max_chars": 9}, verify=files.get)
    assert render_omitted(checked, as_candidates(stale)) == (
        "## Omitted\n"
        "\n"
        "2 candidates (failure 1, search 1); 1 selected, 2 characters of content; "
        "1 omitted (overlap 0, budget 0, stale 1).\n"
        "\n"
        f"- #1 `a.py:2-2` failure, score 0.25: {STALE}\n"
    )


def test_render_omitted_takes_reason_members_and_a_result_without_cost() -> None:
    # A duck-typed result (no cost, no failure files) and candidates with Reason members.
    cands = [
        types.SimpleNamespace(path="z.py", start=1, end=2, content="abc", reason=Reason.SEARCH, score=0.1),
        types.SimpleNamespace(path="y.py", start=3, end=3, content="d", reason=Reason.FAILURE, score=-2),
    ]
    omission = rc.Omission(0, 1, "budget")
    result = duck(items=(cands[1],), selected=(1,), omitted=(omission,), used_chars=1)
    assert _used(result) == "1 characters of content"
    assert _candidate_cost(result, cands[0]) == "3 characters of content"
    assert render_omitted(result, cands) == (
        "## Omitted\n"
        "\n"
        "2 candidates (failure 1, search 1); 1 selected, 1 characters of content; "
        "1 omitted (overlap 0, budget 1).\n"
        "\n"
        "- #0 `z.py:1-2` search, score 0.1: budget (3 characters of content)\n"
    )


# _used and _candidate_cost of one three-character candidate "xy\n" at a.py:1-1 under each cost.
# Its Markdown block: "### a.py:1-1 (search hit)\n" (26), "```python\n" (10), 3, "```\n\n" (5) = 44;
# its XML block with line numbers: a 74-character tag, "1 | xy\n" (7), "</snippet>\n" (11) = 92.
USED = [
    pytest.param(None, "3 characters of content", "3 characters of content", id="content-chars"),
    pytest.param(Cost(order="file"), "3 characters of content", "3 characters of content", id="file-order"),
    pytest.param(
        Cost(template="markdown"),
        "44 of 100 characters counted on the markdown section",
        "44 characters as a markdown block",
        id="markdown-chars",
    ),
    pytest.param(
        Cost(template="xml", line_numbers=True),
        "92 of 100 characters counted on the xml section",
        "92 characters as a xml block",
        id="xml-numbered-chars",
    ),
    pytest.param(
        Cost(unit="tokens", encoding="cl100k_base"),
        "2 of 100 cl100k_base tokens counted on the content",
        "2 cl100k_base tokens of content",
        id="content-tokens",
    ),
    pytest.param(
        Cost(unit="tokens", template="markdown"),
        "18 of 100 o200k_base tokens counted on the markdown section",
        "18 o200k_base tokens as a markdown block",
        id="markdown-tokens",
    ),
]


@pytest.mark.parametrize(("cost", "used", "costed"), USED)
def test_used_and_candidate_cost_of_one_item(cost: Cost | None, used: str, costed: str) -> None:
    item = cand("a.py", 1, 1, "xy\n", "search", 1)
    data: dict[str, Any] = {"candidates": [item]}
    data.update({"max_chars": 100} if cost is None else {"budget": 100, "cost": cost})
    result = rc.build(data)
    assert _used(result) == used
    assert _candidate_cost(result, as_candidates([item])[0]) == costed


def test_candidate_cost_labels_a_failing_files_block() -> None:
    item = cand("a.py", 1, 1, "xy\n", "search", 1)
    result = rc.build({"candidates": [item], "budget": 100, "cost": {"template": "markdown"}})
    failing = rc.build(
        {"candidates": [item], "budget": 100, "cost": {"template": "markdown"}, "failure_file": "a.py"}
    )
    # " in the failing file" is 20 characters more.
    [c] = as_candidates([item])
    assert (_candidate_cost(result, c), _candidate_cost(failing, c)) == (
        "44 characters as a markdown block",
        "64 characters as a markdown block",
    )
    assert (_used(result), _used(failing)) == (
        "44 of 100 characters counted on the markdown section",
        "64 of 100 characters counted on the markdown section",
    )
    # A duck result with a cost but no failure_files: nothing is failing.
    assert _candidate_cost(duck(cost=Cost(template="xml")), c) == "88 characters as a xml block"


@pytest.mark.parametrize("written", ["./big.txt", "big.txt", ".//big.txt", "././big.txt"])
@pytest.mark.parametrize("template", ["markdown", "xml"])
def test_an_omitted_candidate_is_costed_as_the_build_costed_it_at_its_canonical_path(
    written: str, template: str
) -> None:
    # A block's cost is counted on the canonical path, which is also the form of the failing
    # files: a path written another way must not lengthen the header or lose the failing label.
    content = "z" * 40 + "\n"
    expected = len(block("big.txt", 1, 1, content, failing=True, template=template))
    item = cand(written, 1, 1, content, "search", 1)
    for budget, reason in ((expected - 1, "budget"), (expected, None)):
        result = rc.build(
            {
                "candidates": [item],
                "budget": budget,
                "cost": {"template": template},
                "failure_file": "big.txt",
            }
        )
        [c] = as_candidates([item])
        assert _candidate_cost(result, c) == f"{expected} characters as a {template} block"
        assert [o.reason for o in result.omitted] == ([reason] if reason else [])
    tokens = rc.build(
        {
            "candidates": [item],
            "budget": 1,
            "cost": {"unit": "tokens", "encoding": "cl100k_base", "template": template},
            "failure_file": "big.txt",
        }
    )
    counted = TokenCounter("cl100k_base").count_one(
        block("big.txt", 1, 1, content, failing=True, template=template)
    )
    assert _candidate_cost(tokens, c) == f"{counted} cl100k_base tokens as a {template} block"


@pytest.mark.parametrize(
    ("score", "text"),
    [
        (3.14159, "3.142"),
        (12345.678, "1.235e+04"),
        (2.0, "2"),
        (-0.0, "-0"),
        (1e-05, "1e-05"),
        (0.30000000000000004, "0.3"),
        (123456789, "123456789"),
        (-7, "-7"),
        (10**20, "100000000000000000000"),
    ],
)
def test_score_is_four_significant_digits_for_a_float_and_whole_for_an_int(score: float, text: str) -> None:
    assert _score(score) == text


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("a.py:1-2", "`a.py:1-2`"),
        ("a`b", "``a`b``"),
        ("a``b", "```a``b```"),
        ("`a", "`` `a ``"),
        ("a`", "`` a` ``"),
        ("`", "`` ` ``"),
        ("``a```", "```` ``a``` ````"),
        ("", "``"),
    ],
)
def test_code_span_is_longer_than_any_run_and_padded_by_an_edge_backtick(text: str, span: str) -> None:
    assert _code_span(text) == span


# --- 3. sections, plan, render -------------------------------------------------------------------

ORDERED = [
    cand("b.py", 3, 3, "b3\n", "search", 9),
    cand("a.py", 1, 1, "a1\n", "search", 8),
    cand("b.py", 1, 1, "b1\n", "search", 7),
]


def ordered_result(cost: Cost) -> rc.BuildResult:
    return rc.build({"candidates": ORDERED, "budget": 1000, "cost": cost})


def xml_block(path: str, line: int, body: str) -> str:
    return (
        f'<snippet path="{path}" start="{line}" end="{line}" reason="search" label="search hit">'
        f"{body}</snippet>\n"
    )


def md_block(path: str, line: int, body: str) -> str:
    return f"### {path}:{line}-{line} (search hit)\n```python\n{body}```\n\n"


def test_render_markdown_with_nothing_selected() -> None:
    empty = rc.build({"candidates": [], "max_chars": 10})
    assert render_markdown(empty) == "## Code context\n\n(no code selected)\n"
    none_fit = rc.build({"candidates": [cand("a.py", 1, 1, "x\n", "search", 1)], "max_chars": 1})
    assert render_markdown(none_fit) == "## Code context\n\n(no code selected)\n"


def test_render_markdown_is_markdown_in_the_order_asked_whatever_the_cost() -> None:
    result = ordered_result(Cost(template="xml", line_numbers=True, order="file"))
    assert render_markdown(result) == (
        "## Code context\n"
        "\n"
        "### b.py:3-3 (search hit)\n```python\nb3\n```\n\n"
        "### a.py:1-1 (search hit)\n```python\na1\n```\n\n"
        "### b.py:1-1 (search hit)\n```python\nb1\n```\n"
    )
    assert render_markdown(result, order="file") == (
        "## Code context\n"
        "\n"
        "### b.py:1-1 (search hit)\n```python\nb1\n```\n\n"
        "### b.py:3-3 (search hit)\n```python\nb3\n```\n\n"
        "### a.py:1-1 (search hit)\n```python\na1\n```\n"
    )
    with pytest.raises(ValueError, match=exactly("order must be 'rank' or 'file', got 'path'")):
        render_markdown(result, order="path")


def test_the_json_form_of_a_result_is_refused_by_name() -> None:
    result = rc.build({"candidates": [cand("a.py", 1, 1, "x\n", "search", 1)], "max_chars": 10})
    for call in (render, plan, render_markdown):
        with pytest.raises(
            TypeError, match=exactly("result must be a BuildResult (or have its attributes), not dict")
        ):
            call(result.to_dict())  # type: ignore[operator]


def test_render_takes_each_option_left_none_from_the_results_cost() -> None:
    result = ordered_result(Cost(template="xml", line_numbers=True, order="file"))
    assert render(result) == (
        xml_block("b.py", 1, "1 | b1\n") + xml_block("b.py", 3, "3 | b3\n") + xml_block("a.py", 1, "1 | a1\n")
    )
    assert render(result, template="markdown") == (
        md_block("b.py", 1, "1 | b1\n") + md_block("b.py", 3, "3 | b3\n") + md_block("a.py", 1, "1 | a1\n")
    )
    assert render(result, line_numbers=False) == (
        xml_block("b.py", 1, "b1\n") + xml_block("b.py", 3, "b3\n") + xml_block("a.py", 1, "a1\n")
    )
    assert render(result, order="rank") == (
        xml_block("b.py", 3, "3 | b3\n") + xml_block("a.py", 1, "1 | a1\n") + xml_block("b.py", 1, "1 | b1\n")
    )
    # A cost without a template: Markdown in the cost's order.
    file_order = ordered_result(Cost(order="file"))
    assert render(file_order) == md_block("b.py", 1, "b1\n") + md_block("b.py", 3, "b3\n") + md_block(
        "a.py", 1, "a1\n"
    )


def test_render_defaults_without_a_cost() -> None:
    result = ordered_result(Cost(template="xml", line_numbers=True, order="file"))
    costless = duck(items=result.items, selected=result.selected)
    rank_markdown = md_block("b.py", 3, "b3\n") + md_block("a.py", 1, "a1\n") + md_block("b.py", 1, "b1\n")
    assert render(costless) == rank_markdown
    assert render(duck(items=result.items, selected=result.selected, cost=None)) == rank_markdown
    assert render(ordered_result(Cost())) == rank_markdown
    assert render(duck(items=(), selected=())) == ""


def test_plan_file_order_sorts_by_start_end_and_rank_within_a_path() -> None:
    items = (
        Candidate("a.py", 5, 6, "r0\n", "search", 1),
        Candidate("b.py", 2, 2, "r1\n", "failure", 1),
        Candidate("a.py", 1, 3, "r2\n", "reference", 1),
        Candidate("a.py", 1, 2, "r3\n", "search", 1),
        Candidate("a.py", 1, 2, "r4\n", "search", 1),
        Candidate("c.py", 9, 9, "r5\n", "search", 1),
        Candidate("b.py", 1, 1, "r6\n", "search", 1),
    )
    result = duck(items=items, selected=(40, 41, 42, 43, 44, 45, 46), failure_files=("b.py",))
    blocks = plan(result, order="file")
    assert [(b.index, b.rank, b.position) for b in blocks] == [
        (43, 3, 0),
        (44, 4, 1),
        (42, 2, 2),
        (40, 0, 3),
        (46, 6, 4),
        (41, 1, 5),
        (45, 5, 6),
    ]
    assert blocks[5] == RenderedBlock(
        index=41,
        rank=1,
        position=5,
        text="### b.py:2-2 (failure evidence in the failing file)\n```python\nr1\n```\n\n",
    )
    assert blocks[2].to_dict() == {
        "index": 42,
        "rank": 2,
        "position": 2,
        "text": "### a.py:1-3 (referenced definition)\n```python\nr2\n```\n\n",
    }
    # The defaults: Markdown, no line numbers, rank order (position == rank).
    ranked = plan(result)
    assert [(b.index, b.rank, b.position) for b in ranked] == [(40 + r, r, r) for r in range(7)]
    assert ranked[0].text == "### a.py:5-6 (search hit)\n```python\nr0\n```\n\n"
    numbered = plan(duck(items=items[:1], selected=(3,)), template="xml", line_numbers=True)
    assert [b.to_dict() for b in numbered] == [
        {
            "index": 3,
            "rank": 0,
            "position": 0,
            "text": '<snippet path="a.py" start="5" end="6" reason="search" label="search hit">'
            "5 | r0\n</snippet>\n",
        }
    ]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.py", "python"),
        ("a.PY", "python"),
        ("src/a.Pyi", "python"),
        ("a/b.py", "python"),
        ("a.b.rs", "rust"),
        ("x.yml", "yaml"),
        (".bashrc", ""),
        ("a/.bashrc", ""),
        (".py", ""),
        ("x/.py", ""),
        ("a/b/.py", ""),  # the last segment's dot, not one after the first "/"
        ("a/b.d/.rs", ""),
        ("x.", ""),
        ("Makefile", ""),
        ("dir.d/file", ""),
        ("dir.py/file", ""),
        ("a.p\u00e9", ""),
        ("a.\u212at", ""),  # KELVIN SIGN lower-cases to "k": not "kt"
        ("a.txt", ""),
        ("", ""),
    ],
)
def test_block_language_edge_cases(path: str, language: str) -> None:
    assert block_language(path) == language


@pytest.mark.parametrize(
    ("content", "start", "numbered"),
    [
        ("", 7, "7 | "),
        ("\n", 5, "5 | \n"),
        ("a\n", 1, "1 | a\n"),
        ("a\n\n", 3, "3 | a\n4 | \n"),
        ("a\nb", 9, " 9 | a\n10 | b"),
        ("a\nb\n", 9, " 9 | a\n10 | b\n"),
        ("a\nb\n", 8, "8 | a\n9 | b\n"),
        ("a\r\nb\rc", 1, "1 | a\r\n2 | b\rc"),
        ("x\n" * 3, 98, " 98 | x\n 99 | x\n100 | x\n"),
    ],
)
def test_number_lines_exact(content: str, start: int, numbered: str) -> None:
    assert number_lines(content, start) == numbered


@pytest.mark.parametrize(
    ("text", "ticks"),
    [("", "```"), ("no ticks", "```"), ("a`b``c", "```"), ("```", "````"), ("x ```` y ``", "`````")],
)
def test_fence_exact(text: str, ticks: str) -> None:
    assert fence(text) == ticks


@pytest.mark.parametrize(
    ("path", "escaped"),
    [
        ("src/a.py", "src/a.py"),
        ("a\nb", "a\\u000ab"),
        ("\r\n", "\\u000d\\u000a"),
        ("\t", "\\u0009"),
        ("\x00\x1f\x20", "\\u0000\\u001f "),
        ("~\x7f", "~\\u007f"),
        ("\x85", "\\u0085"),
        ("\x9f\xa0", "\\u009f\xa0"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\u200b\u00e9", "\u200b\u00e9"),
    ],
)
def test_header_path_escapes(path: str, escaped: str) -> None:
    assert header_path(path) == escaped


def test_markdown_block_exact_with_escaped_header_and_longer_fence() -> None:
    assert block("a\nb.py", 2, 3, "x ``` y", "failure", failing=True) == (
        "### a\\u000ab.py:2-3 (failure evidence in the failing file)\n````python\nx ``` y\n````\n\n"
    )
    assert block("\x7f.rs", 1, 1, "z\n", Reason.REFERENCE, line_numbers=True) == (
        "### \\u007f.rs:1-1 (referenced definition)\n```rust\n1 | z\n```\n\n"
    )


@pytest.mark.parametrize(
    ("reason", "failing", "text"),
    [
        ("failure", False, "failure evidence"),
        ("reference", False, "referenced definition"),
        ("search", False, "search hit"),
        ("failure", True, "failure evidence in the failing file"),
        ("reference", True, "referenced definition in the failing file"),
        (Reason.SEARCH, True, "search hit in the failing file"),
    ],
)
def test_label_exact(reason: str, failing: bool, text: str) -> None:
    assert label(reason, failing) == text


def test_xml_escapes_in_path_and_content_exactly() -> None:
    path = 'a&b<c>d\re"f\tg\nh.py'
    content = 'x & y < z > w\r\n"q"\tt\n'
    text = block(path, 2, 3, content, "reference", failing=True, template="xml")
    assert text == (
        '<snippet path="a&amp;b&lt;c&gt;d&#13;e&quot;f&#9;g&#10;h.py" start="2" end="3" '
        'reason="reference" label="referenced definition in the failing file">'
        'x &amp; y &lt; z &gt; w&#13;\n"q"\tt\n</snippet>\n'
    )
    assert parse_xml_section(text) == [
        {
            "path": path,
            "start": 2,
            "end": 3,
            "reason": "reference",
            "label": "referenced definition in the failing file",
            "content": content,
        }
    ]
    # XML 1.0 carries DEL and NEL as they are.
    assert block("\x7f\x85", 1, 1, "\x7f\x85", template="xml") == (
        '<snippet path="\x7f\x85" start="1" end="1" reason="search" label="search hit">\x7f\x85</snippet>\n'
    )


def test_xml_base64_for_a_control_character_in_path_or_body() -> None:
    assert block("a\x01b.py", 1, 1, "plain", template="xml") == (
        '<snippet path-base64="YQFiLnB5" start="1" end="1" reason="search" label="search hit">'
        "plain</snippet>\n"
    )
    assert block("a.py", 1, 1, "x\x00y", template="xml") == (
        '<snippet path="a.py" start="1" end="1" reason="search" label="search hit" encoding="base64">'
        "eAB5</snippet>\n"
    )
    # Line numbers are part of the body that is encoded: "1 | x\x00y".
    assert block("a\x01b.py", 1, 1, "x\x00y", "failure", template="xml", line_numbers=True) == (
        '<snippet path-base64="YQFiLnB5" start="1" end="1" reason="failure" label="failure evidence" '
        'encoding="base64">MSB8IHgAeQ==</snippet>\n'
    )
    # A lone surrogate is encoded with surrogatepass.
    assert block("p", 1, 1, "\ud800", template="xml") == (
        '<snippet path="p" start="1" end="1" reason="search" label="search hit" encoding="base64">'
        "7aCA</snippet>\n"
    )
