"""A repeated build over the same candidates, in tokens, against the first build.

10,000 candidates (the token benchmark's corpus: 1-3 KB of real source each), costed in
o200k_base tokens, as content and as rendered Markdown blocks. ``first`` builds with a new
builder, so every candidate is counted; ``repeat`` builds again with a builder that has seen
them, so every count comes from the builder's cache (by content hash). Run with
``python -m pytest benches/test_bench_token_build.py --benchmark-only``; the ratio is stored as
``extra_info["repeat_vs_first"]`` and printed. Target: the repeat at least 10x faster.
"""

from __future__ import annotations

from typing import Any

import bugcontext as rc
import pytest
from test_bench_tokens import corpus

BUDGET = 200_000  # tokens: about a tenth of the corpus


def candidates() -> list[rc.Candidate]:
    return [
        rc.Candidate(
            f"pkg/m{i % 500}.py", 1 + (i // 500) * 100, 90 + (i // 500) * 100, text, "search", i % 97 / 10
        )
        for i, text in enumerate(corpus())
    ]


TIMES: dict[str, dict[str, float]] = {}


@pytest.mark.parametrize("template", [None, "markdown"])
@pytest.mark.parametrize("run", ["first", "repeat"])
def test_token_build(benchmark: Any, run: str, template: str | None) -> None:
    cands = candidates()
    cost = rc.Cost(unit="tokens", encoding="o200k_base", template=template)
    data = {"candidates": cands, "budget": BUDGET}
    warm = rc.ContextBuilder(cost=cost)
    warm.build(data)
    benchmark.group = f"token build, template={template}"
    if run == "first":
        result = benchmark.pedantic(
            lambda b: b.build(data), setup=lambda: ((rc.ContextBuilder(cost=cost),), {}), rounds=3
        )
    else:
        result = benchmark.pedantic(lambda: warm.build(data), rounds=10)
    assert result.used <= BUDGET
    TIMES.setdefault(str(template), {})[run] = benchmark.stats.stats.median
    times = TIMES[str(template)]
    if len(times) == 2:
        ratio = times["first"] / times["repeat"]
        benchmark.extra_info["repeat_vs_first"] = ratio
        first, repeat = times["first"] * 1e3, times["repeat"] * 1e3
        print(f"\ntemplate={template}: first {first:.0f} ms, repeat {repeat:.1f} ms, {ratio:.0f}x")
