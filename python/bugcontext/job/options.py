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
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

from bugcontext.core.composer import header_path
from bugcontext.core.errors import InvalidInputError

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

    def __post_init__(self) -> None:
        """Check the text options' types: an ``InvalidInputError`` naming the option, not a
        ``TypeError`` or ``AttributeError`` from deep inside the job."""
        _check_type("junit_xml", self.junit_xml, (str, bytes), "a str or bytes (the JUnit XML report)")
        _check_type("test", self.test, (str,), "a str (a node id or report name)")
        _check_type("query", self.query, (str,), "a str (extra search words)")
        _check_type("issue", self.issue, (str,), "a str (the issue text)")
        if not isinstance(self.engine, str) or self.engine not in ("native", "reference"):
            shown = repr(self.engine) if isinstance(self.engine, str) else type(self.engine).__name__
            raise InvalidInputError("engine", f"must be 'native' or 'reference', got {shown[:200]}")
        if self.rerun_env is not None:
            _check_environment(self.rerun_env)


def _check_environment(env: object) -> None:
    """``InvalidInputError`` (field ``rerun_env``) unless ``env`` is a mapping whose names and
    values the system can put in an environment: a name holding ``=`` or a NUL character, or
    a value holding a NUL, is refused here rather than as ``os``'s bare ``ValueError`` when
    the run starts."""
    if not isinstance(env, Mapping):
        raise InvalidInputError(
            "rerun_env", f"must be a mapping of names to values or None, not {type(env).__name__}"
        )
    for name, value in env.items():
        text = str(name)
        if "=" in text or "\0" in text:
            shown = header_path(text)
            raise InvalidInputError(
                "rerun_env", f"{shown} is not a variable name (it holds '=' or a NUL character)"
            )
        if "\0" in str(value):
            raise InvalidInputError("rerun_env", f"the value of {header_path(text)} holds a NUL character")


def _check_type(name: str, value: object, types: tuple[type, ...], what: str) -> None:
    """``InvalidInputError`` (field ``name``) unless ``value`` is ``None`` or of ``types``."""
    if value is not None and not isinstance(value, types):
        raise InvalidInputError(name, f"must be {what} or None, not {type(value).__name__}")


@dataclass(frozen=True, kw_only=True)
class CallOptions(ContextOptions):
    """The options of :meth:`bugcontext.Workspace.context`: a job's, and its ``deadline``."""

    deadline: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        deadline = self.deadline
        if deadline is not None:
            if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
                shown = type(deadline).__name__
                raise InvalidInputError("deadline", f"must be a number or None, not {shown}")
            if math.isnan(deadline):
                raise InvalidInputError("deadline", "must not be NaN (a call would never be past it)")


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
