"""The context job with reuse: what is derived from a repository, kept current between calls.

A :class:`Workspace` holds, for one repository folder, what the candidate sources derive from
its files: the file list, each file's read text and parse, its identifier words (the symbol
index's first filter), its search chunks and their tokens, and the BM25 index over them. On
every call it examines each file (size, modification time, change time, inode) and reads
again only the files that changed, or whose stat cannot prove it (see :class:`Workspace`); a
file whose content hash is unchanged keeps everything derived from it, so one edited file is
re-derived alone, and the BM25 index (:class:`~bugcontext.job.sources.search.IncrementalBM25`,
whose scores are those of ``bm25s``) is updated for its chunks only. With a cache folder the
derived data also goes to disk (:mod:`bugcontext.job._cache`), keyed by content hash and the
version of the extraction rules, so a new process starts warm: each file's lines, words,
chunks and tokens, the definitions, imports and import neighbours of each file parsed
(:class:`~bugcontext.job.sources.symbols.FileSummary`: a file that is only looked up is not
parsed again), the calls of each name looked for in a file
(:class:`~bugcontext.job.sources.symbols.CallSite`: the callers of a failing function are not
parsed again) and the search index. The cyclic garbage collector is paused during a call
(the derived data is millions of small objects in no reference cycle), and each file's
syntax tree is dropped once derived.

:meth:`Workspace.context` runs the whole job for a test log: parse the failures, gather the
failure, reference and search windows (:func:`bugcontext.job.sources.gather`), build the
context and report what was left out and why (:class:`ContextResult`).
:func:`context` is the one-call form.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import threading
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bugcontext.core import reference
from bugcontext.core._extras import needs
from bugcontext.core._input import budget_int
from bugcontext.core._io import path_argument, resolved_folder
from bugcontext.core._writer import OutputConflictError, check_trace_path, refuse_same_files
from bugcontext.core.builder import ContextBuilder
from bugcontext.core.builder import build as native_build
from bugcontext.core.composer import header_path, missing_lines, render, render_omitted
from bugcontext.core.cost import Cost
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.evidence import MissingEvidence
from bugcontext.core.limits import Limits, check_context_inputs, resolve
from bugcontext.core.secrets import redact, redact_json, redaction_note
from bugcontext.core.trace import TraceTarget, check_trace
from bugcontext.core.types import BuildResult, Candidate
from bugcontext.job._cache import Stat, Store
from bugcontext.job._cache_admin import TrackedStore
from bugcontext.job._deadline import DeadlinePassed, bounded, checked
from bugcontext.job._deadline import check as _check_current
from bugcontext.job._failure_block import (
    FailureBlock,
    build_with_failures,
    cut_message,
    failure_blocks,
    used_failures,
)
from bugcontext.job.options import CallOptions, ContextOptions, OneCallOptions, keyword_options
from bugcontext.job.sources.coverage import CoverageInput
from bugcontext.job.sources.files import (
    SECRET_REDACTED_IN_FILE,
    PolicyOmission,
    Repository,
    SourceFile,
    _parse,
)
from bugcontext.job.sources.gather import Gathered, gather
from bugcontext.job.sources.reports import TestFailure
from bugcontext.job.sources.rerun import RERUN_MODES, RerunReport
from bugcontext.job.sources.reruns import rerun_for_log
from bugcontext.job.sources.runs import parse_test_output
from bugcontext.job.sources.search import (
    Chunk,
    IncrementalBM25,
    SearchIndex,
    _chunk_tokens,
    _chunks,
    _searchable_paths,
    tokenize,
)
from bugcontext.job.sources.symbols import (
    CallSite,
    FileSummary,
    ParsedFile,
    Reference,
    SymbolIndex,
    source_paths,
)

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_TOKENS",
    "ContextResult",
    "Workspace",
    "context",
    "default_cache_dir",
]

#: Default budget in characters (code points).
DEFAULT_MAX_CHARS = 16_000
#: Default budget in tokens of the cost's encoding.
DEFAULT_MAX_TOKENS = 4_000
#: The version of the JSON form of a context result (``ContextResult.to_dict``, ``context
#: --format json``): raised when a key changes meaning or goes, not when one is added.
CONTEXT_SCHEMA = 1
#: Files to derive before the cold build shows a progress bar (on a terminal).
PROGRESS_FILES = 200
#: Up to this many files derived in one call stay in memory, parses included.
KEEP_DERIVED_FILES = 50
#: A cold start stores what it derived every this many files.
SAVE_EVERY_FILES = 128
#: The search index updated for more changed files than this is stored again in the cache.
STORE_AFTER_FILES = 32

_ENGINES: dict[str, Callable[[object], BuildResult]] = {
    "native": native_build,
    "reference": reference.build,
}

_Stat = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode
#: A stat whose modification or change time is within this many nanoseconds (2 s: FAT's
#: granularity, above every other file system's, and the kernel's coarse clock) of the time
#: the file was read is ambiguous: a later write in that span may leave it unchanged.
AMBIGUOUS_NS = 2_000_000_000
_Key = tuple[str, str]  # path, content digest
_Words = tuple[frozenset[str], frozenset[str]]
_Doc = tuple[int, tuple[tuple[int, int, str], ...], tuple[tuple[str, ...], ...]]  # lines, chunks, tokens
# A search index's parts: chunks, BM25, lines, files, each file's (digest, lines, first, chunks)
_Built = tuple[list[Chunk], "IncrementalBM25 | None", int, int, dict[str, tuple[str, int, int, int]]]


def _folder(name: str, value: object) -> Path:
    """The folder path ``value`` (a ``str`` or an ``os.PathLike`` giving one), or an
    :class:`InvalidInputError` naming the argument ``name`` (another type, a NUL character:
    :func:`bugcontext.core._io.path_argument`)."""
    return Path(path_argument(name, value, "a folder"))


def default_cache_dir() -> Path:
    """The default cache folder: ``bugcontext`` under the user cache directory
    (``platformdirs.user_cache_dir``: ``~/.cache/bugcontext`` on Linux, honouring
    ``XDG_CACHE_HOME``)."""
    with needs("context"):
        import platformdirs

    return Path(platformdirs.user_cache_dir("bugcontext", appauthor=False))


# --------------------------------------------------------------------------------------
# The result


@dataclass(frozen=True)
class ContextResult:
    """The outcome of one context job.

    ``result`` is the build result (its ``budget``, ``used`` and ``cost`` say in which unit);
    ``gathered`` what the sources gathered for the chosen failure (the candidates, the failure
    file, the reader's policy omissions); ``failures`` every failure parsed from the test
    output, in order (``failure`` is the one the context is for); ``timings`` the wall time of
    each stage in seconds (``refresh``: listing the files and reading the changed ones;
    ``derive``: deriving words, chunks and the search index; ``gather``: the three sources;
    ``build``: ranking and packing; ``total``); ``reread`` the repository-relative paths the
    call read again because they were new or changed; ``redactions`` the secrets the reader
    replaced by ``[REDACTED: kind]`` in the selected windows (:func:`reader_redactions`:
    ``{"where", "path", "lines", "kind", "reason", "why"}`` each, in selection order);
    ``rerun`` the traced re-run's report (:class:`bugcontext.job.sources.rerun.RerunReport`;
    ``None`` without ``rerun``).

    A failing file whose failure windows the reader withheld all (a file that is a secret by
    name, say) is in ``result.missing_critical`` too, with those windows under ``withheld``.
    """

    result: BuildResult
    gathered: Gathered
    failures: tuple[TestFailure, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    reread: tuple[str, ...] = ()
    redactions: tuple[dict[str, Any], ...] = ()
    rerun: RerunReport | None = None
    #: The failure blocks that open the section (:mod:`bugcontext.job._failure_block`), in order.
    failure_blocks: tuple[FailureBlock, ...] = ()
    #: The failure blocks left out, in order: the first that did not fit the budget and the
    #: ones after it (the blocks keep their order; at most ``limits.max_failure_blocks`` in all).
    failure_blocks_left_out: tuple[FailureBlock, ...] = ()
    #: The budget of the whole section (``None``: ``result.budget``, no failure blocks).
    full_budget: int | None = None
    #: The cost of the whole section, failure blocks included (``None``: ``result.used``).
    full_used: int | None = None

    @property
    def failure(self) -> TestFailure | None:
        """The failure the context is for (``None`` if the log has none)."""
        return self.gathered.failure

    @property
    def failure_file(self) -> str | None:
        """The repository-relative failure file, or ``None`` if no frame is in the repo."""
        return self.gathered.failure_file

    @property
    def policy_omissions(self) -> tuple[PolicyOmission, ...]:
        """The windows the reader withheld before any ranking (secrets, stale windows)."""
        return self.gathered.policy_omissions

    @property
    def budget(self) -> int:
        """The budget of the whole section, in the cost's unit (``result.cost``); the code
        windows were built in what the failure blocks left of it (``result.budget``)."""
        return self.result.budget if self.full_budget is None else self.full_budget

    @property
    def max_chars(self) -> int:
        """The budget (the name of the earlier ``ContextReport``; in the cost's unit)."""
        return self.budget

    @property
    def used(self) -> int:
        """The cost of the whole section (failure blocks and windows), in the budget's unit."""
        return self.result.used if self.full_used is None else self.full_used

    @property
    def section(self) -> str:
        """The prompt section: the failure blocks (:attr:`failure_blocks`: the test id, the
        exception and its message of each failing test used, redacted), then
        ``bugcontext.render(result)``, the selected blocks in the cost's template (Markdown
        without one). With a template, it is exactly what was costed: its cost in the
        budget's unit is :attr:`used` ``<=`` :attr:`budget`."""
        return "".join(block.text for block in self.failure_blocks) + render(self.result)

    def summary(self) -> str:
        """The failure and omission report in Markdown (``## Failure`` with the result's
        digest and one line per failing file whose failure evidence is missing
        (:func:`missing_lines`), ``## Omitted`` and the reader's policy omissions); costs are
        in the budget's unit. Names are escaped
        (:func:`~bugcontext.core.composer.header_path`) and every secret in it (the failure
        message, a test name, a path) is replaced by ``[REDACTED: kind]``
        (:func:`bugcontext.core.secrets.redact`), with a last line saying how many were."""
        failure = self.gathered.failure
        about = ["## Failure", ""]
        if failure is None:
            about.append("No failing test found in the log.")
        else:
            exc = failure.exception_type or "failure"
            message = f"{exc}: {failure.message}" if failure.message else exc
            about.append(f"- test: {_shown_name(failure.name)}")
            about.append(f"- error: {_shown_name(message)}")
            if failure.phase == "collect":
                about.append("- phase: collection (the test's module could not be collected: it never ran)")
        where = header_path(self.failure_file) if self.failure_file else "(none in the repository)"
        about.append(f"- failure file: {where}")
        cost = self.result.cost
        unit = "characters" if cost.unit == "chars" else f"{cost.encoding} tokens"
        counted = "the content" if cost.template is None else f"the {cost.template} section"
        about.append(f"- budget: {self.used} of {self.budget} {unit} used ({counted})")
        if self.failure_blocks:
            spent = sum(block.cost for block in self.failure_blocks)
            about.append(f"- failure blocks: {len(self.failure_blocks)} ({spent} {unit} of the budget)")
        for block in self.failure_blocks_left_out:
            about.append(
                f"- failure block left out: {_shown_name(block.test)} ({block.cost} {unit}, "
                f"over the budget of {self.budget}): the section does not say that this test failed"
            )
        about.append(f"- digest: {self.result.digest}")
        about.extend(f"- missing failure evidence: {line}" for line in missing_lines(self.result))
        if self.rerun is not None:
            about.extend(f"- {header_path(line)}" for line in self.rerun.lines())
        parts = [
            "\n".join(about),
            render_omitted(self.result, self.gathered.candidates).rstrip("\n"),
            *_policy_summary(self.gathered),
            *_redaction_summary(self.redactions),
        ]
        redacted = redact("\n\n".join(parts) + "\n")
        if not redacted.kinds:
            return redacted.text
        return redacted.text + "\n" + redaction_note(redacted.kinds) + "\n"

    def markdown(self) -> str:
        """The section, then one empty line and :meth:`summary` (one document for a file)."""
        section = self.section
        if self.result.cost.template is None:
            section = "## Code context\n\n" + (
                section.rstrip("\n") + "\n" if section else "(no code selected)\n"
            )
        gap = "" if section == "" or section.endswith("\n\n") else "\n"
        return section + gap + self.summary()

    def to_dict(self) -> dict[str, Any]:
        """The build result's JSON form (``BuildResult.to_dict``) with ``"policy_omitted"``
        (the reader's withheld windows, ``PolicyOmission.to_dict``), ``"failure"`` (``None``
        without a failure, else ``{"test", "test_id", "error", "message", "failure_file"}``:
        the report name, the node id if the log gives one, the exception type, its message,
        the repository-relative failure file; each may be ``None``), ``"failing_tests"``
        (every failing test of the log, :func:`failing_tests_json`), after a re-run ``"rerun"``
        (:meth:`bugcontext.job.sources.rerun.RerunReport.to_dict`), and ``"policy_redacted"``
        (the secrets replaced by ``[REDACTED: kind]`` in every other string,
        :func:`bugcontext.core.secrets.redact_json`; an empty list when none). ``"budget"`` and
        ``"used"`` are the whole section's (failure blocks included), ``"build_budget"`` and
        ``"build_used"`` the code windows' alone (the build's own ``budget`` and ``used``), and
        ``"failure_blocks"`` the blocks that open the section (``FailureBlock.to_dict``: ``{"test",
        "test_cut", "exception", "message", "phase", "cut", "cost", "text"}``, ``cut`` the
        characters cut from the message, ``test_cut`` those cut from the test id),
        ``"failure_blocks_left_out"`` those that did not fit the budget (same form).
        ``"schema"`` is the version of this form (:data:`CONTEXT_SCHEMA`), raised when a key
        changes meaning or goes."""
        data = self.result.to_dict()
        data["build_budget"], data["build_used"] = data["budget"], data["used"]
        data["budget"], data["used"] = self.budget, self.used
        data["failure_blocks"] = [block.to_dict() for block in self.failure_blocks]
        data["failure_blocks_left_out"] = [block.to_dict() for block in self.failure_blocks_left_out]
        data["schema"] = CONTEXT_SCHEMA
        data["policy_omitted"] = [w.to_dict() for w in self.gathered.policy_omissions]
        failure = self.failure
        data["failure"] = (
            None
            if failure is None
            else {
                "test": failure.name,
                "test_id": failure.test_id,
                "error": failure.exception_type,
                "message": failure.message,
                "failure_file": self.failure_file,
            }
        )
        data["failing_tests"] = failing_tests_json(self.gathered)
        if self.rerun is not None:
            data["rerun"] = self.rerun.to_dict()
        redacted_data, redacted = redact_json(data)
        shown: dict[str, Any] = redacted_data
        # The reader's records name files: a secret in a file name is replaced there too (the
        # same name is redacted, and recorded, where the items give it).
        records, _ = redact_json([dict(r) for r in self.redactions], "$.policy_redacted")
        shown["policy_redacted"] = [*records, *redacted]
        return shown


def reader_redactions(reader: Repository, result: BuildResult) -> tuple[dict[str, Any], ...]:
    """The secrets the reader replaced in the selected items of ``result``: for each item
    (``where`` its JSONPath, ``$.items[i].content``) and each secret of its file that touches
    its lines (:meth:`SourceFile.redactions_in`), ``{"where", "path", "lines": [first, last],
    "kind", "reason": "policy", "why": "policy: secret in the file"}``."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(result.items):
        source = reader.source(item.path)
        if source is None:
            continue
        for first, last, kind in source.redactions_in(item.start, item.end):
            out.append(
                {
                    "where": f"$.items[{i}].content",
                    "path": item.path,
                    "lines": [first, last],
                    "kind": kind,
                    "reason": "policy",
                    "why": SECRET_REDACTED_IN_FILE,
                }
            )
    return tuple(out)


def _with_withheld_failures(result: BuildResult, gathered: Gathered) -> BuildResult:
    """``result`` with each failing file none of whose failure windows reached the build,
    because the reader withheld them all (:attr:`Gathered.policy_omissions` of source
    ``failure``), added to ``missing_critical`` (after the files already there)."""
    failing = list(gathered.failure_files) or ([gathered.failure_file] if gathered.failure_file else [])
    known = {m.path for m in result.missing_critical}
    offered = {c.path for c in gathered.candidates if str(c.reason) == "failure"}
    added: list[MissingEvidence] = []
    for path in failing:
        if path in known or path in offered:
            continue
        withheld = [w for w in gathered.policy_omissions if w.path == path and w.source == "failure"]
        if withheld:
            added.append(MissingEvidence(path, (), tuple(w.to_dict() for w in withheld)))
    if not added:
        return result
    return _rebuilt(result, result.items, [*result.missing_critical, *added])


def _redaction_summary(redactions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The Markdown lines about the secrets the reader redacted in the selected windows."""
    if not redactions:
        return []
    n = len(redactions)
    lines = [f"{n} secret{'s' if n != 1 else ''} redacted in the selected windows (reason policy):", ""]
    for r in redactions:
        first, last = r["lines"]
        where = f"{r['path']}:{first}" if first == last else f"{r['path']}:{first}-{last}"
        lines.append(f"- {header_path(where)} {r['kind']}: {r['why']}")
    return ["\n".join(lines)]


def failing_tests_json(gathered: Gathered) -> list[dict[str, object]]:
    """Every failing test found in the log, in summary order, each ``{"test", "name",
    "status", "phase", "exception", "message", "selected"}``: ``test`` its id (a pytest
    node id when the log gives one, else its name, else ``null``), ``name`` the report's
    name, ``status`` ``"failed"`` or ``"error"`` and ``phase`` (``"collect"``, ``"setup"``,
    ``"call"``, ``"teardown"`` or ``null``) of the report taken as its failure, its
    exception type (or ``null``) and message, and ``selected`` whether the context was
    built for it."""
    out: list[dict[str, object]] = []
    for test in gathered.failing_tests:
        failure = test.failure
        out.append(
            {
                "test": test.test,
                "name": failure.name,
                "status": failure.status,
                "phase": failure.phase,
                "exception": failure.exception_type,
                "message": failure.message,
                "selected": failure is gathered.failure,
            }
        )
    return out


def _policy_summary(gathered: Gathered) -> list[str]:
    """The Markdown lines about the windows the reader withheld (none: no lines)."""
    import re

    withheld = gathered.policy_omissions
    if not withheld:
        return []
    files = len({w.path for w in withheld})
    lines = [
        f"{len(withheld)} window{'s' if len(withheld) != 1 else ''} of {files} "
        f"file{'s' if files != 1 else ''} withheld by the reader (reason policy, before any ranking):",
        "",
    ]
    for w in withheld:
        where = header_path(f"{w.path}:{w.start}-{w.end}")
        ticks = "`" * (max((len(run) for run in re.findall("`+", where)), default=0) + 1)
        pad = " " if where.startswith("`") or where.endswith("`") else ""
        lines.append(f"- {ticks}{pad}{where}{pad}{ticks} {w.source}: {w.why}")
    return ["\n".join(lines)]


# --------------------------------------------------------------------------------------
# The reader and the symbol index, backed by the workspace


_PENDING: Any = object()


class _LazyTree:
    """The ``tree`` of a :class:`_CachedSource`: parsed from its lines on first use."""

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        state = obj.__dict__
        if "_tree" not in state:
            python = obj.path.endswith((".py", ".pyi"))
            state["_tree"] = _parse("".join(obj.lines)) if python else None
        return state["_tree"]

    def __set__(self, obj: Any, value: Any) -> None:
        if value is not _PENDING:
            obj.__dict__["_tree"] = value


#: The characters of a test id or message shown in a line of the report (the rest is cut,
#: with the marker of :func:`~bugcontext.job._failure_block.cut_message`).
REPORT_NAME_CHARS = 300


def _shown_name(name: str | None) -> str:
    """``name`` (a test id, a failure message) for one line of the report: escaped
    (:func:`header_path`), at most :data:`REPORT_NAME_CHARS` characters of it, then the cut
    marker; ``(unnamed)`` for none."""
    if not name:
        return "(unnamed)"
    return header_path(cut_message(name, REPORT_NAME_CHARS)[0])


def _stamped(reader: Repository, windows: Iterable[Any]) -> list[dict[str, object]]:
    """The candidates of ``windows`` with their provenance: ``source_sha256``, the SHA-256 of
    the bytes of the file each window was cut from (as the reader's check read it), and
    ``source_id``, the source that proposed it (``Window.source``, else its reason)."""
    out: list[dict[str, object]] = []
    for w in windows:
        item = w.to_dict()
        source = reader.source(w.path)
        # (A window of a file with redacted secrets is stamped after the build: the build
        # checks its content against the redacted lines, see _verifier.)
        if source is not None and source.digest and not source.redactions:
            item["source_sha256"] = source.digest
        item["source_id"] = w.source or str(w.reason)
        out.append(item)
    return out


def _verifier(reader: Repository) -> Callable[[str], bytes | None]:
    """The build's ``verify`` reader: the file's bytes as they are now, through the reader's
    rules (``None`` for a file it may not or cannot read); a file that is not what the
    workspace's table holds is read again on the next call (``Workspace._checked``)."""

    def read(path: str) -> bytes | None:
        if reader.relative(path) != path:
            return None
        data = reader._read(path)
        if isinstance(reader, _Reader):
            reader._workspace._checked(path, hashlib.sha256(data).hexdigest() if data is not None else "")
        source = reader.source(path) if data is not None else None
        if (
            source is not None
            and source.redactions
            and hashlib.sha256(data or b"").hexdigest() == source.digest
        ):
            # The file's own bytes are those the windows were cut from: their content is
            # checked against its lines with the secrets redacted, as they were cut.
            return "".join(source.lines).encode("utf-8", "surrogateescape")
        return data

    return read


def _restamped(result: BuildResult, reader: Repository) -> BuildResult:
    """``result`` with each item of a file with redacted secrets stamped with the SHA-256 of
    the file's own bytes (``source_sha256``), which :func:`_verifier` checked."""
    items = list(result.items)
    changed = False
    for i, item in enumerate(items):
        source = reader.source(item.path)
        if source is not None and source.redactions and source.digest and item.source_sha256 is None:
            items[i] = Candidate(
                item.path,
                item.start,
                item.end,
                item.content,
                item.reason,
                item.score,
                group=item.group,
                source_sha256=source.digest,
                source_id=item.source_id,
            )
            changed = True
    if not changed:
        return result
    return _rebuilt(result, items, result.missing_critical)


def _rebuilt(result: BuildResult, items: Sequence[Any], missing_critical: Sequence[Any]) -> BuildResult:
    """``result`` with its ``items`` and ``missing_critical`` replaced, every other field kept."""
    return BuildResult(
        items,
        result.selected,
        result.used_chars,
        result.truncated,
        result.omitted,
        result.failure_files,
        result.cost,
        result.budget,
        result.used,
        result.blocks,
        missing_critical,
    )


class _CachedSource(SourceFile):
    """A :class:`SourceFile` rebuilt from the cache (its lines, as the reader decoded them):
    the same file, parsed only if its ``tree`` is asked for. Only files the reader did not
    refuse are cached this way (a refused file's tree comes from text it does not keep)."""

    tree = _LazyTree()


class _Reader(Repository):
    """A :class:`Repository` whose reads go through the workspace: a file whose content hash
    the workspace knows is not parsed again. The reader's check before output
    (:meth:`screen`) still reads every file it checks, and compares content hashes."""

    _workspace: Workspace
    _verify: bool

    def _load(self, rel: str) -> SourceFile | None:
        ws = self._workspace
        digest = None if self._verify else ws._digest(rel)
        if digest is None:
            data = self._read(rel)
            digest = hashlib.sha256(data).hexdigest() if data is not None else None
            if self._verify:
                ws._checked(rel, digest or "")
        if digest is not None:
            kept = ws._kept_source(rel, digest)
            if kept is not None:
                if kept.refused is not None:
                    self.refused[rel] = kept.refused
                else:
                    self.refused.pop(rel, None)
                self.skipped.pop(rel, None)
                return kept
        source = super()._load(rel)
        if source is not None:
            ws._keep_source(source)
        return source

    def files(self, suffixes: Iterable[str] | None = None) -> list[str]:
        # One walk of the folder per call: a listing by suffixes is the full listing filtered
        # the way the walk filters (the file name, lowercased, ends with one of them).
        if suffixes is None:
            return super().files(None)
        key = tuple(sorted({s.lower() for s in suffixes}))
        if key not in self._listed:
            self._listed[key] = [
                rel for rel in super().files(None) if rel.rpartition("/")[2].lower().endswith(key)
            ]
        return list(self._listed[key])

    def screen(self, windows: Any) -> Any:
        self._verify = True
        try:
            return super().screen(windows)
        finally:
            self._verify = False


class _Symbols(SymbolIndex):
    """A :class:`SymbolIndex` whose words and parses are the workspace's, per content hash."""

    def __init__(self, repo: _Reader, paths: Sequence[str]) -> None:
        super().__init__(repo, paths)
        self._ws = repo._workspace
        self._listed: str | None = None
        # the word index in use and each analysed file's number in it (None: not covered)
        self._slots: tuple[_WordIndex, list[int | None]] | None = None

    def _scan(self, path: str) -> tuple[frozenset[str], frozenset[str]]:
        scanned = self._words.get(path)
        if scanned is None:
            key = self._ws._key(path)
            scanned = self._ws._words.get(key) if key is not None else None
            if scanned is None and key is not None and self._ws._covered(key):
                # Its words are in the word index only: the file's own row, if kept.
                self._ws._load_words([key])
                scanned = self._ws._words.get(key)
            if scanned is None:
                scanned = super()._scan(path)
                if key is not None:
                    self._ws._words[key] = scanned
            self._words[path] = scanned
        return scanned

    def mentioning(self, name: str) -> list[str]:
        return self._holding(name, 0)

    def _may_define(self, name: str) -> list[str]:
        return self._holding(name, 1)

    def _holding(self, name: str, part: int) -> list[str]:
        """The analysed files whose words (``part`` 0: all; 1: those that may define) hold
        ``name``, in path order: through the workspace's word index for the files it covers
        (their content is the one indexed), through each file's own words for the others."""
        index = self._ws._word_index
        hits = index.holding(name, part) if index is not None else None
        if index is None or hits is None:
            if index is not None:  # a damaged index: not used again
                self._ws._word_index = None
            return [path for path in self.paths if name in self._scan(path)[part]]
        if self._slots is None or self._slots[0] is not index:
            keys = map(self._ws._key, self.paths)
            self._slots = (index, [index.ids.get(key) if key is not None else None for key in keys])
        found = []
        for path, slot in zip(self.paths, self._slots[1], strict=True):
            if slot is not None:
                if slot in hits:
                    found.append(path)
            elif name in self._scan(path)[part]:
                found.append(path)
        return found

    def parsed(self, path: str) -> ParsedFile | None:
        if path not in self._parsed:
            key = self._ws._key(path)
            if key is not None and key in self._ws._parsed:
                self._parsed[path] = self._ws._parsed[key]
            else:
                parsed = super().parsed(path)
                if key is not None:
                    self._ws._parsed[key] = parsed
        return self._parsed[path]

    def call_sites(self, name: str) -> list[CallSite]:
        paths = self.mentioning(name)
        self._ws._load_calls([key for key in map(self._ws._key, paths) if key is not None], name)
        return [site for path in paths for site in self.calls_in(path, name)]

    def calls_in(self, path: str, name: str) -> tuple[CallSite, ...]:
        # A function of the file's content and the name: kept per content hash, so a new
        # process on an unchanged repository does not parse the files that call a name.
        key = self._ws._key(path)
        derive = super().calls_in
        if key is None:
            return derive(path, name)
        return self._ws._calls(key, name, lambda: derive(path, name))

    def neighbours(self, path: str) -> list[str]:
        # A Python file's neighbours depend on its content and on the set of analysed paths
        # only (another language may read other files: Go's go.mod), so they are kept per
        # content hash while that set is the same.
        key = self._ws._key(path) if path.endswith((".py", ".pyi")) else None
        if key is None:
            return super().neighbours(path)
        derive = super().neighbours
        return list(self._ws._neighbours(key, self._listing(), lambda: derive(path)))

    def _listing(self) -> str:
        if self._listed is None:
            text = "\n".join(self.paths).encode("utf-8", "surrogatepass")
            self._listed = hashlib.sha256(text).hexdigest()
        return self._listed

    def summary(self, path: str) -> ParsedFile | FileSummary | None:
        parsed = self._parsed.get(path, _PENDING)
        if parsed is not _PENDING:
            return parsed  # type: ignore[no-any-return]
        key = self._ws._key(path)
        if key is None:
            return self.parsed(path)
        if key in self._ws._parsed:
            return self.parsed(path)
        kept = self._ws._summary(key)
        if kept is _PENDING:
            # Parsed for its summary only: the syntax tree (several times the file's size)
            # is not kept; a question that needs it parses the file again.
            parsed = SymbolIndex.parsed(self, path)
            del self._parsed[path]
            kept = FileSummary.of(parsed) if parsed is not None else None
            self._ws._summaries[key] = kept
            self._ws._unsaved_summaries.append(key)
        return kept  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------
# The workspace


class Workspace:
    """What is derived from the repository folder ``root``, kept current between calls.

    ``cache_dir`` is the folder of the on-disk cache (default :func:`default_cache_dir`);
    ``cache=False`` keeps everything in memory only. ``max_file_bytes`` and ``gitignore`` are
    the reader's settings (:class:`bugcontext.job.sources.Repository`). ``limits`` are the
    resource limits (:class:`bugcontext.core.limits.Limits`; default ``DEFAULT_LIMITS`` when the
    workspace is made; ``max_file_bytes``, given, overrides its own): the reader's, the
    sizes of :meth:`context`'s inputs, checked before they are parsed, and the build's. ``progress`` shows a
    progress bar (``tqdm``) on standard error while more than :data:`PROGRESS_FILES` files
    are derived; ``None`` (default): when standard error is a terminal.

    A file whose size, modification time, change time (ns) and inode are unchanged is taken as
    unchanged, as git's index does: the change time (``st_ctime_ns``) moves on every write and
    cannot be set back, so an edit that restores the size and modification time (``cp -p``,
    ``tar``, ``rsync -t``) is seen. A stat is not trusted when the file was modified or changed
    within :data:`AMBIGUOUS_NS` (2 s) of the time it was read (a write in the same timestamp
    tick can leave every field as it was: git's "racily clean" entries): such a file is hashed
    again on the next call. Everything derived from a file is keyed by its SHA-256 content
    hash (content-addressed, like a build cache), so a touched but unchanged file costs one
    read. The reader's check before output still reads every file a selected window comes
    from, and so does the build's ``verify``; a file either finds not to be the content the
    table holds is forgotten (here and in the cache) and read again on the next call, so a
    wrong row never persists. Names are kept as Python reads them (a byte that is not valid
    UTF-8 as a lone surrogate) and stored in the cache losslessly.

    Verified provenance: every candidate of :meth:`context` carries ``source_sha256`` (the
    SHA-256 of the bytes of its file as the reader's check read it) and ``source_id`` (the source
    that proposed it: ``failure``, ``reference``, ``search``, ``issue`` or ``members``; with
    ``coverage``, ``coverage: executed by the failing tests``), and the build verifies them
    through the workspace's reader: a window whose file was edited (or removed) after it was cut
    is omitted with reason ``stale`` (:mod:`bugcontext.core.provenance`).

    A workspace is safe to share between threads (calls run one at a time) and its cache
    between processes. Raises ``NotADirectoryError`` if ``root`` is not a folder, and
    ``InvalidInputError`` (field ``root`` or ``cache_dir``) for a path argument that is not a
    ``str`` or ``os.PathLike``, that holds a NUL character, or (``root``) that the system
    refuses: a name too long, a loop of symbolic links, a permission (``input field 'root':
    cannot read PATH: File name too long``).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        cache: bool = True,
        max_file_bytes: int | None = None,
        gitignore: bool = True,
        progress: bool | None = None,
        limits: Limits | None = None,
    ) -> None:
        chosen = resolve(limits)
        if max_file_bytes is not None:
            chosen = chosen.replace(max_file_bytes=max_file_bytes)
        self.limits = chosen
        self.root = resolved_folder("root", root)
        if cache_dir is not None:
            cache_dir = _folder("cache_dir", cache_dir)
        self.max_file_bytes = chosen.max_file_bytes
        self._builders: dict[str, ContextBuilder | reference.ContextBuilder] = {}
        self.gitignore = gitignore
        self.progress = progress
        self._lock = threading.RLock()
        self._store: Store | None = None
        if cache:
            folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
            self._store = TrackedStore(folder, chosen.max_cache_value_bytes, chosen.max_cache_bytes)
        reading = (chosen.max_file_bytes, chosen.max_depth, chosen.max_gitignore_bytes)
        rules = (chosen.max_gitignore_patterns, chosen.max_gitignore_pattern_chars)
        self._key_prefix = f"{self.root.as_posix()}|{reading}|{rules}|{gitignore}"
        # path -> (size, mtime_ns, ctime_ns, inode, indexed_ns, digest); "" digest: the file
        # could not be read
        self._table: dict[str, Stat] = {}
        self._table_loaded = False
        self._sources: dict[_Key, SourceFile] = {}
        self._unsaved: dict[str, tuple[tuple[str, ...], int]] = {}
        self._words: dict[_Key, _Words] = {}
        self._parsed: dict[_Key, ParsedFile | None] = {}
        self._docs: dict[_Key, _Doc] = {}
        # the definitions and imports of each file parsed (None: not an analysed language)
        self._summaries: dict[_Key, FileSummary | None] = {}
        self._unsaved_summaries: list[_Key] = []
        # the neighbours of each Python file, while the analysed paths are those listed
        self._neighbour_kept: dict[_Key, tuple[str, ...]] = {}
        self._neighbour_listing = ""
        self._neighbour_unsaved: list[tuple[str, object]] = []
        # the calls of a name in each file (CallSite), per content hash and name
        self._calls_kept: dict[_Key, dict[str, tuple[CallSite, ...]]] = {}
        self._calls_unsaved: list[tuple[str, object]] = []
        # which files hold each word, for the files of one listing (see _WordIndex)
        self._word_index: _WordIndex | None = None
        self._word_index_key = ""
        self._index: SearchIndex | None = None
        self._index_key = ""
        self._index_meta: dict[str, tuple[str, int, int, int]] = {}
        # the files whose documents in the index are not those of the latest stored index
        self._unstored: set[str] = set()
        self._reader: _Reader | None = None
        # each folder's listing, kept between calls (Repository._listing)
        self._folders: dict[str, tuple[tuple[int, int, int, int], int, list[tuple[str, str]]]] = {}

    # -- the public surface ----------------------------------------------------------------

    def close(self) -> None:
        """Close the cache database (the workspace keeps working, in memory only)."""
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    @property
    def cache_path(self) -> Path | None:
        """The cache database in use, or ``None`` without a cache (or when it is off)."""
        return self._store.path if self._store is not None and self._store.enabled else None

    @property
    def repository(self) -> Repository:
        """The reader of the latest call (a fresh one before the first call)."""
        with self._lock:
            return self._reader if self._reader is not None else self._new_reader()

    def gather(
        self,
        log_text: str,
        *,
        junit_xml: str | bytes | None = None,
        test: str | None = None,
        query: str | None = None,
        issue: str | None = None,
        exclude: Sequence[str] = (),
        coverage: CoverageInput | None = None,
    ) -> Gathered:
        """The candidates for the failure in ``log_text`` (:func:`bugcontext.job.sources.gather`,
        with the kept index; ``exclude`` leaves named sources out, for ablation); see
        :meth:`context`."""
        found = self._run(
            log_text,
            junit_xml=junit_xml,
            test=test,
            query=query,
            issue=issue,
            exclude=exclude,
            coverage=coverage,
        )
        return found[0]

    @keyword_options(CallOptions)
    def context(self, log_text: str, *, options: CallOptions) -> ContextResult:
        """Build the context for a failing test of the repository.

        ``log_text`` is the test output (pytest in any ``--tb`` style, unittest, a bare
        traceback, or a JUnit XML report); ``junit_xml`` the run's JUnit XML report, if any
        (it fills in tracebacks the log lacks); ``test`` the failing test to build for (a
        node id or report name, or a test file, folder or class, which gives the first failing
        test under it: :func:`~bugcontext.job.sources.runs.select_test`; default the first
        failure); ``query`` extra search words;
        ``issue`` the issue text (the bug report), whose named definitions and own search
        rank after the log's evidence (:func:`bugcontext.job.sources.gather`).
        ``budget`` is in the unit of ``cost`` (a :class:`bugcontext.Cost` or its mapping
        form), default :data:`DEFAULT_MAX_CHARS` characters or :data:`DEFAULT_MAX_TOKENS`
        tokens; ``cost`` defaults to characters of the rendered Markdown section
        (``{"template": "markdown"}``), so that :attr:`ContextResult.section` is within the
        budget. ``engine`` is ``"native"`` (the Rust engine) or ``"reference"``. With
        ``trace`` (a path, appended to, or a text stream), the build's JSON line is appended
        (:mod:`bugcontext.core.trace`). ``coverage`` is execution evidence: a coverage report
        (coverage.py's ``.coverage`` data file, its JSON report, LCOV or Cobertura XML, told
        apart by content) as ``bytes``, a ``str`` of its text or an ``os.PathLike`` path, or an
        :class:`bugcontext.job.sources.execution.ExecutionRecord`; the units the failing tests
        executed become failure windows ranked by suspiciousness, and the reference windows
        they never executed move below the search windows (:func:`bugcontext.job.sources.gather`).
        ``rerun`` (``True`` or ``"failing"``; ``"files"``) gets that evidence by re-running the
        log's failing tests in ``python`` with ``rerun_env`` (:meth:`_rerun_evidence`).

        Every candidate's provenance is verified (the class's documentation).

        Raises ``ResourceLimitError`` (before any of it is parsed) for a ``log_text`` over
        ``limits.max_log_bytes`` (UTF-8 bytes), a ``junit_xml`` over ``max_junit_bytes``, an
        ``issue`` over ``max_issue_bytes``, a ``query`` over ``max_query_chars`` characters, a
        repository walk over ``max_files`` entries, a build over ``max_candidates`` or
        ``max_total_chars``, a ``coverage`` report over ``max_coverage_bytes``;
        ``InvalidInputError`` for an invalid budget or cost, a ``coverage`` report of an unknown
        format or a damaged one, or a path that is not a regular file (field ``coverage``),
        ``InvalidInputError`` (field ``rerun``) for an unknown ``rerun`` mode or ``rerun``
        with ``coverage``, (field ``python``) for a ``python`` that is not an executable
        file or ``python``/``rerun_env`` without ``rerun``, (field ``rerun_env``) for one that
        is not a mapping or whose name holds ``=`` or a NUL character, or a value a NUL; ``LookupError`` if
        ``test`` names no failure of the log, ``LogFormatError`` (a ``ValueError``) for
        unreadable JUnit XML, ``InvalidInputError`` (a ``ValueError``) naming the option for an
        unknown engine or a ``junit_xml``, ``test``, ``query``, ``issue`` or ``deadline`` of
        the wrong type (or a NaN ``deadline``), ``OSError`` if the
        repository folder cannot be listed; before any work, ``InvalidInputError`` (field
        ``trace``) for a ``trace`` path with a NUL character, one that is an existing file
        anywhere under the repository folder (read or not: ignored files and ``.git``
        included; links resolved, or a hard link to one), any path inside the repository's
        git folder (``.git``, or a ``.git`` file's gitdir), the check of ``bugcontext context
        --trace`` (:func:`bugcontext.core._writer.repository_output_problem`), or the
        ``coverage`` report's file,
        and ``OutputError`` for a trace
        that cannot be written (a folder, a read-only file, a missing folder).

        ``deadline`` (a ``time.monotonic()`` value; the MCP server's call limit) is checked
        when the workspace's lock is taken, between the stages (refresh, index, parse,
        gather, build) and inside their long loops (every file walked, read or indexed, every
        symbol, reference and hop analysed: :mod:`bugcontext.job._deadline`): past it the call
        stops with ``TimeoutError`` within one iteration of such a loop, so a call given up on
        neither keeps the workspace busy nor goes on computing.
        """
        with bounded(options.deadline):
            return self._context(log_text, options, options.deadline)

    def _context(self, log_text: str, options: ContextOptions, deadline: float | None) -> ContextResult:
        """The body of :meth:`context` (``options``: its keyword options but ``deadline``)."""
        if options.engine not in _ENGINES:
            raise ValueError(f"engine must be 'native' or 'reference', got {options.engine!r}")
        if options.trace is not None:
            # Before any work: the trace must not be a file the job reads (nor unwritable).
            check_trace(options.trace)
            check_trace_path(options.trace, self.root, "repository")
            if isinstance(options.trace, (str, os.PathLike)) and isinstance(options.coverage, os.PathLike):
                try:  # the coverage report is read: the trace must not be appended to it
                    refuse_same_files(
                        [("the trace", options.trace)],
                        [("the coverage report", options.coverage)],
                        streams=(),
                    )
                except OutputConflictError as exc:
                    raise InvalidInputError("trace", str(exc)) from None
        started = time.perf_counter()
        model = Cost.parse({"template": "markdown"} if options.cost is None else options.cost)
        budget = options.budget
        if budget is None:
            budget = DEFAULT_MAX_TOKENS if model.unit == "tokens" else DEFAULT_MAX_CHARS
        budget = budget_int(budget)  # before any work (the failure blocks take from it first)
        if not isinstance(log_text, (str, bytes)):
            shown = type(log_text).__name__
            raise InvalidInputError("log_text", f"must be a str (the test output), not {shown}")
        coverage, report = self._rerun_evidence(log_text, options, deadline)
        gathered, failures, timings, reread, reader = self._run(
            log_text,
            junit_xml=options.junit_xml,
            test=options.test,
            query=options.query,
            issue=options.issue,
            coverage=coverage,
            deadline=deadline,
        )
        _check_deadline(deadline)
        before = time.perf_counter()
        result, blocks, left_out, total = self._build(
            gathered, reader, budget, model, options.engine, options.trace, options.test
        )
        finished = time.perf_counter()
        times = {**timings, "build": finished - before, "total": finished - started}
        return ContextResult(
            result,
            gathered,
            failures,
            times,
            reread,
            reader_redactions(reader, result),
            report,
            failure_blocks=blocks,
            failure_blocks_left_out=left_out,
            full_budget=budget,
            full_used=total,
        )

    def _rerun_evidence(
        self, log_text: str, options: ContextOptions, deadline: float | None
    ) -> tuple[CoverageInput | None, RerunReport | None]:
        """``(coverage, re-run report)`` of :meth:`context`: ``coverage`` as given, or (with
        ``rerun``) the execution evidence of a re-run and its report.

        ``rerun`` (``True`` or ``"failing"``; ``"files"``) gets that evidence by re-running the
        log's failing tests (``test`` alone when given; with ``"files"`` every test of their
        files, for a spectrum) under a tracer (:mod:`bugcontext.job.sources.rerun`), in the
        interpreter ``python``, else the repository's ``.venv`` or ``venv``, else the current
        one, with the extra environment ``rerun_env`` (``PYTHONPATH``, say), within
        ``limits.rerun_seconds``; what the run did, and what went wrong with it (a test that
        no longer fails, a timeout, a tracer that did not start), is
        :attr:`ContextResult.rerun`, in :meth:`ContextResult.summary` and ``to_dict()``.
        """
        report: RerunReport | None = None
        coverage, rerun = options.coverage, options.rerun
        if rerun is not None and rerun is not False:
            mode = "failing" if rerun is True else rerun
            if mode not in RERUN_MODES:
                modes = ", ".join(RERUN_MODES)
                raise InvalidInputError("rerun", f"must be True or one of {modes}, got {rerun!r}")
            if coverage is not None:
                raise InvalidInputError("rerun", "give coverage or rerun, not both")
            check_context_inputs(self.limits, log_text, options.junit_xml, options.query, options.issue)
            reading = Repository(self.root, gitignore=self.gitignore, limits=self.limits)
            coverage, report = rerun_for_log(
                reading,
                log_text,
                junit_xml=options.junit_xml,
                test=options.test,
                mode=str(mode),
                python=options.python,
                limits=self.limits,
                env=options.rerun_env,
                deadline=deadline,
            )
        elif options.python is not None or options.rerun_env is not None:
            raise InvalidInputError("python", "python and rerun_env are for a re-run (rerun=)")
        return coverage, report

    def _build(
        self,
        gathered: Gathered,
        reader: Repository,
        budget: int,
        model: Cost,
        engine: str,
        trace: TraceTarget | None,
        test: str | None,
    ) -> tuple[BuildResult, tuple[FailureBlock, ...], tuple[FailureBlock, ...], int]:
        """Build the section of :meth:`context` from ``gathered``: the failure blocks open it,
        inside the budget, the windows get what is left (:func:`build_with_failures`). Returns
        the result, the blocks kept, the blocks left out and the cost of the whole section."""
        data = gathered.build_input(budget)
        # The failure blocks open the section, inside the budget: the windows get what is left.
        data = {
            "candidates": _stamped(reader, gathered.candidates),
            "failure_files": data["failure_files"],
            "budget": budget,
            "cost": model,
        }

        def build(room: int, final: bool) -> BuildResult:
            data["budget"] = room
            return self._builder(engine).build(data, trace=trace if final else None, verify=_verifier(reader))

        used = used_failures(gathered.failing_tests, gathered.failure, test)
        result, blocks, total = build_with_failures(
            used, model, budget, build, limits=self.limits, traced=trace is not None
        )
        result = _with_withheld_failures(_restamped(result, reader), gathered)
        left_out = failure_blocks(used, model, self.limits)[len(blocks) :]
        return result, blocks, left_out, total

    # -- one call --------------------------------------------------------------------------

    def _run(
        self,
        log_text: str,
        *,
        junit_xml: str | bytes | None,
        test: str | None,
        query: str | None,
        issue: str | None = None,
        exclude: Sequence[str] = (),
        coverage: CoverageInput | None = None,
        deadline: float | None = None,
    ) -> tuple[Gathered, tuple[TestFailure, ...], dict[str, float], tuple[str, ...], _Reader]:
        check_context_inputs(self.limits, log_text, junit_xml, query, issue)
        with bounded(deadline), self._lock, _gc_paused():
            _check_deadline(deadline)
            started = time.perf_counter()
            reader = self._new_reader()
            searchable = _searchable_paths(reader)
            analysed = source_paths(reader)
            reread = self._refresh(reader, sorted(set(searchable) | set(analysed)))
            refreshed = time.perf_counter()
            _check_deadline(deadline)
            index = self._search_index(reader, searchable, analysed)
            derived = time.perf_counter()
            _check_deadline(deadline)
            failures = tuple(parse_test_output(log_text, junit_xml=junit_xml))
            _check_deadline(deadline)
            gathered = gather(
                reader,
                log_text,
                query,
                junit_xml=junit_xml,
                test=test,
                symbols=_Symbols(reader, analysed),
                index=index,
                issue=issue,
                exclude=exclude,
                coverage=coverage,
            )
            self._reader = reader
            self._save_sources()
            self._save_summaries()
            self._prune()
            done = time.perf_counter()
            timings = {
                "refresh": refreshed - started,
                "derive": derived - refreshed,
                "gather": done - derived,
            }
            return gathered, failures, timings, reread, reader

    def _builder(self, engine: str) -> ContextBuilder | reference.ContextBuilder:
        """The workspace's builder of ``engine`` (with its limits and its token-count cache)."""
        with self._lock:
            made = self._builders.get(engine)
            if made is None:
                kind = ContextBuilder if engine == "native" else reference.ContextBuilder
                made = self._builders[engine] = kind(limits=self.limits)
            return made

    def _new_reader(self) -> _Reader:
        reader = _Reader(self.root, gitignore=self.gitignore, limits=self.limits)
        reader.folders = self._folders
        reader._workspace = self
        reader._verify = False
        return reader

    def _kept_source(self, rel: str, digest: str) -> SourceFile | None:
        """The file ``rel`` with content hash ``digest`` as read before: kept in memory, or
        its lines from the cache (parsed when needed), else ``None``."""
        kept = self._sources.get((rel, digest))
        if kept is None and self._store is not None:
            key = _store_key((rel, digest))
            value = self._store.get_many("source", [key]).get(key)
            if (
                isinstance(value, tuple)
                and len(value) == 2
                and isinstance(value[0], tuple)
                and isinstance(value[1], int)
                and all(isinstance(line, str) for line in value[0])
            ):
                kept = _CachedSource(rel, value[0], _PENDING, None, value[1], digest)
                self._sources[(rel, digest)] = kept
        return kept

    def _keep_source(self, source: SourceFile) -> None:
        self._sources[(source.path, source.digest)] = source
        # A file with redacted secrets is not stored (its redactions are not in the stored
        # form): it is read again by a new workspace, as a refused file is.
        if source.refused is None and not source.redactions and self._store is not None and source.digest:
            self._unsaved[_store_key((source.path, source.digest))] = (source.lines, source.undecodable)

    def _save_sources(self) -> None:
        if self._store is not None and self._unsaved:
            self._store.put_many("source", list(self._unsaved.items()))
        self._unsaved.clear()

    def _summary(self, key: _Key) -> Any:
        """The kept :class:`FileSummary` of the file ``key`` (``None``: the file is not
        parsed), from memory or the cache, or ``_PENDING`` if there is none."""
        if key in self._summaries:
            return self._summaries[key]
        if self._store is None:
            return _PENDING
        name = _store_key(key)
        value = self._store.get_many("summary", [name]).get(name, _PENDING)
        if value is _PENDING:
            return _PENDING
        kept = None if value == () else FileSummary.from_value(key[0], value)
        if kept is None and value != ():
            return _PENDING  # another shape: parsed again
        self._summaries[key] = kept
        return kept

    def _neighbours(self, key: _Key, listing: str, derive: Callable[[], list[str]]) -> tuple[str, ...]:
        """The neighbours of the Python file ``key`` among the analysed paths whose listing
        has the digest ``listing``: kept (in memory, in the cache) or ``derive()``-d."""
        if self._neighbour_listing != listing:
            self._neighbour_listing = listing
            self._neighbour_kept.clear()
        kept = self._neighbour_kept.get(key)
        if kept is not None:
            return kept
        name = f"{listing}\0{_store_key(key)}"
        value = self._store.get_many("neighbours", [name]).get(name) if self._store is not None else None
        if isinstance(value, tuple) and all(isinstance(p, str) for p in value):
            kept = value
        else:
            kept = tuple(derive())
            self._neighbour_unsaved.append((name, kept))
        self._neighbour_kept[key] = kept
        return kept

    def _load_calls(self, keys: Iterable[_Key], name: str) -> None:
        """Bring the stored calls of ``name`` in the files ``keys`` into memory, in one read."""
        if self._store is None:
            return
        wanted = {_calls_key(key, name): key for key in keys if name not in self._calls_kept.get(key, {})}
        if not wanted:
            return
        for stored, value in self._store.get_many("calls", list(wanted)).items():
            key = wanted[stored]
            sites = _calls_from_value(key[0], name, value)
            if sites is not None:  # else another shape: derived again
                self._calls_kept.setdefault(key, {})[name] = sites

    def _calls(
        self, key: _Key, name: str, derive: Callable[[], tuple[CallSite, ...]]
    ) -> tuple[CallSite, ...]:
        """The calls of ``name`` in the file ``key``: kept (see :meth:`_load_calls`) or
        ``derive()``-d and stored with the summaries."""
        kept = self._calls_kept.setdefault(key, {})
        sites = kept.get(name)
        if sites is None:
            sites = kept[name] = derive()
            value = tuple(
                (s.reference.line, s.reference.qualifier, s.reference.member, s.unit, s.line_count)
                for s in sites
            )
            self._calls_unsaved.append((_calls_key(key, name), value))
        return sites

    def _save_summaries(self) -> None:
        """Keep (here and in the cache) the summary of every file parsed so far."""
        new: list[tuple[str, object]] = []
        for key, parsed in self._parsed.items():
            if key not in self._summaries:
                kept = FileSummary.of(parsed) if parsed is not None else None
                self._summaries[key] = kept
                new.append((_store_key(key), kept.value() if kept is not None else ()))
        for key in self._unsaved_summaries:
            summary = self._summaries.get(key, _PENDING)
            if summary is not _PENDING:
                new.append((_store_key(key), summary.value() if summary is not None else ()))
        self._unsaved_summaries = []
        if self._store is not None and new:
            self._store.put_many("summary", new)
        if self._store is not None and self._neighbour_unsaved:
            self._store.put_many("neighbours", self._neighbour_unsaved)
        self._neighbour_unsaved = []
        if self._store is not None and self._calls_unsaved:
            self._store.put_many("calls", self._calls_unsaved)
        self._calls_unsaved = []

    def _prune(self) -> None:
        """Forget, in memory, what was derived from file contents that are no longer the
        files' (an edited or removed file): a long-lived workspace does not grow with edits."""
        kept_maps = (self._sources, self._words, self._parsed, self._docs, self._summaries, self._calls_kept)
        for kept in (*kept_maps, self._neighbour_kept):
            for key in [k for k in kept if self._digest(k[0]) != k[1]]:
                del kept[key]

    def _digest(self, rel: str) -> str | None:
        row = self._table.get(rel)
        return row[5] if row is not None and row[5] else None

    def _key(self, rel: str) -> _Key | None:
        digest = self._digest(rel)
        return (rel, digest) if digest is not None else None

    def _refresh(self, reader: _Reader, paths: Sequence[str]) -> tuple[str, ...]:
        """Bring the file table up to date for ``paths``: a file whose size, modification
        time, change time or inode changed (or is new), or whose stat is ambiguous
        (:func:`_ambiguous`), is read again and hashed. Returns the paths whose stat or
        content changed."""
        if not self._table_loaded:
            if self._store is not None:
                self._table.update(self._store.stats(self._key_prefix))
            self._table_loaded = True
        changed: dict[str, Stat] = {}
        reread: list[str] = []
        top = os.fspath(self.root)
        for rel in checked(paths, 16):
            stamp = time.time_ns()
            now = _stat(top, rel)
            row = self._table.get(rel)
            if row is not None and row[:4] == now and not _ambiguous(row):
                continue
            data = reader._read(rel) if now[0] >= 0 else None
            digest = hashlib.sha256(data).hexdigest() if data is not None else ""
            changed[rel] = (*now, stamp, digest)
            if row is None or row[:4] != now or row[5] != digest:
                reread.append(rel)
        listed = set(paths)
        gone = [rel for rel in self._table if rel not in listed]
        for rel in gone:
            del self._table[rel]
        self._table.update(changed)
        if self._store is not None:
            self._store.put_stats(self._key_prefix, changed, gone)
        return tuple(reread)

    def _checked(self, rel: str, digest: str) -> None:
        """The reader's check or the build's ``verify`` read ``rel``, whose bytes have the hex
        SHA-256 ``digest`` (``""``: it could not be read): if that is not the content the table
        holds for it, forget the file's row (here and in the cache), so that the next call
        reads it again and no wrong row persists, whatever its stat says."""
        with self._lock:
            row = self._table.get(rel)
            if row is None or row[5] == digest:
                return
            del self._table[rel]
            if self._store is not None:
                self._store.put_stats(self._key_prefix, {}, [rel])

    # -- derived data ----------------------------------------------------------------------

    def _search_index(
        self, reader: _Reader, searchable: Sequence[str], analysed: Sequence[str]
    ) -> SearchIndex:
        """The search index of the files ``searchable`` as they are now, and the words of
        the files ``analysed``: kept, loaded from the cache, or derived (only for files whose
        content is new)."""
        keys = [(rel, self._digest(rel) or "") for rel in searchable]
        index_key = _listing_digest(keys)
        word_keys = [k for k in (self._key(rel) for rel in analysed) if k is not None]
        words_key = _listing_digest(word_keys)
        self._prepare_words(word_keys, words_key)
        if self._index is not None and self._index_key == index_key:
            self._derive_words(reader, word_keys)
            self._finish_words(word_keys, words_key)
            return self._index
        started = time.perf_counter()
        # The index in memory updated for the files that changed; else the cache's index of
        # these files, or its latest for the repository updated, or one built from scratch.
        base = self._base_index(memory=True)
        stored = self._stored_index(index_key) if base is None else None
        if stored is not None:
            chunks, retriever, lines, files, meta = stored
            self._derive_words(reader, word_keys)
            self._unstored.clear()
            timings = {"load": time.perf_counter() - started}
        else:
            base = base or self._base_index(memory=False)
            if base is None:
                chunks, retriever, lines, files, meta = self._built_index(reader, keys, word_keys)
                self._unstored = {rel for rel, _ in keys}
                timings = {"build": time.perf_counter() - started}
            else:
                chunks, retriever, lines, files, meta = self._updated_index(reader, keys, word_keys, base)
                timings = {"update": time.perf_counter() - started}
            # An updated index is stored once it differs from the stored one in more than a
            # few files (storing it is slower than updating it): until then a new workspace
            # updates the stored one for those files, whose documents are in the cache.
            if self._store is not None and (base is None or len(self._unstored) > STORE_AFTER_FILES):
                value = _index_value(chunks, retriever, lines, files, meta)
                self._store.put_many("index", [(index_key, value)])
                self._store.put_many("latest", [(self._key_prefix, index_key)])
                self._unstored.clear()
        self._finish_words(word_keys, words_key)
        self._index_meta = meta
        index = SearchIndex(
            root=self.root,
            chunks=tuple(chunks),
            fingerprint=tuple((rel, *self._table[rel][:4]) for rel in searchable if rel in self._table),
            build_seconds=time.perf_counter() - started,
            timings=timings,
            lines=lines,
            files=files,
            max_file_bytes=self.max_file_bytes,
            _retriever=retriever,
        )
        self._index, self._index_key = index, index_key
        return index

    def _built_index(self, reader: _Reader, keys: Sequence[_Key], word_keys: Sequence[_Key]) -> _Built:
        """The search index of the files ``keys`` built from their documents."""
        docs = self._derive(reader, keys, word_keys)
        chunks: list[Chunk] = []
        doc_keys: list[tuple[str, str, int]] = []
        corpus: list[list[str]] = []
        meta: dict[str, tuple[str, int, int, int]] = {}
        lines = files = 0
        for rel, digest in checked(keys, 16):
            doc = docs.get((rel, digest))
            if doc is None or not doc[1]:
                meta[rel] = (digest, 0, len(chunks), 0)
                continue
            meta[rel] = (digest, doc[0], len(chunks), len(doc[1]))
            files += 1
            lines += doc[0]
            for i, ((start, end, name), tokens) in enumerate(zip(doc[1], doc[2], strict=True)):
                chunks.append(Chunk(rel, start, end, name))
                doc_keys.append((rel, digest, i))
                corpus.append(list(tokens))
        retriever = _bm25_index(doc_keys, corpus) if chunks else None
        return chunks, retriever, lines, files, meta

    def _base_index(
        self, *, memory: bool
    ) -> tuple[list[Chunk], IncrementalBM25, dict[str, tuple[str, int, int, int]]] | None:
        """The latest search index of this repository (in memory, or with ``memory=False``
        the cache's latest), to update for the files that changed since; ``None`` if there is
        none (or it is empty)."""
        if memory:
            if self._index is not None and isinstance(self._index._retriever, IncrementalBM25):
                return list(self._index.chunks), self._index._retriever, self._index_meta
            return None
        if self._store is None:
            return None
        latest = self._store.get_many("latest", [self._key_prefix]).get(self._key_prefix)
        stored = self._stored_index(latest) if isinstance(latest, str) else None
        if stored is None or stored[1] is None:
            return None
        return stored[0], stored[1], stored[4]

    def _updated_index(
        self,
        reader: _Reader,
        keys: Sequence[_Key],
        word_keys: Sequence[_Key],
        base: tuple[list[Chunk], IncrementalBM25, dict[str, tuple[str, int, int, int]]],
    ) -> _Built:
        """The search index of the files ``keys`` made from ``base``: a file whose content
        is the one indexed there keeps its chunks and their postings; only the others are
        derived (or loaded) and indexed."""
        old_chunks, old_retriever, old_meta = base
        changed = [k for k in keys if old_meta.get(k[0], ("",))[0] != k[1] or not k[1]]
        self._unstored.update(rel for rel, _ in changed)
        self._unstored.update(rel for rel in old_meta.keys() - {rel for rel, _ in keys})
        docs = self._derive(reader, changed, word_keys)
        chunks: list[Chunk] = []
        doc_keys: list[tuple[str, str, int]] = []
        new_tokens: dict[tuple[str, str, int], list[str]] = {}
        meta: dict[str, tuple[str, int, int, int]] = {}
        lines = files = 0
        for rel, digest in checked(keys, 16):
            kept = old_meta.get(rel)
            if kept is not None and kept[0] == digest and digest:
                _, count, first, n = kept
                meta[rel] = (digest, count, len(chunks), n)
                chunks.extend(old_chunks[first : first + n])
                doc_keys.extend((rel, digest, i) for i in range(n))
            else:
                doc = docs.get((rel, digest))
                if doc is None or not doc[1]:
                    meta[rel] = (digest, 0, len(chunks), 0)
                    continue
                count, n = doc[0], len(doc[1])
                meta[rel] = (digest, count, len(chunks), n)
                for i, ((start, end, name), tokens) in enumerate(zip(doc[1], doc[2], strict=True)):
                    chunks.append(Chunk(rel, start, end, name))
                    doc_keys.append((rel, digest, i))
                    new_tokens[(rel, digest, i)] = list(tokens)
            if n:
                files += 1
                lines += count
        retriever = old_retriever.updated(doc_keys, new_tokens.__getitem__) if chunks else None
        return chunks, retriever, lines, files, meta

    def _load_words(self, keys: Sequence[_Key]) -> None:
        missing = [k for k in keys if k not in self._words]
        if not missing or self._store is None:
            return
        found = self._store.get_many("words", [_store_key(k) for k in missing])
        for key in missing:
            value = found.get(_store_key(key))
            if _is_words(value):
                self._words[key] = value  # type: ignore[assignment]

    def _covered(self, key: _Key) -> bool:
        """Whether the word index holds the words of the file ``key`` (that content)."""
        return self._word_index is not None and key in self._word_index.ids

    def _prepare_words(self, keys: Sequence[_Key], words_key: str) -> None:
        """Make the words of the files ``keys`` (whose listing has the digest ``words_key``)
        ready for the symbol index: the word index of that listing (in memory or in the
        cache), else the latest one of the repository for the files it covers and each other
        file's own words from the cache (the rest is derived)."""
        if self._word_index is not None and self._word_index_key == words_key:
            return
        if self._store is not None and not all(k in self._words for k in keys):
            stored = self._stored_word_index(words_key)
            if stored is None and self._word_index is None:
                latest = self._store.get_many("latest-words", [self._key_prefix]).get(self._key_prefix)
                stored = self._stored_word_index(latest) if isinstance(latest, str) else None
            if stored is not None:
                self._word_index, self._word_index_key = stored
        self._load_words([k for k in keys if not self._covered(k)])

    def _finish_words(self, keys: Sequence[_Key], words_key: str) -> None:
        """After the words of ``keys`` are derived: the word index of that listing, made (and
        stored) when there is none or the one in use misses more than
        :data:`STORE_AFTER_FILES` of the files (until then the others are looked at one by
        one)."""
        if self._word_index is not None and self._word_index_key == words_key:
            return
        index = self._word_index
        missed = sum(1 for k in keys if index is None or k not in index.ids)
        if index is not None and missed <= STORE_AFTER_FILES:
            return
        if not all(k in self._words or (index is not None and k in index.ids) for k in keys):
            return  # (a file's words could not be had: no index this time)
        try:
            made = _WordIndex.made(keys, self._words, index)
        except (ValueError, TypeError, IndexError):  # a damaged index to start from: not used
            self._word_index, self._word_index_key = None, ""
            return
        self._word_index, self._word_index_key = made, words_key
        if self._store is not None:
            self._store.put_many("words-index", [(words_key, made.value())])
            self._store.put_many("latest-words", [(self._key_prefix, words_key)])

    def _stored_word_index(self, words_key: str) -> tuple[_WordIndex, str] | None:
        if self._store is None:
            return None
        value = self._store.get_many("words-index", [words_key]).get(words_key)
        index = _WordIndex.from_value(value)
        return (index, words_key) if index is not None else None

    def _derive_words(self, reader: _Reader, keys: Sequence[_Key]) -> None:
        self._derive(reader, [], keys)

    def _derive(
        self, reader: _Reader, doc_keys: Sequence[_Key], word_keys: Sequence[_Key]
    ) -> dict[_Key, _Doc]:
        """The docs (chunks and their tokens) of ``doc_keys`` and the words of ``word_keys``,
        from memory, the cache, or the files (read through ``reader``)."""
        wanted = [k for k in doc_keys if k[1] and k not in self._docs]
        if wanted and self._store is not None:
            found = self._store.get_many("docs", [_store_key(k) for k in wanted])
            for key in wanted:
                value = found.get(_store_key(key))
                if _is_doc(value):
                    self._docs[key] = value  # type: ignore[assignment]
        todo_docs = [k for k in doc_keys if k[1] and k not in self._docs]
        todo_words = [k for k in word_keys if k not in self._words and not self._covered(k)]
        todo = sorted(set(todo_docs) | set(todo_words))
        new_docs: list[tuple[str, object]] = []
        new_words: list[tuple[str, object]] = []
        docs_wanted = set(todo_docs)
        words_wanted = set(todo_words)
        symbols = _Symbols(reader, [])
        before = set(self._sources)
        # After a cold start the files read only to derive are not kept in memory (their
        # parses are large; with a cache their lines are on disk for the sources that read
        # them again), each dropped as soon as it is derived, so that the heap holds one
        # parse at a time; a few files read again after edits are kept, parses and all.
        drop = len(todo) > KEEP_DERIVED_FILES
        read_before = set(reader._files)
        with self._progress(len(todo)) as advance:
            for key in todo:
                _check_current()
                rel = key[0]
                if key in docs_wanted:
                    doc = _doc(reader, rel)
                    self._docs[key] = doc
                    new_docs.append((_store_key(key), doc))
                if key in words_wanted:
                    words = symbols._scan(rel)
                    new_words.append((_store_key(key), words))
                if drop and self._store is not None:
                    if key not in before:
                        self._sources.pop(key, None)
                    if rel not in read_before:
                        reader._files.pop(rel, None)
                    if len(new_docs) + len(new_words) >= 2 * SAVE_EVERY_FILES:
                        # Written as they come, so the heap does not hold every file's lines.
                        self._save_derived(new_docs, new_words)
                advance()
        if drop:
            for key in set(self._sources) - before:
                del self._sources[key]
        self._save_derived(new_docs, new_words)
        return {k: self._docs[k] for k in doc_keys if k in self._docs}

    def _save_derived(self, docs: list[tuple[str, object]], words: list[tuple[str, object]]) -> None:
        """Store the files' lines, ``docs`` and ``words`` (the lists emptied)."""
        self._save_sources()
        if self._store is not None:
            self._store.put_many("docs", docs)
            self._store.put_many("words", words)
        docs.clear()
        words.clear()

    def _stored_index(self, index_key: str) -> _Built | None:
        if self._store is None:
            return None
        value = self._store.get_many("index", [index_key]).get(index_key)
        try:
            return _index_from(value)
        except (TypeError, ValueError, KeyError, IndexError):
            return None

    @contextmanager
    def _progress(self, total: int) -> Iterator[Callable[[], None]]:
        show = self.progress if self.progress is not None else sys.stderr.isatty()
        if not show or total <= PROGRESS_FILES:
            yield lambda: None
            return
        from tqdm import tqdm

        with tqdm(
            total=total, desc=f"indexing {total} files", unit=" files", file=sys.stderr, leave=False
        ) as bar:

            def advance() -> None:
                bar.update()

            yield advance


_gc_lock = threading.Lock()
_gc_depth = 0
_gc_was_enabled = False


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (calls in several threads nest: it is
    turned back on, if it was on, when the last one ends). Reading and parsing a large
    repository makes millions of small objects, none of them in a reference cycle; each
    collection pass would walk the whole heap (on a repository of 800k lines, more than half
    of a cold call), while reference counting frees everything anyway."""
    global _gc_depth, _gc_was_enabled
    with _gc_lock:
        if _gc_depth == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_depth += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if _gc_depth == 0 and _gc_was_enabled:
                gc.enable()


def _check_deadline(deadline: float | None) -> None:
    """``TimeoutError`` once ``deadline`` (``time.monotonic()``) has passed."""
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlinePassed


def _stat(root: str, rel: str) -> _Stat:
    """``(size, mtime_ns, ctime_ns, inode)`` of the file ``rel`` (not following a link), all
    ``-1`` when it cannot be examined."""
    try:
        st = os.stat(f"{root}/{rel}", follow_symlinks=False)
    except (OSError, ValueError):
        return (-1, -1, -1, -1)
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _ambiguous(row: Stat) -> bool:
    """Whether a table row's stat does not prove the content unchanged: the file was modified
    or changed (``mtime``, ``ctime``) within :data:`AMBIGUOUS_NS` of the time it was read
    (or later), so a write in the same timestamp tick may have left its stat as it was (git's
    "racily clean" entries). Such a file is hashed again on the next call."""
    return max(row[1], row[2]) >= row[4] - AMBIGUOUS_NS


def _store_key(key: _Key) -> str:
    return f"{key[0]}\0{key[1]}"


def _calls_key(key: _Key, name: str) -> str:
    return f"{_store_key(key)}\0{name}"


def _calls_from_value(path: str, name: str, value: object) -> tuple[CallSite, ...] | None:
    """The calls of ``name`` in ``path`` from their stored form (``(line, qualifier, member,
    unit, line_count)`` each), or ``None`` for a value of another shape."""
    if not isinstance(value, tuple):
        return None
    sites = []
    for item in value:
        if not (isinstance(item, tuple) and len(item) == 5):
            return None
        line, qualifier, member, unit, line_count = item
        if not (
            type(line) is int
            and (qualifier is None or isinstance(qualifier, str))
            and type(member) is bool
            and type(line_count) is int
            and (unit is None or _line_pair(unit))
        ):
            return None
        sites.append(CallSite(path, Reference(name, line, "call", qualifier, member), unit, line_count))
    return tuple(sites)


def _line_pair(value: object) -> bool:
    return isinstance(value, tuple) and len(value) == 2 and all(type(n) is int for n in value)


def _doc(reader: _Reader, rel: str) -> _Doc:
    """The search document of one file: its line count, its chunks ``(start, end, name)``
    and each chunk's tokens (empty for a file the search does not index)."""
    source = reader.source(rel)
    if source is None or not source.line_count:
        # (A refused file is indexed, as by SearchIndex.build: its hits become policy
        # omissions and take no top-k place.)
        return (0, (), ())
    path_tokens = tokenize(rel)
    chunks = _chunks(source)
    return (
        source.line_count,
        tuple((c.start, c.end, c.name) for c in chunks),
        tuple(tuple(_chunk_tokens(source, c, path_tokens)) for c in chunks),
    )


def _is_words(value: object) -> bool:
    """Whether a cached value has the shape of a file's words (a pair of frozensets; what is
    in them only ever meets an ``in`` test)."""
    return isinstance(value, tuple) and len(value) == 2 and all(isinstance(part, frozenset) for part in value)


def _is_doc(value: object) -> bool:
    """Whether a cached value has the shape of a search document: a line count, chunks
    ``(start, end, name)`` and as many token tuples."""
    if not (isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], int)):
        return False
    chunks, tokens = value[1], value[2]
    return (
        isinstance(chunks, tuple)
        and isinstance(tokens, tuple)
        and len(chunks) == len(tokens)
        and all(
            isinstance(c, tuple)
            and len(c) == 3
            and isinstance(c[0], int)
            and isinstance(c[1], int)
            and isinstance(c[2], str)
            and 1 <= c[0] <= c[1] <= value[0]
            for c in chunks
        )
        and all(isinstance(t, tuple) for t in tokens)
    )


def _listing_digest(keys: Sequence[_Key]) -> str:
    """The hex SHA-256 of a listing of files ``(path, content digest)``."""
    text = "\n".join(f"{rel}\0{digest}" for rel, digest in keys)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


#: The item type of the word index's file numbers: 4 bytes unsigned.
_ID_TYPE = "I" if array("I").itemsize == 4 else "L"
_ID_SIZE = array(_ID_TYPE).itemsize


class _WordIndex:
    """Which files hold each word: for the files ``keys`` (``(path, content digest)``, in
    order), ``table`` maps each word of their texts to the numbers (in ``keys``) of the files
    whose words (:meth:`SymbolIndex._scan`: all, and those that may define) hold it, as two
    ``bytes`` of 4-byte unsigned integers. It answers the symbol index's look-ups across the
    repository without each file's word sets (loading those is most of a new process's start
    on a large repository), and is stored whole in the cache."""

    def __init__(self, keys: list[_Key], table: dict[str, tuple[bytes, bytes]]) -> None:
        self.keys = keys
        self.ids = {key: i for i, key in enumerate(keys)}
        self.table = table

    @classmethod
    def made(cls, keys: Sequence[_Key], words: Mapping[_Key, _Words], base: _WordIndex | None) -> _WordIndex:
        """The index of the files ``keys``: those ``base`` covers as it has them, the others
        from their ``words``."""
        lists: dict[str, tuple[list[int], list[int]]] = {}
        number = {key: i for i, key in enumerate(keys)}
        fresh = [key for key in keys if base is None or key not in base.ids]
        if base is not None:
            renumber = [number.get(key, -1) for key in base.keys]
            for word, parts in checked(base.table.items(), 1024):
                pair: tuple[list[int], list[int]] = ([], [])
                for part, data in enumerate(parts):
                    pair[part].extend(n for n in (renumber[i] for i in array(_ID_TYPE, data)) if n >= 0)
                if pair[0] or pair[1]:
                    lists[word] = pair
        for key in checked(fresh, 16):
            i = number[key]
            every, definable = words[key]
            for word in every:
                lists.setdefault(word, ([], []))[0].append(i)
            for word in definable:
                lists.setdefault(word, ([], []))[1].append(i)
        table = {
            word: (array(_ID_TYPE, sorted(a)).tobytes(), array(_ID_TYPE, sorted(d)).tobytes())
            for word, (a, d) in lists.items()
        }
        return cls(list(keys), table)

    def holding(self, name: str, part: int) -> frozenset[int] | None:
        """The numbers of the files whose words (``part`` 0: all; 1: those that may define)
        hold ``name``; ``None`` if the index is damaged (a number past its files)."""
        entry = self.table.get(name)
        if entry is None:
            return frozenset()
        # Both parts are checked, whichever is asked for: a damaged entry is never half used.
        if not (
            isinstance(entry, tuple)
            and len(entry) == 2
            and all(isinstance(data, bytes) and len(data) % _ID_SIZE == 0 for data in entry)
        ):
            return None
        every, definable = (array(_ID_TYPE, data) for data in entry)
        if (every and max(every) >= len(self.keys)) or (definable and max(definable) >= len(self.keys)):
            return None
        return frozenset(every if part == 0 else definable)

    def value(self) -> dict[str, Any]:
        """The cache form (plain values)."""
        return {"keys": self.keys, "words": self.table}

    @classmethod
    def from_value(cls, value: object) -> _WordIndex | None:
        """The index of a cache form; ``None`` for anything that is not one (each word's
        entry is checked when used, :meth:`holding`)."""
        if not isinstance(value, dict):
            return None
        keys, table = value.get("keys"), value.get("words")
        if not (isinstance(keys, list) and isinstance(table, dict)):
            return None
        if not all(isinstance(k, tuple) and len(k) == 2 and all(isinstance(p, str) for p in k) for k in keys):
            return None
        index = cls(keys, table)
        return index if len(index.ids) == len(keys) else None


def _bm25_index(keys: Sequence[tuple[str, str, int]], corpus: list[list[str]]) -> IncrementalBM25:
    """The BM25 index of the chunks ``keys`` (``(path, digest, number)``) with tokens ``corpus``."""
    return IncrementalBM25(keys, corpus)


def _index_value(
    chunks: Sequence[Chunk],
    retriever: IncrementalBM25 | None,
    lines: int,
    files: int,
    meta: Mapping[str, tuple[str, int, int, int]],
) -> dict[str, Any]:
    """The cache form of a search index: plain values and the BM25 postings' arrays as bytes;
    ``files`` holds each file's ``(path, digest, lines, first chunk, chunks)``."""
    return {
        "chunks": [(c.path, c.start, c.end, c.name) for c in chunks],
        "lines": lines,
        "files": files,
        "meta": [(rel, *row) for rel, row in meta.items()],
        "bm25": retriever.value() if retriever is not None else None,
    }


def _index_from(value: object) -> _Built | None:
    """A search index from its cache form; ``None`` (or ``TypeError``/``ValueError``/
    ``KeyError``) for anything that is not one."""
    if not isinstance(value, dict):
        return None
    chunks = [Chunk(str(p), int(s), int(e), str(n)) for p, s, e, n in value["chunks"]]
    lines, files = int(value["lines"]), int(value["files"])
    meta: dict[str, tuple[str, int, int, int]] = {}
    for rel, digest, count, first, n in value["meta"]:
        if not (isinstance(rel, str) and isinstance(digest, str)):
            return None
        if not (0 <= int(first) <= int(first) + int(n) <= len(chunks)):
            return None
        meta[rel] = (digest, int(count), int(first), int(n))
    if sum(row[3] for row in meta.values()) != len(chunks):
        return None
    if value["bm25"] is None:
        return (chunks, None, lines, files, meta) if not chunks else None
    retriever = IncrementalBM25.from_value(value["bm25"])
    if retriever is None or retriever.num_docs != len(chunks):
        return None
    return chunks, retriever, lines, files, meta


@keyword_options(OneCallOptions)
def context(repo: str | os.PathLike[str], log_text: str, *, options: OneCallOptions) -> ContextResult:
    """The one-call form: ``Workspace(repo, cache_dir=cache_dir, cache=cache).context(...)``
    (see :meth:`Workspace.context`). With the cache (default), a later call, in this process
    or another, reuses what this one derived. A path argument is checked as
    :class:`Workspace` checks it, ``repo`` under its own name (``input field 'repo': cannot
    read PATH: File name too long``)."""
    workspace = Workspace(resolved_folder("repo", repo), cache_dir=options.cache_dir, cache=options.cache)
    return workspace._context(log_text, options, None)
