"""The ``bugcontext`` command line: ``build`` (JSON in, JSON or Markdown out) and ``context``
(a genuine failing pytest run on a tiny repository)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext.core.composer import block_language, fence, render_markdown
from bugcontext.integrations.cli import main, run_context
from bugcontext.job.workspace import missing_lines


def cli(*args: str, stdin: str | bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m bugcontext ARGS`` as a separate process."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run(
        [sys.executable, "-m", "bugcontext", *args],
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
    result: dict[str, Any] = bugcontext.reference.build(data).to_dict()
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
        "Makefile:1-1 (referenced definition)",
        "pkg/x.py:3-7 (failure evidence)",
        "notes/readme.md:1-1 (search hit)",
    ]


def test_render_helpers() -> None:
    assert fence("plain") == "```"
    assert fence("x ```` y") == "`````"
    assert block_language("a/b.py") == "python"
    assert block_language("a/b.RS") == "rust"
    assert block_language("a/.bashrc") == ""
    assert block_language("Makefile") == ""
    result = bugcontext.build({"candidates": [], "max_chars": 0})
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
    # Standard output is exactly the section, costed in characters as rendered (the default).
    report = run_context(repo, log, cost={"template": "markdown"})
    head = "".join(block.text for block in report.failure_blocks)
    assert head.startswith("### Failure: tests/test_ratios.py::test_mean_ratio\n")
    assert out == report.section == head + bugcontext.render(report.result)
    assert len(out) == report.used <= 16_000
    headers = re.findall(r"^### (\S+) \(([a-z ]+)\)$", out, flags=re.M)
    # The deepest frame (ZeroDivisionError in parse_ratio) is the failure file's first window;
    # every file of the traceback is a failing file, and each label says what the evidence is.
    assert headers[0] == ("lib/ratios.py:1-3", "failure evidence in the failing file")
    assert ("lib/ratios.py:6-7", "failure evidence in the failing file") in headers
    assert ("tests/test_ratios.py:4-5", "failure evidence in the failing file") in headers
    blocks = _fenced_blocks(out[len(head) :])
    lib = (repo / "lib" / "ratios.py").read_text(encoding="utf-8").splitlines(keepends=True)
    assert blocks[0][2] == "".join(lib[0:3])
    # The failure and omission report goes to standard error.
    err = proc.stderr.decode()
    assert not re.search("^## (Failure|Omitted)$", out, flags=re.M)
    assert err == report.summary()
    assert "- test: test_mean_ratio" in err
    assert "- error: ZeroDivisionError: division by zero" in err
    assert "- failure file: lib/ratios.py" in err
    assert "## Omitted" in err
    # Every omitted candidate is explained on its own line, in the budget's unit.
    omitted = re.findall(r"^- #(\d+) `.*?` (\w+), score [^:]+: (overlaps #\d+|budget)", err, flags=re.M)
    summary = re.search(r"(\d+) omitted \(overlap (\d+), budget (\d+)\)", err)
    assert summary is not None
    total, overlap, budget = map(int, summary.groups())
    assert len(omitted) == total == overlap + budget
    assert overlap >= 1  # the reference to mean_ratio repeats its failure window


def test_context_report_file_and_budget_unit(failing_repo: tuple[Path, Path], tmp_path: Path) -> None:
    repo, log = failing_repo
    target = tmp_path / "report.md"
    proc = cli(
        "context", "--repo", str(repo), "--pytest-log", str(log), "--budget", "150", "--cost", "tokens",
        "--report", str(target), "--no-cache",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = run_context(repo, log, cost={"unit": "tokens", "template": "markdown"}, max_chars=150)
    # The report goes to the file; standard error has only the missing-evidence warnings.
    assert proc.stderr.decode() == "".join(
        f"bugcontext context: warning: missing failure evidence: {line}\n"
        for line in missing_lines(report.result)
    )
    out = proc.stdout.decode()
    assert out == report.section
    counter = bugcontext.TokenCounter("o200k_base")
    assert counter.count_one(out) == report.used <= 150
    text = target.read_text(encoding="utf-8")
    assert text == report.summary()
    assert "of 150 o200k_base tokens used (the markdown section)" in text
    budget_lines = [line for line in text.splitlines() if line.endswith("block)") and ": budget (" in line]
    assert budget_lines and all("o200k_base tokens as a markdown block" in line for line in budget_lines)
    assert "characters of content" not in text


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
        "failure_files",
        "cost",
        "budget",
        "used",
        "blocks",
        "missing_critical",
        "digest",
        "policy_omitted",
        "failure",
        "failing_tests",
        "policy_redacted",
        "build_budget",
        "build_used",
        "failure_blocks",
        "failure_blocks_left_out",
        "schema",
    }
    assert out["schema"] == 1
    # The failure block opens the section, costed as the content is (no template): its text.
    message = "ZeroDivisionError: division by zero"
    assert out["failure_blocks"] == [
        {
            "test": "tests/test_ratios.py::test_mean_ratio",
            "test_cut": 0,
            "exception": "ZeroDivisionError",
            "message": "division by zero",
            "phase": "call",
            "cut": 0,
            "cost": len(message),
            "text": f"### Failure: tests/test_ratios.py::test_mean_ratio\n```text\n{message}\n```\n\n",
        }
    ]
    assert out["build_budget"] == 120 - len(message)
    assert out["policy_omitted"] == []
    assert out["policy_redacted"] == []
    assert out["failure"] == {
        "test": "test_mean_ratio",
        "test_id": "tests/test_ratios.py::test_mean_ratio",
        "error": "ZeroDivisionError",
        "message": "division by zero",
        "failure_file": "lib/ratios.py",
    }
    assert len(out["digest"]) == 64 and int(out["digest"], 16) >= 0
    assert (out["budget"], out["cost"]["unit"]) == (120, "chars")
    assert out["used_chars"] == out["build_used"] == out["used"] - len(message) <= out["build_budget"]
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


def test_context_issue_names_a_definition(failing_repo: tuple[Path, Path], tmp_path: Path) -> None:
    shared, log = failing_repo
    repo = tmp_path / "repo"
    shutil.copytree(shared, repo)  # the log's paths are relative: it fits the copy too
    issue = tmp_path / "issue.md"
    (repo / "lib" / "units.py").write_text("def to_unit(value):\n    return value\n", encoding="utf-8")
    issue.write_text("mean_ratio fails; maybe `to_unit` is involved?\n", encoding="utf-8")

    def items(*extra: str) -> list[tuple[str, int, int, str]]:
        proc = cli("context", "--repo", str(repo), "--pytest-log", str(log), "--format", "json", *extra)
        assert proc.returncode == 0, proc.stderr
        return [(i["path"], i["start"], i["end"], i["reason"]) for i in json.loads(proc.stdout)["items"]]

    plain = items("--max-chars", "100000")
    with_issue = items("--max-chars", "100000", "--issue", str(issue))
    # The function the issue names comes after every window of the log (in the search tier).
    assert with_issue == [*plain, ("lib/units.py", 1, 2, "search")]
    missing = cli("context", "--repo", str(repo), "--pytest-log", str(log), "--issue", str(tmp_path / "no"))
    assert missing.returncode == 2 and b"cannot read" in missing.stderr and missing.stdout == b""


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


# --- usage errors, output errors, repeated keys, a log on standard input, sections -------


@pytest.mark.parametrize(
    ("args", "command", "expected"),
    [
        (["build", "--engine", "foo"], "build", "argument --engine: invalid choice: 'foo'"),
        (
            ["context", "--repo", "."],
            "context",
            "one of the arguments --log (--pytest-log) --junit-xml is required",
        ),
        (["frob"], "", "argument COMMAND: invalid choice: 'frob'"),
        ([], "", "the following arguments are required: COMMAND"),
        (
            ["build", "--budget", "many"],
            "build",
            "argument --budget: expected a whole number >= 0, got 'many'",
        ),
        (["build", "a.json", "b.json"], "build", "unrecognized arguments: b.json"),
        (["context", "--repo", ".", "--log", "x", "--bogus"], "context", "unrecognized arguments: --bogus"),
        (["cache", "clear", "--format", "json"], "cache clear", "unrecognized arguments: --format json"),
    ],
)
def test_usage_errors_are_one_line_on_stderr_naming_the_subcommand(
    args: list[str], command: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    prog = f"bugcontext {command}".rstrip()
    assert captured.err.startswith(f"{prog}: error: {expected}")
    assert captured.err.endswith(f" (see {prog} --help)\n")
    assert captured.err.count("\n") == 1


def test_usage_error_exit_status_and_help_in_a_process() -> None:
    proc = cli("build", "--engine", "foo")
    assert (proc.returncode, proc.stdout) == (2, b"")
    assert proc.stderr.decode().startswith("bugcontext build: error: argument --engine: invalid choice")
    assert proc.stderr.count(b"\n") == 1
    for args in (("--help",), ("build", "--help"), ("context", "-h")):
        proc = cli(*args)
        assert (proc.returncode, proc.stderr) == (0, b""), args
        out = proc.stdout.decode()
        assert out.startswith("usage: bugcontext") and "--help" in out and out.count("\n") > 5


def test_help_in_process_returns_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--help"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("usage: bugcontext build") and captured.err == ""


BIG_INPUT = json.dumps(
    {"candidates": [cand(f"m{i}.py", 1, 1, "x" * 1000, "search", 1) for i in range(300)], "max_chars": 10**6}
)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_output_to_a_full_device_is_one_line_and_exit_1(fmt: str) -> None:
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "bugcontext", "build", "--format", fmt],
            input=BIG_INPUT.encode(),
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 1
    assert proc.stderr.decode() == "bugcontext build: cannot write the output: No space left on device\n"


def test_output_to_a_closed_pipe_is_one_line_and_exit_1() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will ever read: the first write fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bugcontext", "build"],
            input=BIG_INPUT.encode(),
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 1
    # One line, and no second error when Python flushes its streams at exit.
    assert proc.stderr.decode() == "bugcontext build: cannot write the output: Broken pipe\n"


def test_output_error_in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(INPUT).encode())))
    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["build"]) == 1
    assert capsys.readouterr().err == "bugcontext build: cannot write the output: Broken pipe\n"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"candidates": [], "max_chars": -1, "max_chars": 1}', "max_chars"),
        ('{"candidates": [{"path": "a.py", "path": "b.py"}], "max_chars": 1}', "path"),
        ('{"candidates": [], "max_chars": 1, "cost": {"unit": "chars", "unit": "chars"}}', "unit"),
        ('{"candidates": [{"path": "a.py", "x": {"y": [{"z": 1, "z": 1}]}}], "max_chars": 1}', "z"),
    ],
)
def test_repeated_json_key_is_invalid_input(text: str, key: str) -> None:
    proc = cli("build", stdin=text)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert err.count("\n") == 1
    assert err.startswith("bugcontext build: invalid JSON in standard input: ")
    assert f'key "{key}" given twice' in err


def test_equal_keys_in_different_objects_are_fine(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "input.json"
    path.write_text(json.dumps(INPUT), encoding="utf-8")  # every candidate has "path", ...
    assert main(["build", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == expected_json(INPUT)


def test_context_reads_the_log_from_standard_input(failing_repo: tuple[Path, Path]) -> None:
    repo, log = failing_repo
    from_file = cli("context", "--repo", str(repo), "--pytest-log", str(log))
    from_stdin = cli("context", "--repo", str(repo), "--pytest-log", "-", stdin=log.read_bytes())
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout
    assert from_stdin.stderr == from_file.stderr
    assert b"- test: test_mean_ratio" in from_stdin.stderr
    json_args = ("--format", "json", "--max-chars", "200")
    from_file = cli("context", "--repo", str(repo), "--pytest-log", str(log), *json_args)
    from_stdin = cli("context", "--repo", str(repo), "--pytest-log", "-", *json_args, stdin=log.read_bytes())
    assert json.loads(from_stdin.stdout) == json.loads(from_file.stdout)


@pytest.mark.parametrize("template", ["markdown", "xml"])
@pytest.mark.parametrize("line_numbers", [False, True])
def test_build_markdown_with_a_template_prints_the_section_as_costed(
    template: str, line_numbers: bool
) -> None:
    data = {**INPUT, "max_chars": 1000}
    options = ["--template", template, *(["--line-numbers"] if line_numbers else [])]
    proc = cli("build", "--format", "markdown", *options, stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    cost = {"template": template, "line_numbers": line_numbers}
    result = bugcontext.build(
        {**{k: v for k, v in data.items() if k != "max_chars"}, "budget": 1000, "cost": cost}
    )
    section = bugcontext.render(result)
    assert section and proc.stdout.decode() == section
    assert len(section) == result.used <= 1000  # the section is what the budget counted
    # Without a template the output is the Markdown section it always was.
    proc = cli("build", "--format", "markdown", stdin=json.dumps(data))
    assert proc.stdout.decode() == render_markdown(bugcontext.build(data))


@pytest.mark.parametrize("template", ["markdown", "xml"])
def test_context_markdown_with_a_template_prints_the_section(
    failing_repo: tuple[Path, Path], template: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, log = failing_repo
    args = ["context", "--repo", str(repo), "--pytest-log", str(log), "--template", template, "--no-cache"]
    assert main(args) == 0
    captured = capsys.readouterr()
    report = run_context(repo, log, cost={"template": template})
    section = "".join(block.text for block in report.failure_blocks) + bugcontext.render(report.result)
    assert report.failure_blocks and captured.out == section
    assert len(section) == report.used <= 16_000
    assert captured.err == report.summary()
    assert f"(the {template} section)" in captured.err
    assert "## Omitted" in captured.err
    # markdown() is the section and the report in one document.
    gap = "" if section.endswith("\n\n") else "\n"
    assert report.markdown() == section + gap + report.summary()


def test_build_cost_options_change_only_the_fields_they_name() -> None:
    data = {
        "candidates": [cand("a.py", 1, 1, "x", "search", 1)],
        "budget": 100,
        "cost": {"unit": "tokens", "encoding": "cl100k_base", "template": "xml"},
    }
    proc = cli("build", "--order", "file", stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    cost = json.loads(proc.stdout)["cost"]
    assert cost == {
        "unit": "tokens",
        "encoding": "cl100k_base",
        "template": "xml",
        "line_numbers": False,
        "order": "file",
    }
    proc = cli("build", "--line-numbers", stdin=json.dumps(data))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cost"]["line_numbers"] is True
    # Changing the unit drops the encoding that belonged to the old one.
    proc = cli("build", "--cost", "chars", stdin=json.dumps(data))
    assert json.loads(proc.stdout)["cost"]["encoding"] is None


def test_build_markdown_without_a_template_is_printed_in_the_costs_order() -> None:
    # --order file is honoured by the plain Markdown section too, not only by a template's.
    data = {
        "candidates": [
            cand("a.py", 1, 2, "a\n", "search", 9),
            cand("b.py", 5, 5, "b\n", "search", 8),
            cand("a.py", 10, 12, "c\n", "search", 7),
        ],
        "budget": 100,
    }
    headers = {}
    for order in ("rank", "file"):
        proc = cli("build", "--order", order, "--format", "markdown", stdin=json.dumps(data))
        assert proc.returncode == 0, proc.stderr
        headers[order] = [line for line in proc.stdout.decode().splitlines() if line.startswith("### ")]
    assert headers == {
        "rank": ["### a.py:1-2 (search hit)", "### b.py:5-5 (search hit)", "### a.py:10-12 (search hit)"],
        "file": ["### a.py:1-2 (search hit)", "### a.py:10-12 (search hit)", "### b.py:5-5 (search hit)"],
    }


def test_markdown_header_paths_cannot_break_the_line() -> None:
    data = {"candidates": [cand("src/we\nird.py", 1, 1, "x", "search", 1)], "max_chars": 99}
    out = cli("build", "--format", "markdown", stdin=json.dumps(data)).stdout.decode()
    assert "src/we\\u000aird.py:1-1" in out
    assert "\nird.py" not in out


def test_context_budget_options_are_checked(tmp_path: Path) -> None:
    (tmp_path / "log.txt").write_text("nothing failed\n")
    both = cli(
        "context",
        "--repo",
        str(tmp_path),
        "--pytest-log",
        str(tmp_path / "log.txt"),
        "--budget",
        "5",
        "--max-chars",
        "5",
    )
    assert (both.returncode, both.stdout) == (2, b"")
    assert b"not both" in both.stderr
    chars = cli(
        "context",
        "--repo",
        str(tmp_path),
        "--pytest-log",
        str(tmp_path / "log.txt"),
        "--cost",
        "tokens",
        "--max-chars",
        "5",
    )
    assert (chars.returncode, chars.stdout) == (2, b"")
    assert b"character budget" in chars.stderr
    tokens = cli(
        "context",
        "--repo",
        str(tmp_path),
        "--pytest-log",
        str(tmp_path / "log.txt"),
        "--cost",
        "tokens",
        "--format",
        "json",
    )
    assert tokens.returncode == 0, tokens.stderr
    assert json.loads(tokens.stdout)["budget"] == 4000


@pytest.mark.parametrize("flag", ["--report", "--trace"])
def test_context_refuses_dash_as_an_output_file(
    failing_repo: tuple[Path, Path], tmp_path: Path, flag: str
) -> None:
    """``--report -`` wrote a file called ``-`` in the current folder, where ``--log -`` reads
    standard input: it is a usage error now, before any work, and nothing is written."""
    repo, log = failing_repo
    proc = subprocess.run(
        [sys.executable, "-m", "bugcontext", "context", "--repo", str(repo), "--pytest-log", str(log),
         flag, "-", "--no-cache"],
        cwd=tmp_path, capture_output=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stdout == b""
    problem = "'-' is standard input (as in --log -), not an output; give a file path"
    assert proc.stderr.decode() == f"bugcontext context: {flag} -: {problem}\n"
    assert not (tmp_path / "-").exists()
