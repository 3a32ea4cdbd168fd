"""The search source's chunks of a Python file come from the statement outline
(``bugcontext._core.python_outline``) rather than from an ``ast`` tree: the two are held
equal here on every file of this interpreter's standard library that parses, and a file the
outline cannot read exactly falls back to ``ast``."""

from __future__ import annotations

import ast
import sysconfig
import warnings
from pathlib import Path

import pytest
from bugcontext._core import python_outline
from bugcontext.job.sources import search
from bugcontext.job.sources.files import SourceFile, split_lines


def _both(text: str) -> tuple[list[search.Chunk], list[search.Chunk], SourceFile]:
    lines = split_lines(text)
    by_ast = SourceFile("m.py", lines, True)
    _ = by_ast.tree  # parsed first: its chunks come from the tree
    by_outline = SourceFile("m.py", lines, True)
    return search._chunks(by_ast), search._chunks(by_outline), by_outline


def _standard_library() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)


def test_the_outline_chunks_every_standard_library_file_as_ast_does() -> None:
    read = outlined = 0
    differ: list[str] = []
    for path in _standard_library():
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        lines = split_lines(text)
        if not lines:
            continue
        read += 1
        by_ast = SourceFile(str(path), lines, True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes in test data
            _ = by_ast.tree  # parsed first: its chunks come from the tree
        by_outline = SourceFile(str(path), lines, True)
        chunks = search._chunks(by_outline)
        if not by_outline.parsed():
            outlined += 1
            if chunks != search._chunks(by_ast):
                differ.append(str(path))
    assert differ == []
    # Nearly every file is outlined, not parsed (a few fall back to ast, by design).
    assert read > 500 and outlined > 0.95 * read


def test_a_file_is_outlined_without_a_syntax_tree() -> None:
    text = (
        "import os\n\n@dec\ndef f(x):\n    return x\n\n"
        "class C:\n    y = 1\n\n    def g(self):\n        pass\n"
    )
    by_ast, by_outline, source = _both(text)
    assert not source.parsed()
    assert (
        by_outline
        == by_ast
        == [
            search.Chunk("m.py", 3, 5, "f"),
            search.Chunk("m.py", 7, 9, "C"),  # the head: up to the first method
            search.Chunk("m.py", 10, 11, "C.g"),
        ]
    )


@pytest.mark.parametrize(
    "text",
    [
        "def f():\n\treturn 1\n",  # a tab in indentation
        "x = f'{a[\"k\"] if b else c}'\ny = 1\n",  # a field holding another quote: read
        "print 'python 2'\n",  # does not parse: ast gives blocks
        "x = f'{'nested'}'\n",  # its own quote in a field (Python 3.12's grammar only)
        "caf\u00e9 = 1\n\ndef f():\n    pass\n",  # a name that is not ASCII
    ],
)
def test_what_the_outline_does_not_read_is_chunked_as_ast_does(text: str) -> None:
    by_ast, by_outline, _ = _both(text)
    assert by_outline == by_ast


def test_the_outline_gives_none_where_the_interpreter_would_differ() -> None:
    assert python_outline("x = f'{'a'}'\n") is None
    assert python_outline("def f():\n\treturn 1\n") is None
    assert python_outline("print 'x'\n") is None
    assert python_outline("x = 1\n") == [(0, 3, 1, 1, "")]
    with pytest.raises(TypeError):
        python_outline(b"x = 1\n")  # type: ignore[arg-type]


def test_a_refused_file_keeps_the_shape_of_its_text_as_read() -> None:
    """A file withheld for a secret has blank lines: its chunks come from its tree, parsed
    from the text as read (strings blanked), never from an outline of blank lines."""
    lines = ("\n",) * 5
    source = SourceFile("m.py", lines, True, refused="secret")
    source.__dict__["_tree"] = ast.parse("def f():\n    return 1\n\n\nx = 2\n")
    assert search._chunks(source) == [search.Chunk("m.py", 1, 2, "f"), search.Chunk("m.py", 5, 5)]
