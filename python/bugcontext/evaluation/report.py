"""The evaluation report: Markdown tables (totals, targets, cases, runs) and a coverage chart."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bugcontext.core._cut import shorten
from bugcontext.core._extras import needs
from bugcontext.core.composer import header_path
from bugcontext.evaluation.evaluate import STRATEGY_LABELS, Ablation, Evaluation, Run

__all__ = ["ablation_report", "coverage_chart", "markdown_report", "recall_chart"]


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
    first = ev.variants[0] if ev.variants else "log"
    totals = {(s, b): _total(ev.runs_of(s, b, first)) for b in ev.budgets for s in ev.strategies}
    lines += _totals_section(evaluation, totals)
    lines += _targets_section(evaluation, totals)
    lines += _recall_section(evaluation)
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
            hunk = f"{at8.hunks_in}/{at8.hunks} " + ("met" if at8.hunks_in >= 0.8 * at8.hunks else "not met")
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


#: The strategy the recall section reports selection for: the one ``bugcontext context`` uses.
RECALL_STRATEGY = "layered"
_SPLITS = ("calibration", "held-out", "all")


def _whole(run: Run) -> tuple[bool, bool]:
    """Whether every gold hunk / every gold file of the run's case is in its context."""
    return run.hunks_in_context == run.gold_hunks, run.gold_files_found == run.gold_files


def _recall_summary(ev: Evaluation, strategy: str) -> list[str]:
    """The recall table per gathering variant, split and budget (of ``strategy``'s builds)."""
    rows = []
    for variant in ev.variants:
        infos = ev.cases_of(variant)
        for split in _SPLITS:
            chosen = [c for c in infos if split == "all" or c.split == split]
            names = {c.case for c in chosen}
            n = len(chosen)
            if n == 0:
                continue
            cand = sum(c.candidate_hunks == len(c.gold) for c in chosen)
            ranked = sum(c.ranked_hunks == len(c.gold) for c in chosen)
            cand_files = sum(c.candidate_files == c.gold_files for c in chosen)
            gather = sum(c.gather_seconds for c in chosen) / n if n else 0.0
            for b in ev.budgets:
                runs = [r for r in ev.runs_of(strategy, b, variant) if r.case in names]
                hunks = sum(_whole(r)[0] for r in runs)
                files = sum(_whole(r)[1] for r in runs)
                rows.append(
                    [
                        variant,
                        split,
                        _budget(b),
                        str(n),
                        f"{cand}/{n}",
                        f"{ranked}/{n}",
                        f"{cand_files}/{n}",
                        f"{hunks}/{n}",
                        f"{files}/{n}",
                        f"{sum(r.tokens for r in runs):,}",
                        f"{sum(r.duplicate_lines for r in runs):,}",
                        _ms(sum(r.seconds for r in runs)),
                        _ms(gather),
                    ]
                )
    return _table(
        [
            "variant",
            "split",
            "budget",
            "cases",
            "candidate recall",
            "ranked candidate recall (32k)",
            "file recall (candidates)",
            "selection recall",
            "file recall",
            "tokens",
            "duplicate lines",
            "build time",
            "gather time",
        ],
        rows,
        [False, False, False, True, True, True, True, True, True, True, True, True, True],
    )


def _recall_per_case(ev: Evaluation, strategy: str) -> list[str]:
    """The recall table per case and gathering variant (of ``strategy``'s builds)."""
    rows = []
    for variant in ev.variants:
        for c in ev.cases_of(variant):
            by_budget = {
                r.budget: r
                for r in ev.runs
                if r.case == c.case and r.variant == variant and r.strategy == strategy
            }
            row = [
                c.case,
                c.split,
                variant,
                f"{c.candidate_hunks}/{len(c.gold)} ({c.candidate_files}/{c.gold_files})",
            ]
            for b in ev.budgets:
                r = by_budget.get(b)
                row.append(
                    f"{r.hunks_in_context}/{r.gold_hunks} ({r.gold_files_found}/{r.gold_files})" if r else "-"
                )
            row.append(str(c.candidates))
            row.append(f"{c.ranked_hunks}/{len(c.gold)}")
            row.append(",".join("-" if r is None else str(r) for r in c.gold_ranks))
            rows.append(row)
    return _table(
        [
            "case",
            "split",
            "variant",
            "candidates",
            *(_budget(b) for b in ev.budgets),
            "pool (candidate windows)",
            "ranked (32k)",
            "gold hunk ranks",
        ],
        rows,
        [False, False, False, True, *(True for _ in ev.budgets), True, True, False],
    )


def _recall_section(ev: Evaluation) -> list[str]:
    """Candidate recall, selection recall and file recall per gathering variant, split and
    budget; then per case; then the issue text's effect per case."""
    strategy = RECALL_STRATEGY if RECALL_STRATEGY in ev.strategies else (ev.strategies or ("",))[-1]
    if not ev.cases or not strategy:
        return []
    label = STRATEGY_LABELS.get(strategy, strategy)
    lines = [
        "",
        "## Recall: candidates and selection",
        "",
        "Counts of cases. Candidate recall: every gold hunk lies inside one of the gathered "
        "candidates (whatever the budget); file recall (candidates): every gold file has a "
        f"candidate. Selection recall: every gold hunk is in the context built by the {label} "
        "strategy (what `bugcontext context` sends); file recall: every gold file has a window "
        "in it. Ranked candidate recall: every gold hunk lies inside one of the candidates whose "
        "rendered blocks, summed in rank order, fit 32k tokens (proposing everything does not count). "
        "Split: a fixed split by the SHA-256 of the case id (calibration: first byte even). "
        "Tokens, duplicate lines and build time are sums; gather time is the mean per call.",
        "",
    ]
    lines += _recall_summary(ev, strategy)
    lines += ["", "### Per case", "", f"Gold hunks (and files) in the candidates and in the {label} context."]
    lines += [""]
    lines += _recall_per_case(ev, strategy)
    for base, variant, what in _EFFECTS:
        if base in ev.variants and variant in ev.variants:
            lines += _effect(ev, strategy, base, variant, what)
    if any(c.rerun_seconds is not None for c in ev.cases):
        lines += _rerun_section(ev)
    return lines


# The variant pairs whose difference the report shows: (without, with, what is added).
_EFFECTS = (
    ("log", "log+issue", "the issue text"),
    ("log", "log+rerun", "execution evidence"),
    ("log+issue", "log+issue+rerun", "execution evidence (with the issue text)"),
)


def _rerun_section(ev: Evaluation) -> list[str]:
    """Per case, the traced re-run: its time, the same run without the tracer, the overhead
    and what went wrong in it."""
    lines = [
        "",
        "### The traced re-run",
        "",
        "Wall seconds of the failing tests re-run under the tracer and without it (the same pytest "
        "command), the tracer's overhead, the repository files executed, and the run's own problems.",
        "",
    ]
    rows = []
    seen: set[str] = set()
    for c in ev.cases:
        if c.rerun_seconds is None or c.case in seen:
            continue
        seen.add(c.case)
        plain = c.plain_seconds
        ratio = f"{c.rerun_seconds / plain:.2f}x" if plain else "-"
        rows.append(
            [
                c.case,
                f"{c.rerun_seconds:.2f}",
                f"{plain:.2f}" if plain is not None else "-",
                ratio,
                str(c.executed_files),
                shorten("; ".join(c.rerun_notes).replace("|", "/"), 160, ""),
            ]
        )
    lines += _table(
        ["case", "traced s", "plain s", "overhead", "files executed", "problems"],
        rows,
        [False, True, True, True, True, False],
    )
    return lines


def _effect(ev: Evaluation, strategy: str, base_variant: str, variant: str, what: str) -> list[str]:
    """Per case: gold hunks in the candidates and in the context without and with ``what``
    (``base_variant`` → ``variant``), and whether it lowered any."""
    lines = [
        "",
        f"### The effect of {what}",
        "",
        f"Gold hunks in the candidates and the context, {base_variant} → {variant}; "
        f"*lower* marks a case whose coverage {what} lowered, *higher* one it raised.",
        "",
    ]
    without = {c.case: c for c in ev.cases_of(base_variant)}
    rows = []
    lowered = raised = 0
    for c in ev.cases_of(variant):
        if c.case not in without or (variant.endswith("issue") and not c.has_issue):
            continue
        base = without[c.case]
        row = [c.case, f"{base.candidate_hunks} → {c.candidate_hunks}"]
        worse = c.candidate_hunks < base.candidate_hunks
        better = c.candidate_hunks > base.candidate_hunks
        for b in ev.budgets:
            got = {
                r.variant: r for r in ev.runs if r.case == c.case and r.strategy == strategy and r.budget == b
            }
            a, w = got.get(base_variant), got.get(variant)
            if a is None or w is None:
                row.append("-")
                continue
            row.append(f"{a.hunks_in_context} → {w.hunks_in_context}")
            worse = worse or w.covered_lines < a.covered_lines or w.gold_files_found < a.gold_files_found
            better = better or w.hunks_in_context > a.hunks_in_context
        lowered += worse
        raised += better and not worse
        row.append("lower" if worse else "higher" if better else "")
        rows.append(row)
    lines += _table(
        ["case", "candidates", *(_budget(b) for b in ev.budgets), ""],
        rows,
        [False, True, *(True for _ in ev.budgets), False],
    )
    lines += ["", f"Cases {what} lowered: {lowered}; raised (and lowered none): {raised}."]
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
        for c in ev.cases_of(ev.variants[0] if ev.variants else "log")
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
        for c in ev.cases_of(ev.variants[0] if ev.variants else "log")
        for r in ev.runs
        if r.case == c.case and r.variant == c.variant
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


def _save(fig: Any, path: str | Path | IO[bytes]) -> None:
    """Save ``fig`` as PNG to a binary stream, or to a file through the package's writer
    (:func:`bugcontext.core._writer.write_file`: whole or not at all)."""
    if isinstance(path, (str, Path)):
        from bugcontext.core._writer import write_file

        image = io.BytesIO()
        fig.savefig(image, format="png")
        write_file(path, image.getvalue())
    else:
        fig.savefig(path, format="png")


def coverage_chart(evaluation: Evaluation, path: str | Path | IO[bytes]) -> None:
    """Write a PNG chart of mean gold coverage against budget, one line per strategy, to
    ``path`` (a file name or a binary stream)."""
    with needs("eval"):
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
    _save(fig, path)
    plt.close(fig)


def ablation_report(rows: Sequence[Ablation]) -> str:
    """The ablation as Markdown: per variant and source, the cases that lose their gold
    (every gold hunk) from the candidates and from the context without that source, and the
    cases whose context covers the gold only without it."""
    lines = [
        "",
        "## Ablation",
        "",
        "Each source left out in turn: the cases whose every gold hunk was in the candidates "
        "(and in the context) with all sources and is not without it; *gained*: the cases whose "
        "context covers every gold hunk only without it.",
        "",
    ]
    table = [
        [
            r.variant,
            r.source,
            _budget(r.budget),
            str(len(r.lost_candidates)) + (f" ({', '.join(r.lost_candidates)})" if r.lost_candidates else ""),
            str(len(r.lost_selection)) + (f" ({', '.join(r.lost_selection)})" if r.lost_selection else ""),
            str(len(r.gained_selection))
            + (f" ({', '.join(r.gained_selection)})" if r.gained_selection else ""),
        ]
        for r in rows
    ]
    lines += _table(
        ["variant", "without", "budget", "lose gold (candidates)", "lose gold (context)", "gained (context)"],
        table,
        [False, False, False, False, False, False],
    )
    return "\n".join(lines) + "\n"


def recall_chart(evaluation: Evaluation, path: str | Path | IO[bytes]) -> None:
    """Write a PNG chart of selection recall (cases with every gold hunk in the context of
    the ``layered`` strategy, %) against budget, one solid line per gathering variant, with
    that variant's candidate recall (every gold hunk inside a candidate) as a dashed line."""
    with needs("eval"):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

    ev = evaluation
    strategy = RECALL_STRATEGY if RECALL_STRATEGY in ev.strategies else (ev.strategies or ("",))[-1]
    colors = {
        "log": "#1f77b4",
        "log+issue": "#2ca02c",
        "log+query": "#ff7f0e",
        "log+rerun": "#d62728",
        "log+issue+rerun": "#9467bd",
    }
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=150)
    budgets = list(ev.budgets)
    for variant in ev.variants:
        infos = ev.cases_of(variant)
        n = len(infos)
        if not n:
            continue
        color = colors.get(variant)
        values = [100 * sum(_whole(r)[0] for r in ev.runs_of(strategy, b, variant)) / n for b in budgets]
        ax.plot(budgets, values, marker="o", linewidth=2, color=color, label=f"{variant}: in the context")
        candidates = 100 * sum(c.candidate_hunks == len(c.gold) for c in infos) / n
        ax.axhline(candidates, linestyle="--", color=color, alpha=0.7, label=f"{variant}: in the candidates")
    if budgets and min(budgets) > 0:
        ax.set_xscale("log", base=2)
    ax.set_xticks(budgets)
    ax.set_xticklabels([_budget(b) for b in budgets])
    ax.minorticks_off()
    ax.set_ylim(-3, 103)
    ax.set_xlabel("budget (o200k_base tokens of the rendered Markdown section)")
    ax.set_ylabel("cases with every gold hunk (%)")
    n = len(ev.cases_of(ev.variants[0])) if ev.variants else 0
    ax.set_title(f"Candidate and selection recall ({n} real bug{'s' if n != 1 else ''})")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
