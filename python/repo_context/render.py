"""Rendering a build result as a Markdown prompt section, and explaining its omissions."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from .types import BuildResult

__all__ = ["CandidateLike", "fence", "language_of", "render_markdown", "render_omitted"]

_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".pyx": "cython",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".go": "go",
    ".java": "java",
    ".kt": "kotlin",
    ".scala": "scala",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "jsx",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".rb": "ruby",
    ".php": "php",
    ".cs": "csharp",
    ".swift": "swift",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "zsh",
    ".ps1": "powershell",
    ".sql": "sql",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".scss": "scss",
    ".md": "markdown",
    ".rst": "rst",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".xml": "xml",
    ".ini": "ini",
    ".cfg": "ini",
    ".txt": "text",
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".clj": "clojure",
    ".dart": "dart",
    ".vue": "vue",
    ".zig": "zig",
}

_BACKTICKS = re.compile(r"`+")


class CandidateLike(Protocol):
    """What rendering reads of a candidate (``repo_context.Candidate`` has it all)."""

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


def language_of(path: str) -> str:
    """The Markdown fence language tag for ``path``'s extension (``""`` if unknown)."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return _LANGUAGES.get(name[dot:].lower(), "") if dot > 0 else ""


def fence(text: str) -> str:
    """A backtick fence longer than every run of backticks in ``text`` (at least 3), so
    that ``text`` cannot close the fence early."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def _code_span(text: str) -> str:
    """``text`` as an inline code span that survives backticks inside it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _where(item: CandidateLike) -> str:
    return f"{item.path}:{item.start}-{item.end}"


def _score(score: float) -> str:
    return f"{score:.4g}" if isinstance(score, float) else str(score)


def render_markdown(result: BuildResult) -> str:
    """The selected items of ``result`` as a Markdown prompt section, in selection order.

    Each item is a header line ``path:start-end`` (as inline code) with its reason, then
    its content verbatim in a fenced block tagged with the language of the file's
    extension. The fence is longer than any run of backticks in the content, so content
    containing ```` ``` ```` cannot break out of it. Ends with one newline.
    """
    parts = ["## Code context\n"]
    if not result.items:
        parts.append("\n(no code selected)\n")
    for item in result.items:
        ticks = fence(item.content)
        body = item.content if item.content.endswith(("\n", "\r")) else item.content + "\n"
        parts.append(
            f"\n### {_code_span(_where(item))} ({item.reason})\n\n"
            f"{ticks}{language_of(item.path)}\n{body}{ticks}\n"
        )
    return "".join(parts)


def render_omitted(result: BuildResult, candidates: Sequence[CandidateLike]) -> str:
    """A Markdown summary of what ``result`` left out of ``candidates`` (the build's input
    candidates, in input order) and why.

    One count line by reason (``overlap``, ``budget``), then one line per omitted
    candidate in rank order: its input index, window, reason and score, and for an overlap
    the selected window it hits, for a budget omission its cost in characters.
    """
    counts = Counter(o.reason for o in result.omitted)
    by_source = Counter(str(c.reason) for c in candidates)
    lines = [
        "## Omitted",
        "",
        f"{len(candidates)} candidates ("
        + ", ".join(f"{reason} {by_source[reason]}" for reason in sorted(by_source))
        + f"); {len(result.items)} selected, {result.used_chars} characters; "
        + f"{len(result.omitted)} omitted ("
        + ", ".join(f"{reason} {counts[reason]}" for reason in ("overlap", "budget"))
        + ").",
    ]
    if result.omitted:
        lines.append("")
    for omission in result.omitted:
        cand = candidates[omission.index]
        head = f"- #{omission.index} {_code_span(_where(cand))} {cand.reason}, score {_score(cand.score)}: "
        if omission.reason == "overlap" and omission.overlaps is not None:
            hit = candidates[omission.overlaps]
            lines.append(head + f"overlaps #{omission.overlaps} {_code_span(_where(hit))} ({hit.reason})")
        else:
            lines.append(head + f"{omission.reason} ({len(cand.content)} characters)")
    return "\n".join(lines) + "\n"
