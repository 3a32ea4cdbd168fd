"""The keyword options of the context job, defined once.

:class:`ContextOptions` lists every option of a context call with its type and default;
:meth:`bugcontext.Workspace.context` adds ``deadline`` (:class:`CallOptions`) and the one-call
:func:`bugcontext.context` adds the cache's settings (:class:`OneCallOptions`). The two public
functions do not repeat the list: :func:`keyword_options` gives a function, whose last
parameter is ``options`` (keyword-only), the options' fields as its keyword-only parameters,
to the type checker (through a ``ParamSpec``) and to ``help()`` and ``inspect.signature``
alike, and hands the body one frozen options object.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

if TYPE_CHECKING:
    from bugcontext.core.trace import TraceTarget
    from bugcontext.job.sources.coverage import CoverageInput

__all__ = ["CallOptions", "ContextOptions", "OneCallOptions", "keyword_options"]


@dataclass(frozen=True, kw_only=True)
class ContextOptions:
    """The options of one context job (:meth:`bugcontext.Workspace.context` documents each)."""

    junit_xml: str | bytes | None = None
    test: str | None = None
    query: str | None = None
    issue: str | None = None
    budget: int | None = None
    cost: object = None
    engine: str = "native"
    trace: TraceTarget | None = None
    coverage: CoverageInput | None = None
    rerun: bool | str | None = None
    python: str | os.PathLike[str] | None = None
    rerun_env: Mapping[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class CallOptions(ContextOptions):
    """The options of :meth:`bugcontext.Workspace.context`: a job's, and its ``deadline``."""

    deadline: float | None = None


@dataclass(frozen=True, kw_only=True)
class OneCallOptions(ContextOptions):
    """The options of the one-call :func:`bugcontext.context`: a job's, and the cache's."""

    cache_dir: str | os.PathLike[str] | None = None
    cache: bool = True


P = ParamSpec("P")
S = TypeVar("S")
Opts = TypeVar("Opts", bound=ContextOptions)
R = TypeVar("R")


def keyword_options(
    options: Callable[P, Opts],
) -> Callable[[Callable[Concatenate[S, str, ...], R]], Callable[Concatenate[S, str, P], R]]:
    """A decorator: ``body(first, log_text, *, options)`` called as ``f(first, log_text,
    **keywords)``, the keywords being the fields of the dataclass ``options`` (its ``__init__``
    checks them: an unknown one is a ``TypeError`` naming ``f``)."""
    names = frozenset(field.name for field in fields(cast(Any, options)))

    def decorate(body: Callable[Concatenate[S, str, ...], R]) -> Callable[Concatenate[S, str, P], R]:
        @functools.wraps(body)
        def call(*args: Any, **kwargs: Any) -> R:
            chosen = options(**{name: kwargs.pop(name) for name in names & kwargs.keys()})  # type: ignore[call-arg]
            return body(*args, options=chosen, **kwargs)

        own = [p for p in inspect.signature(body).parameters.values() if p.name != "options"]
        added = inspect.signature(options).parameters.values()
        call.__signature__ = inspect.signature(body).replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        return cast(Callable[Concatenate[S, str, P], R], call)

    return decorate
