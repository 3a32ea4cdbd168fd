"""The block format and the composer: Python (the spec) against Rust, XML round trips,
unbreakable Markdown fences, labels, line numbers, and ``plan``/``render`` on real builds."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ET
from typing import Any

import bugcontext
import pytest
from bugcontext import _core
from bugcontext.core.composer import (
    RenderedBlock,
    block_language,
    label,
    number_lines,
    parse_xml_section,
    plan,
    render,
    render_block,
)
from conftest import build_inputs, examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

TEMPLATES = ["markdown", "xml"]
REASONS: list[Any] = ["failure", "reference", "search", *bugcontext.Reason]
MAX_LINE = 2**31 - 1

# Characters that exercise every rule: fences, escapes, line breaks, XML-invalid characters
# (C0 controls, U+FFFE/U+FFFF, lone surrogates), XML-valid oddities, astral characters.
NASTY = [
    "`", "``", "```", "````", "\n", "\r", "\r\n", "\t", " ", "&", "<", ">", '"', "'", "]]>",
    "&amp;", "&#13;", "\x00", "\x01", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f", "\x85", "\u2028",
    "\ud800", "\udfff", "\ud83d\ude00", "\ufffe", "\uffff", "\ufffd", "\ufdd0", "\U0010ffff",
    "😀", "日本", "é", "a", "x.py", "/", ".", "|", "1",
]  # fmt: skip
ANY_CHAR_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()))
TEXT = st.one_of(
    st.text(),
    ANY_CHAR_TEXT,
    st.lists(st.sampled_from(NASTY), max_size=12).map("".join),
)
PATHS = st.one_of(
    st.text(),
    ANY_CHAR_TEXT,
    st.lists(st.sampled_from(NASTY), max_size=6).map("".join),
    st.sampled_from(["src/a.py", "a/b.RS", "x.tsx", "Makefile", ".bashrc", "a.b/c", "x.yml", "q.cpp"]),
)
LINES = st.one_of(
    st.integers(1, 120),
    st.integers(1, MAX_LINE),
    st.sampled_from([1, 9, 10, 99, 100, MAX_LINE - 1, MAX_LINE]),
)


def py_block(*args: Any, **kwargs: Any) -> str:
    return render_block(*args, **kwargs)


def rust_block(*args: Any, **kwargs: Any) -> str:
    text: str = _core.render_block(*args, **kwargs)
    return text


# --- Rust == Python -------------------------------------------------------------------


@settings(max_examples=examples(3000), deadline=None)
@given(
    path=PATHS,
    start=LINES,
    end=LINES,
    content=TEXT,
    reason=st.sampled_from(REASONS),
    failing=st.booleans(),
    template=st.sampled_from(TEMPLATES),
    line_numbers=st.booleans(),
)
@example(
    path="a.py", start=1, end=1, content="", reason="search", failing=False, template="xml", line_numbers=True
)
@example(
    path="a\x00.py",
    start=MAX_LINE,
    end=MAX_LINE,
    content="x\n```\ny\r\n\x1b\n",
    reason="failure",
    failing=True,
    template="xml",
    line_numbers=True,
)
def test_rust_renders_exactly_like_python(
    path: str,
    start: int,
    end: int,
    content: str,
    reason: str,
    failing: bool,
    template: str,
    line_numbers: bool,
) -> None:
    args = (path, start, end, content, reason)
    kwargs = {"failing": failing, "template": template, "line_numbers": line_numbers}
    assert rust_block(*args, **kwargs) == py_block(*args, **kwargs)


@pytest.mark.parametrize("renderer", [py_block, rust_block])
def test_invalid_template_or_reason(renderer: Any) -> None:
    ok = {"failing": False, "template": "xml", "line_numbers": False}
    with pytest.raises(ValueError, match="template"):
        renderer("a.py", 1, 1, "x", "search", failing=False, template="html", line_numbers=False)
    with pytest.raises(ValueError, match="template"):
        renderer("a.py", 1, 1, "x", "search", failing=False, template="XML", line_numbers=False)
    with pytest.raises(ValueError, match="reason"):
        renderer("a.py", 1, 1, "x", "Search", **ok)
    with pytest.raises(ValueError, match="reason"):
        renderer("a.py", 1, 1, "x", "budget", **{**ok, "failing": True})
    with pytest.raises(TypeError):
        renderer("a.py", 1, 1, b"x", "search", **ok)


# --- XML round trip -------------------------------------------------------------------


def check_xml_round_trip(block: str, path: str, start: int, end: int, body: str, reason: str) -> None:
    [parsed] = parse_xml_section(block)
    assert parsed == {
        "path": path,
        "start": start,
        "end": end,
        "reason": str(reason),
        "label": parsed["label"],
        "content": body,
    }
    # Read directly with ElementTree as well: the element, its attributes in order, base64
    # exactly where a character XML cannot carry forced it.
    el = ET.fromstring(block)
    assert el.tag == "snippet" and len(el) == 0
    keys = list(el.attrib)
    invalid = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
    assert keys[0] == ("path-base64" if invalid.search(path) else "path")
    assert keys[1:5] == ["start", "end", "reason", "label"]
    assert keys[5:] == (["encoding"] if invalid.search(body) else [])
    if "encoding" in el.attrib:
        assert el.attrib["encoding"] == "base64"
        raw = base64.b64decode(el.text or "", validate=True)
        assert raw.decode("utf-8", "surrogatepass") == body


@settings(max_examples=examples(1500), deadline=None)
@given(
    path=PATHS,
    start=LINES,
    end=LINES,
    content=TEXT,
    reason=st.sampled_from(REASONS),
    failing=st.booleans(),
    line_numbers=st.booleans(),
)
@example(
    path="a.py",
    start=1,
    end=2,
    content="]]>\r\n<![CDATA[x]]>",
    reason="search",
    failing=False,
    line_numbers=False,
)
@example(
    path="\ud800/\t\n\r",
    start=1,
    end=2,
    content="\udc00\r\n",
    reason="search",
    failing=True,
    line_numbers=False,
)
@example(path=" a ", start=1, end=1, content="  \n\t ", reason="reference", failing=False, line_numbers=False)
def test_xml_round_trips_any_text(
    path: str, start: int, end: int, content: str, reason: str, failing: bool, line_numbers: bool
) -> None:
    body = number_lines(content, start) if line_numbers else content
    for renderer in (py_block, rust_block):
        block = renderer(
            path, start, end, content, reason, failing=failing, template="xml", line_numbers=line_numbers
        )
        check_xml_round_trip(block, path, start, end, body, reason)
        assert ET.fromstring(block).attrib["label"] == label(reason, failing)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(PATHS, TEXT), max_size=6))
def test_xml_section_of_many_blocks_parses_back(items: list[tuple[str, str]]) -> None:
    section = "".join(
        render_block(p, i + 1, i + 2, c, "search", failing=False, template="xml", line_numbers=False)
        for i, (p, c) in enumerate(items)
    )
    parsed = parse_xml_section(section)
    assert [(s["path"], s["start"], s["content"]) for s in parsed] == [
        (p, i + 1, c) for i, (p, c) in enumerate(items)
    ]


def test_xml_escapes() -> None:
    block = render_block(
        'we"ird\t<p>&\r\n.py', 3, 4, "a < b && c > d\r\n]]>\n", "reference",
        failing=False, template="xml", line_numbers=False,
    )  # fmt: skip
    assert block == (
        '<snippet path="we&quot;ird&#9;&lt;p&gt;&amp;&#13;&#10;.py" start="3" end="4" '
        'reason="reference" label="referenced definition">'
        "a &lt; b &amp;&amp; c &gt; d&#13;\n]]&gt;\n</snippet>\n"
    )
    assert "encoding" not in block  # all of it is XML-valid


def test_xml_base64_for_controls_and_surrogates() -> None:
    block = render_block(
        "a\x00b", 1, 1, "\x1b[31m\ud800", "search", failing=True, template="xml", line_numbers=False
    )
    expected_path = base64.b64encode(b"a\x00b").decode()
    expected_body = base64.b64encode("\x1b[31m\ud800".encode("utf-8", "surrogatepass")).decode()
    assert block == (
        f'<snippet path-base64="{expected_path}" start="1" end="1" reason="search" '
        f'label="search hit in the failing file" encoding="base64">{expected_body}</snippet>\n'
    )
    # A surrogate pair held as two code points comes back as the same two code points.
    pair = "\ud83d\ude00"
    [parsed] = parse_xml_section(
        render_block("p", 1, 1, pair, "search", failing=False, template="xml", line_numbers=False)
    )
    assert parsed["content"] == pair and len(parsed["content"]) == 2


# --- Markdown -------------------------------------------------------------------------


def closing_fence(line: str, ticks: int) -> bool:
    """Whether ``line`` (without its line ending) closes a backtick fence of ``ticks``
    (CommonMark: up to 3 spaces, at least as many backticks, then only spaces or tabs)."""
    return re.fullmatch(rf" {{0,3}}`{{{ticks},}}[ \t]*", line) is not None


@settings(max_examples=examples(1000), deadline=None)
@given(
    path=st.sampled_from(["a.py", "b.md", "c"]),
    start=LINES,
    content=st.one_of(
        TEXT, st.lists(st.sampled_from(["`" * k for k in range(1, 9)] + ["\n", "x", " "])).map("".join)
    ),
    line_numbers=st.booleans(),
)
def test_markdown_fence_cannot_be_broken(path: str, start: int, content: str, line_numbers: bool) -> None:
    block = render_block(
        path, start, start, content, "search", failing=False, template="markdown", line_numbers=line_numbers
    )
    body = number_lines(content, start) if line_numbers else content
    header = f"### {path}:{start}-{start} (search hit)\n"
    assert block.startswith(header)
    opening, rest = block[len(header) :].split("\n", 1)
    ticks = len(opening) - len(opening.lstrip("`"))
    assert ticks >= 3 and opening[ticks:] == block_language(path)
    assert "`" * ticks not in body
    nl = "" if body.endswith("\n") else "\n"
    assert rest == f"{body}{nl}{'`' * ticks}\n\n"
    # No line of the body (CommonMark also breaks lines at "\r") can close the fence.
    assert not any(closing_fence(line, ticks) for line in re.split("\r\n|\r|\n", body))
    assert ticks == max([3, *(len(r) + 1 for r in re.findall("`+", body))])


def test_markdown_block_exact() -> None:
    kw: dict[str, Any] = {"failing": False, "template": "markdown", "line_numbers": False}
    assert render_block("src/a.py", 10, 20, "x = 1\n", "failure", **kw) == (
        "### src/a.py:10-20 (failure evidence)\n```python\nx = 1\n```\n\n"
    )
    assert render_block("Makefile", 1, 1, "all:", "reference", **kw) == (
        "### Makefile:1-1 (referenced definition)\n```\nall:\n```\n\n"
    )
    nasty = "a = '''\n```\nnot the end\n````\n'''\n"
    assert render_block("x.md", 1, 5, nasty, "search", **kw) == (
        f"### x.md:1-5 (search hit)\n`````markdown\n{nasty}`````\n\n"
    )
    # "\r" alone does not count as a final newline.
    assert (
        render_block("a.rs", 1, 1, "a\r", "search", **kw)
        == "### a.rs:1-1 (search hit)\n```rust\na\r\n```\n\n"
    )


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("a/b.py", "python"), ("b.pyi", "python"), ("a/b.RS", "rust"), ("x.mjs", "javascript"),
        ("x.cjs", "javascript"), ("x.ts", "typescript"), ("x.tsx", "tsx"), ("x.jsx", "jsx"),
        ("x.go", "go"), ("x.java", "java"), ("x.kt", "kotlin"), ("x.h", "c"), ("x.hh", "cpp"),
        ("x.cxx", "cpp"), ("x.cs", "csharp"), ("x.rb", "ruby"), ("x.php", "php"), ("x.sh", "bash"),
        ("x.bash", "bash"), ("x.json", "json"), ("x.toml", "toml"), ("x.yml", "yaml"),
        ("x.md", "markdown"), ("x.sql", "sql"), ("x.html", "html"), ("x.css", "css"),
        ("a/.bashrc", ""), ("Makefile", ""), ("a.py/b", ""), ("x.", ""), ("x.pyx", ""),
        ("x.txt", ""), ("x.\u212at", ""),  # KELVIN SIGN lowercases to "k" in Python, not in ASCII
    ],
)  # fmt: skip
def test_language_table(path: str, lang: str) -> None:
    assert block_language(path) == lang
    kw: dict[str, Any] = {"failing": False, "template": "markdown", "line_numbers": False}
    for renderer in (py_block, rust_block):
        assert renderer(path, 1, 1, "", "search", **kw).split("\n")[1] == "```" + lang


# --- labels and line numbers ---------------------------------------------------------


def test_labels() -> None:
    assert label("failure", False) == "failure evidence"
    assert label("reference", False) == "referenced definition"
    assert label("search", False) == "search hit"
    assert label(bugcontext.Reason.SEARCH, False) == "search hit"
    assert label("failure", True) == "failure evidence in the failing file"
    assert label("reference", True) == "referenced definition in the failing file"
    assert label("search", True) == "search hit in the failing file"
    assert label(bugcontext.Reason.SEARCH, True) == "search hit in the failing file"
    with pytest.raises(ValueError, match="reason"):
        label("overlap", True)
    block = render_block(
        "a.py", 1, 1, "", bugcontext.Reason.REFERENCE, failing=False, template="xml", line_numbers=False
    )
    assert 'reason="reference" label="referenced definition"' in block


def test_line_numbers() -> None:
    assert number_lines("", 7) == "7 | "
    assert number_lines("\n", 7) == "7 | \n"
    assert number_lines("a\nb\n", 9) == " 9 | a\n10 | b\n"
    assert number_lines("a\n\nb", 9) == " 9 | a\n10 | \n11 | b"
    assert number_lines("a\rb\r\nc", 1) == "1 | a\rb\r\n2 | c"  # split on "\n" only
    assert number_lines("x\u2028y\x85z", 1) == "1 | x\u2028y\x85z"
    assert number_lines("x\ny", MAX_LINE) == f"{MAX_LINE} | x\n{MAX_LINE + 1} | y"
    kw: dict[str, Any] = {"failing": False, "line_numbers": True}
    for renderer in (py_block, rust_block):
        assert renderer("a.py", 99, 100, "x\ny\n", "search", template="markdown", **kw) == (
            "### a.py:99-100 (search hit)\n```python\n 99 | x\n100 | y\n```\n\n"
        )
        assert renderer("a.py", 1, 1, "<\n", "search", template="xml", **kw) == (
            '<snippet path="a.py" start="1" end="1" reason="search" label="search hit">1 | &lt;\n</snippet>\n'
        )


# --- plan / render on real builds -----------------------------------------------------


def cand(path: str, start: int, end: int, content: str, reason: str, score: float) -> dict[str, Any]:
    return {"path": path, "start": start, "end": end, "content": content, "reason": reason, "score": score}


CANDS = [
    cand("src/b.py", 30, 40, "def b():\n    return 2\n", "reference", 1.0),  # 0
    cand("src/a.py", 50, 60, "def late(): ...\n", "search", 9.0),  # 1
    cand("./src/a.py", 10, 20, "def a():\n    ```\n", "failure", 5.0),  # 2
    cand("src/b.py", 1, 5, "import a\n", "search", 3.0),  # 3
    cand("src/c.rs", 7, 9, "fn c() {}", "reference", 2.0),  # 4
    cand("src/a.py", 12, 14, "overlaps #2", "search", 4.0),  # 5
    cand("src/a.py", 1, 3, "#!/usr/bin/env python\n", "search", 0.5),  # 6
]


def test_plan_rank_and_file_order_on_a_real_build() -> None:
    raw = bugcontext.build({"candidates": CANDS, "max_chars": 10_000, "failure_file": "src/a.py"})
    result = raw
    assert result.failure_file == "src/a.py"
    # Failure file first (by score), then references, then search.
    assert raw.selected == (1, 2, 6, 4, 0, 3)
    ranked = plan(result)
    assert [(b.index, b.rank, b.position) for b in ranked] == [(i, r, r) for r, i in enumerate(raw.selected)]
    labels = [re.match(r"### .*? \((.*)\)\n", b.text).group(1) for b in ranked]  # type: ignore[union-attr]
    # What each item is, and for the failure file's items that too (ranked there by score alone).
    assert labels[:3] == [
        "search hit in the failing file",
        "failure evidence in the failing file",
        "search hit in the failing file",
    ]
    assert labels[3:] == ["referenced definition", "referenced definition", "search hit"]
    head = "### src/a.py:10-20 (failure evidence in the failing file)\n````python\n"
    assert ranked[1].text.startswith(head)

    by_file = plan(result, order="file")
    # Groups in the rank of their first item (a.py, c.rs, b.py); inside a group by line.
    assert [(b.index, b.rank, b.position) for b in by_file] == [
        (6, 2, 0), (2, 1, 1), (1, 0, 2), (4, 3, 3), (3, 5, 4), (0, 4, 5),
    ]  # fmt: skip
    assert render(result, order="file") == "".join(b.text for b in by_file)
    assert render(result) == "".join(b.text for b in ranked)
    assert sorted(b.text for b in by_file) == sorted(b.text for b in ranked)
    assert ranked[0] == RenderedBlock(index=1, rank=0, position=0, text=ranked[0].text)
    assert ranked[0].to_dict() == {"index": 1, "rank": 0, "position": 0, "text": ranked[0].text}

    xml = render(result, "xml", line_numbers=True, order="file")
    parsed = parse_xml_section(xml)
    assert [(s["path"], s["start"]) for s in parsed] == [
        ("src/a.py", 1), ("src/a.py", 10), ("src/a.py", 50),
        ("src/c.rs", 7),
        ("src/b.py", 1), ("src/b.py", 30),
    ]  # fmt: skip
    assert parsed[1]["content"] == "10 | def a():\n11 |     ```\n"
    assert parsed[1]["label"] == "failure evidence in the failing file" and parsed[1]["reason"] == "failure"


def test_plan_without_failure_file_and_empty() -> None:
    result = bugcontext.build({"candidates": CANDS, "max_chars": 10_000})
    blocks = plan(result, template="xml")
    assert all("in the failing file" not in b.text for b in blocks)
    empty = bugcontext.build({"candidates": [], "max_chars": 0})
    assert plan(empty) == [] and render(empty) == "" and render(empty, "xml", order="file") == ""
    with pytest.raises(ValueError, match="template"):
        plan(empty, template="text")
    with pytest.raises(ValueError, match="order"):
        render(empty, order="path")


def same_path_groups_are_contiguous(paths: list[str]) -> bool:
    seen: set[str] = set()
    for i, p in enumerate(paths):
        if p in seen and paths[i - 1] != p:
            return False
        seen.add(p)
    return True


@settings(max_examples=examples(300), deadline=None)
@given(
    drawn=build_inputs(max_size=20, max_line=30),
    template=st.sampled_from(TEMPLATES),
    line_numbers=st.booleans(),
)
def test_plan_properties(drawn: Any, template: str, line_numbers: bool) -> None:
    raw = bugcontext.build(drawn.make())
    ff = drawn.failure_file
    given = [] if ff is None else [ff] if isinstance(ff, str) else ff
    failing = {"/".join(s for s in f.split("/") if s not in ("", ".")) for f in given}
    assert set(raw.failure_files) == failing
    result = raw
    items = raw.items
    ranked = plan(result, template=template, line_numbers=line_numbers)
    by_file = plan(result, template=template, line_numbers=line_numbers, order="file")
    for blocks in (ranked, by_file):
        assert [b.position for b in blocks] == list(range(len(items)))
        assert sorted(b.rank for b in blocks) == list(range(len(items)))
        for b in blocks:
            it = items[b.rank]
            assert b.index == raw.selected[b.rank]
            assert b.text == rust_block(
                it.path, it.start, it.end, it.content, it.reason,
                failing=it.path in failing, template=template, line_numbers=line_numbers,
            )  # fmt: skip
    assert [b.rank for b in ranked] == list(range(len(items)))
    order = [b.rank for b in by_file]
    paths = [items[r].path for r in order]
    assert same_path_groups_are_contiguous(paths)
    group_ranks: dict[str, int] = {}
    for r, p in zip(order, paths, strict=True):
        group_ranks[p] = min(group_ranks.get(p, r), r)
    firsts = list(group_ranks.values())
    assert firsts == sorted(firsts)  # groups by the rank of their first (best-ranked) item
    for i in range(1, len(order)):
        if paths[i] == paths[i - 1]:
            a, b = items[order[i - 1]], items[order[i]]
            assert (a.start, a.end, order[i - 1]) < (b.start, b.end, order[i])
    if template == "xml":
        parsed = parse_xml_section(render(result, template, line_numbers, "file"))
        assert [(s["path"], s["start"], s["end"]) for s in parsed] == [
            (items[r].path, items[r].start, items[r].end) for r in order
        ]
        for s, r in zip(parsed, order, strict=True):
            content = items[r].content
            assert s["content"] == (number_lines(content, items[r].start) if line_numbers else content)


def test_command_line_markdown_is_the_block_format_under_a_heading() -> None:
    from bugcontext.core.composer import render_markdown

    result = bugcontext.build({"candidates": CANDS, "max_chars": 10_000})
    out = render_markdown(result)
    assert (
        out
        == "## Code context\n\n" + bugcontext.render(result, "markdown", False, "rank").rstrip("\n") + "\n"
    )
    assert "### src/b.py:30-40 (referenced definition)\n" in out


def test_render_checks_its_options() -> None:
    result = bugcontext.build({"candidates": [cand("a.py", 1, 1, "x\n", "search", 1.0)], "max_chars": 100})
    with pytest.raises(TypeError):
        bugcontext.render(result, line_numbers="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        bugcontext.render(result, template="html")
    with pytest.raises(ValueError):
        bugcontext.render(result, order="path")
    assert bugcontext.render(result) == bugcontext.render(result, "markdown", False, "rank")


def test_render_takes_each_option_left_out_from_the_results_cost() -> None:
    cands = [
        {"path": "b.py", "start": 1, "end": 1, "content": "y", "reason": "reference", "score": 3.0},
        {"path": "a.py", "start": 2, "end": 2, "content": "x", "reason": "reference", "score": 2.0},
        {"path": "b.py", "start": 5, "end": 5, "content": "z", "reason": "reference", "score": 1.0},
    ]
    cost = {"template": "xml", "line_numbers": True, "order": "file"}
    result = bugcontext.build({"candidates": cands, "budget": 10_000, "cost": cost})
    label = 'reason="reference" label="referenced definition"'
    assert bugcontext.render(result) == (
        f'<snippet path="b.py" start="1" end="1" {label}>1 | y</snippet>\n'
        f'<snippet path="b.py" start="5" end="5" {label}>5 | z</snippet>\n'
        f'<snippet path="a.py" start="2" end="2" {label}>2 | x</snippet>\n'
    )
    # Options given override the result's own; without a cost model: Markdown, rank order.
    markdown = (
        "### b.py:1-1 (referenced definition)\n```python\ny\n```\n\n"
        "### a.py:2-2 (referenced definition)\n```python\nx\n```\n\n"
        "### b.py:5-5 (referenced definition)\n```python\nz\n```\n\n"
    )
    assert bugcontext.render(result, template="markdown", line_numbers=False, order="rank") == markdown
    assert bugcontext.render(bugcontext.build({"candidates": cands, "max_chars": 10_000})) == markdown
    with pytest.raises(TypeError, match=r"^line_numbers must be a bool, not int$"):
        bugcontext.render(result, line_numbers=1)  # type: ignore[arg-type]
