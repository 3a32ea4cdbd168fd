"""The optional parts of the package and the packages they need.

``pip install bugcontext`` (the core) gives :func:`bugcontext.build`, ``build_many``,
``render``, the token counter, :mod:`bugcontext.reference` and the command's ``build``, with
only the core's dependencies. Everything else is an *extra* of the distribution
(:data:`EXTRAS`: its name, what it serves). Every import of an extra's package goes through
:func:`needs` (or :func:`require`), so a missing one fails on first use with one line naming
the extra, a :class:`MissingExtraError`; the command line prints that line and exits 2.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import NoReturn

#: Each extra of the distribution and the part of the package it serves.
EXTRAS: dict[str, str] = {
    "context": "the context job",
    "mcp": "the MCP server",
    "table": "the Arrow batch path (build_table, rerank)",
    "ray": "the Ray batch path (bugcontext.batch.ray)",
    "eval": "the evaluation",
}


class MissingExtraError(ImportError):
    """An optional package is not installed: ``str(error)`` is one line naming the extra that
    provides it (``the context job needs the 'context' extra (no module 're2'): install
    bugcontext with the [context] extra``); :attr:`extra` is its name, ``name`` (as for
    ``ImportError``) the missing module."""

    def __init__(self, extra: str, module: str | None) -> None:
        what = EXTRAS[extra]
        missing = f" (no module {module!r})" if module else ""
        super().__init__(
            f"{what} needs the '{extra}' extra{missing}: install bugcontext with the [{extra}] extra",
            name=module,
        )
        self.extra = extra


class Unavailable:
    """What a public name of a missing extra stands for (``bugcontext.Workspace`` without the
    context extra): calling it, or reading any of its attributes but the special ones, raises
    the :class:`MissingExtraError` of the failed import, one line naming the extra."""

    def __init__(self, name: str, error: MissingExtraError) -> None:
        self._name = name
        self._extra = error.extra
        self._module = error.name

    def _error(self) -> MissingExtraError:
        return MissingExtraError(self._extra, self._module)

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise self._error()

    def __getattr__(self, attribute: str) -> NoReturn:
        if attribute.startswith("__") and attribute.endswith("__"):
            raise AttributeError(attribute)  # (probes such as copy's and inspect's)
        raise self._error()

    def __repr__(self) -> str:
        return f"<{self._name}, unavailable: {self._error()}>"


@contextmanager
def needs(extra: str) -> Iterator[None]:
    """A block that imports packages of ``extra`` (a key of :data:`EXTRAS`): a module that is
    not installed raises :class:`MissingExtraError` naming the extra instead of
    ``ModuleNotFoundError``. A missing module of this package itself is not caught."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}")
    try:
        yield
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] == "bugcontext":
            raise
        raise MissingExtraError(extra, exc.name) from exc


def require(module: str, extra: str) -> ModuleType:
    """The module ``module`` (a dotted name), imported; :class:`MissingExtraError` naming
    ``extra`` if it (or a package it imports) is not installed."""
    with needs(extra):
        return importlib.import_module(module)
