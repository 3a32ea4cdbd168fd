"""The search source: query building, chunking, BM25 ranking and the reusable index."""

from __future__ import annotations

import itertools
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from bugcontext.job.sources import search
from bugcontext.job.sources.files import Repository
from bugcontext.job.sources.pytest_log import parse_pytest_log
from bugcontext.job.sources.reports import Frame, TestFailure
from bugcontext.job.sources.search import (
    CHUNK_LINES,
    QUERY_WEIGHTS,
    SearchIndex,
    build_query,
    chunk_spans,
    query_parts,
    search_windows,
    tokenize,
)

HTML = '''\
"""Helpers for HTML text."""

import re

ENTITY = re.compile(r"&#(x?[0-9a-f]+);")


def _entity_transform(match):
    number = match.group(1)
    base = 16 if number.startswith("x") else 10
    return chr(int(number.lstrip("x"), base))


def unescape_html(text):
    """Replace character references in ``text``."""
    return ENTITY.sub(_entity_transform, text)


@staticmethod
@functools.lru_cache(maxsize=None)
def cached_escape(text):
    def inner(char):
        def innermost():
            return char
        return innermost()

    return "".join(inner(c) for c in text)


class Page:
    """A page of HTML."""

    encoding = "utf-8"

    def __init__(self, body):
        self.body = body

    @property
    def title(self):
        return self.body.split("<title>")[1]
'''

NETWORK = """\
import socket


def open_connection(host, port):
    sock = socket.create_connection((host, port))
    sock.settimeout(10)
    return sock


def close_connection(sock):
    sock.close()


RETRIES = 3
TIMEOUT = 10
"""

TEST_HTML = """\
from pkg.htmlutil import unescape_html


class TestUtil:
    def test_unescape_html(self):
        assert unescape_html("&#x110000;") == "&#x110000;"
"""

APP_JS = """\
// Front-end helpers.
import { render } from "./view.js";

export function formatPrice(amountCents, currencyCode) {
  const units = amountCents / 100;

  return units.toFixed(2) + " " + currencyCode;
}

export function parseQuery(queryString) {
  const pairs = queryString.split("&");

  return Object.fromEntries(pairs.map((p) => p.split("=")));
}
"""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not found")


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    SearchIndex.clear_cache()
    yield
    SearchIndex.clear_cache()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/htmlutil.py": HTML,
            "pkg/network.py": NETWORK,
            "tests/test_html.py": TEST_HTML,
        },
    )
    return tmp_path


def failure_in(repo: Path, **fields: object) -> TestFailure:
    """The failure of ``tests/test_html.py::TestUtil::test_unescape_html`` raised in
    ``_entity_transform``."""
    frames = (
        Frame("tests/test_html.py", line_of(TEST_HTML, "assert unescape_html"), "test_unescape_html"),
        Frame("pkg/htmlutil.py", line_of(HTML, "return ENTITY.sub"), "unescape_html"),
        Frame(str(repo / "pkg" / "htmlutil.py"), line_of(HTML, "return chr("), "_entity_transform"),
        Frame("/usr/lib/python3.11/re/__init__.py", 185, "sub"),
    )
    values: dict[str, object] = {
        "name": "TestUtil.test_unescape_html",
        "frames": frames,
        "exception_type": "ValueError",
        "message": "chr() arg not in range(0x110000)",
        "message_lines": ("ValueError: chr() arg not in range(0x110000)",),
    }
    values.update(fields)
    return TestFailure(**values)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------
# Tokens and the query


def test_tokenize_splits_snake_camel_case_and_digits() -> None:
    assert tokenize("unescapeHTML") == ["unescapehtml", "unescape", "html"]
    # The whole identifier without its underscores, so that snake and camel case meet.
    assert tokenize("_htmlentity_transform") == ["htmlentitytransform", "htmlentity", "transform"]
    assert tokenize("unescape_html")[0] == tokenize("unescapeHTML")[0] == "unescapehtml"
    assert tokenize("HTTPServer2 utf8Decode") == [
        "httpserver2",
        "http",
        "server",
        "utf8decode",
        "utf",
        "decode",
    ]
    assert tokenize("parseXMLDocument") == ["parsexmldocument", "parse", "xml", "document"]
    # Numbers, decimal and hexadecimal, are one token each; single characters are dropped.
    assert tokenize("range(0x110000) x = 42 + 7") == ["range", "0x110000", "42"]


def test_tokenize_drops_english_stop_words_and_keywords() -> None:
    assert tokenize("def f(self): return None if x is not None else the_value") == ["thevalue", "value"]
    assert tokenize("const fn = function () { return null; }") == []
    # Soft keywords and builtin names are names: kept.
    assert tokenize("match type print") == ["match", "type", "print"]


def test_query_parts_name_their_sources(repo: Path) -> None:
    parts = {p.kind: p for p in query_parts(failure_in(repo), "entity decoding", repo=Repository(repo))}
    assert list(parts) == [
        "exception",
        "message",
        "test",
        "test_context",
        "failing_line",
        "frame_line",
        "extra",
    ]
    assert parts["exception"].tokens == ("valueerror", "value", "error")
    assert parts["message"].tokens == ("chr", "arg", "range", "0x110000")
    assert parts["test"].tokens == ("unescapehtml", "unescape", "html")  # no "test" words
    assert parts["test_context"].tokens == ("testutil", "util")
    assert parts["failing_line"].tokens == ("chr", "int", "number", "lstrip", "base")
    # The other project frames, deepest first: unescape_html's line, then the test's.
    frame_lines = [p for p in query_parts(failure_in(repo), repo=Repository(repo)) if p.kind == "frame_line"]
    assert [p.text.strip() for p in frame_lines] == [
        "return ENTITY.sub(_entity_transform, text)",
        'assert unescape_html("&#x110000;") == "&#x110000;"',
    ]
    assert frame_lines[0].tokens == ("entity", "sub", "entitytransform", "transform", "text")
    assert frame_lines[1].tokens == ("unescapehtml", "unescape", "html", "x110000", "110000")
    assert parts["extra"].tokens == ("entity", "decoding")
    assert all(p.weight == QUERY_WEIGHTS[p.kind] for p in parts.values())


def test_query_failing_lines_need_the_repository(repo: Path) -> None:
    kinds = [p.kind for p in query_parts(failure_in(repo))]
    assert kinds == ["exception", "message", "test", "test_context"]


def test_query_frame_lines_take_the_whole_statement(tmp_path: Path) -> None:
    write(
        tmp_path, {"mod.py": "def f(a):\n    return compute(\n        alpha,\n        beta_gamma,\n    )\n"}
    )
    failure = TestFailure(None, (Frame("mod.py", 3),), "KeyError", "", ())
    (part,) = [p for p in query_parts(failure, repo=Repository(tmp_path)) if p.kind == "failing_line"]
    assert part.tokens == ("compute", "alpha", "betagamma", "beta", "gamma")


def test_query_compound_statement_frame_takes_its_header(tmp_path: Path) -> None:
    write(tmp_path, {"mod.py": "for item in load_items(path):\n    handle(item)\n"})
    failure = TestFailure(None, (Frame("mod.py", 1),), "OSError", "", ())
    (part,) = [p for p in query_parts(failure, repo=Repository(tmp_path)) if p.kind == "failing_line"]
    assert part.tokens == ("item", "loaditems", "load", "items", "path")


def test_test_names_are_split_from_class_and_parameters() -> None:
    split = search._split_test_name
    assert split("TestUtil.test_unescape_html") == ("test_unescape_html", "TestUtil")
    assert split("test_scientific_numbers[e1-None]") == ("test_scientific_numbers", "e1-None")
    assert split("ERROR at setup of test_fixture_x") == ("test_fixture_x", "")
    assert split("tests/test_a.py::TestA::test_b[x.y]") == ("test_b", "tests/test_a.py TestA x.y")


def test_unweighted_query_lists_each_token_once_in_order(repo: Path) -> None:
    query = build_query(failure_in(repo), "chr entity")
    assert query == [
        "valueerror",
        "value",
        "error",
        "chr",
        "arg",
        "range",
        "0x110000",
        "unescapehtml",
        "unescape",
        "html",
        "testutil",
        "util",
        "entity",
    ]


def test_weighted_query_repeats_tokens_by_the_weights_of_their_parts(repo: Path) -> None:
    failure = failure_in(repo)
    query = build_query(failure, "chr entity", repo=Repository(repo), weighted=True)
    weights = QUERY_WEIGHTS
    # "chr": the message, the failing line and the extra text.
    assert query.count("chr") == weights["message"] + weights["failing_line"] + weights["extra"]
    assert query.count("valueerror") == weights["exception"]
    assert query.count("unescape") == weights["test"] + weights["frame_line"]
    assert query.count("entity") == weights["frame_line"] + weights["extra"]
    # Repetitions are adjacent and in order of first appearance.
    assert list(dict.fromkeys(query)) == build_query(failure, "chr entity", repo=Repository(repo))
    # A weight of 0 drops a part.
    zero = {**weights, "exception": 0}
    assert "valueerror" not in build_query(failure, repo=Repository(repo), weighted=True, weights=zero)


def test_query_from_a_parsed_log_skips_assertion_noise() -> None:
    log = textwrap.dedent("""\
        =================================== FAILURES ===================================
        __________________________ test_parse_widget[big-1] ___________________________

            def test_parse_widget():
        >       assert parseWidget("x") == expected
        E       AssertionError: assert None == 3
        E        +  where None = parseWidget('x')

        tests/test_w.py:2: AssertionError
        =========================== short test summary info ============================
        """)
    (failure,) = parse_pytest_log(log)
    parts = {p.kind: p.tokens for p in query_parts(failure)}
    assert parts["exception"] == ("error",)
    assert parts["evidence"] == ("parsewidget", "parse", "widget")
    assert parts["test"] == ("parsewidget", "parse", "widget")
    assert parts["test_context"] == ("big",)
    assert "message" not in parts  # "assert None == 3": nothing but noise
    assert build_query(None) == [] and build_query(None, "  ") == []


# ------------------------------------------------------------------------------------
# Chunks


def chunks_of(root: Path, rel: str) -> list[tuple[int, int]]:
    source = Repository(root).source(rel)
    assert source is not None
    return chunk_spans(source)


def test_python_chunks_are_functions_methods_and_module_code(repo: Path) -> None:
    spans = chunks_of(repo, "pkg/htmlutil.py")
    assert (1, line_of(HTML, "ENTITY =")) in spans  # module code grouped: docstring .. constant
    assert (line_of(HTML, "def _entity_transform"), line_of(HTML, "return chr(")) in spans
    # Decorators belong to their function; nested functions stay inside it.
    assert (line_of(HTML, "@staticmethod"), line_of(HTML, 'return "".join')) in spans
    assert not any(s == line_of(HTML, "def inner") or s == line_of(HTML, "def innermost") for s, _ in spans)
    # A class gives its head and each method, decorators included.
    assert (line_of(HTML, "class Page"), line_of(HTML, 'encoding = "utf-8"') + 1) in spans
    assert (line_of(HTML, "def __init__"), line_of(HTML, "self.body = body")) in spans
    assert (line_of(HTML, "@property"), line_of(HTML, "return self.body.split")) in spans
    # Chunks are in file order and do not overlap.
    assert spans == sorted(spans)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


def test_imports_alone_make_no_chunk(tmp_path: Path) -> None:
    write(tmp_path, {"imports.py": "import os\nfrom sys import path\n\nX = 1\n"})
    assert chunks_of(tmp_path, "imports.py") == [(4, 4)]


def test_chunk_names_qualify_methods(repo: Path) -> None:
    source = Repository(repo).source("pkg/htmlutil.py")
    assert source is not None
    names = [c.name for c in search._chunks(source)]
    assert names == [
        "",
        "_entity_transform",
        "unescape_html",
        "cached_escape",
        "Page",
        "Page.__init__",
        "Page.title",
    ]


def test_long_functions_are_cut_into_pieces(tmp_path: Path) -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(3 * CHUNK_LINES))
    write(tmp_path, {"long.py": "def long():\n" + body})
    spans = chunks_of(tmp_path, "long.py")
    assert spans[0][0] == 1 and spans[-1][1] == 3 * CHUNK_LINES + 1
    assert all(e - s + 1 <= CHUNK_LINES for s, e in spans)
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(spans))


def test_other_languages_are_cut_at_top_level_blocks(tmp_path: Path) -> None:
    write(tmp_path, {"web/app.js": APP_JS})
    spans = chunks_of(tmp_path, "web/app.js")
    # Small blocks are grouped; blank lines inside a function never cut it.
    assert spans == [(1, line_of(APP_JS, "return Object.fromEntries") + 1)]

    big = "\n\n".join(f"function f{i}() {{\n  let a = {i};\n\n  return a;\n}}" for i in range(40)) + "\n"
    write(tmp_path, {"big.js": big})
    spans = chunks_of(tmp_path, "big.js")
    lines = big.splitlines()
    assert len(spans) > 1
    for start, end in spans:
        assert lines[start - 1].startswith("function f")  # a chunk starts at a block
        assert lines[end - 1] == "}"  # and ends at one's end, not on a blank line
        assert end - start + 1 <= CHUNK_LINES


def test_python_that_does_not_parse_is_cut_into_blocks(tmp_path: Path) -> None:
    text = "def ok():\n    return 1\n\n\ndef broken(:\n    pass\n"
    write(tmp_path, {"bad.py": text})
    assert chunks_of(tmp_path, "bad.py") == [(1, 6)]
    write(tmp_path, {"blank.py": "\n\n  \n", "empty.py": ""})
    assert chunks_of(tmp_path, "blank.py") == [] and chunks_of(tmp_path, "empty.py") == []


def test_window_content_is_exactly_the_file_lines(tmp_path: Path) -> None:
    crlf = "def widget_size(w):\r\n    return w.size\r\n\r\n\r\nclass Widget:\r\n    pass\r\n"
    write(tmp_path, {"crlf.py": crlf, "web/app.js": APP_JS.replace("\n", "\r\n")})
    windows = search_windows(Repository(tmp_path), tokenize("widget size format price"), top_k=10)
    assert windows
    for w in windows:
        data = (tmp_path / w.path).read_bytes().decode("utf-8")
        assert w.content == "".join(data.splitlines(keepends=True)[w.start - 1 : w.end])


# ------------------------------------------------------------------------------------
# Ranking


def test_the_function_named_in_the_error_outranks_unrelated_code(repo: Path) -> None:
    r = Repository(repo)
    failure = failure_in(repo, message="unescape_html() failed on an entity", name="test_entities")
    windows = search_windows(r, build_query(failure))
    assert (windows[0].path, windows[0].start) == ("pkg/htmlutil.py", line_of(HTML, "def unescape_html"))
    assert all(w.path != "pkg/network.py" for w in windows)
    assert [w.score for w in windows] == sorted((w.score for w in windows), reverse=True)


def test_failing_lines_lead_to_the_failing_function(repo: Path) -> None:
    r = Repository(repo)
    windows = search_windows(r, build_query(failure_in(repo), repo=r, weighted=True))
    top = windows[0]
    assert (top.path, top.start) == ("pkg/htmlutil.py", line_of(HTML, "def _entity_transform"))


def test_scores_are_bm25_scores_and_repetition_weighs(repo: Path) -> None:
    index = SearchIndex.build(Repository(repo))
    once = index.query(["socket"])
    twice = index.query(["socket", "socket"])
    assert [h.chunk for h in once] == [h.chunk for h in twice]
    assert [2 * h.score for h in once] == pytest.approx([h.score for h in twice])
    # A term in every chunk of the repository has a small but positive BM25 idf.
    assert index.query(["zzz_not_there"]) == [] and index.query([]) == []
    assert all(h.score > 0 for h in index.query(tokenize("socket connection html")))


def test_per_file_limit_and_top_k(tmp_path: Path) -> None:
    write(tmp_path, {"many.py": "".join(f"def widget_{i}():\n    return 'widget'\n\n\n" for i in range(9))})
    index = SearchIndex.build(Repository(tmp_path))
    assert len(index.query(["widget"], max_per_file=3)) == 3
    assert len(index.query(["widget"], top_k=4, max_per_file=None)) == 4
    assert len(index.query(["widget"], max_per_file=None)) == 9
    assert search_windows(Repository(tmp_path), ["widget"], top_k=0) == []


# ------------------------------------------------------------------------------------
# The index: built once, reused, rebuilt when a file changes


def test_the_index_is_reused_across_queries(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[Path] = []
    original = SearchIndex.build.__func__  # type: ignore[attr-defined]

    def counting(cls: type[SearchIndex], r: Repository, paths: object = None) -> SearchIndex:
        builds.append(r.root)
        result: SearchIndex = original(cls, r, paths)
        return result

    monkeypatch.setattr(SearchIndex, "build", classmethod(counting))
    r = Repository(repo)
    first = search_windows(r, tokenize("unescape html"))
    second = search_windows(r, tokenize("open connection socket"))
    third = search_windows(Repository(repo), tokenize("page title"))  # a new object, same folder
    assert first and second and third
    assert len(builds) == 1
    index = SearchIndex.for_repository(r)
    assert index is SearchIndex.for_repository(Repository(repo))
    assert len(builds) == 1
    assert index.build_seconds > 0 and index.last_query_seconds > 0
    assert set(index.timings) == {"list", "read", "chunk", "bm25"}
    # Files with text: the empty pkg/__init__.py gives no chunk.
    assert index.files == 3 and index.lines == sum(len(t.splitlines()) for t in (HTML, NETWORK, TEST_HTML))


def test_a_changed_added_or_removed_file_invalidates_the_index(repo: Path) -> None:
    first = SearchIndex.for_repository(Repository(repo))
    assert search_windows(Repository(repo), ["frobnicate"]) == []

    with (repo / "pkg" / "network.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef frobnicate():\n    return 1\n")
    changed = SearchIndex.for_repository(Repository(repo))
    assert changed is not first
    hits = search_windows(Repository(repo), ["frobnicate"])
    assert [(w.path, w.content) for w in hits] == [("pkg/network.py", "def frobnicate():\n    return 1\n")]

    write(repo, {"pkg/extra.py": "def gadget():\n    pass\n"})
    added = SearchIndex.for_repository(Repository(repo))
    assert added is not changed and any(c.path == "pkg/extra.py" for c in added.chunks)

    (repo / "pkg" / "extra.py").unlink()
    removed = SearchIndex.for_repository(Repository(repo))
    assert removed is not added and not any(c.path == "pkg/extra.py" for c in removed.chunks)
    assert SearchIndex.for_repository(Repository(repo)) is removed


def test_an_explicit_index_is_used_as_given(repo: Path) -> None:
    r = Repository(repo)
    only_network = SearchIndex.build(r, ["pkg/network.py"])
    windows = search_windows(r, tokenize("unescape html socket"), index=only_network)
    assert windows and {w.path for w in windows} == {"pkg/network.py"}


# ------------------------------------------------------------------------------------
# Repositories with files in other languages


def test_a_repository_with_non_python_files(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    write(outside, {"secret.js": "function formatPrice() { return 'outside'; }\n"})
    write(
        repo,
        {
            "web/app.js": APP_JS,
            "web/app.min.js": "function formatPrice(a){return a}\n",
            "docs/guide.md": "# formatPrice\n\nHow to format a price.\n",
            "node_modules/lib/index.js": "function formatPrice() {}\n",
            ".env": "PRICE_FORMAT=secret\n",
            "native/blob.c": "int format_price(void);\n",
        },
    )
    (repo / "native" / "blob.c").write_bytes(b"int format_price\x00(void);\n")
    os.symlink(outside / "secret.js", repo / "web" / "linked.js")

    index = SearchIndex.for_repository(Repository(repo))
    paths = {c.path for c in index.chunks}
    assert "web/app.js" in paths
    assert paths.isdisjoint(
        {
            "web/app.min.js",
            "docs/guide.md",
            "node_modules/lib/index.js",
            ".env",
            "native/blob.c",
            "web/linked.js",
        }
    )
    windows = search_windows(Repository(repo), tokenize("formatPrice currency"))
    assert windows[0].path == "web/app.js"
    assert windows[0].content == "".join(
        APP_JS.splitlines(keepends=True)[windows[0].start - 1 : windows[0].end]
    )
    assert all(w.path in ("web/app.js", "pkg/htmlutil.py", "pkg/network.py") for w in windows)


def test_the_reader_decides_what_is_searched(repo: Path) -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
    write(
        repo,
        {
            ".gitignore": "build/\n*.generated.js\n",
            "build/out.js": "function formatPrice() {}\n",
            "web/prices.generated.js": "function formatPrice() {}\n",
            "web/keys.js": "// formatPrice signing key\nconst KEY = `" + key + "`;\n",
            "web/app.js": APP_JS,
        },
    )
    r = Repository(repo)
    index = SearchIndex.for_repository(r)
    # A file holding a secret is indexed as the reader gives it (the key redacted), and its
    # windows are kept with the key redacted (issue 17: redacted, not withheld).
    assert {c.path for c in index.chunks if c.path.endswith(".js")} == {"web/app.js", "web/keys.js"}
    assert "web/keys.js" not in r.refused
    windows = search_windows(r, tokenize("formatPrice signing key"))
    assert windows and all("MIIEowIBAAKCAQEA" not in w.content for w in windows)
    kept, withheld = r.screen(windows)
    assert withheld == [] and "web/keys.js" in {w.path for w in kept}
    assert all("BEGIN RSA" not in w.content for w in kept)
    # Without .gitignore rules, the ignored files are searched too: another index.
    unignored = SearchIndex.for_repository(Repository(repo, gitignore=False))
    assert unignored is not index
    assert {"build/out.js", "web/prices.generated.js"} <= {c.path for c in unignored.chunks}
