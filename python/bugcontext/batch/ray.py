"""Ray Data: :func:`bugcontext.build_table` over a distributed dataset, one build per group.

Install with ``pip install 'bugcontext[ray]'``. Nothing else in the package imports this
module.

:func:`rerank` groups the dataset by the key column with the Dataset API
(``dataset.groupby(key).map_groups(..., batch_format="pyarrow")``): after the groupby every
group is whole in one batch handed to one worker (a group never spans partitions), and each
batch may hold several groups. Each worker calls :func:`~bugcontext.build_table` on its batch.
The same code runs on a laptop (``ray.init()``) and on a multi-node cluster
(``ray.init(address="auto")`` on a cluster node, or ``ray.init(address="ray://HOST:10001")``):
only the ``ray.init`` call differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bugcontext.batch.table import build_table

__all__ = ["rerank"]


def rerank(
    dataset: Any,
    *,
    group_by: str,
    budget: int | str,
    failure_files: str | None = None,
    cost: object = None,
    order_by: str | None = None,
    keep: Sequence[str] = (),
    threads: int | None = 1,
) -> Any:
    """Rank and pack every group of a Ray Dataset of candidate rows.

    Args:
        dataset: a ``ray.data.Dataset`` with the columns of :func:`~bugcontext.build_table`.
        group_by: the key column; one independent build per key.
        budget, failure_files, cost: as for :func:`~bugcontext.build_table`.
        order_by: a column that orders the rows of a group (stable sort) before the build.
            Ray's groupby does not keep the input order within a group, and a row's position in
            its group breaks rank ties, so give one (a row id) for results that do not depend on
            the shuffle. ``None``: the order Ray delivers.
        keep: input columns copied into the output (a row id, say, to join the decisions back
            to the candidates; the content is never copied unless named here).
        threads: worker threads per ``build_table`` call (default 1: Ray runs one task per
            CPU already).

    Returns:
        A ``ray.data.Dataset`` of decision rows: the ``keep`` columns, then the columns of
        ``TableResult.decisions`` (``group``, ``index``, ``rank``, ``selected``, ``order``,
        ``omission``, ``overlaps``, ``cost``). ``index`` is the row's position within its
        group after ``order_by``. Lazy, like every Dataset: errors (as raised by
        ``build_table``, with rows counted within the batch) surface when it is consumed.
    """
    kept = list(keep)
    sort_keys = [(group_by, "ascending")] + ([(order_by, "ascending")] if order_by is not None else [])

    def build_groups(batch: Any) -> Any:
        if order_by is not None:
            batch = batch.sort_by(sort_keys)
        result = build_table(
            batch, budget=budget, group_by=group_by, failure_files=failure_files, cost=cost, threads=threads
        )
        decisions = result.decisions
        for position, name in enumerate(kept):
            decisions = decisions.add_column(position, name, batch.column(name))
        return decisions

    return dataset.groupby(group_by).map_groups(build_groups, batch_format="pyarrow")
