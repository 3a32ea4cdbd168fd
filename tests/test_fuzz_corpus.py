"""The fuzz corpora as a regression suite: every committed input of
``tests/fuzz/corpus/<target>/`` (the seeds and every input that once found a fault) goes
through its target's ``check`` (``tests/fuzz/fuzz_<target>.py``), which asserts the target's
invariants. Plain Python, no atheris: deterministic and fast. ``scripts/fuzz.sh`` runs the
targets under the fuzzer."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent / "fuzz"
sys.path.insert(0, str(FUZZ))

TARGETS = ("pytest_log", "junit", "secrets", "gitignore", "build", "render")


def _check(target: str) -> Callable[[bytes], None]:
    module = importlib.import_module(f"fuzz_{target}")
    check: Callable[[bytes], None] = module.check
    return check


def _inputs() -> list[tuple[str, Path]]:
    return [(target, path) for target in TARGETS for path in sorted((FUZZ / "corpus" / target).iterdir())]


def test_every_target_has_a_module_and_a_corpus() -> None:
    assert sorted(p.stem.removeprefix("fuzz_") for p in FUZZ.glob("fuzz_*.py")) == sorted(TARGETS)
    for target in TARGETS:
        assert len(list((FUZZ / "corpus" / target).iterdir())) >= 3, target


@pytest.mark.parametrize(("target", "path"), _inputs(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_corpus_input_holds_the_invariants(target: str, path: Path) -> None:
    _check(target)(path.read_bytes())
