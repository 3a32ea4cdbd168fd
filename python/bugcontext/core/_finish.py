"""The last step of every build, shared by both engines: the rendered section's exact cost.

Without a template the engine's result is final (``used`` is the sum of item costs). With a
template, the section is planned in the cost's ``order`` and its blocks recorded; character
costs of blocks add up exactly, but token counts do not add up across concatenation, so the
whole section is counted and, while it exceeds the budget, the lowest-ranked item is removed
(omitted for ``budget``; the other members of its group with it, as ``group``). No text is
ever cut.

Then, for both engines and every cost model, ``missing_critical``: each failing file that has
failure windows (candidates from that file with reason ``failure``) none of which was selected,
with the omissions of those windows (why each was left out), in error order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bugcontext._core import Block, BuildResult, Candidate, Omission
from bugcontext.core.composer import plan
from bugcontext.core.evidence import MissingEvidence


def missing_evidence(
    failure_files: Sequence[str],
    windows: Sequence[Sequence[int]],
    selected: Sequence[int],
    omitted: Sequence[Omission] | Callable[[], Sequence[Omission]],
) -> tuple[MissingEvidence, ...]:
    """The failing files (parallel ``windows``: input indices of each one's failure windows)
    none of whose failure windows is in ``selected``; ``omitted`` (or a call giving them, made
    only when some file's windows were all left out) are the omissions to report."""
    if not any(windows):
        return ()
    chosen = set(selected)
    lost = [(path, w) for path, w in zip(failure_files, windows, strict=False) if w and chosen.isdisjoint(w)]
    if not lost:
        return ()
    by_index = {o.index: o for o in (omitted() if callable(omitted) else omitted)}
    return tuple(
        MissingEvidence(path, tuple(sorted((by_index[i] for i in w), key=_rank))) for path, w in lost
    )


def _rank(omission: Omission) -> int:
    return omission.rank


def finish(
    result: BuildResult,
    ranks: Sequence[int],
    count: Callable[[str], int] | None,
    windows: Sequence[Sequence[int]] = (),
) -> BuildResult:
    """Complete ``result`` (from either engine) for its cost model, and report the failing
    files whose failure evidence is missing.

    Args:
        result: the engine's result; its ``cost`` names the template, order and unit.
        ranks: the rank (0-based position in the ranked order) of each selected item.
        count: the token counter for a whole section, or ``None`` for characters.
        windows: per failing file (parallel to ``result.failure_files``), the input indices of
            its failure windows.
    """
    cost = result.cost
    if cost.template is None:
        # The omissions are asked for only when some failing file lost all its windows: the
        # engine's result makes its `Omission` objects on first use.
        missing = missing_evidence(result.failure_files, windows, result.selected, lambda: result.omitted)
        if not missing:
            return result
        return _with(
            result, result.items, result.selected, result.omitted, result.used, result.blocks, missing
        )
    items, selected, ranks = list(result.items), list(result.selected), list(ranks)
    dropped: list[Omission] = []
    while True:
        draft = _with(result, items, selected, result.omitted, 0, ())
        blocks = plan(draft, template=cost.template, line_numbers=cost.line_numbers, order=cost.order)
        text = "".join(block.text for block in blocks)
        used = len(text) if count is None else count(text)
        if used <= result.budget or not items:
            break
        item, index = items.pop(), selected.pop()
        dropped.append(Omission(index, ranks.pop(), "budget"))
        if item.group is not None:
            # A group leaves whole: its other members are omitted as "group", naming this one.
            for k in reversed(range(len(items))):
                if items[k].group is not None and items[k].group == item.group:
                    dropped.append(Omission(selected[k], ranks[k], "group", member=index))
                    del items[k], selected[k], ranks[k]
    omitted = sorted([*result.omitted, *dropped], key=lambda o: o.rank)
    placed = [Block(b.index, b.rank, b.position) for b in blocks]
    missing = missing_evidence(result.failure_files, windows, selected, omitted)
    return _with(result, items, selected, omitted, used, placed, missing)


def _with(
    result: BuildResult,
    items: Sequence[Candidate],
    selected: Sequence[int],
    omitted: Sequence[Omission],
    used: int,
    blocks: Sequence[Block],
    missing: Sequence[MissingEvidence] = (),
) -> BuildResult:
    used_chars = sum(len(item.content) for item in items)
    return BuildResult(
        items,
        selected,
        used_chars,
        bool(omitted),
        omitted,
        result.failure_files,
        result.cost,
        result.budget,
        used,
        blocks,
        missing,
    )
