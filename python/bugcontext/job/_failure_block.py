"""The failure at the head of a context section: one block per failing test used.

A context section (:attr:`bugcontext.ContextResult.section`) opens with the failure itself, so
that a prompt built from the section alone says what failed: for each failing test the context
was built for (the chosen test; with a parametrised test's base id, each failed
parametrisation), up to ``Limits.max_failure_blocks``, one block giving the test id, the
exception type and its message, in the section's template:

* ``"markdown"`` (and without a template)::

      ### Failure: {test id}
      {fence}text
      {exception}: {message}
      {fence}

  followed by one empty line (``fence`` as :func:`bugcontext.core.composer.fence` makes it; a
  collection error says ``(collection error)`` after the id).

* ``"xml"``: ``<failure test=".." exception=".." phase="..">{message}</failure>`` and a
  newline, escaped as the snippets are (a string XML cannot carry is base64: ``test-base64``,
  ``encoding="base64"``).

The test id and the message pass through the secret screen first
(:func:`bugcontext.core.secrets.redact`: each secret becomes ``[REDACTED: kind]``); a message
longer than ``Limits.max_failure_message_chars`` characters is then cut there and ends with the
line ``[... N characters cut]``, and a test id longer than ``Limits.max_failure_test_chars``
is cut there and ends with `` [... N characters cut]`` on its line (the only texts of a section
ever cut; the whole id is kept where it is matched).

Each block is costed with the build's cost model (characters or tokens of the rendered block
with a template, of its ``exception: message`` text without one), and the blocks are inside the
budget like every other block: :meth:`bugcontext.Workspace.context` takes the blocks that fit,
in order, and builds the code windows in what is left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bugcontext.core._cut import cut_point
from bugcontext.core.composer import _XML_INVALID, _b64, _xml_attr, _xml_text, fence, header_path, render
from bugcontext.core.cost import Cost
from bugcontext.core.limits import Limits, resolve
from bugcontext.core.secrets import redact
from bugcontext.core.types import BuildResult
from bugcontext.job.sources.reports import TestFailure
from bugcontext.job.sources.runs import FailingTest, UnknownTestError, select_test

__all__ = [
    "FailureBlock",
    "build_with_failures",
    "cut_message",
    "cut_test",
    "failure_blocks",
    "fit_blocks",
    "used_failures",
]


@dataclass(frozen=True)
class FailureBlock:
    """One failure block of a context section.

    ``test`` is the test's id (its pytest node id, else its report name, else ``None``) and
    ``exception`` its exception type (``None`` when the log names none), both redacted, the
    test id cut to ``max_failure_test_chars`` (then ending with the marker, ``test_cut`` the
    characters cut from it);
    ``message`` the exception's message, redacted and cut to ``max_failure_message_chars``
    (then ending with the marker); ``phase`` the phase it failed in (``"collect"``, ``"setup"``,
    ``"call"``, ``"teardown"`` or ``None``); ``cut`` the number of characters cut from the
    message (0 when none); ``kinds`` the kinds of the secrets redacted in it; ``text`` the
    rendered block; ``cost`` its cost in the budget's unit.
    """

    test: str | None
    exception: str | None
    message: str
    phase: str | None
    cut: int
    kinds: tuple[str, ...]
    text: str
    cost: int
    test_cut: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``{"test", "test_cut", "exception", "message", "phase", "cut", "cost",
        "text"}``."""
        return {
            "test": self.test,
            "test_cut": self.test_cut,
            "exception": self.exception,
            "message": self.message,
            "phase": self.phase,
            "cut": self.cut,
            "cost": self.cost,
            "text": self.text,
        }


def cut_message(message: str, maximum: int) -> tuple[str, int]:
    """``message`` cut to its first ``maximum`` characters (code points), then a newline and
    ``[... N characters cut]`` (``N`` the characters left out); unchanged when it fits. Returns
    the text and ``N`` (0 when nothing was cut)."""
    if len(message) <= maximum:
        return message, 0
    kept = cut_point(message, maximum)
    left_out = len(message) - kept
    return f"{message[:kept]}\n[... {left_out} characters cut]", left_out


def cut_test(test: str, maximum: int) -> tuple[str, int]:
    """The test id ``test`` cut to its first ``maximum`` characters, then
    `` [... N characters cut]`` on the same line (a block's heading stays one line); unchanged
    when it fits. Returns the text and ``N`` (0 when nothing was cut)."""
    if len(test) <= maximum:
        return test, 0
    kept = cut_point(test, maximum)
    left_out = len(test) - kept
    return f"{test[:kept]} [... {left_out} characters cut]", left_out


def used_failures(
    failing_tests: Sequence[FailingTest], chosen: TestFailure | None, test: str | None
) -> list[TestFailure]:
    """The failure reports a context was built for: the chosen failure ``chosen`` first, then,
    when ``test`` is a parametrised test's base id, the failure of each other failed
    parametrisation (:func:`bugcontext.job.sources.runs.select_test`), in summary order."""
    if chosen is None:
        return []
    used = [chosen]
    try:
        selected = select_test(failing_tests, test)
    except UnknownTestError:
        return used
    if selected is None:
        return used
    for other in failing_tests:
        if other.failure is not chosen and any(other.failure is report for report in selected.others):
            used.append(other.failure)
    return used


def _count(text: str, cost: Cost) -> int:
    if cost.unit == "chars":
        return len(text)
    from bugcontext._core import TokenCounter

    return TokenCounter(str(cost.encoding)).count_one(text)


def _render(test: str | None, exception: str | None, message: str, phase: str | None, template: str) -> str:
    if template == "xml":
        shown = test or ""
        where = f'test-base64="{_b64(shown)}"' if _XML_INVALID.search(shown) else f'test="{_xml_attr(shown)}"'
        head = f'<failure {where} exception="{_xml_attr(exception or "")}" phase="{_xml_attr(phase or "")}"'
        if _XML_INVALID.search(message):
            return f'{head} encoding="base64">{_b64(message)}</failure>\n'
        return f"{head}>{_xml_text(message)}</failure>\n"
    name = header_path(test) if test else "(unnamed)"
    about = " (collection error)" if phase == "collect" else ""
    body = f"{exception or 'failure'}: {message}" if message else exception or "failure"
    ticks = fence(body)
    nl = "" if body.endswith("\n") else "\n"
    return f"### Failure: {name}{about}\n{ticks}text\n{body}{nl}{ticks}\n\n"


def failure_blocks(
    failures: Sequence[TestFailure], cost: Cost, limits: Limits | None = None
) -> tuple[FailureBlock, ...]:
    """The failure blocks of ``failures`` (at most ``limits.max_failure_blocks`` of them, in
    order), rendered in ``cost``'s template (Markdown without one) and costed in its unit: the
    rendered block with a template, the ``exception: message`` text without one. ``limits``
    defaults to ``DEFAULT_LIMITS``."""
    limits = resolve(limits)
    template = cost.template or "markdown"
    blocks: list[FailureBlock] = []
    for failure in failures[: limits.max_failure_blocks]:
        kinds: list[str] = []
        fields: list[str | None] = []
        for value in (failure.test_id or failure.name, failure.exception_type, failure.message):
            if value is None:
                fields.append(None)
                continue
            screened = redact(value)
            kinds.extend(screened.kinds)
            fields.append(screened.text)
        whole_test, exception, whole = fields
        test, test_cut = (
            (None, 0) if whole_test is None else cut_test(whole_test, limits.max_failure_test_chars)
        )
        message, cut = cut_message(whole or "", limits.max_failure_message_chars)
        text = _render(test, exception, message, failure.phase, template)
        body = f"{exception or 'failure'}: {message}" if message else exception or "failure"
        counted = text if cost.template is not None else body
        blocks.append(
            FailureBlock(
                test,
                exception,
                message,
                failure.phase,
                cut,
                tuple(kinds),
                text,
                _count(counted, cost),
                test_cut,
            )
        )
    return tuple(blocks)


def fit_blocks(blocks: Sequence[FailureBlock], budget: int) -> tuple[tuple[FailureBlock, ...], int]:
    """The leading blocks of ``blocks`` whose costs add up to at most ``budget`` (a block that
    does not fit ends the run: the blocks keep their order), and what they cost."""
    kept: list[FailureBlock] = []
    spent = 0
    for block in blocks:
        if spent + block.cost > budget:
            break
        kept.append(block)
        spent += block.cost
    return tuple(kept), spent


def section_cost(text: str, cost: Cost) -> int:
    """The cost of the whole section ``text`` in ``cost``'s unit."""
    return _count(text, cost)


def build_with_failures(
    failures: Sequence[TestFailure],
    cost: Cost,
    budget: int,
    build: Callable[[int, bool], BuildResult],
    *,
    limits: Limits | None = None,
    traced: bool = False,
) -> tuple[BuildResult, tuple[FailureBlock, ...], int]:
    """Build a section that opens with the failure blocks of ``failures``, all within
    ``budget`` (in ``cost``'s unit): the blocks that fit (:func:`fit_blocks`), then the windows
    built by ``build(room, final)`` in what the blocks leave (``room``; ``final`` says whether
    this build is the one kept, the one a trace records). With tokens and a template, whose
    counts do not add up across concatenation, the whole section is counted and the windows
    built again in less until it fits (and once more with ``final`` when ``traced``). Returns
    the build result, the blocks and the cost of the whole section."""
    blocks, spent = fit_blocks(failure_blocks(failures, cost, limits), budget)
    counted = bool(blocks) and cost.unit == "tokens" and cost.template is not None
    result = build(budget - spent, not counted)
    if not counted:
        return result, blocks, spent + result.used
    head = "".join(block.text for block in blocks)
    total = section_cost(head + render(result), cost)
    while total > budget and result.budget > 0:
        result = build(max(0, result.budget - (total - budget)), False)
        total = section_cost(head + render(result), cost)
    if traced:
        result = build(result.budget, True)
    return result, blocks, total
