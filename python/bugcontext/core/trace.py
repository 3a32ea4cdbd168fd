"""Build traces: one JSON line per build, and their replay.

``ContextBuilder.build(input, trace=FILE)`` (either engine) and ``bugcontext build|context
--trace FILE`` append one line to FILE describing the build, so that an agent loop can replay a
session and see what changed between two turns:

``{"trace": 1, "policy": POLICY_VERSION, "engine": "native" | "reference", "cache_key": hex,
"digest": hex, "input": {"candidates": [...], "budget": N, "failure_files": [...], "cost":
{...}}, "used": N, "decisions": [{"index": i, "rank": r, "reason": "selected" | "overlap" |
"budget" | "group" | "stale", "overlaps": j, "member": j, "cost": c}, ...]}``

``input`` is the build's own input, validated and snapshotted (canonical paths and the budget in
the cost's unit), enough to rebuild it; a candidate's ``group`` is written as its group's dense
id (groups numbered from 0 in order of first appearance, equal ids by ``==`` and ``hash`` as in
a ``dict``): the partition into groups is what decides the result, and any hashable id (a
tuple, ``NaN``, an object whose ``repr`` holds its address) is written faithfully that way.
``source_sha256`` and ``source_id`` are written when present. A build with a ``verify`` reader
writes ``"verified": true`` in ``input``, and its ``cache_key`` is the key with the reader's
state (``cache_key(input, verify=reader)``: the SHA-256 of each file as the build read it); the
replay cannot read the files as they were, so it rebuilds without the candidates the build found
stale (they took no budget and blocked nothing, so the selection and its digest are the same)
and reports a selected item that turned stale as dropped, ``stale``. ``decisions`` has one entry
per candidate in rank order: ``cost`` is what it costs in the budget's unit (its content, or its
rendered block with a template). :func:`replay` rebuilds each line and compares.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bugcontext._core import BuildInput, BuildResult, Candidate
from bugcontext.core._arguments import unique_keys
from bugcontext.core._cut import shorten
from bugcontext.core._input import canonical_path, normalize_input
from bugcontext.core._io import read_capped
from bugcontext.core._writer import append_file, check_trace_path
from bugcontext.core.composer import render_block
from bugcontext.core.cost import Cost
from bugcontext.core.digest import POLICY_VERSION
from bugcontext.core.errors import InvalidInputError, ScreenedError
from bugcontext.core.limits import Limits
from bugcontext.core.provenance import FolderReader

__all__ = [
    "TRACE_VERSION",
    "Change",
    "TraceFormatError",
    "TraceTarget",
    "Turn",
    "diff",
    "read_trace",
    "replay",
    "traced_build",
]

#: Where a trace line goes: a path (opened for appending) or a text stream.
TraceTarget = str | os.PathLike[str] | IO[str]


class TraceFormatError(ScreenedError, ValueError):
    """A trace line that is not a trace record, or whose input the build refuses (``trace line
    3: field 'input.candidates': expected an array, got a string``). A ``ValueError``; its
    message is screened for secrets (a trace holds the build's input as it was)."""


#: Version of the trace line's form.
TRACE_VERSION = 1
_GROUP_RANK = {"reference": 1, "failure": 2, "search": 3}


def check_trace(trace: object) -> None:
    """Raise ``InvalidInputError`` (field ``trace``) unless ``trace`` is a path or a text stream
    (an object with a ``write`` method that is not a binary stream)."""
    if isinstance(trace, (str, os.PathLike)):
        return
    if isinstance(trace, (io.RawIOBase, io.BufferedIOBase)) or not callable(getattr(trace, "write", None)):
        raise InvalidInputError("trace", f"must be a path or a text stream, not {type(trace).__name__}")


def traced_build(
    builder: Any, input: object, trace: TraceTarget, engine: str, verify: Any = None
) -> BuildResult:
    """Build ``input`` with ``builder`` and append the trace line to ``trace`` (a path, appended
    to by :func:`bugcontext.core._writer.append_file`, or a text stream). Errors are those of
    ``builder.build``, :class:`~bugcontext.core._io.OutputError` (``cannot write PATH:
    reason``) when the trace cannot be written (a folder, a read-only file or a missing folder
    is refused before the build), and ``InvalidInputError`` (field ``trace``), before the build,
    for a path with a NUL character or, with ``verify=folder_reader(root)``, an existing file
    under ``root`` (a link or a hard link to one too: the build would read what it appends
    to) or any path inside ``root``'s git folder
    (:func:`bugcontext.core._writer.repository_output_problem`);
    nothing is written for an invalid input."""
    check_trace(trace)
    if isinstance(verify, FolderReader):
        root = verify.root
        check_trace_path(trace, root, "verify folder")
    else:
        check_trace_path(trace, None)
    candidates, budget, failure_files, cost = normalize_input(input, builder.max_candidates, builder.cost)
    snapshot = BuildInput(candidates, failure_files=failure_files, budget=budget, cost=cost)
    # The key of a verified build holds the reader's state: the files as the build read them
    # (each read once, kept for the key).
    seen = None if verify is None else _Recorded(verify)
    result: BuildResult = builder.build(snapshot, verify=seen)
    record = _record(builder, snapshot, result, engine, seen)
    if verify is not None:
        record["input"]["verified"] = True
    line = json.dumps(record, ensure_ascii=True, allow_nan=False) + "\n"
    if isinstance(trace, (str, os.PathLike)):
        append_file(trace, line)
    else:
        trace.write(line)
    return result


def _fields(candidate: Any) -> dict[str, Any]:
    if isinstance(candidate, Candidate):
        fields = candidate.to_dict()
        if candidate.group is not None:  # the object itself: the JSON form writes some as repr
            fields["group"] = candidate.group
        return fields
    if isinstance(candidate, Mapping):
        return dict(candidate)
    names = ("path", "start", "end", "content", "reason", "score")
    out = {name: getattr(candidate, name) for name in names}
    for name in ("group", "source_sha256", "source_id"):
        value = getattr(candidate, name, None)
        if value is not None:
            out[name] = value
    return out


def _plain(fields: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of one validated candidate: canonical path, plain values."""
    out: dict[str, Any] = {
        "path": canonical_path(fields["path"]),
        "start": int(fields["start"]),
        "end": int(fields["end"]),
        "content": str.__str__(fields["content"]),
        "reason": str.__str__(fields["reason"]),
        "score": fields["score"] if type(fields["score"]) in (int, float) else float(fields["score"]),
    }
    for name in ("source_sha256", "source_id"):
        if fields.get(name) is not None:
            out[name] = str.__str__(fields[name])
    return out


class _Recorded:
    """A ``verify`` reader that remembers what it returned for each path, so the trace's cache
    key covers exactly the files the build saw."""

    def __init__(self, verify: Any) -> None:
        self._verify = verify
        self._seen: dict[str, Any] = {}

    def __call__(self, path: str) -> Any:
        if path not in self._seen:
            self._seen[path] = self._verify(path)
        return self._seen[path]


def _record(
    builder: Any, snapshot: BuildInput, result: BuildResult, engine: str, verify: _Recorded | None = None
) -> dict[str, Any]:
    cost: Cost = snapshot.cost  # type: ignore[assignment]
    fields = [_fields(c) for c in snapshot.candidates]
    cands = [_plain(f) for f in fields]
    groups: dict[Any, int] = {}  # group -> dense id, as the engines number them
    for f, out in zip(fields, cands, strict=True):
        if f.get("group") is not None:
            out["group"] = groups.setdefault(f["group"], len(groups))
    failing = list(snapshot.failure_files or ())
    costs = _costs(builder, cands, failing, cost)
    selected_ranks = _ranks_of_selected(cands, failing, result)
    decisions: list[dict[str, Any]] = [
        {"index": i, "rank": selected_ranks[i], "reason": "selected", "cost": costs[i]}
        for i in result.selected
    ]
    for o in result.omitted:
        d = {"index": o.index, "rank": o.rank, "reason": o.reason, "cost": costs[o.index]}
        if o.overlaps is not None:
            d["overlaps"] = o.overlaps
        if o.member is not None:
            d["member"] = o.member
        decisions.append(d)
    decisions.sort(key=lambda d: d["rank"])
    return {
        "trace": TRACE_VERSION,
        "policy": POLICY_VERSION,
        "engine": engine,
        "cache_key": builder.cache_key(snapshot, verify=verify),
        "digest": result.digest,
        "input": {
            "candidates": cands,
            "budget": snapshot.budget,
            "failure_files": failing,
            "cost": cost.to_dict(),
        },
        "used": result.used,
        "decisions": decisions,
    }


def _costs(builder: Any, cands: list[dict[str, Any]], failing: list[str], cost: Cost) -> list[int]:
    """What each candidate costs in the budget's unit (as the engines cost it)."""
    if cost.template is None:
        texts = [c["content"] for c in cands]
    else:
        texts = [
            render_block(
                c["path"],
                c["start"],
                c["end"],
                c["content"],
                c["reason"],
                failing=c["path"] in failing,
                template=cost.template,
                line_numbers=cost.line_numbers,
            )
            for c in cands
        ]
    counter = builder.counter(cost)
    return [len(t) for t in texts] if counter is None else list(counter.count(texts))


def _ranks_of_selected(
    cands: list[dict[str, Any]], failing: list[str], result: BuildResult
) -> dict[int, int]:
    """The rank (position in the ranked order) of each selected candidate."""
    place = {path: i for i, path in enumerate(failing)}

    def key(i: int) -> tuple[int, float, int]:
        c = cands[i]
        group = place.get(c["path"], len(place) + _GROUP_RANK[c["reason"]] - 1)
        return (group, -float(c["score"]), i)

    order = sorted(range(len(cands)), key=key)
    rank = {i: r for r, i in enumerate(order)}
    return {i: rank[i] for i in result.selected}


# ---------------------------------------------------------------------------
# Replay
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One difference between two turns, for an item keyed by ``(path, start, end)``.

    ``kind`` is ``"added"``, ``"dropped"`` or ``"moved"``; ``before`` and ``after`` are its
    selection positions (``None`` when not selected); ``why`` says why it was left out in the
    later turn (``"budget"``, ``"overlap of src/a.py:3-9"``, ``"group (member src/b.py:1-4)"``,
    ``"no longer proposed"``) or, when added, why it was selected (its reason and rank).
    """

    kind: str
    path: str
    start: int
    end: int
    before: int | None
    after: int | None
    why: str


@dataclass(frozen=True)
class Turn:
    """One replayed trace line: the recorded and the rebuilt digest, and the changes from the
    previous turn (empty for the first)."""

    number: int
    recorded: str
    rebuilt: str
    changes: tuple[Change, ...]

    @property
    def reproduced(self) -> bool:
        """True when the rebuild gave the recorded digest."""
        return self.recorded == self.rebuilt


def read_trace(path: str | os.PathLike[str], *, limits: Limits | None = None) -> list[dict[str, Any]]:
    """The trace lines of ``path`` (one JSON object a line, lines ending in ``\\n``; blank
    lines skipped), a file of at most ``limits.max_input_bytes`` (``limits`` default:
    ``DEFAULT_LIMITS``).

    Raises :class:`TraceFormatError` (a ``ValueError``, its message screened for secrets)
    naming the line number and the field for a line that is not a trace record: not UTF-8,
    not JSON (``NaN``, a key given twice and nesting too deep included), not an object, a
    missing field, a field of the wrong type, an unknown kind (``engine``, a
    candidate's or a decision's ``reason``), another version (``trace line 3: field
    'input.candidates': expected an array, got a string``); ``ResourceLimitError`` (a
    ``ValueError``) for a larger file."""
    return [record for _, record in _read_lines(path, limits)]


def _read_lines(path: str | os.PathLike[str], limits: Limits | None) -> list[tuple[int, dict[str, Any]]]:
    """The trace records of ``path`` with their line numbers (see :func:`read_trace`)."""
    records = []
    data = read_capped(Path(path), "max_input_bytes", field="trace", limits=limits)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TraceFormatError(
                f"trace line {number}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
            ) from None
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=unique_keys, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise TraceFormatError(
                f"trace line {number}: not JSON ({exc.msg} at column {exc.colno})"
            ) from None
        except RecursionError:
            raise TraceFormatError(f"trace line {number}: not JSON (nested too deeply)") from None
        except ValueError as exc:  # a repeated key, NaN or Infinity
            raise TraceFormatError(f"trace line {number}: not JSON ({exc})") from None
        _check_record(record, number)
        records.append((number, record))
    return records


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _kind(value: object) -> str:
    """The JSON type of ``value``, as messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


_EXPECTED = {"object": dict, "array": list, "string": str, "boolean": bool}
_ARTICLE = {"object": "an object", "array": "an array", "string": "a string", "boolean": "a boolean"}
_ENGINES = ("native", "reference")
_CANDIDATE_REASONS = ("failure", "reference", "search")
_DECISION_REASONS = ("selected", "overlap", "budget", "group", "stale")


class _Line:
    """The checks of one trace line: each raises ``ValueError("trace line N: field 'F': ...")``."""

    def __init__(self, number: int) -> None:
        self.number = number

    def fail(self, name: str, problem: str) -> TraceFormatError:
        return TraceFormatError(f"trace line {self.number}: field '{name}': {problem}")

    def get(self, obj: dict[str, Any], key: str, name: str, *, optional: bool = False) -> Any:
        if key not in obj:
            if optional:
                return None
            raise self.fail(name, "missing")
        return obj[key]

    def typed(self, obj: dict[str, Any], key: str, name: str, kind: str, *, optional: bool = False) -> Any:
        """``obj[key]`` checked to be of JSON ``kind`` (``object``, ``array``, ``string``,
        ``boolean``, ``integer``, ``number``); an optional field may be absent or null."""
        value = self.get(obj, key, name, optional=optional)
        if value is None and optional:
            return None
        if kind == "integer":
            ok = isinstance(value, int) and not isinstance(value, bool)
            what = "an integer"
        elif kind == "number":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            what = "a number"
        else:
            ok = isinstance(value, _EXPECTED[kind])
            what = _ARTICLE[kind]
        if not ok:
            raise self.fail(name, f"expected {what}, got {_kind(value)}")
        return value

    def one_of(self, obj: dict[str, Any], key: str, name: str, choices: tuple[str, ...]) -> str:
        value: str = self.typed(obj, key, name, "string")
        if value not in choices:
            shown = ", ".join(repr(c) for c in choices)
            kind = shorten(json.dumps(value), 80, "")
            raise self.fail(name, f"unknown kind {kind} (expected one of {shown})")
        return value

    def objects(self, obj: dict[str, Any], key: str, name: str) -> list[dict[str, Any]]:
        items: list[Any] = self.typed(obj, key, name, "array")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise self.fail(f"{name}[{i}]", f"expected an object, got {_kind(item)}")
        return items


def _check_record(record: object, number: int) -> None:
    """Raise ``ValueError`` naming the line and the field when ``record`` (one parsed line) is
    not a trace record of this version."""
    line = _Line(number)
    if not isinstance(record, dict):
        raise TraceFormatError(
            f"trace line {number}: expected an object (a trace record), got {_kind(record)}"
        )
    version = line.typed(record, "trace", "trace", "integer")
    if version != TRACE_VERSION:
        raise line.fail("trace", f"version {version} is not read here (this version reads {TRACE_VERSION})")
    line.typed(record, "policy", "policy", "string")
    line.one_of(record, "engine", "engine", _ENGINES)
    line.typed(record, "cache_key", "cache_key", "string")
    line.typed(record, "digest", "digest", "string")
    data = line.typed(record, "input", "input", "object")
    cands = line.objects(data, "candidates", "input.candidates")
    for i, c in enumerate(cands):
        at = f"input.candidates[{i}]"
        for key in ("path", "content"):
            line.typed(c, key, f"{at}.{key}", "string")
        for key in ("start", "end"):
            line.typed(c, key, f"{at}.{key}", "integer")
        line.one_of(c, "reason", f"{at}.reason", _CANDIDATE_REASONS)
        line.typed(c, "score", f"{at}.score", "number")
        line.typed(c, "group", f"{at}.group", "integer", optional=True)
        for key in ("source_sha256", "source_id"):
            line.typed(c, key, f"{at}.{key}", "string", optional=True)
    line.typed(data, "budget", "input.budget", "integer")
    failing = line.typed(data, "failure_files", "input.failure_files", "array")
    for i, path in enumerate(failing):
        if not isinstance(path, str):
            raise line.fail(f"input.failure_files[{i}]", f"expected a string, got {_kind(path)}")
    line.typed(data, "cost", "input.cost", "object")
    line.typed(data, "verified", "input.verified", "boolean", optional=True)
    line.typed(record, "used", "used", "integer")
    for i, d in enumerate(line.objects(record, "decisions", "decisions")):
        at = f"decisions[{i}]"
        index = line.typed(d, "index", f"{at}.index", "integer")
        if not 0 <= index < len(cands):
            raise line.fail(f"{at}.index", f"{index} is not a candidate's index ({len(cands)} candidates)")
        line.typed(d, "rank", f"{at}.rank", "integer")
        line.one_of(d, "reason", f"{at}.reason", _DECISION_REASONS)
        line.typed(d, "cost", f"{at}.cost", "integer")
        for key in ("overlaps", "member"):
            line.typed(d, key, f"{at}.{key}", "integer", optional=True)


def _rebuild(
    record: dict[str, Any], build: Any
) -> tuple[BuildResult, list[Candidate], set[tuple[str, int, int]]]:
    """Rebuild a record: the result, the candidates it was built from (the recorded ones,
    without those a verified build found stale) and the windows of the stale ones."""
    data = record["input"]
    stale = (
        {d.get("index") for d in record.get("decisions", []) if d.get("reason") == "stale"}
        if data.get("verified") is True
        else set()
    )
    every = [
        Candidate(
            c["path"],
            c["start"],
            c["end"],
            c["content"],
            c["reason"],
            c["score"],
            group=c.get("group"),
            source_sha256=c.get("source_sha256"),
            source_id=c.get("source_id"),
        )
        for c in data["candidates"]
    ]
    cands = [c for i, c in enumerate(every) if i not in stale]
    gone = {(c.path, c.start, c.end) for i, c in enumerate(every) if i in stale}
    result: BuildResult = build(
        {
            "candidates": cands,
            "budget": data["budget"],
            "failure_files": data["failure_files"],
            "cost": data["cost"],
        }
    )
    return result, cands, gone


def _where(c: Any) -> str:
    return f"{c.path}:{c.start}-{c.end}"


def diff(
    before: BuildResult,
    after: BuildResult,
    after_candidates: Sequence[Any],
    stale: Collection[tuple[str, int, int]] = (),
) -> tuple[Change, ...]:
    """What changed from ``before`` to ``after`` (whose input candidates are given; ``stale``:
    windows ``(path, start, end)`` a verified ``after`` build found stale)."""
    old = {(c.path, c.start, c.end): n for n, c in enumerate(before.items)}
    new = {(c.path, c.start, c.end): n for n, c in enumerate(after.items)}
    where = {(c.path, c.start, c.end): i for i, c in enumerate(after_candidates)}
    why = {o.index: o for o in after.omitted}
    changes: list[Change] = []
    for n, item in enumerate(after.items):
        key = (item.path, item.start, item.end)
        if key not in old:
            changes.append(Change("added", *key, None, n, f"{item.reason}, selected #{n}"))
        elif old[key] != n:
            changes.append(Change("moved", *key, old[key], n, f"{item.reason}, selected #{n}"))
    for key, n in old.items():
        if key in new:
            continue
        index = where.get(key)
        if key in stale:
            reason = "stale"
        elif index is None:
            reason = "no longer proposed"
        else:
            o = why[index]
            if o.overlaps is not None:
                reason = f"overlap of {_where(after_candidates[o.overlaps])}"
            elif o.member is not None:
                reason = f"group (member {_where(after_candidates[o.member])})"
            else:
                reason = o.reason
        changes.append(Change("dropped", *key, n, None, reason))
    return tuple(changes)


def _refused(exc: Exception) -> str:
    """``field 'input.candidates[i].F': problem`` for an input the build refused."""
    if isinstance(exc, InvalidInputError) and exc.field:
        where = f"input.{exc.field}" if exc.index is None else f"input.candidates[{exc.index}].{exc.field}"
        return f"field '{where}': {' '.join(str(exc.problem).split())}"
    return f"field 'input': {' '.join(str(exc).split())}"


def replay(path: str | os.PathLike[str], build: Any, *, limits: Limits | None = None) -> Iterator[Turn]:
    """Rebuild every line of the trace at ``path`` (read as :func:`read_trace` reads it, with
    ``limits``) with ``build`` (either engine's) and yield each :class:`Turn` with its changes
    from the previous one. Raises :class:`TraceFormatError` (a ``ValueError``) as
    :func:`read_trace` does, and for an input the build refuses (``trace line 2: field
    'input.candidates[0].start': must be >= 1, got 0``)."""
    previous: BuildResult | None = None
    for number, (line, record) in enumerate(_read_lines(path, limits), 1):
        try:
            result, cands, stale = _rebuild(record, build)
        except (InvalidInputError, TypeError, OverflowError) as exc:  # a field the build refuses
            raise TraceFormatError(f"trace line {line}: {_refused(exc)}") from None
        changes = () if previous is None else diff(previous, result, cands, stale)
        yield Turn(number, record["digest"], result.digest, changes)
        previous = result
