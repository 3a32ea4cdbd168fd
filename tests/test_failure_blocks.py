"""The context section opens with the failure: one block per failing test used, redacted, a
long message cut with a visible marker, in the section's template, costed inside the budget."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import bugcontext
import pytest
from bugcontext import Limits, Workspace
from bugcontext.integrations.cli import main
from bugcontext.job._failure_block import cut_message, fit_blocks
from builders import ratios_log, ratios_repo

# A GitHub token, assembled here so that the file itself holds none.
TOKEN = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
ID = "tests/test_ratios.py::test_mean_ratio"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return ratios_repo(tmp_path)


def _with_message(message: str) -> str:
    """The log with the failure's message replaced by ``message``."""
    log = ratios_log().replace(
        "E       ZeroDivisionError: division by zero", f"E       ZeroDivisionError: {message}"
    )
    return log.replace("- ZeroDivisionError: division by zero", f"- ZeroDivisionError: {message}")


def test_the_section_opens_with_the_failure_in_markdown(repo: Path) -> None:
    result = Workspace(repo, cache=False).context(ratios_log(), budget=900)
    (block,) = result.failure_blocks
    text = f"### Failure: {ID}\n```text\nZeroDivisionError: division by zero\n```\n\n"
    assert block.to_dict() == {
        "test": ID,
        "test_cut": 0,
        "exception": "ZeroDivisionError",
        "message": "division by zero",
        "phase": "call",
        "cut": 0,
        "cost": len(text),
        "text": text,
    }
    assert result.section == text + bugcontext.render(result.result)
    assert len(result.section) == result.used <= result.budget == 900
    assert result.result.budget == 900 - len(text)


def test_xml_template_gives_a_failure_element(repo: Path) -> None:
    result = Workspace(repo, cache=False).context(
        _with_message('a < b & "c"'), budget=900, cost={"template": "xml"}
    )
    (block,) = result.failure_blocks
    element = ET.fromstring(block.text)
    assert (element.tag, element.attrib, element.text) == (
        "failure",
        {"test": ID, "exception": "ZeroDivisionError", "phase": "call"},
        'a < b & "c"',
    )
    assert block.text.endswith("</failure>\n")
    assert result.section.startswith(block.text) and len(result.section) == result.used <= 900


def test_tokens_keep_the_whole_section_within_the_budget(repo: Path) -> None:
    counter = bugcontext.TokenCounter("o200k_base")
    for budget in (60, 90, 150, 400):
        for template in ("markdown", "xml"):
            result = Workspace(repo, cache=False).context(
                ratios_log(), budget=budget, cost={"unit": "tokens", "template": template}
            )
            assert result.failure_blocks, (budget, template)
            assert counter.count_one(result.section) == result.used <= budget


def test_a_secret_in_the_message_is_redacted(repo: Path) -> None:
    result = Workspace(repo, cache=False).context(_with_message(f"bad token {TOKEN}"), budget=2000)
    (block,) = result.failure_blocks
    assert TOKEN not in result.section
    assert block.message == "bad token [REDACTED: GitHubTokenDetector]"
    assert block.kinds == ("GitHubTokenDetector",)
    assert "bad token [REDACTED: GitHubTokenDetector]\n```" in result.section


def test_a_long_message_is_cut_with_a_visible_marker(repo: Path) -> None:
    long = "x" * 500
    limits = Limits(max_failure_message_chars=100)
    result = Workspace(repo, cache=False, limits=limits).context(_with_message(long), budget=4000)
    (block,) = result.failure_blocks
    assert block.message == "x" * 100 + "\n[... 400 characters cut]"
    assert block.cut == 400
    assert f"ZeroDivisionError: {'x' * 100}\n[... 400 characters cut]\n```\n\n" in result.section
    assert cut_message("abc", 3) == ("abc", 0)
    assert cut_message("abcd", 3) == ("abc\n[... 1 characters cut]", 1)


def test_max_failure_blocks_and_a_budget_too_small_for_the_block(repo: Path) -> None:
    none = Workspace(repo, cache=False, limits=Limits(max_failure_blocks=0)).context(ratios_log(), budget=900)
    assert none.failure_blocks == () and none.result.budget == 900
    assert none.section == bugcontext.render(none.result)
    tiny = Workspace(repo, cache=False).context(ratios_log(), budget=20)
    assert tiny.failure_blocks == () and tiny.section == "" and tiny.used == 0
    blocks = Workspace(repo, cache=False).context(ratios_log(), budget=900).failure_blocks
    assert fit_blocks(blocks * 3, 2 * blocks[0].cost) == (blocks * 2, 2 * blocks[0].cost)


def test_the_command_line_prints_the_failure_first_and_json_carries_it(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "t.log"
    log.write_text(_with_message(f"token {TOKEN}"), encoding="utf-8")
    args = ["context", "--repo", str(repo), "--pytest-log", str(log), "--no-cache", "--budget", "900"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"### Failure: {ID}\n```text\nZeroDivisionError: token [REDACTED: GitHubTokenDetector]\n```\n\n"
    )
    assert TOKEN not in out and len(out) <= 900
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [b["message"] for b in data["failure_blocks"]] == ["token [REDACTED: GitHubTokenDetector]"]
    assert (
        data["used"] == data["build_used"] + sum(b["cost"] for b in data["failure_blocks"]) <= data["budget"]
    )
    assert TOKEN not in json.dumps(data)


def test_a_trace_gets_one_line_per_context_call(repo: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    ws = Workspace(repo, cache=False)
    for cost, budget in (({"unit": "tokens", "template": "markdown"}, 90), ({"template": "xml"}, 400)):
        result = ws.context(ratios_log(), budget=budget, cost=cost, trace=trace)
        assert result.failure_blocks
    lines = trace.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert [json.loads(line)["digest"] for line in lines][-1] == result.result.digest


def test_a_failure_block_over_the_budget_is_reported_and_fails_require_failure(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failure block larger than the budget was once dropped without a word, and
    ``--require-failure`` exited 0 with an empty section: it is left out as an omission (in the
    result, the report and the JSON), warned of, and ``--require-failure`` exits 5."""
    whole = Workspace(repo, cache=False).context(ratios_log(), budget=900)
    (block,) = whole.failure_blocks
    tiny = Workspace(repo, cache=False).context(ratios_log(), budget=block.cost - 1)
    assert tiny.failure_blocks == () and tiny.failure_blocks_left_out == (block,)
    said = f"- failure block left out: {ID} ({block.cost} characters, over the budget of {block.cost - 1})"
    assert said in tiny.summary()
    assert tiny.to_dict()["failure_blocks_left_out"] == [block.to_dict()]
    assert whole.failure_blocks_left_out == () and whole.to_dict()["failure_blocks_left_out"] == []
    log = tmp_path / "t.log"
    log.write_text(ratios_log(), encoding="utf-8")
    args = ["context", "--repo", str(repo), "--log", str(log), "--no-cache", "--budget", str(block.cost - 1)]
    assert main(args) == 0
    warned = capsys.readouterr().err
    assert f"warning: the failure block of {ID} ({block.cost} characters) does not fit the budget" in warned
    assert main([*args, "--require-failure"]) == 5
    assert "(exit 5: --require-failure)" in capsys.readouterr().err
    assert main([*args[:-1], "900", "--require-failure"]) == 0


def test_a_test_id_of_200000_characters_takes_one_short_line_of_the_report(repo: Path) -> None:
    long_id = "tests/test_ratios.py::test_ratio[" + "a" * 200_000 + "]"
    log = f"FAILED {long_id} - ZeroDivisionError: " + "m" * 200_000 + "\n"
    report = Workspace(repo, cache=False).context(log, budget=900).summary()
    (test_line,) = [line for line in report.splitlines() if line.startswith("- test: ")]
    (error_line,) = [line for line in report.splitlines() if line.startswith("- error: ")]
    for line in (test_line, error_line):
        assert len(line) < 400 and line.endswith("characters cut]")
    assert len(report) < 5_000
