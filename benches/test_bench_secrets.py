"""Benchmarks of the secret detector (``bugcontext.core.secrets``, the Rust ``regex`` crate).

* ``adversarial-<pattern>``: the detector (every rule) on lines of 1 MiB built to make a
  backtracking engine retry a long stretch at every position, one or more lines per pattern
  (the line's name says which); each line records ``mb_per_s``. The worst case per pattern is
  the slowest line of its group.
* ``issue-line``: the line reported in issue 8 (``"-sk" * n`` inside quotes) at 12 KB, for the
  detector and for the Python expression it replaced (``old``: Python's ``re``, which
  backtracks quadratically here: 120 KB took 17 s), side by side; ``new`` records
  ``vs_old`` (the old median over the new one).
* ``source``: ordinary source, the Python standard library's ``.py`` files read in path
  order up to 8 MB, each scanned as the reader scans a file; ``new`` (the detector) and
  ``old`` (the Python expression with its literal prefilter, which knew 11 kinds of secret;
  the detector now runs detect-secrets' plugins and the built-in rules), each with
  ``mb_per_s``.

Outside the timing, the results are checked: no secret in the adversarial lines but those
expected, the same verdict as the old expression on every standard library file it flags.
"""

from __future__ import annotations

import re
import statistics
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from bugcontext.core.secrets import find_secrets

MB = 1 << 20


def _repeat(unit: str) -> str:
    return unit * (MB // len(unit))


# (pattern the line targets, line name, line)
ADVERSARIAL: list[tuple[str, str, str]] = [
    ("openai-key", "-sk", _repeat("-sk")),
    ("openai-key", "sk-", _repeat("sk-")),
    ("openai-key", "sk-T3BlbkFJ", _repeat("sk-T3BlbkFJ")),
    ("anthropic-key", "sk-ant-a-", _repeat("sk-ant-a-")),
    ("AWSKeyDetector", "AKIA", _repeat("AKIA")),
    ("AWSKeyDetector", "AKIA+A", "AKIA" + "A" * MB),
    ("aws-secret-access-key", "aws_secret_access_key=", _repeat("aws_secret_access_key=")),
    ("GitHubTokenDetector", "ghp_", _repeat("ghp_")),
    ("GitHubTokenDetector", "ghp_+a", "ghp_" + "a" * MB),
    ("GitLabTokenDetector", "glpat-", _repeat("glpat-")),
    ("slack-token", "xoxb-", _repeat("xoxb-")),
    ("SlackDetector", "hooks", _repeat("hooks.slack.com/services/")),
    ("google-api-key", "AIza", _repeat("AIza")),
    ("stripe-key", "sk_live_", _repeat("sk_live_")),
    ("npm-token", "npm_", _repeat("npm_")),
    ("PypiTokenDetector", "pypi-", _repeat("pypi-AgEIcHlwaS5vcmc")),
    ("huggingface-token", "hf_", _repeat("hf_")),
    ("huggingface-token", "hf_+a", "hf_" + "a" * MB),
    ("azure-storage-key", "AccountKey=", _repeat("AccountKey=")),
    ("JwtTokenDetector", "eyJ", _repeat("eyJ")),
    ("JwtTokenDetector", "eyJa.", _repeat("eyJaaaaaaaaaaaa.")),
    ("url-password", "a://b:", _repeat("a://b:")),
    ("url-password", "a://b:c+", "a://" + "b" * 99 + ":" + "c" * MB),
    ("generic-secret", "password=", _repeat("password=")),
    ("generic-secret", "token ", _repeat("token ")),
    ("generic-secret", "token='a1+", "token = '" + "a1" * (MB // 2)),
    ("PrivateKeyDetector", "-----BEGIN ", _repeat("-----BEGIN ")),
    ("PrivateKeyDetector", "header*", _repeat("-----BEGIN RSA PRIVATE KEY-----")),
    ("PrivateKeyDetector", "header+A", "-----BEGIN RSA PRIVATE KEY-----" + "A" * MB),
    ("PrivateKeyDetector", "prose header*", _repeat("BEGIN RSA PRIVATE KEY")),
    ("base64-private-key", "LS0tLS1CRUdJTi", _repeat("LS0tLS1CRUdJTi")),
    ("command-line-password", "curl -u ", _repeat("curl -u ")),
    ("auth-tuple", "auth=('a', '", _repeat("auth=('a', '")),
    ("basic-auth-header", "Authorization: Basic ", _repeat("Authorization: Basic ")),
    ("azure-sas-signature", "&sig=", _repeat("&sig=")),
    ("vault-token", "hvs.", _repeat("hvs.")),
    ("url-password", "redis://:", _repeat("redis://:")),
    ("all", "non-ascii", "é" * MB),
    ("command-line-password", "mysql -u ", _repeat("mysql -u ")),
    ("command-line-password", "docker login -u ", _repeat("docker login -u ")),
    ("command-line-password", "--password --", _repeat("--password --")),
    ("aws-secret-access-key", "aws_secret_access_key ", _repeat("aws_secret_access_key ")),
    ("generic-secret", "token%3Da1&b", _repeat("token%3Da1&b")),
    ("github-token", "ghp_aB3", "ghp_" + "aB3" * (MB // 3)),
]

# The expression the detector replaced, with its literal prefilter (the baseline).
OLD = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    r"|PuTTY-User-Key-File-\d+:"
    r"|(?<![0-9A-Za-z])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"
    r"|(?i:aws_secret_access_key)[\"']?[ \t]*[=:][ \t]*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])"
    r"|(?<![0-9A-Za-z_])gh[pousr]_[A-Za-z0-9]{36,255}(?![0-9A-Za-z_])"
    r"|(?<![0-9A-Za-z_])github_pat_[A-Za-z0-9_]{22,255}"
    r"|(?<![0-9A-Za-z])xox[baprs]-[0-9A-Za-z-]{10,}"
    r"|hooks\.slack\.com/services/T[0-9A-Za-z]+/B[0-9A-Za-z]+/[0-9A-Za-z]+"
    r"|(?<![0-9A-Za-z_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"
    r"|(?<![0-9A-Za-z])[sr]k_live_[0-9A-Za-z]{20,}"
    r"|(?<![0-9A-Za-z])glpat-[0-9A-Za-z_-]{20,}"
    r"|(?<![0-9A-Za-z])npm_[0-9A-Za-z]{36}(?![0-9A-Za-z])"
    r"|pypi-AgEIcHlwaS5vcmc[0-9A-Za-z_-]{50,}"
    r"|(?<![0-9A-Za-z])sk-ant-[a-z]+[0-9]*-[0-9A-Za-z_-]{20,}"
    r"|(?<![0-9A-Za-z])sk-[0-9A-Za-z_-]*T3BlbkFJ[0-9A-Za-z_-]+"
)
OLD_MARKERS = (
    "-----BEGIN", "PuTTY-User-Key-File-", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-", "hooks.slack.com/services/", "AIza",
    "k_live_", "glpat-", "npm_", "pypi-AgEIcHlwaS5vcmc", "sk-",
)  # fmt: skip


def old_secret(text: str) -> bool:
    marked = any(m in text for m in OLD_MARKERS) or "aws_secret_access_key" in text.lower()
    return marked and OLD.search(text) is not None


def new_secret(text: str) -> bool:
    return bool(find_secrets(text))


_TIMES: dict[tuple[str, str], float] = {}


def _median(benchmark: Any) -> float | None:
    stats = getattr(benchmark, "stats", None)
    return None if stats is None else float(stats.stats.median)


@pytest.mark.parametrize(
    ("pattern", "name", "line"), ADVERSARIAL, ids=[f"{p}:{n}" for p, n, _ in ADVERSARIAL]
)
def test_adversarial(benchmark: Any, pattern: str, name: str, line: str) -> None:
    benchmark.group = f"adversarial-{pattern}"
    benchmark.name = f"{name} ({len(line.encode()) / MB:.1f} MiB)"
    found = benchmark.pedantic(find_secrets, args=(line,), rounds=3, iterations=1, warmup_rounds=0)
    assert {s.kind for s in found} <= {pattern}
    median = _median(benchmark)
    if median:
        benchmark.extra_info["mb_per_s"] = round(len(line.encode()) / MB / median, 1)


ISSUE_LINE = 'X = "' + "-sk" * 4000 + '"\n'


@pytest.mark.parametrize("engine", ["old", "new"])
def test_issue_line(benchmark: Any, engine: str) -> None:
    benchmark.group = "issue-line (12 KB)"
    call = old_secret if engine == "old" else new_secret
    assert benchmark.pedantic(call, args=(ISSUE_LINE,), rounds=3, iterations=1) is False
    median = _median(benchmark)
    if median:
        _TIMES[("issue", engine)] = median
        if engine == "new" and ("issue", "old") in _TIMES:
            benchmark.extra_info["vs_old"] = round(_TIMES[("issue", "old")] / median, 1)


def _corpus(limit: int = 8 * MB) -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    texts: list[str] = []
    size = 0
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeError):
            continue
        if len(text.encode()) > MB:
            continue
        texts.append(text)
        size += len(text.encode())
        if size >= limit:
            break
    return texts


CORPUS = _corpus()
CORPUS_MB = sum(len(t.encode()) for t in CORPUS) / MB


def _scan(check: Any) -> int:
    return sum(1 for text in CORPUS if check(text))


@pytest.mark.parametrize("engine", ["old", "new"])
def test_source(benchmark: Any, engine: str) -> None:
    benchmark.group = f"source ({len(CORPUS)} stdlib files, {CORPUS_MB:.1f} MiB)"
    call = old_secret if engine == "old" else new_secret
    flagged = benchmark.pedantic(_scan, args=(call,), rounds=3, iterations=1)
    assert flagged >= 0
    median = _median(benchmark)
    if median:
        benchmark.extra_info["mb_per_s"] = round(CORPUS_MB / median, 1)
        benchmark.extra_info["files_flagged"] = flagged


def test_the_old_verdicts_are_kept() -> None:
    """Every standard library file the old expression flags, the detector flags too."""
    old = [i for i, text in enumerate(CORPUS) if old_secret(text)]
    assert all(new_secret(CORPUS[i]) for i in old)


if __name__ == "__main__":
    for pattern, name, line in ADVERSARIAL:
        import time

        times = []
        for _ in range(3):
            started = time.perf_counter()
            find_secrets(line)
            times.append(time.perf_counter() - started)
        print(f"| {pattern} | {name} | {statistics.median(times) * 1000:.1f} ms |")
