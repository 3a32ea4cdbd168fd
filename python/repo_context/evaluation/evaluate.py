"""Measure context strategies on real bugs (``repo-context eval``).

For each case (``realbugs.json`` beside this module, prepared from PyPI and cached by
:mod:`repo_context.evaluation.realbugs`) the candidates are gathered once from the failing pytest log and the
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

import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import platformdirs

from .._input import canonical_path
from .._io import MAX_LOG_BYTES, read_capped
from ..builder import RepoContextBuilder
from ..composer import render_block
from ..cost import Cost
from ..errors import ResourceLimitError
from ..merge import RangeMerger
from ..sources import Repository
from ..types import Candidate, TokenCounter
from ..workspace import Workspace
from .realbugs import GoldRange, PreparationError, gold_ranges, prepare

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
    "evaluate",
    "evaluate_candidates",
    "measure",
    "select",
]

#: The default budgets, in o200k_base tokens of the rendered Markdown section.
DEFAULT_BUDGETS = (2_000, 8_000, 32_000)
#: The default cases file (package data) and work folder (under the user cache folder).
DEFAULT_CASES = Path(__file__).with_name("realbugs.json")
DEFAULT_WORK = platformdirs.user_cache_path("repo-context") / "realbugs"
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
        try:
            log_bytes = read_capped(
                prepared.log, MAX_LOG_BYTES, limit_name="MAX_LOG_BYTES", field="pytest_log"
            )
        except (OSError, ResourceLimitError) as exc:
            failed.append((str(case["id"]), str(exc)))
            continue
        log_text = log_bytes.decode("utf-8", errors="replace")
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
