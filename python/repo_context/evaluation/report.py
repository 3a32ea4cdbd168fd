"""The evaluation report: Markdown tables (totals, targets, cases, runs) and a coverage chart."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..composer import header_path
from .evaluate import STRATEGY_LABELS, Evaluation, Run

__all__ = ["coverage_chart", "markdown_report"]


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def _budget(budget: int) -> str:
    return f"{budget // 1000}k" if budget % 1000 == 0 and budget else str(budget)


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.1f} ms"


@dataclass(frozen=True)
class _Total:
    cases: int
    failure_in: int
    recall: float
    coverage: float
    hunks: int
    hunks_in: int
    tokens: int
    lines_sent: int
    distinct_lines: int
    duplicate_lines: int
    seconds: float

    @property
    def duplicate_ratio(self) -> float:
        return self.duplicate_lines / self.lines_sent if self.lines_sent else 0.0


def _total(runs: Sequence[Run]) -> _Total:
    n = len(runs)
    return _Total(
        cases=n,
        failure_in=sum(r.failure_file_in_context for r in runs),
        recall=sum(r.file_recall for r in runs) / n if n else 0.0,
        coverage=sum(r.coverage for r in runs) / n if n else 0.0,
        hunks=sum(r.gold_hunks for r in runs),
        hunks_in=sum(r.hunks_in_context for r in runs),
        tokens=sum(r.tokens for r in runs),
        lines_sent=sum(r.lines_sent for r in runs),
        distinct_lines=sum(r.distinct_lines for r in runs),
        duplicate_lines=sum(r.duplicate_lines for r in runs),
        seconds=sum(r.seconds for r in runs),
    )


def _compare(a: _Total, b: _Total) -> int:
    """``1`` if ``a`` beats ``b``, ``0`` for a tie, ``-1`` if ``b`` beats ``a``: higher mean gold
    coverage wins; at equal coverage, fewer duplicate lines, then fewer tokens."""
    key_a = (-round(a.coverage, 12), a.duplicate_lines, a.tokens)
    key_b = (-round(b.coverage, 12), b.duplicate_lines, b.tokens)
    return (key_a < key_b) - (key_a > key_b)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[bool]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def markdown_report(evaluation: Evaluation) -> str:
    """The evaluation as Markdown: totals per budget and strategy, the targets, the cases and
    every run."""
    n = len(evaluation.cases)
    lines = [
        "# Evaluation on real bugs",
        "",
        f"{n} case{'s' if n != 1 else ''}; budgets in o200k_base tokens of the rendered Markdown "
        "section; every strategy packs the same gathered candidates.",
    ]
    ev = evaluation
    totals = {(s, b): _total(ev.runs_of(s, b)) for b in ev.budgets for s in ev.strategies}
    lines += _totals_section(evaluation, totals)
    lines += _targets_section(evaluation, totals)
    lines += _cases_section(evaluation)
    lines += _runs_section(evaluation)
    return "\n".join(lines) + "\n"


def _totals_section(ev: Evaluation, totals: dict[tuple[str, int], _Total]) -> list[str]:
    lines = [
        "",
        "## Totals",
        "",
        "Failure file and gold hunks: cases or hunks in the context; file recall and gold "
        "coverage: means over the cases; duplicate lines: over all lines sent; tokens, distinct "
        "lines and build time: sums.",
        "",
    ]
    header = [
        "budget",
        "strategy",
        "failure file in context",
        "file recall",
        "gold coverage",
        "gold hunks in context",
        "tokens",
        "distinct lines",
        "duplicate lines",
        "build time",
    ]
    rows = []
    for b in ev.budgets:
        for s in ev.strategies:
            t = totals[s, b]
            rows.append(
                [
                    _budget(b),
                    STRATEGY_LABELS.get(s, s),
                    f"{t.failure_in}/{t.cases}",
                    _pct(t.recall),
                    _pct(t.coverage),
                    f"{t.hunks_in}/{t.hunks}",
                    f"{t.tokens:,}",
                    f"{t.distinct_lines:,}",
                    _pct(t.duplicate_ratio),
                    _ms(t.seconds),
                ]
            )
    lines += _table(header, rows, [False, False, True, True, True, True, True, True, True, True])
    return lines


def _targets_section(ev: Evaluation, totals: dict[tuple[str, int], _Total]) -> list[str]:
    lines: list[str] = []
    layered = [s for s in ("layered", "layered+merge") if s in ev.strategies]
    if not layered or not ev.cases:
        return []
    lines += [
        "",
        "## Targets",
        "",
        "Gold hunk in the context for at least 80% of the cases at 8k, file recall at least "
        "95% at every budget, zero duplicate lines, better than every baseline at every budget "
        "(higher mean gold coverage; at equal coverage, fewer duplicate lines, then fewer "
        "tokens; equal on all three is a tie). The baselines of a strategy are the strategies "
        "listed before it.",
        "",
    ]
    rows = []
    for s in layered:
        baselines = list(ev.strategies[: ev.strategies.index(s)])
        at8 = totals.get((s, 8_000))
        if at8 is None or not at8.hunks:
            hunk = "n/a (no 8k budget or no gold)"
        else:
            hunk = f"{at8.hunks_in}/{at8.hunks} " + (
                "met" if at8.hunks_in >= 0.8 * at8.hunks else "not met"
            )
        recall_ok = all(totals[s, b].recall >= 0.95 for b in ev.budgets)
        dup_ok = all(totals[s, b].duplicate_lines == 0 for b in ev.budgets)
        verdicts: dict[int, list[str]] = {1: [], 0: [], -1: []}
        for b in ev.budgets:
            for o in baselines:
                verdicts[_compare(totals[s, b], totals[o, b])].append(
                    f"{_budget(b)} {STRATEGY_LABELS.get(o, o)}"
                )
        if not verdicts[0] and not verdicts[-1]:
            better = "met"
        else:
            better = "; ".join(
                f"{word}: {', '.join(verdicts[k])}"
                for k, word in ((-1, "worse than"), (0, "tie with"))
                if verdicts[k]
            )
            better = "not met (" + better + ")"
        rows.append(
            [
                STRATEGY_LABELS.get(s, s),
                hunk,
                " / ".join(_pct(totals[s, b].recall) for b in ev.budgets)
                + (" met" if recall_ok else " not met"),
                "met" if dup_ok else "not met",
                better,
            ]
        )
    budgets = "/".join(_budget(b) for b in ev.budgets)
    lines += _table(
        [
            "strategy",
            "gold hunk at 8k (≥ 80%)",
            f"file recall {budgets} (≥ 95%)",
            "zero duplicate lines",
            "better than every baseline",
        ],
        rows,
        [False, False, False, False, False],
    )
    return lines


def _cases_section(ev: Evaluation) -> list[str]:
    lines: list[str] = []
    lines += ["", "## Cases", ""]
    rows = [
        [
            header_path(c.case),
            f"`{header_path(c.failure_file)}`" if c.failure_file else "(none)",
            ", ".join(f"`{header_path(g.path)}:{g.start}-{g.end}`" for g in c.gold),
            str(c.candidates),
            str(c.merged_candidates),
            _ms(c.gather_seconds),
        ]
        for c in ev.cases
    ]
    lines += _table(
        ["case", "failure file", "gold", "candidates", "after merging", "gather time"],
        rows,
        [False, False, False, True, True, True],
    )
    return lines


def _runs_section(ev: Evaluation) -> list[str]:
    lines: list[str] = []
    lines += ["", "## Per case", ""]
    rows = [
        [
            header_path(r.case),
            _budget(r.budget),
            STRATEGY_LABELS.get(r.strategy, r.strategy),
            "yes" if r.failure_file_in_context else "no",
            _pct(r.file_recall),
            _pct(r.coverage),
            str(r.windows),
            f"{r.tokens:,}",
            f"{r.distinct_lines:,}",
            _pct(r.duplicate_ratio),
            _ms(r.seconds),
        ]
        for c in ev.cases
        for r in ev.runs
        if r.case == c.case
    ]
    lines += _table(
        [
            "case",
            "budget",
            "strategy",
            "failure file",
            "file recall",
            "gold coverage",
            "windows",
            "tokens",
            "distinct lines",
            "duplicate lines",
            "build time",
        ],
        rows,
        [False, False, False, False, True, True, True, True, True, True, True],
    )
    return lines


def coverage_chart(evaluation: Evaluation, path: str | Path | IO[bytes]) -> None:
    """Write a PNG chart of mean gold coverage against budget, one line per strategy, to
    ``path`` (a file name or a binary stream)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ev = evaluation
    styles = {
        "naive": ("o", "-", "#7f7f7f", 9),
        "top-k": ("s", "--", "#ff7f0e", 8),
        "layered": ("^", "-.", "#1f77b4", 8),
        "layered+merge": ("D", ":", "#2ca02c", 6),
    }
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=150)
    budgets = list(ev.budgets)
    log_scale = bool(budgets) and min(budgets) > 0
    count = len(ev.strategies)
    for k, s in enumerate(ev.strategies):
        marker, line, color, size = styles.get(s, ("x", "-", None, 7))
        values = [100 * _total(ev.runs_of(s, b)).coverage for b in budgets]
        # Strategies side by side around each budget, so that equal values stay visible.
        dodge = 2 ** (0.05 * (k - (count - 1) / 2)) if log_scale else 1.0
        ax.plot(
            [b * dodge for b in budgets],
            values,
            marker=marker,
            linestyle=line,
            color=color,
            markersize=size,
            linewidth=2,
            label=STRATEGY_LABELS.get(s, s),
        )
    if log_scale:
        ax.set_xscale("log", base=2)
    ax.set_xticks(budgets)
    ax.set_xticklabels([_budget(b) for b in budgets])
    ax.minorticks_off()
    ax.set_ylim(-3, 103)
    ax.set_xlabel(
        "budget (o200k_base tokens of the rendered Markdown section; strategies drawn side by side)"
    )
    ax.set_ylabel("gold-hunk line coverage, mean over cases (%)")
    n = len(ev.cases)
    ax.set_title(f"Gold-hunk coverage against budget ({n} real bug{'s' if n != 1 else ''})")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
