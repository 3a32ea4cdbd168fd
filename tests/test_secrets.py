"""The secret detector (``bugcontext.core.secrets``): every kind with a true and a false
positive, exact spans, redaction, and adversarial 1 MB lines for every pattern applied to
text the program did not write.

The secrets are assembled at run time from harmless pieces, so that no line of this file
matches a secret rule itself.
"""

from __future__ import annotations

import re
import time

import pytest
from bugcontext.core.secrets import KINDS, Redaction, Secret, find_secrets, redact, redact_text, redaction
from bugcontext.job.sources.files import SECRET_CONTENT, SECRET_NAME, secret_in_text, split_lines
from hypothesis import given
from hypothesis import strategies as st

J = "".join

# --- one true positive and one false positive per kind ----------------------------------

AWS_ID = J(["AKIA", "Q7" * 8])
AWS_SECRET = J(["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCY", "0123456789"])
GITHUB = J(["ghp", "_", "a1B2" * 9])
GITLAB = J(["glpat", "-", "xY9z" * 5])
SLACK = J(["xoxb", "-", "1234567890-abcdefABCDEF"])
WEBHOOK = J(["hooks.slack", ".com/services/", "T0123ABCD/B0123ABCD/", "aBcDeF123456"])
GOOGLE = J(["AIza", "Sy", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"])
STRIPE = J(["sk", "_live_", "4eC39HqLyjWDarjtT1zdp7dc"])
NPM = J(["npm", "_", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5"])
PYPI = J(["pypi-AgEI", "cHlwaS5vcmc", "CJDI1ZTA3ZjA1LTk4YjktNGQ5ZS04MWI3LTk5ZGJhMzg0ZDQzNA"])
ANTHROPIC = J(["sk-", "ant-", "api03-", "Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh"])
OPENAI = J(["sk-", "proj-", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2Yz3Ab4Cd5Ef6"])
HF = J(["hf", "_", "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"])  # 34 letters after the prefix
AZURE = J(["Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsu", "Fq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="])
JWT = J(
    [
        "eyJ",
        "hbGciOiJIUzI1NiJ9",
        ".",
        "eyJ",
        "zdWIiOiIxMjM0NTY3ODkwIn0",
        ".",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ]
)
URL_PASSWORD = J(["Xk9", "mQ2vL"])
GENERIC = J(["Zq8vX2mK", "9pL4rT7w"])
PRIVATE_KEY = J(["-----BEGIN ", "RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA ", "PRIVATE KEY-----"])

# name -> (kind, text with a secret, the secret, a text that must not be flagged); the kinds
# are detect-secrets plugins (installed rules) or built-in rule ids.
TABLE: dict[str, tuple[str, str, str, str]] = {
    "private-key": (
        "PrivateKeyDetector",
        f'KEY = """{PRIVATE_KEY}"""\n',
        PRIVATE_KEY,
        "-----BEGIN PUBLIC KEY-----\nMIIB\n",
    ),
    "aws-access-key-id": ("AWSKeyDetector", f'ACCESS_KEY = "{AWS_ID}"\n', AWS_ID, f"X{AWS_ID}\n"),
    "aws-secret-access-key": (
        "aws-secret-access-key",
        f"aws_secret_access_key = {AWS_SECRET}\n",
        AWS_SECRET,
        "aws_secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']\n",
    ),
    "github-token": ("GitHubTokenDetector", f"TOKEN = '{GITHUB}'\n", GITHUB, "prefix = 'ghp_'\n"),
    "gitlab-token": ("GitLabTokenDetector", f"token: {GITLAB}\n", GITLAB, "glpat-short\n"),
    "slack-token": ("SlackDetector", f"SLACK = '{SLACK}'\n", SLACK, "xoxb-123\n"),
    "slack-webhook": (
        "SlackDetector",
        f"url = 'https://{WEBHOOK}'\n",
        f"https://{WEBHOOK}",
        "see https://api.slack.com/messaging/webhooks\n",
    ),
    "google-api-key": ("google-api-key", f"key={GOOGLE}\n", GOOGLE, "AIzaShort\n"),
    "stripe-key": ("StripeDetector", f"stripe.api_key = '{STRIPE}'\n", STRIPE, "pk_live_is_publishable\n"),
    "npm-token": ("npm-token", f"//registry/:x={NPM}\n", NPM, "npm_config_cache = '/tmp'\n"),
    "pypi-token": ("pypi-token", f"password = {PYPI}\n", PYPI, "password = pypi-abc\n"),
    "anthropic-key": (
        "anthropic-key",
        f"ANTHROPIC_API_KEY={ANTHROPIC}\n",
        ANTHROPIC,
        "model = 'sk-ant-short'\n",
    ),
    "openai-key": ("openai-key", f"client = OpenAI(api_key='{OPENAI}')\n", OPENAI, "'-sk' * 40\n"),
    "huggingface-token": (
        "huggingface-token",
        f'HF_TOKEN = "{HF}"\n',
        HF,
        'HF_TOKEN = os.environ["HF_TOKEN"]\n',
    ),
    "azure-storage-key": (
        "AzureStorageKeyDetector",
        f"DefaultEndpointsProtocol=https;AccountName=x;AccountKey={AZURE};\n",
        AZURE,
        "AccountKey=<your-account-key>\n",
    ),
    "jwt": ("JwtTokenDetector", f"Authorization: Bearer {JWT}\n", JWT, "eyJhbGciOi.not-a-token\n"),
    "url-password": (
        "BasicAuthDetector",
        f"DATABASE_URL = 'postgres://admin:{URL_PASSWORD}@db:5432/app'\n",
        URL_PASSWORD,
        "DATABASE_URL = 'postgres://admin:${DB_PASSWORD}@db:5432/app'\n",
    ),
    "generic-secret": (
        "generic-password",
        f'db_password = "{GENERIC}"\n',
        GENERIC,
        'password = "changeme-please-123"\n',
    ),
}


def test_every_table_kind_is_a_kind() -> None:
    assert {kind for kind, *_ in TABLE.values()} <= set(KINDS)


@pytest.mark.parametrize("name", TABLE)
def test_true_positive(name: str) -> None:
    kind, text, secret, _ = TABLE[name]
    start = text.index(secret)
    assert find_secrets(text) == [Secret(start, start + len(secret), kind)]
    assert secret_in_text("mod.py", text) == SECRET_CONTENT


@pytest.mark.parametrize("name", TABLE)
def test_false_positive(name: str) -> None:
    *_, harmless = TABLE[name]
    assert find_secrets(harmless) == []
    assert secret_in_text("mod.py", harmless) is None


@pytest.mark.parametrize(
    "text",
    [
        'token = "AccessTokenProviderFactory"\n',  # a class name: no digit
        'password = "os.environ.get1234567"\n',  # a dotted name
        "SECRET_KEY_SETTING_NAME_2 = 1\n",  # a constant's name, nothing assigned
        'api_key = "{{ vault_api_key_1234 }}"\n',  # a template
        'token = "xxxxxxxxxxxxxxxxxxxxxxxx"\n',  # one repeated character
        "password = get_password_from_vault_2()\n",  # a call
        'token_count = "12345678901234567890"\n',  # digits only
        "tokens = tokenize(text, max_tokens=4096)\n",
        "http://user:password@example.com/\n",  # a placeholder password
        "e.g. `pass` in `https://user:pass@host:port/path`\n",  # documentation
        'user_id = "AKIAIOSFODNN7EXAMPLE"\n',  # AWS's documented example key id
    ],
)
def test_generic_placeholders_and_names_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []


def test_a_hugging_face_token_of_34_characters() -> None:
    """Issue: ``HF_TOKEN = "hf_..."`` was not detected."""
    text = f'import os\nHF_TOKEN = "{HF}"\n'
    assert find_secrets(text) == [Secret(22, 22 + 37, "huggingface-token")]
    assert redact_text(text) == 'import os\nHF_TOKEN = "[REDACTED: huggingface-token]"\n'


def test_offsets_are_code_points_even_with_lone_surrogates() -> None:
    text = f"é\udcff😀 {AWS_ID} ß"
    assert find_secrets(text) == [Secret(4, 24, "AWSKeyDetector")]
    assert redact(text) == Redaction("é\udcff😀 [REDACTED: AWSKeyDetector] ß", ("AWSKeyDetector",))


def test_overlapping_findings_merge_under_the_first_kind() -> None:
    text = f"aws_secret_access_key = {AWS_SECRET}\n"  # the keyword rule also sees it
    assert find_secrets(text) == [Secret(24, 64, "aws-secret-access-key")]


def test_redaction_keeps_the_lines_of_a_key_block() -> None:
    text = f"a = 1\n{PRIVATE_KEY}\nb = 2\n"
    assert redact(text) == Redaction(
        "a = 1\n[REDACTED: PrivateKeyDetector]\n\n\nb = 2\n", ("PrivateKeyDetector",)
    )
    assert redaction("jwt") == "[REDACTED: jwt]"


def test_two_secrets_on_one_line() -> None:
    text = f"{AWS_ID},{GITHUB}"
    assert redact(text) == Redaction(
        "[REDACTED: AWSKeyDetector],[REDACTED: GitHubTokenDetector]",
        ("AWSKeyDetector", "GitHubTokenDetector"),
    )


def test_text_without_secrets_is_returned_as_is() -> None:
    text = "def f():\n    return 1\n"
    done = redact(text)
    assert done == Redaction(text, ()) and done.text is text


def test_non_str_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        find_secrets(b"AKIA")  # type: ignore[arg-type]


# --- adversarial lines: linear time -----------------------------------------------------

MB = 1 << 20
# A generous guard against a hang: a backtracking search on these lines takes hours.
GUARD = 30.0


def _timed(call: object, *args: object) -> object:
    started = time.perf_counter()
    result = call(*args)  # type: ignore[operator]
    assert time.perf_counter() - started < GUARD
    return result


def _repeat(unit: str) -> str:
    return unit * (MB // len(unit))


# (line, the secrets found in it) -- each built to make a backtracking engine retry a long
# stretch at every position, for one rule or another.
ADVERSARIAL: list[tuple[str, list[tuple[int, int, str]]]] = [
    (_repeat("-sk"), []),
    ('"' + _repeat("-sk") + '"', []),
    (_repeat("sk-"), []),
    (_repeat("sk-T3BlbkFJ"), [(0, len(_repeat("sk-T3BlbkFJ")), "openai-key")]),
    (_repeat("sk-ant-a-"), [(0, len(_repeat("sk-ant-a-")), "anthropic-key")]),
    (_repeat("AKIA"), []),
    ("AKIA" + "A" * MB, []),
    (_repeat("aws_secret_access_key="), []),
    (_repeat("ghp_"), []),
    ("ghp_" + "a" * MB, []),
    (_repeat("glpat-"), []),  # a token is 20-50 characters, then no word character
    (_repeat("xoxb-"), [(0, len(_repeat("xoxb-")), "slack-token")]),
    (_repeat("hooks.slack.com/services/"), []),
    (_repeat("AIza"), []),
    (_repeat("sk_live_"), []),
    (_repeat("npm_"), []),
    (_repeat("pypi-AgEIcHlwaS5vcmc"), [(0, len(_repeat("pypi-AgEIcHlwaS5vcmc")), "PypiTokenDetector")]),
    (_repeat("hf_"), []),
    ("hf_" + "a" * MB, []),
    (_repeat("AccountKey="), []),
    (_repeat("eyJ"), []),
    # segments that do not decode to JSON: no token, each segment read a bounded number of times
    (_repeat("eyJaaaaaaaaaaaa."), []),
    (_repeat("a://b:"), []),
    ("a://" + "b" * 99 + ":" + "c" * MB, []),
    (_repeat("password="), []),
    # each search starts inside the value before it: every value holds one operator at most
    (_repeat("token=token"), []),
    (_repeat("pwd:x"), []),
    (_repeat("token "), []),
    ("token = '" + "a1" * (MB // 2), []),
    (_repeat("-----BEGIN "), []),
    (
        _repeat("-----BEGIN RSA PRIVATE KEY-----"),
        [(i * 31, i * 31 + 31, "PrivateKeyDetector") for i in range(MB // 31)],
    ),
    # a header and a body without its end line: the body is redacted with it
    ("-----BEGIN RSA PRIVATE KEY-----" + "A" * MB, [(0, 31 + MB, "PrivateKeyDetector")]),
    (_repeat("curl -u "), []),
    (_repeat("auth=('a', '"), []),
    (_repeat("Authorization: Basic "), []),
    (_repeat("&sig="), []),
    (_repeat("LS0tLS1CRUdJTi"), []),
    (_repeat("redis://:"), []),
    (_repeat("hvs."), []),
    # prose naming a header, not a header line: each name alone
    (
        _repeat("BEGIN RSA PRIVATE KEY"),
        [(21 * i, 21 * i + 21, "PrivateKeyDetector") for i in range(MB // 21)],
    ),
    ("é" * MB, []),
    # command lines, blank-separated names, percent escapes, glued tokens
    (_repeat("mysql -u "), []),
    (_repeat("mysql -p-"), []),
    (_repeat("sshpass -e "), []),
    (_repeat("docker login -u "), []),
    (_repeat("redis-cli -a -"), []),
    (_repeat("ldapsearch "), []),
    (_repeat("--password --"), []),
    (_repeat(" -passin pass:"), []),
    (_repeat("aws_secret_access_key "), []),
    (_repeat("AKIA" + "Q7" * 8 + ": "), [(i * 22, i * 22 + 20, "AWSKeyDetector") for i in range(MB // 22)]),
    (_repeat("%3D"), []),
    (_repeat("token%3Da1&b"), []),
    ("ghp_" + "aB3" * (MB // 3), [(0, 4 + MB // 3 * 3, "github-token")]),
    (_repeat("npm_%2F"), []),
]


@pytest.mark.parametrize("index", range(len(ADVERSARIAL)))
def test_adversarial_lines_are_scanned_in_linear_time(index: int) -> None:
    line, expected = ADVERSARIAL[index]
    assert _timed(find_secrets, line) == [Secret(*f) for f in expected]


def test_the_reported_line_of_issue_8() -> None:
    """A 120 KB source line of ``"-sk" * 40000`` inside quotes: no secret, scanned at once."""
    text = 'X = "' + "-sk" * 40000 + '"\n'
    assert _timed(secret_in_text, "big.py", text) is None


def test_credential_config_entries_are_linear() -> None:
    # The package-manager configuration rule (a Python expression) on a long key and gap.
    text = "token" * (MB // 10) + " " * (MB // 2) + "x\n"
    assert _timed(secret_in_text, ".npmrc", text) is None
    assert _timed(secret_in_text, ".npmrc", text[:-2] + "= abc\n") == SECRET_NAME


def test_every_python_pattern_on_untrusted_text_is_linear() -> None:
    """The regular expressions kept in Python, on lines built to make them backtrack."""
    from bugcontext.core import composer
    from bugcontext.integrations.pytest_plugin import _LOCATION, _NATIVE, _is_rule
    from bugcontext.job.sources import references, search, symbols
    from bugcontext.job.sources.files import _ENDING, _LINE, split_lines

    long = "a" * MB
    assert _timed(_LOCATION.match, "x:" + "1" * MB) is None
    assert _timed(_LOCATION.match, "x" + ":1" * (MB // 2)) is None
    assert _timed(_NATIVE.match, '  File "' + "x" * MB) is None
    assert _timed(_is_rule, "=" * MB + "x") is False
    assert _timed(_is_rule, "___ " + "_" * MB + "x") is False
    assert _timed(split_lines, long) == (long,)
    assert _timed(_ENDING.search, long) is None
    assert _timed(_LINE.findall, "\r" * MB) == ["\r"] * MB
    assert _timed(symbols._MEMBER_ASSIGNED.findall, ".a" + " " * MB + "x") == []
    assert _timed(symbols._MEMBER_ASSIGNED.findall, ". " * (MB // 2)) == []
    assert _timed(search._SUBWORD.findall, "A" * MB + "a") == ["A" * (MB - 1), "Aa"]
    assert _timed(search._IDENTIFIER.findall, "0x" * (MB // 2)) == ["0x0", ("0x" * (MB // 2))[3:]]
    assert _timed(references._WORD.findall, "$" * MB) == ["$" * MB]
    assert _timed(composer._BACKTICKS.findall, "`a" * (MB // 2)) == ["`"] * (MB // 2)


def _rule_regex(line: str) -> bool:
    return re.match(r"^(?:={3,}.*={3,}|_{3,} .+ _{3,})$", line) is not None


@pytest.mark.parametrize(
    "line",
    [
        "",
        "======",
        "=====",
        "=== x ===",
        "===x===",
        "==== ERRORS ====",
        "___ test_x ___",
        "___  ___",
        "___ x ___",
        "______",
        "___ ___",
        "____ a b ____",
        "___ x __",
        "__ x ___",
        "___x ___",
        "___ x___",
        " ___ x ___",
        "=== ___ x ___",
    ],
)
def test_is_rule_is_the_expression_it_replaces(line: str) -> None:
    from bugcontext.integrations.pytest_plugin import _is_rule

    assert _is_rule(line) is _rule_regex(line)


@given(st.text(alphabet="=_ ax\t", max_size=16))
def test_is_rule_agrees_with_the_expression_on_any_line(line: str) -> None:
    from bugcontext.integrations.pytest_plugin import _is_rule

    assert _is_rule(line) is _rule_regex(line)


PIECES = ["AKIA", "Q7", "hf_", "aB3", "aBcDeFgHiJ", "=", " ", "\n", "\r\n", "\r", "-", "é", "\udcff"]


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_redaction_keeps_every_line_and_leaves_no_secret(text: str) -> None:
    done = redact(text)
    assert len(done.text.splitlines()) == len(text.splitlines())
    assert find_secrets(done.text) == []
    assert len(done.kinds) == len(find_secrets(text))


# --- the rule set's translation and installation -----------------------------------------


def test_translate_turns_lookarounds_into_half_boundaries_and_byte_checks() -> None:
    from bugcontext.core.secrets import RuleError, translate

    start = "(?:(?<=\\W)|(?<=^))"
    assert translate(start + "key=([a-f0-9]{48}(?![a-f0-9]))", 0) == (
        r"(?m)\b{start-half}key=([a-f0-9]{48})",
        "[a-f0-9]",
    )
    assert translate(r"glpat-[A-Za-z0-9_\-]{20,50}(?!\w)", re.IGNORECASE) == (
        r"(?mi)glpat-[A-Za-z0-9_\-]{20,50}",
        "[A-Za-z0-9_]",
    )
    # A `-` Python reads as a literal after a range is escaped for the regex crate.
    assert translate("eyJ[A-Za-z0-9-_=]+", 0) == (r"(?m)eyJ[A-Za-z0-9\-_=]+", None)
    for pattern in ["(?<![\\w.])x", "a(?=b)c", "(?!x)y"]:
        with pytest.raises(RuleError):
            translate(pattern, 0)


def test_a_rule_that_does_not_compile_is_refused_and_the_rules_in_use_kept() -> None:
    from bugcontext import _core

    before = _core.secret_kinds()
    with pytest.raises(ValueError, match="unknown check"):
        _core.install_secret_rules([("X", "abc", "nope", False, None)])
    with pytest.raises(ValueError, match="the X rule"):
        _core.install_secret_rules([("X", "(?=a)", "token", False, None)])
    with pytest.raises(ValueError, match="no capture group"):
        _core.install_secret_rules([("X", "abc", "token", True, None)])
    assert _core.secret_kinds() == before == list(KINDS)


def test_a_secret_inside_terminal_colour_codes_is_redacted() -> None:
    from bugcontext.core.secrets import redact_text

    key = "AKIA" + "QWERTYUIOPASDFGH"
    for text in (f"\x1b[31m{key}\x1b[0m boom", f"\x1b]0;title\x07{key}", f"x = \x1b[1;32m{key}"):
        out = redact_text(text)
        assert key not in out and "[REDACTED: AWSKeyDetector]" in out
        assert out.startswith(text[: text.index(key)])  # the codes themselves are kept


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
def test_a_secret_that_ends_the_text_without_a_line_ending_keeps_its_last_line(ending: str) -> None:
    """A private key without its END line runs to the end of the text; when that last line
    has no ending, the replacement followed by the key's endings left one line fewer (the
    fuzz target found it): the replacement goes on the key's last line instead."""
    text = ending.join(["x = 1", 'KEY = """-----BEGIN RSA PRIVATE KEY-----', "MIIEowIBAAKCAQEAx", "abc"])
    done = redact(text)
    kept = "\n" if ending == "\r" else ending  # a lone \r inside a secret is written \n
    assert done.text == f'x = 1{ending}KEY = """{kept}{kept}[REDACTED: PrivateKeyDetector]'
    assert done.kinds == ("PrivateKeyDetector",)
    assert len(split_lines(done.text)) == len(split_lines(text)) == 4
    # Followed by anything, the replacement stays on the secret's first line.
    after = redact(text + ending).text
    assert after == f'x = 1{ending}KEY = """[REDACTED: PrivateKeyDetector]{kept}{kept}{ending}'
    # After a "\r", a first ending "\n" would complete it: it is written "\r\n".
    assert redact("a\r-----BEGIN PRIVATE KEY-----\rJ").text == "a\r\r\n[REDACTED: PrivateKeyDetector]"
