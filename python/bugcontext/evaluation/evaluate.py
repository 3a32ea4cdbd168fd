"""Measure context strategies on real bugs (``bugcontext eval``).

For each case (``realbugs.json`` beside this module, prepared from PyPI and cached by
:mod:`bugcontext.evaluation.realbugs`) the candidates are gathered once from the failing pytest log and the
repository (:func:`bugcontext.job.sources.gather`); then every strategy packs those same
candidates into every budget, in exact ``o200k_base`` tokens of the rendered Markdown section:

* ``naive``: naive concatenation in source order: candidates sorted by path and line, taken
  while they fit (stopping at the first that does not), no de-duplication;
* ``top-k``: score-only top-k: candidates by score alone (input order on ties), taken while
  they fit, no de-duplication;
* ``layered``: the layered builder with plain de-duplication (:class:`ContextBuilder`:
  failure file first, then reference, failure, search; overlapping windows omitted);
* ``layered+merge``: the same builder with :class:`~bugcontext.job.merge.RangeMerger` in front
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

Both kinds of case are evaluated: PyPI release pairs (``realbugs.json``) and SWE-bench-style cases
(``realbugs2.json``: a tarred tree given with ``trees``, :mod:`bugcontext.evaluation.realbugs2`),
and, with ``--cases`` naming ``langbugs.json``, bugs in Go, Rust, Java and JavaScript projects
downloaded from their registries (:mod:`bugcontext.evaluation.langbugs`).
Each case is gathered once per variant (:data:`VARIANTS`: the failing log alone, with the issue text
as ``gather(issue=...)``, or with it as extra search words), and recall is reported in two steps:
*candidate recall* (every gold hunk inside one gathered candidate, whatever the budget:
:func:`candidate_recall`) and *selection recall* (every gold hunk in the context), per split of the
cases (:func:`split_of`: a fixed calibration / held-out split by the SHA-256 of the case id).
:func:`ablation` gathers again without one source at a time.

Totals: the failure file and the gold hunks as counts over the cases, file recall and gold
coverage as means over the cases, tokens, distinct lines and build time as sums, the duplicate-line ratio over
all lines sent. The report is a Markdown table (printed, and written to ``DIR/eval.md`` with
``--out DIR``) and a PNG chart of mean gold coverage against budget per strategy
(``DIR/coverage.png``).
"""

from __future__ import annotations

import hashlib
import statistics
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bugcontext.core._extras import needs

with needs("eval"):
    import platformdirs

from bugcontext.core._input import canonical_path
from bugcontext.core._io import read_capped
from bugcontext.core.builder import ContextBuilder
from bugcontext.core.composer import SpanLike, render_block
from bugcontext.core.cost import Cost
from bugcontext.core.errors import ResourceLimitError
from bugcontext.core.types import Candidate, TokenCounter
from bugcontext.evaluation.langbugs import is_lang_case, prepare_lang_case
from bugcontext.evaluation.realbugs import GoldRange, PreparationError, PreparedCase, gold_ranges, prepare
from bugcontext.evaluation.realbugs2 import DEFAULT_CASES2, is_tree_case, prepare_tree_case
from bugcontext.job.merge import RangeMerger
from bugcontext.job.sources import Gathered, Repository, gather
from bugcontext.job.sources.execution import ExecutionRecord
from bugcontext.job.sources.gather import SOURCES
from bugcontext.job.sources.rerun import RerunReport
from bugcontext.job.sources.reruns import rerun_for_log

__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_CASES",
    "DEFAULT_CASE_FILES",
    "DEFAULT_REPEAT",
    "DEFAULT_WORK",
    "STRATEGIES",
    "STRATEGY_LABELS",
    "VARIANTS",
    "Ablation",
    "CaseInfo",
    "Evaluation",
    "Run",
    "Selection",
    "ablation",
    "candidate_recall",
    "evaluate",
    "evaluate_candidates",
    "issue_of",
    "measure",
    "prepare_case",
    "select",
    "split_of",
]

#: The default budgets, in o200k_base tokens of the rendered Markdown section.
DEFAULT_BUDGETS = (2_000, 8_000, 32_000)
#: The default cases file (package data) and work folder (under the user cache folder).
DEFAULT_CASES = Path(__file__).with_name("realbugs.json")
#: Both shipped case lists: PyPI release pairs and SWE-bench-style trees.
DEFAULT_CASE_FILES = (DEFAULT_CASES, DEFAULT_CASES2)
DEFAULT_WORK = platformdirs.user_cache_path("bugcontext") / "realbugs"
#: Each strategy runs this many times per case and budget; its build time is the median.
DEFAULT_REPEAT = 5
#: The cost model of every strategy: exact tokens of the rendered Markdown section.
COST = Cost(unit="tokens", encoding="o200k_base", template="markdown")

#: The gathering variants: from the failing log alone, with the issue text as well
#: (``gather(issue=...)``), and with the issue text as extra search words (``gather(query=...)``,
#: the way it could be passed before ``issue`` existed).
VARIANTS = ("log", "log+issue", "log+query", "log+rerun", "log+issue+rerun")
#: The variants gathered with execution evidence: the case's failing tests re-run under the
#: tracer (:func:`~bugcontext.job.sources.reruns.rerun_for_log`) in its prepared environment.
RERUN_VARIANTS = ("log+rerun", "log+issue+rerun")

#: The strategies, baselines first.
STRATEGIES = ("naive", "top-k", "layered", "layered+merge")
STRATEGY_LABELS = {
    "naive": "naive concatenation",
    "top-k": "score-only top-k",
    "layered": "layered, de-dup",
    "layered+merge": "layered + RangeMerger",
}


#: What a metric reads of a selected window.
Window = SpanLike


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
    variant: str = "log"

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
    """One evaluated case in one gathering variant: its failure file, gold ranges, candidate
    counts and gather time; ``candidate_hunks`` / ``candidate_files`` are the gold hunks lying
    wholly inside the union of all candidates / the gold files with a candidate (candidate
    recall, whatever the budget); ``split`` is ``"calibration"`` or ``"held-out"``
    (:func:`split_of`)."""

    case: str
    failure_file: str | None
    gold: tuple[GoldRange, ...]
    candidates: int
    merged_candidates: int
    gather_seconds: float
    variant: str = "log"
    split: str = ""
    candidate_hunks: int = 0
    candidate_files: int = 0
    has_issue: bool = False
    rerun_seconds: float | None = None
    plain_seconds: float | None = None
    rerun_notes: tuple[str, ...] = ()
    executed_files: int = 0
    ranked_hunks: int = 0
    gold_ranks: tuple[int | None, ...] = ()

    @property
    def gold_files(self) -> int:
        """The distinct gold files."""
        return len({canonical_path(g.path) for g in self.gold})


@dataclass(frozen=True)
class Evaluation:
    """Every run of an evaluation, with the cases, budgets and strategies it covers."""

    cases: tuple[CaseInfo, ...]
    budgets: tuple[int, ...]
    strategies: tuple[str, ...]
    runs: tuple[Run, ...]
    variants: tuple[str, ...] = ("log",)

    def runs_of(self, strategy: str, budget: int, variant: str = "log") -> list[Run]:
        """The runs of one strategy at one budget in one gathering variant, in case order."""
        return [
            r for r in self.runs if r.strategy == strategy and r.budget == budget and r.variant == variant
        ]

    def cases_of(self, variant: str = "log") -> list[CaseInfo]:
        """The cases as gathered in one variant, in case order."""
        return [c for c in self.cases if c.variant == variant]


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


_TIER = {"reference": 0, "failure": 1, "search": 2}
#: Ranked candidate recall counts the candidates whose rank-order prefix fits this many tokens.
RANKED_TOKENS = 32_000


def ranked_recall(
    candidates: Sequence[Any],
    failure_files: Sequence[str],
    gold: Sequence[GoldRange],
    within: int = RANKED_TOKENS,
) -> tuple[int, tuple[int | None, ...]]:
    """Candidate recall counting only what ranks early: ``(hunks, ranks)``, ``hunks`` the gold
    hunks lying wholly inside one candidate among those whose rendered blocks, summed in the
    builder's rank order (failing files first, then reference, failure, search; score; input
    order), fit ``within`` o200k_base tokens (overlaps not removed, so a long pool cannot count
    by proposing everything), and per gold hunk the 1-based rank of the first candidate holding
    it (``None`` if none does)."""
    failing = {canonical_path(p): i for i, p in enumerate(failure_files)}
    windows = _attributes(candidates)
    k = len(failing)
    order = sorted(
        range(len(windows)),
        key=lambda i: (
            failing.get(canonical_path(windows[i].path), k + _TIER[str(windows[i].reason)]),
            -float(windows[i].score),
            i,
        ),
    )
    ordered = [windows[i] for i in order]
    counter = TokenCounter(COST.encoding or "o200k_base")
    costs = counter.count([_block(w, list(failing)) for w in ordered]) if ordered else []
    early: list[Any] = []
    total = 0
    for window, cost in zip(ordered, costs, strict=True):
        total += cost
        if total > within:
            break
        early.append(window)
    hunks = candidate_recall(early, gold)[0]
    ranks: list[int | None] = []
    for g in gold:
        path = canonical_path(g.path)
        ranks.append(
            next(
                (
                    rank
                    for rank, w in enumerate(ordered, 1)
                    if canonical_path(w.path) == path and w.start <= g.start and g.end <= w.end
                ),
                None,
            )
        )
    return hunks, tuple(ranks)


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
    result = ContextBuilder(cost=COST).build(data)
    return tuple(result.items), result.used


def _layered_merge(
    candidates: Sequence[Any], budget: int, failing: Sequence[str], repo: Repository
) -> _Picked:
    merged = RangeMerger(repo).merge(candidates)
    data = {"candidates": merged, "budget": budget, "failure_files": list(failing)}
    result = ContextBuilder(cost=COST).build(data)
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


def candidate_recall(candidates: Iterable[Window], gold: Sequence[GoldRange]) -> tuple[int, int]:
    """``(hunks, files)``: the gold hunks lying wholly inside one candidate (a packer that
    de-duplicates overlapping windows can send such a candidate, not a union of several),
    and the gold files with a candidate."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for w in candidates:
        spans.setdefault(canonical_path(w.path), []).append((w.start, w.end))
    hunks = sum(
        any(s <= g.start and g.end <= e for s, e in spans.get(canonical_path(g.path), ())) for g in gold
    )
    files = len({canonical_path(g.path) for g in gold} & set(spans))
    return hunks, files


def _gather(
    repository: Repository,
    log_text: str,
    variant: str,
    issue: str | None,
    exclude: Collection[str],
    record: ExecutionRecord | None = None,
) -> Gathered:
    return gather(
        repository,
        log_text,
        query=issue if variant == "log+query" else None,
        issue=issue if variant in ("log+issue", "log+issue+rerun") else None,
        exclude=exclude,
        coverage=record if variant in RERUN_VARIANTS else None,
    )


def case_environment(prepared: PreparedCase) -> tuple[Path, dict[str, str]]:
    """The interpreter and the extra environment a prepared case's tests run with: its
    virtual environment's ``python`` and ``PYTHONPATH`` (the project is not installed: its
    source root, as the preparation ran the failing test)."""
    case = prepared.case
    root = case.get("pythonpath") if is_tree_case(case) else case.get("source_root")
    return prepared.folder / "venv" / "bin" / "python", {
        "PYTHONPATH": str(prepared.repo / root) if root else str(prepared.repo),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def rerun_case(
    prepared: PreparedCase, log_text: str, mode: str = "failing"
) -> tuple[ExecutionRecord, RerunReport]:
    """The failing tests of a prepared case re-run under the tracer in its environment
    (:func:`case_environment`), and once more without it to time the tracer's overhead."""
    python, env = case_environment(prepared)
    return rerun_for_log(
        prepared.repo, log_text, mode=mode, python=python, current=False, env=env, plain=True
    )


@dataclass(frozen=True)
class Ablation:
    """What leaving one source out costs, over the cases of one gathering variant: the cases
    whose every gold hunk was inside the candidates with all sources and is not without
    ``source`` (``lost_candidates``), and likewise in the context at ``budget`` tokens
    (``lost_selection``), as case ids; ``gained_selection`` the cases the context covers only
    without it."""

    source: str
    variant: str
    budget: int
    lost_candidates: tuple[str, ...]
    lost_selection: tuple[str, ...]
    gained_selection: tuple[str, ...]


def ablation(
    evaluation: Evaluation,
    cases: Sequence[dict[str, Any]],
    work: str | Path = DEFAULT_WORK,
    *,
    sources: Sequence[str] = SOURCES,
    budget: int = 8_000,
    strategy: str = "layered",
    trees: str | Path | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> list[Ablation]:
    """For each source and each variant of ``evaluation`` (which gathered with every source),
    gather each case again without that source and compare (see :class:`Ablation`). Issue
    sources are ablated in the variants with the issue text only. Cases are prepared (cached)
    as in :func:`evaluate`; a variant with execution evidence re-runs each case's failing
    tests once."""
    out: list[Ablation] = []
    full = {(r.case, r.variant): r for r in evaluation.runs if r.strategy == strategy and r.budget == budget}
    infos = {(c.case, c.variant): c for c in evaluation.cases}
    prepared_cases = []
    for case in cases:
        try:
            prepared_cases.append((case, prepare_case(case, work, trees=trees, log=log)))
        except PreparationError:
            continue
    records: dict[str, ExecutionRecord] = {}  # per case, one re-run for every source left out
    for variant in evaluation.variants:
        for source in sources:
            if source.startswith("issue") and "issue" not in variant:
                continue
            lost_c: list[str] = []
            lost_s: list[str] = []
            gained: list[str] = []
            for case, prepared in prepared_cases:
                key = (prepared.id, variant)
                if key not in infos or key not in full:
                    continue
                repository = Repository(prepared.repo)
                log_text = read_capped(prepared.log, "max_log_bytes", field="pytest_log").decode(
                    "utf-8", errors="replace"
                )
                gold = gold_ranges(case)
                record = None
                if variant in RERUN_VARIANTS:
                    if prepared.id not in records:
                        records[prepared.id] = rerun_case(prepared, log_text)[0]
                    record = records[prepared.id]
                gathered = _gather(repository, log_text, variant, issue_of(case), (source,), record)
                candidates = list(gathered.candidates)
                lost = candidate_recall(candidates, gold)[0] < len(gold)
                run = measure(
                    prepared.id,
                    strategy,
                    budget,
                    select(strategy, candidates, budget, list(gathered.failure_files), repository),
                    gold,
                    gathered.failure_file,
                )
                before, whole = infos[key], full[key]
                if before.candidate_hunks == len(gold) and lost:
                    lost_c.append(prepared.id)
                if whole.hunks_in_context == whole.gold_hunks and run.hunks_in_context < run.gold_hunks:
                    lost_s.append(prepared.id)
                if whole.hunks_in_context < whole.gold_hunks and run.hunks_in_context == run.gold_hunks:
                    gained.append(prepared.id)
            log(f"ablation [{variant}] without {source}: lost {len(lost_c)} / {len(lost_s)}")
            out.append(Ablation(source, variant, budget, tuple(lost_c), tuple(lost_s), tuple(gained)))
    return out


def split_of(case_id: str) -> str:
    """The fixed part of the development cases ``case_id`` belongs to: ``"calibration"`` when
    the first byte of the SHA-256 of its id (UTF-8) is even, else ``"held-out"``. Weights
    chosen from the data are chosen on the calibration part and reported on both."""
    return "calibration" if hashlib.sha256(case_id.encode("utf-8")).digest()[0] % 2 == 0 else "held-out"


def issue_of(case: Mapping[str, Any]) -> str | None:
    """The issue text of a case (its ``issue`` or ``query`` field), or ``None``."""
    for key in ("issue", "query"):
        value = case.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def prepare_case(
    case: dict[str, Any],
    work: str | Path,
    *,
    trees: str | Path | None = None,
    refresh: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> PreparedCase:
    """Prepare either kind of case under ``work/<id>/``: a SWE-bench-style case (with
    ``fail_to_pass``) from ``trees/<id>.tar.gz``
    (:func:`~bugcontext.evaluation.realbugs2.prepare_tree_case`), a PyPI release pair from
    PyPI (:func:`~bugcontext.evaluation.realbugs.prepare`), a case of another language
    (``langbugs.json``) from its registry (:func:`~bugcontext.evaluation.langbugs.prepare_lang_case`).
    Raises :class:`PreparationError`."""
    if is_lang_case(case):
        return prepare_lang_case(case, work, refresh=refresh, log=log)
    if is_tree_case(case):
        return prepare_tree_case(case, work, trees, refresh=refresh, log=log)
    return prepare(case, work, refresh=refresh, log=log)


def _case_info(
    case_id: str,
    repository: Repository,
    gathered: Gathered,
    gold: tuple[GoldRange, ...],
    issue: str | None,
    variant: str,
    gather_seconds: float,
    record: ExecutionRecord | None,
    report: RerunReport | None,
) -> CaseInfo:
    """What the evaluation reports of one case in one gathering variant: its candidates'
    recall of the gold hunks and files, the re-run's times and notes with re-run evidence."""
    traced = variant in RERUN_VARIANTS and report is not None and record is not None
    candidates = list(gathered.candidates)
    hunks_found, files_found = candidate_recall(candidates, gold)
    ranked, ranks = ranked_recall(candidates, gathered.failure_files, gold)
    return CaseInfo(
        case=case_id,
        failure_file=gathered.failure_file,
        gold=gold,
        candidates=len(candidates),
        merged_candidates=len(RangeMerger(repository).merge(candidates)),
        gather_seconds=gather_seconds,
        variant=variant,
        split=split_of(case_id),
        candidate_hunks=hunks_found,
        candidate_files=files_found,
        has_issue=issue is not None,
        rerun_seconds=report.seconds if traced and report is not None else None,
        plain_seconds=report.plain_seconds if traced and report is not None else None,
        rerun_notes=report.notes if traced and report is not None else (),
        executed_files=len(record.files) if traced and record is not None else 0,
        ranked_hunks=ranked,
        gold_ranks=ranks,
    )


def evaluate(
    cases: Sequence[dict[str, Any]],
    work: str | Path = DEFAULT_WORK,
    *,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    strategies: Sequence[str] = STRATEGIES,
    refresh: bool = False,
    repeat: int = DEFAULT_REPEAT,
    log: Callable[[str], None] = lambda message: None,
    trees: str | Path | None = None,
    variants: Sequence[str] = ("log",),
    exclude: Collection[str] = (),
) -> tuple[Evaluation, list[tuple[str, str]]]:
    """Prepare (cached), gather and evaluate each case (build times: medians of ``repeat``
    runs), once per gathering variant of :data:`VARIANTS` in ``variants`` (``"log+issue"``
    passes the case's issue text, :func:`issue_of`, to ``gather``; a case without one is
    gathered as in ``"log"``). ``trees`` is the folder of ``<id>.tar.gz`` trees of the
    SWE-bench-style cases; ``exclude`` names sources ``gather`` leaves out (ablation).

    Returns the evaluation of the cases that could be prepared, and ``(case id, problem)`` for
    each case that could not (:class:`~bugcontext.realbugs.PreparationError`). Raises
    ``ValueError`` for an unknown variant.
    """
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variant {unknown[0]!r}; known: {', '.join(VARIANTS)}")
    infos: list[CaseInfo] = []
    runs: list[Run] = []
    failed: list[tuple[str, str]] = []
    for case in cases:
        try:
            prepared = prepare_case(case, work, trees=trees, refresh=refresh, log=log)
        except PreparationError as exc:
            failed.append((str(case["id"]), str(exc)))
            continue
        try:
            log_bytes = read_capped(prepared.log, "max_log_bytes", field="pytest_log")
        except (OSError, ResourceLimitError) as exc:
            failed.append((str(case["id"]), str(exc)))
            continue
        log_text = log_bytes.decode("utf-8", errors="replace")
        gold = gold_ranges(case)
        issue = issue_of(case)
        record: ExecutionRecord | None = None
        report: RerunReport | None = None
        if any(v in RERUN_VARIANTS for v in variants):
            log(f"{prepared.id}: re-running the failing tests under the tracer")
            record, report = rerun_case(prepared, log_text)
        for variant in variants:
            repository = Repository(prepared.repo)
            began = time.perf_counter()
            gathered = _gather(repository, log_text, variant, issue, exclude, record)
            gather_seconds = time.perf_counter() - began
            candidates = list(gathered.candidates)
            infos.append(
                _case_info(
                    prepared.id, repository, gathered, gold, issue, variant, gather_seconds, record, report
                )
            )
            log(
                f"{prepared.id} [{variant}]: {len(candidates)} candidates, "
                f"failure file {gathered.failure_file}"
            )
            runs += [
                replace(run, variant=variant)
                for run in evaluate_candidates(
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
            ]
    evaluation = Evaluation(tuple(infos), tuple(budgets), tuple(strategies), tuple(runs), tuple(variants))
    return evaluation, failed
