"""Shared test builders: a small failing repository and its pytest log, used by the tests of
the context job, the command line, the MCP server and the cache."""

from __future__ import annotations

from pathlib import Path

__all__ = ["LIB", "OTHER", "TEST", "ratios_log", "ratios_repo"]

#: ``lib/ratios.py`` of :func:`ratios_repo`: a division by zero for ``"3/0"``.
LIB = """\
def parse_ratio(text):
    num, den = text.split("/")
    return int(num) / int(den)


def mean_ratio(items):
    return sum(parse_ratio(i) for i in items) / len(items)
"""

OTHER = '''\
def unrelated(value):
    """Nothing to do with ratios."""
    return value * 2
'''


def ratios_log(test: str = "tests/test_ratios.py::test_mean_ratio") -> str:
    """The pytest log of the ratios repository (:func:`ratios_repo`): ``test`` fails with a
    ``ZeroDivisionError`` three frames deep, ``test_other`` on an assertion."""
    return f"""\
=================================== FAILURES ===================================
_______________________________ test_mean_ratio ________________________________

    def test_mean_ratio():
>       assert mean_ratio(["1/2", "3/0"]) == 0.25

tests/test_ratios.py:5:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

items = ['1/2', '3/0']

    def mean_ratio(items):
>       return sum(parse_ratio(i) for i in items) / len(items)

lib/ratios.py:7:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

text = '3/0'

    def parse_ratio(text):
        num, den = text.split("/")
>       return int(num) / int(den)
E       ZeroDivisionError: division by zero

lib/ratios.py:3: ZeroDivisionError
___________________________________ test_other ___________________________________

    def test_other():
>       assert unrelated(2) == 5
E       assert 4 == 5
E        +  where 4 = unrelated(2)

tests/test_ratios.py:9: AssertionError
=========================== short test summary info ============================
FAILED {test} - ZeroDivisionError: division by zero
FAILED tests/test_ratios.py::test_other - assert 4 == 5
"""


TEST = """\
from lib.ratios import mean_ratio
from lib.other import unrelated

def test_mean_ratio():
    assert mean_ratio(["1/2", "3/0"]) == 0.25


def test_other():
    assert unrelated(2) == 5
"""


def ratios_repo(tmp_path: Path) -> Path:
    """``tmp_path/repo``: ``lib/ratios.py`` (:data:`LIB`), ``lib/other.py`` (:data:`OTHER`) and
    ``tests/test_ratios.py`` (:data:`TEST`), whose two tests fail as :func:`ratios_log` says."""
    root = tmp_path / "repo"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (root / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    (root / "lib" / "other.py").write_text(OTHER, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_ratios.py").write_text(TEST, encoding="utf-8")
    return root
