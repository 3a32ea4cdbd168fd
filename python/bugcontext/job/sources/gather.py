"""Gathering the candidates of all three sources for one failing test (:func:`gather`).

Scores. The builder orders the candidates of the failure file by score alone, whatever their
reason, so the three sources share one scale there: search windows keep their BM25 score
``s``; with ``T = ceil(max s)`` (0 without search windows), reference windows score in
``(T + 1, T + 2]`` and failure windows in ``(T + 2, T + 3]``. Within a source, the score falls
off with the frame's distance from the deepest frame (failure), with the kind of evidence, the
name's ambiguity, the frame's distance and the import-graph distance (reference), or follows
BM25.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bugcontext.core.limits import check_context_inputs
from bugcontext.job.sources.coverage import CoverageInput, execution_record
from bugcontext.job.sources.execution import (
    ExecutionRecord,
    called_windows,
    demote_unexecuted,
    execution_windows,
)
from bugcontext.job.sources.failure import (
    ProjectFrame,
    called_code_windows,
    failure_files,
    failure_windows,
    is_test_file,
    merge_windows,
    resolve_frames,
)
from bugcontext.job.sources.files import PolicyOmission, Repository
from bugcontext.job.sources.hops import hop_windows
from bugcontext.job.sources.issue import issue_query, issue_windows
from bugcontext.job.sources.references import EVIDENCE_SOURCES, reference_windows
from bugcontext.job.sources.reports import TestFailure
from bugcontext.job.sources.runs import (
    FailingTest,
    failing_tests,
    parse_test_output,
    select_test,
    summary_order,
)
from bugcontext.job.sources.search import TOP_K, SearchIndex, build_query, search_windows
from bugcontext.job.sources.symbols import SymbolIndex
from bugcontext.job.sources.units import import_windows, split_classes
from bugcontext.job.sources.window import Window

__all__ = ["MAX_FAILING_TESTS", "SOURCES", "Gathered", "gather"]

#: The sources ``gather`` can leave out (``exclude``), for ablation: the failure windows, the
#: reference windows (:mod:`.references`), the code under test of an assertion in the test
#: body, the three kinds of one-hop windows (:mod:`.hops`), the methods of a long class in
#: place of the class and the import blocks of the files the evidence points to
#: (:mod:`.units`), the log's search, and the
#: issue's definitions and search (:mod:`.issue`).
SOURCES = (
    "failure",
    "reference",
    "called",
    "callee",
    "state",
    "sibling",
    "members",
    "imports",
    "search",
    "issue-definitions",
    "issue-search",
)


#: The weight (above the reference tier's floor) of an import-block window.
IMPORT_SCORE = 0.01


@dataclass(frozen=True)
class Gathered:
    """The candidates gathered for one failure, and what they were gathered from.

    ``candidates`` are failure windows, then reference windows, then search windows, each
    best first. ``failure_file`` is the repository-relative file of the deepest project
    frame of the exception the test saw (``None`` without project frames). ``failure`` is
    the report the windows were built from (the log's first failure, or ``None``);
    ``frames`` its project frames, most relevant first; ``query`` the search tokens.
    ``policy_omissions`` are the windows the sources took and the reader withheld (a secret
    file, even the failure file; a window that no longer matches its file), in the order
    the sources produced them: they are not among ``candidates``, whatever their priority.
    ``failure_files`` are the failing files in error order (the failure file first, then
    the other files of the traceback from deep to shallow, each once). ``failing_tests``
    are every failing test of the log (:func:`~.runs.failing_tests`, summary order);
    ``failure`` is the ``failure`` of the chosen one. ``execution`` is the execution record the
    ``coverage`` evidence was read into (``None`` without it): its ``unmapped`` paths are the
    report's files that name no repository file.
    """

    candidates: tuple[Window, ...]
    failure_file: str | None
    failure: TestFailure | None
    frames: tuple[ProjectFrame, ...]
    query: tuple[str, ...]
    policy_omissions: tuple[PolicyOmission, ...] = ()
    failure_files: tuple[str, ...] = ()
    failing_tests: tuple[FailingTest, ...] = ()
    execution: ExecutionRecord | None = None

    def build_input(self, max_chars: int) -> dict[str, object]:
        """The input of ``bugcontext.build``: candidates, ``max_chars`` (a budget in
        characters, i.e. code points) and the failing files (``failure_files``, in error
        order; the failure file alone when ``failure_files`` is empty)."""
        files = list(self.failure_files)
        if not files and self.failure_file is not None:
            files = [self.failure_file]
        return {
            "candidates": list(self.candidates),
            "max_chars": max_chars,
            "failure_files": files,
        }


#: At most this many failing tests of a log give evidence when no ``test`` is named.
MAX_FAILING_TESTS = 8


def _by_reach(windows: list[Window], reached: list[set[tuple[str, int]]], base: float) -> list[Window]:
    """The failure windows re-scored by how many failing tests reach them: with ``n`` tests
    (``reached``: each test's frame lines), a window's score above ``base`` is multiplied by
    ``(1 + r / n) / 2``, ``r`` being the tests with a frame inside it (at least 1). Scores stay
    in ``(base, base + 1]``; with one test nothing changes."""
    out = []
    for w in windows:
        reach = sum(any(p == w.path and w.start <= ln <= w.end for p, ln in lines) for lines in reached)
        factor = (1 + max(1, reach) / len(reached)) / 2
        out.append(replace(w, score=round(base + (w.score - base) * factor, 6)))
    return out


def gather(
    repo: Repository | Path | str,
    log_text: str,
    query: str | None = None,
    *,
    top_k: int = TOP_K,
    junit_xml: str | bytes | None = None,
    test: str | None = None,
    symbols: SymbolIndex | None = None,
    index: SearchIndex | None = None,
    issue: str | None = None,
    exclude: Collection[str] = (),
    coverage: CoverageInput | None = None,
) -> Gathered:
    """Gather failure, reference and search windows for one failing test of ``log_text``.

    ``repo`` is the repository folder (or a :class:`Repository`); ``log_text`` the output
    of a pytest run made in that folder (``-rA --tb=long`` or any other traceback style;
    relative paths in it are taken relative to the repository). ``query`` is extra search
    text; ``top_k`` the number of search windows. ``log_text`` may be a JUnit XML report
    instead, and ``junit_xml`` a JUnit XML report of the same run (``parse_test_output``:
    the report is then the authority for the failures and their frames).

    The failing test is ``test`` (a pytest node id such as ``tests/test_x.py::test_y``, a
    dotted JUnit or unittest id, or a test name), by default the first failing test in the
    order of the short test summary (:func:`~.runs.select_test`); without ``test``, every
    other failing test of the log is evidence too (:func:`_evidence_frames`). Frames that give
    no window (a line past the end of the file, a file the reader will not read, a path from
    another machine that matches no repository file or several) are ``policy_omissions``
    (:func:`~.failure.resolve_frames`).
    ``symbols`` and ``index`` are the repository's symbol index and search index when the
    caller keeps them (``bugcontext.Workspace``); by default a new :class:`SymbolIndex` and
    the process's :meth:`SearchIndex.for_repository`.
    ``issue`` is the issue text (the bug report): its windows only fill what the log's
    evidence leaves of a budget (:func:`_issue_search`, :func:`_issue_definitions`).
    ``exclude`` names sources of :data:`SOURCES` to leave out (ablation).
    ``coverage`` is execution evidence (:func:`~.coverage.execution_record`: a coverage
    report's bytes or path, or an :class:`~.execution.ExecutionRecord`), read as
    :func:`_execution_evidence` says. The scores of the sources share one scale (the module's
    documentation).

    Raises ``ResourceLimitError`` for an input over its limit in ``repo``'s
    :attr:`~.files.Repository.resource_limits` (:func:`bugcontext.core.limits.check_context_inputs`,
    before anything is parsed; a walk over ``max_files``), ``NotADirectoryError`` if ``repo`` is
    not a folder, ``UnknownTestError`` (a
    ``LookupError``) if ``test`` names no failing test of the log, ``LogFormatError`` for
    unreadable JUnit XML, ``ValueError`` for an unknown name in ``exclude``.
    """
    _check_exclude(exclude)
    repository = repo if isinstance(repo, Repository) else Repository(Path(repo))
    check_context_inputs(repository.resource_limits, log_text, junit_xml, query, issue)
    tests = failing_tests(parse_test_output(log_text, junit_xml=junit_xml), summary_order(log_text))
    chosen = select_test(tests, test)
    failure = chosen.failure if chosen is not None else None
    frames, frame_omissions, reached = _evidence_frames(repository, chosen, tests, every=test is None)
    return _gathered(
        repository,
        tests,
        failure,
        (frames, frame_omissions, reached),
        query=query,
        top_k=top_k,
        symbols=symbols,
        index=index,
        issue=issue,
        exclude=exclude,
        coverage=coverage,
    )


def _gathered(
    repository: Repository,
    tests: list[FailingTest],
    failure: TestFailure | None,
    evidence: tuple[list[ProjectFrame], list[PolicyOmission], list[set[tuple[str, int]]]],
    *,
    query: str | None,
    top_k: int,
    symbols: SymbolIndex | None,
    index: SearchIndex | None,
    issue: str | None,
    exclude: Collection[str],
    coverage: CoverageInput | None,
) -> Gathered:
    """The windows of every source for ``failure`` and its project frames (``evidence``:
    :func:`_evidence_frames`), screened by the reader, as :func:`gather` returns them."""
    frames, frame_omissions, reached = evidence
    tokens = build_query(failure, query, repo=repository, weighted=True)
    failing = failure_files(frames)
    search = _log_search(repository, tokens, failing, top_k, index)
    if "search" in exclude:
        search = []
    issue_search: list[Window] = []
    if issue and "issue-search" not in exclude:
        issue_search = _issue_search(repository, issue, search, failing, top_k, index)
    tier = math.ceil(max((w.score for w in search), default=0.0))
    symbol_index = symbols if symbols is not None else SymbolIndex(repository)
    references, leftover = _references(
        repository, failure, frames, failing, search, symbol_index, tier, exclude
    )
    if issue and "issue-definitions" not in exclude:
        named = _issue_definitions(repository, issue, symbol_index, search, references, failing)
        issue_search = [*named, *issue_search]
    failure_found = _failure_found(repository, frames, symbol_index, tier, reached, exclude)
    executed: list[Window] = []
    record = None if coverage is None else execution_record(coverage, repository, repository.resource_limits)
    if record is not None:
        executed, failure_found, references, unexecuted = _execution_evidence(
            repository, record, tests, frames, symbol_index, tier, search, references, failure_found, exclude
        )
        leftover = [*leftover, *unexecuted]
    sources = (
        ("failure", failure_found),
        ("coverage", executed),
        ("reference", references),
        ("search", search),
        ("issue", issue_search),
        ("members", leftover),
    )
    candidates, withheld = _screen(repository, sources)
    return Gathered(
        candidates=tuple(candidates),
        failure_file=frames[0].path if frames else None,
        failure=failure,
        frames=tuple(frames),
        query=tuple(dict.fromkeys(tokens)),
        policy_omissions=(*frame_omissions, *withheld),
        failure_files=tuple(failing),
        failing_tests=tuple(tests),
        execution=record,
    )


def _screen(
    repository: Repository, sources: Sequence[tuple[str, list[Window]]]
) -> tuple[list[Window], list[PolicyOmission]]:
    """The windows of every source, in order, that pass the reader's check, and those it
    withholds.

    Every window passes the reader's check last: secrets and stale windows are withheld.
    Each window names its source (its provenance: the candidate's ``source_id``)."""
    named_windows = [replace(w, source=w.source or source) for source, windows in sources for w in windows]
    return repository.screen(named_windows)


def _failure_found(
    repository: Repository,
    frames: list[ProjectFrame],
    symbol_index: SymbolIndex,
    tier: int,
    reached: list[set[tuple[str, int]]],
    exclude: Collection[str],
) -> list[Window]:
    """The failure windows (scores above ``tier + 2``), re-scored by how many failing tests
    reach them when there are several (:func:`_by_reach`)."""
    if "failure" in exclude:
        return []
    found = failure_windows(repository, frames, base_score=tier + 2.0, symbols=symbol_index)
    return _by_reach(found, reached, tier + 2.0) if len(reached) > 1 else found


def _check_exclude(exclude: Collection[str]) -> None:
    """Raise ``ValueError`` for a name in ``exclude`` that is not one of :data:`SOURCES`."""
    unknown = sorted(set(exclude) - set(SOURCES))
    if unknown:
        raise ValueError(f"unknown source {unknown[0]!r} in exclude; known: {', '.join(SOURCES)}")


def _evidence_frames(
    repository: Repository, chosen: FailingTest | None, tests: Sequence[FailingTest], *, every: bool
) -> tuple[list[ProjectFrame], list[PolicyOmission], list[set[tuple[str, int]]]]:
    """The project frames of the chosen test, its frame omissions, and per failing test its
    frames' lines (empty unless ``every``).

    Of the chosen test's reports, the call's failure is the failure; a setup error only when
    the call never ran; its other reports (a teardown error) are extra evidence: their
    project frames follow the failure's, farther away. With ``every`` (no test named), every
    other failing test of the log (at most :data:`MAX_FAILING_TESTS` in all) is evidence too:
    its frames outside test files follow, farther away again (their files join the failing
    files, after the chosen test's), and each failure window is re-scored by how many failing
    tests have a frame in it (:func:`_by_reach`), so the code more failing tests ran through
    ranks first."""
    frames: list[ProjectFrame] = []
    frame_omissions: list[PolicyOmission] = []
    if chosen is not None:
        frames, frame_omissions = resolve_frames(repository, chosen.failure)
        known = {(pf.path, pf.line) for pf in frames}
        reported = set(frame_omissions)
        for other in chosen.others:  # a teardown error: extra evidence, after the failure's
            extra, omitted = resolve_frames(repository, other, from_test_id=False)
            offset = len(frames)
            for pf in extra:
                if (pf.path, pf.line) not in known:
                    known.add((pf.path, pf.line))
                    frames.append(ProjectFrame(pf.path, pf.line, pf.distance + offset, pf.frame))
            for omission in omitted:
                if omission not in reported:
                    reported.add(omission)
                    frame_omissions.append(omission)
    reached: list[set[tuple[str, int]]] = []  # per failing test, its frames' lines
    if chosen is not None and every:
        reached = _other_tests_frames(repository, chosen, tests, frames, frame_omissions)
    return frames, frame_omissions, reached


def _other_tests_frames(
    repository: Repository,
    chosen: FailingTest,
    tests: Sequence[FailingTest],
    frames: list[ProjectFrame],
    frame_omissions: list[PolicyOmission],
) -> list[set[tuple[str, int]]]:
    """Add the frames (and frame omissions) of the other failing tests to ``frames`` (and
    ``frame_omissions``), and give each failing test's frames' lines, the chosen one first.

    Every failing test is evidence (at most MAX_FAILING_TESTS): the frames of the other tests
    in code under test (not in test files: their own bodies would crowd the failing files)
    follow the chosen test's, farther away; a unit more tests reach scores higher
    (:func:`_by_reach`)."""
    reached = [{(pf.path, pf.line) for pf in frames}]
    known = set(reached[0])
    reported = set(frame_omissions)
    for other_test in [t for t in tests if t is not chosen][: MAX_FAILING_TESTS - 1]:
        extra, omitted = resolve_frames(repository, other_test.failure)
        offset = len(frames)
        reached.append({(pf.path, pf.line) for pf in extra})
        for pf in extra:
            if is_test_file(pf.path):
                continue
            key = (pf.path, pf.line)
            if key not in known:
                known.add(key)
                frames.append(ProjectFrame(pf.path, pf.line, pf.distance + offset, pf.frame))
        for omission in omitted:
            if omission not in reported and not is_test_file(omission.path):
                reported.add(omission)
                frame_omissions.append(omission)
    return reached


def _log_search(
    repository: Repository, tokens: list[str], failing: list[str], top_k: int, index: SearchIndex | None
) -> list[Window]:
    """The search windows of the log's query.

    Search hits in a failing *test* file are left out: the builder ranks a failing file's
    windows before everything else, and there the failing test is already failure evidence,
    while its neighbouring tests would crowd the code under test out of a small budget."""
    return [
        w
        for w in search_windows(repository, tokens, top_k=top_k, index=index)
        if not (w.path in failing and is_test_file(w.path))
    ]


def _issue_search(
    repository: Repository,
    issue: str,
    search: list[Window],
    failing: list[str],
    top_k: int,
    index: SearchIndex | None,
) -> list[Window]:
    """The windows of the issue's own search (:mod:`.issue`), out of the failing files and
    not already found by the log's: the issue's own search ranks after the log's, scores
    scaled below its lowest (the builder ranks a failing file's windows before every other
    file's, whatever their score: the issue only fills what the log's evidence leaves of a
    budget, and never pushes any of it out)."""
    logged = {(w.path, w.start, w.end) for w in search}
    found = [
        w
        for w in search_windows(repository, issue_query(issue), top_k=top_k, index=index)
        if (w.path, w.start, w.end) not in logged and w.path not in failing
    ]
    ceiling = min((w.score for w in search), default=1.0)
    top = max((w.score for w in found), default=1.0)
    return [replace(w, score=round(0.97 * ceiling * w.score / top, 6)) for w in found]


#: The ``source`` (``source_id``) of a window of the code under test the failing test calls.
CALLED_CODE_SOURCE = "reference: code under test the failing test calls"
#: The ``source`` of a file's import header (the names a selected window's code uses).
IMPORTS_SOURCE = "reference: the imports of a file of the failure"


def _references(
    repository: Repository,
    failure: TestFailure | None,
    frames: list[ProjectFrame],
    failing: list[str],
    search: list[Window],
    symbol_index: SymbolIndex,
    tier: int,
    exclude: Collection[str],
) -> tuple[list[Window], list[Window]]:
    """The reference windows (scores in the reference tier above ``tier + 1``) and the
    leftover methods of long classes split into their methods (``members``)."""
    references = (
        reference_windows(
            repository,
            frames,
            symbol_index,
            base_score=tier + 1.0,
            test_name=failure.name if failure is not None else None,
        )
        if frames and "reference" not in exclude
        else []
    )
    if failure is not None and "called" not in exclude:
        # An assertion in the test body: the code under test it calls is reference evidence.
        called = [
            replace(w, source=w.source or CALLED_CODE_SOURCE)
            for w in called_code_windows(repository, failure, frames, base_score=tier + 1.0)
        ]
        references = merge_windows(called, references)
    kinds = {"callee", "state", "sibling"} - set(exclude)
    if frames and kinds:
        # One hop further: callees, the class's state, sibling calls (:mod:`.hops`).
        hops = hop_windows(repository, frames, symbol_index, base_score=tier + 1.0, kinds=kinds)
        references = merge_windows(references, hops)
    # A long class is its methods (whole units), so one selected method does not drop the rest.
    leftover: list[Window] = []
    if "members" not in exclude:
        floor = 0.999 * min((w.score for w in search), default=1.0)
        references, leftover = split_classes(repository, references, symbol_index, tier + 1.0, failing, floor)
    if "imports" not in exclude:
        pointed = [*failing, *(w.path for w in references), *(w.path for w in search[:3])]
        found = import_windows(repository, dict.fromkeys(pointed), symbol_index, tier + 1.0 + IMPORT_SCORE)
        headers = [replace(w, source=w.source or IMPORTS_SOURCE) for w in found]
        references = merge_windows(references, headers)
    return references, leftover


def _issue_definitions(
    repository: Repository,
    issue: str,
    symbol_index: SymbolIndex,
    search: list[Window],
    references: list[Window],
    failing: list[str],
) -> list[Window]:
    """The windows of the definitions the issue names (:mod:`.issue`), out of the failing
    files and the references: they rank after every window from the log: in the search tier,
    below the log's search and leftover windows, above the issue's own search."""
    lowest = min((w.score for w in search), default=1.0)
    referenced = {(w.path, w.start, w.end) for w in references}
    named = issue_windows(repository, issue, symbol_index, low=0.98 * lowest, high=0.99 * lowest)
    return [
        replace(w, reason="search")
        for w in named
        if (w.path, w.start, w.end) not in referenced and w.path not in failing
    ]


def _execution_evidence(
    repository: Repository,
    record: ExecutionRecord,
    tests: Sequence[FailingTest],
    frames: list[ProjectFrame],
    symbol_index: SymbolIndex,
    tier: int,
    search: list[Window],
    references: list[Window],
    failure_found: list[Window],
    exclude: Collection[str],
) -> tuple[list[Window], list[Window], list[Window], list[Window]]:
    """``(executed, failure windows, references, unexecuted)`` with the execution evidence
    ``record``.

    Each unit the failing tests executed is a ``failure`` window scored by suspiciousness
    (:func:`~.execution.execution_windows`, source ``coverage: ...``), and the reference
    windows they never executed are moved below every search window
    (:func:`~.execution.demote_unexecuted`: ``unexecuted``). With recorded call edges (a traced
    re-run), the functions a frame's function really called are reference windows
    (:func:`~.execution.called_windows`), where the static one-hop sources only guess."""
    lowest = min((w.score for w in search), default=1.0)
    executed = execution_windows(
        repository,
        record,
        tests,
        frames,
        symbol_index,
        tier + 2.0,
        static=[*references, *search],
        weak=(0.991 * lowest, 0.997 * lowest),
    )
    if "callee" not in exclude:
        # The callees that really ran from a frame's function (recorded call edges).
        called = called_windows(repository, record, tests, frames, symbol_index, tier + 1.0)
        references = merge_windows(references, called)
    floor = 0.998 * min((w.score for w in search), default=1.0)
    references, unexecuted = demote_unexecuted(
        repository, references, record, tests, floor, keep={EVIDENCE_SOURCES["line"]}
    )
    # A unit that is a frame's own window stays that window, with the higher score.
    best = {(w.path, w.start, w.end): w.score for w in executed}
    failure_found = [
        replace(w, score=max(w.score, best.get((w.path, w.start, w.end), w.score))) for w in failure_found
    ]
    framed = {(w.path, w.start, w.end) for w in failure_found}
    executed = [w for w in executed if (w.path, w.start, w.end) not in framed]
    return executed, failure_found, references, unexecuted
