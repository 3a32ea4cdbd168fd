"""The deadline of the current call, checked cooperatively inside the context job's long loops.

A caller that gives the job a deadline (``Workspace.context(deadline=...)``, the MCP server's
call time limit) sets it for the thread doing the work (:func:`bounded`); the loops of the
job's stages that can run long (the files walked and read, the search index built, the
symbols and references analysed, the hops followed) call :func:`check` (or :func:`checked`
around an iterable), which raises ``TimeoutError`` once the deadline has passed. Work abandoned
by its caller thus stops within one iteration of such a loop, not at the end of its stage.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

__all__ = ["DeadlinePassed", "bounded", "check", "checked"]

_T = TypeVar("_T")

_CURRENT: contextvars.ContextVar[float | None] = contextvars.ContextVar("bugcontext_deadline", default=None)


class DeadlinePassed(TimeoutError):
    """The call's time limit (its deadline) passed while its work ran."""

    def __init__(self) -> None:
        super().__init__("the call's time limit passed")


@contextmanager
def bounded(deadline: float | None) -> Iterator[None]:
    """Make ``deadline`` (a ``time.monotonic()`` value, ``None``: none) the deadline that
    :func:`check` enforces in this thread (this context) until the block ends; an earlier
    deadline already set stays in force when it is sooner."""
    outer = _CURRENT.get()
    if deadline is None or (outer is not None and outer <= deadline):
        yield
        return
    token = _CURRENT.set(deadline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def check() -> None:
    """Raise :class:`DeadlinePassed` (a ``TimeoutError``) once the current deadline
    (:func:`bounded`) has passed; nothing when there is none. Cheap: a context variable and a
    clock read."""
    deadline = _CURRENT.get()
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlinePassed


def checked(items: Iterable[_T], every: int = 1) -> Iterator[_T]:
    """The items of ``items``, :func:`check` called before every ``every``-th one (the first
    included)."""
    if _CURRENT.get() is None:
        yield from items
        return
    for count, item in enumerate(items):
        if count % every == 0:
            check()
        yield item
