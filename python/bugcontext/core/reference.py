"""The pure-Python reference implementation: the executable specification.

Same signature, types, results and errors as :func:`bugcontext.build` (the Rust engine); the
Hypothesis differential tests hold the two equal. Read this module to learn the contract:

1. **Validate** every candidate, in input order, before ranking (all-or-nothing).
2. **Rank** by the key ``(group, -float(score), input index)``, ascending: with ``k`` failing
   files (``failure_files``, in error order; ``failure_file`` is the one-element form), a
   candidate from the ``i``-th has group ``i``; any other has group ``k`` for ``reference``,
   ``k + 1`` for ``failure`` and ``k + 2`` for ``search``.
3. **Select** in rank order, never stopping early: a candidate whose closed line range
   ``[start, end]`` intersects a window already *selected* from the same path is omitted as
   ``overlap`` (naming the selected window with the smallest start it hits); else one whose
   cost would take the total past the budget is omitted as ``budget``; else it is selected.
   Cost is ``len(content)``: characters, i.e. Python code points. A **group** (candidates with
   equal, hashable ``group``) is decided whole when its best-ranked member comes up: members
   that hit a selected window (or a member tried before them) are omitted as ``overlap``; if the
   others' costs together fit, they are all selected, else every member is omitted as
   ``group``, naming the member at which the running cost went past the budget.
   A candidate found **stale** by the ``verify`` reader (see :func:`stale`) is omitted as
   ``stale`` at its rank: it takes no budget and blocks nothing (in a group, it is left out
   and the group decided over its other members).
4. **Report** each failing file whose failure windows (its candidates with reason ``failure``)
   were all left out, in ``missing_critical`` (see :func:`bugcontext.core._finish.finish`); the
   result's ``digest`` and the input's :meth:`~ContextBuilder.cache_key` are SHA-256 over
   the byte form of :mod:`bugcontext.core.digest`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sortedcontainers import SortedKeyList

from bugcontext._core import BuildResult, Candidate, Omission
from bugcontext.core._finish import finish
from bugcontext.core._input import (
    BuilderBase,
    PathProblem,
    batch_options,
    canonical_path,
    normalize_input,
    show_int,
)
from bugcontext.core.composer import render_block
from bugcontext.core.cost import Cost
from bugcontext.core.digest import input_key, verified_files
from bugcontext.core.errors import InvalidCandidateError
from bugcontext.core.limits import limit_error
from bugcontext.core.provenance import MAX_SOURCE_ID, check_verify, file_lines
from bugcontext.core.trace import TraceTarget, traced_build

__all__ = ["ContextBuilder", "build", "build_many", "cache_key", "stale"]

#: Highest line number accepted (``2**31 - 1``).
MAX_LINE = 2**31 - 1
#: Rank group of each reason; the failure file's candidates form group 0.
GROUP = (("reference", 1), ("failure", 2), ("search", 3))
_REASONS_TEXT = "must be one of 'failure', 'reference', 'search'"
_FIELDS = ("path", "start", "end", "content", "reason", "score")


#: Rank group of a failure window (its file's failure evidence).
_FAILURE_GROUP = dict(GROUP)["failure"]


@dataclass(frozen=True)
class _Row:
    """One validated candidate: canonical path, plain-int lines, cost and the score as float."""

    path: str
    start: int
    end: int
    cost: int
    group: int
    score: float
    #: Dense id of the candidate's ``group`` (in order of first appearance), or -1 for none.
    group_id: int = -1
    #: Omitted as ``stale`` (set by the ``verify`` check).
    stale: bool = False


def _field(candidate: object, field: str, index: int, mapping: bool | None = None) -> Any:
    """Read one field of a ``Candidate``, a mapping, or any object with that attribute.

    ``mapping`` is whether the candidate is read as a mapping (``isinstance(candidate,
    Mapping)``), decided once per candidate by the caller; ``None``: decide here.
    """
    # Only the lookup's own "not there" error means missing; anything else the caller's code
    # raises (a property raising KeyError, say) propagates unchanged.
    if mapping is None:
        mapping = isinstance(candidate, Mapping)
    if mapping:
        try:
            return candidate[field]  # type: ignore[index]
        except KeyError:
            raise InvalidCandidateError(field, "is missing", index) from None
    try:
        return getattr(candidate, field)
    except AttributeError:
        raise InvalidCandidateError(field, "is missing", index) from None


def _line(value: object, field: str, index: int) -> int:
    if isinstance(value, bool):
        raise InvalidCandidateError(field, "must be an int, not bool", index)
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidCandidateError(field, f"must be an int, not {type(value).__name__}", index) from None


def read_window(candidate: object, index: int, mapping: bool | None = None) -> tuple[str, int, int]:
    """The candidate's canonical path and line range, checked in the order path, start, end."""
    try:
        path = canonical_path(_field(candidate, "path", index, mapping))
    except PathProblem as exc:
        raise InvalidCandidateError("path", str(exc), index) from None

    start = _line(_field(candidate, "start", index, mapping), "start", index)
    if start < 1:
        raise InvalidCandidateError("start", f"must be >= 1, got {show_int(start)}", index)
    if start > MAX_LINE:
        raise InvalidCandidateError("start", f"must be <= {MAX_LINE}, got {show_int(start)}", index)
    end = _line(_field(candidate, "end", index, mapping), "end", index)
    if end < start:
        raise InvalidCandidateError("end", f"must be >= start ({start}), got {show_int(end)}", index)
    if end > MAX_LINE:
        raise InvalidCandidateError("end", f"must be <= {MAX_LINE}, got {show_int(end)}", index)
    return path, start, end


def read_reason(candidate: object, index: int, mapping: bool | None = None) -> tuple[Any, str, int]:
    """The candidate's reason as given, its plain name and its rank group."""
    reason = _field(candidate, "reason", index, mapping)
    if not isinstance(reason, str):
        raise InvalidCandidateError("reason", f"{_REASONS_TEXT}, not {type(reason).__name__}", index)
    # The text itself (a str-enum member, or any str subclass, by its value, whatever its own
    # __eq__ or __hash__ do).
    text = str.__str__(reason)
    group = next((g for name, g in GROUP if text == name), None)
    if group is None:
        raise InvalidCandidateError("reason", f"{_REASONS_TEXT}, got {text!r}", index)
    return reason, text, group


def read_score(candidate: object, index: int, mapping: bool | None = None) -> tuple[int | float, float]:
    """The candidate's score as an exact ``int`` or ``float`` (the snapshot returned) and as the
    float it is compared as.

    A subclass is read through its built-in type's own conversion (``float.__float__``,
    ``int.__index__``): its own ``__float__``, ``__index__`` or ``__int__`` play no part.
    """
    score = _field(candidate, "score", index, mapping)
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise InvalidCandidateError("score", f"must be an int or a float, not {type(score).__name__}", index)
    exact: int | float
    if isinstance(score, float):
        exact = as_float = float.__float__(score)
    else:
        exact = int.__index__(score)
        try:
            as_float = float(exact)
        except OverflowError:
            raise InvalidCandidateError("score", "is too large to convert to a float", index) from None
    if not math.isfinite(as_float):
        raise InvalidCandidateError("score", f"must be finite, got {as_float!r}", index)
    return exact, as_float


def read_group(candidate: object, index: int, mapping: bool | None = None) -> Any:
    """The candidate's optional ``group`` (``None`` when the key or attribute is missing);
    it must be hashable. ``mapping`` as for :func:`_field`."""
    if mapping is None:
        mapping = isinstance(candidate, Mapping)
    if mapping:
        try:
            group = candidate["group"]  # type: ignore[index]
        except KeyError:
            return None
    else:
        try:
            group = getattr(candidate, "group")  # noqa: B009  (the lookup's own error is wanted)
        except AttributeError:
            return None
    if group is not None:
        try:
            hash(group)
        except TypeError:
            problem = f"must be hashable, not {type(group).__name__}"
            raise InvalidCandidateError("group", problem, index) from None
    return group


def _optional(candidate: object, name: str, mapping: bool) -> Any:
    """An optional field, read as :func:`read_group` reads ``group``: ``None`` when the key or
    attribute is missing."""
    if mapping:
        try:
            return candidate[name]  # type: ignore[index]
        except KeyError:
            return None
    try:
        return getattr(candidate, name)
    except AttributeError:
        return None


_SHA256_PROBLEM = "must be 64 lower-case hex digits (a SHA-256)"
_HEX = frozenset("0123456789abcdef")


def read_provenance(
    candidate: object, index: int, mapping: bool | None = None
) -> tuple[str | None, str | None]:
    """The candidate's optional provenance ``(source_sha256, source_id)``, read after ``group``
    (each ``None`` when its key or attribute is missing), as exact ``str`` snapshots.

    ``source_sha256`` must be a ``str`` of exactly 64 lower-case hex digits (the SHA-256 of the
    bytes of the file the content was read from); ``source_id`` a non-empty ``str`` of at most
    :data:`~bugcontext.core.provenance.MAX_SOURCE_ID` characters (code points) naming the source
    that proposed the candidate. Anything else is :class:`InvalidCandidateError` naming the
    field. ``mapping`` as for :func:`_field`.
    """
    if mapping is None:
        mapping = isinstance(candidate, Mapping)
    sha = _optional(candidate, "source_sha256", mapping)
    if sha is not None:
        if not isinstance(sha, str):
            raise InvalidCandidateError("source_sha256", f"must be a str, not {type(sha).__name__}", index)
        sha = str.__str__(sha)
        if len(sha) != 64:
            problem = f"{_SHA256_PROBLEM}, got {len(sha)} characters"
            raise InvalidCandidateError("source_sha256", problem, index)
        if not _HEX.issuperset(sha):
            raise InvalidCandidateError("source_sha256", f"{_SHA256_PROBLEM}, got {sha!r}", index)
    source = _optional(candidate, "source_id", mapping)
    if source is not None:
        if not isinstance(source, str):
            raise InvalidCandidateError("source_id", f"must be a str, not {type(source).__name__}", index)
        source = str.__str__(source)
        if not source:
            raise InvalidCandidateError("source_id", "must not be empty", index)
        if len(source) > MAX_SOURCE_ID:
            problem = f"must be at most {MAX_SOURCE_ID} characters, got {len(source)}"
            raise InvalidCandidateError("source_id", problem, index)
    return sha, source


def stale(
    rows: Sequence[tuple[str, int, int, str, str | None]], verify: Callable[[str], bytes | None]
) -> list[bool]:
    """Verified provenance: which candidates are stale.

    ``rows`` are ``(canonical path, start, end, content, source_sha256)`` in input order;
    ``verify(path)`` is called once per canonical path, in order of first appearance, and
    returns the file's current bytes or ``None`` (missing). A candidate is stale when its file
    is missing, when it has a ``source_sha256`` that is not the SHA-256 of those bytes, or when
    its content is not exactly the file's lines ``start..end`` (see
    :func:`bugcontext.core.provenance.file_lines`). Every candidate is checked for its content,
    with or without ``source_sha256`` (strict: a candidate cannot pass off text its file does
    not hold); ``source_sha256`` pins the file's version as well.

    Raises:
        TypeError: ``verify`` returned something other than ``bytes`` or ``None``.
        Whatever ``verify`` raises propagates unchanged.
    """
    files: dict[str, tuple[str, tuple[str, ...]] | None] = {}
    out: list[bool] = []
    for path, start, end, content, sha in rows:
        if path not in files:
            data = verify(path)
            if data is None:
                files[path] = None
            elif isinstance(data, bytes):
                files[path] = (hashlib.sha256(data).hexdigest(), file_lines(data))
            else:
                raise TypeError(
                    f"verify: the reader must return bytes or None, not {type(data).__name__} (for {path!r})"
                )
        file = files[path]
        if file is None:
            out.append(True)
            continue
        digest, lines = file
        out.append(
            (sha is not None and sha != digest)
            or end > len(lines)
            or "".join(lines[start - 1 : end]) != content
        )
    return out


def _validate(candidate: object, index: int) -> tuple[_Row, dict[str, Any]]:
    """Read and check one candidate's fields, one at a time, in the order path, start, end,
    content, reason, score: the first missing or invalid field is reported.

    Each field is read once, and what is kept is a snapshot of exact built-in values: the
    canonical path, ``int`` lines, the content and reason as the exact ``str`` they hold
    (``str.__str__``), the score as an exact ``int`` or ``float``. A subclass's own methods
    (``__str__``, ``__eq__``, ``__hash__``, ``encode``, ``__float__``, ...) play no part in the
    build, its result or a later ``render``; an exact-type value is kept as is (no copy).
    """
    # Mapping or attributes, decided once: the caller's code run by a read cannot switch it.
    mapping = isinstance(candidate, Mapping)
    path, start, end = read_window(candidate, index, mapping)
    content = _field(candidate, "content", index, mapping)
    if not isinstance(content, str):
        raise InvalidCandidateError("content", f"must be a str, not {type(content).__name__}", index)
    text = str.__str__(content)
    _, reason, group = read_reason(candidate, index, mapping)
    score, as_float = read_score(candidate, index, mapping)
    pack_with = read_group(candidate, index, mapping)
    sha, source = read_provenance(candidate, index, mapping)

    item = {"path": path, "start": start, "end": end, "content": text, "reason": reason, "score": score}
    if pack_with is not None:
        item["group"] = pack_with
    if sha is not None:
        item["source_sha256"] = sha
    if source is not None:
        item["source_id"] = source
    return _Row(path, start, end, len(text), group, as_float), item


class ContextBuilder(BuilderBase):
    """Rank, de-duplicate and pack candidates (pure Python); same arguments as
    :class:`bugcontext.ContextBuilder`.

    Token counts come from the same exact counter as the native engine's
    (:class:`bugcontext.TokenCounter`): the counting is an input to packing here, not the
    subject of the specification.
    """

    def build_many(
        self, inputs: Iterable[object], *, threads: int | None = None, errors: str = "raise"
    ) -> list[BuildResult | Exception]:
        """:meth:`build` for each input in turn; same contract as
        :meth:`bugcontext.ContextBuilder.build_many` (``threads`` is validated, then
        unused: this loop is the specification of the parallel one)."""
        _, return_errors = batch_options(threads, errors, self.limits)
        out: list[BuildResult | Exception] = []
        for input in list(inputs):
            try:
                out.append(self.build(input))
            except Exception as exc:
                if not return_errors:
                    raise
                out.append(exc)
        return out

    def _read(self, candidates: Sequence[object]) -> tuple[list[_Row], list[dict[str, Any]]]:
        """Validate every candidate in input order, with the running total-content limit."""
        rows: list[_Row] = []
        fields: list[dict[str, Any]] = []
        group_ids: dict[Any, int] = {}
        total = 0
        for index, candidate in enumerate(candidates):
            row, values = _validate(candidate, index)
            if "group" in values:
                row = dataclasses.replace(row, group_id=group_ids.setdefault(values["group"], len(group_ids)))
            total += row.cost
            if total > self.max_total_chars:
                raise limit_error(
                    "content", "max_total_chars", "total content", total, self.max_total_chars, index=index
                )
            rows.append(row)
            fields.append(values)
        return rows, fields

    def cache_key(self, input: object, *, verify: Callable[[str], bytes | None] | None = None) -> str:
        """The input's cache key; same contract as :meth:`bugcontext.ContextBuilder.cache_key`."""
        check_verify(verify)
        candidates, budget, failure_files, cost = normalize_input(input, self.max_candidates, self.cost)
        rows, fields = self._read(candidates)
        reasons = {group: name for name, group in GROUP}
        verified = None if verify is None else verified_files([row.path for row in rows], verify)
        return input_key(
            (
                (
                    row.path,
                    row.start,
                    row.end,
                    item["content"],
                    reasons[row.group],
                    item["score"],
                    item.get("source_sha256"),
                    item.get("source_id"),
                )
                for row, item in zip(rows, fields, strict=True)
            ),
            len(rows),
            budget,
            failure_files,
            cost,
            [row.group_id for row in rows],
            verified,
        )

    def build(
        self,
        input: object,
        *,
        trace: TraceTarget | None = None,
        verify: Callable[[str], bytes | None] | None = None,
    ) -> BuildResult:
        """Build the context; same contract as :meth:`bugcontext.ContextBuilder.build`.

        The four steps of the module's documentation, in order: validate, rank, select, report.
        """
        check_verify(verify)
        if trace is not None:
            return traced_build(self, input, trace, "reference", verify)
        candidates, budget, failure_files, cost = normalize_input(input, self.max_candidates, self.cost)
        rows, fields = self._validated(candidates, verify)
        failing = {path: place for place, path in enumerate(failure_files)}
        counter = self.counter(cost)
        order, costs = _ranked(rows, fields, cost, counter, failing)
        selection = _Selection(rows, costs, budget)
        selection.run(order)
        return _reported(rows, fields, selection, failure_files, failing, cost, budget, counter)

    def _validated(
        self, candidates: Sequence[object], verify: Callable[[str], bytes | None] | None
    ) -> tuple[list[_Row], list[dict[str, Any]]]:
        """1. Validate every candidate, in input order (all-or-nothing); with ``verify``, mark
        each one the reader finds stale (:func:`stale`)."""
        rows, fields = self._read(candidates)
        if verify is not None:
            checked = stale(
                [
                    (row.path, row.start, row.end, item["content"], item.get("source_sha256"))
                    for row, item in zip(rows, fields, strict=True)
                ],
                verify,
            )
            rows = [
                dataclasses.replace(row, stale=True) if bad else row
                for row, bad in zip(rows, checked, strict=True)
            ]
        return rows, fields


def _ranked(
    rows: list[_Row],
    fields: list[dict[str, Any]],
    cost: Cost,
    counter: Any,
    failing: dict[str, int],
) -> tuple[list[int], list[int]]:
    """2. Rank: the candidates (their input indices) in rank order, and each one's cost in the
    cost's unit (characters of the content, or of its rendered block with a template)."""
    costs = [row.cost for row in rows]  # characters of the content
    if cost.template is not None or counter is not None:
        texts = [
            _costed_text(row, item, cost, row.path in failing) for row, item in zip(rows, fields, strict=True)
        ]
        costs = [len(text) for text in texts] if counter is None else counter.count(texts)

    def key(i: int) -> tuple[int, float, int]:
        # The failing files first, in their order; then reference, failure, search.
        row = rows[i]
        group = failing.get(row.path, len(failing) + row.group - 1)
        return (group, -row.score, i)

    return sorted(range(len(rows)), key=key), costs


class _Selection:
    """3. Select, in rank order, never stopping early: ``selected`` (input indices, in the
    order selected) and their ``ranks``, the ``omitted`` candidates, the cost ``used``."""

    def __init__(self, rows: list[_Row], costs: list[int], budget: int) -> None:
        self.rows = rows
        self.costs = costs
        self.budget = budget
        # Per path, the selected windows (start, end, index) ordered by end. They are pairwise
        # disjoint, so this is also their order by start, and the first window ending at or
        # after a candidate's start is the hit with the smallest start, if any window is hit.
        # A sorted list keeps query and insertion logarithmic in any arrival order.
        self.windows: dict[str, SortedKeyList[tuple[int, int, int], int]] = {}
        self.selected: list[int] = []
        self.ranks: list[int] = []
        self.omitted: list[Omission] = []
        self.used = 0

    def run(self, order: list[int]) -> None:
        """Decide every candidate of ``order`` (input indices in rank order)."""
        rows = self.rows
        members: dict[int, list[tuple[int, int]]] = {}  # group id -> (rank, index), rank order
        for rank, i in enumerate(order):
            if rows[i].group_id >= 0:
                members.setdefault(rows[i].group_id, []).append((rank, i))
        for rank, i in enumerate(order):
            row = rows[i]
            if row.stale and row.group_id < 0:
                self.omitted.append(Omission(i, rank, "stale"))
                continue
            if row.group_id < 0:
                self.single(rank, i)
                continue
            group = members.pop(row.group_id, None)
            if group is not None:  # else decided with its best-ranked member
                self.group(group)
        self.omitted.sort(key=_omission_rank)

    def hit(self, i: int) -> int | None:
        """The selected window with the smallest start that candidate ``i`` intersects."""
        row = self.rows[i]
        path_windows = self.windows.setdefault(row.path, SortedKeyList(key=_window_end))
        at = path_windows.bisect_key_left(row.start)
        first = path_windows[at] if at < len(path_windows) else None
        return first[2] if first is not None and first[0] <= row.end else None

    def single(self, rank: int, i: int) -> None:
        """Decide candidate ``i`` (of no group) at ``rank``: overlap, budget, or selected."""
        row = self.rows[i]
        blocker = self.hit(i)
        if blocker is not None:
            self.omitted.append(Omission(i, rank, "overlap", blocker))
        elif self.used + self.costs[i] > self.budget:
            self.omitted.append(Omission(i, rank, "budget"))
        else:
            self.windows[row.path].add((row.start, row.end, i))
            self.selected.append(i)
            self.ranks.append(rank)
            self.used += self.costs[i]

    def group(self, group: list[tuple[int, int]]) -> None:
        """Decide a group whole (its members ``(rank, index)`` in rank order)."""
        rows = self.rows
        placed: list[tuple[int, int]] = []
        blocked: list[Omission] = []
        cost_sum, culprit = 0, None
        for r, m in group:
            if rows[m].stale:
                blocked.append(Omission(m, r, "stale"))
                continue
            blocker = self.hit(m)
            if blocker is not None:
                blocked.append(Omission(m, r, "overlap", blocker))
                continue
            self.windows[rows[m].path].add((rows[m].start, rows[m].end, m))
            placed.append((r, m))
            if culprit is None:
                if self.used + cost_sum + self.costs[m] > self.budget:
                    culprit = m
                else:
                    cost_sum += self.costs[m]
        if culprit is None:
            self.used += cost_sum
            self.selected.extend(m for _, m in placed)
            self.ranks.extend(r for r, _ in placed)
            self.omitted.extend(blocked)
        else:
            for _, m in placed:
                self.windows[rows[m].path].remove((rows[m].start, rows[m].end, m))
            self.omitted.extend(
                Omission(m, r, "stale") if rows[m].stale else Omission(m, r, "group", member=culprit)
                for r, m in group
            )


def _reported(
    rows: list[_Row],
    fields: list[dict[str, Any]],
    selection: _Selection,
    failure_files: list[str],
    failing: dict[str, int],
    cost: Cost,
    budget: int,
    counter: Any,
) -> BuildResult:
    """4. Report: the result, its ``missing_critical`` failing files (:func:`finish`)."""
    # Per failing file, its failure windows (reason "failure"), in input order.
    evidence: list[list[int]] = [[] for _ in failure_files]
    for i, row in enumerate(rows):
        if row.path in failing and row.group == _FAILURE_GROUP:
            evidence[failing[row.path]].append(i)
    selected = selection.selected
    items = [Candidate(**fields[i]) for i in selected]
    used_chars = sum(rows[i].cost for i in selected)
    result = BuildResult(
        items,
        selected,
        used_chars,
        bool(selection.omitted),
        selection.omitted,
        failure_files,
        cost,
        budget,
        selection.used,
        (),
    )
    return finish(result, selection.ranks, None if counter is None else counter.count_one, evidence)


def _window_end(window: tuple[int, int, int]) -> int:
    return window[1]


def _omission_rank(omission: Omission) -> int:
    return omission.rank


def _costed_text(row: _Row, item: dict[str, Any], cost: Cost, failing: bool) -> str:
    """What a candidate costs: its content, or its rendered block when the cost has a template."""
    if cost.template is None:
        return str(item["content"])
    reason = next(name for name, group in GROUP if group == row.group)
    return render_block(
        row.path,
        row.start,
        row.end,
        item["content"],
        reason,
        failing=failing,
        template=cost.template,
        line_numbers=cost.line_numbers,
        source_id=item.get("source_id"),
    )


_DEFAULT = ContextBuilder()


def build(
    input: object, *, trace: TraceTarget | None = None, verify: Callable[[str], bytes | None] | None = None
) -> BuildResult:
    """Build the context with the default settings (pure Python): the input, result, errors,
    ``trace`` and ``verify`` are those of :meth:`bugcontext.ContextBuilder.build`."""
    return _DEFAULT.build(input, trace=trace, verify=verify)


def build_many(
    inputs: Iterable[object], *, threads: int | None = None, errors: str = "raise"
) -> list[BuildResult | Exception]:
    """Build many inputs with the default settings (pure Python): the options, results and
    errors are those of :meth:`bugcontext.ContextBuilder.build_many`."""
    return _DEFAULT.build_many(inputs, threads=threads, errors=errors)


def cache_key(input: object, *, verify: Callable[[str], bytes | None] | None = None) -> str:
    """The input's cache key with the default settings (pure Python); equal to
    :func:`bugcontext.cache_key`."""
    return _DEFAULT.cache_key(input, verify=verify)
