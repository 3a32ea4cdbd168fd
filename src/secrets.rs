//! Secret detection, free of Python types: which byte ranges of a text are secrets, and of
//! which kind.
//!
//! **Rules.** One rule per kind of secret people leak ([`KINDS`]); most re-implement the
//! published rules of gitleaks (`config/gitleaks.toml`) and detect-secrets (the AWS, Azure
//! storage, basic-auth URL, JWT and keyword detectors), with the token alphabets and lengths
//! the providers document. A rule is a regular expression whose match is the secret, or holds
//! it after some context (a keyword and an operator: then a capture group, or a function that
//! cuts the secret out of the match, says where), and a check of the secret's bytes (exact
//! length, alphabet, Shannon entropy, placeholders).
//!
//! **Time.** Every expression is compiled by the `regex` crate, whose engines (lazy DFA,
//! one-pass DFA, Pike VM) run in time linear in the text: no backtracking, whatever the input.
//! Every repetition in the rules is a run over a class (lengths are checked in code, not with
//! bounded counts, which would blow up the lazy DFA's states), so a search reads past the end
//! of its match only to the end of a run that the next match cannot start inside (the private
//! key body stops at `--`): each byte is read a bounded number of times, and finding every
//! match stays linear too (the adversarial tests and benchmarks check it). A [`RegexSet`] first says which rules
//! match at all, in one pass; only those rules are then run for their spans.
//!
//! Texts are bytes (UTF-8, or any bytes: a Python `str` with lone surrogates is passed in its
//! `surrogatepass` form); every expression is ASCII-only (`(?-u)`), so any byte that is not
//! ASCII is simply not part of a secret.

use std::sync::LazyLock;

use regex::bytes::{Regex, RegexSet};

/// One secret found in a text: bytes `start..end` (half-open byte offsets) are a secret of
/// kind `kind` (one of [`KINDS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    pub kind: &'static str,
}

/// A rule: `pattern` (group 1, or the whole match without a group, is the secret) and the
/// check the captured bytes must pass.
struct Rule {
    kind: &'static str,
    pattern: &'static str,
    check: fn(&[u8]) -> bool,
    /// The secret's byte range within a match without a capture group (default: all of it);
    /// cheaper than running the capture engine on every match.
    secret: Option<SecretSpan>,
}

/// Where the secret is in a match: its `(start, end)` byte offsets within the match.
type SecretSpan = fn(&[u8]) -> (usize, usize);

/// The trailing run of `class` bytes of `m`, after `tail` more bytes of `m` that are `b'='`
/// (base64 padding) at most.
fn trailing(m: &[u8], class: fn(u8) -> bool, tail: usize) -> (usize, usize) {
    let padding = m
        .iter()
        .rev()
        .take(tail)
        .take_while(|&&b| b == b'=')
        .count();
    let body = &m[..m.len() - padding];
    let run = body.iter().rev().take_while(|&&b| class(b)).count();
    (body.len() - run, m.len())
}

fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

fn aws_secret_span(m: &[u8]) -> (usize, usize) {
    trailing(m, base64_byte, 0)
}

fn azure_span(m: &[u8]) -> (usize, usize) {
    trailing(m, base64_byte, 2)
}

/// Minimum Shannon entropy, in bits per byte, of the value of a keyword assignment.
pub const MIN_ENTROPY: f64 = 3.5;
/// Minimum length, in bytes, of the value of a keyword assignment.
pub const MIN_GENERIC_LEN: usize = 16;

fn any(_: &[u8]) -> bool {
    true
}

/// AWS's documented example keys end with `EXAMPLE` (`AKIAIOSFODNN7EXAMPLE`).
fn aws_key_id(s: &[u8]) -> bool {
    s.len() == 20
        && s.iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && !s.ends_with(b"EXAMPLE")
}

fn aws_secret(s: &[u8]) -> bool {
    s.len() == 40
}

fn github(s: &[u8]) -> bool {
    if let Some(body) = s.strip_prefix(b"github_pat_") {
        return (22..=255).contains(&body.len());
    }
    let body = &s[4..];
    (36..=255).contains(&body.len()) && body.iter().all(u8::is_ascii_alphanumeric)
}

/// The part of `s` after its `n`-th `-` (empty if it has fewer).
fn after_dash(s: &[u8], n: usize) -> &[u8] {
    let mut rest = s;
    for _ in 0..n {
        match rest.iter().position(|&b| b == b'-') {
            Some(i) => rest = &rest[i + 1..],
            None => return &[],
        }
    }
    rest
}

fn gitlab(s: &[u8]) -> bool {
    after_dash(s, 1).len() >= 20
}

fn slack(s: &[u8]) -> bool {
    after_dash(s, 1).len() >= 10
}

fn slack_webhook(s: &[u8]) -> bool {
    s.len() >= "hooks.slack.com/services/".len() + 20
}

fn google(s: &[u8]) -> bool {
    s.len() == 39
}

fn stripe(s: &[u8]) -> bool {
    s.len() >= "sk_live_".len() + 20
}

fn npm(s: &[u8]) -> bool {
    s.len() == 40
}

fn pypi(s: &[u8]) -> bool {
    let prefix = if s.starts_with(b"pypi-AgEI") { 20 } else { 27 };
    s.len() >= prefix + 50
}

fn anthropic(s: &[u8]) -> bool {
    after_dash(s, 3).len() >= 20
}

fn openai(s: &[u8]) -> bool {
    s.windows(8).any(|w| w == b"T3BlbkFJ") || after_dash(s, 2).len() >= 40
}

fn huggingface(s: &[u8]) -> bool {
    let body = if s.starts_with(b"hf_") {
        &s[3..]
    } else {
        &s[8..]
    };
    (30..=40).contains(&body.len())
}

fn azure(s: &[u8]) -> bool {
    (86..=90).contains(&s.len())
}

fn jwt(s: &[u8]) -> bool {
    let mut parts = s.split(|&b| b == b'.');
    parts.next().is_some_and(|p| p.len() >= 13) && parts.next().is_some_and(|p| p.len() >= 13)
}

/// Placeholder passwords of documentation and examples (compared in lower case).
const PLACEHOLDER_WORDS: &[&str] = &[
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "dummy",
    "fake",
    "sample",
    "your",
    "xxxx",
    "****",
    "....",
    "redacted",
    "test",
    "pass",
    "secret",
    "token",
    "todo",
];

/// Whether `s` reads as a placeholder rather than a value: a template or variable reference
/// (`${X}`, `{{x}}`, `%(x)s`, `$X`, `<x>`), a placeholder word, or one repeated byte.
fn placeholder(s: &[u8]) -> bool {
    if s.is_empty()
        || matches!(s[0], b'$' | b'%' | b'{' | b'<')
        || s.windows(2).any(|w| w == b"{{" || w == b"${")
    {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    if PLACEHOLDER_WORDS
        .iter()
        .any(|w| lower.windows(w.len()).any(|x| x == w.as_bytes()))
    {
        return true;
    }
    s.iter().all(|&b| b == s[0])
}

/// Shannon entropy of `s` in bits per byte (0 for an empty slice).
pub fn entropy(s: &[u8]) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in s {
        counts[b as usize] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

fn url_password(s: &[u8]) -> bool {
    !placeholder(s)
}

/// The value of a keyword assignment is a secret when it is long, random-looking (entropy at
/// least [`MIN_ENTROPY`]), mixes letters and digits, and is not a placeholder, a dotted name
/// (`os.environ`) or a snake-case constant name.
fn generic(s: &[u8]) -> bool {
    if s.len() < MIN_GENERIC_LEN || placeholder(s) {
        return false;
    }
    let digits = s.iter().any(u8::is_ascii_digit);
    let letters = s.iter().any(u8::is_ascii_alphabetic);
    if !(digits && letters) || entropy(s) < MIN_ENTROPY {
        return false;
    }
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let dotted = s.contains(&b'.')
        && s.split(|&b| b == b'.')
            .all(|part| !part.is_empty() && !part[0].is_ascii_digit() && part.iter().all(word));
    let snake = s.contains(&b'_')
        && s.iter().all(word)
        && (!s.iter().any(u8::is_ascii_lowercase) || !s.iter().any(u8::is_ascii_uppercase));
    !(dotted || snake)
}

/// The rules, most specific first (an overlap keeps the earlier rule's kind).
///
/// `\b{start-half}` asserts that the byte before is not a word byte (`[0-9A-Za-z_]`), so that
/// a token is not the tail of a longer word. Lengths are checked in code: a repetition is a
/// run over a class (`+`), never a bounded count, which keeps the automata small (a bounded
/// repetition of a broad class makes the lazy DFA's states explode and fall back to the slower
/// Pike VM) and makes every search stop right after its match.
const RULES: &[Rule] = &[
    Rule {
        kind: "private-key",
        pattern: r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:(?:[A-Za-z0-9+/=\s:,\\]|-[A-Za-z0-9])*-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----)?|PuTTY-User-Key-File-[0-9]+:",
        check: any,
        secret: None,
    },
    Rule {
        kind: "aws-access-key-id",
        pattern: r"\b{start-half}(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Za-z]+",
        check: aws_key_id,
        secret: None,
    },
    Rule {
        kind: "aws-secret-access-key",
        pattern: r#"(?i:aws_?secret_?access_?key)["']?[ \t]*[=:][ \t]*["']?[A-Za-z0-9/+]+"#,
        check: aws_secret,
        secret: Some(aws_secret_span),
    },
    Rule {
        kind: "github-token",
        pattern: r"\b{start-half}(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]+",
        check: github,
        secret: None,
    },
    Rule {
        kind: "gitlab-token",
        pattern: r"\b{start-half}gl(?:pat|dt|rt|ptt|ft|soat|cbt)-[0-9A-Za-z_-]+",
        check: gitlab,
        secret: None,
    },
    Rule {
        kind: "slack-token",
        pattern: r"\b{start-half}(?:xox[abeoprs]|xapp)-[0-9A-Za-z-]+",
        check: slack,
        secret: None,
    },
    Rule {
        kind: "slack-webhook",
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/[0-9A-Za-z_/+-]+",
        check: slack_webhook,
        secret: None,
    },
    Rule {
        kind: "google-api-key",
        pattern: r"\b{start-half}AIza[0-9A-Za-z_-]+",
        check: google,
        secret: None,
    },
    Rule {
        kind: "stripe-key",
        pattern: r"\b{start-half}(?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]+",
        check: stripe,
        secret: None,
    },
    Rule {
        kind: "npm-token",
        pattern: r"\b{start-half}npm_[0-9A-Za-z]+",
        check: npm,
        secret: None,
    },
    Rule {
        kind: "pypi-token",
        pattern: r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[0-9A-Za-z_-]+",
        check: pypi,
        secret: None,
    },
    Rule {
        kind: "anthropic-key",
        pattern: r"\b{start-half}sk-ant-[a-z]+[0-9]*-[0-9A-Za-z_-]+",
        check: anthropic,
        secret: None,
    },
    Rule {
        kind: "openai-key",
        pattern: r"\b{start-half}sk-(?:(?:proj|svcacct|admin)-[0-9A-Za-z_-]+|[0-9A-Za-z_-]*T3BlbkFJ[0-9A-Za-z_-]+)",
        check: openai,
        secret: None,
    },
    Rule {
        kind: "huggingface-token",
        pattern: r"\b{start-half}(?:hf_|api_org_)[0-9A-Za-z]+",
        check: huggingface,
        secret: None,
    },
    Rule {
        kind: "azure-storage-key",
        pattern: r"(?i:AccountKey)[ \t]*=[ \t]*[A-Za-z0-9+/]+={0,2}",
        check: azure,
        secret: Some(azure_span),
    },
    Rule {
        kind: "jwt",
        pattern: r"\b{start-half}eyJ[0-9A-Za-z_-]+\.eyJ[0-9A-Za-z_-]+\.[0-9A-Za-z_-]*",
        check: jwt,
        secret: None,
    },
    Rule {
        kind: "url-password",
        pattern: r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@"'<>\[\]{}]+:([^\s:/?#@"'<>\[\]{}]+)@"#,
        check: url_password,
        secret: None,
    },
    Rule {
        kind: "generic-secret",
        pattern: r#"(?i:password|passwd|passphrase|pwd|secret|token|api_?key|access_?key|auth_?key|private_?key|credential)[0-9A-Za-z_.-]*["']?[ \t]*(?::=|=>|==|=|:)[ \t]*(?:[bruBRU]{0,2}["'`])?([^"'`\s,;()\[\]{}<>=:]+)"#,
        check: generic,
        secret: None,
    },
];

/// The kinds of secret detected, in rule order.
pub const KINDS: [&str; 18] = [
    "private-key",
    "aws-access-key-id",
    "aws-secret-access-key",
    "github-token",
    "gitlab-token",
    "slack-token",
    "slack-webhook",
    "google-api-key",
    "stripe-key",
    "npm-token",
    "pypi-token",
    "anthropic-key",
    "openai-key",
    "huggingface-token",
    "azure-storage-key",
    "jwt",
    "url-password",
    "generic-secret",
];

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

fn ascii(pattern: &str) -> String {
    format!("(?-u){pattern}")
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    let patterns: Vec<String> = RULES.iter().map(|r| ascii(r.pattern)).collect();
    Compiled {
        set: RegexSet::new(&patterns).expect("the secret rules compile"),
        each: patterns
            .iter()
            .map(|p| Regex::new(p).expect("a secret rule compiles"))
            .collect(),
    }
});

/// Every secret in `text`, sorted by start, overlapping findings merged (the merged range
/// keeps the kind of the finding that starts first, or of the earlier rule on a tie).
pub fn find(text: &[u8]) -> Vec<Finding> {
    let compiled = &*COMPILED;
    let mut found: Vec<(usize, usize, usize)> = Vec::new();
    for index in compiled.set.matches(text).iter() {
        let rule = &RULES[index];
        let regex = &compiled.each[index];
        if regex.captures_len() > 1 {
            // The secret is group 1; the capture engine runs on each match's span only. The
            // next search starts where the secret starts, not after the match: an assignment
            // can begin inside the value of the one before (`token=abc&password=...`, where
            // the first value, holding `pass`, is a placeholder and would hide the second).
            // A value holds no `=` or `:`, so each match holds one operator and each search
            // starts past the operator of the match before: every byte is still read a
            // bounded number of times.
            let mut at = 0;
            while let Some(caps) = regex.captures_at(text, at) {
                let whole = caps.get(0).expect("group 0 is the match");
                let secret = caps.get(1);
                if let Some(secret) = secret
                    && (rule.check)(secret.as_bytes())
                {
                    found.push((secret.start(), index, secret.end()));
                }
                at = match secret {
                    Some(secret) if secret.start() > whole.start() => secret.start(),
                    _ => whole.end().max(whole.start() + 1),
                };
                if at > text.len() {
                    break;
                }
            }
        } else {
            // The DFAs alone find the matches; the secret is all or part of each.
            for m in regex.find_iter(text) {
                let (start, end) = rule.secret.map_or((0, m.len()), |span| span(m.as_bytes()));
                let secret = &m.as_bytes()[start..end];
                if (rule.check)(secret) {
                    found.push((m.start() + start, index, m.start() + end));
                }
            }
        }
    }
    found.sort_unstable();
    let mut merged: Vec<Finding> = Vec::with_capacity(found.len());
    for (start, index, end) in found {
        match merged.last_mut() {
            Some(last) if start < last.end => last.end = last.end.max(end),
            _ => merged.push(Finding {
                start,
                end,
                kind: RULES[index].kind,
            }),
        }
    }
    merged
}

/// The kind of the first secret (by position) in `text`, if it holds one.
pub fn first_kind(text: &[u8]) -> Option<&'static str> {
    find(text).first().map(|f| f.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&'static str, &str)> {
        find(text.as_bytes())
            .into_iter()
            .map(|f| (f.kind, &text[f.start..f.end]))
            .collect()
    }

    #[test]
    fn kinds_table_matches_rules() {
        assert_eq!(KINDS.len(), RULES.len());
        for (kind, rule) in KINDS.iter().zip(RULES) {
            assert_eq!(*kind, rule.kind);
        }
    }

    #[test]
    fn aws_key_id_exact_span() {
        let key = format!("AKIA{}", "Q7".repeat(8));
        let text = format!("KEY = \"{key}\"\n");
        assert_eq!(kinds(&text), vec![("aws-access-key-id", key.as_str())]);
        assert_eq!(kinds(&format!("X{key}")), vec![]);
        assert_eq!(kinds(&format!("{key}Z")), vec![]);
    }

    #[test]
    fn huggingface_and_generic_merge() {
        let token = format!("hf_{}", "aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567");
        let text = format!("HF_TOKEN = \"{token}\"\n");
        assert_eq!(kinds(&text), vec![("huggingface-token", token.as_str())]);
    }

    #[test]
    fn generic_needs_entropy_and_no_placeholder() {
        assert_eq!(kinds("password = \"changeme\"\n"), vec![]);
        assert_eq!(kinds("api_key = \"${API_KEY}\"\n"), vec![]);
        assert_eq!(
            kinds("db_password = \"Zq8vX2mK9pL4rT7w\"\n"),
            vec![("generic-secret", "Zq8vX2mK9pL4rT7w")]
        );
    }

    #[test]
    fn an_assignment_inside_a_rejected_value_is_found() {
        // The first value (`abc&password`) holds `pass`, a placeholder: the search goes on
        // inside it, where the second assignment starts.
        assert_eq!(
            kinds("url = '/login?token=abc&password=Zq8vX2mK9pL4rT7w'\n"),
            vec![("generic-secret", "Zq8vX2mK9pL4rT7w")]
        );
        // The same secret is found whatever comes before it (no value runs over an operator).
        assert_eq!(
            kinds("token=x:pwd=Zq8vX2mK9pL4rT7w"),
            vec![("generic-secret", "Zq8vX2mK9pL4rT7w")]
        );
        assert_eq!(
            kinds("api_key=Zq8vX2mK9pL4rT7wpwd = Ab3dE5gH7jK9mN1p"),
            vec![
                ("generic-secret", "Zq8vX2mK9pL4rT7wpwd"),
                ("generic-secret", "Ab3dE5gH7jK9mN1p")
            ]
        );
    }

    #[test]
    fn adversarial_lines_are_linear() {
        // A quadratic search would take minutes on these; a linear one milliseconds.
        for unit in [
            "-sk",
            "sk-",
            "AKIA",
            "xoxb-",
            "password=",
            "token=token",
            "pwd:x",
            "a://b:",
            "eyJ.",
            "-----BEGIN ",
        ] {
            let text = unit.repeat(1_000_000 / unit.len());
            let started = std::time::Instant::now();
            let _ = find(text.as_bytes());
            assert!(started.elapsed().as_secs() < 30, "{unit}");
        }
    }

    #[test]
    fn entropy_of_uniform_bytes() {
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-12);
        assert_eq!(entropy(b""), 0.0);
    }
}
