"""Fuzz target: ``.gitignore`` matching (``bugcontext.job.sources.files``).

The input is ``RULES \\0 PATHS`` as bytes: a ``.gitignore`` file, then ``/``-separated
repository paths one a line (a trailing ``/`` asks about a folder); without a ``\\0`` the
whole input is the rules file and the paths are a fixed set plus each rule read as a path.
The rules are written to a temporary repository's root ``.gitignore`` and read by
``Repository`` as any repository's are. Invariants:

* reading the rules and matching raise nothing (a pattern that cannot be compiled is
  left out);
* the hybrid matcher (Python's ``re`` for the usual patterns, RE2 for those that could
  backtrack) gives the same answer as RE2 for every pattern, and as pathspec's own
  ``re``-only ``GitIgnoreSpec`` on short paths and patterns with few quantifiers (where
  backtracking stays cheap);
* ``Repository._ignored`` is that answer;
* bounded time per input byte (500 µs: compiling patterns dominates), whatever the patterns
  (the exponential ``re`` paths are what the hybrid exists to avoid).

Run: ``python tests/fuzz/fuzz_gitignore.py [libFuzzer arguments] [corpus folders]``.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fuzz_main, instrumented

with instrumented("pathspec"):
    import re2
    from bugcontext.core.limits import DEFAULT_LIMITS
    from bugcontext.job.sources import files
    from pathspec import GitIgnoreSpec
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

_PATHS = (
    "a.py",
    "build/x.py",
    "src/pkg/mod.py",
    "docs/",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
    "node/a/b/c/d/e/f.txt",
    ".hidden/x",
    "x.pyc",
)
_MAX_PATHS = 24
_MAX_PATH = 300
# Paths up to this long are also matched by pathspec's plain ``re`` spec (exponential
# patterns stay cheap this short).
_SHORT = 10
# ... and have at most this many quantifiers.
_FEW = 4

_root: Path | None = None


def _repo_root() -> Path:
    global _root
    if _root is None:
        _root = Path(tempfile.mkdtemp(prefix="fuzz-gitignore-"))
        atexit.register(shutil.rmtree, _root, True)
    return _root


class _AllRe2(GitIgnoreSpecPattern):
    """A gitignore pattern matched by RE2 whenever RE2 compiles its expression."""

    def __init__(self, pattern: str, include: bool | None = None) -> None:
        super().__init__(pattern, include)
        if self.regex is not None:
            try:
                self.regex = re2.compile(self.regex.pattern, files._RE2_OPTIONS)
            except re2.error:
                pass


def _quantifiers(line: str) -> int:
    """How many quantifiers pathspec's regular expression for ``line`` has."""
    regex = GitIgnoreSpecPattern(line).regex
    if regex is None:
        return 0
    return sum(not token.startswith("\\") for token in files._QUANTIFIER.findall(regex.pattern))


def _usable_lines(lines: list[str]) -> list[str]:
    good = []
    for line in lines:
        try:
            files._rules([line])
        except files._PATTERN_ERRORS:
            continue
        good.append(line)
    return good


def _paths(text: str | None, rules: list[str]) -> list[tuple[str, bool]]:
    raw = text.split("\n") if text is not None else [*_PATHS, *(r.lstrip("!") for r in rules)]
    found: list[tuple[str, bool]] = []
    for line in raw[: _MAX_PATHS * 2]:
        line = line[:_MAX_PATH]
        # A NUL cannot be in a file name: no path the reader meets has one.
        parts = [p for p in line.replace("\0", "").split("/") if p not in ("", ".", "..")]
        if parts and len(found) < _MAX_PATHS:
            found.append(("/".join(parts), line.endswith("/")))
    return found


def check(data: bytes) -> None:
    """One rules file and its paths: the invariants in the module docstring."""
    rules_bytes, sep, rest = data.partition(b"\0")
    lines = rules_bytes.decode("utf-8", errors="replace").splitlines()
    root = _repo_root()
    (root / ".gitignore").write_bytes(rules_bytes)
    limits = DEFAULT_LIMITS
    hybrid, note = files._read_rules(root / ".gitignore", limits)
    if len(rules_bytes) > limits.max_gitignore_bytes or len(lines) > limits.max_gitignore_patterns:
        # Over a limit: skipped with a note, not an error (bugcontext.core.limits).
        assert hybrid is None and note is not None and note.startswith("rules not applied: ")
        return
    assert hybrid is not None
    too_long = [line for line in lines if len(line) > limits.max_gitignore_pattern_chars]
    assert (note is not None) == bool(too_long)
    lines = [line for line in lines if len(line) <= limits.max_gitignore_pattern_chars]
    good = _usable_lines(lines)
    linear = GitIgnoreSpec.from_lines(good, pattern_factory=_AllRe2, backend="simple")
    # pathspec's own `re` matching, for the patterns where backtracking stays cheap on a
    # short path (a run of `*` makes `re` try every split of the path between them).
    few = [line for line in good if _quantifiers(line) <= _FEW]
    plain = GitIgnoreSpec.from_lines(few, backend="simple")
    hybrid_few = files._rules(few)
    repo = files.Repository(root)
    paths = _paths(rest.decode("utf-8", errors="replace") if sep else None, lines)
    for path, is_dir in paths:
        if path.startswith(".git/") or path == ".git":
            continue
        asked = path + "/" if is_dir else path
        verdict = hybrid.check_file(asked).include
        assert linear.check_file(asked).include == verdict, (path, is_dir, "RE2 differs from the hybrid")
        if len(asked) <= _SHORT:
            expected = hybrid_few.check_file(asked).include
            assert plain.check_file(asked).include == expected, (path, is_dir, "re differs from the hybrid")
        assert repo._ignored(path, is_dir=is_dir) == (verdict is True), (path, is_dir)


if __name__ == "__main__":
    # Each line is a pattern compiled several times over (by the reader, then by the three
    # matchers compared), about 1 ms a line uninstrumented: 500 µs per byte. The guard is
    # for matching that backtracks, which takes seconds to minutes on such inputs.
    fuzz_main(check, per_byte=500e-6)
