"""The native builder: the Python face of the Rust engine (``bugcontext._core``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from bugcontext import _core
from bugcontext.core._finish import finish
from bugcontext.core._input import BuilderBase, batch_options, clamp_u64, normalize_input
from bugcontext.core.cost import Cost
from bugcontext.core.provenance import check_verify
from bugcontext.core.trace import TraceTarget, traced_build
from bugcontext.core.types import BuildResult, TokenCounter

__all__ = ["ContextBuilder", "build", "build_many", "cache_key"]


class ContextBuilder(BuilderBase):
    """Rank, de-duplicate and pack code-context candidates into a budget (Rust engine).

    The contract (``bugcontext.core.reference`` is its executable form):

    * **Validate** every candidate before ranking, all-or-nothing; the first invalid one in
      input order raises :class:`~bugcontext.InvalidCandidateError` naming its index and field.
    * **Cost** each candidate before packing, in the unit of the cost model
      (:class:`~bugcontext.Cost`): characters (code points) or exact tokens of an encoding, of
      the content alone or of its whole rendered block.
    * **Rank** by ``(group, -float(score), input index)``: the failing files' candidates first,
      file by file in error order, then ``reference``, ``failure``, ``search``.
    * **Select** in rank order: omit a candidate whose closed line range ``[start, end]``
      intersects a window already selected from the same (canonical) path (``"overlap"``),
      else one that does not fit what is left of the budget (``"budget"``); never stop early
      and never cut a snippet.
    * A **group** (candidates with equal ``group``) is selected whole or not at all, at its
      best member's rank; if it does not fit, every member is omitted as ``"group"`` naming the
      member that did not fit.
    * With a template, the rendered section is counted exactly and fits the budget (see
      :mod:`bugcontext.core.cost`).
    * **Verified provenance**: with a ``verify`` reader, a candidate whose content is no longer
      its file's lines (or whose ``source_sha256`` is not its file's) is omitted as
      ``"stale"``, taking no budget and blocking nothing (see :mod:`bugcontext.core.provenance`).

    Args:
        cost: the default cost model (a :class:`~bugcontext.Cost` or its mapping form); an
            input's own ``cost`` takes precedence. Default: characters of the content.
        template: shorthand for ``cost.template`` (``"markdown"`` or ``"xml"``).
        limits: the resource limits (:class:`~bugcontext.core.limits.Limits`, default
            ``bugcontext.core.limits.DEFAULT_LIMITS`` when the builder is made); a build checks
            ``max_candidates`` (before any candidate's fields are read) and ``max_total_chars`` (candidate
            by candidate, as they are read).
        max_candidates: at most this many candidates per build (default
            ``limits.max_candidates``, 4,000,000); given, it overrides ``limits``.
        max_total_chars: at most this many content characters over all candidates of one build
            (default ``limits.max_total_chars``, ``2**30``); given, it overrides ``limits``.

    Token counts are cached by content hash for the builder's lifetime: reuse one builder for
    repeated builds over the same candidates.

    Raises:
        InvalidInputError: an invalid cost, template or limit.
    """

    def build(
        self,
        input: object,
        *,
        trace: TraceTarget | None = None,
        verify: Callable[[str], bytes | None] | None = None,
    ) -> BuildResult:
        """Build the context for one input.

        Args:
            input: a :class:`BuildInput`, or a mapping with ``candidates``, either ``max_chars``
                (alias ``maxChars``; a budget in characters) or ``budget`` (in the unit of the
                cost model), and optional ``cost`` and ``failure_files`` (alias ``failureFiles``;
                the failing files in error order, all ranked before every other candidate) or
                its one-element form ``failure_file`` (alias ``failureFile``). Candidates
                are :class:`Candidate` objects, mappings, or objects with the attributes
                ``path``, ``start``, ``end``, ``content``, ``reason``, ``score`` (and the
                optional ``group``, ``source_sha256``, ``source_id``).
            trace: see below.
            verify: ``None`` (default: provenance carried, not checked), or a reader
                ``path -> bytes | None`` (the current bytes of the file at a canonical path,
                ``None`` when it is missing), called once per path in order of first
                appearance after validation: every candidate whose file is missing, whose
                ``source_sha256`` differs from the SHA-256 of those bytes, or whose content is
                not exactly the file's lines ``start..end`` (UTF-8, BOM dropped, split after
                ``\\n``, ``\\r\\n``, ``\\r``; see :mod:`bugcontext.core.provenance`) is omitted as
                ``"stale"`` at its rank, takes no budget and blocks nothing.

        Returns:
            A :class:`BuildResult`: ``items`` (selected candidates as ``Candidate``, canonical
            path, selection order), ``selected`` (their input indices), ``used_chars``,
            ``truncated``, ``omitted`` (one :class:`Omission` per left-out candidate, rank
            order), ``failure_files`` (and ``failure_file``, the first), ``cost``, ``budget``,
            ``used`` (in the cost's unit),
            ``blocks`` (render placement, with a template), ``missing_critical`` (one
            :class:`~bugcontext.MissingEvidence` per failing file whose failure windows were
            all left out) and ``digest`` (SHA-256 of the selection, see
            :mod:`bugcontext.core.digest`). The input is not mutated; equal inputs give equal
            results and equal digests.

        Raises:
            InvalidInputError: a top-level field is invalid (``index`` is ``None``).
            InvalidCandidateError: a candidate is invalid (``index`` and ``field`` name it).
            ResourceLimitError: more than ``max_candidates`` candidates (``field``
                ``"candidates"``) or more than ``max_total_chars`` characters of content
                (``field`` ``"content"``, ``index`` the candidate that went over); ``limit``
                names the setting, ``value`` the amount found, ``maximum`` the setting's value.
            InvalidInputError: ``verify`` is not callable (``field`` ``"verify"``).
            TypeError: ``verify`` returned something other than ``bytes`` or ``None``; what
                ``verify`` raises propagates unchanged.

        With ``trace`` (a path, appended to, or a text stream), one JSON line describing the
        build (cache key, digest, the validated input, every decision) is appended: see
        :mod:`bugcontext.core.trace`. A path that cannot be written raises
        :class:`bugcontext.OutputError` (``cannot write PATH: reason``; a folder, a read-only
        file or a missing folder before the build), the file as it was. Before the build, a
        path with a NUL character, or, with ``verify=folder_reader(root)``, a file under
        ``root`` (the build reads it: a symbolic or hard link to one too), is an
        :class:`InvalidInputError` (``field`` ``"trace"``).

        Every error's message (and its ``field`` and ``problem``) has the secrets it would
        show replaced by ``[REDACTED: kind]`` (:class:`bugcontext.core.errors.ScreenedError`),
        the same for both engines.

        An exception raised by the caller's own code while a candidate is read (a property,
        ``__index__``, ``__getitem__``) propagates unchanged; only a missing key or attribute
        becomes :class:`InvalidCandidateError` (``problem`` "is missing").
        """
        check_verify(verify)
        if trace is not None:
            return traced_build(self, input, trace, "native", verify)
        result, ranks, windows = _core.build(*self._arguments(input), verify)
        counter = self.counter(result.cost)
        return finish(result, ranks, None if counter is None else counter.count_one, windows)

    def build_many(
        self, inputs: Iterable[object], *, threads: int | None = None, errors: str = "raise"
    ) -> list[BuildResult | Exception]:
        """Build the context for many inputs, ranking and packing them in parallel.

        The results equal ``[self.build(x) for x in inputs]``, element by element, errors
        included. Each input is checked and its candidates read in input order with the GIL
        held (as :meth:`build` does, token counts through this builder's cache); the ranking
        and packing runs with the GIL released, on up to ``threads`` threads across the inputs
        of a window (inputs read until about 8,192 candidates, and at least ``threads`` of
        them); then the window's results are built in input order, and the next window is read.

        Args:
            inputs: an iterable of inputs, each as for :meth:`build` (read once, into a list).
            threads: the most threads ranking and packing at once; ``None`` (default) for every
                core (:func:`bugcontext.core.limits.cores`). At most one per input is started, and
                at most ``limits.max_threads`` (a larger request is clamped, said once on
                standard error).
            errors: ``"raise"`` (default): the first input, in input order, whose build raises
                ends the call with that exception, as the list comprehension would (later
                inputs are not read). ``"return"``: that input's exception object (an
                ``Exception``; ``KeyboardInterrupt`` and other ``BaseException`` always
                propagate) takes its place in the list and the other inputs are built.

        Returns:
            A ``list`` with one :class:`BuildResult` (or, with ``errors="return"``, exception)
            per input, in input order.

        Raises:
            InvalidInputError: ``threads`` is not ``None`` or an ``int >= 1`` (``field``
                ``"threads"``), or ``errors`` is not ``"raise"`` or ``"return"`` (``field``
                ``"errors"``); checked before any input is read.
            InvalidCandidateError, InvalidInputError, ResourceLimitError: with
                ``errors="raise"``, the first failing input's error, as :meth:`build` raises it.
        """
        count, return_errors = batch_options(threads, errors, self.limits)
        batch = list(inputs)
        built = _core.build_many(batch, self._arguments, min(count, max(len(batch), 1)), return_errors)
        out: list[BuildResult | Exception] = []
        for entry in built:
            if isinstance(entry, Exception):
                out.append(entry)
                continue
            result, ranks, windows = entry
            counter = self.counter(result.cost)
            try:
                out.append(finish(result, ranks, None if counter is None else counter.count_one, windows))
            except Exception as exc:  # as the loop of build would see it
                if not return_errors:
                    raise
                out.append(exc)
        return out

    def _arguments(
        self, input: object
    ) -> tuple[Sequence[Any], int, list[str], int, Cost, int, TokenCounter | None]:
        """The engine's arguments for one input, its top level checked (``normalize_input``)."""
        candidates, budget, failure_files, cost = normalize_input(input, self.max_candidates, self.cost)
        return (
            candidates,
            clamp_u64(budget),
            failure_files,
            clamp_u64(self.max_total_chars),
            cost,
            budget,
            self.counter(cost),
        )

    def cache_key(self, input: object, *, verify: Callable[[str], bytes | None] | None = None) -> str:
        """The cache key of ``input``: 64 lower-case hex digits of SHA-256 over its candidates
        in input order (canonical path, line range, SHA-256 of the content, reason, score as
        float64 and, when some score is an ``int`` or ``-0.0``, every score's exact type and
        value), the budget, the canonical failing files, the cost model (the input's, else the
        builder's) and :data:`bugcontext.core.digest.POLICY_VERSION`, in the byte form documented in
        :mod:`bugcontext.core.digest`. Two inputs with equal keys give equal results, so a caller
        can skip a build it has already done. Validation and errors are those of :meth:`build`.

        Args:
            input: as for :meth:`build`.
            verify: the ``verify`` reader of the build the key is for (``None``: a build
                without one). A verified build's result depends on the files as the reader
                returns them, so the reader is called as :meth:`build` calls it (once per
                canonical path, in order of first appearance) and the SHA-256 of each file's
                bytes (or that it is missing) is part of the key: equal keys, equal files.

        Raises:
            InvalidInputError: ``verify`` is not callable (``field`` ``"verify"``), or as for
                :meth:`build`.
            TypeError: ``verify`` returned something other than ``bytes`` or ``None``; what
                ``verify`` raises propagates unchanged.
        """
        check_verify(verify)
        candidates, budget, failure_files, cost = normalize_input(input, self.max_candidates, self.cost)
        return _core.cache_key(
            candidates, clamp_u64(budget), failure_files, clamp_u64(self.max_total_chars), cost, verify
        )


_DEFAULT = ContextBuilder()


def build(
    input: object, *, trace: TraceTarget | None = None, verify: Callable[[str], bytes | None] | None = None
) -> BuildResult:
    """Build the context with the Rust engine and the default limits.

    See :meth:`ContextBuilder.build` for the input, result, errors, ``trace`` and ``verify``.
    """
    return _DEFAULT.build(input, trace=trace, verify=verify)


def build_many(
    inputs: Iterable[object], *, threads: int | None = None, errors: str = "raise"
) -> list[BuildResult | Exception]:
    """Build many inputs with the Rust engine and the default limits, ranking and packing them
    in parallel; equal to ``[build(x) for x in inputs]``, element by element.

    See :meth:`ContextBuilder.build_many` for the options, result and errors.
    """
    return _DEFAULT.build_many(inputs, threads=threads, errors=errors)


def cache_key(input: object, *, verify: Callable[[str], bytes | None] | None = None) -> str:
    """The cache key of ``input`` with the default settings (see
    :meth:`ContextBuilder.cache_key`; ``verify``: the build's reader)."""
    return _DEFAULT.cache_key(input, verify=verify)
