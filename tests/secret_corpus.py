"""A corpus of realistic secrets, one or more per rule family of the detector, in the forms
people write them (assignments, URLs, headers, command lines, configuration files, base64
blobs), and the false-positive corpus (real source code).

No secret is stored here: each is assembled at test time from its vendor's documented token
format (prefix, alphabet, length; the documentation each follows is named by the family) with
a seeded random body, so that secret scanners do not flag this file, and nothing is derived
from the detector's own expressions. ``python -m tests.secret_corpus`` (from the repository
root) prints the recall and false-positive table of ``docs/secrets.md``.
"""

from __future__ import annotations

import base64
import json
import random
import string
import sys
import sysconfig
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

_RNG = random.Random(20261201)
LOWER = string.ascii_lowercase
UPPER = string.ascii_uppercase
DIGITS = string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
BASE32 = UPPER + "234567"


def rand(alphabet: str, n: int) -> str:
    """``n`` characters drawn from ``alphabet`` (the corpus's seeded generator)."""
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def b64(data: bytes, url: bool = False) -> str:
    text = (base64.urlsafe_b64encode if url else base64.b64encode)(data).decode()
    return text.rstrip("=") if url else text


def _dash(n: int = 5) -> str:
    return "-" * n


def pem(kind: str, lines: int = 6) -> str:
    """A PEM block (RFC 7468) of ``kind`` (``RSA PRIVATE KEY``, ``PRIVATE KEY``, ...)."""
    body = "\n".join(rand(B64, 64) for _ in range(lines))
    return f"{_dash()}BEGIN {kind}{_dash()}\n{body}\n{rand(B64, 20)}==\n{_dash()}END {kind}{_dash()}"


def jwt_token() -> str:
    """A JSON Web Token (RFC 7519): base64url header, payload and a 32-byte signature."""
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode(), url=True)
    payload = b64(json.dumps({"sub": rand(DIGITS, 10), "name": "Ana", "iat": 1700000000}).encode(), url=True)
    return f"{header}.{payload}.{b64(_RNG.randbytes(32), url=True)}"


@dataclass(frozen=True)
class Example:
    """One secret in context: ``text`` holds ``secret``, written for ``family`` in ``form``."""

    id: str
    family: str
    form: str
    text: str
    secret: str


# family -> (form, template with {s}, generator of the secret); the documentation followed:
_SPECS: list[tuple[str, str, str, Callable[[], str]]] = []


def spec(family: str, form: str, template: str, make: Callable[[], str]) -> None:
    _SPECS.append((family, form, template, make))


# AWS: access key ids are "AKIA"/"ASIA" + 16 base32 characters; secret keys 40 base64
# characters (AWS IAM user guide, "Managing access keys").
for form, template in [
    ("assignment", 'AWS_ACCESS_KEY_ID = "{s}"'),
    ("env", "export AWS_ACCESS_KEY_ID={s}"),
    ("ini", "[default]\naws_access_key_id = {s}"),
    ("json", '{{"AccessKeyId": "{s}", "Expiration": "2026-01-01"}}'),
]:
    spec("AWSKeyDetector", form, template, lambda: "AKIA" + rand(BASE32, 16))
spec("AWSKeyDetector", "sts", 'creds = {{"aws_access_key_id": "{s}"}}', lambda: "ASIA" + rand(BASE32, 16))
for form, template in [
    ("ini", "[default]\naws_secret_access_key = {s}"),
    ("env", "AWS_SECRET_ACCESS_KEY={s}"),
    ("yaml", "aws_secret_access_key: {s}"),
]:
    spec("aws-secret-access-key", form, template, lambda: rand(B64, 40))

# JFrog Artifactory: API keys "AKCp" + 69 alphanumerics; encrypted passwords "AP" + 57.
for form, template in [
    ("header", "X-JFrog-Art-Api: {s}"),
    ("assignment", 'ARTIFACTORY_API_KEY = "{s}"'),
    ("yaml", "artifactory_apikey: {s}"),
]:
    spec("ArtifactoryDetector", form, template, lambda: "AKCp" + rand(DIGITS, 1) + rand(ALNUM, 68))
spec(
    "ArtifactoryDetector",
    "ini",
    "password = {s}",
    lambda: "AP" + rand("ABCDEF" + DIGITS, 1) + rand(ALNUM, 56),
)

# Azure storage: account keys are 64 random bytes in base64 (88 characters), in connection
# strings (Azure Storage docs, "Configure a connection string").
for form, template in [
    (
        "connection string",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    ("env", 'AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s}"'),
    ("json", '{{"ConnectionStrings": {{"Storage": "AccountName=a;AccountKey={s}"}}}}'),
]:
    spec("AzureStorageKeyDetector", form, template, lambda: b64(_RNG.randbytes(64)))
spec(
    "azure-storage-key",
    "service bus",
    "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={s}",
    lambda: b64(_RNG.randbytes(32)),
)
spec(
    "azure-storage-key",
    "python",
    'conn = "AccountName=acme;AccountKey={s}"',
    lambda: b64(_RNG.randbytes(64))[:86],
)
# Azure SAS tokens: a signature "sig=" of an HMAC-SHA256, base64 and URL-escaped.
for form, template in [
    ("url", "https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31&sig={s}"),
    ("env", 'AZURE_SAS="?sv=2022-11-02&sr=c&sp=rl&sig={s}"'),
    (
        "connection string",
        "BlobEndpoint=https://a.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&sig={s}",
    ),
]:
    spec(
        "azure-sas-signature",
        form,
        template,
        lambda: b64(_RNG.randbytes(32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
    )

spec(
    "azure-storage-key",
    "event hubs",
    "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={s};EntityPath=hub",
    lambda: b64(_RNG.randbytes(32)),
)

# URL credentials (RFC 3986 userinfo).
for form, template in [
    ("database url", 'DATABASE_URL = "postgres://app:{s}@db.internal:5432/app"'),
    ("broker url", "CELERY_BROKER_URL=amqp://worker:{s}@rabbit:5672//"),
    ("yaml", "url: mongodb://admin:{s}@mongo-0.mongo:27017/admin"),
]:
    spec("BasicAuthDetector", form, template, lambda: rand(ALNUM, 14))
for form, template in [
    ("password-only url", 'REDIS_URL = "redis://:{s}@cache:6379/0"'),
    ("short password", "redis://:{s}@host"),
    ("symbols", 'DSN = "mysql://root:{s}@10.0.0.5/shop"'),
]:
    spec(
        "url-password",
        form,
        template,
        lambda t=template: (
            (rand(ALNUM, 3) + "!" + rand(ALNUM, 4)) if "{s}@host" in t else rand(ALNUM, 10) + "%21"
        ),
    )

# IBM Cloudant: passwords are 64 hex characters, API keys 24 lower-case letters.
spec("CloudantDetector", "url", "https://acme-bluemix:{s}@acme-bluemix.cloudant.com", lambda: rand(HEX, 64))
spec("CloudantDetector", "assignment", 'cloudant_password = "{s}"', lambda: rand(HEX, 64))
spec("CloudantDetector", "api key", "cl_api_key: '{s}'", lambda: rand(LOWER, 24))


# Discord bot tokens: base64 of the bot's user id, ".", 6 characters, ".", 27 characters
# (Discord developer docs, "Authentication").
def discord() -> str:
    user = str(_RNG.randrange(10**17, 10**18))
    return f"{b64(user.encode(), url=True)}.{rand(B64URL, 6)}.{rand(B64URL, 27)}"


for form, template in [
    ("assignment", 'DISCORD_TOKEN = "{s}"'),
    ("call", "client.run('{s}')"),
    ("header", "Authorization: Bot {s}"),
]:
    spec("DiscordBotTokenDetector", form, template, discord)

# GitHub: "ghp_"/"gho_"/"ghu_"/"ghs_"/"ghr_" + 36 base62 characters; fine-grained tokens
# "github_pat_" + 22 + "_" + 59 (GitHub docs, "About authentication to GitHub").
for prefix, form, template in [
    ("ghp_", "env", "GITHUB_TOKEN={s}"),
    ("gho_", "header", "Authorization: token {s}"),
    ("ghu_", "url", "https://x-access-token:{s}@github.com/acme/app.git"),
    ("ghs_", "yaml", "token: {s}"),
    ("ghr_", "json", '{{"refresh_token": "{s}"}}'),
]:
    spec("GitHubTokenDetector", form, template, lambda p=prefix: p + rand(ALNUM, 36))
for form, template in [
    ("env", "GH_TOKEN={s}"),
    ("command line", "gh auth login --with-token <<< {s}"),
    ("assignment", 'token = "{s}"'),
]:
    spec(
        "github-fine-grained-token",
        form,
        template,
        lambda: "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59),
    )

# GitLab: "glpat-" + 20 characters (personal), "gldt-" (deploy), "glrt-" (runner),
# "glptt-" + 40 (pipeline trigger), "GR1348941" + 20 (runner registration).
for prefix, n, form, template in [
    ("glpat-", 20, "env", "GITLAB_TOKEN={s}"),
    ("glpat-", 20, "header", "PRIVATE-TOKEN: {s}"),
    ("gldt-", 20, "url", "https://gitlab+deploy-token-1:{s}@gitlab.com/acme/app.git"),
    ("glrt-", 20, "toml", 'token = "{s}"'),
    (
        "glptt-",
        40,
        "curl",
        "curl -X POST -F token={s} -F ref=main https://gitlab.com/api/v4/projects/1/trigger/pipeline",
    ),
    ("GR1348941", 20, "command line", "gitlab-runner register --registration-token {s}"),
]:
    spec(
        "GitLabTokenDetector",
        form,
        template,
        lambda p=prefix, k=n: p + rand(ALNUM + "_-", k - 1) + rand(ALNUM, 1),
    )

# IBM Cloud IAM API keys: 44 characters of [A-Za-z0-9_-].
for form, template in [
    ("assignment", 'ibm_cloud_iam_api_key = "{s}"'),
    ("yaml", "iam_api_key: {s}"),
    ("env", "IBM_CLOUD_API_KEY={s}"),
]:
    spec("IbmCloudIamDetector", form, template, lambda: rand(ALNUM + "_-", 43) + rand(ALNUM, 1))
# IBM Cloud Object Storage HMAC: a 48-hex-character secret access key.
for form, template in [
    ("assignment", 'cos_hmac_secret_access_key = "{s}"'),
    ("json", '{{"cos_hmac_keys": {{"secret_access_key": "{s}"}}}}'),
    ("ini", "ibm_cos_secret_access_key = {s}"),
]:
    spec("IbmCosHmacDetector", form, template, lambda: rand(HEX, 48))

# JSON Web Tokens.
for form, template in [
    ("header", "Authorization: Bearer {s}"),
    ("assignment", 'ACCESS_TOKEN = "{s}"'),
    ("cookie", "Cookie: session={s}; Path=/"),
    ("json", '{{"id_token": "{s}"}}'),
]:
    spec("JwtTokenDetector", form, template, jwt_token)

# Mailchimp API keys: 32 hex characters, "-us" and the data-center number.
for form, template in [
    ("assignment", 'MAILCHIMP_API_KEY = "{s}"'),
    ("env", "MAILCHIMP_KEY={s}"),
    ("curl", "curl --user anystring:{s} https://us6.api.mailchimp.com/3.0/"),
]:
    spec("MailchimpDetector", form, template, lambda: rand(HEX, 32) + "-us" + str(_RNG.randrange(1, 21)))

# Mailgun: private API keys "key-" + 32 hex; public validation keys "pubkey-" + 32 hex.
for prefix, form, template in [
    ("key-", "assignment", 'MAILGUN_API_KEY = "{s}"'),
    ("key-", "curl", "curl -s --user 'api:{s}' https://api.mailgun.net/v3/mg.acme.io/messages"),
    ("key-", "yaml", "mailgun:\n  api_key: {s}"),
    ("pubkey-", "env", "MAILGUN_PUBLIC_KEY={s}"),
]:
    spec("mailgun-key", form, template, lambda p=prefix: p + rand(HEX, 32))

# npm: "npm_" + 36 base62 characters (npm docs, "About access tokens"); legacy UUID tokens.
for form, template in [
    (".npmrc", "//registry.npmjs.org/:_authToken={s}"),
    (".npmrc private registry", "//npm.acme.io/repository/npm/:_authToken={s}"),
]:
    spec("NpmDetector", form, template, lambda: "npm_" + rand(ALNUM, 36))
spec(
    "NpmDetector",
    ".npmrc uuid",
    "//registry.npmjs.org/:_authToken={s}",
    lambda: f"{rand(HEX, 8)}-{rand(HEX, 4)}-{rand(HEX, 4)}-{rand(HEX, 4)}-{rand(HEX, 12)}",
)
for form, template in [
    ("env", "NPM_TOKEN={s}"),
    ("yaml", "npm_token: {s}"),
    ("command line", "npm config set //registry.npmjs.org/:_authToken {s}"),
]:
    spec("npm-token", form, template, lambda: "npm_" + rand(ALNUM, 36))

# OpenAI: legacy keys "sk-" + 20 + "T3BlbkFJ" + 20; project keys "sk-proj-" + 156.
for form, template in [
    ("assignment", 'openai.api_key = "{s}"'),
    ("env", "OPENAI_API_KEY={s}"),
    ("call", "client = OpenAI(api_key='{s}')"),
]:
    spec("OpenAIDetector", form, template, lambda: "sk-" + rand(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20))
for form, template in [
    ("env", "OPENAI_API_KEY={s}"),
    ("header", "Authorization: Bearer {s}"),
    ("json", '{{"openai": {{"key": "{s}"}}}}'),
]:
    spec("openai-key", form, template, lambda: "sk-proj-" + rand(ALNUM + "_-", 155) + rand(ALNUM, 1))

# Anthropic: "sk-ant-api03-" + 93 characters + "AA".
for form, template in [
    ("env", "ANTHROPIC_API_KEY={s}"),
    ("call", 'anthropic.Anthropic(api_key="{s}")'),
    ("header", "x-api-key: {s}"),
]:
    spec("anthropic-key", form, template, lambda: "sk-ant-api03-" + rand(ALNUM + "_-", 93) + "AA")

# Private keys (RFC 7468 PEM blocks, OpenSSH, PGP, PuTTY).
for kind, form, template in [
    ("RSA PRIVATE KEY", "python string", 'KEY = """{s}"""'),
    ("PRIVATE KEY", "yaml block", "tls:\n  key: |\n    {s}"),
    ("EC PRIVATE KEY", "json", '{{"key": "{s}"}}'),
    ("OPENSSH PRIVATE KEY", "heredoc", "cat > ~/.ssh/id <<EOF\n{s}\nEOF"),
    ("DSA PRIVATE KEY", "terraform", "private_key = <<-EOT\n{s}\nEOT"),
    ("PGP PRIVATE KEY BLOCK", "ci variable", "GPG_KEY: |\n{s}"),
]:
    maker = (lambda k=kind: pem(k).replace("\n", "\\n")) if form == "json" else (lambda k=kind: pem(k))
    spec("PrivateKeyDetector", form, template, maker)
for form, template in [
    ("env", 'SSH_KEY_B64="{s}"'),
    ("yaml", "data:\n  tls.key: {s}"),
    ("assignment", "key_b64 = '{s}'"),
]:
    spec("base64-private-key", form, template, lambda: b64(pem("RSA PRIVATE KEY").encode()))

# PyPI: "pypi-AgEIcHlwaS5vcmc" (a macaroon for pypi.org) + base64url.
for form, template in [
    (".pypirc", "[pypi]\nusername = __token__\npassword = {s}"),
    ("env", "TWINE_PASSWORD={s}"),
    ("command line", "twine upload -u __token__ -p {s} dist/*"),
]:
    spec("PypiTokenDetector", form, template, lambda: "pypi-AgEIcHlwaS5vcmc" + rand(B64URL, 150))
spec("pypi-token", "testpypi", "password = {s}", lambda: "pypi-AgENdGVzdC5weXBpLm9yZw" + rand(B64URL, 60))
spec("pypi-token", "short macaroon", "TWINE_PASSWORD={s}", lambda: "pypi-AgEIcHlwaS5vcmc" + rand(B64URL, 55))
spec(
    "pypi-token", "github actions", "password: {s}", lambda: "pypi-AgENdGVzdC5weXBpLm9yZw" + rand(B64URL, 120)
)

# SendGrid: "SG." + 22 + "." + 43 base64url characters.
for form, template in [
    ("env", "SENDGRID_API_KEY={s}"),
    ("assignment", "sg = SendGridAPIClient('{s}')"),
    ("header", "Authorization: Bearer {s}"),
]:
    spec("SendGridDetector", form, template, lambda: "SG." + rand(B64URL, 22) + "." + rand(B64URL, 43))

# Slack: bot tokens "xoxb-" + team id + "-" + bot id + "-" + 24; user tokens "xoxp-" ...;
# webhooks https://hooks.slack.com/services/T.../B.../24.
for form, template in [
    ("env", "SLACK_BOT_TOKEN={s}"),
    ("assignment", 'client = WebClient(token="{s}")'),
]:
    spec(
        "SlackDetector",
        form,
        template,
        lambda: f"xoxb-{rand(DIGITS, 12)}-{rand(DIGITS, 13)}-{rand(LOWER + DIGITS, 24)}",
    )
spec(
    "SlackDetector",
    "yaml",
    "slack_token: {s}",
    lambda: f"xoxp-{rand(DIGITS, 12)}-{rand(DIGITS, 12)}-{rand(DIGITS, 13)}-{rand(HEX, 32)}",
)
# (the secret is the URL's path: "https://" is not redacted by every rule)
spec(
    "SlackDetector",
    "webhook",
    'WEBHOOK = "https://{s}"',
    lambda: (
        f"hooks.slack.com/services/T{rand(UPPER + DIGITS, 8)}/B{rand(UPPER + DIGITS, 10)}/{rand(ALNUM, 24)}"
    ),
)
for form, template in [
    ("app token", "SLACK_APP_TOKEN={s}"),
    ("refresh token", 'refresh = "{s}"'),
]:
    prefix = "xapp-1-" if form == "app token" else "xoxe-1-"
    spec(
        "slack-token",
        form,
        template,
        lambda p=prefix: p + rand(UPPER + DIGITS, 11) + "-" + rand(DIGITS, 13) + "-" + rand(HEX, 64),
    )
spec(
    "slack-webhook",
    "workflow webhook",
    "curl -X POST https://{s}",
    lambda: (
        f"hooks.slack.com/workflows/T{rand(UPPER + DIGITS, 8)}/A{rand(UPPER + DIGITS, 10)}"
        f"/{rand(DIGITS, 18)}/{rand(ALNUM, 24)}"
    ),
)

spec(
    "slack-webhook",
    "services webhook in yaml",
    "slack:\n  webhook_url: https://{s}",
    lambda: (
        f"hooks.slack.com/services/T{rand(UPPER + DIGITS, 8)}/B{rand(UPPER + DIGITS, 10)}/{rand(ALNUM, 24)}"
    ),
)
spec(
    "slack-webhook",
    "trigger webhook",
    'requests.post("https://{s}", json=payload)',
    lambda: f"hooks.slack.com/triggers/T{rand(UPPER + DIGITS, 8)}/{rand(DIGITS, 13)}/{rand(HEX, 32)}",
)
spec(
    "slack-token",
    "user token in json",
    '{{"slack": {{"token": "{s}"}}}}',
    lambda: "xoxe.xoxp-1-" + rand(ALNUM, 140),
)

# SoftLayer: API keys are 64 lower-case hex characters.
spec("SoftlayerDetector", "assignment", 'softlayer_api_key = "{s}"', lambda: rand(HEX, 64))
spec("SoftlayerDetector", "url", "https://api.softlayer.com/soap/v3/{s}", lambda: rand(HEX, 64))
spec("SoftlayerDetector", "yaml", "sl_api_key: {s}", lambda: rand(HEX, 64))

# Square: OAuth application secrets "sq0csp-" + 43 base64url characters.
for form, template in [
    ("env", "SQUARE_APPLICATION_SECRET={s}"),
    ("assignment", 'square_secret = "{s}"'),
    ("json", '{{"client_secret": "{s}"}}'),
]:
    spec("SquareOAuthDetector", form, template, lambda: "sq0csp-" + rand(B64URL, 43))

# Stripe: secret keys "sk_live_" + 24 (or 99) alphanumerics, restricted "rk_live_"; test keys.
for prefix, n, form, template in [
    ("sk_live_", 24, "assignment", 'stripe.api_key = "{s}"'),
    ("sk_live_", 99, "env", "STRIPE_SECRET_KEY={s}"),
    ("rk_live_", 24, "curl", "curl https://api.stripe.com/v1/charges -u {s}:"),
]:
    spec("StripeDetector", form, template, lambda p=prefix, k=n: p + rand(ALNUM, k))
spec("stripe-key", "test key", "STRIPE_KEY={s}", lambda: "sk_test_" + rand(ALNUM, 99))
spec("stripe-key", "yaml", "stripe_secret: {s}", lambda: "sk_test_" + rand(ALNUM, 24))
spec("stripe-key", "restricted test key", "stripe.api_key = '{s}'", lambda: "rk_test_" + rand(ALNUM, 99))

# Telegram: bot tokens are the bot id, ":", and 35 characters (Bot API docs, "Authorizing
# your bot").
for form, template in [
    ("env", "TELEGRAM_BOT_TOKEN={s}"),
    ("url", "https://api.telegram.org/bot{s}/getMe"),
    ("assignment", "bot = telebot.TeleBot('{s}')"),
]:
    spec(
        "TelegramBotTokenDetector",
        form,
        template,
        lambda: str(_RNG.randrange(10**8, 10**10)) + ":AA" + rand(B64URL, 33),
    )

# Twilio: API key SIDs "SK" + 32 hex, account SIDs "AC" + 32 hex.
for prefix, form, template in [
    ("SK", "env", "TWILIO_API_KEY={s}"),
    ("SK", "assignment", 'api_key = "{s}"'),
    ("AC", "call", "client = Client('{s}', auth_token)"),
]:
    spec("TwilioKeyDetector", form, template, lambda p=prefix: p + rand(HEX, 32))

# Google API keys: "AIza" + 35 characters.
for form, template in [
    ("url", "https://maps.googleapis.com/maps/api/js?key={s}&callback=init"),
    ("assignment", 'GOOGLE_API_KEY = "{s}"'),
    ("json", '{{"api_key": "{s}"}}'),
]:
    spec("google-api-key", form, template, lambda: "AIza" + rand(ALNUM + "_-", 34) + rand(ALNUM, 1))

# Hugging Face: "hf_" + 34 letters.
for form, template in [
    ("env", "HF_TOKEN={s}"),
    ("call", 'login(token="{s}")'),
    ("header", "Authorization: Bearer {s}"),
]:
    spec("huggingface-token", form, template, lambda: "hf_" + rand(LOWER + UPPER, 34))

# Shopify: "shpat_"/"shpca_"/"shppa_"/"shpss_" + 32 hex characters.
for prefix, form, template in [
    ("shpat_", "header", "X-Shopify-Access-Token: {s}"),
    ("shpca_", "env", "SHOPIFY_TOKEN={s}"),
    ("shppa_", "assignment", 'session = shopify.Session(shop, "2024-01", "{s}")'),
    ("shpss_", "yaml", "shopify_shared_secret: {s}"),
]:
    spec("shopify-token", form, template, lambda p=prefix: p + rand(HEX, 32))

# DigitalOcean: "dop_v1_" (personal), "doo_v1_" (OAuth), "dor_v1_" (refresh) + 64 hex.
for prefix, form, template in [
    ("dop_v1_", "env", "DIGITALOCEAN_TOKEN={s}"),
    ("dop_v1_", "command line", "doctl auth init -t {s}"),
    ("doo_v1_", "header", "Authorization: Bearer {s}"),
    ("dor_v1_", "json", '{{"refresh_token": "{s}"}}'),
]:
    spec("digitalocean-token", form, template, lambda p=prefix: p + rand(HEX, 64))

# HashiCorp Vault: service tokens "hvs." + base62 (about 90), batch tokens "hvb." + about 138.
for prefix, n, form, template in [
    ("hvs.", 91, "env", "VAULT_TOKEN={s}"),
    ("hvs.", 91, "header", "X-Vault-Token: {s}"),
    ("hvb.", 138, "command line", "vault login {s}"),
    ("hvs.", 24, "assignment", 'client = hvac.Client(url=url, token="{s}")'),
]:
    spec("vault-token", form, template, lambda p=prefix, k=n: p + rand(ALNUM, k))


# Credentials in code.
def basic(user: str, password: str) -> str:
    return b64(f"{user}:{password}".encode())


for form, template in [
    ("http header", "Authorization: Basic {s}"),
    ("curl header", "curl -H 'Authorization: Basic {s}' https://api.internal/v1/"),
    ("python dict", 'headers = {{"Authorization": "Basic {s}"}}'),
    ("nginx", 'proxy_set_header Authorization "Basic {s}";'),
]:
    spec("basic-auth-header", form, template, lambda: basic("deploy", rand(ALNUM, 12)))
for form, template in [
    ("http header", "Authorization: Bearer {s}"),
    ("python dict", 'headers = {{"Authorization": "Bearer {s}"}}'),
    ("curl", 'curl -H "Authorization: Bearer {s}" https://api.internal/v1/me'),
]:
    spec("bearer-token", form, template, lambda: rand(ALNUM, 30) + rand(DIGITS, 2))
for form, template in [
    ("curl -u", "curl -u admin:{s} https://ci.internal/api/json"),
    ("curl --user", "curl --user 'deploy:{s}' -X POST https://registry.internal/v2/"),
    ("wget", "wget --user=ops --password={s} https://files.internal/backup.tgz"),
]:
    spec("command-line-password", form, template, lambda: rand(ALNUM, 8) + rand(DIGITS, 2))
for form, template in [
    ("requests auth tuple", "requests.get(url, auth=('svc-report', '{s}'))"),
    ("HTTPBasicAuth", "auth = HTTPBasicAuth('admin', '{s}')"),
    ("aiohttp BasicAuth", "session = aiohttp.ClientSession(auth=aiohttp.BasicAuth('bot', '{s}'))"),
]:
    spec("auth-tuple", form, template, lambda: rand(ALNUM, 9) + rand(DIGITS, 2))

# Generic assignments: passwords (short, all-letter, holding a placeholder word), secrets.
spec("generic-password", "short", 'password = "{s}"', lambda: "hunter" + rand(DIGITS, 1))
spec("generic-password", "all letters", "DB_PASSWORD = '{s}'", lambda: rand(LOWER, 14))
spec(
    "generic-password", "placeholder word inside", 'password = "{s}"', lambda: "mytestvalue" + rand(ALNUM, 6)
)
spec("generic-password", "yaml quoted", 'db:\n  password: "{s}"', lambda: rand(ALNUM, 10))
spec("generic-password", "json", '{{"password": "{s}"}}', lambda: rand(ALNUM, 8) + "#" + rand(DIGITS, 2))
spec(
    "generic-password",
    "keyword argument",
    'connect(host, user="app", passwd="{s}")',
    lambda: rand(LOWER, 5) + rand(DIGITS, 3),
)
spec(
    "generic-secret",
    "django",
    "SECRET_KEY = '{s}'",
    lambda: "django-insecure-" + rand(LOWER + DIGITS + "!@#$%^&*(-_=+)", 50),
)
spec("generic-secret", "flask", 'app.secret_key = "{s}"', lambda: rand(ALNUM, 32))
spec("generic-secret", "ini", "[auth]\nclient_secret = {s}", lambda: rand(ALNUM, 24) + rand(DIGITS, 2))
spec("generic-secret", "env", "DB_PASSWORD={s}", lambda: rand(LOWER, 6) + rand(DIGITS, 3))
spec("generic-secret", "yaml", "api_key: {s}", lambda: rand(HEX, 32))
spec("generic-secret", "toml", 'token = "{s}"', lambda: rand(ALNUM, 40))
spec("generic-secret", "go", 'const apiKey = "{s}"', lambda: rand(ALNUM, 28) + rand(DIGITS, 2))
spec(
    "generic-secret",
    "javascript",
    "const config = {{ clientSecret: '{s}' }};",
    lambda: rand(ALNUM, 30) + rand(DIGITS, 2),
)

# Forms beyond `name = value` (last, so that the examples above keep their draws): a GitHub
# token glued to more letters or after a percent escape, an AWS secret after its name and
# blanks or after its key id, other clients' password options.
for form, template, make in [
    (
        "glued to letters",
        "url = 'https://ci.internal/hook?t={s}'",
        lambda: "ghp_" + rand(ALNUM, 36) + rand(LOWER, 3),
    ),
    ("percent-encoded", "https://ci.internal/cb?state%3D{s}%26x%3D1", lambda: "gho_" + rand(ALNUM, 40)),
    ("json", '{{"t":"{s}"}}', lambda: "ghu_" + rand(ALNUM, 44)),
]:
    spec("github-token", form, template, make)
for form, template in [
    ("aws configure set", "aws configure set aws_secret_access_key {s}"),
    ("cli flag", "aws s3 ls --aws-secret-access-key {s}"),
    ("after its key id", "AKIAIOSFODNN7EXAMPLE:{s}"),
]:
    spec("aws-secret-access-key", form, template, lambda: rand(B64, 40))
for form, template in [
    ("mysql", "mysql -h db.internal -u app -p{s} shop"),
    ("sshpass", "sshpass -p '{s}' ssh deploy@host.internal"),
    ("redis-cli", "redis-cli -h cache.internal -a {s} ping"),
]:
    spec("command-line-password", form, template, lambda: rand(ALNUM, 8) + rand(DIGITS, 2))
# The keystore tools, htpasswd, OpenSSL's -k and an API key header (after the others, so that
# they keep their draws).
for form, template in [
    ("keytool", "keytool -list -keystore release.jks -storepass {s}"),
    ("htpasswd", "htpasswd -bB /etc/nginx/.htpasswd ops '{s}'"),
    ("openssl -k", "openssl enc -aes-256-cbc -salt -k {s} -in backup.tar -out backup.enc"),
]:
    spec("command-line-password", form, template, lambda: rand(ALNUM, 8) + rand(DIGITS, 2))
for form, template in [
    ("curl header", "curl -H 'X-Api-Key: {s}' https://api.internal/v1/items"),
    ("http header", "X-Auth-Token: {s}"),
    ("python dict", 'headers = {{"x-api-key": "{s}"}}'),
]:
    spec("api-key-header", form, template, lambda: rand(ALNUM, 30) + rand(DIGITS, 2))


def secrets() -> list[Example]:
    """The corpus: every example, assembled (the same on every call: the generator is reset)."""
    _RNG.seed(20261201)
    out: list[Example] = []
    counts: dict[str, int] = {}
    for family, form, template, make in _SPECS:
        secret = make()
        counts[family] = counts.get(family, 0) + 1
        out.append(
            Example(f"{family}#{counts[family]}", family, form, template.format(s=secret) + "\n", secret)
        )
    return out


# --- the false-positive corpus ------------------------------------------------------------

#: Real projects in the environment whose Python files make the false-positive corpus with
#: the standard library (pure-Python packages of the test environment) and tests/data.
PROJECTS = (
    "click",
    "attr",
    "h11",
    "idna",
    "dateutil",
    "defusedxml",
    "filelock",
    "iniconfig",
    "markdown_it",
    "anyio",
)


def stdlib_files() -> Iterator[Path]:
    """Every ``.py`` file of the running interpreter's standard library (site-packages left out)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(root.rglob("*.py")):
        if "site-packages" not in path.parts and "dist-packages" not in path.parts:
            yield path


def project_files() -> Iterator[tuple[str, Path]]:
    """``(project, path)`` of every ``.py`` file of :data:`PROJECTS` (those installed) and of
    every text file under ``tests/data``."""
    import importlib.util

    for name in PROJECTS:
        found = importlib.util.find_spec(name)
        if found is None or not found.submodule_search_locations:
            continue
        for folder in found.submodule_search_locations:
            for path in sorted(Path(folder).rglob("*.py")):
                yield name, path
    data = Path(__file__).parent / "data"
    for path in sorted(data.rglob("*")):
        if path.is_file() and path.suffix in {
            ".py",
            ".txt",
            ".cfg",
            ".toml",
            ".ini",
            ".yaml",
            ".yml",
            ".json",
            ".md",
        }:
            yield "tests/data", path


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="surrogateescape")


def caught(example: Example, found: list[tuple[int, int, str]]) -> str | None:
    """The kind of the finding that covers ``example.secret`` in its text, or ``None`` if no
    finding (or union of adjacent ones) covers it whole."""
    start = example.text.index(example.secret)
    end = start + len(example.secret)
    at, kinds = start, []
    for s, e, kind in found:
        if s <= at < e:
            kinds.append(kind)
            at = e
    return kinds[0] if at >= end else None


def main() -> None:
    """Print the Markdown tables of docs/secrets.md: recall and false positives per family."""
    from bugcontext.core.secrets import KINDS, RULE_SET, find_secrets

    corpus = secrets()
    by_family: dict[str, list[Example]] = {}
    for ex in corpus:
        by_family.setdefault(ex.family, []).append(ex)
    misses = []
    fp_std: dict[str, int] = {}
    fp_proj: dict[str, int] = {}
    std_files = proj_files = 0
    for path in stdlib_files():
        std_files += 1
        for s in find_secrets(read(path)):
            fp_std[s.kind] = fp_std.get(s.kind, 0) + 1
    for _, path in project_files():
        proj_files += 1
        for s in find_secrets(read(path)):
            fp_proj[s.kind] = fp_proj.get(s.kind, 0) + 1
    print(f"Rule set: {RULE_SET} and the built-in rules; Python {sys.version.split()[0]}.\n")
    print(
        f"Corpus: {len(corpus)} secrets; false-positive corpus: {std_files} standard library files, "
        f"{proj_files} project files.\n"
    )
    print("| family | secrets | caught | recall | false positives (stdlib) | false positives (projects) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    total = hit = 0
    for kind in KINDS:
        examples = by_family.get(kind, [])
        got = 0
        for ex in examples:
            found = [(s.start, s.end, s.kind) for s in find_secrets(ex.text)]
            if caught(ex, found) is not None:
                got += 1
            else:
                misses.append(ex.id)
        total += len(examples)
        hit += got
        recall = f"{100 * got / len(examples):.0f}%" if examples else "-"
        fps = f"{fp_std.get(kind, 0)} | {fp_proj.get(kind, 0)}"
        print(f"| {kind} | {len(examples)} | {got} | {recall} | {fps} |")
    fps = f"{sum(fp_std.values())} | {sum(fp_proj.values())}"
    print(f"| **all** | {total} | {hit} | {100 * hit / total:.1f}% | {fps} |")
    print(f"\nMissed: {', '.join(misses) or 'none'}")


if __name__ == "__main__":
    main()
