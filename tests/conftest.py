"""Shared fixtures and contract helpers for the bugcontext test suite.

The helpers here are written from the contract (README), independently of
either engine: ``canon`` is the path canonicalisation rule, ``rank_key`` the
ranking key, ``model_build`` a deliberately naive restatement of selection,
and ``strict`` a comparison form that tells ``-0.0`` from ``0.0`` and ``1``
from ``1.0``.
"""

from __future__ import annotations

import atexit
import math
import os
import shutil
import tempfile
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
from hostile import ForeignCandidate, Idx, ProvenanceCandidate
from hypothesis import settings
from hypothesis import strategies as st

# The secret screen reads and writes its rules file (bugcontext.core.secrets) in the cache folder
# when first imported, which for this process is while the tests are collected, before any
# fixture: that file too goes under a temporary folder, never the user's cache directory.
_COLLECTION_CACHE_HOME = tempfile.mkdtemp(prefix="bugcontext-tests-cache-")
os.environ["XDG_CACHE_HOME"] = _COLLECTION_CACHE_HOME
atexit.register(shutil.rmtree, _COLLECTION_CACHE_HOME, True)

settings.register_profile("ci", deadline=None, max_examples=200, print_blob=True)
settings.register_profile("dev", deadline=None, max_examples=100)
# Mutation runs (`scripts/mutants.sh --reference`, BUGCONTEXT_HYPOTHESIS_PROFILE=mutants): the
# same examples on every run (derandomized, no example database), so that a mutant's verdict does
# not depend on the run, and a twentieth of them (see `examples`), so that a mutant takes seconds.
settings.register_profile("mutants", deadline=None, max_examples=10, derandomize=True, database=None)
MUTANTS_PROFILE = os.environ.get("BUGCONTEXT_HYPOTHESIS_PROFILE") == "mutants"
settings.load_profile("mutants" if MUTANTS_PROFILE else "ci" if os.environ.get("CI") else "dev")


def examples(n: int) -> int:
    """A test's number of Hypothesis examples: ``n``, or ``max(10, n // 20)`` in mutation runs."""
    return max(10, n // 20) if MUTANTS_PROFILE else n


ENGINES = ["native", "reference"]

# Number of examples for each differential test (at least 2,000 in CI).
DIFF_EXAMPLES = examples(2000)

FIELDS = ("path", "start", "end", "content", "reason", "score")
REASON_RANK = {"reference": 1, "failure": 2, "search": 3}


def _module(name: str) -> Any:
    if name == "native":
        import bugcontext

        return bugcontext
    import bugcontext.reference

    return bugcontext.reference


@pytest.fixture(scope="session", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Any:
    """The module-level ``build`` function of one engine."""
    return _module(request.param).build


@pytest.fixture(scope="session", params=ENGINES)
def builder_cls(request: pytest.FixtureRequest) -> Any:
    """The ``ContextBuilder`` class of one engine."""
    return _module(request.param).ContextBuilder


@pytest.fixture(scope="session")
def rc() -> Any:
    """The public ``bugcontext`` package (types, errors)."""
    import bugcontext

    return bugcontext


# ---------------------------------------------------------------------------
# Contract helpers
# ---------------------------------------------------------------------------


def canon(path: str) -> str:
    """Canonical form of a (valid) path: split on '/', drop '' and '.', join."""
    return "/".join(seg for seg in path.split("/") if seg not in ("", "."))


def get_field(cand: Any, name: str) -> Any:
    if isinstance(cand, Mapping):
        return cand[name]
    return getattr(cand, name)


def failing_list(failure: str | list[str] | None) -> list[str]:
    """The canonical failing files, in order, repeats dropped (failure_file is one of them)."""
    given = [] if failure is None else [failure] if isinstance(failure, str) else failure
    out: list[str] = []
    for path in given:
        if canon(path) not in out:
            out.append(canon(path))
    return out


def rank_key(cand: Any, index: int, failure_file: str | list[str] | None) -> tuple[Any, ...]:
    path = canon(get_field(cand, "path"))
    reason = get_field(cand, "reason")
    failing = failing_list(failure_file)
    if path in failing:
        group = failing.index(path)
    else:
        group = len(failing) + REASON_RANK[reason] - 1
    return (group, -float(get_field(cand, "score")), index)


def ranked_indices(cands: list[Any], failure_file: str | list[str] | None) -> list[int]:
    return sorted(range(len(cands)), key=lambda i: rank_key(cands[i], i, failure_file))


def model_build(cands: list[Any], max_chars: int, failure_file: str | list[str] | None) -> dict[str, Any]:
    """A naive O(n^2) restatement of the selection rule (JSON-like form).

    Items are given as (canonical path, start, end, content, reason, score) tuples of the
    snapshot of the caller's values: exact built-in types (plain int lines, ``str.__str__`` of
    the content and reason, the score as an exact ``int`` or ``float``).
    """
    order = ranked_indices(cands, failure_file)
    selected: list[int] = []
    items: list[tuple[Any, ...]] = []
    omitted: list[tuple[int, int, str, int | None]] = []
    windows: list[tuple[str, int, int, int]] = []  # (path, start, end, index)
    used = 0
    for rank, i in enumerate(order):
        c = cands[i]
        path = canon(get_field(c, "path"))
        start = int(get_field(c, "start").__index__())
        end = int(get_field(c, "end").__index__())
        hits = [w for w in windows if w[0] == path and w[1] <= end and start <= w[2]]
        if hits:
            blocker = min(hits, key=lambda w: w[1])
            omitted.append((i, rank, "overlap", blocker[3]))
            continue
        cost = len(get_field(c, "content"))
        if used + cost > max_chars:
            omitted.append((i, rank, "budget", None))
            continue
        used += cost
        selected.append(i)
        windows.append((path, start, end, i))
        items.append(
            (
                path,
                start,
                end,
                str.__str__(get_field(c, "content")),
                str.__str__(get_field(c, "reason")),
                exact_number(get_field(c, "score")),
            )
        )
    return {
        "selected": selected,
        "items": items,
        "omitted": omitted,
        "used_chars": used,
        "truncated": bool(omitted),
    }


def exact_number(value: Any) -> int | float:
    """The exact ``int`` or ``float`` a number (or subclass instance) holds, read through the
    built-in type's own conversion."""
    return float.__float__(value) if isinstance(value, float) else int.__index__(value)


def result_summary(result: Any) -> dict[str, Any]:
    """A BuildResult in the same shape as ``model_build`` returns."""
    return {
        "selected": list(result.selected),
        "items": [(it.path, it.start, it.end, it.content, it.reason, it.score) for it in result.items],
        "omitted": [(o.index, o.rank, o.reason, o.overlaps) for o in result.omitted],
        "used_chars": result.used_chars,
        "truncated": result.truncated,
    }


def strict(value: Any) -> Any:
    """A comparison form that also tells value types and float signs apart.

    Dicts compare without regard to key order; lists and tuples are kept apart.
    """
    if isinstance(value, Mapping):
        return (
            "mapping",
            tuple(sorted(((repr(k), strict(v)) for k, v in value.items()), key=lambda kv: kv[0])),
        )
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(strict(v) for v in value))
    if isinstance(value, float):
        if math.isnan(value):
            return ("float", "nan")
        return (type(value).__qualname__, value.hex())
    return (type(value).__qualname__, repr(value))


def snapshot(value: Any) -> Any:
    """A deep, strict snapshot of caller-owned input (mappings, lists, objects)."""
    if isinstance(value, Mapping):
        return (
            type(value).__qualname__,
            id(value),
            tuple((repr(k), snapshot(v)) for k, v in value.items()),
        )
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, id(value), tuple(snapshot(v) for v in value))
    if isinstance(value, (str, int, float, bytes)) or value is None:
        return (strict(value), id(value))
    attrs = getattr(value, "__dict__", None)
    if attrs is not None:
        items = tuple((repr(k), snapshot(v)) for k, v in attrs.items())
        return (type(value).__qualname__, id(value), items)
    fields = tuple((f, snapshot(getattr(value, f))) for f in FIELDS if hasattr(value, f))
    if fields:
        return (type(value).__qualname__, id(value), fields)
    return (type(value).__qualname__, id(value), repr(value))


def error_signature(exc: BaseException) -> tuple[Any, ...]:
    return (
        type(exc),
        getattr(exc, "index", "<no index attr>"),
        getattr(exc, "field", "<no field attr>"),
        getattr(exc, "problem", "<no problem attr>"),
        str(exc),
        # A resource limit's setting, the amount found and the setting's value.
        getattr(exc, "limit", None),
        getattr(exc, "value", None),
        getattr(exc, "maximum", None),
    )


# ---------------------------------------------------------------------------
# Caller-side candidate types
# ---------------------------------------------------------------------------

MAX_LINE = 2**31 - 1


# ---------------------------------------------------------------------------
# Hypothesis strategies for valid inputs built to stress the rules
# ---------------------------------------------------------------------------

# Five canonical paths ("a.py", "b/c.py", "A.py", and two that exercise the native engine's
# non-ASCII and lone-surrogate path handling), several spellings each.
PATH_SPELLINGS = [
    "a.py",
    "./a.py",
    "a.py/",
    ".//a.py",
    "./a.py/.",
    "b/c.py",
    "b//c.py",
    "./b/./c.py/",
    "A.py",
    "日本/ü.py",
    "./日本//ü.py",
    "s\ud800.py",
    "./s\ud800.py/",
]
ONE_PATH_SPELLINGS = ["x/y.py", "./x/y.py", "x//y.py/", "x/./y.py", "./x/./y.py/."]
FAILURE_FILES: list[str | list[str] | None] = [
    None,
    None,
    "a.py",
    "./a.py/",
    "b//c.py",
    "A.py",
    "zz.py",
    ["b//c.py", "a.py"],
    ["./a.py", "zz.py", "a.py/", "b/c.py"],
    [],
    "s\ud800.py",
    ["./s\ud800.py", "日本/ü.py"],
]

SCORES: list[Any] = [
    0.0,
    -0.0,
    0,
    1,
    -1,
    2,
    1.0,
    2.0,
    0.5,
    -0.5,
    2**53,
    2**53 + 1,
    float(2**53),
    2**53 + 2,
    2**63,
    -(2**64),
    10**300,
    1e308,
    -1e308,
    5e-324,
    -5e-324,
]

ODD_CHARS = ["a", "日", "😀", "\ud800", "\udfff", "\x00", "\n", "\U0010ffff", "é"]

TEXT = st.one_of(
    st.text(max_size=6),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6),
    st.text(alphabet=st.sampled_from(ODD_CHARS), max_size=6),
)

CANDIDATE_FORMS = ["dict", "candidate", "foreign", "namespace", "proxy"]
TOP_FORMS = ["snake", "camel", "mixed", "build_input", "proxy"]


def make_candidate(form: str, spec: tuple[Any, ...]) -> Any:
    import bugcontext

    fields = dict(zip(FIELDS, spec, strict=True))
    if form == "dict":
        return fields
    if form == "candidate":
        plain = dict(fields)
        for key in ("start", "end"):
            if isinstance(plain[key], Idx):
                plain[key] = plain[key].value
        return bugcontext.Candidate(**plain)
    if form == "foreign":
        return ForeignCandidate(**fields)
    if form == "namespace":
        return types.SimpleNamespace(**fields)
    if form == "proxy":
        return types.MappingProxyType(fields)
    raise AssertionError(form)


@dataclass
class Drawn:
    """A drawn valid input, able to make fresh, equal input objects."""

    specs: list[tuple[Any, ...]]
    forms: list[str]
    max_chars: int
    failure_file: str | list[str] | None  # a list is given as failure_files
    top_form: str
    include_none_failure_file: bool

    def candidates(self) -> list[Any]:
        return [make_candidate(f, s) for f, s in zip(self.forms, self.specs, strict=True)]

    def make(self) -> Any:
        return self.make_with(self.candidates())

    def make_with(self, cands: Any) -> Any:
        import bugcontext

        ff = self.failure_file
        many = isinstance(ff, list)
        if self.top_form == "build_input":
            if many:
                return bugcontext.BuildInput(cands, self.max_chars, failure_files=ff)
            return bugcontext.BuildInput(cands, self.max_chars, ff)
        keys = {
            "snake": ("max_chars", "failure_file", "failure_files"),
            "proxy": ("max_chars", "failure_file", "failure_files"),
            "camel": ("maxChars", "failureFile", "failureFiles"),
            "mixed": ("max_chars", "failureFile", "failure_files"),
        }[self.top_form]
        data: dict[str, Any] = {"candidates": cands, keys[0]: self.max_chars}
        if ff is not None or self.include_none_failure_file:
            data[keys[2] if many else keys[1]] = ff
        if self.top_form == "proxy":
            return types.MappingProxyType(data)
        return data

    @property
    def total_chars(self) -> int:
        return sum(len(s[3]) for s in self.specs)


REASON_VALUES: list[Any] = []


def reason_values() -> list[Any]:
    if not REASON_VALUES:
        import bugcontext

        REASON_VALUES.extend(["failure", "reference", "search", *bugcontext.Reason])
    return REASON_VALUES


SCORE_STRATEGY = st.one_of(
    st.sampled_from([*SCORES, -3, -2, 3, 4]),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def candidate_specs(
    draw: Callable[..., Any], paths: list[str] = PATH_SPELLINGS, max_line: int = 12
) -> tuple[Any, ...]:
    # Few, flat draws: generation dominates the run time of these tests.
    path = draw(st.sampled_from(paths))
    start = draw(st.integers(1, max_line + 3))
    if start > max_line:  # now and then a window at the top of the line range
        start = MAX_LINE - (start - max_line - 1)
    length = draw(st.integers(0, 12))
    end = MAX_LINE if length == 12 else min(start + length // 2, MAX_LINE)
    flags = draw(st.integers(0, 35))  # wrap start/end in __index__ objects, 1 in 6 each
    start_v: Any = Idx(start) if flags % 6 == 0 else start
    end_v: Any = Idx(end) if flags // 6 == 0 else end
    content = draw(TEXT)
    reason = draw(st.sampled_from(reason_values()))
    score = draw(SCORE_STRATEGY)
    return (path, start_v, end_v, content, reason, score)


@st.composite
def build_inputs(
    draw: Callable[..., Any],
    max_size: int = 14,
    paths: list[str] = PATH_SPELLINGS,
    max_line: int = 12,
    failure_files: list[str | list[str] | None] = FAILURE_FILES,
) -> Drawn:
    # Draw the size first: st.lists alone would keep most inputs very small.
    n = draw(st.integers(0, max_size))
    specs = draw(st.lists(candidate_specs(paths=paths, max_line=max_line), min_size=n, max_size=n))
    forms = draw(st.lists(st.sampled_from(CANDIDATE_FORMS), min_size=n, max_size=n))
    total = sum(len(s[3]) for s in specs)
    max_chars = draw(
        st.one_of(
            st.integers(0, total),
            st.integers(0, total),
            st.sampled_from([0, total, total + 1, 2**40]),
        )
    )
    return Drawn(
        specs=specs,
        forms=forms,
        max_chars=max_chars,
        failure_file=draw(st.sampled_from(failure_files)),
        top_form=draw(st.sampled_from(TOP_FORMS)),
        include_none_failure_file=draw(st.booleans()),
    )


def outcome(build: Callable[[Any], Any], inp: Any) -> tuple[Any, ...]:
    """("ok", strict JSON form, strict summary) or ("error", signature)."""
    try:
        result = build(inp)
    except Exception as exc:
        return ("error", error_signature(exc))
    return ("ok", type(result), strict(result.to_dict()), strict(result_summary(result)))


@pytest.fixture(autouse=True)
def _private_cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test (and every process it starts) caches under a temporary folder, never in the
    user's cache directory."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache-home"))


# ---------------------------------------------------------------------------
# Verified provenance: candidates with source_sha256 / source_id and a reader's files
# ---------------------------------------------------------------------------

PROV_PATHS = ["a.py", "./a.py", "b/c.py", "b//c.py", "s\ud800.py", "gone.py"]
LINE_PIECES = [
    b"x",
    b"y = 1",
    b"\xc3\xa9",
    b"\xf0\x9f\x98\x80",
    b"\xff",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"",
]
LINE_ENDS = [b"\n", b"\r\n", b"\r", b"\n"]
SOURCE_IDS: list[Any] = [None, None, "parser", "search", "plug-in", "é" * 256]
BAD_PROVENANCE: list[tuple[str, Any]] = [
    ("source_sha256", "abc"),
    ("source_sha256", "A" * 64),
    ("source_sha256", 7),
    ("source_id", ""),
    ("source_id", "x" * 257),
    ("source_id", b"id"),
]
PROV_FORMS = ["dict", "candidate", "namespace", "proxy", "dataclass"]


class RecordingReader:
    """A ``verify`` reader over a dict of files that records the paths asked for."""

    def __init__(self, files: Mapping[str, bytes | None]) -> None:
        self.files = dict(files)
        self.calls: list[str] = []

    def __call__(self, path: str) -> bytes | None:
        self.calls.append(path)
        return self.files.get(path)


@dataclass
class VerifiedDrawn:
    """A drawn input with provenance fields, and the files a reader returns."""

    specs: list[tuple[Any, ...]]  # six fields, source_sha256, source_id
    forms: list[str]
    files: dict[str, bytes | None]
    max_chars: int
    failure_file: str | None

    def candidates(self) -> list[Any]:
        import bugcontext

        out: list[Any] = []
        for form, spec in zip(self.forms, self.specs, strict=True):
            fields = dict(zip(FIELDS, spec[:6], strict=True))
            extra = {k: v for k, v in (("source_sha256", spec[6]), ("source_id", spec[7])) if v is not None}
            if form == "dict":
                out.append({**fields, **extra})
            elif form == "proxy":
                out.append(types.MappingProxyType({**fields, **extra}))
            elif form == "candidate":
                out.append(bugcontext.Candidate(**fields, **extra))
            elif form == "namespace":
                out.append(types.SimpleNamespace(**fields, **extra))
            else:
                out.append(ProvenanceCandidate(**fields, **extra))
        return out

    def make(self) -> dict[str, Any]:
        data: dict[str, Any] = {"candidates": self.candidates(), "max_chars": self.max_chars}
        if self.failure_file is not None:
            data["failure_file"] = self.failure_file
        return data

    def reader(self) -> RecordingReader:
        return RecordingReader(self.files)


@st.composite
def verified_inputs(draw: Callable[..., Any], max_size: int = 10, invalid: bool = True) -> VerifiedDrawn:
    """Inputs whose candidates carry provenance, over files that hold (or no longer hold) their
    windows: exact windows, edited text, another version's SHA-256, missing files, windows past
    the end, CRLF / lone CR line ends, a BOM and undecodable bytes; now and then a bad
    provenance value."""
    import hashlib

    from bugcontext.core.provenance import file_lines

    files: dict[str, bytes | None] = {}
    for path in ("a.py", "b/c.py", "s\ud800.py"):
        n_lines = draw(st.integers(0, 6))
        pieces = [
            draw(st.sampled_from(LINE_PIECES)) + draw(st.sampled_from(LINE_ENDS)) for _ in range(n_lines)
        ]
        files[path] = None if draw(st.integers(0, 7)) == 0 else b"".join(pieces)
    n = draw(st.integers(0, max_size))
    specs: list[tuple[Any, ...]] = []
    for _ in range(n):
        spelled = draw(st.sampled_from(PROV_PATHS))
        path = canon(spelled)
        data = files.get(path)
        lines = file_lines(data) if data is not None else ()
        start = draw(st.integers(1, len(lines) + 2))
        end = start + draw(st.integers(0, 2))
        kind = draw(st.integers(0, 3))
        if kind <= 1 and end <= len(lines):
            content = "".join(lines[start - 1 : end])
        elif kind == 2:
            content = draw(TEXT)
        else:
            content = "".join(lines[start - 1 : end]) + draw(st.sampled_from(["", "x", "\r", "\udcff"]))
        true_sha = hashlib.sha256(data).hexdigest() if data is not None else None
        sha = draw(st.sampled_from([None, true_sha, true_sha, "0" * 64]))
        source = draw(st.sampled_from(SOURCE_IDS))
        if invalid and draw(st.integers(0, 40)) == 0:
            field, value = draw(st.sampled_from(BAD_PROVENANCE))
            if field == "source_sha256":
                sha = value
            else:
                source = value
        reason = draw(st.sampled_from(["failure", "reference", "search"]))
        score = draw(st.sampled_from([0, 1, 2.5, -1.0, 3]))
        specs.append((spelled, start, end, content, reason, score, sha, source))
    forms = draw(st.lists(st.sampled_from(PROV_FORMS), min_size=n, max_size=n))
    total = sum(len(s[3]) for s in specs)
    return VerifiedDrawn(
        specs=specs,
        forms=forms,
        files=files,
        max_chars=draw(st.integers(0, total + 1)),
        failure_file=draw(st.sampled_from([None, "a.py", "gone.py"])),
    )
