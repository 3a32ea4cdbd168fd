"""Secrets in the spellings people write them beyond ``name = value``: after a name and blanks
(``aws configure set``, ``export NAME VALUE``), in hyphenated flags, glued to the key id they
belong to, on the command lines of database and remote-shell tools, in percent-encoded query
strings, and vendor tokens glued to more letters. Each form with its exact redacted text, and
the ordinary code around it that must stay as it is.

The secrets are assembled at run time from harmless pieces, so that no line of this file
matches a secret rule itself.
"""

from __future__ import annotations

import pytest
from bugcontext.core.secrets import find_secrets, redact_text

J = "".join

# AWS's documented example secret access key (40 characters).
AWS_SECRET = J(["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"])
AWS_ID = J(["AKIA", "Q7" * 8])
AWS_EXAMPLE_ID = J(["AKIA", "IOSFODNN7EXAMPLE"])
GH_BODY = J(["aB3dE5fG7hJ9kL1mN3", "pQ5rS7tU9vW1xY3zA5"])  # 36 letters and digits
GITHUB = J(["ghp", "_", GH_BODY])
PW = J(["S3cr3t", "Passw0rd"])


def _r(kind: str) -> str:
    return f"[REDACTED: {kind}]"


AWS = _r("aws-secret-access-key")
CLP = _r("command-line-password")
GENERIC = _r("generic-secret")


def _check(text: str, expected: str) -> None:
    assert redact_text(text) == expected
    assert find_secrets(expected) == []


# --- 1, 2: an AWS secret after its name and blanks, or a hyphenated flag ------------------

AWS_FORMS = [
    "aws configure set aws_secret_access_key {}",
    "export AWS_SECRET_ACCESS_KEY {}",
    "setenv AWS_SECRET_ACCESS_KEY {}\n",
    "--aws-secret-access-key {}",
    "--aws-secret-access-key={}",
    "aws-secret-access-key: {}\n",
    '--secret-access-key "{}"',
    "SecretAccessKey\t{}",
    "aws_secret_access_key%3D{}",
]


@pytest.mark.parametrize("form", AWS_FORMS)
def test_an_aws_secret_after_its_name_is_redacted(form: str) -> None:
    _check(form.format(AWS_SECRET), form.format(AWS))


def test_a_quoted_aws_secret_after_its_name_is_the_installed_rules() -> None:
    # detect-secrets' AWS rule takes a quoted 40-character value after a name holding `aws`.
    _check(
        f"set -x AWS_SECRET_ACCESS_KEY '{AWS_SECRET}'",
        f"set -x AWS_SECRET_ACCESS_KEY '{_r('AWSKeyDetector')}'",
    )


@pytest.mark.parametrize(
    "text",
    [
        "aws configure list",
        "aws configure get aws_secret_access_key",
        "export AWS_SECRET_ACCESS_KEY\n",
        "aws_secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']",
        "--aws-secret-access-key YOUR_SECRET_HERE",
        "aws_secret_access_key " + "x" * 40,
        f"aws_secret_access_key {AWS_SECRET}Q",  # 41 characters
    ],
)
def test_aws_commands_without_a_secret_are_kept(text: str) -> None:
    assert find_secrets(text) == []


# --- 3: an access key id glued to its secret ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # AWS's documented example id is no secret (it ends in EXAMPLE); the secret after it is.
        (f"{AWS_EXAMPLE_ID}:{AWS_SECRET}", f"{AWS_EXAMPLE_ID}:{AWS}"),
        (f"{AWS_ID}:{AWS_SECRET}", f"{_r('AWSKeyDetector')}:{AWS}"),
        (f"alice,,{AWS_ID},{AWS_SECRET}\n", f"alice,,{_r('AWSKeyDetector')},{AWS}\n"),
        (f"{AWS_ID} {AWS_SECRET}", f"{_r('AWSKeyDetector')} {AWS}"),
        (f'"{AWS_ID}": "{AWS_SECRET}"', f'"{_r("AWSKeyDetector")}": "{AWS}"'),
    ],
)
def test_an_aws_secret_glued_to_its_key_id_is_redacted(text: str, expected: str) -> None:
    _check(text, expected)


@pytest.mark.parametrize(
    "text",
    [f"{AWS_EXAMPLE_ID}:" + "a" * 40, f"{AWS_EXAMPLE_ID}:{AWS_SECRET}Q", f"{AWS_EXAMPLE_ID}: see the docs"],
)
def test_an_example_key_id_without_a_secret_is_kept(text: str) -> None:
    assert find_secrets(text) == []


# --- 4: passwords on the command lines of other tools -------------------------------------

CLI_FORMS = [
    "mysql -u root -p{} db",
    "mysql -h db -P 3306 -uroot -p'{}' shop",
    "mysqldump --password={} db",
    "mysql --password {}",
    'mariadb-dump -uadmin -p"{}" --all-databases',
    "sshpass -p '{}' ssh host",
    "sshpass -p{} ssh -p 2222 host",
    "redis-cli -a {}",
    "redis-cli -h cache -p 6379 -a '{}' ping",
    "redis-cli --pass {} ping",
    "docker login -u bob -p {} registry.internal",
    "mongosh -u admin -p {} --authenticationDatabase admin",
    "ldapsearch -D cn=admin -w {} -b dc=corp",
    "openssl pkcs12 -export -passout pass:{} -out k.p12",
    "wget --ftp-password={} ftp://files/x",
    "svn checkout --username bob --password {} svn://repo",
    "htpasswd -b -B .htpasswd bob {}",
    "htpasswd -B -C 12 -b users alice '{}'",
    "htpasswd -n -b bob {}",
    "sqlcmd -S db -U sa -P {} -Q 'select 1'",
    "osql -U sa -P {}",
    "zip -P {} secret.zip notes.txt",
    "7z a -p{} backup.7z data",
]

REPEATED_FORMS = [
    "redis-cli -a {0} -a {0}",
    "redis-cli -h cache -a '{0}' -p 6379 -a{0} -a {0} ping",
    "docker login -u bob -p {0} -p {0} registry.internal",
    "mysql -p{0} -uroot -p'{0}' db",
    "ldapsearch -w {0} -D cn=admin -w {0}",
    "openssl enc -aes-256-cbc -k {0} -k {0} -in a",
]


@pytest.mark.parametrize("form", REPEATED_FORMS)
def test_a_password_option_given_twice_is_redacted_each_time(form: str) -> None:
    _check(form.format(PW), form.format(CLP))


@pytest.mark.parametrize("form", CLI_FORMS)
def test_a_password_on_a_command_line_is_redacted(form: str) -> None:
    _check(form.format(PW), form.format(CLP))


@pytest.mark.parametrize("form", ["PGPASSWORD={} psql -h db", "MYSQL_PWD={} mysql -uroot"])
def test_a_password_in_the_environment_of_a_command_is_redacted(form: str) -> None:
    _check(form.format(PW), form.format(GENERIC))


@pytest.mark.parametrize(
    "text",
    [
        "mysql -p",
        "mysql -u root -p db",  # -p alone asks; `db` is the database
        "mysql -uroot -p$MYSQL_ROOT_PASSWORD db",
        "mysql -uroot -pYOUR_PASSWORD db",
        "mysql -uroot -pxxxx db",
        "mysql -P 3306 -h db",
        "mysql --password",
        "mysql -u root db | grep -pattern",
        "docker run -p 8080:80 nginx",
        "ssh -p 2222 host",
        "nc -l -p 8080",
        "sshpass -f ~/.pw ssh -p 2222 host",
        "sshpass -e ssh -p 2222 host",
        "redis-cli -p 6379 ping",
        "redis-cli -a YOUR_SECRET_HERE",
        "docker login --password-stdin registry.internal",
        "  --password TEXT  The password to use.",
        "  --password PASSWORD",
        "  --password <password>",
        "openssl pkcs12 -passin pass:$PW -in k.p12",
        "pytest -p no:cacheprovider",
        "htpasswd -n -B bob",
        "htpasswd -B -C 10 .htpasswd bob",
        "redis-cli -a $PW; grep -a pattern file",
        "sqlcmd -S db -U sa -P $SA_PASSWORD",
        "7z x -p backup.7z",
        "zip -r archive.zip src",
    ],
)
def test_command_lines_without_a_password_are_kept(text: str) -> None:
    assert find_secrets(text) == []


# --- 5: percent-encoded assignments and tokens --------------------------------------------

NPM = J(["npm", "_", GH_BODY])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"https://x.example/cb?token%3D{GITHUB}",
            f"https://x.example/cb?token%3D{_r('GitHubTokenDetector')}",
        ),
        (f"next=%2Fcb%3Fauth%3d{GITHUB}%26x%3D1", f"next=%2Fcb%3Fauth%3d{_r('GitHubTokenDetector')}%26x%3D1"),
        (f"q=%22{NPM}%22", f"q=%22{_r('npm-token')}%22"),
        (f"id%3D{AWS_ID}%26", f"id%3D{_r('AWSKeyDetector')}%26"),
        (f"password%3D{PW}%26user%3Dbob", f"password%3D{GENERIC}%26user%3Dbob"),
        (f"a%3D1%26PASSWORD%3d{PW}", f"a%3D1%26PASSWORD%3d{GENERIC}"),
        (f"password={PW}&user=bob", f"password={GENERIC}&user=bob"),
        (f"/login?token=abc&password={PW}&next=%2F", f"/login?token=abc&password={GENERIC}&next=%2F"),
    ],
)
def test_a_percent_encoded_secret_is_redacted(text: str, expected: str) -> None:
    _check(text, expected)


@pytest.mark.parametrize(
    "text",
    [
        "redirect_uri%3Dhttps%3A%2F%2Fauth.internal%2Fcb%26token_type%3Dbearer",
        "token_url%3Dhttps%3A%2F%2Fauth.internal%2Fv1",
        "password%3D%24%7BPASSWORD%7D",
        "password%3Dchangeme%26user%3Dbob",
    ],
)
def test_percent_encoded_text_without_a_secret_is_kept(text: str) -> None:
    assert find_secrets(text) == []


# --- 6: vendor tokens glued to more letters -----------------------------------------------


@pytest.mark.parametrize("prefix", ["ghp", "gho", "ghu", "ghs", "ghr"])
def test_a_github_token_glued_to_more_letters_is_redacted_whole(prefix: str) -> None:
    _check(J([prefix, "_", GH_BODY, "abc"]), _r("github-token"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"x={GITHUB}abcdefghijklmnop;", f"x={_r('github-token')};"),
        (f"t: {GITHUB}_extra\n", f"t: {_r('GitHubTokenDetector')}_extra\n"),
        (f"my_{GITHUB}Zz9", f"my_{_r('github-token')}"),
        (GITHUB, _r("GitHubTokenDetector")),
        (f"{NPM}abc", _r("npm-token")),
        (J(["k=AIza", GH_BODY[:35], "xyz"]), f"k={_r('google-api-key')}"),
        (J(["shpat", "_", "a1b2c3d4" * 4, "xyz"]), _r("shopify-token")),
        (J(["shpat", "_", "a1b2c3d4" * 4, "abc"]), _r("shopify-token")),
        (J(["dop", "_v1_", "a1b2c3d4" * 8, "xyz"]), _r("digitalocean-token")),
        (J(["hf", "_", "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH", "AbCdEfGh9"]), _r("huggingface-token")),
    ],
)
def test_a_token_glued_to_more_letters_is_redacted_whole(text: str, expected: str) -> None:
    _check(text, expected)


@pytest.mark.parametrize(
    "text",
    [
        "a personal access token starts with ghp_ and has 36 more characters",
        "ghp_token_prefix_for_personal_access_tokens_v",
        "const ghp_personalAccessTokenPrefixAndTheRestOfIt = 1",
        J(["ghp", "_", GH_BODY[:35]]),
        "hf_" + "a" * 60,
        J(["shpat", "_", "a1b2c3d4" * 4])[:-1] + "xyz",
        # Mailgun's prefix `key-` also starts names of hex digests: 32 digits exactly.
        "key-" + "0123456789abcdef" * 4,
    ],
)
def test_prefixed_words_that_are_not_tokens_are_kept(text: str) -> None:
    assert find_secrets(text) == []


# --- names whose words are joined by dashes -------------------------------------------------

DASHED_KEY = J(["k3Yd8Fq2Lm9", "Xw4Zr7Tb1Nc6"])


@pytest.mark.parametrize(
    "form", ["X-API-KEY={}", "api-key={} region=eu", "--client-key={}", "private-key: {}", "access-key = {}"]
)
def test_an_unquoted_value_of_a_dashed_secret_name_is_redacted(form: str) -> None:
    _check(form.format(DASHED_KEY), form.format(GENERIC))


@pytest.mark.parametrize(
    "text", ["api-key=${API_KEY}", "X-API-KEY=<your key>", "private-key: ~/.ssh/id_ed25519"]
)
def test_a_dashed_secret_name_with_a_placeholder_or_a_path_is_kept(text: str) -> None:
    assert find_secrets(text) == []


# --- tokens glued to letters or digits before them ------------------------------------------

#: The installed rule that finds the same token first (its kind is reported on a tie).
_INSTALLED = {
    "github-token": "GitHubTokenDetector",
    "slack-token": "SlackDetector",
    "npm-token": "NpmDetector",
    "github-fine-grained-token": "GitHubTokenDetector",
}

GLUED_BEFORE = [
    ("test_add[user1{}]", J(["ghp", "_", GH_BODY]), "github-token"),
    ("x{}.", J(["ghp", "_", GH_BODY]), "github-token"),
    ("token{}", J(["gho", "_", GH_BODY]), "github-token"),
    ("key{}", J(["xoxb", "-", "1234567890-", "AbCdEfGhIjKl"]), "slack-token"),
    ("a1{}", J(["npm", "_", GH_BODY]), "npm-token"),
    ("id{}", J(["github", "_pat_", "11AB", "cD3eF5gH7jK9mN1pQ3rS5tU"]), "github-fine-grained-token"),
]


@pytest.mark.parametrize(("form", "token", "kind"), GLUED_BEFORE)
def test_a_token_with_a_distinctive_prefix_glued_to_letters_before_it_is_redacted(
    form: str, token: str, kind: str
) -> None:
    head, tail = form.split("{}")
    done = redact_text(form.format(token))
    assert done.startswith(head + "[REDACTED: ") and done.endswith("]" + tail) and token not in done
    assert [s.kind for s in find_secrets(form.format(token))] in ([kind], [_INSTALLED[kind]])
    assert find_secrets(done) == []
