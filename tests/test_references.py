"""Reference candidates with tree-sitter: definitions, reads, imports, callers, test →
implementation edges and import-graph distances, on small repositories in Python,
JavaScript, TypeScript, Go, Rust and Java written to a temporary folder."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from bugcontext.job.sources import Repository, SymbolIndex, names_on_line, reference_windows
from bugcontext.job.sources.failure import ProjectFrame
from bugcontext.job.sources.files import node_span
from bugcontext.job.sources.languages import LANGUAGES, language_for, load
from bugcontext.job.sources.references import (
    CALLEE_WEIGHT,
    IMPORT_WEIGHT,
    TEST_WEIGHT,
    Evidence,
    reference_evidence,
)
from bugcontext.job.sources.reports import Frame
from bugcontext.job.sources.symbols import Definition, Import

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    any(load(name) is None for name in LANGUAGES), reason="tree-sitter grammars are not installed"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8", newline="")
    return root


def line_of(root: Path, rel: str, needle: str) -> int:
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    matches = [i for i, text in enumerate(lines, 1) if needle in text]
    assert len(matches) == 1, (rel, needle, matches)
    return matches[0]


def lines_of(root: Path, rel: str, start: int, end: int) -> str:
    lines = (root / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(lines[start - 1 : end])


def frames(*where: tuple[str, int]) -> list[ProjectFrame]:
    """Project frames deepest first, as ``project_frames`` orders them."""
    return [
        ProjectFrame(path, line, distance, Frame(path, line)) for distance, (path, line) in enumerate(where)
    ]


def spans(evidence: list[Evidence]) -> dict[tuple[str, str], Evidence]:
    """Evidence by (path, name), the strongest kept."""
    found: dict[tuple[str, str], Evidence] = {}
    for item in evidence:
        found.setdefault((item.path, item.name), item)
    return found


def definitions(index: SymbolIndex, path: str) -> dict[str, Definition]:
    parsed = index.parsed(path)
    assert parsed is not None
    return {d.name: d for d in parsed.definitions}


# --- Python --------------------------------------------------------------------------------

PYTHON = {
    "pkg/__init__.py": "",
    "pkg/util.py": """
        SCALE = 2


        def double(x):
            return x * SCALE
        """,
    "pkg/calc.py": """
        from .util import double

        LIMIT = 10


        class Box:
            size = 3

            @property
            def grown(self):
                return self.size + double(1)
            # a comment after the method is not part of it


        def add(a, b):
            return a - b  # the bug


        def total(values):
            acc = 0
            for v in values:
                acc = add(acc, v)
            return acc


        def add_all(a, b, c):
            return add(add(a, b), c)
        """,
    "pkg/stats.py": """
        from pkg.calc import add


        def mean(xs):
            return add(0, sum(xs)) / len(xs)
        """,
    "tests/test_calc.py": """
        from pkg.calc import Box, total


        def test_total():
            value = total([1, 2])
            assert value == 3


        def test_box():
            assert Box().grown == 5
        """,
}


@pytest.fixture
def py_repo(tmp_path: Path) -> Path:
    return write(tmp_path, PYTHON)


def test_python_definitions_kinds_spans_and_containers(py_repo: Path) -> None:
    index = SymbolIndex(Repository(py_repo))
    found = definitions(index, "pkg/calc.py")
    grown = found["grown"]
    # Decorators included, the trailing comment not.
    assert (grown.start, grown.end) == (
        line_of(py_repo, "pkg/calc.py", "@property"),
        line_of(py_repo, "pkg/calc.py", "return self.size"),
    )
    assert (grown.kind, grown.container) == ("function", "Box")
    assert (found["Box"].kind, found["size"].kind, found["size"].container) == ("class", "variable", "Box")
    assert (found["LIMIT"].kind, found["LIMIT"].container) == ("variable", None)
    assert found["add"].kind == "function"
    assert "acc" not in found  # a local variable is not a definition
    assert index.parsed("pkg/calc.py") is index.parsed("pkg/calc.py")  # parsed once


def _ast_definitions(tree: ast.Module) -> set[tuple[str, int, int, str]]:
    """Definitions as the ``ast`` module sees them: functions and classes at any depth,
    assignments at module or class level (in compound statements too)."""

    def bound(target: ast.expr) -> Iterator[str]:
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                yield from bound(element)
        elif isinstance(target, ast.Starred):
            yield from bound(target.value)

    def visit(body: list[ast.stmt], level: str) -> Iterator[tuple[str, int, int, str]]:
        for stmt in body:
            start, end = node_span(stmt)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield stmt.name, start, end, "function"
                yield from visit(stmt.body, "function")
            elif isinstance(stmt, ast.ClassDef):
                yield stmt.name, start, end, "class"
                yield from visit(stmt.body, "class")
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                if level != "function":
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    for target in targets:
                        for name in bound(target):
                            yield name, start, end, "variable"
            else:
                for block in ("body", "orelse", "finalbody", "handlers", "cases"):
                    for item in getattr(stmt, block, None) or []:
                        inner = item.body if isinstance(item, (ast.ExceptHandler, ast.match_case)) else [item]
                        yield from visit(inner, level)

    return set(visit(tree.body, "module"))


def test_python_definitions_equal_the_ast_ones_on_this_repository(tmp_path: Path) -> None:
    repo = Repository(ROOT)
    index = SymbolIndex(repo)
    paths = [p for p in repo.python_files() if p.split("/")[0] in ("python", "tests", "scripts", "benches")]
    assert len(paths) > 20
    fixture = write(tmp_path, {**PYTHON, "tricky.py": TRICKY})
    fixture_index = SymbolIndex(Repository(fixture))
    checked = 0
    for which, rels in ((index, paths), (fixture_index, [*PYTHON, "tricky.py"])):
        for rel in rels:
            source = which.repo.source(rel)
            if source is None or source.tree is None or getattr(source, "refused", None):
                continue  # a file whose text the reader withholds has no definitions to find
            parsed = which.parsed(rel)
            assert parsed is not None
            got = {(d.name, d.start, d.end, d.kind) for d in parsed.definitions}
            assert got == _ast_definitions(source.tree), rel
            checked += 1
    assert checked > 25


TRICKY = """
    import os
    X = Y = 1
    (p, q), *r = 1, 2, 3
    s = {}
    s[0], t = 1, 2
    z: int
    z += 1
    if os.name:
        IN_IF = 1
    else:
        IN_ELSE = 2
    try:
        IN_TRY = 1
    except ImportError:
        IN_EXCEPT = 2
    for i in range(2):
        IN_FOR = i


    @staticmethod
    @property
    def decorated(a, b=1, *args, k: int = 2, **kw):
        global G
        G = 1
        v = [j for j in range(a)]
        return v  # end
        # trailing comment


    class Outer:
        attr = 1

        class Inner:
            deep = 2

        def method(self):
            class Local:
                field = 3

            def helper():
                return Local

            return helper
"""


def test_python_names_on_a_line_follow_one_step_of_data_flow(py_repo: Path) -> None:
    source = Repository(py_repo).source("tests/test_calc.py")
    assert source is not None
    assert names_on_line(source, line_of(py_repo, "tests/test_calc.py", "assert value == 3")) == {
        "total": 0.5
    }
    assert names_on_line(source, line_of(py_repo, "tests/test_calc.py", "value = total")) == {"total": 1.0}
    calc = Repository(py_repo).source("pkg/calc.py")
    assert calc is not None
    # `self` is a parameter: not looked up; its attribute is.
    assert names_on_line(calc, line_of(py_repo, "pkg/calc.py", "return self.size")) == {
        "size": 1.0,
        "double": 1.0,
    }


def test_python_test_to_implementation_and_callees(py_repo: Path) -> None:
    repo = Repository(py_repo)
    failing = frames(("tests/test_calc.py", line_of(py_repo, "tests/test_calc.py", "assert value == 3")))
    evidence = reference_evidence(repo, failing, SymbolIndex(repo), test_name="test_total")
    found = spans(evidence)
    total = found["pkg/calc.py", "total"]
    # Read through `value = total(...)` (data flow, 0.5) and by the test (TEST_WEIGHT).
    assert total.weight == max(0.5, TEST_WEIGHT)
    assert (total.start, total.end) == (
        line_of(py_repo, "pkg/calc.py", "def total"),
        line_of(py_repo, "pkg/calc.py", "return acc"),
    )
    # One step down the call graph: total() calls add().
    assert found["pkg/calc.py", "add"].why == "callee"
    assert found["pkg/calc.py", "add"].weight == pytest.approx(CALLEE_WEIGHT * 0.5)
    assert ("pkg/calc.py", "Box") not in found  # imported by the file, not used by this test
    assert [e.weight for e in evidence] == sorted((e.weight for e in evidence), reverse=True)


def test_python_callers_of_the_failing_function(py_repo: Path) -> None:
    repo = Repository(py_repo)
    failing = frames(
        ("pkg/calc.py", line_of(py_repo, "pkg/calc.py", "return a - b")),
        ("pkg/calc.py", line_of(py_repo, "pkg/calc.py", "acc = add(acc, v)")),
        ("tests/test_calc.py", line_of(py_repo, "tests/test_calc.py", "value = total")),
    )
    evidence = reference_evidence(repo, failing, SymbolIndex(repo), test_name="test_total")
    callers = {(e.path, e.start, e.end) for e in evidence if e.why == "caller"}
    assert callers == {
        (
            "pkg/calc.py",
            line_of(py_repo, "pkg/calc.py", "def add_all"),
            line_of(py_repo, "pkg/calc.py", "add(add("),
        ),
        (
            "pkg/stats.py",
            line_of(py_repo, "pkg/stats.py", "def mean"),
            line_of(py_repo, "pkg/stats.py", "sum(xs)"),
        ),
    }
    # total() is a frame: its failure window covers it, it is no reference.
    assert all(e.name != "total" or e.path != "pkg/calc.py" for e in evidence)


def test_python_import_graph_distances_and_scores(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/a.py": "from app.b import b_func\n\n\ndef a_func():\n    return b_func() + 1\n",
            "app/b.py": "from app.c import c_func\n\n\ndef b_func():\n    return c_func()\n\n\n"
            "class Near:\n    def helper(self):\n        return 1\n",
            "app/c.py": "def c_func():\n    return 3\n",
            "app/z.py": "class Far:\n    def helper(self):\n        return 2\n",
            "tests/test_a.py": "from app.a import a_func\n\n\ndef test_a(thing):\n"
            "    a_func()\n    assert thing.helper() == 1\n",
        },
    )
    repo = Repository(root)
    index = SymbolIndex(repo)
    assert index.import_distances("tests/test_a.py") == {
        "tests/test_a.py": 0,
        "app/a.py": 1,
        "app/b.py": 2,
        "app/c.py": 3,
    }
    failing = frames(("tests/test_a.py", 6))
    found = spans(reference_evidence(repo, failing, index, test_name="test_a"))
    # The test calls a_func (resolved through its import): a test → implementation edge,
    # stronger than the import edge (IMPORT_WEIGHT) it also is.
    assert (found["app/a.py", "a_func"].why, found["app/a.py", "a_func"].weight) == ("test", TEST_WEIGHT)
    # What a_func uses through the imports of its file, one import further: IMPORT_WEIGHT / 2;
    # and c_func, three imports away, is past the import-graph evidence.
    assert (found["app/b.py", "b_func"].why, found["app/b.py", "b_func"].weight) == (
        "import",
        IMPORT_WEIGHT / 2,
    )
    assert ("app/c.py", "c_func") not in found
    # `thing.helper()`: unresolved, so every `helper` is a candidate, weighted by how near
    # its file is in the import graph: app/b.py (2 imports away) before app/z.py (none).
    near, far = found["app/b.py", "helper"], found["app/z.py", "helper"]
    assert near.weight > far.weight > 0
    assert index.proximity("tests/test_a.py", "app/a.py") > index.proximity("tests/test_a.py", "app/b.py")
    assert index.proximity("tests/test_a.py", "app/b.py") > index.proximity("tests/test_a.py", "app/z.py")


def test_windows_are_whole_definitions_with_the_file_lines(py_repo: Path) -> None:
    repo = Repository(py_repo)
    failing = frames(("tests/test_calc.py", line_of(py_repo, "tests/test_calc.py", "assert value == 3")))
    windows = reference_windows(repo, failing, SymbolIndex(repo), base_score=7.0, test_name="test_total")
    assert windows
    for window in windows:
        assert window.reason == "reference"
        assert 7.0 < window.score <= 8.0
        assert window.content == lines_of(py_repo, window.path, window.start, window.end)
    assert [w.score for w in windows] == sorted((w.score for w in windows), reverse=True)


def test_python_shadowing_scopes_and_reexports(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "lib/__init__.py": "from lib.core import Thing\n",
            "lib/core.py": "class Thing:\n    pass\n",
            "tests/test_x.py": """
                import os
                from lib import Thing


                def test_local():
                    class Thing:
                        pass

                    assert Thing() is None


                def test_module():
                    assert Thing() is os.getcwd()
                """,
        },
    )
    repo = Repository(root)
    index = SymbolIndex(repo)
    local = frames(("tests/test_x.py", line_of(root, "tests/test_x.py", "assert Thing() is None")))
    found = spans(reference_evidence(repo, local, index, test_name="test_local"))
    # The local class shadows the import; being inside the failing test, it is in the
    # failure window already.
    assert ("lib/core.py", "Thing") not in found
    module = frames(("tests/test_x.py", line_of(root, "tests/test_x.py", "is os.getcwd()")))
    found = spans(reference_evidence(repo, module, index, test_name="test_module"))
    # The package re-exports Thing from lib/core.py: followed to the definition.
    assert found["lib/core.py", "Thing"].weight == 1.0
    assert ("lib/__init__.py", "Thing") not in found


# --- JavaScript ----------------------------------------------------------------------------

JAVASCRIPT = {
    "src/util.js": """
        export const SCALE = 2;

        export function double(x) {
          return x * SCALE;
        }
        """,
    "src/calc.js": """
        import { double } from './util.js';

        export class Box {
          size = 3;

          grow(n) {
            return this.size + double(n);
          }
        }

        export function add(a, b) {
          return a - b;
        }

        export function total(values) {
          let acc = 0;
          for (const v of values) {
            acc = add(acc, v);
          }
          return acc;
        }

        export const addAll = (a, b, c) => add(add(a, b), c);
        """,
    "test/calc.test.js": """
        const { total } = require('../src/calc');

        test('total', () => {
          const value = total([1, 2]);
          expect(value).toBe(3);
        });
        """,
}


def test_javascript_definitions_references_and_edges(tmp_path: Path) -> None:
    root = write(tmp_path, JAVASCRIPT)
    repo = Repository(root)
    index = SymbolIndex(repo)
    found = definitions(index, "src/calc.js")
    assert (found["Box"].kind, found["grow"].container, found["size"].container) == ("class", "Box", "Box")
    assert found["addAll"].kind == "function"  # an arrow function bound by a const
    assert (found["total"].start, found["total"].end) == (
        line_of(root, "src/calc.js", "export function total"),
        line_of(root, "src/calc.js", "return acc") + 1,
    )
    calc = index.parsed("src/calc.js")
    assert calc is not None
    assert calc.imports == (Import(1, "./util.js", "double", "double"),)
    assert index.resolve_import("src/calc.js", calc.imports[0]) == ("src/util.js",)
    assert {r.name for r, _ in calc.line_reads(line_of(root, "src/calc.js", "this.size + double"))} == {
        "size",
        "double",
    }

    failing = frames(("test/calc.test.js", line_of(root, "test/calc.test.js", "expect(value)")))
    evidence = spans(reference_evidence(repo, failing, index, test_name="total"))
    assert evidence["src/calc.js", "total"].weight == max(0.5, TEST_WEIGHT)  # data flow, test body
    assert evidence["src/calc.js", "add"].why == "callee"

    failing = frames(
        ("src/calc.js", line_of(root, "src/calc.js", "return a - b")),
        ("src/calc.js", line_of(root, "src/calc.js", "acc = add(acc, v)")),
    )
    callers = {(e.path, e.start) for e in reference_evidence(repo, failing, index) if e.why == "caller"}
    assert callers == {("src/calc.js", line_of(root, "src/calc.js", "export const addAll"))}


# --- TypeScript ----------------------------------------------------------------------------

TYPESCRIPT = {
    "src/geometry.ts": """
        export interface Point {
          x: number;
          y: number;
        }

        export type Id = string;

        export const ORIGIN: Point = { x: 0, y: 0 };

        export function dist(p: Point, q: Point): number {
          return Math.hypot(p.x - q.x, p.y - q.y);
        }

        export abstract class Shape {
          constructor(public name: string) {}

          abstract area(): number;
        }
        """,
    "test/geometry.test.ts": """
        import { dist, ORIGIN, Point } from "../src/geometry";

        describe("dist", () => {
          it("measures", () => {
            const p: Point = { x: 3, y: 4 };
            expect(dist(ORIGIN, p)).toBe(5);
          });
        });
        """,
}


def test_typescript_definitions_types_and_test_edges(tmp_path: Path) -> None:
    root = write(tmp_path, TYPESCRIPT)
    repo = Repository(root)
    index = SymbolIndex(repo)
    found = definitions(index, "src/geometry.ts")
    assert {name: d.kind for name, d in found.items()} == {
        "Point": "type",
        "Id": "type",
        "ORIGIN": "variable",
        "dist": "function",
        "Shape": "class",
        "constructor": "function",
        "area": "function",
    }
    assert (found["Point"].start, found["Point"].end) == (1, 4)
    failing = frames(("test/geometry.test.ts", line_of(root, "test/geometry.test.ts", "expect(dist(")))
    evidence = spans(reference_evidence(repo, failing, index, test_name="dist measures"))
    assert evidence["src/geometry.ts", "dist"].weight == 1.0
    assert evidence["src/geometry.ts", "ORIGIN"].weight == 1.0
    # The type annotation in the test body: a test → implementation edge to the interface.
    assert evidence["src/geometry.ts", "Point"].why == "test"
    assert ("src/geometry.ts", "Shape") not in evidence


# --- Go ------------------------------------------------------------------------------------

GO = {
    "go.mod": "module example.com/calc\n\ngo 1.21\n",
    "util/util.go": """
        package util

        const Scale = 2

        func Double(x int) int {
            return x * Scale
        }
        """,
    "calc/calc.go": """
        package calc

        import "example.com/calc/util"

        type Box struct {
            Size int
        }

        func (b *Box) Grow(n int) int {
            return b.Size + util.Double(n)
        }

        func Add(a, b int) int {
            return a - b
        }

        func Total(values []int) int {
            acc := 0
            for _, v := range values {
                acc = Add(acc, v)
            }
            return acc
        }
        """,
    "calc/sum.go": """
        package calc

        func AddAll(a, b, c int) int {
            return Add(Add(a, b), c)
        }
        """,
    "calc/calc_test.go": """
        package calc

        import "testing"

        func TestTotal(t *testing.T) {
            value := Total([]int{1, 2})
            if value != 3 {
                t.Fatalf("got %d", value)
            }
        }
        """,
}


def test_go_definitions_packages_and_edges(tmp_path: Path) -> None:
    root = write(tmp_path, GO)
    repo = Repository(root)
    index = SymbolIndex(repo)
    found = definitions(index, "calc/calc.go")
    assert (found["Box"].kind, found["Grow"].container, found["Total"].kind) == ("class", "Box", "function")
    assert "acc" not in found
    assert definitions(index, "util/util.go")["Scale"].kind == "variable"
    calc = index.parsed("calc/calc.go")
    assert calc is not None
    assert index.resolve_import("calc/calc.go", calc.imports[0]) == ("util/util.go",)
    grow = spans(
        reference_evidence(repo, frames(("calc/calc.go", line_of(root, "calc/calc.go", "b.Size +"))))
    )
    assert grow["util/util.go", "Double"].weight == 1.0  # util.Double through the import

    failing = frames(("calc/calc_test.go", line_of(root, "calc/calc_test.go", "if value != 3")))
    evidence = spans(reference_evidence(repo, failing, index, test_name="TestTotal"))
    # Total is in the same package (no import): found among the package's files.
    assert evidence["calc/calc.go", "Total"].weight == max(0.5, TEST_WEIGHT)
    assert evidence["calc/calc.go", "Add"].why == "callee"

    failing = frames(
        ("calc/calc.go", line_of(root, "calc/calc.go", "return a - b")),
        ("calc/calc.go", line_of(root, "calc/calc.go", "acc = Add(acc, v)")),
    )
    callers = {(e.path, e.start) for e in reference_evidence(repo, failing, index) if e.why == "caller"}
    assert callers == {("calc/sum.go", line_of(root, "calc/sum.go", "func AddAll"))}


# --- Rust ----------------------------------------------------------------------------------

RUST = {
    "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod calc;\npub mod util;\n",
    "src/util.rs": """
        pub const SCALE: u32 = 2;

        pub fn double(x: u32) -> u32 {
            x * SCALE
        }
        """,
    "src/calc.rs": """
        use crate::util::double;

        #[derive(Debug)]
        pub struct Counter {
            pub count: u32,
        }

        impl Counter {
            pub fn bump(&mut self, n: u32) -> u32 {
                self.count += double(n);
                self.count
            }
        }

        pub fn add(a: u32, b: u32) -> u32 {
            a - b
        }

        pub fn total(values: &[u32]) -> u32 {
            let mut acc = 0;
            for v in values {
                acc = add(acc, *v);
            }
            acc
        }

        pub fn add_all(a: u32, b: u32, c: u32) -> u32 {
            add(add(a, b), c)
        }

        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn test_total() {
                let value = total(&[1, 2]);
                assert_eq!(value, 3);
            }
        }
        """,
}


def test_rust_definitions_modules_and_edges(tmp_path: Path) -> None:
    root = write(tmp_path, RUST)
    repo = Repository(root)
    index = SymbolIndex(repo)
    found = definitions(index, "src/calc.rs")
    counter = found["Counter"]
    # The attribute above the struct is part of it.
    assert (counter.start, counter.kind) == (line_of(root, "src/calc.rs", "#[derive(Debug)]"), "class")
    assert (found["bump"].container, found["total"].container) == ("Counter", None)
    calc = index.parsed("src/calc.rs")
    assert calc is not None
    assert calc.imports[0] == Import(1, "crate::util", "double", "double")
    assert index.resolve_import("src/calc.rs", calc.imports[0]) == ("src/util.rs",)
    lib = index.parsed("src/lib.rs")
    assert lib is not None
    assert [index.resolve_import("src/lib.rs", imp) for imp in lib.imports] == [
        ("src/calc.rs",),
        ("src/util.rs",),
    ]

    failing = frames(("src/calc.rs", line_of(root, "src/calc.rs", "assert_eq!(value, 3)")))
    evidence = spans(reference_evidence(repo, failing, index, test_name="calc::tests::test_total"))
    assert evidence["src/calc.rs", "total"].weight == max(0.5, TEST_WEIGHT)  # through a macro
    assert evidence["src/calc.rs", "add"].why == "callee"

    failing = frames(
        ("src/calc.rs", line_of(root, "src/calc.rs", "    a - b")),
        ("src/calc.rs", line_of(root, "src/calc.rs", "acc = add(acc, *v)")),
    )
    callers = {(e.path, e.start) for e in reference_evidence(repo, failing, index) if e.why == "caller"}
    assert callers == {("src/calc.rs", line_of(root, "src/calc.rs", "pub fn add_all"))}


# --- Java ----------------------------------------------------------------------------------

JAVA = {
    "src/main/java/com/example/util/Util.java": """
        package com.example.util;

        public final class Util {
            public static final int SCALE = 2;

            public static int twice(int x) {
                return x * SCALE;
            }
        }
        """,
    "src/main/java/com/example/calc/Calc.java": """
        package com.example.calc;

        import com.example.util.Util;

        public class Calc {
            private int count = 0;

            @Override
            public String toString() {
                return "Calc";
            }

            public int add(int a, int b) {
                return a - b;
            }

            public int total(int[] values) {
                int acc = 0;
                for (int v : values) {
                    acc = add(acc, v);
                }
                return acc + Util.twice(0);
            }

            public int addAll(int a, int b, int c) {
                return add(add(a, b), c);
            }
        }
        """,
    "src/test/java/com/example/calc/CalcTest.java": """
        package com.example.calc;

        import static org.junit.Assert.assertEquals;

        public class CalcTest {
            @Test
            public void testTotal() {
                int value = new Calc().total(new int[] {1, 2});
                assertEquals(3, value);
            }
        }
        """,
}


def test_java_definitions_packages_and_edges(tmp_path: Path) -> None:
    root = write(tmp_path, JAVA)
    repo = Repository(root)
    index = SymbolIndex(repo)
    calc_path = "src/main/java/com/example/calc/Calc.java"
    found = definitions(index, calc_path)
    assert (found["Calc"].kind, found["add"].container, found["count"].kind) == ("class", "Calc", "variable")
    # Annotations are part of the method.
    assert found["toString"].start == line_of(root, calc_path, "@Override")
    calc = index.parsed(calc_path)
    assert calc is not None
    assert index.resolve_import(calc_path, calc.imports[0]) == ("src/main/java/com/example/util/Util.java",)
    total_line = line_of(root, calc_path, "return acc + Util.twice(0)")
    twice = spans(reference_evidence(repo, frames((calc_path, total_line)), index))
    assert twice["src/main/java/com/example/util/Util.java", "twice"].weight == 1.0

    test_path = "src/test/java/com/example/calc/CalcTest.java"
    failing = frames((test_path, line_of(root, test_path, "assertEquals(3, value)")))
    evidence = spans(reference_evidence(repo, failing, index, test_name="CalcTest.testTotal"))
    # `new Calc()`: the class of the same package, in another source folder.
    assert evidence[calc_path, "Calc"].weight == max(0.5, TEST_WEIGHT)
    assert evidence[calc_path, "total"].why in ("line", "test")

    failing = frames(
        (calc_path, line_of(root, calc_path, "return a - b")),
        (calc_path, line_of(root, calc_path, "acc = add(acc, v)")),
    )
    callers = {(e.path, e.start) for e in reference_evidence(repo, failing, index) if e.why == "caller"}
    assert callers == {(calc_path, line_of(root, calc_path, "public int addAll"))}


# --- all languages -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("files", "test_file", "needle"),
    [
        (PYTHON, "tests/test_calc.py", "assert value == 3"),
        (JAVASCRIPT, "test/calc.test.js", "expect(value)"),
        (TYPESCRIPT, "test/geometry.test.ts", "expect(dist("),
        (GO, "calc/calc_test.go", "if value != 3"),
        (RUST, "src/calc.rs", "assert_eq!(value, 3)"),
        (JAVA, "src/test/java/com/example/calc/CalcTest.java", "assertEquals(3, value)"),
    ],
)
def test_every_window_is_exactly_its_lines(
    tmp_path: Path, files: dict[str, str], test_file: str, needle: str
) -> None:
    root = write(tmp_path, files)
    repo = Repository(root)
    failing = frames((test_file, line_of(root, test_file, needle)))
    windows = reference_windows(repo, failing, SymbolIndex(repo), base_score=1.0)
    assert windows
    for window in windows:
        assert window.content == lines_of(root, window.path, window.start, window.end)
        assert 1.0 < window.score <= 2.0
    assert len({(w.path, w.start, w.end) for w in windows}) == len(windows)


def test_language_table() -> None:
    assert {spec.name for spec in LANGUAGES.values()} >= {
        "python",
        "javascript",
        "typescript",
        "go",
        "rust",
        "java",
    }
    assert language_for("a/b.tsx") is LANGUAGES["tsx"]
    assert language_for("a/B.java") is LANGUAGES["java"]
    assert language_for("README.md") is None
    assert language_for("a.b/Makefile") is None


def test_every_reference_window_names_its_evidence(tmp_path: Path) -> None:
    """The called code, the hops and the import headers once came out as plain ``reference``
    in ``source_id`` while the definitions read on a failing line named theirs: every reference
    window of a real bug names what it is to the failure."""
    import shutil

    from bugcontext.job.sources import Repository, gather
    from bugcontext.job.sources.gather import CALLED_CODE_SOURCE, IMPORTS_SOURCE
    from bugcontext.job.sources.hops import HOP_SOURCES
    from bugcontext.job.sources.references import EVIDENCE_SOURCES

    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "tests" / "data" / "realbug_more_itertools", repo)
    import subprocess
    import sys

    proc = subprocess.run(  # the regression test, run as the README runs it
        [sys.executable, "-m", "pytest", "tests/test_more.py", "--rootdir", ".", "-p", "no:cacheprovider"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout[-2000:]
    log = proc.stdout
    found = gather(Repository(repo), log)
    named = {*EVIDENCE_SOURCES.values(), *HOP_SOURCES.values(), CALLED_CODE_SOURCE, IMPORTS_SOURCE}
    sources = [c.source for c in found.candidates if c.reason == "reference"]
    assert sources and all(source in named for source in sources), sources
    assert CALLED_CODE_SOURCE in sources and EVIDENCE_SOURCES["line"] in sources


def _naive_ignored(parsed: object, node: object) -> bool:
    """The walk ``_classify`` made before its answers were kept: up from ``node`` to the
    nearest container, an ignored type on the way."""
    spec = parsed.spec  # type: ignore[attr-defined]
    ancestor = node
    while ancestor is not None and ancestor.type not in spec.containers:  # type: ignore[attr-defined]
        if ancestor.type in spec.ignored:  # type: ignore[attr-defined]
            return True
        ancestor = ancestor.parent  # type: ignore[attr-defined]
    return False


def test_the_kept_ignored_answers_equal_the_walk_of_each_identifier() -> None:
    repo = Repository(ROOT)
    index = SymbolIndex(repo)
    paths = [p for p in repo.python_files() if p.startswith("python/bugcontext/job/")][:12]
    checked = 0
    for rel in paths:
        parsed = index.parsed(rel)
        assert parsed is not None
        for leaf in parsed._identifiers(parsed.tree.root_node):
            if leaf.parent is not None:
                assert parsed._ignored_above(leaf.parent) == _naive_ignored(parsed, leaf.parent), rel
                checked += 1
    assert checked > 1000


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return " + "f(" * 1000 + "1" + ")" * 1000, {"f"}),  # nested calls
        ("return 0" + " + A" * 3000, {"A"}),  # a long sum
        ("return A" + ".m()" * 600, {"A", "m"}),  # a long chain
    ],
)
def test_a_deeply_nested_failing_line_keeps_the_reads_of_its_statement(
    tmp_path: Path, body: str, expected: set[str]
) -> None:
    """Each identifier's walk up the tree reads each ancestor once (a tree-sitter parent
    costs the node's depth): the reads of a statement nested a thousand deep are all found."""
    text = f"A = 1\n\ndef f(x):\n    return x\n\ndef calls():\n    {body}\n"
    root = write(tmp_path, {"pkg/calls.py": text})
    parsed = SymbolIndex(Repository(root)).parsed("pkg/calls.py")
    assert parsed is not None
    assert {r.name for r, _ in parsed.line_reads(7)} == expected
