//! The built-in rules: the formats the installed rule set lacks, each an expression and its
//! check.

use super::checks::{
    anthropic, aws_secret, azure_key, base64_pem, basic_header, bearer, digitalocean, github_pat,
    github_run, google, htpasswd_arg, huggingface, mailgun, npm, openai, option_password,
    password_arg, pypi, sas_signature, shopify, slack, slack_webhook, stripe, vault, vault_legacy,
};
use super::values::{quoted_password, quoted_secret, unquoted_secret, url_password_hit};
use super::{Builtin, Repeat};

/// The keyword names of the generic assignment rules (case-insensitive, anywhere in a name):
/// detect-secrets' `KeywordDetector` list (checked by the Python tests) and `token`,
/// `access_key`, `credential`, `passphrase`.
macro_rules! password_names {
    () => {
        r"password|passwd|pwd|passphrase|contrase(?:ñ|n)a|db[_-]?pass|database[_-]?pass|key[_-]?pass"
    };
}

macro_rules! secret_names {
    () => {
        r"api[_-]?key|auth[_-]?key|service[_-]?key|account[_-]?key|db[_-]?key|database[_-]?key|priv[_-]?key|private[_-]?key|client[_-]?key|secret|token|access[_-]?key|credential"
    };
}

/// What may follow a keyword before the operator: more of the name, a closing quote or
/// bracket of a key (`"password":`, `["password"] =`), blanks; the operator may be
/// percent-encoded (`password%3D...` in an encoded query string).
macro_rules! assign {
    () => {
        r#"[0-9A-Za-z_.-]*["'\]]{0,2}[ \t]*(?::=|=>|===|==|!=|=|:|%3[DdAa])[ \t]*"#
    };
}

/// Where a prefixed token may start: not after a word byte, or right after a percent escape
/// (`token%3Dnpm_...`, `%2Fhvs....`: the escape's last hex digit is no part of the token).
/// Rules that use it capture the token as group 1.
macro_rules! start {
    () => {
        r"(?:\b{start-half}|%[0-9A-Fa-f]{2})"
    };
}

/// Where a token with a long, distinctive prefix may start: anywhere, glued to letters or
/// digits before it too (`user1ghp_...` in a test id, `tokenxoxb-...`): no name ends in
/// such a prefix followed by a token's random run ([`super::checks::distinctive`]).
macro_rules! glued_start {
    () => {
        ""
    };
}

/// The value of a command-line option: optionally quoted, not a variable (`$X`), not the
/// next option (`-x`).
macro_rules! option_value {
    () => {
        r#"["']?([^\s"'`$-][^\s"'`]*)"#
    };
}

/// The rest of one command before an option: stops at a pipe, `;`, `&` or the line's end, so
/// an option of the next command is not taken for one of this one. It is lazy, so the match
/// is the option's first value: the rule's [`Repeat`] reads the later ones.
macro_rules! same_command {
    () => {
        r"(?:[ \t][^\n|;&]*?)??[ \t]"
    };
}

/// The built-in rules, in order after the installed ones (an overlap keeps the kind of the
/// finding that starts first, or of the earlier rule on a tie).
///
/// `\b{start-half}` asserts that the byte before is not a word byte (`[0-9A-Za-z_]`), so that
/// a token is not the tail of a longer word ([`start!`] also lets it follow a percent escape);
/// a token's run is matched to its end and lengths are checked in code, which keeps the
/// automata small and finds a token glued to more letters.
pub(crate) const BUILTINS: &[Builtin] = &[
    Builtin {
        kind: "base64-private-key",
        pattern: r"LS0tLS1CRUdJTi[A-Za-z0-9+/]+={0,2}(?:\r?\n[ \t]*[A-Za-z0-9+/]{40,}={0,2})*",
        check: base64_pem,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "aws-secret-access-key",
        // The name with `_`, `-` or nothing between its words, in any case, then an operator
        // or blanks alone (`aws configure set aws_secret_access_key ...`, `--aws-secret-access-
        // key ...`): the value must be 40 characters exactly.
        pattern: r#"(?i:secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key)["']?(?:[ \t]*(?:[=:]|%3[Dd])[ \t]*|[ \t]+)["']?([A-Za-z0-9/+]+)"#,
        check: aws_secret,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "aws-secret-access-key",
        // The secret right after its access key id (`AKIA...:secret`, a CSV row, a JSON pair);
        // the id itself is the installed `AWSKeyDetector` rule's.
        pattern: r#"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}["']?(?:[ \t]*[:,;|=][ \t]*|[ \t]+)["']?([A-Za-z0-9/+]+)"#,
        check: aws_secret,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "github-token",
        // A GitHub token's whole run of letters and digits (a `_` after it ends it, as in a
        // name glued by underscores): the installed rule takes 36 characters exactly and then
        // refuses a token glued to more letters.
        pattern: r"gh[pousr]_[A-Za-z0-9]+",
        check: github_run,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "github-fine-grained-token",
        pattern: concat!(glued_start!(), r"(github_pat_[A-Za-z0-9_]+)"),
        check: github_pat,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "slack-token",
        pattern: concat!(glued_start!(), r"((?:xox[abeoprs]|xapp)-[0-9A-Za-z-]+)"),
        check: slack,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "slack-webhook",
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/[0-9A-Za-z_/+-]+",
        check: slack_webhook,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "google-api-key",
        pattern: concat!(start!(), r"(AIza[0-9A-Za-z_-]+)"),
        check: google,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "stripe-key",
        pattern: concat!(start!(), r"((?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]+)"),
        check: stripe,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "npm-token",
        pattern: concat!(glued_start!(), r"(npm_[0-9A-Za-z]+)"),
        check: npm,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "pypi-token",
        pattern: r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[0-9A-Za-z_-]+",
        check: pypi,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "anthropic-key",
        pattern: concat!(glued_start!(), r"(sk-ant-[a-z]+[0-9]*-[0-9A-Za-z_-]+)"),
        check: anthropic,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "openai-key",
        pattern: concat!(
            glued_start!(),
            r"(sk-(?:(?:proj|svcacct|admin)-[0-9A-Za-z_-]+|[0-9A-Za-z_-]*T3BlbkFJ[0-9A-Za-z_-]+))"
        ),
        check: openai,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "huggingface-token",
        pattern: concat!(start!(), r"((?:hf_|api_org_)[0-9A-Za-z]+)"),
        check: huggingface,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "azure-storage-key",
        pattern: r"(?i:AccountKey|SharedAccessKey)[ \t]*=[ \t]*([A-Za-z0-9+/]+={0,2})",
        check: azure_key,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "azure-sas-signature",
        pattern: r"[?&;](?i:sig)=([A-Za-z0-9%+/]+={0,2})",
        check: sas_signature,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "shopify-token",
        pattern: concat!(glued_start!(), r"(shp(?:at|ca|pa|ss)_[0-9A-Za-z]+)"),
        check: shopify,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "digitalocean-token",
        pattern: concat!(glued_start!(), r"(do[opr]_v1_[0-9A-Za-z]+)"),
        check: digitalocean,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "vault-token",
        pattern: concat!(start!(), r"(hv[sbr]\.[0-9A-Za-z_-]+)"),
        check: vault,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "mailgun-key",
        pattern: concat!(start!(), r"((?:key|pubkey)-[0-9a-f]+)"),
        check: mailgun,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "basic-auth-header",
        pattern: r#"(?i:authorization|proxy-authorization)["']?[ \t]*(?:[:=,][ \t]*)?["']?[ \t]*(?i:basic)[ \t]+([A-Za-z0-9+/]+={0,2})"#,
        check: basic_header,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "bearer-token",
        pattern: r#"(?i:authorization)["']?[ \t]*(?:[:=,][ \t]*)?["']?[ \t]*(?i:bearer|token)[ \t]+([A-Za-z0-9._~+/-]+=*)"#,
        check: bearer,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        pattern: r#"\b{start-half}(?:curl|wget|http)\b[^\n]*?[ \t](?:-u|--user)[ \t=]*["']?[^\s:"']+:([^\s"'@]+)"#,
        check: password_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        pattern: r#"\b{start-half}(?:curl|wget|http)\b[^\n]*?[ \t](?:--password|--http-password|--proxy-password)[ \t=]*["']?([^\s"'@]+)"#,
        check: password_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        // A long password option of any program (`--password X`, `--password=X`, `--pass X`,
        // `--ftp-password=X`); `--password-stdin` and help texts' `--password TEXT` are not.
        pattern: concat!(
            r#"(?:^|[ \t"'(=])--(?:[a-z]+-)*(?:password|passwd|pass)(?:=|[ \t]+)"#,
            option_value!()
        ),
        check: option_password,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        // MySQL and MariaDB clients: `-pX` glued (`-p X` asks for the password; X is the
        // database); 7-Zip's `-pX` (`-p` alone asks).
        pattern: concat!(
            r#"\b{start-half}(?:(?:mysql|mariadb)[a-z-]*|7z[ar]?)"#,
            same_command!(),
            r#"-p"#,
            option_value!()
        ),
        check: password_arg,
        repeat: Repeat::Glued,
    },
    Builtin {
        kind: "command-line-password",
        // The short password options of other clients: `docker login -p X` (and podman's,
        // buildah's, skopeo's, nerdctl's, helm's, oras'), MongoDB's tools' `-p X`, `redis-cli
        // -a X`, SQL Server's `sqlcmd`, `osql` and `bcp -P X`, `zip` and `unzip -P X`, the
        // OpenLDAP tools' `-w X`; glued or after blanks.
        pattern: concat!(
            r#"\b{start-half}(?:(?:(?:docker|podman|buildah|skopeo|nerdctl|oras|helm(?:[ \t]+registry)?)[ \t]+login|mongo[a-z]*)"#,
            same_command!(),
            r#"-p|redis-cli"#,
            same_command!(),
            r#"-a|(?:sqlcmd|osql|bcp|zip|unzip)"#,
            same_command!(),
            r#"-P|ldap[a-z]+"#,
            same_command!(),
            r#"-w)[ \t]*"#,
            option_value!()
        ),
        check: password_arg,
        repeat: Repeat::Either,
    },
    Builtin {
        kind: "command-line-password",
        // sshpass: `-p X` among its own options only (`sshpass -f file ssh -p 2222` names a
        // port of ssh's).
        pattern: concat!(
            r#"\b{start-half}sshpass(?:[ \t]+(?:-[fdP][ \t]*[^\s-]\S*|-[ehvV]+))*[ \t]+-p[ \t]*"#,
            option_value!()
        ),
        check: password_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        // Java's keystore tools: `keytool -storepass X`, `-keypass X`, `-srcstorepass X`,
        // `-deststorepass X` (and jarsigner's), each of a command (options of these names are
        // theirs); `-storepass:env NAME` and `:file` name no password.
        pattern: concat!(
            r#"(?:^|[ \t"'(])-(?:src|dest)?(?:store|key)pass[ \t]+"#,
            option_value!()
        ),
        check: password_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        // Apache's htpasswd in batch mode (`-b`, in any of its option words):
        // `htpasswd -b[c...] FILE USER PASSWORD`, `htpasswd -b -B -C 10 FILE USER PASSWORD`,
        // and with `-n` (no file) `htpasswd -nb USER PASSWORD`; `-C` and `-r` take a number.
        pattern: concat!(
            r#"\b{start-half}htpasswd(?:[ \t]+-(?:[A-Za-mo-z]*[Cr][ \t]+[0-9]+|[A-Za-mo-z]+))+"#,
            r#"[ \t]+[^\s-]\S*[ \t]+[^\s-]\S*[ \t]+"#,
            option_value!()
        ),
        check: htpasswd_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        pattern: concat!(
            r#"\b{start-half}htpasswd(?:[ \t]+-(?:[A-Za-z]*[Cr][ \t]+[0-9]+|[A-Za-z]+))*"#,
            r#"[ \t]+-[A-Za-z]*n(?:[A-Za-z]*[Cr][ \t]+[0-9]+|[A-Za-z]*)"#,
            r#"(?:[ \t]+-(?:[A-Za-z]*[Cr][ \t]+[0-9]+|[A-Za-z]+))*[ \t]+[^\s-]\S*[ \t]+"#,
            option_value!()
        ),
        check: htpasswd_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        // OpenSSL's `-k X` (`openssl enc -aes-256-cbc -k X`): the pass phrase itself.
        pattern: concat!(
            r#"\b{start-half}openssl"#,
            same_command!(),
            r#"-k[ \t]+"#,
            option_value!()
        ),
        check: password_arg,
        repeat: Repeat::Blank,
    },
    Builtin {
        kind: "command-line-password",
        // HashiCorp Vault's older service tokens (`s.` and 24 characters) given to `vault
        // login`.
        pattern: r#"\b{start-half}vault[ \t]+login(?:[ \t]+-[^\s=]+(?:=\S*)?)*[ \t]+["']?(s\.[0-9A-Za-z]{24})\b"#,
        check: vault_legacy,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "api-key-header",
        // An API key or token in an HTTP header (`X-Api-Key: X`, `X-Auth-Token: X`, as curl's
        // `-H` writes it or a request dump shows it).
        pattern: r#"(?i:x-api-key|api-key|x-auth-token|x-access-token|x-api-token)["']?[ \t]*:[ \t]*["']?([A-Za-z0-9._~+/=-]+)"#,
        check: bearer,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "command-line-password",
        // OpenSSL's pass phrase arguments: `-passin pass:X`, `-passout pass:X`.
        pattern: r#"[ \t]-(?:passin|passout|pass|password)[ \t]+["']?pass:([^\s"'`$][^\s"'`]*)"#,
        check: password_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "auth-tuple",
        pattern: r#"(?:\b{start-half}auth[ \t]*=[ \t]*[(\[]|(?:HTTPBasicAuth|HTTPDigestAuth|BasicAuth|DigestAuth|HTTPProxyAuth)\()[ \t]*[bru]?["'][^"'\n]*["'][ \t]*,[ \t]*[bru]?["']([^"'\n]+)["']"#,
        check: password_arg,
        repeat: Repeat::No,
    },
    Builtin {
        kind: "url-password",
        pattern: r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@"'<>\[\]{}]*:([^\s:/?#@"'<>\[\]{}]+)@"#,
        check: url_password_hit,
        repeat: Repeat::No,
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
        repeat: Repeat::No,
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
        repeat: Repeat::No,
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
            // A value holds no operator, `%3D` and `%3A` included (each search starts inside
            // the value before it).
            r#"((?:[^"'`\s,;()\[\]{}<>=:%]|%(?:[^3"'`\s,;()\[\]{}<>=:%]|3[^DdAa"'`\s,;()\[\]{}<>=:%]))+)"#
        ),
        check: unquoted_secret,
        repeat: Repeat::No,
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
