"""Deterministic generator of realistic candidate sets for the build benchmarks.

A set is ``n`` candidates over about ``n / 20`` source files. Every file is a slice of
one shared pool of code-like lines, so two windows of the same file that cover the same
lines carry the same text, as they would in a real repository. Per candidate:

* a window of 5-80 lines, about 40 characters a line, lines joined with ``"\\n"``
  (a few lines hold non-ASCII text);
* about a third of the windows are placed to overlap an earlier window of the same
  file (a quarter of those repeat that window exactly: the same window found by two
  sources); the others are placed in disjoint slots;
* reason ``failure`` / ``reference`` / ``search`` with probability 10% / 30% / 60%;
* a BM25-like score: gamma distributed, with a fifth of the scores rounded to one
  decimal so that ties occur;
* candidates are shuffled, so input order carries no information.

``failure_file`` is the path of one of the failure candidates. The budgets are 2%, 20%
and 100% of the total content length, so the first two bind and the last does not.

Run ``python benches/generate.py --n 10000`` to print the statistics of one set, or add
``--json FILE`` to write it as the JSON input of ``bugcontext build``.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

Row = tuple[str, int, int, str, str, float]
"""One candidate as ``(path, start, end, content, reason, score)``."""

FIELDS = ("path", "start", "end", "content", "reason", "score")
BUDGET_SHARES = {"2%": 0.02, "20%": 0.20, "100%": 1.0}

_WORDS = (
    "user config path items result value node parser token buffer cache index count "
    "offset request response session handler record schema module context window score "
    "budget source target entry field key line frame stack query chunk report state"
).split()
_CLASSES = (
    "Parser Session Handler Record Schema Context Window Frame Query Chunk Report Cache "
    "Config Loader Builder Resolver Index Registry"
).split()
_BASES = ("object", "Exception", "ValueError", "Protocol", "NamedTuple", "Base")
_TEXTS = (
    "naïve façade",
    "Größe in µs",
    "日本語テキスト",
    "résumé → done",
    "π ≈ 3.14159",
    "emoji 🚀 ok",
    "Ωmega ≤ limit",
)
_COMMENT = (
    "keep the order stable so callers can diff the output between runs and releases "
    "fall back to the default when the option is missing or empty note that this is "
    "hot path avoid allocating here the window is inclusive on both ends"
).split()


@dataclass
class BenchSet:
    """One generated candidate set and the budgets to build it with."""

    n: int
    seed: int
    rows: list[Row]
    failure_file: str
    n_paths: int
    total_chars: int
    budgets: dict[str, int]
    stats: dict[str, Any] = field(default_factory=dict)

    def candidates(self, factory: Any) -> list[Any]:
        """The rows as candidates built with ``factory(path, start, end, content, reason,
        score)``, e.g. ``bugcontext.Candidate``."""
        return [factory(*row) for row in self.rows]

    def to_json_input(self, budget: str = "20%") -> dict[str, Any]:
        """The JSON input form (``bugcontext build``) for one of the budgets."""
        return {
            "candidates": [dict(zip(FIELDS, row, strict=True)) for row in self.rows],
            "max_chars": self.budgets[budget],
            "failure_file": self.failure_file,
        }


def _ident(rng: random.Random) -> str:
    return rng.choice(_WORDS)


def _code_line(rng: random.Random) -> str:
    """One line of plausible Python, 40 characters long on average."""
    a, b, c = _ident(rng), _ident(rng), _ident(rng)
    indent = "    " * rng.choice((0, 1, 1, 1, 2, 2, 2, 3))
    kind = rng.random()
    if kind < 0.08:
        return ""
    if kind < 0.14:
        return f"def {a}_{b}(self, {c}, {_ident(rng)}=None):"
    if kind < 0.17:
        return f"class {rng.choice(_CLASSES)}{rng.choice(_CLASSES)}({rng.choice(_BASES)}):"
    if kind < 0.30:
        return f"{indent}{a}_{c} = self.{b}.get({c!r}, {rng.randint(0, 99)})"
    if kind < 0.40:
        return f"{indent}if {a} is None or not {b}.{c}_{_ident(rng)}:"
    if kind < 0.50:
        return f"{indent}return self.{a}_{b}[{rng.randint(0, 9)}:{rng.randint(10, 99)}]"
    if kind < 0.58:
        return f"{indent}for {a} in self.{b}s:"
    if kind < 0.68:
        return f"{indent}{a}s.append({b}_{c}({_ident(rng)}, {_ident(rng)}))"
    if kind < 0.78:
        words = " ".join(rng.choice(_COMMENT) for _ in range(rng.randint(4, 8)))
        return f"{indent}# {words}"
    if kind < 0.84:
        return f'{indent}raise ValueError(f"bad {a}: {{{a}!r}}")'
    if kind < 0.90:
        return f'{indent}logger.debug("{a} %s", {b}.{c})'
    if kind < 0.997:
        return f"{indent}self.{a}_{b} = {c}"
    return f'{indent}label = "{rng.choice(_TEXTS)}"'  # rare non-ASCII text


def _path(rng: random.Random, i: int) -> str:
    top = rng.choice(("src", "lib", "pkg", "app", "tests"))
    sub = rng.choice(_WORDS)
    name = rng.choice(_WORDS)
    if top == "tests":
        return f"tests/{sub}/test_{name}_{i}.py"
    return f"{top}/{sub}/{name}_{i}.py"


def _score(rng: random.Random) -> float:
    score = rng.gammavariate(2.2, 1.7)
    if rng.random() < 0.2:
        return round(score, 1)
    return score


def generate(n: int, seed: int = 0) -> BenchSet:
    """Generate a set of ``n`` candidates; the same ``(n, seed)`` gives the same set."""
    if n < 1:
        raise ValueError("n must be >= 1")
    rng = random.Random(f"bugcontext-bench:{n}:{seed}")
    pool = [_code_line(rng) for _ in range(8192)]
    pool2 = pool + pool  # a window may wrap around the end of the pool

    n_paths = max(1, n // 20)
    paths = [_path(rng, i) for i in range(n_paths)]
    # Hot files get more windows than cold ones: weights fall off as 1 / sqrt(rank),
    # capped at 4 times the mean so that no file gets more than a few percent of the set.
    weights = [1.0 / math.sqrt(rank + 1) for rank in range(n_paths)]
    cap = 4 * sum(weights) / n_paths
    cum = []
    acc = 0.0
    for weight in weights:
        acc += min(weight, cap)
        cum.append(acc)
    owner = [min(bisect.bisect_right(cum, rng.random() * acc), n_paths - 1) for _ in range(n)]
    overlapping = [rng.random() < 1 / 3 for _ in range(n)]

    per_path: list[list[int]] = [[] for _ in range(n_paths)]
    for i, p in enumerate(owner):
        per_path[p].append(i)

    spans: list[tuple[int, int, int] | None] = [None] * n  # (path, start, end)
    exact_repeats = 0
    for p, members in enumerate(per_path):
        free = [i for i in members if not overlapping[i]]
        if members and not free:  # an overlapping window needs something to overlap
            free = [members[0]]
            overlapping[members[0]] = False
        slot = 110
        file_len = slot * max(1, len(free)) + rng.randint(0, 400)
        placed: list[tuple[int, int]] = []
        for k, i in enumerate(free):
            length = rng.randint(5, 80)
            start = k * slot + 1 + rng.randint(0, slot - length - 1)
            spans[i] = (p, start, start + length - 1)
            placed.append((start, start + length - 1))
        for i in members:
            if not overlapping[i]:
                continue
            base_start, base_end = rng.choice(placed)
            if rng.random() < 0.25:
                start, end = base_start, base_end
                exact_repeats += 1
            else:
                length = rng.randint(5, 80)
                lo = max(1, base_start - length + 1)
                start = rng.randint(lo, base_end)
                end = min(start + length - 1, file_len)
                if end < base_start:  # clamped at the end of the file: keep an overlap
                    end = base_start
            spans[i] = (p, start, end)

    offsets = [rng.randrange(len(pool)) for _ in range(n_paths)]
    reasons = rng.choices(("failure", "reference", "search"), weights=(1, 3, 6), k=n)
    rows: list[Row] = []
    for i in range(n):
        span = spans[i]
        assert span is not None
        p, start, end = span
        base = (offsets[p] + start - 1) % len(pool)
        content = "\n".join(pool2[base : base + end - start + 1])
        rows.append((paths[p], start, end, content, reasons[i], _score(rng)))
    rng.shuffle(rows)

    failure_paths = [row[0] for row in rows if row[4] == "failure"] or [rows[0][0]]
    failure_file = rng.choice(failure_paths)
    total = sum(len(row[3]) for row in rows)
    budgets = {label: math.ceil(total * share) for label, share in BUDGET_SHARES.items()}
    lines = sum(row[2] - row[1] + 1 for row in rows)
    stats = {
        "paths": n_paths,
        "total_chars": total,
        "mean_lines": lines / n,
        "mean_chars_per_line": total / lines,
        "overlapping_share": sum(overlapping) / n,
        "exact_repeats": exact_repeats,
        "empty_windows": sum(not row[3] for row in rows),
        "max_windows_in_a_file": max(len(members) for members in per_path),
        "max_file_lines": max(row[2] for row in rows),
        "non_ascii_share": sum(not row[3].isascii() for row in rows) / n,
        "distinct_scores": len({row[5] for row in rows}),
        "reasons": {r: reasons.count(r) for r in ("failure", "reference", "search")},
        "in_failure_file": sum(row[0] == failure_file for row in rows),
    }
    return BenchSet(n, seed, rows, failure_file, n_paths, total, budgets, stats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", metavar="FILE", help="write the JSON build input here")
    parser.add_argument("--budget", choices=sorted(BUDGET_SHARES), default="20%")
    args = parser.parse_args()
    bench_set = generate(args.n, args.seed)
    print(
        json.dumps(
            {
                "n": args.n,
                "seed": args.seed,
                **bench_set.stats,
                "failure_file": bench_set.failure_file,
                "budgets": bench_set.budgets,
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(bench_set.to_json_input(args.budget), out, ensure_ascii=False)


if __name__ == "__main__":
    main()
