"""Test output of JavaScript/TypeScript, Go, Rust and Java runners (:mod:`bugcontext.job.sources.logs`).

The fixtures under ``tests/data/langs`` are recorded runs (see its README: which were made
by running the tool here and which follow the format's documentation); each parses back
into exactly its failures, with their names, ids, exception types and frames.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bugcontext.integrations.cli import main
from bugcontext.job.sources.failure import is_test_file
from bugcontext.job.sources.gather import gather
from bugcontext.job.sources.logs import detect_format, parse_log
from bugcontext.job.sources.logs._common import is_dependency_path, java_frame, node_frame
from bugcontext.job.sources.runs import parse_test_output
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

DATA = Path(__file__).parent / "data" / "langs"
LOGS = DATA / "logs"
REPOS = DATA / "repos"

Frames = list[tuple[str, int, str | None]]

# (fixture, detected format, [(name, test id, status, exception type, frames outermost first)])
FIXTURES: list[tuple[str, str, list[tuple[str, str, str, str | None, Frames]]]] = [
    (
        "cargo-backtrace.log",
        "cargo",
        [
            (
                "tests::divides_by_zero",
                "src/lib.rs::tests::divides_by_zero",
                "failed",
                "panic",
                [
                    ("src/lib.rs", 27, "calc::tests::divides_by_zero::{{closure}}"),
                    ("src/lib.rs", 28, "calc::tests::divides_by_zero"),
                    ("src/lib.rs", 12, "calc::divide"),
                ],
            ),
            (
                "tests::adds",
                "src/lib.rs::tests::adds",
                "failed",
                "panic",
                [
                    ("src/lib.rs", 22, "calc::tests::adds::{{closure}}"),
                    ("src/lib.rs", 23, "calc::tests::adds"),
                ],
            ),
            (
                "halves",
                "tests/api.rs::halves",
                "failed",
                "panic",
                [("tests/api.rs", 2, "api::halves::{{closure}}"), ("tests/api.rs", 4, "api::halves")],
            ),
            (
                "src/lib.rs - add (line 3)",
                "src/lib.rs - add (line 3)",
                "failed",
                "panic",
                [("src/lib.rs", 3, "add"), ("src/lib.rs", 5, None)],
            ),
        ],
    ),
    (
        "cargo-test.log",
        "cargo",
        [
            ("tests::adds", "src/lib.rs::tests::adds", "failed", "panic", [("src/lib.rs", 23, None)]),
            (
                "tests::divides_by_zero",
                "src/lib.rs::tests::divides_by_zero",
                "failed",
                "panic",
                [("src/lib.rs", 12, None)],
            ),
            ("halves", "tests/api.rs::halves", "failed", "panic", [("tests/api.rs", 4, None)]),
            (
                "src/lib.rs - add (line 3)",
                "src/lib.rs - add (line 3)",
                "failed",
                "panic",
                [("src/lib.rs", 3, "add"), ("src/lib.rs", 5, None)],
            ),
        ],
    ),
    (
        "go-json.log",
        "go-json",
        [
            (
                "TestAdd",
                "example.com/shop/calc.TestAdd",
                "failed",
                "FAIL",
                [("example.com/shop/calc/calc_test.go", 7, None)],
            ),
            (
                "TestTable/case",
                "example.com/shop/calc.TestTable/case",
                "failed",
                "FAIL",
                [("example.com/shop/calc/calc_test.go", 16, None)],
            ),
            (
                "TestAt",
                "example.com/shop/calc.TestAt",
                "failed",
                "panic",
                [
                    ("/home/ci/shop/calc/calc_test.go", 23, "calc.TestAt"),
                    ("/home/ci/shop/calc/calc.go", 10, "calc.At"),
                ],
            ),
        ],
    ),
    (
        "go-junit.xml",
        "junit-xml",
        [
            (
                "TestAdd",
                "example.com/shop/calc.TestAdd",
                "failed",
                None,
                [("example.com/shop/calc/calc_test.go", 7, None)],
            ),
            (
                "TestTable/case",
                "example.com/shop/calc.TestTable/case",
                "failed",
                None,
                [("example.com/shop/calc/calc_test.go", 16, None)],
            ),
        ],
    ),
    (
        "go-plain.log",
        "go",
        [
            (
                "TestAdd",
                "example.com/shop/calc.TestAdd",
                "failed",
                "FAIL",
                [("example.com/shop/calc/calc_test.go", 7, None)],
            ),
            (
                "TestTable/case",
                "example.com/shop/calc.TestTable/case",
                "failed",
                "FAIL",
                [("example.com/shop/calc/calc_test.go", 16, None)],
            ),
            (
                "TestAt",
                "example.com/shop/calc.TestAt",
                "failed",
                "panic",
                [
                    ("/home/ci/shop/calc/calc_test.go", 23, "calc.TestAt"),
                    ("/home/ci/shop/calc/calc.go", 10, "calc.At"),
                ],
            ),
        ],
    ),
    (
        "go-v.log",
        "go",
        [
            (
                "TestAdd",
                "example.com/shop/calc.TestAdd",
                "failed",
                "FAIL",
                [("example.com/shop/calc/calc_test.go", 7, None)],
            ),
            (
                "TestTable/case",
                "example.com/shop/calc.TestTable/case",
                "failed",
                "FAIL",
                [("example.com/shop/calc/calc_test.go", 16, None)],
            ),
            (
                "TestAt",
                "example.com/shop/calc.TestAt",
                "failed",
                "panic",
                [
                    ("/home/ci/shop/calc/calc_test.go", 23, "calc.TestAt"),
                    ("/home/ci/shop/calc/calc.go", 10, "calc.At"),
                ],
            ),
        ],
    ),
    (
        "gradle.log",
        "java",
        [
            (
                "CalcTest.adds",
                "com.example.CalcTest.adds",
                "failed",
                "java.lang.AssertionError",
                [("com/example/CalcTest.java", 10, "adds")],
            ),
            (
                "CalcTest.dividesByZero",
                "com.example.CalcTest.dividesByZero",
                "failed",
                "java.lang.IllegalArgumentException",
                [("com/example/CalcTest.java", 15, "dividesByZero")],
            ),
        ],
    ),
    (
        "jest.log",
        "jest",
        [
            (
                "calc > adds",
                "src/__tests__/calc.js > calc > adds",
                "failed",
                None,
                [("src/__tests__/calc.js", 5, "Object.toBe")],
            ),
            (
                "calc > divides by zero",
                "src/__tests__/calc.js > calc > divides by zero",
                "failed",
                "RangeError",
                [("src/__tests__/calc.js", 9, "Object.<anonymous>"), ("src/calc.js", 7, "divide")],
            ),
        ],
    ),
    (
        "junit4.log",
        "java",
        [
            (
                "CalcTest.parses",
                "com.example.CalcTest.parses",
                "failed",
                "java.lang.IllegalStateException",
                [
                    ("com/example/Calc.java", 19, "parse"),
                    ("com/example/CalcTest.java", 20, "parses"),
                    ("com/example/Calc.java", 21, "parse"),
                ],
            ),
            (
                "CalcTest.adds",
                "com.example.CalcTest.adds",
                "failed",
                "java.lang.AssertionError",
                [("com/example/CalcTest.java", 10, "adds")],
            ),
            (
                "CalcTest.dividesByZero",
                "com.example.CalcTest.dividesByZero",
                "failed",
                "java.lang.IllegalArgumentException",
                [("com/example/CalcTest.java", 15, "dividesByZero"), ("com/example/Calc.java", 12, "divide")],
            ),
        ],
    ),
    (
        "junit5-report.xml",
        "junit-xml",
        [
            (
                "CalcJupiterTest.adds()",
                "com.example.CalcJupiterTest.adds()",
                "failed",
                "org.opentest4j.AssertionFailedError",
                [("com/example/CalcJupiterTest.java", 11, "adds")],
            ),
            (
                "CalcJupiterTest$Parsing.parses()",
                "com.example.CalcJupiterTest$Parsing.parses()",
                "error",
                "java.lang.IllegalStateException",
                [
                    ("com/example/Calc.java", 19, "parse"),
                    ("com/example/CalcJupiterTest.java", 23, "parses"),
                    ("com/example/Calc.java", 21, "parse"),
                ],
            ),
            (
                "CalcJupiterTest.dividesByZero()",
                "com.example.CalcJupiterTest.dividesByZero()",
                "error",
                "java.lang.IllegalArgumentException",
                [
                    ("com/example/CalcJupiterTest.java", 16, "dividesByZero"),
                    ("com/example/Calc.java", 12, "divide"),
                ],
            ),
        ],
    ),
    (
        "junit5.log",
        "java",
        [
            (
                "CalcJupiterTest.adds",
                "com.example.CalcJupiterTest.adds",
                "failed",
                "org.opentest4j.AssertionFailedError",
                [("com/example/CalcJupiterTest.java", 11, "adds")],
            ),
            (
                "CalcJupiterTest.dividesByZero",
                "com.example.CalcJupiterTest.dividesByZero",
                "failed",
                "java.lang.IllegalArgumentException",
                [
                    ("com/example/CalcJupiterTest.java", 16, "dividesByZero"),
                    ("com/example/Calc.java", 12, "divide"),
                ],
            ),
            (
                "CalcJupiterTest$Parsing.parses",
                "com.example.CalcJupiterTest$Parsing.parses",
                "failed",
                "java.lang.IllegalStateException",
                [
                    ("com/example/Calc.java", 19, "parse"),
                    ("com/example/CalcJupiterTest.java", 23, "parses"),
                    ("com/example/Calc.java", 21, "parse"),
                ],
            ),
        ],
    ),
    (
        "mocha-spec.log",
        "mocha",
        [
            (
                "calc > divides by zero",
                "calc > divides by zero",
                "failed",
                "RangeError",
                [("test/calc.spec.js", 13, "Context.<anonymous>"), ("src/calc.js", 9, "divide")],
            ),
            (
                "calc > add > adds two numbers",
                "calc > add > adds two numbers",
                "failed",
                "AssertionError",
                [("test/calc.spec.js", 8, "Context.<anonymous>")],
            ),
            (
                'calc > hooks > "before each" hook for "never runs"',
                'calc > hooks > "before each" hook for "never runs"',
                "error",
                "RangeError",
                [("test/calc.spec.js", 22, "Context.<anonymous>"), ("src/calc.js", 9, "divide")],
            ),
        ],
    ),
    (
        "mocha-tap.log",
        "tap",
        [
            (
                "calc divides by zero",
                "calc divides by zero",
                "failed",
                "RangeError",
                [("test/calc.spec.js", 13, "Context.<anonymous>"), ("src/calc.js", 9, "divide")],
            ),
            (
                "calc add adds two numbers",
                "calc add adds two numbers",
                "failed",
                "AssertionError",
                [("test/calc.spec.js", 8, "Context.<anonymous>")],
            ),
            (
                'calc hooks "before each" hook for "never runs"',
                'calc hooks "before each" hook for "never runs"',
                "error",
                "RangeError",
                [("test/calc.spec.js", 22, "Context.<anonymous>"), ("src/calc.js", 9, "divide")],
            ),
        ],
    ),
    (
        "mocha-xunit.xml",
        "junit-xml",
        [
            (
                "divides by zero",
                "calc.divides by zero",
                "failed",
                "RangeError",
                [("test/calc.spec.js", 13, "Context.<anonymous>"), ("src/calc.js", 9, "divide")],
            ),
            (
                "adds two numbers",
                "calc add.adds two numbers",
                "failed",
                "AssertionError",
                [("test/calc.spec.js", 8, "Context.<anonymous>")],
            ),
            (
                '"before each" hook for "never runs"',
                'calc hooks."before each" hook for "never runs"',
                "failed",
                "RangeError",
                [("test/calc.spec.js", 22, "Context.<anonymous>"), ("src/calc.js", 9, "divide")],
            ),
        ],
    ),
    (
        "nextest.log",
        "cargo",
        [
            ("tests::adds", "tests::adds", "failed", "panic", [("src/lib.rs", 23, None)]),
            ("halves", "halves", "failed", "panic", [("tests/api.rs", 4, None)]),
        ],
    ),
    (
        "node-junit.xml",
        "junit-xml",
        [
            (
                "adds two numbers",
                "test.adds two numbers",
                "failed",
                "Error",
                [("/home/ci/calc-js/test/calc.test.js", 7, "TestContext.<anonymous>")],
            ),
            (
                "divides by zero",
                "test.divides by zero",
                "failed",
                "testCodeFailure",
                [
                    ("/home/ci/calc-js/test/calc.test.js", 11, "TestContext.<anonymous>"),
                    ("/home/ci/calc-js/src/calc.js", 9, "divide"),
                ],
            ),
            (
                "halves",
                "test.halves",
                "failed",
                "Error",
                [("/home/ci/calc-js/test/suite.test.js", 8, "TestContext.<anonymous>")],
            ),
        ],
    ),
    (
        "node-spec.log",
        "node-test",
        [
            (
                "adds two numbers",
                "test/calc.test.js > adds two numbers",
                "failed",
                "AssertionError",
                [("/home/ci/calc-js/test/calc.test.js", 7, "TestContext.<anonymous>")],
            ),
            (
                "divides by zero",
                "test/calc.test.js > divides by zero",
                "failed",
                "RangeError",
                [
                    ("/home/ci/calc-js/test/calc.test.js", 11, "TestContext.<anonymous>"),
                    ("/home/ci/calc-js/src/calc.js", 9, "divide"),
                ],
            ),
            (
                "halves",
                "test/suite.test.js > halves",
                "failed",
                "AssertionError",
                [("/home/ci/calc-js/test/suite.test.js", 8, "TestContext.<anonymous>")],
            ),
        ],
    ),
    (
        "node-tap.log",
        "tap",
        [
            (
                "adds two numbers",
                "/home/ci/calc-js/test/calc.test.js > adds two numbers",
                "failed",
                "AssertionError",
                [("/home/ci/calc-js/test/calc.test.js", 7, "TestContext.<anonymous>")],
            ),
            (
                "divides by zero",
                "/home/ci/calc-js/test/calc.test.js > divides by zero",
                "failed",
                "RangeError",
                [
                    ("/home/ci/calc-js/test/calc.test.js", 11, "TestContext.<anonymous>"),
                    ("/home/ci/calc-js/src/calc.js", 9, "divide"),
                ],
            ),
            (
                "halves",
                "/home/ci/calc-js/test/suite.test.js > halves",
                "failed",
                "AssertionError",
                [("/home/ci/calc-js/test/suite.test.js", 8, "TestContext.<anonymous>")],
            ),
        ],
    ),
    (
        "surefire.log",
        "java",
        [
            (
                "CalcTest.adds",
                "com.example.CalcTest.adds",
                "failed",
                "java.lang.AssertionError",
                [("com/example/CalcTest.java", 10, "adds")],
            ),
            (
                "CalcTest.dividesByZero",
                "com.example.CalcTest.dividesByZero",
                "error",
                "java.lang.IllegalArgumentException",
                [("com/example/CalcTest.java", 15, "dividesByZero"), ("com/example/Calc.java", 12, "divide")],
            ),
            (
                "CalcTest.parses",
                "com.example.CalcTest.parses",
                "error",
                "java.lang.IllegalStateException",
                [
                    ("com/example/Calc.java", 19, "parse"),
                    ("com/example/CalcTest.java", 20, "parses"),
                    ("com/example/Calc.java", 21, "parse"),
                ],
            ),
        ],
    ),
    (
        "tsmap-spec.log",
        "node-test",
        [
            (
                "divides by zero",
                "test/calc.test.js > divides by zero",
                "failed",
                "RangeError",
                [
                    ("/home/ci/calc-tsmap/test/calc.test.js", 7, "TestContext.<anonymous>"),
                    ("/home/ci/calc-tsmap/dist/calc.js", 10, "divide"),
                ],
            ),
        ],
    ),
    (
        "vitest.log",
        "vitest",
        [
            (
                "calc > adds",
                "src/calc.test.ts > calc > adds",
                "failed",
                "AssertionError",
                [("src/calc.test.ts", 6, None)],
            ),
            (
                "calc > divides by zero",
                "src/calc.test.ts > calc > divides by zero",
                "failed",
                "RangeError",
                [("src/calc.test.ts", 10, None), ("src/calc.ts", 7, "divide")],
            ),
        ],
    ),
]


@pytest.mark.parametrize(("fixture", "fmt", "expected"), FIXTURES, ids=[f[0] for f in FIXTURES])
def test_each_recorded_log_parses_into_exactly_its_failures_and_frames(
    fixture: str, fmt: str, expected: list[tuple[str, str, str, str | None, Frames]]
) -> None:
    text = (LOGS / fixture).read_text(encoding="utf-8")
    assert detect_format(text) == fmt
    failures = parse_test_output(text)
    got = [
        (f.name, f.test_id, f.status, f.exception_type, [(x.path, x.line, x.function) for x in f.frames])
        for f in failures
    ]
    assert got == expected


def test_every_fixture_is_listed() -> None:
    listed = {f[0] for f in FIXTURES}
    reports = {c[1] for c in COVERAGE}
    logs = {p.name for p in LOGS.iterdir() if p.suffix in (".log", ".xml") and p.name not in reports}
    assert logs == listed
    assert reports | listed == {p.name for p in LOGS.iterdir() if p.name != "README.md"}


# (repository, log, failing files in error order, the first failure window's lines)
CHAINS = [
    ("node", "node-spec.log", ["test/calc.test.js"], (6, 8)),
    ("node", "node-tap.log", ["test/calc.test.js"], (6, 8)),
    ("node", "node-junit.xml", ["test/calc.test.js"], (6, 8)),
    ("mocha", "mocha-spec.log", ["src/calc.js", "test/calc.spec.js"], (7, 12)),
    ("vitest", "vitest.log", ["src/calc.test.ts"], (5, 7)),
    ("tsmap", "tsmap-spec.log", ["src/calc.ts", "test/calc.test.js"], (10, 15)),
    ("jest", "jest.log", ["src/__tests__/calc.js"], (4, 6)),
    ("go", "go-plain.log", ["calc/calc_test.go"], (5, 9)),
    ("go", "go-json.log", ["calc/calc_test.go"], (5, 9)),
    ("go", "go-junit.xml", ["calc/calc_test.go"], (5, 9)),
    ("rust", "cargo-test.log", ["src/lib.rs"], (21, 24)),
    ("rust", "nextest.log", ["src/lib.rs"], (21, 24)),
    (
        "java",
        "junit4.log",
        ["src/main/java/com/example/Calc.java", "src/test/java/com/example/CalcTest.java"],
        (17, 23),
    ),
    ("java", "surefire.log", ["src/test/java/com/example/CalcTest.java"], (8, 11)),
    ("java", "junit5-report.xml", ["src/test5/java/com/example/CalcJupiterTest.java"], (9, 12)),
]


@pytest.mark.parametrize(("repo", "log", "files", "window"), CHAINS, ids=[f"{c[0]}-{c[1]}" for c in CHAINS])
def test_the_evidence_chain_starts_from_each_language_log(
    repo: str, log: str, files: list[str], window: tuple[int, int]
) -> None:
    text = (LOGS / log).read_text(encoding="utf-8")
    every = gather(REPOS / repo, text)
    # The first failing test's files, in error order; the other failing tests' code under test
    # (every failing test is evidence) may follow, never precede.
    chosen = every.failing_tests[0].test
    gathered = gather(REPOS / repo, text, test=chosen) if len(every.failing_tests) > 1 else every
    assert list(gathered.failure_files) == files
    assert list(every.failure_files[: len(files)]) == files
    assert not [f for f in every.failure_files[len(files) :] if is_test_file(f)]
    first = next(w for w in gathered.candidates if w.reason == "failure")
    assert (first.path, first.start, first.end) == (files[0], *window)
    # The test-file rule: no search window from a failing test file.
    assert not [
        w for w in gathered.candidates if w.reason == "search" and w.path in files and is_test_file(w.path)
    ]
    # The code under test is reached from the test (a reference or a failure window).
    units = {(w.path, w.start) for w in gathered.candidates if w.reason in ("failure", "reference")}
    assert len(units) >= 2


def test_cli_log_and_junit_xml_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "context",
                "--repo",
                str(REPOS / "vitest"),
                "--log",
                str(LOGS / "vitest.log"),
                "--format",
                "json",
                "--no-cache",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "src/calc.test.ts" in out and "src/calc.ts" in out
    report = LOGS / "junit5-report.xml"
    assert (
        main(
            [
                "context",
                "--repo",
                str(REPOS / "java"),
                "--junit-xml",
                str(report),
                "--format",
                "json",
                "--no-cache",
            ]
        )
        == 0
    )
    assert "CalcJupiterTest.java" in capsys.readouterr().out
    assert (
        main(
            ["context", "--repo", str(REPOS / "java"), "--pytest-log", str(LOGS / "junit4.log"), "--no-cache"]
        )
        == 0
    )
    assert "Calc.java" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("src/calc.test.ts", True),
        ("src/calc.spec.tsx", True),
        ("web/__tests__/calc.js", True),
        ("calc/calc_test.go", True),
        ("tests/api.rs", True),
        ("src/test/java/com/x/CalcTest.java", True),
        ("src/main/java/com/x/CalcTests.java", True),
        ("src/main/java/com/x/TestUtil.java", True),
        ("src/main/java/com/x/Testament.java", False),
        ("src/calc.ts", False),
        ("calc/calc.go", False),
        ("src/lib.rs", False),
        ("src/main/java/com/x/Calc.java", False),
        ("src/latest.js", False),
    ],
)
def test_the_test_file_rule_in_every_language(path: str, expected: bool) -> None:
    assert is_test_file(path) is expected


@pytest.mark.parametrize(
    "path",
    [
        "/app/node_modules/vitest/dist/index.js",
        "node:internal/test_runner/test",
        "/home/ci/go/pkg/mod/github.com/x/y@v1.2.3/y.go",
        "/usr/lib/go-1.19/src/testing/testing.go",
        "/usr/local/go/src/runtime/panic.go",
        "/home/ci/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.0/src/de.rs",
        "/rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs",
        "/usr/share/nodejs/mocha/lib/runner.js",
    ],
)
def test_dependency_frames_are_not_repository_files(path: str) -> None:
    assert is_dependency_path(path)


def test_frame_shapes() -> None:
    assert node_frame("    at async Foo.bar (file:///home/x/a%20b.js:3:9)") == (
        "/home/x/a b.js",
        "3",
        "Foo.bar",
    )
    assert node_frame("    at /home/x/a.js:3:9") == ("/home/x/a.js", "3", None)
    assert node_frame("    at new Promise (<anonymous>)") is None
    assert java_frame("\tat app//com.x.Outer$Inner.run(Outer.java:12)") == ("com/x/Outer.java", "12", "run")
    assert java_frame("\tat java.base/java.lang.Thread.run(Thread.java:833)") is None
    assert java_frame("\tat com.x.Y.m(Native Method)") is None
    assert java_frame("com.x.Y.m(Y.java:4)") is None
    assert java_frame("com.x.Y.m(Y.java:4)", bare=True) == ("com/x/Y.java", "4", "m")


def test_a_log_of_unknown_shape_yields_its_stack_traces() -> None:
    text = "starting\nTypeError: x is undefined\n    at f (src/a.js:3:5)\n    at g (src/b.js:9:1)\ndone\n"
    (failure,) = parse_log(text)
    assert failure.origin == "stack-trace" and failure.exception_type == "TypeError"
    assert [(f.path, f.line) for f in failure.frames] == [("src/b.js", 9), ("src/a.js", 3)]


# --- a Hypothesis property per format: N failures of random names and depths --------------

NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=40)
TESTS = st.lists(
    st.tuples(NAME, st.lists(st.integers(1, 5000), min_size=1, max_size=8)), min_size=1, max_size=6
)


def _v8(frames: list[tuple[str, int]], prefix: str = "    at ") -> list[str]:
    return [f"{prefix}f{i} ({path}:{line}:5)" for i, (path, line) in reversed(list(enumerate(frames)))]


def _render(
    fmt: str, tests: list[tuple[str, list[int]]]
) -> tuple[str, list[tuple[str, list[tuple[str, int]]]]]:
    """A log of ``fmt`` with one failure per test, and the (name, frames) it must parse into."""
    lines: list[str] = []
    expected: list[tuple[str, list[tuple[str, int]]]] = []
    ext = {"go": "go", "cargo": "rs", "java": "java"}.get(fmt, "ts")
    if fmt == "vitest":
        lines += [" FAIL  src/a.test.ts", "", "\u23af\u23af\u23af Failed Tests 1 \u23af\u23af\u23af", ""]
    if fmt == "jest":
        lines += [" FAIL  src/a.test.ts"]
    if fmt == "mocha":
        lines += ["", f"  {len(tests)} failing", ""]
    if fmt == "tap":
        lines += ["TAP version 13"]
    for index, (name, depth) in enumerate(tests):
        title = f"t_{name}{index}"
        if fmt == "java":
            frames = [(f"pkg/sub/Mod{i}.java", line) for i, line in enumerate(depth)]
        elif fmt == "go":
            frames = [(f"example.com/m/pkg/mod{i}_test.go", line) for i, line in enumerate(depth)]
        else:
            frames = [(f"pkg/mod_{i}.{ext}", line) for i, line in enumerate(depth)]
        if fmt == "vitest":
            lines += [f" FAIL  src/a.test.ts > {title}", "Error: bad"]
            lines += [f" \u276f f{i} {p}:{n}:5" for i, (p, n) in reversed(list(enumerate(frames)))]
            lines += ["", "\u23af" * 20 + f"[{index + 1}/{len(tests)}]\u23af", ""]
        elif fmt == "jest":
            lines += [
                f"  \u25cf suite \u203a {title}",
                "",
                "    Error: bad",
                "",
                *_v8(frames, "      at "),
                "",
            ]
            title = f"suite > {title}"
        elif fmt == "mocha":
            lines += [
                f"  {index + 1}) suite",
                f"       {title}:",
                "     Error: bad",
                *_v8(frames, "      at "),
                "",
            ]
            title = f"suite > {title}"
        elif fmt == "node-test":
            lines += [f"\u2716 {title} (1.5ms)", "  Error: bad", *_v8(frames, "      at "), ""]
        elif fmt == "tap":
            lines += [
                f"not ok {index + 1} - {title}",
                "  ---",
                "  error: 'bad'",
                "  name: 'Error'",
                "  stack: |-",
            ]
            lines += _v8(frames, "    ")
            lines += ["  ..."]
        elif fmt == "go":
            lines += [f"--- FAIL: Test{title} (0.00s)"]
            lines += [f"    mod{i}_test.go:{n}: bad" for i, (_, n) in reversed(list(enumerate(frames)))]
            title = f"Test{title}"
        elif fmt == "cargo":
            lines += [
                f"---- tests::{title} stdout ----",
                f"thread 'tests::{title}' panicked at {frames[-1][0]}:{frames[-1][1]}:5:",
                "bad",
                "stack backtrace:",
            ]
            for i, (p, n) in reversed(list(enumerate(frames))):
                lines += [f"   {len(frames) - 1 - i}: crate::f{i}", f"             at ./{p}:{n}:5"]
            lines += [""]
            title = f"tests::{title}"
        elif fmt == "java":
            lines += [f"{index + 1}) {title}(pkg.sub.Suite)", "java.lang.IllegalStateException: bad"]
            lines += [
                f"\tat pkg.sub.Mod{i}.f{i}(Mod{i}.java:{n})"
                for i, (_, n) in reversed(list(enumerate(frames)))
            ]
            title = f"Suite.{title}"
        expected.append((title, frames))
    if fmt == "go":
        lines += ["FAIL", "FAIL\texample.com/m/pkg\t0.01s"]
    if fmt == "cargo":
        lines += ["failures:", *[f"    {t}" for t, _ in expected], "", "test result: FAILED. 0 passed"]
    if fmt == "java":
        lines += ["", "FAILURES!!!"]
    if fmt == "node-test":
        lines += ["\u2139 tests 1", "\u2139 fail 1"]
    if fmt == "vitest":
        lines += [" Test Files  1 failed (1)"]
    if fmt == "jest":
        lines += ["Test Suites: 1 failed, 1 total"]
    return "\n".join(lines) + "\n", expected


def _render_wrapped(
    fmt: str, tests: list[tuple[str, list[int]]]
) -> tuple[str, list[tuple[str, list[tuple[str, int]]]]]:
    """``go-json``: the ``go`` log as ``go test -json`` events; ``junit-xml``: one test case per
    failure whose ``<failure>`` text is a V8 or JVM trace."""
    from xml.sax.saxutils import escape, quoteattr

    if fmt == "go-json":
        text, expected = _render("go", tests)
        events = [
            json.dumps({"Action": "output", "Package": "example.com/m/pkg", "Output": line + "\n"})
            for line in text.splitlines()
        ]
        return "\n".join(events) + "\n", expected
    cases = []
    expected = []
    for index, (name, depth) in enumerate(tests):
        title = f"t_{name}{index}"
        frames = [(f"pkg/mod_{i}.js", line) for i, line in enumerate(depth)]
        trace = "\n".join(["Error: bad", *_v8(frames)])
        failure = f'<failure message="bad">{escape(trace)}</failure>'
        cases.append(f'<testcase classname="suite" name={quoteattr(title)}>{failure}</testcase>')
        expected.append((title, frames))
    return '<?xml version="1.0"?>\n<testsuites><testsuite name="s">' + "".join(
        cases
    ) + "</testsuite></testsuites>\n", expected


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@pytest.mark.parametrize("fmt", ["go-json", "junit-xml"])
@given(tests=TESTS)
def test_go_json_and_junit_reports_of_n_failures_parse_back_with_all_frames(
    fmt: str, tests: list[tuple[str, list[int]]]
) -> None:
    text, expected = _render_wrapped(fmt, tests)
    assert detect_format(text) == fmt
    failures = parse_test_output(text)
    assert [(f.name, [(x.path, x.line) for x in f.frames]) for f in failures] == expected
    assert all(f.message == "bad" for f in failures)


@pytest.mark.parametrize("fmt", ["vitest", "jest", "mocha", "node-test", "tap", "go", "cargo", "java"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(tests=TESTS)
def test_a_log_of_n_failures_parses_back_into_n_failures_with_all_frames(
    fmt: str, tests: list[tuple[str, list[int]]]
) -> None:
    text, expected = _render(fmt, tests)
    assert detect_format(text) == fmt
    failures = parse_log(text)
    assert [(f.name, [(x.path, x.line) for x in f.frames]) for f in failures] == expected
    assert all(f.message == "bad" for f in failures)


# --- coverage reports of these languages ------------------------------------------------

COVERAGE = [
    (
        "node",
        "node-lcov.info",
        "lcov",
        {"src/calc.js": set(range(1, 15)), "test/calc.test.js": set(range(1, 17))},
    ),
    ("go", "go-cover.out", "go-cover", {"calc/calc.go": {4, 5, 6}}),
    (
        "java",
        "jacoco.xml",
        "jacoco",
        {"src/main/java/com/example/Calc.java": {7, 11, 14}, "src/test/java/com/example/CalcTest.java": {10}},
    ),
]


@pytest.mark.parametrize(("repo", "report", "fmt", "executed"), COVERAGE, ids=[c[1] for c in COVERAGE])
def test_coverage_reports_of_other_languages_are_execution_evidence(
    repo: str, report: str, fmt: str, executed: dict[str, set[int]]
) -> None:
    from bugcontext.job.sources.coverage import detect_format as coverage_format
    from bugcontext.job.sources.coverage import read_coverage
    from bugcontext.job.sources.files import Repository

    data = (LOGS / report).read_bytes()
    assert coverage_format(data) == fmt
    record = read_coverage(data, Repository(REPOS / repo))
    assert record.source == fmt and record.unmapped == ()
    assert {path: set(record.executed(path)) for path in record.measured} == executed


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"mode: set\nnot a block\n", "Go cover profile report: line 2"),
        (b"mode: count\nx.go:9.1,1.2 1 x\n", "Go cover profile report: line 2"),
        (
            b'<report><package name="p"><sourcefile><line nr="1" ci="1"/></sourcefile></package></report>',
            "without a name",
        ),
        (
            b'<report><package name="p"><sourcefile name="A.java"><line nr="x" ci="1"/>'
            b"</sourcefile></package></report>",
            "line number 'x'",
        ),
    ],
)
def test_damaged_go_and_jacoco_reports_are_refused(data: bytes, problem: str) -> None:
    from bugcontext.core.errors import InvalidInputError
    from bugcontext.job.sources.coverage import read_coverage
    from bugcontext.job.sources.files import Repository

    with pytest.raises(InvalidInputError, match="coverage") as caught:
        read_coverage(data, Repository(REPOS / "go"))
    assert problem in str(caught.value)


def test_a_go_cover_profile_adds_executed_units_to_the_context() -> None:
    log = (LOGS / "go-plain.log").read_text(encoding="utf-8")
    gathered = gather(REPOS / "go", log, coverage=(LOGS / "go-cover.out").read_bytes())
    assert gathered.execution is not None and gathered.execution.source == "go-cover"
    assert any(w.path == "calc/calc.go" and w.start <= 5 <= w.end for w in gathered.candidates)


# --- source maps -------------------------------------------------------------------------

SEGMENT = st.tuples(st.integers(0, 500), st.integers(0, 3), st.integers(0, 9000), st.integers(0, 200))


@given(st.lists(st.lists(SEGMENT, max_size=6), min_size=1, max_size=20))
def test_source_map_mappings_decode_what_was_encoded(lines: list[list[tuple[int, int, int, int]]]) -> None:
    from bugcontext.job.sources.logs.sourcemap import decode_mappings, encode_vlq

    state = [0, 0, 0, 0]
    texts = []
    expected = []
    for segments in lines:
        ordered = sorted(segments)
        state[0] = 0
        pieces = []
        for segment in ordered:
            pieces.append(encode_vlq([v - state[i] for i, v in enumerate(segment)]))
            state = list(segment)
        texts.append(",".join(pieces))
        expected.append(ordered)
    assert decode_mappings(";".join(texts)) == expected


@pytest.mark.parametrize("bad", ["A!", "g", "AA", "AAA", "AAAAAA"])
def test_damaged_source_map_mappings_are_refused(bad: str) -> None:
    from bugcontext.job.sources.logs.sourcemap import decode_mappings

    with pytest.raises(ValueError):
        decode_mappings(bad)


def test_a_source_map_over_its_limit_is_not_read() -> None:
    from bugcontext.core.limits import Limits
    from bugcontext.job.sources.files import Repository

    repo = Repository(REPOS / "tsmap", limits=Limits(max_source_map_bytes=64))
    gathered = gather(repo, (LOGS / "tsmap-spec.log").read_text(encoding="utf-8"))
    assert list(gathered.failure_files) == ["dist/calc.js", "test/calc.test.js"]
    assert "max_source_map_bytes" in repo.skipped["dist/calc.js.map"]


@pytest.mark.parametrize("fmt", ["vitest", "jest", "mocha", "node-test", "tap", "go", "cargo", "java"])
def test_the_parsers_run_in_linear_time_on_many_failures(fmt: str) -> None:
    from test_failure_kinds import time_limit

    tests = [(f"n{i}", [i % 4000 + 1, 7, i % 13 + 1]) for i in range(10_000)]
    text, expected = _render(fmt, tests)
    with time_limit(120):
        failures = parse_log(text)
    assert len(failures) == len(expected)
    assert [(x.path, x.line) for x in failures[-1].frames] == expected[-1][1]


@pytest.mark.parametrize(
    "text",
    [
        "    at " + "(" * 200_000,
        "\tat " + "a." * 100_000 + "(",
        "  ● " + " \u203a " * 60_000,
        "\u2716 " + " (1" * 60_000,
        "not ok 1 " + "# " * 100_000,
        "--- FAIL: " + "a/" * 100_000 + " (0.00s)",
        "thread '" + "'" * 200_000 + " panicked at ",
        "panic: x\n" + "f(\n\t/a.go:1 +0x1\n" * 30_000,
        "\n".join(["  1) a", "     " + "b " * 50_000]) + "\n  1 failing",
    ],
)
def test_adversarial_logs_parse_in_linear_time(text: str) -> None:
    from test_failure_kinds import time_limit

    with time_limit(60):
        parse_log(text)
        detect_format(text)


def test_the_mcp_tool_reads_any_runner_log_and_a_junit_report_alone() -> None:
    pytest.importorskip("mcp")
    import bugcontext
    from bugcontext.integrations.mcp_server import create_server
    from test_mcp_server import _calls, _context

    repo = REPOS / "java"
    log = (LOGS / "junit4.log").read_text(encoding="utf-8")
    report = (LOGS / "junit5-report.xml").read_text(encoding="utf-8")
    server = create_server(cache=False, roots=[DATA])
    from_log, from_report, from_file = _calls(
        server,
        _context(repo, test_log=log, budget=2000),
        _context(repo, junit_xml=report, budget=2000),
        _context(repo, junit_file=str(LOGS / "junit5-report.xml"), budget=2000),
    )
    expected = bugcontext.Workspace(repo, cache=False).context(log, budget=2000)
    assert not from_log.is_error, from_log
    assert from_log.structured_content["result"] == json.loads(json.dumps(expected.to_dict()))
    alone = bugcontext.Workspace(repo, cache=False).context("", junit_xml=report, budget=2000)
    for result in (from_report, from_file):
        assert not result.is_error, result
        assert result.structured_content["result"] == json.loads(json.dumps(alone.to_dict()))
    assert (
        alone.gathered.failure is not None
        and alone.gathered.failure.test_id == "com.example.CalcJupiterTest.adds()"
    )


@pytest.mark.parametrize(
    ("log", "test", "chosen"),
    [
        ("cargo-test.log", "tests::divides_by_zero", "src/lib.rs::tests::divides_by_zero"),
        ("cargo-test.log", "halves", "tests/api.rs::halves"),
        ("go-plain.log", "TestAt", "example.com/shop/calc.TestAt"),
        ("junit4.log", "CalcTest.adds", "com.example.CalcTest.adds"),
        ("junit4.log", "com.example.CalcTest.dividesByZero", "com.example.CalcTest.dividesByZero"),
        ("jest.log", "calc > divides by zero", "src/__tests__/calc.js > calc > divides by zero"),
        ("vitest.log", "src/calc.test.ts > calc > adds", "src/calc.test.ts > calc > adds"),
        ("node-spec.log", "halves", "test/suite.test.js > halves"),
    ],
)
def test_a_failing_test_is_chosen_by_its_id_or_name_in_every_language(
    log: str, test: str, chosen: str
) -> None:
    from bugcontext.job.sources.runs import failing_tests, select_test

    failures = parse_test_output((LOGS / log).read_text(encoding="utf-8"))
    found = select_test(failing_tests(failures), test)
    assert found is not None and found.test == chosen


def test_a_suite_that_failed_to_run_is_an_error() -> None:
    vitest = (
        "\n\u23af\u23af Failed Suites 1 \u23af\u23af\n\n FAIL  src/broken.test.ts [ src/broken.test.ts ]\n"
        "Error: Failed to load url ./missing\n \u276f src/broken.test.ts:2:1\n\n Test Files  1 failed (1)\n"
    )
    jest = (
        " FAIL  src/broken.test.ts\n  \u25cf Test suite failed to run\n\n    SyntaxError: bad\n\n"
        "      at Parser.raise (node_modules/@babel/parser/lib/index.js:1:2)\n"
        "      at Object.<anonymous> (src/broken.test.ts:1:1)\n\nTest Suites: 1 failed, 1 total\n"
    )
    got = [
        (f.name, f.status, f.exception_type, [(x.path, x.line) for x in f.frames]) for f in parse_log(vitest)
    ]
    assert got == [("src/broken.test.ts", "error", "Error", [("src/broken.test.ts", 2)])]
    got = [
        (f.name, f.status, f.exception_type, [(x.path, x.line) for x in f.frames]) for f in parse_log(jest)
    ]
    assert got == [("Test suite failed to run", "error", "SyntaxError", [("src/broken.test.ts", 1)])]
