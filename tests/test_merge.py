"""RangeMerger: unions of overlapping or adjacent windows, re-read from the repository."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext import Candidate, InvalidCandidateError, Reason
from bugcontext.job.merge import MergedCandidate, Part, RangeMerger, merge_windows
from bugcontext.job.sources import Repository
from hypothesis import given
from hypothesis import strategies as st

# 30 lines; line endings vary (CRLF, a lone CR) and the last line has none, so a re-read that
# normalised line endings or dropped the last line would show.
LINES = [f"line {n}\r\n" if n % 7 == 0 else f"line {n}\r" if n == 12 else f"line {n}\n" for n in range(1, 30)]
LINES.append("line 30")
TEXT = "".join(LINES)


def text(start: int, end: int) -> str:
    return "".join(LINES[start - 1 : end])


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_bytes(TEXT.encode())
    (root / "pkg" / "b.py").write_bytes(b"one\ntwo\nthree\nfour\n")
    return Repository(root)


def cand(
    path: str, start: int, end: int, reason: str = "search", score: float = 1.0, content: str = ""
) -> Any:
    return {"path": path, "start": start, "end": end, "content": content, "reason": reason, "score": score}


def spans(merged: list[MergedCandidate]) -> list[tuple[str, int, int]]:
    return [(m.path, m.start, m.end) for m in merged]


def test_adjacent_windows_merge(repo: Repository) -> None:
    merged = RangeMerger(repo).merge([cand("pkg/a.py", 1, 10), cand("pkg/a.py", 11, 12)])
    assert spans(merged) == [("pkg/a.py", 1, 12)]
    assert merged[0].content == text(1, 12)


def test_overlapping_and_contained_windows_merge(repo: Repository) -> None:
    merged = RangeMerger(repo).merge(
        [cand("pkg/a.py", 5, 10), cand("pkg/a.py", 8, 15), cand("pkg/a.py", 9, 9), cand("pkg/a.py", 15, 15)]
    )
    assert spans(merged) == [("pkg/a.py", 5, 15)]
    assert merged[0].content == text(5, 15)


def test_disjoint_windows_stay_apart(repo: Repository) -> None:
    merged = RangeMerger(repo).merge([cand("pkg/a.py", 12, 14), cand("pkg/a.py", 1, 10)])
    # One line (11) between them: not adjacent. Listed in input order of their first part.
    assert spans(merged) == [("pkg/a.py", 12, 14), ("pkg/a.py", 1, 10)]
    assert [m.content for m in merged] == [text(12, 14), text(1, 10)]


def test_windows_of_different_files_never_merge(repo: Repository) -> None:
    merged = RangeMerger(repo).merge(
        [cand("pkg/a.py", 1, 4), cand("pkg/b.py", 1, 4), cand("./pkg//a.py", 3, 6)]
    )
    # Paths compare canonically: "./pkg//a.py" is pkg/a.py.
    assert spans(merged) == [("pkg/a.py", 1, 6), ("pkg/b.py", 1, 4)]
    assert merged[1].content == "one\ntwo\nthree\nfour\n"


def test_provenance_lists_every_part_in_line_order(repo: Repository) -> None:
    parts = [
        cand("pkg/a.py", 8, 15, "search", 9.5),
        cand("./pkg/a.py", 5, 10, "failure", 2),
        cand("pkg/a.py", 5, 10, "reference", 1.0),
    ]
    (merged,) = RangeMerger(repo).merge(parts)
    assert merged.provenance == (
        Part("pkg/a.py", 5, 10, "failure", 2),
        Part("pkg/a.py", 5, 10, "reference", 1.0),
        Part("pkg/a.py", 8, 15, "search", 9.5),
    )
    assert merged.to_dict()["provenance"] == [
        {"path": "pkg/a.py", "start": 5, "end": 10, "reason": "failure", "score": 2},
        {"path": "pkg/a.py", "start": 5, "end": 10, "reason": "reference", "score": 1.0},
        {"path": "pkg/a.py", "start": 8, "end": 15, "reason": "search", "score": 9.5},
    ]


@pytest.mark.parametrize(
    ("reasons", "best"),
    [
        (["search", "failure", "reference"], "reference"),
        (["search", "failure"], "failure"),
        (["failure", "reference"], "reference"),
        (["search", "search"], "search"),
    ],
)
def test_best_reason(repo: Repository, reasons: list[str], best: str) -> None:
    windows = [cand("pkg/a.py", 1 + i, 3 + i, reason) for i, reason in enumerate(reasons)]
    (merged,) = RangeMerger(repo).merge(windows)
    assert merged.reason == best


def test_best_score_is_the_callers_value(repo: Repository) -> None:
    (merged,) = RangeMerger(repo).merge(
        [
            cand("pkg/a.py", 1, 3, "reference", 1.5),
            cand("pkg/a.py", 4, 5, "search", 7),
            cand("pkg/a.py", 2, 2, score=-3),
        ]
    )
    # The best score whatever the reason of its part; an int stays an int.
    assert merged.score == 7 and type(merged.score) is int
    assert merged.reason == "reference"


def test_content_is_re_read_from_the_file(repo: Repository) -> None:
    stale = [cand("pkg/a.py", 6, 8, content="stale"), cand("pkg/a.py", 28, 30, content="x")]
    merged = RangeMerger(repo).merge(stale)
    assert [m.content for m in merged] == [text(6, 8), text(28, 30)]
    assert merged[1].content.endswith("line 30")  # the last line, without a line ending
    assert "".join(m.content for m in RangeMerger(repo).merge([cand("pkg/a.py", 1, 30)])) == TEXT


def test_candidates_objects_and_reason_members(repo: Repository) -> None:
    inputs = [
        Candidate("pkg/a.py", 1, 2, "", Reason.SEARCH, 1.0),
        Candidate("pkg/a.py", 3, 4, "", Reason.FAILURE, 2.0),
    ]
    (merged,) = RangeMerger(repo).merge(inputs)
    assert merged.reason == "failure" and type(merged.reason) is str
    assert merged.provenance[0].reason == "search"


def test_idempotent(repo: Repository) -> None:
    inputs = [
        cand("pkg/a.py", 1, 10, "search", 1.0),
        cand("pkg/a.py", 11, 12, "failure", 3.0),
        cand("pkg/a.py", 20, 22, "reference", 2.0),
        cand("pkg/b.py", 2, 3, "search", 0.5),
    ]
    merger = RangeMerger(repo)
    once = merger.merge(inputs)
    assert merger.merge(once) == once
    # The JSON form (a mapping with provenance) merges back to the same candidates as well.
    assert merger.merge([m.to_dict() for m in once]) == once


def test_the_builder_takes_merged_candidates(repo: Repository) -> None:
    merged = merge_windows(
        repo.root, [cand("pkg/a.py", 1, 10, "search", 1.0), cand("pkg/a.py", 5, 12, "failure", 2.0)]
    )
    for data in (merged, [m.to_dict() for m in merged]):
        result = bugcontext.build({"candidates": data, "max_chars": 10_000})
        assert [(i.path, i.start, i.end, i.reason) for i in result.items] == [("pkg/a.py", 1, 12, "failure")]
        assert result.items[0].content == text(1, 12)
    provenance = merged[result.selected[0]].provenance
    assert [(p.start, p.end) for p in provenance] == [(1, 10), (5, 12)]


def test_empty_input(repo: Repository) -> None:
    assert RangeMerger(repo).merge([]) == []


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (cand("pkg/a.py", 29, 31), "end"),  # past the end of the file
        (cand("pkg/missing.py", 1, 1), "path"),
        (cand("../a.py", 1, 1), "path"),
        (cand("pkg/a.py", 5, 4), "end"),
        (cand("pkg/a.py", 0, 4), "start"),
        (cand("pkg/a.py", True, 4), "start"),
        (cand("pkg/a.py", 1, 4, reason="other"), "reason"),
        (cand("pkg/a.py", 1, 4, score=float("nan")), "score"),
        (cand("pkg/a.py", 1, 4, score="1"), "score"),
        ({"path": "pkg/a.py", "start": 1, "end": 2, "reason": "search"}, "score"),
    ],
)
def test_invalid_candidates(repo: Repository, bad: Any, field: str) -> None:
    with pytest.raises(InvalidCandidateError) as info:
        RangeMerger(repo).merge([cand("pkg/b.py", 1, 1), bad])
    assert info.value.field == field and info.value.index == 1


def test_provenance_must_span_the_window(repo: Repository) -> None:
    bad = {**cand("pkg/a.py", 1, 10), "provenance": [Part("pkg/a.py", 1, 4, "search", 1.0)]}
    with pytest.raises(InvalidCandidateError) as info:
        RangeMerger(repo).merge([bad])
    assert info.value.field == "provenance"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_link_out_of_the_repository_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "inside"
    root.mkdir()
    (tmp_path / "secret.py").write_text("token = 1\n")
    try:
        (root / "link.py").symlink_to(tmp_path / "secret.py")
    except OSError:
        pytest.skip("cannot create symbolic links here")
    with pytest.raises(InvalidCandidateError) as info:
        RangeMerger(root).merge([cand("link.py", 1, 1)])
    assert info.value.field == "path"


windows = st.lists(
    st.tuples(
        st.integers(1, 30),
        st.integers(0, 6),
        st.sampled_from(["failure", "reference", "search"]),
        st.integers(-5, 5),
    ).map(lambda t: cand("pkg/a.py", t[0], min(30, t[0] + t[1]), t[2], t[3])),
    max_size=12,
)


@given(windows)
def test_merging_property(tmp_path_factory: pytest.TempPathFactory, inputs: list[Any]) -> None:
    root = tmp_path_factory.getbasetemp() / "property-repo"
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "a.py").write_bytes(TEXT.encode())
    merged = RangeMerger(root).merge(inputs)
    covered = {line for w in inputs for line in range(w["start"], w["end"] + 1)}
    ranges = sorted((m.start, m.end) for m in merged)
    # Unions: exactly the input's lines, disjoint and never adjacent.
    assert {line for s, e in ranges for line in range(s, e + 1)} == covered
    assert all(a[1] + 1 < b[0] for a, b in itertools.pairwise(ranges))
    for m in merged:
        assert m.content == text(m.start, m.end)
        parts = m.provenance
        assert (
            len(parts) >= 1 and min(p.start for p in parts) == m.start and max(p.end for p in parts) == m.end
        )
        assert m.score == max(p.score for p in parts)
        assert m.reason == min((p.reason for p in parts), key=["reference", "failure", "search"].index)
    assert sum(len(m.provenance) for m in merged) == len(inputs)
    assert RangeMerger(root).merge(merged) == merged


def test_a_file_refused_by_the_secrets_policy_is_never_re_read(tmp_path: Path) -> None:
    import bugcontext as rc
    from bugcontext.job.merge import RangeMerger

    # (A file refused by name: since issue 17 a secret in the content is redacted, not refused.)
    (tmp_path / "id_rsa_keys.py").write_text("KEY = 'AKIA" + "ABCDEFGHIJKLMNOP'\n")
    with pytest.raises(rc.InvalidCandidateError) as err:
        RangeMerger(tmp_path).merge(
            [{"path": "id_rsa_keys.py", "start": 1, "end": 1, "content": "", "reason": "search", "score": 1}]
        )
    assert err.value.field == "path"
    assert "withheld" in str(err.value)
