"""The ``repo-context`` command line: ``build`` (JSON in, JSON or Markdown out) and ``context``
(a genuine failing pytest run on a tiny repository)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import repo_context
from repo_context.cli import main
from repo_context.composer import fence, language_of, render_markdown


def cli(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m repo_context.cli ARGS`` as a separate process."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "repo_context.cli", *args],
        input=data,
        capture_output=True,
        timeout=300,
        check=False,
    )


def cand(path: str, start: int, end: int, content: str, reason: str, score: Any) -> dict[str, Any]:
    return {"path": path, "start": start, "end": end, "content": content, "reason": reason, "score": score}


INPUT = {
    "candidates": [
        cand("src/a.py", 1, 3, "abc\n", "search", 9.5),
        cand("./src/b.py", 10, 12, "x = 1\n", "reference", 1),
        cand("src/a.py", 2, 5, "longer text\n", "failure", 0.5),
        cand("src/c.py", 1, 1, "c" * 50, "search", 2.0),
    ],
    "max_chars": 30,
    "failureFile": "src/a.py",
}


def expected_json(data: Any) -> dict[str, Any]:
    result: dict[str, Any] = repo_context.reference.build(data).to_dict()
    return result


@pytest.mark.parametrize("engine", ["native", "reference"])
def test_build_reads_a_file_and_prints_the_result_json(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(INPUT), encoding="utf-8")
    proc = cli("build", str(path), "--engine", engine)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""
    out = json.loads(proc.stdout)
    assert out == expected_json(INPUT)
    # The failure file's windows first (by score), then the reference; a.py 2-5 overlaps 1-3.
    assert out["selected"] == [0, 1]
    assert out["items"][1]["path"] == "src/b.py"
    assert out["used_chars"] == len("abc\n") + len("x = 1\n")
    assert out["omitted"] == [
        {"index": 2, "rank": 1, "reason": "overlap", "overlaps": 0},
        {"index": 3, "rank": 3, "reason": "budget"},
    ]


def test_build_reads_standard_input_by_default_and_with_dash() -> None:
    for args in (("build",), ("build", "-")):
        proc = cli(*args, stdin=json.dumps(INPUT))
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == expected_json(INPUT)


def test_build_in_process_with_capsys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(INPUT), encoding="utf-8")
    assert main(["build", str(path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == expected_json(INPUT)
    assert captured.err == ""


def test_json_output_is_ascii_and_round_trips_lone_surrogates_and_astral() -> None:
    content = "lone \ud800 and astral \U0001f600 and 日本"
    data = {"candidates": [cand("a.py", 1, 1, content, "search", 1)], "max_chars": 100}
    proc = cli("build", stdin=json.dumps(data))  # json.dumps escapes the surrogate
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.isascii()
    out = json.loads(proc.stdout)
    assert out["items"][0]["content"] == content
    assert out["used_chars"] == len(content)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_score_is_invalid_input(token: str) -> None:
    text = json.dumps(
        {
            "candidates": [cand("a.py", 1, 1, "x", "search", 1), cand("b.py", 1, 1, "y", "search", 2)],
            "max_chars": 5,
        }
    )
    text = text.replace('"score": 2', f'"score": {token}')
    assert token in text
    proc = cli("build", stdin=text)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.endswith("\n") and err.count("\n") == 1
    assert "candidate 1" in err and "score" in err


def test_invalid_top_level_field_names_the_field() -> None:
    proc = cli("build", stdin=json.dumps({"candidates": [], "max_chars": -1}))
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "max_chars" in err


@pytest.mark.parametrize("text", ["{bad json", "", "\xff", '{"candidates": [], "max_chars": 1'])
def test_bad_json_is_invalid_input(text: str) -> None:
    proc = cli("build", stdin=text.encode("latin-1"))
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "invalid JSON" in err


def test_missing_file_is_invalid_input(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    proc = cli("build", str(missing))
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1 and "nope.json" in err


def _fenced_blocks(markdown: str) -> list[tuple[str, str, str]]:
    """``(fence, info, body)`` of each fenced block, read the CommonMark way: a block
    closes at the first line that is a backtick run at least as long as its opening."""
    blocks = []
    lines = markdown.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        opening = re.match(r"^(`{3,})([^`]*)$", lines[i].rstrip("\n"))
        if not opening:
            i += 1
            continue
        ticks, info = opening.groups()
        j = i + 1
        while not re.match(rf"^`{{{len(ticks)},}}\s*$", lines[j]):
            j += 1
        blocks.append((ticks, info, "".join(lines[i + 1 : j])))
        i = j + 1
    return blocks


def test_markdown_fences_content_that_contains_fences() -> None:
    nasty = "a = '''\n```\nnot the end\n````\n'''\n"
    data = {
        "candidates": [
            cand("pkg/x.py", 3, 7, nasty, "failure", 1),
            cand("notes/readme.md", 1, 1, "no newline at end", "search", 1),
            cand("Makefile", 1, 1, "all:\n", "reference", 1),
        ],
        "max_chars": 1000,
    }
    proc = cli("build", "--format", "markdown", stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    blocks = _fenced_blocks(out)
    # Selection order: reference, failure, search.
    assert [(info, body) for _, info, body in blocks] == [
        ("", "all:\n"),
        ("python", nasty),
        ("markdown", "no newline at end\n"),
    ]
    assert blocks[1][0] == "`````"  # longer than the 4-backtick run inside
    headers = re.findall(r"^### (.*)$", out, flags=re.M)
    assert headers == [
        "`Makefile:1-1` (reference)",
        "`pkg/x.py:3-7` (failure)",
        "`notes/readme.md:1-1` (search)",
    ]


def test_render_helpers() -> None:
    assert fence("plain") == "```"
    assert fence("x ```` y") == "`````"
    assert language_of("a/b.py") == "python"
    assert language_of("a/b.RS") == "rust"
    assert language_of("a/.bashrc") == ""
    assert language_of("Makefile") == ""
    result = repo_context.build({"candidates": [], "max_chars": 0})
    assert "(no code selected)" in render_markdown(result)


def test_markdown_writes_lone_surrogates_as_escapes() -> None:
    data = {"candidates": [cand("a.py", 1, 1, "x = '\udcff'\n", "search", 1)], "max_chars": 100}
    proc = cli("build", "--format", "markdown", stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    assert "x = '\\udcff'" in proc.stdout.decode()


# --- context: a genuine failing run on a tiny repository ---------------------------------

LIB = """\
def parse_ratio(text):
    num, den = text.split("/")
    return int(num) / int(den)


def mean_ratio(items):
    return sum(parse_ratio(item) for item in items) / len(items)


def unrelated_helper():
    return "ratio words here so that search finds something"
"""

TEST = """\
from lib.ratios import mean_ratio


def test_mean_ratio():
    assert mean_ratio(["1/2", "3/0"]) == 0.25
"""


@pytest.fixture(scope="module")
def failing_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("ratios")
    (root / "lib").mkdir()
    (root / "lib" / "__init__.py").write_text("", encoding="utf-8")
    (root / "lib" / "ratios.py").write_text(LIB, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_ratios.py").write_text(TEST, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(root)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--tb=long", "tests"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    log = root.parent / f"{root.name}.log"
    log.write_text(proc.stdout, encoding="utf-8")
    return root, log


def test_context_prints_markdown_context_and_omission_summary(
    failing_repo: tuple[Path, Path],
) -> None:
    repo, log = failing_repo
    proc = cli("context", "--repo", str(repo), "--pytest-log", str(log))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert out.startswith("## Code context\n")
    headers = re.findall(r"^### `(.*?)` \((\w+)\)$", out, flags=re.M)
    # The deepest frame (ZeroDivisionError in parse_ratio) is the failure file's first window.
    assert headers[0] == ("lib/ratios.py:1-3", "failure")
    assert ("lib/ratios.py:6-7", "failure") in headers
    assert ("tests/test_ratios.py:4-5", "failure") in headers
    blocks = _fenced_blocks(out)
    lib = (repo / "lib" / "ratios.py").read_text(encoding="utf-8").splitlines(keepends=True)
    assert blocks[0][2] == "".join(lib[0:3])
    assert "- test: test_mean_ratio" in out
    assert "- error: ZeroDivisionError: division by zero" in out
    assert "- failure file: lib/ratios.py" in out
    assert "## Omitted" in out
    # Every omitted candidate is explained on its own line.
    omitted = re.findall(r"^- #(\d+) `.*?` (\w+), score [^:]+: (overlaps #\d+|budget)", out, flags=re.M)
    summary = re.search(r"(\d+) omitted \(overlap (\d+), budget (\d+)\)", out)
    assert summary is not None
    total, overlap, budget = map(int, summary.groups())
    assert len(omitted) == total == overlap + budget
    assert overlap >= 1  # the reference to mean_ratio repeats its failure window


def test_context_json_is_only_the_build_result(failing_repo: tuple[Path, Path]) -> None:
    repo, log = failing_repo
    proc = cli(
        "context",
        "--repo",
        str(repo),
        "--pytest-log",
        str(log),
        "--format",
        "json",
        "--max-chars",
        "120",
        "--engine",
        "reference",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    assert set(out) == {
        "items",
        "selected",
        "used_chars",
        "truncated",
        "omitted",
        "failure_file",
        "cost",
        "budget",
        "used",
        "blocks",
    }
    assert (out["budget"], out["cost"]["unit"]) == (120, "chars")
    assert out["used_chars"] == out["used"] <= 120
    assert out["used_chars"] == sum(len(item["content"]) for item in out["items"])
    assert out["truncated"] is True
    assert any(o["reason"] == "budget" for o in out["omitted"])
    for item in out["items"]:
        lines = (repo / item["path"]).read_text(encoding="utf-8").splitlines(keepends=True)
        assert item["content"] == "".join(lines[item["start"] - 1 : item["end"]])
    native = cli(
        "context", "--repo", str(repo), "--pytest-log", str(log), "--format", "json", "--max-chars", "120"
    )
    assert json.loads(native.stdout) == out


def test_context_zero_budget_omits_everything(failing_repo: tuple[Path, Path]) -> None:
    repo, log = failing_repo
    proc = cli(
        "context", "--repo", str(repo), "--pytest-log", str(log), "--max-chars", "0", "--format", "json"
    )
    out = json.loads(proc.stdout)
    assert out["items"] == [] and out["used_chars"] == 0
    assert out["truncated"] is True
    assert out["omitted"] and all(o["reason"] == "budget" for o in out["omitted"])


def test_context_query_adds_search_words(failing_repo: tuple[Path, Path]) -> None:
    repo, log = failing_repo
    proc = cli(
        "context",
        "--repo",
        str(repo),
        "--pytest-log",
        str(log),
        "--query",
        "unrelated helper",
        "--format",
        "json",
        "--max-chars",
        "100000",
    )
    out = json.loads(proc.stdout)
    found = [(i["path"], i["start"], i["reason"]) for i in out["items"]]
    assert ("lib/ratios.py", 10, "search") in found


def test_context_bad_arguments_exit_2(failing_repo: tuple[Path, Path], tmp_path: Path) -> None:
    repo, log = failing_repo
    for args in (
        ("--repo", str(tmp_path / "missing"), "--pytest-log", str(log)),
        ("--repo", str(repo), "--pytest-log", str(tmp_path / "missing.log")),
        ("--repo", str(repo), "--pytest-log", str(log), "--max-chars", "-1"),
    ):
        proc = cli("context", *args)
        assert proc.returncode == 2, args
        assert proc.stdout == b""
        assert proc.stderr.decode().count("\n") == 1
