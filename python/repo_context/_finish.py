"""The last step of every build, shared by both engines: the rendered section's exact cost.

Without a template the engine's result is final (``used`` is the sum of item costs). With a
template, the section is planned in the cost's ``order`` and its blocks recorded; character
costs of blocks add up exactly, but token counts do not add up across concatenation, so the
whole section is counted and, while it exceeds the budget, the lowest-ranked item is removed
(omitted for ``budget``). No text is ever cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._core import Block, BuildResult, Candidate, Omission
from .composer import plan


def finish(result: BuildResult, ranks: Sequence[int], count: Callable[[str], int] | None) -> BuildResult:
    """Complete ``result`` (from either engine) for its cost model.

    Args:
        result: the engine's result; its ``cost`` names the template, order and unit.
        ranks: the rank (0-based position in the ranked order) of each selected item.
        count: the token counter for a whole section, or ``None`` for characters.
    """
    cost = result.cost
    if cost.template is None:
        return result
    items, selected, ranks = list(result.items), list(result.selected), list(ranks)
    dropped: list[Omission] = []
    while True:
        draft = _with(result, items, selected, result.omitted, 0, ())
        blocks = plan(draft, template=cost.template, line_numbers=cost.line_numbers, order=cost.order)
        text = "".join(block.text for block in blocks)
        used = len(text) if count is None else count(text)
        if used <= result.budget or not items:
            break
        items.pop()
        dropped.append(Omission(selected.pop(), ranks.pop(), "budget"))
    omitted = sorted([*result.omitted, *dropped], key=lambda o: o.rank)
    placed = [Block(b.index, b.rank, b.position) for b in blocks]
    return _with(result, items, selected, omitted, used, placed)


def _with(
    result: BuildResult,
    items: Sequence[Candidate],
    selected: Sequence[int],
    omitted: Sequence[Omission],
    used: int,
    blocks: Sequence[Block],
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
    )
