"""``repo-context eval``: measure context strategies on real bugs.

For each case (``data/realbugs/cases.json``, prepared from PyPI and cached by
:mod:`repo_context.realbugs`) the candidates are gathered once from the failing pytest log and the
repository (:func:`repo_context.sources.gather`); then every strategy packs those same
candidates into every budget, in exact ``o200k_base`` tokens of the rendered Markdown section:

* ``naive``: naive concatenation in source order: candidates sorted by path and line, taken
  while they fit (stopping at the first that does not), no de-duplication;
* ``top-k``: score-only top-k: candidates by score alone (input order on ties), taken while
  they fit, no de-duplication;
* ``layered``: the layered builder with plain de-duplication (:class:`RepoContextBuilder`:
  failure file first, then reference, failure, search; overlapping windows omitted);
* ``layered+merge``: the same builder with :class:`~repo_context.merge.RangeMerger` in front
  (overlapping or adjacent windows of a file merged into one, re-read from the repository).

Metrics of one selection (the windows that made it into the section):

* failure file in context: a selected window lies in the gathered failure file;
* file recall: gold files with a selected window / gold files;
* gold coverage: gold lines inside a selected window / gold lines (each ``(path, line)`` counted
  once); a gold hunk is *in the context* when all of its lines are;
* tokens: the whole rendered section (what a model would be sent);
* distinct lines: the ``(path, line)`` pairs held by the selected windows;
* duplicate-line ratio: lines of a file present in more than one selected window (each such
  ``(path, line)`` counted once) / lines sent (the sum of the selected windows' line counts);
* build time: the strategy alone, from the gathered candidates to the selection and its token
  count (with ``layered+merge`` the merge included, reading through the repository cache that
  gathering filled; gathering is timed separately, per case); the median of ``--repeat`` runs,
  each with a fresh token counter or builder.

Totals: the failure file and the gold hunks as counts over the cases, file recall and gold
coverage as means over the cases, tokens, distinct lines and build time as sums, the duplicate-line ratio over
all lines sent. The report is a Markdown table (printed, and written to ``DIR/eval.md`` with
``--out DIR``) and a PNG chart of mean gold coverage against budget per strategy
(``DIR/coverage.png``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ._input import canonical_path
from .builder import RepoContextBuilder
from .composer import render_block
from .cost import Cost
from .merge import RangeMerger
from .realbugs import GoldRange, PreparationError, gold_ranges, load_cases, prepare, select_cases
from .sources import Repository
from .types import Candidate, TokenCounter
from .workspace import Workspace

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_CASES",
    "DEFAULT_REPEAT",
    "DEFAULT_WORK",
    "STRATEGIES",
    "STRATEGY_LABELS",
    "CaseInfo",
    "Evaluation",
    "Run",
    "Selection",
    "add_eval_parser",
    "coverage_chart",
    "evaluate",
    "evaluate_candidates",
    "main",
    "markdown_report",
    "measure",
    "select",
]

#: The default budgets, in o200k_base tokens of the rendered Markdown section.
DEFAULT_BUDGETS = (2_000, 8_000, 32_000)
#: The default cases file and work folder (relative to the current folder).
DEFAULT_CASES = Path("data/realbugs/cases.json")
DEFAULT_WORK = Path("work/realbugs")
#: Each strategy runs this many times per case and budget; its build time is the median.
DEFAULT_REPEAT = 5
#: The cost model of every strategy: exact tokens of the rendered Markdown section.
COST = Cost(unit="tokens", encoding="o200k_base", template="markdown")

#: The strategies, baselines first.
STRATEGIES = ("naive", "top-k", "layered", "layered+merge")
STRATEGY_LABELS = {
    "naive": "naive concatenation",
    "top-k": "score-only top-k",
    "layered": "layered, de-dup",
    "layered+merge": "layered + RangeMerger",
}


class Window(Protocol):
    """What a metric reads of a selected window."""

    @property
    def path(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class Selection:
    """What one strategy sent for one budget: the ``windows`` in section order, the ``tokens`` of
    the rendered section, and the ``seconds`` the strategy took."""

    windows: tuple[Any, ...]
    tokens: int
    seconds: float


@dataclass(frozen=True)
class Run:
    """The metrics of one strategy on one case at one budget (see the module docstring)."""

    case: str
    strategy: str
    budget: int
    failure_file_in_context: bool
    gold_files: int
    gold_files_found: int
    gold_lines: int
    covered_lines: int
    gold_hunks: int
    hunks_in_context: int
    windows: int
    tokens: int
    lines_sent: int
    distinct_lines: int
    duplicate_lines: int
    seconds: float

    @property
    def file_recall(self) -> float:
        """Gold files with a selected window / gold files (1.0 without gold)."""
        return self.gold_files_found / self.gold_files if self.gold_files else 1.0

    @property
    def coverage(self) -> float:
        """Gold lines inside selected windows / gold lines (1.0 without gold)."""
        return self.covered_lines / self.gold_lines if self.gold_lines else 1.0

    @property
    def duplicate_ratio(self) -> float:
        """Lines present in more than one selected window / lines sent (0.0 if none sent)."""
        return self.duplicate_lines / self.lines_sent if self.lines_sent else 0.0


@dataclass(frozen=True)
class CaseInfo:
    """One evaluated case: its failure file, gold ranges, candidate counts and gather time."""

    case: str
    failure_file: str | None
    gold: tuple[GoldRange, ...]
    candidates: int
    merged_candidates: int
    gather_seconds: float


@dataclass(frozen=True)
class Evaluation:
    """Every run of an evaluation, with the cases, budgets and strategies it covers."""

    cases: tuple[CaseInfo, ...]
    budgets: tuple[int, ...]
    strategies: tuple[str, ...]
    runs: tuple[Run, ...]

    def runs_of(self, strategy: str, budget: int) -> list[Run]:
        """The runs of one strategy at one budget, in case order."""
        return [r for r in self.runs if r.strategy == strategy and r.budget == budget]


# --- metrics -------------------------------------------------------------------------------


def _lines(windows: Iterable[Window]) -> Counter[tuple[str, int]]:
    """How many selected windows hold each ``(path, line)``."""
    held: Counter[tuple[str, int]] = Counter()
    for w in windows:
        path = canonical_path(w.path)
        held.update((path, line) for line in range(w.start, w.end + 1))
    return held


def measure(
    case: str,
    strategy: str,
    budget: int,
    selection: Selection,
    gold: Sequence[GoldRange],
    failure_file: str | None,
) -> Run:
    """The metrics of ``selection`` against the case's ``gold`` ranges and failure file."""
    held = _lines(selection.windows)
    paths = {path for path, _ in held}
    gold_files = {canonical_path(g.path) for g in gold}
    gold_lines = {(canonical_path(g.path), line) for g in gold for line in range(g.start, g.end + 1)}
    hunks_in = sum(
        all((canonical_path(g.path), line) in held for line in range(g.start, g.end + 1)) for g in gold
    )
    return Run(
        case=case,
        strategy=strategy,
        budget=budget,
        failure_file_in_context=failure_file is not None and canonical_path(failure_file) in paths,
        gold_files=len(gold_files),
        gold_files_found=len(gold_files & paths),
        gold_lines=len(gold_lines),
        covered_lines=sum(1 for key in gold_lines if key in held),
        gold_hunks=len(gold),
        hunks_in_context=hunks_in,
        windows=len(selection.windows),
        tokens=selection.tokens,
        lines_sent=sum(w.end - w.start + 1 for w in selection.windows),
        distinct_lines=len(held),
        duplicate_lines=sum(1 for n in held.values() if n > 1),
        seconds=selection.seconds,
    )


# --- strategies ----------------------------------------------------------------------------


def _block(window: Any, failing: Sequence[str]) -> str:
    path = canonical_path(window.path)
    return render_block(
        path,
        window.start,
        window.end,
        window.content,
        str(window.reason),
        failing=path in failing,
        template="markdown",
        line_numbers=False,
    )


def _take_while(ordered: Sequence[Any], budget: int, failing: Sequence[str]) -> tuple[tuple[Any, ...], int]:
    """The windows of ``ordered`` taken in order while they fit ``budget`` tokens (stopping at
    the first that does not), and the token count of their rendered section.

    Each window costs its rendered block, as in the builder; block counts need not add up to
    the section's count, so the section is counted and, while it is over budget, the last
    window is dropped (the builder's guarantee, applied the same way).
    """
    counter = TokenCounter(COST.encoding or "o200k_base")
    blocks = [_block(window, failing) for window in ordered]
    taken, total = 0, 0
    for cost in counter.count(blocks):
        if total + cost > budget:
            break
        taken, total = taken + 1, total + cost
    used = counter.count_one("".join(blocks[:taken]))
    while used > budget:
        taken -= 1
        used = counter.count_one("".join(blocks[:taken]))
    return tuple(ordered[:taken]), used


_Picked = tuple[tuple[Any, ...], int]
_FIELDS = ("path", "start", "end", "content", "reason", "score")


def _attributes(candidates: Sequence[Any]) -> list[Any]:
    """The candidates with their fields as attributes (a mapping becomes a ``Candidate``)."""
    return [Candidate(*(c[f] for f in _FIELDS)) if isinstance(c, Mapping) else c for c in candidates]


def _naive(candidates: Sequence[Any], budget: int, failing: Sequence[str], repo: Repository) -> _Picked:
    candidates = _attributes(candidates)
    order = sorted(
        range(len(candidates)),
        key=lambda i: (canonical_path(candidates[i].path), candidates[i].start, candidates[i].end, i),
    )
    return _take_while([candidates[i] for i in order], budget, failing)


def _top_k(candidates: Sequence[Any], budget: int, failing: Sequence[str], repo: Repository) -> _Picked:
    candidates = _attributes(candidates)
    order = sorted(range(len(candidates)), key=lambda i: (-float(candidates[i].score), i))
    return _take_while([candidates[i] for i in order], budget, failing)


def _layered(candidates: Sequence[Any], budget: int, failing: Sequence[str], repo: Repository) -> _Picked:
    data = {"candidates": candidates, "budget": budget, "failure_files": list(failing)}
    result = RepoContextBuilder(cost=COST).build(data)
    return tuple(result.items), result.used


def _layered_merge(
    candidates: Sequence[Any], budget: int, failing: Sequence[str], repo: Repository
) -> _Picked:
    merged = RangeMerger(repo).merge(candidates)
    data = {"candidates": merged, "budget": budget, "failure_files": list(failing)}
    result = RepoContextBuilder(cost=COST).build(data)
    return tuple(result.items), result.used


_STRATEGY_FUNCTIONS: dict[str, Callable[[Sequence[Any], int, Sequence[str], Repository], _Picked]] = {
    "naive": _naive,
    "top-k": _top_k,
    "layered": _layered,
    "layered+merge": _layered_merge,
}


def select(
    strategy: str,
    candidates: Sequence[Any],
    budget: int,
    failing: str | Sequence[str] | None,
    repository: Repository,
    *,
    repeat: int = 1,
) -> Selection:
    """Run one strategy (a name of :data:`STRATEGIES`) on ``candidates`` for ``budget`` tokens,
    ``repeat`` times; the time is the median run's.

    Every run starts afresh (a new token counter or builder, so no token count is cached
    from an earlier run). ``repository`` is where the candidates' lines are (read by
    ``layered+merge`` only). Raises ``KeyError`` for an unknown strategy.
    """
    run = _STRATEGY_FUNCTIONS[strategy]
    # The failing files (error order); a single failure file is the one-element form.
    failing = [] if failing is None else [failing] if isinstance(failing, str) else list(failing)
    times = []
    picked: _Picked = ((), 0)
    for _ in range(max(1, repeat)):
        began = time.perf_counter()
        picked = run(candidates, budget, failing, repository)
        times.append(time.perf_counter() - began)
    return Selection(picked[0], picked[1], statistics.median(times))


def evaluate_candidates(
    case: str,
    candidates: Sequence[Any],
    *,
    repository: Repository,
    failure_file: str | None,
    gold: Sequence[GoldRange],
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    strategies: Sequence[str] = STRATEGIES,
    repeat: int = 1,
    failure_files: Sequence[str] | None = None,
) -> list[Run]:
    """Every strategy at every budget on the same ``candidates`` of one case: one :class:`Run`
    each, budgets outer, strategies inner; times are medians of ``repeat`` runs."""
    TokenCounter(COST.encoding or "o200k_base").count_one("warm-up")  # load the encoding once
    return [
        measure(
            case,
            strategy,
            budget,
            select(
                strategy,
                candidates,
                budget,
                failure_file if failure_files is None else failure_files,
                repository,
                repeat=repeat,
            ),
            gold,
            failure_file,
        )
        for budget in budgets
        for strategy in strategies
    ]


def evaluate(
    cases: Sequence[dict[str, Any]],
    work: str | Path = DEFAULT_WORK,
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    strategies: Sequence[str] = STRATEGIES,
    refresh: bool = False,
    repeat: int = DEFAULT_REPEAT,
    log: Callable[[str], None] = lambda message: None,
) -> tuple[Evaluation, list[tuple[str, str]]]:
    """Prepare (cached), gather and evaluate each case (build times: medians of ``repeat``
    runs).

    Returns the evaluation of the cases that could be prepared, and ``(case id, problem)`` for
    each case that could not (:class:`~repo_context.realbugs.PreparationError`).
    """
    infos: list[CaseInfo] = []
    runs: list[Run] = []
    failed: list[tuple[str, str]] = []
    for case in cases:
        try:
            prepared = prepare(case, work, refresh=refresh, log=log)
        except PreparationError as exc:
            failed.append((str(case["id"]), str(exc)))
            continue
        log_text = prepared.log.read_text(encoding="utf-8", errors="replace")
        began = time.perf_counter()
        # A cold workspace (nothing cached on disk): the gather time is the whole job's.
        workspace = Workspace(prepared.repo, cache=False)
        gathered = workspace.gather(log_text)
        gather_seconds = time.perf_counter() - began
        repository = workspace.repository
        candidates = list(gathered.candidates)
        gold = gold_ranges(case)
        infos.append(
            CaseInfo(
                case=prepared.id,
                failure_file=gathered.failure_file,
                gold=gold,
                candidates=len(candidates),
                merged_candidates=len(RangeMerger(repository).merge(candidates)),
                gather_seconds=gather_seconds,
            )
        )
        log(f"{prepared.id}: {len(candidates)} candidates, failure file {gathered.failure_file}")
        runs += evaluate_candidates(
            prepared.id,
            candidates,
            repository=repository,
            failure_file=gathered.failure_file,
            failure_files=gathered.failure_files,
            gold=gold,
            budgets=budgets,
            strategies=strategies,
            repeat=repeat,
        )
    return Evaluation(tuple(infos), tuple(budgets), tuple(strategies), tuple(runs)), failed


# --- report --------------------------------------------------------------------------------


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
    ev = evaluation
    n = len(ev.cases)
    lines = [
        "# Evaluation on real bugs",
        "",
        f"{n} case{'s' if n != 1 else ''}; budgets in o200k_base tokens of the rendered Markdown "
        "section; every strategy packs the same gathered candidates.",
        "",
        "## Totals",
        "",
        "Failure file and gold hunks: cases or hunks in the context; file recall and gold "
        "coverage: means over the cases; duplicate lines: over all lines sent; tokens, distinct "
        "lines and build time: sums.",
        "",
    ]
    totals = {(s, b): _total(ev.runs_of(s, b)) for b in ev.budgets for s in ev.strategies}
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

    layered = [s for s in ("layered", "layered+merge") if s in ev.strategies]
    if layered and n:
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

    lines += ["", "## Cases", ""]
    rows = [
        [
            c.case,
            f"`{c.failure_file}`" if c.failure_file else "(none)",
            ", ".join(f"`{g.path}:{g.start}-{g.end}`" for g in c.gold),
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

    lines += ["", "## Per case", ""]
    rows = [
        [
            r.case,
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
    return "\n".join(lines) + "\n"


def coverage_chart(evaluation: Evaluation, path: str | Path) -> None:
    """Write a PNG chart of mean gold coverage against budget, one line per strategy."""
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


# --- command line --------------------------------------------------------------------------


def _budgets(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive budgets, got {text!r}")
    return tuple(sorted(set(values)))


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _error(message: str) -> None:
    print(f"repo-context eval: {' '.join(message.splitlines())}", file=sys.stderr)


def run_eval(args: argparse.Namespace) -> int:
    """Run ``repo-context eval`` with parsed arguments; returns the exit status: 0; 1 when a case
    could not be prepared (the others are still reported) or the report cannot be written; 2
    for a bad cases file or an unknown case."""
    try:
        cases = select_cases(load_cases(args.cases), args.case)
    except OSError as exc:
        _error(f"cannot read {args.cases}: {exc.strerror or exc}")
        return 2
    except ValueError as exc:
        _error(f"invalid cases file {args.cases}: {exc}")
        return 2
    except KeyError as exc:
        _error(str(exc.args[0]))
        return 2

    def progress(message: str) -> None:
        print(f"[eval] {message}", file=sys.stderr, flush=True)

    evaluation, failed = evaluate(cases, args.work, budgets=args.budgets, refresh=args.refresh, log=progress)
    for case_id, problem in failed:
        _error(f"{case_id}: preparation failed: {problem}")
    report = markdown_report(evaluation)
    try:
        sys.stdout.write(report)
        sys.stdout.flush()
        if args.out is not None:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            (out / "eval.md").write_text(report, encoding="utf-8")
            coverage_chart(evaluation, out / "coverage.png")
    except OSError as exc:
        _error(f"cannot write the report: {exc.strerror or exc}")
        return 1
    return 1 if failed else 0


def add_eval_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``eval`` subcommand to ``subparsers`` (from ``ArgumentParser.add_subparsers``);
    its ``run`` default is :func:`run_eval`."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "eval",
        help="measure context strategies on real bugs",
        description="Prepare the real-bug cases (cached), gather their candidates and compare "
        "naive concatenation, score-only top-k, the layered builder and the layered builder with "
        "range merging at each budget (o200k_base tokens of the rendered Markdown section).",
    )
    parser.add_argument(
        "--cases", type=Path, default=DEFAULT_CASES, metavar="FILE", help="cases file (default %(default)s)"
    )
    parser.add_argument(
        "--case",
        action="append",
        default=None,
        metavar="ID",
        help="evaluate this case (repeatable; default all)",
    )
    parser.add_argument(
        "--budgets",
        type=_budgets,
        default=DEFAULT_BUDGETS,
        metavar="N,N,...",
        help="token budgets (default 2000,8000,32000)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="also write DIR/eval.md and DIR/coverage.png"
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        metavar="DIR",
        help="where cases are prepared and cached (default %(default)s)",
    )
    parser.add_argument("--refresh", action="store_true", help="prepare the cases again")
    parser.add_argument(
        "--repeat",
        type=_positive,
        default=DEFAULT_REPEAT,
        metavar="N",
        help="runs per strategy, case and budget; build time is the median (default %(default)s)",
    )
    parser.set_defaults(run=run_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``repo-context eval`` on its own: ``python -m repo_context.evaluate [OPTIONS]``."""
    parser = argparse.ArgumentParser(prog="repo-context")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["eval", *(sys.argv[1:] if argv is None else argv)])
    status: int = args.run(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
