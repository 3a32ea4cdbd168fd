"""Benchmarks of ``.gitignore`` matching: the reader's bounded matching against pathspec's
own matching with Python's backtracking ``re``.

Two groups, each with a ``bounded`` line (``bugcontext.job.sources.files._rules``: pathspec's
``GitIgnoreSpec`` whose patterns that could backtrack are matched by RE2, the others by
``re``) and a ``python-re`` line (pathspec's ``GitIgnoreSpec.from_lines(lines,
backend="simple")``), checking the same paths against the same rules (the verdicts are
compared outside the timing):

* ``typical``: the 40 rules below (the usual Python project ``.gitignore``) against 5,000
  generated repository paths (seeded): the everyday cost;
* ``pathological-N``: the one rule ``*a*a*a*a*a*a*a*a*a*a*b`` against a file name of ``N``
  ``a``\\ s (no ``b``, so it does not match). Python's ``re`` tries every way of splitting
  the name among the ten ``*``: the time grows like ``N**10/10!`` (N = 18, 20, 22 here; at
  N = 100 it would take longer than anyone waits); RE2 runs in time linear in ``N`` (also
  measured at N = 100 and 4,000).

``python -m pytest benches/test_bench_gitignore.py --benchmark-only`` runs them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from bugcontext.job.sources.files import _rules
from pathspec import GitIgnoreSpec

TYPICAL = [
    "__pycache__/",
    "*.py[cod]",
    "*$py.class",
    "*.so",
    ".Python",
    "build/",
    "develop-eggs/",
    "dist/",
    "downloads/",
    "eggs/",
    ".eggs/",
    "lib/",
    "lib64/",
    "parts/",
    "sdist/",
    "var/",
    "wheels/",
    "*.egg-info/",
    ".installed.cfg",
    "*.egg",
    "MANIFEST",
    "*.manifest",
    "*.spec",
    "pip-log.txt",
    "htmlcov/",
    ".tox/",
    ".coverage",
    ".coverage.*",
    "nosetests.xml",
    "coverage.xml",
    "*.cover",
    ".hypothesis/",
    ".pytest_cache/",
    "docs/_build/",
    "target/",
    ".ipynb_checkpoints",
    "/site",
    ".mypy_cache/",
    "!lib/keep/**",
    "**/generated/*.txt",
]

WORDS = ["src", "lib", "pkg", "core", "util", "tests", "docs", "build", "data", "generated", "api", "io"]
SUFFIXES = [".py", ".pyc", ".txt", ".md", ".so", ".json", ".egg", ".cfg", ""]


def typical_paths(n: int = 5_000, seed: int = 20_261_201) -> list[str]:
    rng = random.Random(seed)
    paths = []
    for _ in range(n):
        folders = [rng.choice(WORDS) for _ in range(rng.randint(0, 5))]
        name = rng.choice(WORDS) + str(rng.randint(0, 99)) + rng.choice(SUFFIXES)
        paths.append("/".join([*folders, name]))
    return paths


def python_re(lines: list[str]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(lines, backend="simple")


MATCHERS: dict[str, Callable[[list[str]], GitIgnoreSpec]] = {"bounded": _rules, "python-re": python_re}


def verdicts(spec: GitIgnoreSpec, paths: list[str]) -> list[bool | None]:
    return [spec.check_file(path).include for path in paths]


@pytest.mark.parametrize("matcher", list(MATCHERS))
def test_typical(benchmark: Any, matcher: str) -> None:
    benchmark.group = "gitignore typical: 40 rules, 5,000 paths"
    paths = typical_paths()
    spec = MATCHERS[matcher](TYPICAL)
    assert verdicts(spec, paths) == verdicts(python_re(TYPICAL), paths)
    benchmark.pedantic(verdicts, args=(spec, paths), rounds=5, iterations=1)


PATHOLOGICAL = "*a*a*a*a*a*a*a*a*a*a*b"


@pytest.mark.parametrize(
    ("matcher", "length"),
    [
        ("python-re", 18),
        ("python-re", 20),
        ("python-re", 22),
        ("bounded", 18),
        ("bounded", 20),
        ("bounded", 22),
        ("bounded", 100),
        ("bounded", 4_000),
    ],
)
def test_pathological(benchmark: Any, matcher: str, length: int) -> None:
    benchmark.group = "gitignore pathological: *a*a*a*a*a*a*a*a*a*a*b against a name of N a's"
    spec = MATCHERS[matcher]([PATHOLOGICAL])
    name = ["a" * length]
    assert verdicts(spec, name) == [None]
    benchmark.extra_info["N"] = length
    benchmark.pedantic(verdicts, args=(spec, name), rounds=3, iterations=1)
