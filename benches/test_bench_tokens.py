"""Benchmarks of token counting: ``TokenCounter.count`` against tiktoken.

The texts: 10,000 candidates of 1,000-3,000 characters of real source code, whole lines cut
from the Python standard library's ``.py`` files (seeded, so the same on every run of one
Python installation; about 20 MB). For each encoding (``o200k_base``, ``cl100k_base``) one
pytest-benchmark group holds three lines:

* ``tiktoken``: ``[len(t) for t in enc.encode_ordinary_batch(texts, num_threads=1)]``, tiktoken
  encoding on one thread and counting the tokens;
* ``first``: ``TokenCounter(name).count(texts)`` on a new counter, so every text is counted
  (one thread, the GIL released);
* ``repeat``: the same call on a counter that has already counted these texts: every count is a
  cache hit (hash the text, look it up).

``first`` and ``tiktoken`` get fresh copies of the strings each round, so neither reuses the
UTF-8 form that CPython caches inside a non-ASCII ``str`` after its first conversion;
``repeat`` uses the same strings again, as a repeated build over the same candidates does.
Each line records its throughput in ``extra_info`` (``mb_per_s``: MB of UTF-8 a second);
``first`` also records ``vs_tiktoken`` (tiktoken's median time over its own) and ``repeat``
records ``vs_first`` (first's median over its own), when those lines ran before it in the
same session. Targets: ``vs_tiktoken >= 2`` and ``vs_first >= 10``.

Outside the timing, the counts are checked against tiktoken's. tiktoken's ``Encoding`` is built
offline, from the vocabularies that the ``bpe-openai`` crate ships (located with
``cargo metadata``); without tiktoken, the ``tiktoken`` lines are skipped.

``python benches/test_bench_tokens.py`` runs the same measurements without pytest and prints
a Markdown table.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import json
import random
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bugcontext._core import TokenCounter

ENCODINGS = ("o200k_base", "cl100k_base")
N_TEXTS = 10_000
MIN_CHARS, MAX_CHARS = 1_000, 3_000
SEED = 20_240_601
ROUNDS = {"tiktoken": 5, "first": 5, "repeat": 50}
REPO = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[str, ...]:
    """``N_TEXTS`` runs of whole lines, ``MIN_CHARS``-``MAX_CHARS`` characters each, from the
    standard library's Python files (chosen by a seeded generator)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if not {"site-packages", "dist-packages"} & set(p.parts))
    rng = random.Random(SEED)
    texts: list[str] = []
    while len(texts) < N_TEXTS:
        lines = files[rng.randrange(len(files))].read_text("utf-8", "replace").splitlines(keepends=True)
        target = rng.randint(MIN_CHARS, MAX_CHARS)
        if sum(map(len, lines)) < target:
            continue
        start = rng.randrange(len(lines))
        text = ""
        for line in lines[start:]:
            if len(text) + len(line) > target:
                break
            text += line
        if len(text) >= MIN_CHARS:
            texts.append(text)
    return tuple(texts)


def fresh_copies(texts: tuple[str, ...]) -> list[str]:
    """New ``str`` objects equal to ``texts`` (none holds a cached UTF-8 form)."""
    return [t.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") for t in texts]


def utf8_megabytes(texts: tuple[str, ...]) -> float:
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6


@functools.cache
def tiktoken_encoding(name: str) -> Any:
    """tiktoken's ``Encoding`` for ``name``, from the ``bpe-openai`` crate's vocabulary file
    (checked against the SHA-256 tiktoken expects); ``None`` without tiktoken."""
    try:
        import tiktoken
        import tiktoken_ext.openai_public as openai_public
    except ImportError:
        return None
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1"], cwd=REPO, capture_output=True, text=True, check=True
    )
    packages = json.loads(meta.stdout)["packages"]
    (manifest,) = [p["manifest_path"] for p in packages if p["name"] == "bpe-openai"]
    data_file = Path(manifest).parent / "data" / f"{name}.tiktoken.gz"

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        data = gzip.decompress(data_file.read_bytes())
        if hashlib.sha256(data).hexdigest() != expected_hash:
            raise RuntimeError(f"{data_file.name} is not the vocabulary tiktoken expects for {url}")
        pairs = (line.split() for line in data.splitlines() if line)
        return {base64.b64decode(token): int(rank) for token, rank in pairs}

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(openai_public, "load_tiktoken_bpe", load)
        spec = getattr(openai_public, name)()
    return tiktoken.Encoding(
        spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


def tiktoken_counts(enc: Any, texts: list[str]) -> list[int]:
    return [len(tokens) for tokens in enc.encode_ordinary_batch(texts, num_threads=1)]


def warm_counter(name: str) -> TokenCounter:
    """A counter that has counted the corpus (and built its encoding's tables)."""
    counter = TokenCounter(name)
    counter.count(corpus())
    return counter


# ---------------------------------------------------------------------------
# pytest-benchmark
# ---------------------------------------------------------------------------

# Median seconds per (encoding, line) measured in this session, for the ratios.
_MEDIANS: dict[tuple[str, str], float] = {}


def _record(benchmark: Any, name: str, line: str) -> None:
    median = float(benchmark.stats.stats.median)
    _MEDIANS[name, line] = median
    benchmark.extra_info["mb_per_s"] = round(utf8_megabytes(corpus()) / median, 2)
    benchmark.extra_info["texts"] = N_TEXTS


@pytest.mark.parametrize("name", ENCODINGS)
def test_tiktoken(benchmark: Any, name: str) -> None:
    enc = tiktoken_encoding(name)
    if enc is None:
        pytest.skip("tiktoken is not installed (it is in the `test` extra)")
    texts = corpus()
    assert tiktoken_counts(enc, list(texts)) == TokenCounter(name).count(texts)
    benchmark.group = f"tokens {name} 10k"
    benchmark.name = "tiktoken"
    benchmark.pedantic(
        tiktoken_counts, setup=lambda: ((enc, fresh_copies(texts)), {}), rounds=ROUNDS["tiktoken"]
    )
    _record(benchmark, name, "tiktoken")


@pytest.mark.parametrize("name", ENCODINGS)
def test_first(benchmark: Any, name: str) -> None:
    texts = corpus()
    warm_counter(name)  # build the encoding's tables outside the timing

    def setup() -> tuple[tuple[Callable[[list[str]], list[int]], list[str]], dict[str, Any]]:
        return (TokenCounter(name).count, fresh_copies(texts)), {}

    benchmark.group = f"tokens {name} 10k"
    benchmark.name = "first"
    benchmark.pedantic(lambda count, ts: count(ts), setup=setup, rounds=ROUNDS["first"])
    _record(benchmark, name, "first")
    if (name, "tiktoken") in _MEDIANS:
        ratio = _MEDIANS[name, "tiktoken"] / _MEDIANS[name, "first"]
        benchmark.extra_info["vs_tiktoken"] = round(ratio, 2)


@pytest.mark.parametrize("name", ENCODINGS)
def test_repeat(benchmark: Any, name: str) -> None:
    texts = corpus()
    counter = warm_counter(name)
    expected = TokenCounter(name).count(texts)
    benchmark.group = f"tokens {name} 10k"
    benchmark.name = "repeat"
    result = benchmark.pedantic(counter.count, args=(texts,), rounds=ROUNDS["repeat"])
    assert result == expected
    assert counter.cache_size == len(set(texts))
    _record(benchmark, name, "repeat")
    if (name, "first") in _MEDIANS:
        ratio = _MEDIANS[name, "first"] / _MEDIANS[name, "repeat"]
        benchmark.extra_info["vs_first"] = round(ratio, 1)


# ---------------------------------------------------------------------------
# Without pytest: python benches/test_bench_tokens.py
# ---------------------------------------------------------------------------


def _median_seconds(run: Callable[[], object], setup: Callable[[], None], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        setup()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(name: str) -> dict[str, float | None]:
    """Median seconds of the three lines for one encoding (``tiktoken`` is ``None`` without
    tiktoken)."""
    texts = corpus()
    counter = warm_counter(name)
    state: dict[str, Any] = {}

    def new_strings() -> None:
        state["texts"] = fresh_copies(texts)

    def new_counter() -> None:
        new_strings()
        state["counter"] = TokenCounter(name)

    first = _median_seconds(lambda: state["counter"].count(state["texts"]), new_counter, ROUNDS["first"])
    repeat = _median_seconds(lambda: counter.count(texts), lambda: None, ROUNDS["repeat"])
    enc = tiktoken_encoding(name)
    tik = None
    if enc is not None:
        assert tiktoken_counts(enc, list(texts)) == counter.count(texts)
        tik = _median_seconds(lambda: tiktoken_counts(enc, state["texts"]), new_strings, ROUNDS["tiktoken"])
    return {"tiktoken": tik, "first": first, "repeat": repeat}


def main() -> None:
    texts = corpus()
    mb = utf8_megabytes(texts)
    print(f"{len(texts):,} texts, {sum(map(len, texts)):,} characters, {mb:.1f} MB of UTF-8")
    print(f"Python {sys.version.split()[0]}; medians\n")
    print("| encoding | tiktoken | first | repeat | first vs tiktoken | repeat vs first |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in ENCODINGS:
        m = measure(name)
        first, repeat, tik = m["first"], m["repeat"], m["tiktoken"]
        assert first is not None and repeat is not None
        tik_cell = "n/a" if tik is None else f"{tik * 1e3:.0f} ms ({mb / tik:.1f} MB/s)"
        vs = "n/a" if tik is None else f"{tik / first:.2f}x"
        print(
            f"| {name} | {tik_cell} | {first * 1e3:.0f} ms ({mb / first:.1f} MB/s) | "
            f"{repeat * 1e3:.2f} ms | {vs} | {first / repeat:.0f}x |"
        )


if __name__ == "__main__":
    main()
