"""``bugcontext build --jsonl``: one input per line in, one result (or error) per line out."""

from __future__ import annotations

import io
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import bugcontext
import pytest
from bugcontext.integrations.cli import EXIT_SOME_FAILED, JSONL_CHUNK, main


def cand(path: str, start: int = 1, end: int = 2, content: str = "xy\n", score: Any = 1.0) -> dict[str, Any]:
    return {"path": path, "start": start, "end": end, "content": content, "reason": "search", "score": score}


def good(i: int) -> dict[str, Any]:
    return {"candidates": [cand(f"f{i}.py"), cand(f"f{i}.py", 2, 3, "z" * i)], "max_chars": 10}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(
    monkeypatch: pytest.MonkeyPatch, text: str, *args: str, stderr: io.StringIO | None = None
) -> tuple[int, list[Any], str]:
    """``main(["build", "--jsonl", "-", *args])`` on ``text``: exit status, output objects, stderr."""
    out, err = io.StringIO(), stderr if stderr is not None else io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    status = main(["build", "--jsonl", "-", *args])
    lines = out.getvalue().splitlines()
    return status, [json.loads(line) for line in lines], err.getvalue()


def error(type_: str, field: str, problem: str, index: int | None, line: int) -> dict[str, Any]:
    where = f"input field {field!r}" if index is None else f"candidate {index}: field {field!r}"
    return {
        "error": {
            "type": type_,
            "message": f"{where}: {problem}",
            "problem": problem,
            "field": field,
            "index": index,
            "line": line,
        }
    }


@pytest.mark.parametrize("engine", ["native", "reference"])
def test_each_line_gives_its_result_or_error_in_order(monkeypatch: pytest.MonkeyPatch, engine: str) -> None:
    bad_candidate = {"candidates": [cand("a.py"), cand("b.py", score=float("nan"))], "max_chars": 5}
    lines = [
        json.dumps(good(1)),
        "",
        "{not json",
        json.dumps(bad_candidate),
        "   \t",
        '{"candidates": [], "max_chars": 1, "max_chars": 2}',
        json.dumps({"candidates": [], "max_chars": -3}),
        json.dumps(good(2)),
        "[1, 2]",
    ]
    status, out, err = run(monkeypatch, "\n".join(lines) + "\n", "--engine", engine)
    assert status == EXIT_SOME_FAILED == 3
    # Standard error summarises the failed lines: their count, then each line and its error.
    failed = [x["error"] for x in out if "error" in x]
    assert err.splitlines() == [
        "bugcontext build: 5 of 7 lines could not be built (lines 3, 4, 6, 7, 9); "
        'each has an {"error": ...} output line',
        *(f"  line {e['line']}: {e['type']}: {e['message']}" for e in failed),
    ]
    assert out == [
        bugcontext.build(good(1)).to_dict(),
        error(
            "InvalidInputError",
            "input",
            "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            None,
            3,
        ),
        error("InvalidCandidateError", "score", "must be finite, got nan", 1, 4),
        error(
            "InvalidInputError", "input", 'invalid JSON: key "max_chars" given twice in one object', None, 6
        ),
        error("InvalidInputError", "max_chars", "must be >= 0, got -3", None, 7),
        bugcontext.build(good(2)).to_dict(),
        error("InvalidInputError", "input", "must be a BuildInput or a mapping, not list", None, 9),
    ]


def test_all_valid_exits_0_and_keeps_order_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 2 * JSONL_CHUNK + 7
    status, out, err = run(
        monkeypatch, "".join(json.dumps(good(i % 40)) + "\n" for i in range(n)), "--threads", "2"
    )
    assert (status, err) == (0, "")
    assert out == [bugcontext.build(good(i % 40)).to_dict() for i in range(n)]


def test_cost_options_apply_to_every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "".join(json.dumps(good(i)) + "\n" for i in (1, 5, 9))
    status, out, _ = run(monkeypatch, text, "--cost", "tokens", "--template", "xml", "--budget", "40")
    assert status == 0
    builder = bugcontext.ContextBuilder(cost=bugcontext.Cost(unit="tokens", template="xml"))
    expected = []
    for i in (1, 5, 9):
        data = {k: v for k, v in good(i).items() if k != "max_chars"}
        expected.append(builder.build({**data, "budget": 40}).to_dict())
    assert out == expected
    assert [r["cost"]["template"] for r in out] == ["xml"] * 3


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "".join(json.dumps(good(i)) + "\n" for i in range(3))
    status, out, err = run(monkeypatch, text, stderr=Terminal())
    assert status == 0 and len(out) == 3
    assert "3 lines" in err
    status, out, err = run(monkeypatch, text)
    assert (status, len(out), err) == (0, 3, "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "markdown"], "--jsonl prints JSON lines: --format markdown is not available with it"),
        (["--threads", "0"], "--threads must be >= 1, got 0"),
    ],
)
def test_bad_options_exit_2(monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    status, out, err = run(monkeypatch, json.dumps(good(1)) + "\n", *args)
    assert (status, out) == (2, [])
    assert err == f"bugcontext build: {message}\n"


def test_file_and_jsonl_together_or_threads_alone_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(good(1)) + "\n", encoding="utf-8")
    assert main(["build", str(path), "--jsonl", str(path)]) == 2
    assert capsys.readouterr().err == "bugcontext build: give FILE or --jsonl FILE, not both\n"
    assert main(["build", str(path), "--threads", "2"]) == 2
    assert capsys.readouterr().err == "bugcontext build: --threads is only for --jsonl\n"
    assert main(["build", "--jsonl", str(tmp_path / "missing.jsonl")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("bugcontext build: cannot read ")
    assert main(["build", "--jsonl", str(path)]) == 0
    assert json.loads(capsys.readouterr().out) == bugcontext.build(good(1)).to_dict()


def test_output_streams_before_the_input_ends() -> None:
    """The first chunk's results are written while standard input is still open."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bugcontext", "build", "--jsonl", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=reader, daemon=True).start()
    try:
        proc.stdin.write(b"".join(json.dumps(good(i % 40)).encode() + b"\n" for i in range(JSONL_CHUNK)))
        proc.stdin.flush()
        first = [json.loads(lines.get(timeout=120)) for _ in range(JSONL_CHUNK)]
        assert first == [bugcontext.build(good(i % 40)).to_dict() for i in range(JSONL_CHUNK)]
        assert proc.poll() is None  # still waiting for more input
        proc.stdin.write(json.dumps(good(3)).encode() + b"\n")
        proc.stdin.close()
        assert proc.wait(timeout=120) == 0
        assert json.loads(lines.get(timeout=60)) == bugcontext.build(good(3)).to_dict()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_failure_summary_names_the_first_lines_and_counts_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bugcontext.integrations.cli import JSONL_FAILURES_SHOWN

    bad = JSONL_FAILURES_SHOWN + 3
    text = json.dumps(good(1)) + "\n" + "[]\n" * bad
    status, out, err = run(monkeypatch, text)
    assert status == EXIT_SOME_FAILED and len(out) == bad + 1
    lines = err.splitlines()
    shown = ", ".join(str(n) for n in range(2, 2 + JSONL_FAILURES_SHOWN))
    assert lines[0] == (
        f"bugcontext build: {bad} of {bad + 1} lines could not be built (lines {shown} and 3 more); "
        'each has an {"error": ...} output line'
    )
    assert lines[1:] == [
        f"  line {n}: InvalidInputError: input field 'input': must be a BuildInput or a mapping, not list"
        for n in range(2, 2 + JSONL_FAILURES_SHOWN)
    ]
