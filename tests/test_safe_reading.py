"""The safe reader (``bugcontext.job.sources.files``): every rule it enforces, one by one, and
end to end through ``gather`` and the command line.

The secrets used here are assembled at run time from harmless pieces, so that this file
itself holds nothing that looks like a key or a token.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import bugcontext
import pytest
from bugcontext.core.secrets import redact_text
from bugcontext.integrations.cli import main, run_context
from bugcontext.job.sources import Repository, gather
from bugcontext.job.sources.files import (
    BINARY_BLOCK,
    MAX_FILE_BYTES,
    SECRET_CONTENT,
    SECRET_NAME,
    WINDOW_CHANGED,
    WINDOW_UNREADABLE,
    PolicyOmission,
    secret_in_text,
    secret_name,
    split_lines,
)
from bugcontext.job.sources.window import Window, make_window

needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX symbolic links")

# Secrets, assembled so that no line of this file matches a secret pattern.
AWS_KEY = "AKIA" + "Q7" * 8
GITHUB_TOKEN = "ghp" + "_" + "a1B2c3" * 6
GITHUB_PAT = "github" + "_pat_" + "11ABCDEFG0" * 3
SLACK_TOKEN = "xox" + "b-" + "1234567890-0987654321-AbCdEfGhIj"
PRIVATE_KEY = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow\n-----END RSA " + "PRIVATE KEY-----\n"
OPENSSH_KEY = "-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaA\n-----END OPENSSH " + "PRIVATE KEY-----\n"
AWS_SECRET = "aws_secret_access_key" + " = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "0123456789"


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


# --- paths ------------------------------------------------------------------------------


def test_paths_are_repository_relative_and_canonical(tmp_path: Path) -> None:
    write(tmp_path, "pkg/mod.py", "x = 1\n")
    repo = Repository(tmp_path)
    for given in (
        "pkg/mod.py",
        "./pkg//mod.py",
        "pkg/./mod.py",
        "pkg/../pkg/mod.py",
        str(tmp_path / "pkg/mod.py"),
    ):
        assert repo.relative(given) == "pkg/mod.py", given
        source = repo.source(given)
        assert source is not None and source.path == "pkg/mod.py"
    assert repo.source("pkg/mod.py") is repo.source("./pkg/mod.py")  # one reading, one cache entry
    assert repo.relative("pkg") is None  # a folder is not a file
    assert repo.relative("") is None
    assert repo.relative("pkg/mod.py\x00") is None


def test_paths_outside_the_repository_are_never_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "mod.py", "x = 1\n")
    outside = write(tmp_path, "outside.py", "secret = 1\n")
    repo = Repository(root)
    for given in ("../outside.py", str(outside), "mod.py/../../outside.py", "/"):
        assert repo.relative(given) is None, given
        assert repo.source(given) is None, given
    assert repo.files() == ["mod.py"]


@pytest.mark.skipif(sys.platform == "win32", reason="a backslash separates paths on Windows")
def test_paths_the_builder_rejects_are_not_read(tmp_path: Path) -> None:
    write(tmp_path, "odd\\name.py", "x = 1\n")
    write(tmp_path, "ok.py", "x = 1\n")
    repo = Repository(tmp_path)
    assert repo.relative("odd\\name.py") is None
    assert repo.files() == ["ok.py"]


# --- symbolic links ---------------------------------------------------------------------


@needs_symlinks
def test_symlinks_leading_out_are_refused_files_and_folders(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "mod.py", "x = 1\n")
    outside_file = write(tmp_path, "elsewhere/leak.py", "secret = 1\n")
    (root / "link.py").symlink_to(outside_file)
    (root / "linkdir").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    repo = Repository(root)
    assert repo.relative("link.py") is None
    assert repo.source("link.py") is None
    assert repo.relative("linkdir/leak.py") is None
    assert repo.source("linkdir/leak.py") is None
    assert repo.files() == ["mod.py"]
    assert [s.path for s in repo.sources()] == ["mod.py"]


@needs_symlinks
def test_symlinks_inside_the_repository_read_the_file_under_its_own_path(tmp_path: Path) -> None:
    write(tmp_path, "pkg/impl.py", "def f():\n    return 1\n")
    (tmp_path / "alias.py").symlink_to(tmp_path / "pkg" / "impl.py")
    (tmp_path / "pkgalias").symlink_to(tmp_path / "pkg", target_is_directory=True)
    repo = Repository(tmp_path)
    assert repo.relative("alias.py") == "pkg/impl.py"
    assert repo.relative("pkgalias/impl.py") == "pkg/impl.py"
    source = repo.source("alias.py")
    assert source is not None and source.path == "pkg/impl.py" and source.text(1, 2).startswith("def f")
    # Listed once, under the real path.
    assert repo.files() == ["pkg/impl.py"]


@needs_symlinks
def test_symlink_cycles_do_not_loop(tmp_path: Path) -> None:
    write(tmp_path, "pkg/mod.py", "x = 1\n")
    (tmp_path / "pkg" / "up").symlink_to(tmp_path, target_is_directory=True)  # pkg/up -> repo root
    (tmp_path / "pkg" / "self").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    repo = Repository(tmp_path)
    assert repo.files() == ["pkg/mod.py"]
    assert repo.relative("pkg/up/pkg/up/pkg/mod.py") == "pkg/mod.py"
    for given in ("a.py", "b.py", "loop.py", "pkg/self/self/self/x.py"):
        assert repo.relative(given) is None, given
        assert repo.source(given) is None, given


# --- ignored files and .git -------------------------------------------------------------


def test_gitignore_rules_root_nested_and_negated(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "build/\n*.gen.py\n!keep.gen.py\n/top_only.py\n*.tmp.py\n# comment\n")
    write(tmp_path, "pkg/.gitignore", "local_*.py\n!again.tmp.py\n")
    files = [
        "build/x.py",
        "pkg/build/y.py",
        "a.gen.py",
        "keep.gen.py",
        "top_only.py",
        "pkg/top_only.py",
        "local_a.py",
        "pkg/local_a.py",
        "again.tmp.py",
        "pkg/again.tmp.py",
        "pkg/mod.py",
    ]
    for rel in files:
        write(tmp_path, rel, "x = 1\n")
    repo = Repository(tmp_path)
    kept = ["keep.gen.py", "local_a.py", "pkg/again.tmp.py", "pkg/mod.py", "pkg/top_only.py"]
    assert repo.python_files() == kept
    for rel in files:
        assert (repo.relative(rel) == rel) == (rel in kept), rel
        assert (repo.source(rel) is not None) == (rel in kept), rel
    # Without the rules every file is read.
    assert Repository(tmp_path, gitignore=False).python_files() == sorted(files)


def test_a_file_in_an_ignored_folder_cannot_be_re_included(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "build/\n!build/keep.py\nout/*\n!out/keep.py\n")
    for rel in ("build/keep.py", "out/keep.py", "out/drop.py"):
        write(tmp_path, rel, "x = 1\n")
    repo = Repository(tmp_path)
    assert repo.python_files() == ["out/keep.py"]  # out/ itself is not ignored, only its contents
    assert repo.relative("build/keep.py") is None


def test_git_info_exclude_is_honoured_below_gitignore(tmp_path: Path) -> None:
    write(tmp_path, ".git/info/exclude", "excluded*.py\n")
    write(tmp_path, ".gitignore", "!excluded_kept.py\n")
    for rel in ("excluded.py", "excluded_kept.py", "mod.py"):
        write(tmp_path, rel, "x = 1\n")
    repo = Repository(tmp_path)
    assert repo.python_files() == ["excluded_kept.py", "mod.py"]
    assert repo.source("excluded.py") is None


def test_git_folder_is_never_read(tmp_path: Path) -> None:
    write(tmp_path, ".git/HEAD", "ref: refs/heads/main\n")
    write(tmp_path, ".git/hooks/pre_commit.py", "x = 1\n")
    write(tmp_path, "sub/.git", "gitdir: ../.git/worktrees/sub\n")  # a worktree's pointer file
    write(tmp_path, "sub/mod.py", "x = 1\n")
    repo = Repository(tmp_path)
    assert repo.files() == ["sub/mod.py"]
    for rel in (".git/HEAD", ".git/hooks/pre_commit.py", "sub/.git"):
        assert repo.relative(rel) is None, rel
        assert repo.source(rel) is None, rel


def test_skipped_folders_stay_skipped(tmp_path: Path) -> None:
    write(tmp_path, ".venv/pyvenv.cfg", "")
    write(tmp_path, ".venv/lib/dep.py", "x = 1\n")
    write(tmp_path, "env/pyvenv.cfg", "")
    write(tmp_path, "env/lib/dep.py", "x = 1\n")
    write(tmp_path, "node_modules/m.js", "x\n")
    write(tmp_path, "pkg.egg-info/x.py", "x = 1\n")
    write(tmp_path, "__pycache__/x.py", "x = 1\n")
    write(tmp_path, "mod.py", "x = 1\n")
    repo = Repository(tmp_path)
    assert repo.files() == ["mod.py"]
    assert repo.relative("env/lib/dep.py") is None


def test_files_lists_by_suffix_without_reading(tmp_path: Path) -> None:
    for rel in ("a.py", "b.JS", "c.txt", "pkg/d.go", ".env"):
        write(tmp_path, rel, "x\n")
    repo = Repository(tmp_path)
    assert repo.files() == [".env", "a.py", "b.JS", "c.txt", "pkg/d.go"]
    assert repo.files([".js", ".go"]) == ["b.JS", "pkg/d.go"]
    assert repo.refused == {}  # listing reads nothing
    assert [s.path for s in repo.sources([".py", ".txt"])] == ["a.py", "c.txt"]


# --- binary and oversized files ---------------------------------------------------------


def test_binary_files_are_skipped(tmp_path: Path) -> None:
    write(tmp_path, "blob.py", b"x = 1\n\x00\x01\x02")
    write(tmp_path, "late.py", b"x = 1\n" + b"#" * BINARY_BLOCK + b"\x00\n")  # NUL past the first block
    repo = Repository(tmp_path)
    assert repo.source("blob.py") is None
    assert repo.skipped["blob.py"] == "binary"
    late = repo.source("late.py")
    assert late is not None and late.line_count == 2


def test_oversized_files_are_skipped_and_the_limit_is_configurable(tmp_path: Path) -> None:
    assert MAX_FILE_BYTES == 1024 * 1024
    write(tmp_path, "big.py", "x = 1\n" * 20)  # 120 bytes
    write(tmp_path, "edge.py", "y = 2\n" * 10)  # 60 bytes
    repo = Repository(tmp_path, max_file_bytes=60)
    assert repo.source("big.py") is None
    assert repo.skipped["big.py"] == "the file is 120 bytes, over the limit max_file_bytes = 60 bytes"
    assert repo.source("edge.py") is not None  # exactly the limit is fine
    assert Repository(tmp_path).source("big.py") is not None
    write(tmp_path, "huge.py", "z = 3\n" * (MAX_FILE_BYTES // 6 + 1))
    assert Repository(tmp_path).source("huge.py") is None


# --- secrets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        ".env",
        ".env.local",
        ".envrc",
        "deploy/prod.env",
        "certs/server.pem",
        "tls.key",
        "client.p12",
        "client.pfx",
        "id_rsa",
        "keys/id_rsa.pub",
        "id_ed25519",
        "id_ecdsa",
        ".netrc",
        ".pgpass",
        "credentials.json",
        "config/credentials-prod.json",
        "aws/credentials",
        "client_secret_123.json",
        ".git-credentials",
        # A command history holds what was typed (``export DB_PASS=...``, ``htpasswd -b f u
        # pw``, ``vault login s....``) in forms the detector misses: once read and printed.
        ".bash_history",
        ".zsh_history",
        "deploy/.mysql_history",
        ".psql_history",
        ".python_history",
        ".history",
        ".vault-token",
    ],
)
def test_secret_names_are_refused_whatever_they_hold(tmp_path: Path, rel: str) -> None:
    write(tmp_path, rel, "harmless = 1\nsecond = 2\n")
    repo = Repository(tmp_path)
    assert secret_name(rel)
    assert repo.relative(rel) == rel  # it has a path ...
    source = repo.source(rel)
    assert source is not None and source.refused == SECRET_NAME  # ... but no text
    assert source.lines == ("\n", "\n")
    assert "harmless" not in source.text(1, 2)
    assert repo.refused == {rel: SECRET_NAME}


def test_secret_names_in_hidden_folders_are_never_read(tmp_path: Path) -> None:
    write(tmp_path, ".aws/credentials", "[default]\n")
    write(tmp_path, ".ssh/id_rsa", "x\n")
    repo = Repository(tmp_path)
    assert secret_name(".aws/credentials") and secret_name(".ssh/id_rsa")
    assert repo.source(".aws/credentials") is None and repo.source(".ssh/id_rsa") is None
    assert repo.files() == []


@pytest.mark.parametrize(
    "rel",
    ["credentials.py", "keys.py", "pkg/key_store.py", "env.py", "tokens.json", "history.py", "_history.md"],
)
def test_ordinary_names_are_not_secrets(rel: str) -> None:
    assert not secret_name(rel)


def test_binary_key_stores_are_refused_by_name(tmp_path: Path) -> None:
    write(tmp_path, "store.p12", b"\x30\x82\x00\x00binary")
    repo = Repository(tmp_path)
    assert repo.source("store.p12") is None
    assert repo.refused == {"store.p12": SECRET_NAME}


@pytest.mark.parametrize(
    ("name", "text", "refused"),
    [
        (".npmrc", "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=abc123\n", True),
        (".npmrc", "registry=https://registry.npmjs.org/\nsave-exact=true\n", False),
        (".pypirc", "[pypi]\nusername = __token__\npassword = pypi-abc\n", True),
        (".pypirc", "[distutils]\nindex-servers = pypi\n", False),
        (".yarnrc.yml", 'npmAuthToken: "abc"\n', True),
    ],
)
def test_package_manager_configs_are_refused_when_they_hold_credentials(
    tmp_path: Path, name: str, text: str, refused: bool
) -> None:
    write(tmp_path, name, text)
    source = Repository(tmp_path).source(name)
    assert source is not None
    assert source.refused == (SECRET_NAME if refused else None)


SECRET_TEXTS = {
    "private key": PRIVATE_KEY,
    "openssh key": OPENSSH_KEY,
    "aws access key id": f'ACCESS_KEY = "{AWS_KEY}"\n',
    "aws secret key": AWS_SECRET + "\n",
    "github token": f"TOKEN = '{GITHUB_TOKEN}'\n",
    "github fine-grained token": f"token: {GITHUB_PAT}\n",
    "slack token": f"SLACK = '{SLACK_TOKEN}'\n",
}


@pytest.mark.parametrize("kind", sorted(SECRET_TEXTS))
def test_secret_content_is_redacted_in_any_file(tmp_path: Path, kind: str) -> None:
    """Issue 17: a secret in a file's content is redacted in its lines, and the file is not
    withheld (its windows stay)."""
    secret = SECRET_TEXTS[kind]
    text = f'"""Settings."""\n\n\ndef load():\n    return """{secret}"""\n'
    write(tmp_path, "pkg/settings.py", text)
    write(tmp_path, "notes.txt", "see below\n" + secret)
    repo = Repository(tmp_path)
    for rel, content in (("pkg/settings.py", text), ("notes.txt", "see below\n" + secret)):
        assert secret_in_text(rel, secret) == SECRET_CONTENT
        source = repo.source(rel)
        assert source is not None and source.refused is None and source.redactions
        assert source.line_count == len(content.splitlines())
        # Its lines are kept with each secret redacted: no secret is left in them.
        assert source.lines == split_lines(redact_text(content))
        assert "[REDACTED: " in "".join(source.lines)
        assert secret_in_text(rel, "".join(source.lines)) is None
        assert rel not in repo.refused
    # The structure stays, and the strings hold the redacted text.
    settings = repo.source("pkg/settings.py")
    assert settings is not None and settings.tree is not None
    assert [n.name for n in settings.tree.body if isinstance(n, ast.FunctionDef)] == ["load"]
    strings = [n.value for n in ast.walk(settings.tree) if isinstance(n, ast.Constant)]
    assert any("[REDACTED: " in value for value in strings if isinstance(value, str))


@pytest.mark.parametrize(
    "text",
    [
        "AKIA = 'short'\n",
        "key = os.environ['AWS_ACCESS_KEY_ID']\n",
        "prefix = 'ghp_'\n",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n",
        "password = get_password()\n",
        "XAKIA" + "Q7" * 8 + "\n",  # part of a longer word
    ],
)
def test_ordinary_content_is_not_a_secret(text: str) -> None:
    assert secret_in_text("mod.py", text) is None


def test_a_file_that_stops_holding_a_secret_is_read_again(tmp_path: Path) -> None:
    write(tmp_path, "mod.py", f"KEY = '{AWS_KEY}'\n")
    repo = Repository(tmp_path)
    source = repo.source("mod.py")
    assert source is not None and source.refused is None
    assert source.redactions == ((1, 1, "AWSKeyDetector"),)
    write(tmp_path, "mod.py", "KEY = None\n")
    window = make_window(source, 1, 1, "failure", 1.0)
    kept, withheld = repo.screen([window])
    assert kept == [] and withheld[0].why == WINDOW_CHANGED  # the redacted content is not the file
    assert repo.refused == {}
    fresh = repo.source("mod.py")
    assert fresh is not None and fresh.redactions == () and fresh.text(1, 1) == "KEY = None\n"


# --- text -------------------------------------------------------------------------------


def test_utf8_with_bom_dropped_and_line_endings_kept(tmp_path: Path) -> None:
    data = "\ufeffa = 'é'\r\nb = 2\rc = 3\nd = 4".encode()
    write(tmp_path, "mod.py", data)
    write(tmp_path, "notes.txt", data)
    repo = Repository(tmp_path)
    for rel in ("mod.py", "notes.txt"):
        source = repo.source(rel)
        assert source is not None and source.undecodable == 0
        assert source.lines == ("a = 'é'\r\n", "b = 2\r", "c = 3\n", "d = 4")
        assert "".join(source.lines).encode() == data[3:]


def test_non_python_files_are_utf8_whatever_their_first_lines_say(tmp_path: Path) -> None:
    data = "# -*- coding: latin-1 -*-\nx = 'é'\n".encode()
    write(tmp_path, "mod.py", "# -*- coding: latin-1 -*-\nx = 'é'\n".encode("latin-1"))
    write(tmp_path, "mod.txt", data)
    repo = Repository(tmp_path)
    py, txt = repo.source("mod.py"), repo.source("mod.txt")
    assert (
        py is not None and py.text(2, 2) == "x = 'é'\n" and py.undecodable == 0
    )  # PEP 263, as Python reads it
    assert txt is not None and txt.text(2, 2) == "x = 'é'\n" and txt.undecodable == 0


def test_undecodable_bytes_are_kept_exactly_and_the_file_is_marked(tmp_path: Path) -> None:
    data = b"x = '\xff\xfe'\ny = 2\n"
    write(tmp_path, "bad.py", data)
    source = Repository(tmp_path).source("bad.py")
    assert source is not None
    assert source.undecodable == 2
    assert source.text(2, 2) == "y = 2\n"
    assert source.text(1, 2).encode("utf-8", "surrogateescape") == data
    clean = Repository(tmp_path)
    write(tmp_path, "good.py", b"y = 2\n")
    good = clean.source("good.py")
    assert good is not None and good.undecodable == 0


# --- windows ----------------------------------------------------------------------------


def test_window_reads_its_lines_and_clamps_past_the_end(tmp_path: Path) -> None:
    write(tmp_path, "mod.py", "a = 1\r\nb = 2\nc = 3\n")
    source = Repository(tmp_path).source("mod.py")
    assert source is not None
    assert source.window(1, 2) == ("a = 1\r\nb = 2\n", 2)
    assert source.window(2, 99) == ("b = 2\nc = 3\n", 3)
    with pytest.raises(ValueError, match="does not start"):
        source.window(4, 5)
    with pytest.raises(ValueError):
        source.window(0, 1)
    with pytest.raises(ValueError):
        source.window(2, 1)
    assert source.matches(2, 3, "b = 2\nc = 3\n")
    assert not source.matches(2, 3, "b = 2\nc = 4\n")
    assert not source.matches(3, 4, "c = 3\n")


def test_make_window_records_the_clamp(tmp_path: Path) -> None:
    write(tmp_path, "mod.py", "a = 1\nb = 2\nc = 3\n")
    source = Repository(tmp_path).source("mod.py")
    assert source is not None
    clamped = make_window(source, 2, 10, "search", 1.0)
    assert (clamped.start, clamped.end, clamped.content, clamped.clamped_from) == (2, 3, "b = 2\nc = 3\n", 10)
    exact = make_window(source, 1, 3, "search", 1.0)
    assert exact.clamped_from is None
    # The clamp is provenance: windows still compare by what the builder sees.
    assert clamped == Window("mod.py", 2, 3, "b = 2\nc = 3\n", "search", 1.0)


def test_screen_checks_every_window_against_the_file_as_it_is_now(tmp_path: Path) -> None:
    write(tmp_path, "a.py", "a = 1\nb = 2\nc = 3\n")
    write(tmp_path, "b.py", "x = 1\n")
    write(tmp_path, "c.py", f"KEY = '{AWS_KEY}'\n")
    repo = Repository(tmp_path)
    a, b, c = (repo.source(p) for p in ("a.py", "b.py", "c.py"))
    assert a is not None and b is not None and c is not None
    windows = [
        make_window(a, 1, 2, "failure", 3.0),
        make_window(a, 3, 3, "search", 1.0),
        Window("a.py", 1, 1, "forged\n", "reference", 2.0),
        Window("./a.py", 1, 1, "a = 1\n", "search", 1.0),
        Window("gone.py", 1, 1, "x\n", "search", 1.0),
        make_window(b, 1, 1, "search", 1.0),
        make_window(c, 1, 1, "failure", 9.0),
    ]
    write(tmp_path, "b.py", "x = 2\n")  # changed since it was read
    kept, withheld = repo.screen(windows)
    # The window of c.py holds its line with the key redacted, which is the file as read now.
    assert kept == [*windows[:2], windows[6]]
    assert windows[6].content == "KEY = '[REDACTED: AWSKeyDetector]'\n"
    assert [(w.path, w.start, w.end, w.source, w.why) for w in withheld] == [
        ("a.py", 1, 1, "reference", WINDOW_CHANGED),
        ("./a.py", 1, 1, "search", WINDOW_UNREADABLE),
        ("gone.py", 1, 1, "search", WINDOW_UNREADABLE),
        ("b.py", 1, 1, "search", WINDOW_CHANGED),
    ]
    assert all(w.reason == "policy" for w in withheld)
    assert withheld[-1].to_dict() == {
        "path": "b.py",
        "start": 1,
        "end": 1,
        "source": "search",
        "reason": "policy",
        "why": WINDOW_CHANGED,
    }


# --- end to end -------------------------------------------------------------------------

SETTINGS = f'''\
ACCESS_KEY = "{AWS_KEY}"


def load(name):
    if not name:
        raise ValueError("no widget name")
    return ACCESS_KEY
'''

APP = """\
from pkg.settings import load


def widget(name):
    return load(name)
"""


def _secret_failure_repo(root: Path) -> str:
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/settings.py", SETTINGS)
    write(root, "pkg/app.py", APP)
    write(root, ".env", "DATABASE_PASSWORD=hunter2\n")
    return (
        "Traceback (most recent call last):\n"
        '  File "pkg/app.py", line 5, in widget\n'
        "    return load(name)\n"
        '  File "pkg/settings.py", line 6, in load\n'
        '    raise ValueError("no widget name")\n'
        "ValueError: no widget name\n"
    )


def test_a_secret_in_the_failure_file_is_redacted_not_withheld(tmp_path: Path) -> None:
    """Issue 17: the failing file holding a key is no longer withheld: its failure window is
    a candidate, the key replaced; nothing of the key reaches the result."""
    log = _secret_failure_repo(tmp_path)
    gathered = gather(tmp_path, log, query="widget settings load")
    assert gathered.failure_file == "pkg/settings.py"
    failing = [c for c in gathered.candidates if c.path == "pkg/settings.py" and c.reason == "failure"]
    assert any(c.start <= 6 <= c.end for c in failing)
    assert [w for w in gathered.policy_omissions if w.path == "pkg/settings.py"] == []
    for w in gathered.policy_omissions:
        assert isinstance(w, PolicyOmission) and w.reason == "policy"
    # Every candidate is exactly its lines of an allowed file, its secrets redacted.
    for c in gathered.candidates:
        text = redact_text((tmp_path / c.path).read_text(encoding="utf-8"))
        assert c.content == "".join(text.splitlines(keepends=True)[c.start - 1 : c.end])
    result = bugcontext.build(gathered.build_input(100_000))
    assert any(item.path == "pkg/settings.py" for item in result.items)
    everything = json.dumps(result.to_dict())
    assert AWS_KEY not in everything and "hunter2" not in everything


def test_the_command_line_reports_redactions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    log = _secret_failure_repo(root)
    log_file = write(tmp_path, "failing.log", log)

    report = run_context(root, log_file, query="widget settings load")
    markdown = report.markdown()
    assert "policy: secret content" not in markdown
    assert "- pkg/settings.py:1 AWSKeyDetector: policy: secret in the file" in markdown
    assert AWS_KEY not in markdown
    args = ["context", "--repo", str(root), "--pytest-log", str(log_file), "--query", "widget settings load"]

    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["failure_file"] == "pkg/settings.py"
    assert ("pkg/settings.py", "failure") in [(i["path"], i["reason"]) for i in out["items"]]
    assert [r["path"] for r in out["policy_redacted"] if r["why"] == "policy: secret in the file"] == [
        "pkg/settings.py"
    ]
    assert AWS_KEY not in json.dumps(out)

    assert main(args) == 0
    printed = capsys.readouterr()
    assert "policy: secret in the file" in printed.err and AWS_KEY not in printed.err + printed.out


def test_no_policy_omissions_means_an_empty_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "repo"
    write(root, "mod.py", "def f():\n    raise ValueError('x')\n")
    log = write(
        tmp_path,
        "log.txt",
        'Traceback (most recent call last):\n  File "mod.py", line 2, in f\nValueError: x\n',
    )
    assert main(["context", "--repo", str(root), "--pytest-log", str(log), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy_omitted"] == []
    assert out["failure_file"] == "mod.py"
    assert "withheld" not in run_context(root, log).markdown()


@pytest.mark.skipif(not hasattr(os, "symlink") or sys.platform == "win32", reason="needs symbolic links")
def test_gather_never_follows_a_frame_out_of_the_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, "mod.py", "def f():\n    return 1\n")
    outside = write(tmp_path, "outside/leak.py", "def g():\n    raise ValueError('leak')\n")
    (root / "leak.py").symlink_to(outside)
    log = f'Traceback (most recent call last):\n  File "{root / "leak.py"}", line 2, in g\nValueError: leak\n'
    gathered = gather(root, log, query="leak")
    assert gathered.failure_file is None
    assert all("leak" not in c.content for c in gathered.candidates)
