"""One-hop candidates (callees, the class's state, sibling calls) and the issue text as an
input (the definitions it names, its own search), on small repositories written to a
temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from bugcontext.job.sources import Repository, SymbolIndex, gather
from bugcontext.job.sources.failure import ProjectFrame
from bugcontext.job.sources.gather import SOURCES
from bugcontext.job.sources.hops import (
    CALLEE_HOP,
    SIBLING_HOP,
    STATE_HOP,
    HopEvidence,
    hop_evidence,
    hop_windows,
)
from bugcontext.job.sources.issue import (
    CODE_WEIGHT,
    QUALIFIED_WEIGHT,
    TRACEBACK_WEIGHT,
    Mention,
    issue_evidence,
    issue_mentions,
    issue_query,
    issue_windows,
)
from bugcontext.job.sources.languages import LANGUAGES, load
from bugcontext.job.sources.reports import Frame

pytestmark = pytest.mark.skipif(
    any(load(name) is None for name in LANGUAGES), reason="tree-sitter grammars are not installed"
)

CORE = """\
from pkg.util import normalize


class Parser:
    def __init__(self, mode):
        self.mode = mode
        self.table = {}

    def configure(self, mode):
        self.mode = mode.lower()

    def parse(self, text):
        prefix = self.helper(text)
        return self.table[self.mode] + normalize(text) + prefix

    def helper(self, text):
        return text[:1]

    def parse_all(self, texts):
        return [normalize(t) for t in texts]


def other(texts):
    return normalize(texts[0])
"""
UTIL = """\
def normalize(text):
    return text.strip()


def unrelated():
    return normalize("x")
"""
TEST = """\
from pkg.core import Parser


def test_parse():
    assert Parser("a").parse(" b ") == "b"
"""
LOG = """\
============================= test session starts ==============================
collected 1 item

tests/test_core.py F                                                     [100%]

=================================== FAILURES ===================================
__________________________________ test_parse __________________________________

    def test_parse():
>       assert Parser("a").parse(" b ") == "b"

tests/test_core.py:5:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <pkg.core.Parser object at 0x7f>, text = ' b '

    def parse(self, text):
        prefix = self.helper(text)
>       return self.table[self.mode] + normalize(text) + prefix
E       KeyError: 'a'

pkg/core.py:14: KeyError
=========================== short test summary info ============================
FAILED tests/test_core.py::test_parse - KeyError: 'a'
============================== 1 failed in 0.01s ===============================
"""


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/core.py": CORE,
        "pkg/util.py": UTIL,
        "tests/test_core.py": TEST,
    }.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Repository(tmp_path)


def frame(path: str, line: int, distance: int = 0) -> ProjectFrame:
    return ProjectFrame(path, line, distance, Frame(path, line))


# --- hops -------------------------------------------------------------------------------------


def test_hop_evidence_of_a_failing_method(repo: Repository) -> None:
    found = hop_evidence(repo, [frame("pkg/core.py", 14), frame("tests/test_core.py", 5, 1)])
    assert found == [
        # Callees of parse: self.helper (through the enclosing class), normalize (an import).
        HopEvidence("pkg/core.py", 16, 17, CALLEE_HOP, "callee", "helper"),
        HopEvidence("pkg/util.py", 1, 2, CALLEE_HOP, "callee", "normalize"),
        # The constructor; the methods assigning self.table / self.mode (read on line 14).
        HopEvidence("pkg/core.py", 5, 7, STATE_HOP, "state", "__init__"),
        HopEvidence("pkg/core.py", 9, 10, STATE_HOP, "state", "mode"),
        # Other calls of normalize: the same file first, then the repository.
        HopEvidence("pkg/core.py", 19, 20, SIBLING_HOP, "sibling", "normalize"),
        HopEvidence("pkg/core.py", 23, 24, SIBLING_HOP, "sibling", "normalize"),
        HopEvidence("pkg/util.py", 5, 6, SIBLING_HOP / 2 * (1 / 1.5), "sibling", "normalize"),
    ]


def test_hop_kinds_and_frames(repo: Repository) -> None:
    frames = [frame("pkg/core.py", 14)]
    only_state = hop_evidence(repo, frames, kinds=("state",))
    assert [(e.start, e.why) for e in only_state] == [(5, "state"), (9, "state")]
    # A frame one step above the deepest weighs half; test files are not followed.
    above = hop_evidence(repo, [frame("tests/test_core.py", 5), frame("pkg/core.py", 14, 1)])
    assert above[0] == HopEvidence("pkg/core.py", 16, 17, CALLEE_HOP / 2, "callee", "helper")
    assert hop_evidence(repo, [frame("tests/test_core.py", 5)]) == []


def test_hop_windows_are_whole_units(repo: Repository) -> None:
    windows = hop_windows(repo, [frame("pkg/core.py", 14)], SymbolIndex(repo), base_score=3.0)
    first = windows[0]
    assert (first.path, first.start, first.end, first.reason, first.score) == (
        "pkg/core.py",
        16,
        17,
        "reference",
        3.0 + CALLEE_HOP,
    )
    assert first.content == "    def helper(self, text):\n        return text[:1]\n"
    assert len(windows) == 7


# --- the issue --------------------------------------------------------------------------------

ISSUE = """\
Parser.parse fails for unknown modes

Calling `Parser("a").parse(" b ")` raises. I think normalize_all or ParserTable may be involved.

```
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/pkg/core.py", line 99, in parse
KeyError: 'a'
```
See pkg/util.py too.
"""


def test_issue_mentions() -> None:
    assert issue_mentions(ISSUE) == [
        Mention("parse", (), "traceback", "/usr/lib/python3/site-packages/pkg/core.py"),
        Mention("parse", ("Parser",), "qualified"),
        # Names in code (the fenced block's frame lines are mentions of their own).
        Mention("KeyError", (), "code"),
        Mention("Parser", (), "code"),
        Mention("parse", (), "code"),
        # Code-like words of the prose.
        Mention("normalize_all", (), "prose"),
        Mention("ParserTable", (), "prose"),
        Mention("core.py", (), "file", "/usr/lib/python3/site-packages/pkg/core.py"),
        Mention("util.py", (), "file", "pkg/util.py"),
    ]


def test_issue_evidence_and_windows(repo: Repository) -> None:
    found = issue_evidence(repo, ISSUE)
    # The traceback frame's function in the file its path ends like; the class in code.
    assert [(e.definition.path, e.definition.name, e.weight) for e in found] == [
        ("pkg/core.py", "parse", TRACEBACK_WEIGHT),
        ("pkg/core.py", "Parser", CODE_WEIGHT),
    ]
    assert found[0].definition.start == 12
    windows = issue_windows(repo, ISSUE, low=2.0, high=3.0)
    assert [(w.path, w.start, w.end, w.reason, w.score) for w in windows] == [
        ("pkg/core.py", 12, 14, "reference", 3.0),
        ("pkg/core.py", 4, 20, "reference", 2.0 + CODE_WEIGHT),
    ]


def test_issue_qualified_names(repo: Repository) -> None:
    found = issue_evidence(repo, "`Parser.configure` drops the mode; so does util.normalize.")
    assert [(e.definition.name, e.definition.start, e.weight) for e in found] == [
        ("configure", 9, QUALIFIED_WEIGHT),
        ("normalize", 1, QUALIFIED_WEIGHT),
        ("Parser", 4, CODE_WEIGHT),
    ]


def test_issue_query_weighs_named_identifiers_double() -> None:
    tokens = issue_query("The `normalize` call strips text")
    assert tokens.count("normalize") == 2
    assert tokens.count("strips") == 1


def test_gather_with_issue_never_pushes_out_log_evidence(repo: Repository) -> None:
    (repo.root / "pkg" / "extra.py").write_text("def tally():\n    return 0\n", encoding="utf-8")
    plain = gather(repo, LOG)
    with_issue = gather(repo, LOG, issue=ISSUE + "\nAlso `tally` looks odd.\n")
    assert plain.failure_file == with_issue.failure_file == "pkg/core.py"
    # Every window gathered from the log is still there with its score ...
    scores = {(w.path, w.start, w.end, w.reason): w.score for w in with_issue.candidates}
    for w in plain.candidates:
        assert scores[(w.path, w.start, w.end, w.reason)] == w.score
    # ... and every window the issue added ranks below every log window of its reason.
    known = {(w.path, w.start, w.end, w.reason) for w in plain.candidates}
    added = [w for w in with_issue.candidates if (w.path, w.start, w.end, w.reason) not in known]
    # Not in a failing file (ranked before every other file whatever the score): the issue's
    # parse and Parser are left out; tally (pkg/extra.py) comes in, in the search tier.
    assert ("pkg/extra.py", 1, 2, "search") in {(w.path, w.start, w.end, w.reason) for w in added}
    assert not [w for w in added if w.path in with_issue.failure_files]
    for w in added:
        assert w.reason == "search"
        assert w.score < min(p.score for p in plain.candidates if p.reason == "search")


def test_gather_exclude(repo: Repository) -> None:
    def references(gathered: object) -> set[tuple[str, int, int]]:
        return {(w.path, w.start, w.end) for w in gathered.candidates if w.reason == "reference"}  # type: ignore[attr-defined]

    # configure assigns self.mode, read on the failing line: state evidence, and only that.
    assert ("pkg/core.py", 9, 10) in references(gather(repo, LOG))
    assert ("pkg/core.py", 9, 10) not in references(gather(repo, LOG, exclude=("state",)))
    assert not [w for w in gather(repo, LOG, exclude=("failure",)).candidates if w.reason == "failure"]
    with pytest.raises(ValueError, match="unknown source 'nope' in exclude"):
        gather(repo, LOG, exclude=("nope",))
    assert "issue-definitions" in SOURCES


# --- whole units: a long class as its methods, the import block -------------------------------

LONG = (
    "import os\n"
    "from pkg.util import (\n"
    "    normalize,\n"
    ")\n"
    "\n"
    "\n"
    "class Big:\n" + "".join(f"    attr{i} = {i}\n" for i in range(20)) + "\n"
    "    def first(self):\n"
    "        return 1\n"
    "\n"
    "    def second(self):\n"
    "        def inner():\n"
    "            return 2\n"
    "        return inner()\n"
    "\n"
    "\n"
    "def after():\n"
    "    import json\n"
    "    return json\n"
)


def test_split_classes_and_import_windows(repo: Repository) -> None:
    from bugcontext.job.sources.units import MEMBER_HOP, import_windows, split_classes
    from bugcontext.job.sources.window import make_window

    (repo.root / "pkg" / "long.py").write_text(LONG, encoding="utf-8")
    source = repo.source("pkg/long.py")
    assert source is not None
    index = SymbolIndex(repo)
    whole = make_window(source, 7, 35, "reference", 2.8)  # class Big: lines 7-35
    short = make_window(source, 38, 40, "reference", 2.1)
    split, leftover = split_classes(repo, [whole, short], index, 2.0)
    score = 2.0 + MEMBER_HOP * 0.8
    assert [(w.start, w.end, w.score) for w in split] == [(29, 30, score), (32, 35, score), (38, 40, 2.1)]
    assert split[0].content == "    def first(self):\n        return 1\n"
    assert leftover == []
    # A search window over a class, or a short one, stays; so does a class in a failing file.
    search = make_window(source, 7, 35, "search", 5.0)
    assert split_classes(repo, [search], index, 2.0) == ([search], [])
    assert split_classes(repo, [whole], index, 2.0, ["pkg/long.py"]) == ([whole], [])
    # The import block: top-level imports only (not the one inside after()), the
    # parenthesised import whole; test files have none.
    (header,) = import_windows(repo, ["pkg/long.py", "tests/test_core.py"], index, 2.01)
    assert (header.path, header.start, header.end, header.reason, header.score) == (
        "pkg/long.py",
        1,
        4,
        "reference",
        2.01,
    )


def test_split_a_class_with_many_methods(repo: Repository) -> None:
    from bugcontext.job.sources.units import MAX_MEMBERS, split_classes
    from bugcontext.job.sources.window import make_window

    methods = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(MAX_MEMBERS + 1))
    (repo.root / "pkg" / "wide.py").write_text("class Wide:\n" + methods, encoding="utf-8")
    source = repo.source("pkg/wide.py")
    assert source is not None
    whole = make_window(source, 1, 3 * (MAX_MEMBERS + 1), "reference", 2.5)  # class Wide
    kept, leftover = split_classes(repo, [whole], SymbolIndex(repo), 2.0, (), 0.25)
    # The class stays whole; its methods only fill what is left of a budget.
    assert kept == [whole]
    assert [(w.start, w.end, w.reason, w.score) for w in leftover] == [
        (2 + 3 * i, 3 + 3 * i, "search", 0.25) for i in range(MAX_MEMBERS + 1)
    ]


def test_pattern_siblings_of_a_library_call(tmp_path: Path) -> None:
    (tmp_path / "conf.py").write_text(
        "import re\n"
        "\n"
        "\n"
        "def csv(value):\n"
        "    return [re.compile(p) for p in value.split(',')]\n"
        "\n"
        "\n"
        "def paths(value):\n"
        "    return [re.compile(p.strip()) for p in value]\n"
        "\n"
        "\n"
        "def other(value):\n"
        "    return re.escape(value)\n",
        encoding="utf-8",
    )
    found = hop_evidence(Repository(tmp_path), [frame("conf.py", 5)])
    # re.compile is not defined in the repository: the same call elsewhere in the file.
    assert found == [HopEvidence("conf.py", 8, 9, SIBLING_HOP / 2, "sibling", "compile")]


def test_candidate_recall_counts_a_hunk_inside_one_candidate() -> None:
    from bugcontext.evaluation.evaluate import candidate_recall
    from bugcontext.evaluation.realbugs import GoldRange
    from bugcontext.job.sources.window import Window

    def w(path: str, start: int, end: int) -> Window:
        return Window(path, start, end, "", "reference", 1.0)

    gold = [GoldRange("a.py", 5, 8), GoldRange("a.py", 20, 20), GoldRange("b.py", 1, 1)]
    # 5-8 lies across two windows (a de-duplicating packer sends one), 20 inside one.
    assert candidate_recall([w("a.py", 1, 6), w("a.py", 6, 9), w("a.py", 18, 22)], gold) == (1, 1)
    assert candidate_recall([w("./a.py", 1, 9), w("b.py", 1, 1)], gold) == (2, 2)
    assert candidate_recall([], gold) == (0, 0)
