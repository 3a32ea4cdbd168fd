"""Top-level input handling shared by both engines, and the path rule.

Both :mod:`bugcontext.core.reference` and the native builder call :func:`normalize_input`, so the
top-level fields (``candidates``, ``max_chars``, ``failure_file``) are validated identically and
before any candidate. Per-candidate validation is done by each engine on its own (the Rust
engine in ``src/python/``, the reference in ``reference.py``) and held equal by the
differential tests.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bugcontext._core import BuildInput, TokenCounter
from bugcontext.core.cost import Cost
from bugcontext.core.errors import InvalidInputError
from bugcontext.core.limits import DEFAULT_LIMITS, Limits, clamp_threads, limit_error, resolve

#: The default limit on the number of candidates in one build: ``Limits.max_candidates``
#: (:mod:`bugcontext.core.limits`, where it is set).
DEFAULT_MAX_CANDIDATES = DEFAULT_LIMITS.max_candidates
#: The default limit on the total content of one build, in characters (code points):
#: ``Limits.max_total_chars`` (:mod:`bugcontext.core.limits`, where it is set).
DEFAULT_MAX_TOTAL_CHARS = DEFAULT_LIMITS.max_total_chars

_ALIASES = {"max_chars": "maxChars", "failure_file": "failureFile", "failure_files": "failureFiles"}
_KEYS = {"candidates", "budget", "cost", *_ALIASES, *_ALIASES.values()}
_U64_MAX = (1 << 64) - 1


class PathProblem(ValueError):
    """Raised by :func:`canonical_path`; its single argument is the problem text."""


def canonical_path(path: object) -> str:
    """Return the canonical form of a repository-relative path, or raise :class:`PathProblem`.

    Canonical form: split on ``/``, drop empty and ``.`` segments, join with ``/``
    (``./src//a.py`` -> ``src/a.py``, ``a/`` -> ``a``). Rejected, in this order: a non-``str``,
    ``""``, a NUL, a backslash, an absolute path (leading ``/``), any ``..`` segment, and a path
    with nothing left after canonicalisation. There is no case folding.
    """
    if not isinstance(path, str):
        raise PathProblem(f"must be a str, not {type(path).__name__}")
    path = str.__str__(path)  # the text itself: a str subclass's own methods play no part
    if path == "":
        raise PathProblem("must not be empty")
    if "\x00" in path:
        raise PathProblem("must not contain NUL")
    if "\\" in path:
        raise PathProblem("must not contain a backslash")
    if path.startswith("/"):
        raise PathProblem("must be relative, not absolute")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise PathProblem("must not contain a '..' segment")
    if not parts:
        raise PathProblem("names no file after canonicalisation")
    return "/".join(parts)


def _lookup(data: Mapping[Any, Any], key: str, required: bool) -> Any:
    alias = _ALIASES.get(key)
    if alias is not None and key in data and alias in data:
        raise InvalidInputError(key, f"given twice, as {key!r} and as {alias!r}")
    if key in data:
        return data[key]
    if alias is not None and alias in data:
        return data[alias]
    if required:
        raise InvalidInputError(key, "is missing")
    return None


def normalize_input(
    data: object, max_candidates: int, default_cost: Cost
) -> tuple[Sequence[Any], int, list[str], Cost]:
    """Validate the top level of a build input.

    Args:
        data: a :class:`BuildInput` or a mapping with keys ``candidates``, ``budget`` or
            ``max_chars`` (alias ``maxChars``), and optionally ``cost`` and ``failure_file``
            (alias ``failureFile``) or ``failure_files`` (alias ``failureFiles``).
        max_candidates: the candidate-count limit.
        default_cost: the builder's cost model, used when the input names none.

    Returns:
        ``(candidates, budget, failure_files, cost)``: a list snapshot of the candidates, the
        budget as an ``int`` in the cost's unit, the canonical failing files in error order
        (repeats dropped; ``failure_file`` is the one-element form), and the cost model.

    Raises:
        InvalidInputError: with ``index=None`` and the offending field.
        ResourceLimitError: more than ``max_candidates`` candidates.
    """
    if isinstance(data, BuildInput):
        candidates, max_chars, failure_file = data.candidates, data.max_chars, data.failure_file
        failure_files, budget, cost = data.failure_files, data.budget, data.cost
    elif isinstance(data, Mapping):
        for key in data:
            if key not in _KEYS:
                raise InvalidInputError(str(key), "is not a known input key")
        candidates = _lookup(data, "candidates", True)
        max_chars = _lookup(data, "max_chars", False)
        failure_file = _lookup(data, "failure_file", False)
        failure_files = _lookup(data, "failure_files", False)
        budget, cost = data.get("budget"), data.get("cost")
    else:
        raise InvalidInputError("input", f"must be a BuildInput or a mapping, not {type(data).__name__}")

    if isinstance(candidates, (str, bytes, bytearray, Mapping)) or not isinstance(candidates, Iterable):
        raise InvalidInputError(
            "candidates", f"must be a list of candidates, not {type(candidates).__name__}"
        )
    # A snapshot: both engines read exactly these candidates, whatever the caller's code run
    # during the build does to the original (a list subclass's own __iter__ is honoured). The
    # snapshot holds at most one candidate more than the count limit (checked below, after the
    # other top-level fields).
    seq: Sequence[Any]
    if type(candidates) is list or type(candidates) is tuple:  # its own length; a fast copy
        seq = list(candidates if len(candidates) <= max_candidates else candidates[: max_candidates + 1])
    else:
        seq = list(itertools.islice(candidates, max_candidates + 1))

    model = default_cost if cost is None else Cost.parse(cost)
    if max_chars is not None and budget is not None:
        raise InvalidInputError("budget", "give budget or max_chars, not both")
    if max_chars is not None:
        if model.unit != "chars":
            raise InvalidInputError(
                "max_chars", f"is a character budget; with unit {model.unit!r} give budget"
            )
        field, value = "max_chars", max_chars
    elif budget is not None:
        field, value = "budget", budget
    else:
        raise InvalidInputError("max_chars", "is missing (give max_chars, or budget with a cost)")
    amount = budget_int(value, field)

    failing = _failing_files(failure_file, failure_files)

    if len(seq) > max_candidates:
        # A plain list or tuple tells its length; of another iterable, what was taken.
        if type(candidates) is list or type(candidates) is tuple:
            raise _too_many(len(candidates), max_candidates, exact=True)
        raise _too_many(len(seq), max_candidates, exact=False)
    return seq, amount, failing, model


def _too_many(count: int, maximum: int, *, exact: bool) -> Exception:
    """The candidate-count error (``field`` ``"candidates"``, ``limit`` ``"max_candidates"``)."""
    return limit_error("candidates", "max_candidates", "", count, maximum, exact=exact)


def _failing_files(failure_file: object, failure_files: object) -> list[str]:
    """The canonical failing files, in order, repeats dropped."""
    if failure_file is not None and failure_files is not None:
        raise InvalidInputError("failure_files", "give failure_file or failure_files, not both")
    if failure_file is not None:
        try:
            return [canonical_path(failure_file)]
        except PathProblem as exc:
            raise InvalidInputError("failure_file", str(exc)) from None
    if failure_files is None:
        return []
    if isinstance(failure_files, (str, bytes, Mapping)) or not isinstance(failure_files, Iterable):
        kind = type(failure_files).__name__
        raise InvalidInputError("failure_files", f"must be a list of paths, not {kind}")
    out: list[str] = []
    for i, path in enumerate(list(failure_files)):
        try:
            canonical = canonical_path(path)
        except PathProblem as exc:
            raise InvalidInputError("failure_files", f"item {i}: {exc}") from None
        if canonical not in out:
            out.append(canonical)
    return out


#: What ``build_many`` does with an input whose build raises: ``"raise"`` it (the first, in input
#: order, as ``[build(x) for x in inputs]`` would) or ``"return"`` the exception in its place.
ERRORS = ("raise", "return")


def batch_options(threads: object, errors: object, limits: Limits | None = None) -> tuple[int, bool]:
    """Validate ``build_many``'s options; return the thread count and whether errors are returned.

    ``threads`` is ``None`` (every core, :func:`bugcontext.core.limits.cores`) or an ``int >= 1``
    (``bool`` rejected); ``errors`` is ``"raise"`` or ``"return"``. The count is at most
    ``limits.max_threads`` (a larger request is clamped and said on standard error:
    :func:`bugcontext.core.limits.clamp_threads`).

    Raises:
        InvalidInputError: ``field`` ``"threads"`` or ``"errors"``, ``index`` ``None``.
    """
    if threads is None:
        count = clamp_threads(None, limits)
    else:
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise InvalidInputError("threads", f"must be an int or None, not {type(threads).__name__}")
        count = int(threads)
        if count < 1:
            raise InvalidInputError("threads", f"must be >= 1, got {show_int(count)}")
    if not isinstance(errors, str) or str.__str__(errors) not in ERRORS:
        shown = repr(str.__str__(errors)) if isinstance(errors, str) else type(errors).__name__
        raise InvalidInputError("errors", f"must be 'raise' or 'return', got {shown}")
    return clamp_threads(count, limits), str.__str__(errors) == "return"


def line_int(value: object, field: str) -> int:
    """Return ``value`` as an ``int`` (``bool`` rejected, ``__index__`` objects accepted)."""
    if isinstance(value, bool):
        raise InvalidInputError(field, "must be an int, not bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidInputError(field, f"must be an int, not {type(value).__name__}") from None


def budget_int(value: object, field: str = "budget") -> int:
    """``value`` as a budget: an ``int`` (not a ``bool``) ``>= 0``. Raises
    ``InvalidInputError(field, ...)`` otherwise, in the words of every other budget check."""
    amount = line_int(value, field)
    if amount < 0:
        raise InvalidInputError(field, f"must be >= 0, got {show_int(amount)}")
    return amount


def show_int(value: int) -> str:
    """``str(value)``, or a stand-in for an integer too long for Python to print (its digit
    limit, ``sys.get_int_max_str_digits``): error messages must never fail themselves."""
    try:
        return str(value)
    except ValueError:
        return "an integer too large to print"


def clamp_u64(value: int) -> int:
    """Clamp a non-negative budget to what the native engine holds (no total can exceed it)."""
    return min(value, _U64_MAX)


def builder_cost(cost: object, template: object) -> Cost:
    """A builder's cost model from its ``cost`` and ``template`` arguments."""
    model = Cost.parse(cost)
    if template is None:
        return model
    if model.template not in (None, template):
        raise InvalidInputError("template", f"conflicts with cost.template {model.template!r}")
    return Cost(model.unit, model.encoding, template, model.line_numbers, model.order)  # type: ignore[arg-type]


def check_limits(limits: object, max_candidates: object, max_total_chars: object) -> Limits:
    """A builder's limits: ``limits`` (a :class:`~bugcontext.core.limits.Limits`; ``None``: the
    defaults) with ``max_candidates`` and ``max_total_chars`` (each ``None`` or an
    ``int >= 0``, ``__index__`` objects accepted) in place of its own when given."""
    base = resolve(limits)  # type: ignore[arg-type]
    changes: dict[str, int] = {}
    for name, value in (("max_candidates", max_candidates), ("max_total_chars", max_total_chars)):
        if value is None:
            continue
        number = line_int(value, name)
        if number < 0:
            raise InvalidInputError(name, f"must be >= 0, got {show_int(number)}")
        changes[name] = number
    return base.replace(**changes) if changes else base


class BuilderBase:
    """What both builders share: the cost model, the limits, and one token counter (with its
    cache of counts by content hash) per encoding, kept for the builder's lifetime.

    Args (all keyword-only):
        cost: the default cost model (:class:`~bugcontext.Cost` or its mapping form); an
            input's own ``cost`` takes precedence. Default: characters, content only.
        template: shorthand for the cost's template (``"markdown"`` or ``"xml"``).
        limits: the resource limits (:class:`~bugcontext.core.limits.Limits`; default: the
            module's ``DEFAULT_LIMITS`` when the builder is made); a build uses its
            ``max_candidates`` and ``max_total_chars``.
        max_candidates: at most this many candidates per build (default
            ``limits.max_candidates``, 4,000,000): overrides ``limits``.
        max_total_chars: at most this many content characters, summed over all candidates of
            one build (default ``limits.max_total_chars``, ``2**30``): overrides ``limits``.

    Raises:
        InvalidInputError: an invalid cost, template or limit.
    """

    def __init__(
        self,
        *,
        cost: object = None,
        template: object = None,
        limits: Limits | None = None,
        max_candidates: int | None = None,
        max_total_chars: int | None = None,
    ) -> None:
        self._cost = builder_cost(cost, template)
        self._limits = check_limits(limits, max_candidates, max_total_chars)
        self._max_candidates = self._limits.max_candidates
        self._max_total_chars = self._limits.max_total_chars
        self._counters: dict[str, TokenCounter] = {}

    @property
    def limits(self) -> Limits:
        """The resource limits of this builder's builds (read-only)."""
        return self._limits

    @property
    def cost(self) -> Cost:
        """The default cost model (read-only)."""
        return self._cost

    @property
    def max_candidates(self) -> int:
        """The candidate-count limit (read-only)."""
        return self._max_candidates

    @property
    def max_total_chars(self) -> int:
        """The total-content limit in characters (read-only)."""
        return self._max_total_chars

    def counter(self, cost: Cost) -> TokenCounter | None:
        """The builder's token counter for ``cost``'s encoding, or ``None`` for characters."""
        if cost.encoding is None:
            return None
        counter = self._counters.get(cost.encoding)
        if counter is None:
            counter = self._counters[cost.encoding] = TokenCounter(cost.encoding)
        return counter
