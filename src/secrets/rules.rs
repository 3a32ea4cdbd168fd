//! The built-in rules: the formats the installed rule set lacks, each an expression and its
//! check.

use super::Builtin;
use super::checks::{
    anthropic, aws_secret, azure_key, base64_pem, basic_header, bearer, digitalocean, github_pat,
    google, huggingface, mailgun, npm, openai, password_arg, pypi, sas_signature, shopify, slack,
    slack_webhook, stripe, vault,
};
use super::values::{quoted_password, quoted_secret, unquoted_secret, url_password_hit};

/// The keyword names of the generic assignment rules (case-insensitive, anywhere in a name):
/// detect-secrets' `KeywordDetector` list (checked by the Python tests) and `token`,
/// `access_key`, `credential`, `passphrase`.
macro_rules! password_names {
    () => {
        r"password|passwd|pwd|passphrase|contrase(?:ñ|n)a|db_?pass|database_?pass|key_?pass"
    };
}

macro_rules! secret_names {
    () => {
        r"api_?key|auth_?key|service_?key|account_?key|db_?key|database_?key|priv_?key|private_?key|client_?key|secret|token|access_?key|credential"
    };
}

/// What may follow a keyword before the operator: more of the name, a closing quote or
/// bracket of a key (`"password":`, `["password"] =`), blanks.
macro_rules! assign {
    () => {
        r#"[0-9A-Za-z_.-]*["'\]]{0,2}[ \t]*(?::=|=>|===|==|!=|=|:)[ \t]*"#
    };
}

/// The built-in rules, in order after the installed ones (an overlap keeps the kind of the
/// finding that starts first, or of the earlier rule on a tie).
///
/// `\b{start-half}` asserts that the byte before is not a word byte (`[0-9A-Za-z_]`), so that
/// a token is not the tail of a longer word; lengths are checked in code, which keeps the
/// automata small.
pub(crate) const BUILTINS: &[Builtin] = &[
    Builtin {
        kind: "base64-private-key",
        pattern: r"LS0tLS1CRUdJTi[A-Za-z0-9+/]+={0,2}(?:\r?\n[ \t]*[A-Za-z0-9+/]{40,}={0,2})*",
        check: base64_pem,
    },
    Builtin {
        kind: "aws-secret-access-key",
        pattern: r#"(?i:aws_?secret_?access_?key|aws_?secret_?key)["']?[ \t]*[=:][ \t]*["']?([A-Za-z0-9/+]+)"#,
        check: aws_secret,
    },
    Builtin {
        kind: "github-fine-grained-token",
        pattern: r"\b{start-half}github_pat_[A-Za-z0-9_]+",
        check: github_pat,
    },
    Builtin {
        kind: "slack-token",
        pattern: r"\b{start-half}(?:xox[abeoprs]|xapp)-[0-9A-Za-z-]+",
        check: slack,
    },
    Builtin {
        kind: "slack-webhook",
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/[0-9A-Za-z_/+-]+",
        check: slack_webhook,
    },
    Builtin {
        kind: "google-api-key",
        pattern: r"\b{start-half}AIza[0-9A-Za-z_-]+",
        check: google,
    },
    Builtin {
        kind: "stripe-key",
        pattern: r"\b{start-half}(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]+",
        check: stripe,
    },
    Builtin {
        kind: "npm-token",
        pattern: r"\b{start-half}npm_[0-9A-Za-z]+",
        check: npm,
    },
    Builtin {
        kind: "pypi-token",
        pattern: r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[0-9A-Za-z_-]+",
        check: pypi,
    },
    Builtin {
        kind: "anthropic-key",
        pattern: r"\b{start-half}sk-ant-[a-z]+[0-9]*-[0-9A-Za-z_-]+",
        check: anthropic,
    },
    Builtin {
        kind: "openai-key",
        pattern: r"\b{start-half}sk-(?:(?:proj|svcacct|admin)-[0-9A-Za-z_-]+|[0-9A-Za-z_-]*T3BlbkFJ[0-9A-Za-z_-]+)",
        check: openai,
    },
    Builtin {
        kind: "huggingface-token",
        pattern: r"\b{start-half}(?:hf_|api_org_)[0-9A-Za-z]+",
        check: huggingface,
    },
    Builtin {
        kind: "azure-storage-key",
        pattern: r"(?i:AccountKey|SharedAccessKey)[ \t]*=[ \t]*([A-Za-z0-9+/]+={0,2})",
        check: azure_key,
    },
    Builtin {
        kind: "azure-sas-signature",
        pattern: r"[?&;](?i:sig)=([A-Za-z0-9%+/]+={0,2})",
        check: sas_signature,
    },
    Builtin {
        kind: "shopify-token",
        pattern: r"\b{start-half}shp(?:at|ca|pa|ss)_[0-9A-Fa-f]+",
        check: shopify,
    },
    Builtin {
        kind: "digitalocean-token",
        pattern: r"\b{start-half}do[opr]_v1_[0-9a-f]+",
        check: digitalocean,
    },
    Builtin {
        kind: "vault-token",
        pattern: r"\b{start-half}hv[sbr]\.[0-9A-Za-z_-]+",
        check: vault,
    },
    Builtin {
        kind: "mailgun-key",
        pattern: r"\b{start-half}(?:key|pubkey)-[0-9a-f]+",
        check: mailgun,
    },
    Builtin {
        kind: "basic-auth-header",
        pattern: r#"(?i:authorization|proxy-authorization)["']?[ \t]*(?:[:=,][ \t]*)?["']?[ \t]*(?i:basic)[ \t]+([A-Za-z0-9+/]+={0,2})"#,
        check: basic_header,
    },
    Builtin {
        kind: "bearer-token",
        pattern: r#"(?i:authorization)["']?[ \t]*(?:[:=,][ \t]*)?["']?[ \t]*(?i:bearer|token)[ \t]+([A-Za-z0-9._~+/-]+=*)"#,
        check: bearer,
    },
    Builtin {
        kind: "command-line-password",
        pattern: r#"\b{start-half}(?:curl|wget|http)\b[^\n]*?[ \t](?:-u|--user)[ \t=]*["']?[^\s:"']+:([^\s"'@]+)"#,
        check: password_arg,
    },
    Builtin {
        kind: "command-line-password",
        pattern: r#"\b{start-half}(?:curl|wget|http)\b[^\n]*?[ \t](?:--password|--http-password|--proxy-password)[ \t=]*["']?([^\s"'@]+)"#,
        check: password_arg,
    },
    Builtin {
        kind: "auth-tuple",
        pattern: r#"(?:\b{start-half}auth[ \t]*=[ \t]*[(\[]|(?:HTTPBasicAuth|HTTPDigestAuth|BasicAuth|DigestAuth|HTTPProxyAuth)\()[ \t]*[bru]?["'][^"'\n]*["'][ \t]*,[ \t]*[bru]?["']([^"'\n]+)["']"#,
        check: password_arg,
    },
    Builtin {
        kind: "url-password",
        pattern: r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@"'<>\[\]{}]*:([^\s:/?#@"'<>\[\]{}]+)@"#,
        check: url_password_hit,
    },
    Builtin {
        kind: "generic-password",
        pattern: concat!(
            r#"(?i:"#,
            password_names!(),
            r#")"#,
            assign!(),
            r#"(?:[bruBRUf]{0,2}["'`])([^"'`\s]+)["'`]"#
        ),
        check: quoted_password,
    },
    Builtin {
        kind: "generic-secret",
        pattern: concat!(
            r#"(?i:"#,
            secret_names!(),
            r#")"#,
            assign!(),
            r#"(?:[bruBRUf]{0,2}["'`])([^"'`\s]+)["'`]"#
        ),
        check: quoted_secret,
    },
    Builtin {
        kind: "generic-secret",
        pattern: concat!(
            r#"(?i:"#,
            password_names!(),
            "|",
            secret_names!(),
            r#")"#,
            assign!(),
            r#"([^"'`\s,;()\[\]{}<>=:]+)"#
        ),
        check: unquoted_secret,
    },
];

/// The kinds of the built-in rules, in rule order (a kind may have several rules).
pub fn builtin_kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for rule in BUILTINS {
        if !kinds.contains(&rule.kind) {
            kinds.push(rule.kind);
        }
    }
    kinds
}
