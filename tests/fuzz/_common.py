"""Shared pieces of the fuzz targets (``tests/fuzz/fuzz_*.py``).

Each target module defines ``check(data: bytes) -> None``: it feeds one input to the code
under test and asserts the target's invariants, raising ``AssertionError`` (or letting an
undocumented exception escape) when one fails. ``check`` is plain Python, so the corpus
replay test (``tests/test_fuzz_corpus.py``) runs it without atheris; :func:`fuzz_main`
runs it under atheris (libFuzzer). A target imports the code under test inside
:func:`instrumented`, which, when the target runs as the fuzzer (its file is the program),
instruments ``bugcontext`` and the named libraries for coverage as they are imported
(``atheris.instrument_imports``: only that code, so start-up takes a second, not the minute
``atheris.instrument_all`` takes over everything loaded).

The time guard: one input may take at most :func:`time_limit` seconds (50 ms plus 20 µs
per input byte, or what the target sets, times ``BUGCONTEXT_FUZZ_TIME_SCALE``, default
1; the instrumented code under atheris gets 4 times that). A slow input is timed a second
time before it counts, so that a pause of the machine (another process, the garbage
collector) is not reported as a super-linear path.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["CORPUS", "fuzz_main", "guarded", "instrumented", "time_limit"]

#: The committed seed corpora, one folder per target name.
CORPUS = Path(__file__).resolve().parent / "corpus"

_INSTRUMENTED = Path(sys.argv[0]).name.startswith("fuzz_")


def instrumented(*libraries: str) -> contextlib.AbstractContextManager[Any]:
    """A context for the target's imports: under the fuzzer, ``bugcontext`` and
    ``libraries`` imported inside it are instrumented for coverage; otherwise (the corpus
    replay test) nothing happens."""
    if not _INSTRUMENTED:
        return contextlib.nullcontext()
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    manager: contextlib.AbstractContextManager[Any] = atheris.instrument_imports(
        include=["bugcontext", *libraries]
    )
    return manager


def time_limit(size: int, per_byte: float = 20e-6) -> float:
    """Seconds one input of ``size`` bytes may take: 50 ms + ``per_byte`` seconds (20 µs)
    per byte, scaled."""
    scale = float(os.environ.get("BUGCONTEXT_FUZZ_TIME_SCALE", "1"))
    if _INSTRUMENTED:
        scale *= 4
    return (0.05 + per_byte * size) * scale


def guarded(check: Callable[[bytes], None], per_byte: float = 20e-6) -> Callable[[bytes], None]:
    """``check`` with the per-input time guard: an input that takes longer than
    :func:`time_limit` twice in a row fails with ``AssertionError``."""

    def run(data: bytes) -> None:
        limit = time_limit(len(data), per_byte)
        began = time.perf_counter()
        check(data)
        took = time.perf_counter() - began
        if took > limit:
            began = time.perf_counter()
            check(data)
            again = time.perf_counter() - began
            if again > limit:
                raise AssertionError(
                    f"{len(data)} bytes took {took * 1e3:.1f} ms and {again * 1e3:.1f} ms "
                    f"(limit {limit * 1e3:.1f} ms): a super-linear path"
                )

    run.__name__ = check.__name__
    run.__doc__ = check.__doc__
    return run


def fuzz_main(
    check: Callable[[bytes], None], warm_up: Callable[[], None] | None = None, per_byte: float = 20e-6
) -> None:
    """Run ``check`` under atheris with ``sys.argv`` as libFuzzer's arguments (the code
    under test instrumented by :func:`instrumented`); ``warm_up`` runs first (lazy imports,
    tables built on first use), so that its cost does not count against the first input's
    time; ``per_byte`` as in :func:`time_limit`."""
    import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]

    if warm_up is not None:
        warm_up()
    atheris.Setup(sys.argv, guarded(check, per_byte))
    atheris.Fuzz()
