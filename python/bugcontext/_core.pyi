"""Type stubs for the Rust extension module ``bugcontext._core``."""

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar, final

from bugcontext.core.cost import Cost
from bugcontext.core.evidence import MissingEvidence

__all__ = [
    "MAX_LINE",
    "POLICY_VERSION",
    "SECRET_KINDS",
    "Block",
    "BuildInput",
    "BuildResult",
    "Candidate",
    "Omission",
    "TokenCounter",
    "_panic",
    "build",
    "build_many",
    "build_table",
    "cache_key",
    "install_secret_rules",
    "python_outline",
    "render_block",
    "secret_kinds",
    "secret_spans",
]

MAX_LINE: int
POLICY_VERSION: str

@final
class Candidate:
    """A proposed window: ``path`` lines ``start..end`` (1-based, closed) with their text.

    Keyword-only and optional: ``group`` (packed whole with its group), and the provenance
    ``source_sha256`` (SHA-256 of the bytes of the file the content was read from, 64
    lower-case hex digits) and ``source_id`` (the source that proposed it); see
    :mod:`bugcontext.core.provenance`. Immutable, compared by value, hashable, picklable. The
    constructor does not validate; ``build`` does, naming the candidate's index.
    """

    __match_args__: ClassVar[tuple[str, str, str, str, str, str]]
    @property
    def path(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def content(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def score(self) -> int | float: ...
    @property
    def group(self) -> Any: ...
    @property
    def source_sha256(self) -> str | None: ...
    @property
    def source_id(self) -> str | None: ...
    def __new__(
        cls,
        path: str,
        start: int,
        end: int,
        content: str,
        reason: str,
        score: float,
        *,
        group: Any = None,
        source_sha256: str | None = None,
        source_id: str | None = None,
    ) -> Candidate: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Omission:
    """A left-out candidate: input ``index``, 0-based ``rank``, ``reason`` ("overlap",
    "budget", "group" or "stale") and, for an overlap, the input index of the selected window
    it hits; for a group, the member that did not fit."""

    @property
    def index(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def reason(self) -> str: ...
    @property
    def overlaps(self) -> int | None: ...
    @property
    def member(self) -> int | None: ...
    def __new__(
        cls, index: int, rank: int, reason: str, overlaps: int | None = None, member: int | None = None
    ) -> Omission: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Block:
    """Where a selected item stands in the rendered section: input ``index``, selection
    ``rank`` (position in ``items``) and render ``position``."""

    @property
    def index(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def position(self) -> int: ...
    def __new__(cls, index: int, rank: int, position: int) -> Block: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class BuildResult:
    """The result of a build (see ``bugcontext.ContextBuilder.build``)."""

    @property
    def items(self) -> tuple[Candidate, ...]: ...
    @property
    def selected(self) -> tuple[int, ...]: ...
    @property
    def used_chars(self) -> int: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def omitted(self) -> tuple[Omission, ...]: ...
    @property
    def failure_file(self) -> str | None: ...
    @property
    def failure_files(self) -> tuple[str, ...]: ...
    @property
    def cost(self) -> Cost: ...
    @property
    def budget(self) -> int: ...
    @property
    def used(self) -> int: ...
    @property
    def blocks(self) -> tuple[Block, ...]: ...
    @property
    def missing_critical(self) -> tuple[MissingEvidence, ...]: ...
    @property
    def digest(self) -> str: ...
    def __new__(
        cls,
        items: Iterable[Candidate],
        selected: Iterable[int],
        used_chars: int,
        truncated: bool,
        omitted: Iterable[Omission],
        failure_files: Iterable[str],
        cost: Cost,
        budget: int,
        used: int,
        blocks: Iterable[Block],
        missing_critical: Iterable[MissingEvidence] | None = None,
    ) -> BuildResult: ...
    def to_dict(self) -> dict[str, Any]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class BuildInput:
    """The input of a build: candidates, the budget (``max_chars`` in characters, or ``budget``
    in the cost's unit), the optional failure file and cost model."""

    @property
    def candidates(self) -> Any: ...
    @property
    def max_chars(self) -> int | None: ...
    @property
    def failure_file(self) -> str | None: ...
    @property
    def failure_files(self) -> Iterable[str] | None: ...
    @property
    def budget(self) -> int | None: ...
    @property
    def cost(self) -> Cost | Mapping[str, Any] | None: ...
    def __new__(
        cls,
        candidates: Iterable[Any],
        max_chars: int | None = None,
        failure_file: str | None = None,
        *,
        failure_files: Iterable[str] | None = None,
        budget: int | None = None,
        cost: Cost | Mapping[str, Any] | None = None,
    ) -> BuildInput: ...
    def __eq__(self, other: object, /) -> bool: ...

def build(
    candidates: Sequence[Any],
    budget: int,
    failure_files: Sequence[str],
    max_total_chars: int,
    cost: Cost,
    budget_obj: int,
    counter: TokenCounter | None,
    verify: Callable[[str], bytes | None] | None = None,
) -> tuple[BuildResult, list[int], list[list[int]]]: ...
def build_many(
    inputs: list[Any],
    check: Callable[[Any], tuple[Sequence[Any], int, list[str], int, Cost, int, TokenCounter | None]],
    threads: int,
    return_errors: bool,
) -> list[tuple[BuildResult, list[int], list[list[int]]] | Exception]: ...
def build_table(
    table: Any,
    *,
    group_by: str | None,
    budget: int,
    budget_column: str | None,
    failure_files: str | None,
    encoding: str | None,
    max_candidates: int,
    max_total_chars: int,
    threads: int | None,
) -> tuple[Any, Any]: ...
def cache_key(
    candidates: Sequence[Any],
    budget: int,
    failure_files: Sequence[str],
    max_total_chars: int,
    cost: Cost,
    verify: Callable[[str], bytes | None] | None = None,
) -> str: ...
def render_block(
    path: str,
    start: int,
    end: int,
    content: str,
    reason: str,
    *,
    failing: bool,
    template: str,
    line_numbers: bool,
    source_id: object = None,
) -> str:
    """One item as a block of a prompt section, rendered in Rust: the same text as
    ``bugcontext.core.composer.render_block`` (which it calls for a path or content with lone
    surrogates) for the arguments a build passes: lines in 1..2**31-1, ``bool`` flags. Its
    argument checks are PyO3's: lines are unsigned 32-bit (``OverflowError`` outside
    0..2**32-1; ``True``/``False`` are read as 1/0) and the flags must be ``bool``
    (``TypeError``), where the Python renderer takes any ``int`` line but no ``bool``, and any
    truthy flag."""

SECRET_KINDS: list[str]

def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """The secrets in ``text``: ``(start, end, kind)`` for characters (code points)
    ``start..end`` (half-open), sorted, never overlapping; ``kind`` is one of
    ``secret_kinds()``. Linear in the length of ``text``. Raises ``TypeError`` for a
    non-``str``."""

def python_outline(text: str) -> list[tuple[int, int, int, int, str]] | None:
    """The statements of the Python module ``text`` and of its classes' bodies, as
    ``(depth, kind, start, end, name)``: lines ``start..end`` (1-based, closed, decorators
    included), ``kind`` 0 a function, 1 a class, 2 an import, 3 another statement, ``depth``
    the number of classes around it, ``name`` a function's or class's name (else ``""``); in
    file order, a class before its body. ``None`` when
    the text is not read exactly as the interpreter would (then parse it with ``ast``).
    Linear in the length of ``text``. Raises ``TypeError`` for a non-``str``."""

def install_secret_rules(rules: list[tuple[str, str, str, bool, str | None]]) -> None:
    """Compile ``rules`` (``(kind, pattern, check, group, not_followed_by)`` each) with the
    built-in ones (``SECRET_KINDS``) and use them from now on. Raises ``ValueError`` naming the
    rule that does not compile or names an unknown check (the rules in use are kept)."""

def secret_kinds() -> list[str]:
    """The kinds of the rules in use, installed ones first, in rule order."""

@final
class TokenCounter:
    """Exact token counts in one encoding (``"o200k_base"`` or ``"cl100k_base"``), cached by
    content.

    A count is the number of tokens of the encoding with no special tokens (text such as
    ``"<|endoftext|>"`` counts as ordinary text): ``len(encoding.encode_ordinary(text))`` in
    tiktoken, whose handling of lone surrogates it also follows. The encodings are compiled in:
    nothing is downloaded. Counts are cached by a 128-bit hash of the text; the cache grows
    until ``clear_cache()``. Thread-safe.
    """

    def __new__(cls, encoding: str) -> TokenCounter: ...
    @property
    def encoding(self) -> str:
        """The encoding's tiktoken name."""
    @property
    def cache_size(self) -> int:
        """Number of distinct texts whose count is cached."""
    def count(self, texts: Iterable[str]) -> list[int]:
        """The token count of each text, in order; texts not yet cached are counted, all at
        once with the GIL released. A ``str`` itself is rejected."""
    def count_one(self, text: str) -> int:
        """The token count of one text, through the cache."""
    def clear_cache(self) -> None:
        """Forget every cached count."""
def _panic(message: str) -> None:
    """For the tests: panics with ``message`` inside the guard every entry point runs in, so
    the panic is raised as ``bugcontext.core.errors.InternalError``."""
