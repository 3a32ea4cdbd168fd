#!/usr/bin/env python3
"""Compare the Rust engine with the pure-Python reference on many generated inputs.

    python scripts/differential.py --cases 1000000 --seed 1 [--jobs N] [--out DIR]

Case ``k`` is generated from ``random.Random(f"{seed}:{k}")`` alone, so any case can be made
again by its number (``--only K``). Inputs are valid and invalid: a few to a few dozen
candidates over a handful of paths (several spellings of each, non-ASCII and lone-surrogate
names), windows crowded onto a few dozen lines so that ranges collide, every candidate form
(``Candidate``, mapping, frozen dataclass, plain object) and hostile values (``str``, ``int``
and ``float`` subclasses overriding ``__eq__``/``__hash__``/``__str__``/``__float__``, lying or
raising; ``__index__`` objects; ``bool``; huge integers; NaN and infinities), budgets in
characters or exact tokens, with and without a template, one or several failing files, and
groups (small ids shared by candidates whose ranges collide, equal ids of different types such
as ``1``/``1.0``/``True``, lying ``str`` ids, unhashable ids), and provenance (``source_sha256``
of the file or of another version, ``source_id``, bad values of both) built with and without a
``verify`` reader over files that hold, or no longer hold, the windows (CRLF and lone CR line
ends, a missing file); the paths each engine's reader was asked for must be equal too.

Both engines must give the same result (the JSON form with ``missing_critical`` and the digest,
and the items, compared strictly: types, float signs) and the same cache key, or raise the same
error (type, index, field, problem, message), and neither may change the input. A mismatch is
minimised (candidates dropped one at a time while it persists) and written to
``DIR/mismatch-<case>.json`` (seed, case, the dropped candidates, the input's ``repr`` and the
two outcomes). Prints cases per second; exits 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bugcontext import Candidate
from bugcontext.core.composer import CALLER_SOURCE

# The hostile values and candidate forms are those of the tests (tests/hostile.py: standard
# library only, no test tool), so the run and the tests try the same lies.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hostile import (
    EqualStr,
    FrozenCandidate,
    Idx,
    LyingFloat,
    LyingInt,
    PlainCandidate,
    RaisingFloat,
    shown,
)

FIELDS = ("path", "start", "end", "content", "reason", "score")
ITEM_FIELDS = (*FIELDS, "group", "source_sha256", "source_id")
PATHS = ["a.py", "./a.py", "a.py/", "src/b.py", "src//b.py", "ü/ñ.py", "s\udcff.py", "A.py"]
TEXTS = ["", "x", "def f():\n    return 1\n", "```\n", "<a>&</a>", "é😀", "\udc80z", "\r\n", "a" * 40]
ENCODINGS = ["o200k_base", "cl100k_base"]


def _line(rnd: random.Random) -> Any:
    roll = rnd.random()
    if roll < 0.9:
        return rnd.randint(1, 30)
    return rnd.choice([0, -1, 2**31 - 1, 2**31, 2**70, True, Idx(rnd.randint(1, 30)), LyingInt(5), "3", 1.0])


def _score(rnd: random.Random) -> Any:
    roll = rnd.random()
    if roll < 0.45:
        return rnd.choice([0, 1, 2, 3, -1])
    if roll < 0.5:  # ints that round to one float64 (ranked alike, keyed apart)
        return rnd.choice([2**53, 2**53 + 1, -(2**60) - 1, 2**1000])
    if roll < 0.9:
        return rnd.choice([0.5, 1.0, -0.0, 0.0, 2.5, 1e308, -1e-308])
    return rnd.choice(
        [math.nan, math.inf, -math.inf, True, 10**400, LyingFloat(3.0), RaisingFloat(1.0), "1", None]
    )


def _reason(rnd: random.Random) -> Any:
    if rnd.random() < 0.95:
        return rnd.choice(["failure", "reference", "search"])
    return rnd.choice(["Search", "", EqualStr("search"), 3, None])


def _content(rnd: random.Random) -> Any:
    roll = rnd.random()
    if roll < 0.93:
        return "".join(rnd.choice(TEXTS) for _ in range(rnd.randint(0, 4)))
    if roll < 0.98:
        return EqualStr(rnd.choice(TEXTS))
    return rnd.choice([b"bytes", None, 3])


def _path(rnd: random.Random) -> Any:
    if rnd.random() < 0.96:
        return rnd.choice(PATHS)
    return rnd.choice(["", "/abs.py", "a/../b.py", "a\\b.py", "a\0.py", EqualStr("a.py"), 5])


def _file(path: str) -> bytes | None:
    """The text of the file at canonical ``path`` that a ``verify`` reader returns (``None``:
    missing): 40 lines naming their number, some ending in CRLF or a lone CR."""
    if path.startswith("src"):
        return None
    ends = ["\n", "\n", "\r\n", "\n", "\r"]
    return "".join(f"{path} {i}{ends[i % 5]}" for i in range(1, 41)).encode("utf-8", "surrogatepass")


def _lines(path: str, start: int, end: int) -> str | None:
    """Lines ``start..end`` of :func:`_file`, endings kept, or ``None``."""
    data = _file(path)
    if data is None or end > 40:
        return None
    text = data.decode("utf-8", "surrogatepass")
    return "".join(text.splitlines(keepends=True)[start - 1 : end])


def _canonical(path: Any) -> str | None:
    from bugcontext.core._input import PathProblem, canonical_path

    try:
        return canonical_path(path) if type(path) is str else None
    except PathProblem:
        return None


def _provenance(rnd: random.Random, fields: dict[str, Any]) -> None:
    """Add ``source_sha256`` / ``source_id`` to some candidates, mostly valid."""
    import hashlib

    path = _canonical(fields.get("path"))
    data = _file(path) if path is not None else None
    if rnd.random() < 0.8:
        if data is not None and rnd.random() < 0.7:
            fields["source_sha256"] = hashlib.sha256(data).hexdigest()
        else:
            fields["source_sha256"] = rnd.choice(["0" * 64, hashlib.sha256(b"old").hexdigest(), None])
    if rnd.random() < 0.6:
        fields["source_id"] = rnd.choice(
            ["failure", "reference", "search", "plug-in: ü", None, CALLER_SOURCE, EqualStr(CALLER_SOURCE)]
        )
    if rnd.random() < 0.05:
        field = rnd.choice(["source_sha256", "source_id"])
        fields[field] = rnd.choice(["", "A" * 64, "abc", 3, "x" * 257, EqualStr("search"), b"0" * 64])


def _group(rnd: random.Random) -> Any:
    if rnd.random() < 0.9:
        return rnd.choice([0, 1, 2, "g", None])
    return rnd.choice([1.0, True, EqualStr("g"), ["unhashable"], 2**70, (1, 2)])


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _candidate(rnd: random.Random) -> Any:
    import bugcontext

    start = _line(rnd)
    end = start + rnd.randint(0, 6) if isinstance(start, int) and not isinstance(start, bool) else _line(rnd)
    if rnd.random() < 0.03:
        end = _line(rnd)
    fields = {
        "path": _path(rnd),
        "start": start,
        "end": end,
        "content": _content(rnd),
        "reason": _reason(rnd),
        "score": _score(rnd),
    }
    if rnd.random() < 0.01:
        del fields[rnd.choice(FIELDS)]
    if rnd.random() < 0.3:
        fields["group"] = _group(rnd)
    if rnd.random() < 0.3:
        # A window its file holds, so that a verifying build can select it.
        path = _canonical(fields.get("path"))
        if path is not None and type(start) is int and type(end) is int and 1 <= start <= end:
            lines = _lines(path, start, end)
            if lines is not None:
                fields["content"] = lines
    if rnd.random() < 0.25:
        _provenance(rnd, fields)
    form = rnd.choice(["candidate", "dict", "frozen", "plain"])
    provenance = (fields.get("source_sha256"), fields.get("source_id"))
    if form == "candidate" and (
        not _hashable(fields.get("group")) or any(v is not None and type(v) is not str for v in provenance)
    ):
        form = "dict"  # the constructor takes a hashable group and str provenance only
    if form == "dict" or any(f not in fields for f in FIELDS):
        return fields if form != "plain" else PlainCandidate(**fields)
    if form == "candidate":
        return bugcontext.Candidate(
            *(fields[f] for f in FIELDS),
            group=fields.get("group"),
            source_sha256=fields.get("source_sha256"),
            source_id=fields.get("source_id"),
        )
    if form == "frozen":
        return FrozenCandidate(**fields)
    return PlainCandidate(**fields)


def generate(seed: int, case: int) -> dict[str, Any]:
    """The input of case ``case``: a mapping for ``build``."""
    rnd = random.Random(f"{seed}:{case}")
    cands = [_candidate(rnd) for _ in range(rnd.choice([0, 1, 2, 3, 5, 8, 13, 24, 40]))]
    data: dict[str, Any] = {"candidates": cands}
    total = sum(
        len(str.__str__(c["content"]))
        for c in cands
        if isinstance(c, dict) and isinstance(c.get("content"), str)
    )
    roll = rnd.random()
    if roll < 0.45:
        data["max_chars"] = rnd.choice([0, 1, 5, total // 3, total, 10**6, rnd.randint(0, 200)])
    else:
        data["budget"] = rnd.choice([0, 10, 50, 120, 400, 2_000, rnd.randint(0, 600)])
        cost: dict[str, Any] = {"unit": rnd.choice(["chars", "tokens"])}
        if cost["unit"] == "tokens":
            cost["encoding"] = rnd.choice(ENCODINGS)
        if rnd.random() < 0.6:
            cost["template"] = rnd.choice(["markdown", "xml"])
            cost["line_numbers"] = rnd.random() < 0.3
            cost["order"] = rnd.choice(["rank", "file"])
        data["cost"] = cost
    roll = rnd.random()
    if roll < 0.3:
        data["failure_file"] = rnd.choice(PATHS)
    elif roll < 0.5:
        data["failure_files"] = rnd.sample(PATHS, rnd.randint(0, 3))
    if rnd.random() < 0.01:
        data[rnd.choice(["max_chars", "budget"])] = rnd.choice([-1, True, 1.5, None])
    return data


def _strict(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _strict(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_strict(v) for v in value))
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__qualname__, repr(value))


def _snapshot(value: Any) -> Any:
    if isinstance(value, dict):
        return ("dict", id(value), tuple((repr(k), _snapshot(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, id(value), tuple(_snapshot(v) for v in value))
    if isinstance(value, (Candidate, FrozenCandidate, PlainCandidate)):
        extra = ("group", "source_sha256", "source_id")
        fields = tuple((f, _snapshot(getattr(value, f, None))) for f in (*FIELDS, *extra))
        return (type(value).__name__, id(value), fields)
    return (_strict(value), id(value))


def _error(exc: Exception) -> tuple[Any, ...]:
    details = (getattr(exc, a, None) for a in ("index", "field", "problem"))
    return ("error", type(exc).__name__, *details, str(exc))


#: An engine's ``build`` and ``cache_key``.
Engine = tuple[Callable[..., Any], Callable[..., str]]


def outcome(engine: Engine, data: dict[str, Any], verify: bool = False) -> tuple[Any, ...]:
    """What an engine (``build``, ``cache_key``) makes of ``data``: the result or the error, the
    cache key or the error, and whether ``data`` changed; with ``verify``, built and keyed with a
    reader over :func:`_file`, and the paths each reader was asked for."""
    build, key = engine
    before = _snapshot(data)
    asked: list[str] = []

    def reader(path: str) -> bytes | None:
        asked.append(path)
        return _file(path)

    try:
        result = build(data, verify=reader) if verify else build(data)
        got: tuple[Any, ...] = (
            "ok",
            _strict(result.to_dict()),
            _strict([tuple(getattr(i, f) for f in ITEM_FIELDS) for i in result.items]),
            _strict(asked),
        )
    except Exception as exc:
        got = (*_error(exc), _strict(asked))
    keyed_asked: list[str] = []

    def key_reader(path: str) -> bytes | None:
        keyed_asked.append(path)
        return _file(path)

    try:
        keyed: tuple[Any, ...] = ("key", key(data, verify=key_reader) if verify else key(data))
    except Exception as exc:
        keyed = _error(exc)
    keyed = (*keyed, _strict(keyed_asked))
    return (got, keyed, "input unchanged" if _snapshot(data) == before else "INPUT CHANGED")


_ENGINES: tuple[Engine, Engine] | None = None


def _engines() -> tuple[Engine, Engine]:
    global _ENGINES
    if _ENGINES is None:
        import bugcontext
        import bugcontext.reference

        native = bugcontext.ContextBuilder()
        reference = bugcontext.reference.ContextBuilder()
        _ENGINES = ((native.build, native.cache_key), (reference.build, reference.cache_key))
    return _ENGINES


def mismatch(seed: int, case: int, drop: frozenset[int] = frozenset()) -> tuple[Any, Any] | None:
    """The two outcomes of case ``case`` (without the candidates in ``drop``) when they differ."""
    native, reference = _engines()
    verify = random.Random(f"{seed}:{case}:verify").random() < 0.3
    data = generate(seed, case)
    data["candidates"] = [c for i, c in enumerate(data["candidates"]) if i not in drop]
    a = outcome(native, data, verify)
    data = generate(seed, case)
    data["candidates"] = [c for i, c in enumerate(data["candidates"]) if i not in drop]
    b = outcome(reference, data, verify)
    return None if a == b else (a, b)


def _run_chunk(args: tuple[int, int, int]) -> list[int]:
    seed, first, last = args
    return [case for case in range(first, last) if mismatch(seed, case) is not None]


def minimise(seed: int, case: int) -> tuple[frozenset[int], tuple[Any, Any]]:
    """Drop candidates one at a time while the engines still disagree."""
    n = len(generate(seed, case)["candidates"])
    drop: frozenset[int] = frozenset()
    found = mismatch(seed, case)
    assert found is not None
    for i in range(n):
        smaller = mismatch(seed, case, drop | {i})
        if smaller is not None:
            drop, found = drop | {i}, smaller
    return drop, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000, help="how many cases (default %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="seed (default %(default)s)")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)"
    )
    parser.add_argument("--out", type=Path, default=Path("differential-mismatches"), help="mismatch folder")
    parser.add_argument("--only", type=int, default=None, metavar="K", help="run case K alone, print it")
    args = parser.parse_args(argv)
    if args.cases < 0 or args.jobs < 1:
        parser.error("--cases must be >= 0 and --jobs >= 1")
    if args.only is not None:
        print(shown(generate(args.seed, args.only)))
        found = mismatch(args.seed, args.only)
        print("agree" if found is None else f"native:    {found[0]!r}\nreference: {found[1]!r}")
        return 0 if found is None else 1

    chunk = 2_000
    chunks = [(args.seed, first, min(first + chunk, args.cases)) for first in range(0, args.cases, chunk)]
    started = time.perf_counter()
    bad: list[int] = []
    done = 0
    with multiprocessing.Pool(args.jobs) as pool:
        for found in pool.imap_unordered(_run_chunk, chunks):
            bad += found
            done += chunk
            if done % 100_000 < chunk:
                rate = min(done, args.cases) / (time.perf_counter() - started)
                print(f"{min(done, args.cases):,} cases, {rate:,.0f} cases/s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    print(
        f"{args.cases:,} cases (seed {args.seed}) in {seconds:.1f} s on {args.jobs} processes: "
        f"{args.cases / seconds:,.0f} cases/s; {len(bad)} mismatches"
    )
    if bad:
        args.out.mkdir(parents=True, exist_ok=True)
        for case in sorted(bad)[:20]:
            drop, (native, reference) = minimise(args.seed, case)
            data = generate(args.seed, case)
            data["candidates"] = [c for i, c in enumerate(data["candidates"]) if i not in drop]
            path = args.out / f"mismatch-{case}.json"
            record = {
                "seed": args.seed,
                "case": case,
                "dropped": sorted(drop),
                "input": shown(data),
                "native": repr(native),
                "reference": repr(reference),
            }
            from bugcontext.core._writer import write_file  # whole or not at all, as every output

            write_file(path, json.dumps(record, indent=1) + "\n")
            print(f"case {case}: minimised to {len(data['candidates'])} candidates, written to {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
