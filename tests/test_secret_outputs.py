"""Secrets never leave the program, and no withheld window vanishes.

* Every output (the Markdown context and summary, the JSON of ``context`` and ``build``,
  error messages, the pytest plugin's files) passes through one redaction
  (``bugcontext.core.secrets.redact``), which is reported.
* A window any source proposes into a file the reader refuses is a policy omission.

The secrets are assembled at run time from harmless pieces.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bugcontext.integrations.cli import SECRET_REDACTED, main, redact_json, run_context
from bugcontext.job.sources import gather
from bugcontext.job.sources.files import Repository

pytest_plugins = ["pytester"]

AWS_ID = "".join(["AKIA", "Q7" * 8])
GITHUB = "".join(["ghp", "_", "a1B2" * 9])
HF = "".join(["hf", "_", "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"])


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- a secret in the failure message ----------------------------------------------------

CONFIG = f'''\
KEY = "{AWS_ID}"


def load():
    raise RuntimeError("bad config " + KEY)
'''

TEST_CONFIG = """\
from config import load


def test_load():
    load()
"""


def _config_repo(root: Path) -> Path:
    write(root, "config.py", CONFIG)
    write(root, "test_config.py", TEST_CONFIG)
    log = (
        "Traceback (most recent call last):\n"
        '  File "test_config.py", line 5, in test_load\n'
        "    load()\n"
        '  File "config.py", line 5, in load\n'
        '    raise RuntimeError("bad config " + KEY)\n'
        f"RuntimeError: bad config {AWS_ID}\n"
    )
    return write(root.parent, f"{root.name}.log", log)


def test_the_error_line_of_the_summary_is_redacted(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    log = _config_repo(root)
    markdown = run_context(root, log).markdown()
    assert AWS_ID not in markdown
    assert "- error: RuntimeError: bad config [REDACTED: AWSKeyDetector]\n" in markdown
    assert markdown.endswith("\n1 secret redacted from this output (reason policy): AWSKeyDetector\n")
    # The module holding the key is no longer withheld: its windows stay, the key redacted.
    assert "policy: secret content" not in markdown
    assert "- config.py:1 AWSKeyDetector: policy: secret in the file\n" in markdown


def test_the_command_line_outputs_are_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    log = _config_repo(root)
    assert main(["context", "--repo", str(root), "--pytest-log", str(log)]) == 0
    captured = capsys.readouterr()  # the section on standard output, the report on standard error
    assert AWS_ID not in captured.out + captured.err
    assert "- error: RuntimeError: bad config [REDACTED: AWSKeyDetector]\n" in captured.err

    assert main(["context", "--repo", str(root), "--pytest-log", str(log), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert AWS_ID not in json.dumps(data)
    # The JSON holds the failure's message and every failing test's: the key is redacted there,
    # and said so.
    why = "policy: secret in the output"
    in_file = [r for r in data["policy_redacted"] if r["why"] == "policy: secret in the file"]
    assert [r for r in data["policy_redacted"] if r not in in_file] == [
        {"where": where, "kind": "AWSKeyDetector", "reason": "policy", "why": why}
        for where in ("$.failure.message", "$.failing_tests[0].message")
    ]
    # The reader's redaction of the key in the module, for each selected window holding it.
    holding = [
        i for i, item in enumerate(data["items"]) if item["path"] == "config.py" and item["start"] == 1
    ]
    assert in_file == [
        {
            "where": f"$.items[{i}].content",
            "path": "config.py",
            "lines": [1, 1],
            "kind": "AWSKeyDetector",
            "reason": "policy",
            "why": "policy: secret in the file",
        }
        for i in holding
    ]
    assert data["failure"]["message"] == "bad config [REDACTED: AWSKeyDetector]"
    assert "bad config [REDACTED: AWSKeyDetector]" in data["failing_tests"][0]["message"]
    # The module holding the key is not withheld: its failure window is selected, and the
    # window holding the key too, the key replaced.
    assert data["policy_omitted"] == []
    assert ("config.py", 4, 5) in [(i["path"], i["start"], i["end"]) for i in data["items"]]
    assert holding and all(
        data["items"][i]["content"] == 'KEY = "[REDACTED: AWSKeyDetector]"\n' for i in holding
    )
    # The provenance is the file's own bytes.
    import hashlib

    digest = hashlib.sha256((root / "config.py").read_bytes()).hexdigest()
    assert {i["source_sha256"] for i in data["items"] if i["path"] == "config.py"} == {digest}


def test_build_output_is_redacted_and_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content = f'TOKEN = "{GITHUB}"\n'
    candidates = [
        {"path": "a.py", "start": 1, "end": 1, "content": content, "reason": "search", "score": 1.0}
    ]
    data = write(tmp_path, "in.json", json.dumps({"candidates": candidates, "max_chars": 1000}))
    assert main(["build", str(data)]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["items"][0]["content"] == 'TOKEN = "[REDACTED: GitHubTokenDetector]"\n'
    assert captured.err == (
        "bugcontext build: warning: 1 secret redacted from this output (reason policy): "
        "GitHubTokenDetector\n"
    )
    assert main(["build", str(data), "--format", "markdown"]) == 0
    captured = capsys.readouterr()
    assert GITHUB not in captured.out and "[REDACTED: GitHubTokenDetector]" in captured.out


def test_error_messages_are_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = [{"path": f"{AWS_ID}/a.py", "start": 0, "end": 1, "content": "x\n", "reason": "search", "score": 1}]
    data = write(tmp_path, "in.json", json.dumps({"candidates": bad, "max_chars": 10}))
    assert main(["build", str(data)]) == 2
    err = capsys.readouterr().err
    assert AWS_ID not in err and err.startswith("bugcontext build: ")


def test_redact_json_names_where_each_secret_was() -> None:
    value = {"a": [f"x {AWS_ID} y", 1, None], GITHUB: {"b": "clean"}}
    redacted, found = redact_json(value)
    assert redacted == {
        "a": ["x [REDACTED: AWSKeyDetector] y", 1, None],
        "[REDACTED: GitHubTokenDetector]": {"b": "clean"},
    }
    assert found == [
        {"where": "$.a[0]", "kind": "AWSKeyDetector", "reason": "policy", "why": SECRET_REDACTED},
        {"where": "$.<key>", "kind": "GitHubTokenDetector", "reason": "policy", "why": SECRET_REDACTED},
    ]
    assert value == {"a": [f"x {AWS_ID} y", 1, None], GITHUB: {"b": "clean"}}  # not changed


def test_the_pytest_plugin_file_is_redacted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Build one context first: the sources import modules that cannot be loaded twice.
    warm = pytester.path / "warm"
    run_context(warm.parent, _config_repo(warm))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(config=CONFIG, test_config=TEST_CONFIG)
    result = pytester.runpytest(
        "-p", "bugcontext.integrations.pytest_plugin", "--bugcontext=context.md", "test_config.py"
    )
    result.assert_outcomes(failed=1)
    text = (pytester.path / "context.md").read_text(encoding="utf-8")
    assert AWS_ID not in text
    assert "- error: RuntimeError: bad config [REDACTED: AWSKeyDetector]\n" in text
    assert text.endswith("\n1 secret redacted from this output (reason policy): AWSKeyDetector\n")


# --- a secret file must not swallow a window --------------------------------------------

CLIENT = """\
def retries():
    return 2
"""

TEST_CLIENT = """\
from pkg.client import retries
from pkg.settings import MAX_RETRIES


def test_retries():
    assert retries() == MAX_RETRIES
"""

LOG = (
    "Traceback (most recent call last):\n"
    '  File "tests/test_client.py", line 6, in test_retries\n'
    "    assert retries() == MAX_RETRIES\n"
    "AssertionError\n"
)


def _settings_repo(root: Path, token: str | None) -> None:
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/client.py", CLIENT)
    settings = "\n\nMAX_RETRIES = 3\n"
    if token is not None:
        settings = f'API_TOKEN = "{token}"\n' + settings
    else:
        settings = "API_TOKEN = None\n" + settings
    write(root, "pkg/settings.py", settings)
    write(root, "tests/test_client.py", TEST_CLIENT)


def test_a_secret_module_keeps_its_reference_window_redacted(tmp_path: Path) -> None:
    """Issue 17: a secret in a module's content no longer hides its windows: the reference
    window into the settings module is taken with the token replaced, as it is without it."""
    clean, secret = tmp_path / "clean", tmp_path / "secret"
    _settings_repo(clean, None)
    _settings_repo(secret, HF)

    without = gather(clean, LOG)
    taken = [(c.path, c.start, c.end, c.reason) for c in without.candidates if c.path == "pkg/settings.py"]
    assert ("pkg/settings.py", 4, 4, "reference") in taken
    assert without.policy_omissions == ()

    with_token = gather(secret, LOG)
    assert [
        (c.path, c.start, c.end, c.reason) for c in with_token.candidates if c.path == "pkg/settings.py"
    ] == taken
    assert with_token.policy_omissions == ()
    assert all(HF not in c.content for c in with_token.candidates)


def test_search_hits_in_a_file_with_a_secret_are_kept_redacted(tmp_path: Path) -> None:
    from bugcontext.job.sources.search import SearchIndex, tokenize

    write(tmp_path, "a.py", "def frobnicate_widget():\n    return 1\n")
    write(tmp_path, "b.py", f'TOKEN = "{GITHUB}"\n\n\ndef frobnicate_widget_twice():\n    return 2\n')
    repo = Repository(tmp_path)
    index = SearchIndex.build(repo)
    windows = index.windows(repo, tokenize("frobnicate widget twice"), top_k=2)
    assert [(w.path, w.start, w.end) for w in windows] == [("b.py", 4, 5), ("a.py", 1, 2)]
    kept, withheld = repo.screen(windows)
    assert [(w.path, w.start, w.end) for w in kept] == [("b.py", 4, 5), ("a.py", 1, 2)]
    assert withheld == []


def test_a_file_with_a_secret_keeps_its_lines_with_the_secrets_redacted(tmp_path: Path) -> None:
    write(tmp_path, "pkg/settings.py", f'API_TOKEN = "{HF}"\n\nMAX_RETRIES = 3\n')
    source = Repository(tmp_path).source("pkg/settings.py")
    assert source is not None and source.refused is None
    assert source.lines == ('API_TOKEN = "[REDACTED: huggingface-token]"\n', "\n", "MAX_RETRIES = 3\n")
    assert source.redactions == ((1, 1, "huggingface-token"),)
    # The digest is the file's own bytes'.
    import hashlib

    assert source.digest == hashlib.sha256((tmp_path / "pkg/settings.py").read_bytes()).hexdigest()


def test_a_hugging_face_token_is_not_printed_for_a_query_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue: ``context --query HF_TOKEN`` printed an undetected ``hf_`` token twice; issue 17:
    the windows stay, the token replaced, and the redaction is reported."""
    root = tmp_path / "repo"
    write(root, "settings.py", f'HF_TOKEN = "{HF}"\n\n\ndef token():\n    return HF_TOKEN\n')
    write(root, "app.py", "def run():\n    raise ValueError('no model')\n")
    log = write(
        tmp_path,
        "run.log",
        "Traceback (most recent call last):\n"
        '  File "app.py", line 2, in run\n'
        "    raise ValueError('no model')\n"
        "ValueError: no model\n",
    )
    args = ["context", "--repo", str(root), "--pytest-log", str(log), "--query", "HF_TOKEN"]
    assert main(args) == 0
    captured = capsys.readouterr()  # the section on standard output, the report on standard error
    assert HF not in captured.out + captured.err
    assert 'HF_TOKEN = "[REDACTED: huggingface-token]"' in captured.out
    assert "- settings.py:1 huggingface-token: policy: secret in the file\n" in captured.err
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert HF not in json.dumps(data)
    assert data["policy_omitted"] == []
    items = data["items"]
    first = [i for i, item in enumerate(items) if item["path"] == "settings.py" and item["start"] == 1]
    assert len(first) == 1 and 'HF_TOKEN = "[REDACTED: huggingface-token]"' in items[first[0]]["content"]
    redacted = [r for r in data["policy_redacted"] if r.get("path") == "settings.py"]
    assert redacted == [
        {
            "where": f"$.items[{first[0]}].content",
            "path": "settings.py",
            "lines": [1, 1],
            "kind": "huggingface-token",
            "reason": "policy",
            "why": "policy: secret in the file",
        }
    ]


# --- issue 17: a placeholder is no secret; a withheld failing file is missing evidence -----

VALIDATE = """class URL:
    \"\"\"Validate a URL.

    # e.g. 'ftp://foo:bar@ftp.example.org/'
    \"\"\"

    def __call__(self, value):
        if not value.startswith(("http", "ftp")):
            raise ValueError("bad url " + value)
        return value
"""

TEST_VALIDATE = """from validate import URL


def test_url():
    URL()("ftp://host/x") and URL()("gopher://x")
"""


def _failing_repo(root: Path, module: str, text: str) -> Path:
    write(root, f"{module}.py", text)
    write(root, "test_validate.py", TEST_VALIDATE.replace("validate", module))
    log = (
        "Traceback (most recent call last):\n"
        '  File "test_validate.py", line 5, in test_url\n'
        '    URL()("ftp://host/x") and URL()("gopher://x")\n'
        f'  File "{module}.py", line 9, in __call__\n'
        '    raise ValueError("bad url " + value)\n'
        "ValueError: bad url gopher://x\n"
    )
    return write(root.parent, f"{root.name}.log", log)


def test_a_documentation_url_in_the_failing_file_hides_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 (marshmallow): ``# e.g. 'ftp://foo:bar@ftp.example.org/'`` withheld every
    window of the failing file; now it is no secret and the windows are given as they are."""
    root = tmp_path / "repo"
    log = _failing_repo(root, "validate", VALIDATE)
    args = ["context", "--repo", str(root), "--pytest-log", str(log), "--require-failure"]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["policy_omitted"] == [] and data["policy_redacted"] == [] and data["missing_critical"] == []
    failing = [item for item in data["items"] if item["path"] == "validate.py"]
    assert failing and any("raise ValueError" in item["content"] for item in failing)
    assert any("ftp://foo:bar@ftp.example.org/" in item["content"] for item in failing)


def test_a_withheld_failing_file_is_missing_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing file that is a secret by name (``id_rsa*``) is withheld whole; its failure
    windows are then missing evidence: in ``missing_critical``, said in the summary, and
    ``--require-failure`` fails."""
    from bugcontext.integrations.cli import EXIT_MISSING_EVIDENCE

    root = tmp_path / "repo"
    log = _failing_repo(root, "id_rsa_tools", VALIDATE)
    args = ["context", "--repo", str(root), "--pytest-log", str(log)]
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    withheld = [w for w in data["policy_omitted"] if w["path"] == "id_rsa_tools.py"]
    assert withheld and {w["why"] for w in withheld} == {"policy: secret name"}
    missing = data["missing_critical"]
    assert [m["path"] for m in missing] == ["id_rsa_tools.py"]
    assert missing[0]["omitted"] == []
    assert missing[0]["withheld"] == [w for w in withheld if w["source"] == "failure"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "- missing failure evidence: id_rsa_tools.py: all failure windows left out (lines" in err
    assert "withheld (policy: secret name)" in err
    assert main([*args, "--require-failure"]) == EXIT_MISSING_EVIDENCE
    assert "warning: missing failure evidence: id_rsa_tools.py" in capsys.readouterr().err


def test_the_build_verifies_a_redacted_window_against_the_files_own_bytes(tmp_path: Path) -> None:
    """The verify reader gives a file with redacted secrets as its redacted lines while its
    bytes are those the windows were cut from, and its own bytes once it changed (so the
    window is stale)."""
    from bugcontext.job.workspace import Workspace, _verifier

    root = tmp_path / "repo"
    write(root, "keys.py", f'KEY = "{AWS_ID}"\n')
    reader = Workspace(root, cache=False)._new_reader()
    source = reader.source("keys.py")
    assert source is not None and source.redactions == ((1, 1, "AWSKeyDetector"),)
    verify = _verifier(reader)
    assert verify("keys.py") == b'KEY = "[REDACTED: AWSKeyDetector]"\n'
    write(root, "keys.py", f'KEY = "{AWS_ID}"  # edited\n')
    assert verify("keys.py") == f'KEY = "{AWS_ID}"  # edited\n'.encode()
