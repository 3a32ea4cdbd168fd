"""The development set of bugs in other languages: its case list and recorded runs (offline)."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bugcontext.evaluation.langbugs import (
    DEFAULT_LANG_CASES,
    LANGUAGES,
    _source_entries,
    is_lang_case,
    patch_gold,
    recorded_case,
    validate_lang_case,
)
from bugcontext.evaluation.realbugs import PreparationError
from bugcontext.job.sources.logs import detect_format, parse_log
from bugcontext.job.sources.runs import parse_junit_xml

CASES: list[dict[str, Any]] = json.loads(DEFAULT_LANG_CASES.read_text(encoding="utf-8"))


def test_every_case_is_valid_and_unique() -> None:
    for case in CASES:
        validate_lang_case(case)
        assert is_lang_case(case)
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids))


#: Cases per language the set holds at least: six (the issue's aim) in every language.
MINIMUM = {"go": 6, "rust": 6, "java": 6, "javascript": 6, "typescript": 6}


def test_cases_per_language() -> None:
    counts = Counter(case["language"] for case in CASES)
    assert set(MINIMUM) == set(LANGUAGES)
    assert all(counts[language] >= MINIMUM[language] for language in LANGUAGES), counts


INJECTED = [case for case in CASES if case["kind"] == "injected"]


@pytest.mark.parametrize("case", INJECTED, ids=[c["id"] for c in INJECTED])
def test_gold_is_the_lines_the_patch_changes(case: dict[str, Any]) -> None:
    gold = [(g["path"], g["start"], g["end"]) for g in case["gold"]]
    assert patch_gold(case["patch"]) == gold


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_recorded_run_is_a_failing_run(case: dict[str, Any]) -> None:
    recorded = recorded_case(case)
    assert recorded.log.strip()
    marker = {
        "go": "--- FAIL:",
        "rust": "test result: FAILED",
        "java": "tests failed",
        "javascript": "failing",
        "typescript": "failing",
    }[case["language"]]
    assert marker in recorded.log
    if case.get("recorded_junit"):
        assert recorded.junit is not None and ("<failure" in recorded.junit or "<error" in recorded.junit)


#: The log format each language's runner writes, as the log readers detect it.
RUNNER_FORMAT = {"go": "go", "rust": "cargo", "java": "java", "javascript": "mocha", "typescript": "mocha"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_recorded_run_is_read_as_its_runners_failures(case: dict[str, Any]) -> None:
    recorded = recorded_case(case)
    assert detect_format(recorded.log) == RUNNER_FORMAT[case["language"]]
    assert parse_log(recorded.log)
    if recorded.junit is not None:
        assert parse_junit_xml(recorded.junit.encode("utf-8"))


def test_patch_gold_of_a_pure_deletion_is_the_two_lines_around() -> None:
    patch = "--- a/x.go\n+++ b/x.go\n@@ -3,4 +3,3 @@\n a\n-b\n c\n d\n"
    assert patch_gold(patch) == [("x.go", 3, 4)]


def test_patch_gold_of_two_runs_in_one_hunk() -> None:
    patch = "--- a/s.rs\n+++ b/s.rs\n@@ -10,5 +10,5 @@\n a\n-b\n+B\n c\n-d\n+D\n"
    assert patch_gold(patch) == [("s.rs", 11, 11), ("s.rs", 13, 13)]


def test_patch_gold_refuses_a_hunk_without_a_file() -> None:
    with pytest.raises(ValueError, match="hunk"):
        patch_gold("@@ -1 +1 @@\n-a\n+b\n")


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("id", "../up", "'id'"),
        ("language", "cobol", "'language'"),
        ("kind", "made-up", "'kind'"),
        ("source", {"registry": "npm", "package": "x", "version": "1"}, "'source'"),
        ("gold", [], "'gold'"),
        ("gold", [{"path": "/etc/passwd", "start": 1, "end": 1}], "'gold[0].path'"),
        ("gold", [{"path": "a.go", "start": 3, "end": 2}], "'gold[0]'"),
        ("test_command", "", "'test_command'"),
    ],
)
def test_a_bad_field_is_named(field: str, value: Any, named: str) -> None:
    case = copy.deepcopy(CASES[0])
    case[field] = value
    with pytest.raises(ValueError, match=re.escape(named)):
        validate_lang_case(case)
    assert CASES[0][field] != value  # the input is not mutated


def test_a_release_pair_names_its_fixed_release_and_overlay() -> None:
    pair = next(case for case in CASES if case["kind"] == "release-pair")
    validate_lang_case(pair)
    for field, value in (("fixed_version", ""), ("overlay", []), ("overlay", ["../up"])):
        broken = copy.deepcopy(pair)
        broken["source"][field] = value
        with pytest.raises(ValueError, match=re.escape(f"'source.{field}'")):
            validate_lang_case(broken)


def test_an_injected_bug_needs_its_patch() -> None:
    case = {key: value for key, value in CASES[0].items() if key != "patch"}
    with pytest.raises(ValueError, match="'patch'"):
        validate_lang_case(case)


def test_a_recorded_path_outside_the_data_folder_is_refused() -> None:
    case = dict(CASES[0], recorded_log="../realbugs.json")
    with pytest.raises(ValueError, match="relative"):
        recorded_case(case)


def test_source_entries_are_the_deb_src_twins_of_the_machines_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("# a comment\ndeb http://mirror.example/debian stable main\n")
    (tmp_path / "sources.list.d" / "extra.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: stable\nComponents: main\n\n"
        "Types: deb-src\nURIs: http://mirror.example/other\nSuites: stable\nComponents: main\n"
    )
    one_line, deb822 = _source_entries(tmp_path)
    assert one_line == "deb-src http://mirror.example/debian stable main\n"
    assert deb822 == (
        "Types: deb-src\nURIs: http://mirror.example/debian\nSuites: stable\nComponents: main\n\n"
    )


def test_no_package_source_is_a_preparation_error(tmp_path: Path) -> None:
    with pytest.raises(PreparationError, match="no Debian package source"):
        _source_entries(tmp_path)
