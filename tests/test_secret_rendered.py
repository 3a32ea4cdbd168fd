"""A secret in a section is redacted whatever the form the section gives it.

**Base64.**
The XML template writes a body (or a path, a test id) that XML cannot carry (a control
character, a lone surrogate) as base64 of its UTF-8 bytes. The output screen
(``bugcontext.core.secrets.redact``) read the section as plain text, so a secret in such a
body left ``bugcontext build --format markdown``, ``rerank`` and the MCP ``build`` tool
whole, only base64-encoded.

**Line numbers, references.** With ``line_numbers`` each line starts with ``"N | "``; the
screen found a private key's header line but not its body lines behind their numbers, and
printed the body. So too for a key with CRLF line endings in an XML section, where each ``\\r``
is ``&#13;``.

**Escapes.** A name is printed with a control character as ``\\u0001`` (the Markdown header)
and an echo in an error message as ``repr`` writes it (``'\\x01ghp_...'``, ``'\\tghp_...'``):
the escape's last hex digit or letter glued the token after it to a word, so the detector,
which wants a token to stand alone, passed it.

The secrets are assembled at run time from harmless pieces.
"""

from __future__ import annotations

import base64
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from bugcontext.core.composer import parse_xml_section
from bugcontext.core.secrets import find_secrets, redact
from bugcontext.integrations.cli import main
from bugcontext.integrations.mcp_server import create_server
from test_mcp_server import _calls, _text

AWS_ID = "".join(["AKIA", "Q7" * 8])
GITHUB = "".join(["ghp", "_", "a1B2" * 9])


def _decoded(section: str) -> list[str]:
    """Every base64 field of an XML section, decoded."""
    fields = re.findall(r'(?:encoding="base64">|-base64=")([A-Za-z0-9+/=]+)', section)
    assert fields, section
    return [base64.b64decode(f).decode("utf-8", "surrogatepass") for f in fields]


def _input(content: str, path: str = "a.py") -> dict[str, Any]:
    candidate = {"path": path, "start": 1, "end": 1, "content": content, "reason": "search", "score": 1}
    return {"candidates": [candidate], "max_chars": 1000, "cost": {"template": "xml"}}


@pytest.mark.parametrize(
    "content", [f"key = {AWS_ID}\x00\n", f"TOKEN = '{GITHUB}'\x1b[0m\n", f"x\udcff {AWS_ID}\n"]
)
def test_build_markdown_redacts_a_secret_in_a_base64_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    data = tmp_path / "in.json"
    data.write_text(json.dumps(_input(content)), encoding="utf-8")
    assert main(["build", str(data), "--format", "markdown"]) == 0
    captured = capsys.readouterr()
    (body,) = _decoded(captured.out)
    assert AWS_ID not in body and GITHUB not in body and "[REDACTED: " in body
    assert "secret redacted from this output" in captured.err
    # Still a section an XML reader takes back.
    assert [b["content"] for b in parse_xml_section(captured.out)] == [body]


def test_a_secret_in_a_base64_path_is_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "in.json"
    data.write_text(json.dumps(_input("x\n", path=f"k/{AWS_ID}\x01.py")), encoding="utf-8")
    assert main(["build", str(data), "--format", "markdown"]) == 0
    (path,) = _decoded(capsys.readouterr().out)
    assert AWS_ID not in path and path == "k/[REDACTED: AWSKeyDetector]\x01.py"


def test_the_mcp_build_tool_redacts_a_base64_body(tmp_path: Path) -> None:
    server = create_server(cache=False, roots=[tmp_path])
    (result,) = _calls(server, ("build", {"input": _input(f"key = {AWS_ID}\x00\n")}))
    assert not result.is_error
    for section in (_text(result), result.structured_content["section"]):
        (body,) = _decoded(section)
        assert AWS_ID not in body and "[REDACTED: AWSKeyDetector]" in body
    assert any(r["kind"] == "AWSKeyDetector" for r in result.structured_content["redacted"])


def test_redact_reads_base64_fields_with_json_escaped_quotes() -> None:
    encoded = base64.b64encode(f"k = {AWS_ID}\x00".encode()).decode()
    done = redact(f'{{"s": "<snippet encoding=\\"base64\\">{encoded}</snippet>"}}')
    assert encoded not in done.text and done.kinds == ("AWSKeyDetector",)
    assert find_secrets(done.text) == []


def test_base64_that_is_no_field_or_holds_no_secret_is_left_as_it_is() -> None:
    clean = base64.b64encode(b"x = 1\x00").decode()
    for text in (
        f'<snippet encoding="base64">{clean}</snippet>',
        'encoding="base64">!!!notbase64',
        'path-base64="AAAA"',  # three NULs: no secret
        'encoding="base64">/w==',  # base64 of a byte that is not UTF-8
    ):
        assert redact(text).text == text and redact(text).kinds == ()


def _pem(ending: str = "\n") -> str:
    rng = random.Random(7)
    body = base64.b64encode(bytes(rng.randrange(256) for _ in range(150))).decode()
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    kind = "RSA " + "PRIVATE KEY"
    return ending.join([f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"]) + ending


def _body(pem: str) -> list[str]:
    """The key's body lines (each at least 8 characters)."""
    lines = pem.splitlines()[1:-1]
    assert len(lines) == 4 and all(len(line) >= 8 for line in lines)
    return lines


@pytest.mark.parametrize("template", ["markdown", "xml"])
def test_a_private_key_body_behind_line_numbers_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], template: str
) -> None:
    pem = _pem()
    data = _input("x = 1\n" + pem + "y = 2\n")
    data["cost"] = {"template": template, "line_numbers": True}
    (tmp_path / "in.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["build", str(tmp_path / "in.json"), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert all(line[:20] not in out for line in _body(pem))
    assert "1 | x = 1\n2 | [REDACTED: PrivateKeyDetector]\n3 | \n" in out
    assert "\n8 | y = 2\n" in out  # every line keeps its number


def test_the_mcp_build_tool_redacts_a_numbered_private_key(tmp_path: Path) -> None:
    pem = _pem()
    data = _input(pem)
    data["cost"] = {"template": "markdown", "line_numbers": True}
    server = create_server(cache=False, roots=[tmp_path])
    (result,) = _calls(server, ("build", {"input": data}))
    for section in (_text(result), result.structured_content["section"]):
        assert all(line[:20] not in section for line in _body(pem))


def test_numbered_text_without_a_secret_is_left_as_it_is() -> None:
    for text in ("1 | a = 1\n2 | b = 2\n", "10 | x\n 9 | \n", "| a | b |\n1 | c"):
        assert redact(text).text == text and redact(text).kinds == ()
    done = redact(f"1 | a = 1\n2 | k = '{AWS_ID}' # two {AWS_ID}\n3 | b")
    key = "[REDACTED: AWSKeyDetector]"
    assert done.text == f"1 | a = 1\n2 | k = '{key}' # two {key}\n3 | b"
    assert done.kinds == ("AWSKeyDetector", "AWSKeyDetector")


@pytest.mark.parametrize("line_numbers", [False, True])
def test_a_crlf_private_key_in_an_xml_section_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line_numbers: bool
) -> None:
    pem = _pem("\r\n")
    data = _input(pem + "y = 2\r\n")
    data["cost"] = {"template": "xml", "line_numbers": line_numbers}
    (tmp_path / "in.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["build", str(tmp_path / "in.json"), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "&#13;" in out and all(line[:20] not in out for line in _body(pem))
    (block,) = parse_xml_section(out)
    assert block["content"].count("\n") == 7 and "y = 2" in block["content"]


def test_references_outside_an_xml_section_are_text() -> None:
    encoded = "k = " + AWS_ID[:8] + "&amp;" + AWS_ID[8:]
    assert redact(encoded).text == encoded  # no section: "&amp;" is what it says


@pytest.mark.parametrize("lead", ["\x01", "\t", "\n", "\udce9", "\x7f", "\u2028"])
def test_a_token_after_an_escaped_character_in_an_error_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], lead: str
) -> None:
    from builders import ratios_log, ratios_repo

    repo = ratios_repo(tmp_path)
    log = tmp_path / "failing.log"
    log.write_text(ratios_log(), encoding="utf-8")
    args = ["context", "--repo", str(repo), "--log", str(log), "--no-cache", "--test", lead + GITHUB]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert GITHUB not in err and "[REDACTED: GitHubTokenDetector]" in err, err


def test_a_token_after_an_escaped_control_character_in_a_header_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _input("x\n", path=f"k/\x01{GITHUB}.py")
    data["cost"] = {"template": "markdown"}
    (tmp_path / "in.json").write_text(json.dumps(data), encoding="utf-8")
    assert main(["build", str(tmp_path / "in.json"), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert GITHUB not in out and "### k/\\u0001[REDACTED: GitHubTokenDetector].py:1-1" in out


def test_escapes_without_a_token_are_left_as_they_are() -> None:
    for text in ("'\\x01abc' '\\tdef'", "C:\\new\\table", "\\u0001" * 10, "a\\", "\\"):
        assert redact(text).text == text and redact(text).kinds == ()
    done = redact(f"got '\\x01{AWS_ID}' and '\\t{GITHUB}'")
    assert done.text == "got '\\x01[REDACTED: AWSKeyDetector]' and '\\t[REDACTED: GitHubTokenDetector]'"


def test_a_cut_never_keeps_the_first_characters_of_a_token_after_an_escape() -> None:
    from bugcontext.core._cut import shorten

    text = "x" * 180 + "\\x01" + GITHUB + " tail"
    cut = shorten(text, 200)
    assert cut == "x" * 180 + "\\x01..." and "ghp_" not in cut


def test_the_tail_of_a_private_key_without_its_header_is_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A window that starts inside a key (its body lines and END line, the header in the
    window before it) printed the body: the detector starts a key at its header."""
    pem = _pem()
    lines = pem.splitlines(keepends=True)
    head, tail = "".join(lines[:3]), "".join(lines[3:])
    candidates = [
        {"path": "k.py", "start": 1, "end": 3, "content": head, "reason": "search", "score": 2},
        {"path": "k.py", "start": 4, "end": 6, "content": tail, "reason": "search", "score": 1},
    ]
    for cost in ({"template": "markdown"}, {"template": "markdown", "line_numbers": True}):
        data = {"candidates": candidates, "max_chars": 5000, "cost": cost}
        (tmp_path / "in.json").write_text(json.dumps(data), encoding="utf-8")
        assert main(["build", str(tmp_path / "in.json"), "--format", "markdown"]) == 0
        out = capsys.readouterr().out
        assert all(line[:20] not in out for line in _body(pem)), out
        assert out.count("[REDACTED: PrivateKeyDetector]") == 2


def test_an_end_line_alone_or_after_prose_is_left_as_it_is() -> None:
    kind = "RSA " + "PRIVATE KEY"
    for text in (f"-----END {kind}-----\n", f"the key ends with\n-----END {kind}-----\n", "x\n" * 3):
        assert redact(text).text == text
    done = redact(f"QUJDREVGR0hJSktM\nTU5PUFFSU1RVVldY\n-----END {kind}----- and more\nnext\n")
    assert done.text == "[REDACTED: PrivateKeyDetector]\n\n and more\nnext\n"
