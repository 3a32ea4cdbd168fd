"""The rules file of the secret screen (``bugcontext.core.secrets``): a new process reads the
translated detect-secrets rules from it without importing detect-secrets; a damaged, foreign
or hostile file is never used (the rules are translated again, the screen as strong as ever).

The secrets are assembled at run time from harmless pieces, so that no line of this file
matches a secret rule itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bugcontext.core import secrets
from bugcontext.core.secrets import KINDS, RULE_SET

J = "".join
GITHUB = J(["ghp", "_", "a1B2" * 9])
SLACK = J(["xoxb", "-", "1234567890-abcdefABCDEF"])
STRIPE = J(["sk", "_live_", "4eC39HqLyjWDarjtT1zdp7dc"])
SAMPLE = f"a = {GITHUB!r}\nb = {SLACK!r}\nc = {STRIPE!r}\n"
REDACTED = (
    "a = '[REDACTED: GitHubTokenDetector]'\n"
    "b = '[REDACTED: SlackDetector]'\n"
    "c = '[REDACTED: StripeDetector]'\n"
)

# What a new process reports: its rule set, kinds, whether it imported detect-secrets (and
# the modules only that import brings), and the sample redacted.
PROBE = f"""
import json, sys
import bugcontext.core.secrets as s
print(json.dumps({{
    "rule_set": s.RULE_SET,
    "kinds": list(s.KINDS),
    "imported": [m for m in ("detect_secrets", "requests", "importlib.metadata") if m in sys.modules],
    "redacted": s.redact_text({SAMPLE!r}),
}}))
"""


def _env(cache_home: Path) -> dict[str, str]:
    """This environment, caching under ``cache_home``, importing bugcontext from where this
    process does."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache_home))
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(Path(secrets.__file__).parents[2]), *sys.path] if p)
    return env


def _probe(cache_home: Path, **extra: str) -> dict[str, object]:
    command = [sys.executable, "-c", PROBE]
    done = subprocess.run(
        command, env={**_env(cache_home), **extra}, capture_output=True, text=True, check=True, timeout=120
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _rule_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "bugcontext").glob("secret-rules-*.json"))


def test_redaction_sample_is_what_this_process_screens() -> None:
    assert secrets.redact_text(SAMPLE) == REDACTED


def test_a_new_process_reads_the_rules_file_and_not_detect_secrets(tmp_path: Path) -> None:
    first = _probe(tmp_path)
    assert first == {
        "rule_set": RULE_SET,
        "kinds": list(KINDS),
        "imported": ["detect_secrets", "requests", "importlib.metadata"],
        "redacted": REDACTED,
    }
    [written] = _rule_files(tmp_path)
    assert written.stat().st_mode & 0o777 == 0o600
    second = _probe(tmp_path)
    assert second == {"rule_set": RULE_SET, "kinds": list(KINDS), "imported": [], "redacted": REDACTED}
    assert _rule_files(tmp_path) == [written]


def test_the_environment_variable_keeps_the_rules_file_unread_and_unwritten(tmp_path: Path) -> None:
    translated = {
        "rule_set": RULE_SET,
        "kinds": list(KINDS),
        "imported": ["detect_secrets", "requests", "importlib.metadata"],
        "redacted": REDACTED,
    }
    assert _probe(tmp_path, BUGCONTEXT_NO_RULE_FILE="1") == translated
    assert not (tmp_path / "bugcontext").exists()
    _probe(tmp_path)  # writes the file ...
    assert len(_rule_files(tmp_path)) == 1
    assert _probe(tmp_path, BUGCONTEXT_NO_RULE_FILE="1") == translated  # ... not read with it set


def _resealed(document: dict[str, object]) -> bytes:
    """``document`` with its digest made to match (a hostile file that passes the digest)."""
    document = dict(document)
    document["digest"] = secrets._payload_digest(document)
    return json.dumps(document).encode()


# name -> how the first process's file is changed; each is read as no file: the second process
# translates the rules again (imports detect-secrets), redacts as strongly, and writes a good file.
DAMAGES = {
    "garbage": lambda path, doc: path.write_bytes(b"\x00\xff not json"),
    "truncated": lambda path, doc: path.write_bytes(path.read_bytes()[:200]),
    "empty": lambda path, doc: path.write_bytes(b""),
    "pattern changed, digest not": lambda path, doc: path.write_text(
        path.read_text().replace("ghp|gho|ghu|ghs|ghr", "ghz")
    ),
    "rules dropped, digest resealed, writable by others": lambda path, doc: (
        path.write_bytes(_resealed({**doc, "rules": doc["rules"][:1]})),
        path.chmod(0o666),
    ),
    "an invalid expression, digest resealed": lambda path, doc: path.write_bytes(
        _resealed({**doc, "rules": [["GitHubTokenDetector", "(?m)(unclosed", "token", False, None]]})
    ),
    "an unknown check, digest resealed": lambda path, doc: path.write_bytes(
        _resealed({**doc, "rules": [["GitHubTokenDetector", "(?m)x", "none", False, None]]})
    ),
    "an excluded plugin, digest resealed": lambda path, doc: path.write_bytes(
        _resealed({**doc, "rules": [["KeywordDetector", "(?m)x", "token", False, None]]})
    ),
    "another key, digest resealed": lambda path, doc: path.write_bytes(_resealed({**doc, "key": "0" * 64})),
    "nested too deep": lambda path, doc: path.write_bytes(b"[" * 100_000),
    "too large": lambda path, doc: path.write_bytes(b" " * (secrets.RULE_CACHE_MAX_BYTES + 1)),
    "a link to a copy": lambda path, doc: (
        (path.parent / "copy.json").write_bytes(path.read_bytes()),
        path.unlink(),
        path.symlink_to(path.parent / "copy.json"),
    ),
    "folder writable by others": lambda path, doc: path.parent.chmod(0o777),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_or_hostile_rules_file_is_not_used(tmp_path: Path, damage: str) -> None:
    _probe(tmp_path)
    [path] = _rule_files(tmp_path)
    good = path.read_bytes()
    DAMAGES[damage](path, json.loads(good))
    again = _probe(tmp_path)
    assert again == {
        "rule_set": RULE_SET,
        "kinds": list(KINDS),
        "imported": ["detect_secrets", "requests", "importlib.metadata"],
        "redacted": REDACTED,
    }
    if damage != "folder writable by others":  # (then it is not read, but written again)
        assert path.read_bytes() == good
        assert not path.is_symlink()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file away")
def test_a_rules_file_of_another_user_is_not_used(tmp_path: Path) -> None:
    _probe(tmp_path)
    [path] = _rule_files(tmp_path)
    os.chown(path, 12345, -1)
    assert _probe(tmp_path)["imported"] == ["detect_secrets", "requests", "importlib.metadata"]


def test_the_rules_file_holds_the_translation(tmp_path: Path) -> None:
    cache = secrets._rule_cache()
    assert cache is not None
    _, key = cache
    assert len(key) == 64
    secrets._write_rule_file(tmp_path, key, RULE_SET, secrets._plugin_rules())
    assert secrets._read_rule_file(tmp_path, key) == (RULE_SET, secrets._plugin_rules())
    assert secrets._read_rule_file(tmp_path, "f" * 64) is None
    document = json.loads(secrets._rule_file(tmp_path, key).read_text())
    body = {k: v for k, v in document.items() if k != "digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    assert document["digest"] == hashlib.sha256(canonical).hexdigest()
    assert document["format"] == 1


def test_cache_clear_takes_the_rules_file_for_the_cache_s_own(tmp_path: Path) -> None:
    from bugcontext.job._cache_admin import cache_files, clear

    _probe(tmp_path)
    folder = tmp_path / "bugcontext"
    [path] = _rule_files(tmp_path)
    (folder / "secret-rules-notakey.json").write_text("{}")  # not a rules file's name
    (folder / "secret-rules-link.json").symlink_to(path)
    assert cache_files(folder) == [path]
    size = path.stat().st_size
    assert clear(folder) == (1, size)
    assert sorted(p.name for p in folder.iterdir()) == ["secret-rules-link.json", "secret-rules-notakey.json"]


def test_cache_clear_of_a_folder_holding_only_the_rules_file_is_not_refused(tmp_path: Path) -> None:
    _probe(tmp_path)
    [path] = _rule_files(tmp_path)
    command = [sys.executable, "-m", "bugcontext", "cache", "clear"]
    done = subprocess.run(command, env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    # (the process wrote the file again when it started, before clearing)
    assert not path.exists()


def test_a_relative_cache_folder_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import platformdirs

    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *args, **kwargs: "relative/bugcontext")
    assert secrets._rule_cache() is None
    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *args, **kwargs: "/absolute/bugcontext")
    cache = secrets._rule_cache()
    assert cache is not None
    assert cache[0] == Path("/absolute/bugcontext")
