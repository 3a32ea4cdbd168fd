//! Secret detection, free of Python types: which byte ranges of a text are secrets, and of
//! which kind.
//!
//! **Rules.** Two sets of rules are compiled into one [`Detector`]:
//!
//! * *installed* rules ([`ExternalRule`]): the regular expressions of a maintained, published
//!   rule set, given at run time (the Python package reads the plugins of detect-secrets and
//!   installs their expressions with [`install`]); each carries the id of its family (the
//!   plugin's name) and one of a few named [`Check`]s;
//! * *built-in* rules ([`BUILTIN_KINDS`]): the formats that set lacks (vendor tokens such as
//!   Shopify, DigitalOcean, Vault, Mailgun, Google, Anthropic, Hugging Face; credentials in
//!   code such as an `Authorization` header, `curl -u`, an auth tuple, an Azure SAS
//!   signature, a base64-encoded PEM key) and the keyword assignments and URL passwords, whose
//!   values are judged by their entropy and by placeholder rules in code.
//!
//! **Time.** Every expression is compiled by the `regex` crate, whose engines (lazy DFA,
//! one-pass DFA, Pike VM) run in time linear in the text: no backtracking, whatever the input.
//! Lookarounds, which that crate lacks, are translated by the installer into half word
//! boundaries (`\b{start-half}`, `\b{end-half}`) or into a check of the byte after the secret
//! ([`ExternalRule::not_followed_by`]). A [`RegexSet`] first says which rules match at all, in
//! one pass; only those rules are then run for their spans. A check that extends a span (a
//! private key's body, a token's tail) reads on from the match only to the end of a run that
//! the next extension does not read again, so each byte is read a bounded number of times.
//!
//! Texts are bytes (UTF-8, or any bytes: a Python `str` with lone surrogates is passed in its
//! `surrogatepass` form); every expression is ASCII-only (`(?-u)`), so any byte that is not
//! ASCII is simply not part of a secret.

use std::sync::{Arc, LazyLock, RwLock};

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};

/// The lazy DFA cache of the rule set, in bytes.
const DFA_CACHE_BYTES: usize = 64 << 20;

/// One secret found in a text: bytes `start..end` (half-open byte offsets) are a secret of
/// the detector's kind number `kind` ([`Detector::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    pub kind: usize,
}

/// What a check sees of one match: the whole text, the match and the candidate secret
/// (byte ranges of `text`).
pub struct Hit<'t> {
    pub text: &'t [u8],
    pub whole: (usize, usize),
    pub secret: (usize, usize),
}

impl Hit<'_> {
    fn secret(&self) -> &[u8] {
        &self.text[self.secret.0..self.secret.1]
    }
    fn whole(&self) -> &[u8] {
        &self.text[self.whole.0..self.whole.1]
    }
}

/// A check: the secret's final byte range, or `None` when the match is not a secret.
type CheckFn = fn(&Hit<'_>) -> Option<(usize, usize)>;

/// The checks an installed rule can name ([`ExternalRule::check`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// A token: the span trimmed of the delimiters a rule may match around it (blanks, `=`,
    /// `:`, quotes); it must stand alone (no letter or digit right before or after it) and
    /// may not be a documented example (ending in `EXAMPLE`).
    Token,
    /// The password of a URL: not a placeholder, not a documentation host ([`url_password`]).
    UrlPassword,
    /// A JSON Web Token: extended over its signature; its header must decode to JSON.
    Jwt,
    /// A private key header: extended back to its dashes and on through its body and `END`
    /// line.
    PrivateKey,
}

impl Check {
    /// The check named `name` (`"token"`, `"url-password"`, `"jwt"`, `"private-key"`).
    pub fn named(name: &str) -> Option<Check> {
        match name {
            "token" => Some(Check::Token),
            "url-password" => Some(Check::UrlPassword),
            "jwt" => Some(Check::Jwt),
            "private-key" => Some(Check::PrivateKey),
            _ => None,
        }
    }

    fn function(self) -> CheckFn {
        match self {
            Check::Token => token,
            Check::UrlPassword => url_password_hit,
            Check::Jwt => jwt,
            Check::PrivateKey => private_key,
        }
    }
}

/// A rule of the installed set: `pattern` (a `regex`-crate expression; with `group`, capture
/// group 1 is the secret, else the whole match), checked by `check`; with `not_followed_by`
/// (a character class such as `[A-Za-z0-9_-]`), the byte right after the secret may not be in
/// that class (a translated `(?!class)`).
#[derive(Clone, Debug)]
pub struct ExternalRule {
    pub kind: String,
    pub pattern: String,
    pub check: Check,
    pub group: bool,
    pub not_followed_by: Option<String>,
}

/// A built-in rule: `pattern` (group 1, when it has one, is the secret) and its check.
struct Builtin {
    kind: &'static str,
    pattern: &'static str,
    check: CheckFn,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

/// Whether the bytes of `text` right around `start..end` are not letters or digits.
fn standalone(text: &[u8], start: usize, end: usize) -> bool {
    let before = start == 0 || !text[start - 1].is_ascii_alphanumeric();
    let after = end >= text.len() || !text[end].is_ascii_alphanumeric();
    before && after
}

fn token(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let (mut start, mut end) = hit.secret;
    let delimiter = |b: u8| b.is_ascii_whitespace() || matches!(b, b'=' | b':' | b'"' | b'\'');
    while start < end && delimiter(hit.text[start]) {
        start += 1;
    }
    while end > start && delimiter(hit.text[end - 1]) {
        end -= 1;
    }
    // A key name the rule matches before the token (`AccountKey=`) is not part of it.
    let name = hit.text[start..end]
        .iter()
        .take_while(|b| b.is_ascii_alphabetic() || **b == b'_')
        .count();
    if name >= 2
        && start + name < end
        && matches!(hit.text[start + name], b'=' | b':')
        && !hit.text[start + name + 1..end].starts_with(b"//")
        && end - start - name > 16
    {
        start += name + 1;
    }
    let secret = &hit.text[start..end];
    // Telegram's documented URL form puts the token right after `/bot`.
    let after_bot = start >= 4 && &hit.text[start - 4..start] == b"/bot";
    // Base64 padding ends a token: an `=` inside one is a key name's (`AccountKey=`).
    let inner = secret.iter().rposition(|&b| b != b'=').unwrap_or(0);
    if secret[..inner].contains(&b'=') {
        return None;
    }
    let alone = standalone(hit.text, start, end)
        || (after_bot && hit.text.get(end).is_none_or(|b| !b.is_ascii_alphanumeric()));
    (end > start && alone && !secret.ends_with(b"EXAMPLE")).then_some((start, end))
}

/// The span as it is when `ok`.
fn keep(hit: &Hit<'_>, ok: bool) -> Option<(usize, usize)> {
    ok.then_some(hit.secret)
}

/// The span when it stands alone and its length after `prefix` bytes is in `lengths`.
fn sized(
    hit: &Hit<'_>,
    prefix: usize,
    lengths: std::ops::RangeInclusive<usize>,
) -> Option<(usize, usize)> {
    let (start, end) = hit.secret;
    let body = end - start;
    keep(
        hit,
        body >= prefix && lengths.contains(&(body - prefix)) && standalone(hit.text, start, end),
    )
}

/// The part of `s` after its `n`-th `sep` (empty if it has fewer).
fn after(s: &[u8], sep: u8, n: usize) -> &[u8] {
    let mut rest = s;
    for _ in 0..n {
        match rest.iter().position(|&b| b == sep) {
            Some(i) => rest = &rest[i + 1..],
            None => return &[],
        }
    }
    rest
}

// --- decoding ----------------------------------------------------------------------------

/// The bytes `s` encodes in base64 (standard or URL-safe alphabet, padding optional), or
/// `None` if it is not base64.
pub fn base64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => u32::from(b - b'A'),
            b'a'..=b'z' => u32::from(b - b'a') + 26,
            b'0'..=b'9' => u32::from(b - b'0') + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        })
    };
    let body = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &b in body {
        acc = (acc << 6) | value(b)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

// --- placeholders and entropy ------------------------------------------------------------

/// Words that make up documentation placeholders (compared in lower case, whole words only:
/// `mytestvalue9Zq` holds `test` but is not made of such words).
const PLACEHOLDER_WORDS: &[&str] = &[
    "example",
    "examples",
    "placeholder",
    "changeme",
    "change",
    "me",
    "dummy",
    "fake",
    "sample",
    "your",
    "my",
    "our",
    "the",
    "here",
    "redacted",
    "test",
    "testing",
    "pass",
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "token",
    "key",
    "api",
    "apikey",
    "access",
    "auth",
    "todo",
    "fixme",
    "foo",
    "bar",
    "baz",
    "qux",
    "spam",
    "eggs",
    "user",
    "username",
    "usr",
    "login",
    "name",
    "value",
    "none",
    "null",
    "nil",
    "undefined",
    "empty",
    "insert",
    "enter",
    "replace",
    "put",
    "set",
    "string",
    "str",
    "mypassword",
    "yourpassword",
    "xxx",
    "xxxx",
    "abc",
    "private",
    "client",
    "app",
    "db",
    "database",
    "service",
    "account",
    "new",
    "old",
    "default",
    "admin",
    "root",
    "please",
    "guest",
    "demo",
    "hidden",
    "masked",
    "omitted",
    "secure",
    "strong",
];

/// Whether `s` reads as a placeholder rather than a value: empty; a template or variable
/// reference (`${X}`, `{{x}}`, `%(x)s`, `$X`, `<x>`, `{x}`); a mask (one repeated byte, or
/// only `*`, `x`, `.`, `#`, `-`, `_`); or made only of placeholder words (`your_api_key_here`,
/// `changeme`, `foo`, `test123`: words split at non-letters and at lower-to-upper case
/// changes, digits after a word ignored). A value that merely *contains* such a word
/// (`mytestvalue9Zq`) is not a placeholder.
pub fn placeholder(s: &[u8]) -> bool {
    if s.is_empty()
        || matches!(s[0], b'$' | b'%' | b'{' | b'<' | b'[')
        || matches!(s[s.len() - 1], b'>' | b'}')
        || s.windows(2).any(|w| w == b"{{" || w == b"${" || w == b"%(")
    {
        return true;
    }
    if s.iter().all(|&b| b == s[0]) || s.iter().all(|b| b"*xX.#-_".contains(b)) {
        return true;
    }
    // Words: maximal runs of letters, split before an upper-case letter that follows a
    // lower-case one; digits end a word and are otherwise ignored.
    let mut words: Vec<Vec<u8>> = Vec::new();
    let mut word: Vec<u8> = Vec::new();
    let mut letters = 0usize;
    for (i, &b) in s.iter().enumerate() {
        if b.is_ascii_alphabetic() {
            letters += 1;
            if b.is_ascii_uppercase() && i > 0 && s[i - 1].is_ascii_lowercase() && !word.is_empty()
            {
                words.push(std::mem::take(&mut word));
            }
            word.push(b.to_ascii_lowercase());
        } else if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    letters > 0
        && words.iter().all(|w| {
            PLACEHOLDER_WORDS
                .iter()
                .any(|p| p.as_bytes() == w.as_slice())
                || w.iter().all(|&b| b == b'x')
        })
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

/// Whether `host` is a documentation host (RFC 2606): `example.com`, `example.org`,
/// `example.net` or a name under them, or a name ending in `.example` or `.invalid`.
fn example_host(host: &[u8]) -> bool {
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix(b".").unwrap_or(&host);
    ["example.com", "example.org", "example.net"]
        .iter()
        .any(|d| {
            host == d.as_bytes()
                || (host.ends_with(d.as_bytes()) && host[host.len() - d.len() - 1] == b'.')
        })
        || host == b"example"
        || host.ends_with(b".example")
        || host.ends_with(b".invalid")
}

/// Whether `user:password` (before a host `host`; any may be empty) is a credential rather
/// than documentation: the password is no placeholder ([`placeholder`]), is not the user
/// name again (`postgres:postgres`), and the host is no documentation host.
pub fn credential(user: &[u8], password: &[u8], host: &[u8]) -> bool {
    !placeholder(password) && password != user && !example_host(host)
}

/// The host after a URL's `@` at `at` in `text` (up to `/`, `?`, `#`, `:`, a blank or a
/// quote).
fn host_after(text: &[u8], at: usize) -> &[u8] {
    let rest = &text[at.min(text.len())..];
    let n = rest
        .iter()
        .take(255)
        .take_while(|&&b| !(b.is_ascii_whitespace() || b"/?#:\"'<>\\[]{}(),;".contains(&b)))
        .count();
    &rest[..n]
}

fn url_password_hit(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let (start, end) = hit.secret;
    // The user: the bytes between the scheme's `://` and the `:` before the password.
    let before = &hit.text[hit.whole.0..start.saturating_sub(1).max(hit.whole.0)];
    let user = match before.windows(3).rposition(|w| w == b"://") {
        Some(i) => &before[i + 3..],
        None => before,
    };
    let at = if hit.text.get(end) == Some(&b'@') {
        end + 1
    } else {
        end
    };
    keep(
        hit,
        credential(user, &hit.text[start..end], host_after(hit.text, at)),
    )
}

// --- generic assignments -----------------------------------------------------------------

/// Minimum length, in bytes, of a quoted value assigned to a password name (`password`,
/// `passwd`, `pwd`, `passphrase`, ...).
pub const MIN_PASSWORD_LEN: usize = 6;
/// Minimum length, in bytes, of a quoted value assigned to another secret name (`secret`,
/// `token`, `api_key`, ...).
pub const MIN_QUOTED_LEN: usize = 12;
/// Minimum length, in bytes, of an unquoted value assigned to any secret name.
pub const MIN_UNQUOTED_LEN: usize = 8;
/// Minimum Shannon entropy, in bits per byte, of a quoted password.
pub const MIN_PASSWORD_ENTROPY: f64 = 2.0;
/// Minimum length, in bytes, of a quoted password without digits (`"python"`, `"badpass"` are
/// test fixtures as often as passwords; a long random all-letter value is not).
pub const MIN_LETTER_PASSWORD_LEN: usize = 14;
/// Minimum Shannon entropy, in bits per byte, of a quoted password without digits.
pub const MIN_LETTER_PASSWORD_ENTROPY: f64 = 3.2;
/// Minimum Shannon entropy, in bits per byte, of a quoted value assigned to another secret
/// name, and of a bearer token.
pub const MIN_ENTROPY: f64 = 3.0;
/// Minimum Shannon entropy, in bits per byte, of an unquoted value.
pub const MIN_UNQUOTED_ENTROPY: f64 = 2.5;

/// Whether `s` reads as a name in code rather than a value: a dotted name (`os.environ`,
/// `self.token`), a snake-case name in one case (`API_KEY`, `get_token`), an identifier that
/// is all letters in one case with underscores, a kebab-case name (`quoted-string`), or a path
/// (`/run/secrets/x`).
fn code_name(s: &[u8]) -> bool {
    let word = |b: &u8| is_word(*b);
    let dotted = s.contains(&b'.')
        && s.split(|&b| b == b'.')
            .all(|part| !part.is_empty() && !part[0].is_ascii_digit() && part.iter().all(word));
    let snake = s.iter().all(word)
        && !s[0].is_ascii_digit()
        && (s.contains(&b'_') || !s.iter().any(u8::is_ascii_digit))
        && (!s.iter().any(u8::is_ascii_lowercase) || !s.iter().any(u8::is_ascii_uppercase));
    let path = s[0] == b'/' || s.starts_with(b"./") || s.starts_with(b"~/");
    let kebab = s.contains(&b'-') && s.iter().all(|b| b.is_ascii_lowercase() || *b == b'-');
    dotted || snake || path || kebab
}

fn mixed(s: &[u8]) -> bool {
    let digits = s.iter().any(u8::is_ascii_digit);
    let lower = s.iter().any(u8::is_ascii_lowercase);
    let upper = s.iter().any(u8::is_ascii_uppercase);
    let symbol = s.iter().any(|b| b.is_ascii_punctuation());
    let letters = lower || upper;
    (letters && (digits || symbol)) || (lower && upper)
}

/// A quoted value assigned to a password name: [`MIN_PASSWORD_LEN`] bytes or more, entropy
/// at least [`MIN_PASSWORD_ENTROPY`], letters with digits (`"hunter2"`), or without digits
/// [`MIN_LETTER_PASSWORD_LEN`] bytes and [`MIN_LETTER_PASSWORD_ENTROPY`] bits
/// (`"qzvxkbnwmjhtplrf"`); no placeholder.
fn quoted_password(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let letters = s.iter().any(u8::is_ascii_alphabetic);
    let digits = s.iter().any(u8::is_ascii_digit);
    let strong = (letters && digits)
        || (s.len() >= MIN_LETTER_PASSWORD_LEN && entropy(s) >= MIN_LETTER_PASSWORD_ENTROPY);
    keep(
        hit,
        s.len() >= MIN_PASSWORD_LEN
            && entropy(s) >= MIN_PASSWORD_ENTROPY
            && strong
            && !placeholder(s)
            && !(s.contains(&b'.') && code_name(s)),
    )
}

/// A quoted value assigned to another secret name: [`MIN_QUOTED_LEN`] bytes or more, entropy
/// at least [`MIN_ENTROPY`], letters mixed with digits or symbols (an all-letter value is a
/// class or message name as often as a key), no placeholder and no name in code.
fn quoted_secret(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let letters = s.iter().any(u8::is_ascii_alphabetic);
    let others = s
        .iter()
        .any(|b| b.is_ascii_digit() || b.is_ascii_punctuation());
    keep(
        hit,
        s.len() >= MIN_QUOTED_LEN
            && entropy(s) >= MIN_ENTROPY
            && letters
            && others
            && !placeholder(s)
            && !code_name(s),
    )
}

/// An unquoted value: [`MIN_UNQUOTED_LEN`] bytes or more, entropy at least
/// [`MIN_UNQUOTED_ENTROPY`],
/// letters with digits (or symbols, or both cases), no placeholder and no name in code.
fn unquoted_secret(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.len() >= MIN_UNQUOTED_LEN
            && entropy(s) >= MIN_UNQUOTED_ENTROPY
            && mixed(s)
            && s.iter().any(u8::is_ascii_digit)
            && !placeholder(s)
            && !code_name(s),
    )
}

// --- the built-in checks ------------------------------------------------------------------

fn aws_secret(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(hit, s.len() == 40 && mixed(s))
}

fn github_pat(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, "github_pat_".len(), 22..=255)
}

fn slack(hit: &Hit<'_>) -> Option<(usize, usize)> {
    keep(hit, after(hit.secret(), b'-', 1).len() >= 10)
}

fn slack_webhook(hit: &Hit<'_>) -> Option<(usize, usize)> {
    keep(
        hit,
        hit.secret().len() >= "hooks.slack.com/services/".len() + 20,
    )
}

fn google(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, 0, 39..=39)
}

fn stripe(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, "sk_live_".len(), 20..=255)
}

fn npm(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, 4, 36..=36)
}

fn pypi(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let prefix = if s.starts_with(b"pypi-AgEI") { 20 } else { 27 };
    keep(hit, s.len() >= prefix + 50)
}

fn anthropic(hit: &Hit<'_>) -> Option<(usize, usize)> {
    keep(hit, after(hit.secret(), b'-', 3).len() >= 20)
}

fn openai(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.windows(8).any(|w| w == b"T3BlbkFJ") || after(s, b'-', 2).len() >= 40,
    )
}

fn huggingface(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let prefix = if s.starts_with(b"hf_") { 3 } else { 8 };
    sized(hit, prefix, 30..=40)
}

fn azure_key(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(hit, (40..=90).contains(&s.len()) && mixed(s))
}

fn shopify(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, "shpat_".len(), 32..=32)
}

fn digitalocean(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, "dop_v1_".len(), 64..=64)
}

fn vault(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.len() >= 4 + 24
            && entropy(&s[4..]) >= 4.0
            && standalone(hit.text, hit.secret.0, hit.secret.1),
    )
}

fn mailgun(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let body = after(s, b'-', 1);
    keep(
        hit,
        body.len() == 32 && standalone(hit.text, hit.secret.0, hit.secret.1),
    )
}

fn sas_signature(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let escaped = s.windows(3).any(|w| {
        w[0] == b'%'
            && (w == b"%2B"
                || w == b"%2F"
                || w == b"%3D"
                || w == b"%2b"
                || w == b"%2f"
                || w == b"%3d")
    });
    keep(
        hit,
        s.len() >= 30 && (escaped || entropy(s) >= 4.0) && !placeholder(s),
    )
}

/// The base64 credentials of an `Authorization: Basic` header: `user:password`, printable,
/// a credential ([`credential`]).
fn basic_header(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let decoded = base64_decode(hit.secret())?;
    let printable = decoded.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
    let colon = decoded.iter().position(|&b| b == b':')?;
    keep(
        hit,
        printable && credential(&decoded[..colon], &decoded[colon + 1..], b""),
    )
}

fn bearer(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.len() >= 16
            && entropy(s) >= MIN_ENTROPY
            && s.iter().any(u8::is_ascii_digit)
            && !placeholder(s),
    )
}

/// A password on a command line or in an auth tuple: a credential, the user being the
/// bytes in quotes or after `-u` before it (only the password is judged against it).
fn password_arg(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let whole = hit.whole();
    let offset = hit.secret.0 - hit.whole.0;
    // The user: the last run of word bytes, `.`, `@` or `-` before the password's separator.
    let head = &whole[..offset.saturating_sub(1)];
    let head = head
        .strip_suffix(b"\"")
        .or_else(|| head.strip_suffix(b"'"))
        .unwrap_or(head);
    let n = head
        .iter()
        .rev()
        .take_while(|&&b| is_word(b) || b"@.-".contains(&b))
        .count();
    let user = &head[head.len() - n..];
    keep(hit, s.len() >= 3 && credential(user, s, b""))
}

fn base64_pem(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let head: Vec<u8> = s
        .iter()
        .copied()
        .filter(|&b| base64_byte(b))
        .take(96)
        .collect();
    let head = &head[..head.len() / 4 * 4];
    let decoded = base64_decode(head).unwrap_or_default();
    keep(hit, decoded.windows(11).any(|w| w == b"PRIVATE KEY"))
}

// --- the installed checks that extend a span ---------------------------------------------

fn jwt(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let (start, mut end) = hit.secret;
    // The signature: the rest of the segment the match ends in (no `.`: a rejected match
    // reads only its own segment, which the next match starts after).
    let tail = |b: u8| b.is_ascii_alphanumeric() || b"-_=+/".contains(&b);
    while end < hit.text.len() && tail(hit.text[end]) {
        end += 1;
    }
    while end > start && hit.text[end - 1] == b'.' {
        end -= 1;
    }
    let s = &hit.text[start..end];
    let mut parts = s.split(|&b| b == b'.');
    let header = parts.next().unwrap_or_default();
    let payload = parts.next().unwrap_or_default();
    let json = |part: &[u8]| {
        base64_decode(part).is_some_and(|h| {
            h.starts_with(b"{\"") && h.iter().all(|b| b.is_ascii_graphic() || *b == b' ')
        })
    };
    (json(header) && payload.starts_with(b"eyJ") && standalone(hit.text, start, end))
        .then_some((start, end))
}

fn private_key(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let text = hit.text;
    let (mut start, mut end) = hit.secret;
    let mut dashes = 0;
    while start > 0 && text[start - 1] == b'-' && dashes < 5 {
        start -= 1;
        dashes += 1;
    }
    // The header's closing dashes (five: more start the next line).
    let mut closing = 0;
    while end < text.len() && text[end] == b'-' && closing < 5 {
        end += 1;
        closing += 1;
    }
    // The body: base64, blanks, `Proc-Type:`-style headers; a `-` only before a letter or
    // digit (it stops at the next `-----`).
    let body = |i: usize| {
        let b = text[i];
        b.is_ascii_alphanumeric()
            || b" \t\r\n+/=:,\\.".contains(&b)
            || (b == b'-' && text.get(i + 1).is_some_and(|c| c.is_ascii_alphanumeric()))
    };
    if closing < 5 {
        // Not a PEM header line (prose naming one): the match alone.
        return Some((start, end));
    }
    let mut at = end;
    while at < text.len() && body(at) {
        at += 1;
    }
    if text[at..].starts_with(b"-----END") {
        at += "-----END".len();
        while at < text.len() && (text[at].is_ascii_alphanumeric() || text[at] == b' ') {
            at += 1;
        }
        while at < text.len() && text[at] == b'-' {
            at += 1;
        }
        end = at;
    } else {
        // No end line: the body read so far, its trailing blanks left out.
        while at > end && text[at - 1].is_ascii_whitespace() {
            at -= 1;
        }
        end = at;
    }
    Some((start, end))
}

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
const BUILTINS: &[Builtin] = &[
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

/// One compiled rule.
struct Compiled {
    kind: usize,
    regex: Regex,
    group: bool,
    check: CheckFn,
    not_followed_by: Option<Regex>,
}

/// The installed rules (first) and the built-in ones, compiled.
pub struct Detector {
    kinds: Vec<String>,
    set: RegexSet,
    rules: Vec<Compiled>,
}

fn ascii(pattern: &str) -> String {
    format!("(?-u){pattern}")
}

impl Detector {
    /// The detector of `installed` rules followed by the built-in ones; an expression that
    /// does not compile is an error naming its kind and expression.
    pub fn new(installed: &[ExternalRule]) -> Result<Detector, String> {
        let mut kinds: Vec<String> = Vec::new();
        let mut kind_of = |kind: &str| -> usize {
            match kinds.iter().position(|k| k == kind) {
                Some(i) => i,
                None => {
                    kinds.push(kind.to_owned());
                    kinds.len() - 1
                }
            }
        };
        let mut patterns: Vec<String> = Vec::new();
        let mut rules: Vec<Compiled> = Vec::new();
        let compile = |pattern: &str, kind: &str| {
            Regex::new(&ascii(pattern))
                .map_err(|e| format!("the {kind} rule {pattern:?} does not compile: {e}"))
        };
        for rule in installed {
            let regex = compile(&rule.pattern, &rule.kind)?;
            if rule.group && regex.captures_len() < 2 {
                return Err(format!(
                    "the {} rule {:?} has no capture group",
                    rule.kind, rule.pattern
                ));
            }
            let not_followed_by = match &rule.not_followed_by {
                Some(class) => Some(compile(&format!("^{class}"), &rule.kind)?),
                None => None,
            };
            patterns.push(ascii(&rule.pattern));
            rules.push(Compiled {
                kind: kind_of(&rule.kind),
                regex,
                group: rule.group,
                check: rule.check.function(),
                not_followed_by,
            });
        }
        for rule in BUILTINS {
            let regex = compile(rule.pattern, rule.kind)?;
            let group = regex.captures_len() > 1;
            patterns.push(ascii(rule.pattern));
            rules.push(Compiled {
                kind: kind_of(rule.kind),
                regex,
                group,
                check: rule.check,
                not_followed_by: None,
            });
        }
        // The lazy DFA of all the rules together needs a larger cache than the default, or it
        // gives up on ordinary source and the search falls back to the slower Pike VM (still
        // linear, several times slower).
        let set = RegexSetBuilder::new(&patterns)
            .dfa_size_limit(DFA_CACHE_BYTES)
            .build()
            .map_err(|e| format!("the secret rules do not compile together: {e}"))?;
        Ok(Detector { kinds, set, rules })
    }

    /// The kinds, installed ones first, in rule order; [`Finding::kind`] indexes this list.
    pub fn kinds(&self) -> &[String] {
        &self.kinds
    }

    /// The name of kind number `kind`.
    pub fn kind(&self, kind: usize) -> &str {
        &self.kinds[kind]
    }

    /// Every secret in `text`, sorted by start, overlapping findings merged (the merged
    /// range keeps the kind of the finding that starts first, or of the earlier rule on a
    /// tie).
    pub fn find(&self, text: &[u8]) -> Vec<Finding> {
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        for index in self.set.matches(text).iter() {
            let rule = &self.rules[index];
            // A span a check extended past its match is not read again by the next match.
            let mut covered = 0usize;
            let mut push = |found: &mut Vec<(usize, usize, usize)>, hit: Hit<'_>| {
                if hit.whole.0 < covered {
                    return;
                }
                if let Some(class) = &rule.not_followed_by
                    && class.is_match(&text[hit.secret.1..])
                {
                    return;
                }
                if let Some((start, end)) = (rule.check)(&hit)
                    && end > start
                {
                    covered = covered.max(end);
                    found.push((start, index, end));
                }
            };
            if rule.group {
                // The secret is group 1; the capture engine runs on each match's span only.
                // The next search starts where the secret starts, not after the match: an
                // assignment can begin inside the value of the one before
                // (`token=abc&password=...`, where the first value is rejected and would hide
                // the second). A value holds no operator, so each search starts past the
                // operator of the match before: every byte is still read a bounded number
                // of times.
                let mut at = 0;
                while let Some(caps) = rule.regex.captures_at(text, at) {
                    let whole = caps.get(0).expect("group 0 is the match");
                    let secret = caps.get(1);
                    if let Some(secret) = secret {
                        push(
                            &mut found,
                            Hit {
                                text,
                                whole: (whole.start(), whole.end()),
                                secret: (secret.start(), secret.end()),
                            },
                        );
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
                for m in rule.regex.find_iter(text) {
                    let span = (m.start(), m.end());
                    push(
                        &mut found,
                        Hit {
                            text,
                            whole: span,
                            secret: span,
                        },
                    );
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
                    kind: self.rules[index].kind,
                }),
            }
        }
        merged
    }
}

static DETECTOR: LazyLock<RwLock<Arc<Detector>>> = LazyLock::new(|| {
    RwLock::new(Arc::new(
        Detector::new(&[]).expect("the built-in secret rules compile"),
    ))
});

/// The detector in use: the built-in rules, after [`install`] the installed ones too.
pub fn detector() -> Arc<Detector> {
    DETECTOR
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Compile `rules` (and the built-in ones) and use them from now on; on an error (naming the
/// rule) the detector in use is kept.
pub fn install(rules: &[ExternalRule]) -> Result<(), String> {
    let detector = Detector::new(rules)?;
    *DETECTOR
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(detector);
    Ok(())
}

/// Every secret in `text` by the detector in use ([`Detector::find`]), with its kind's name.
pub fn find(text: &[u8]) -> Vec<(usize, usize, String)> {
    let detector = detector();
    detector
        .find(text)
        .into_iter()
        .map(|f| (f.start, f.end, detector.kind(f.kind).to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(String, &str)> {
        let detector = Detector::new(&sample_rules()).unwrap();
        detector
            .find(text.as_bytes())
            .into_iter()
            .map(|f| (detector.kind(f.kind).to_owned(), &text[f.start..f.end]))
            .collect()
    }

    /// Installed rules of the shapes the Python installer gives (translated lookarounds,
    /// groups, every check).
    fn sample_rules() -> Vec<ExternalRule> {
        let rule = |kind: &str, pattern: &str, check: Check, group: bool, follow: Option<&str>| {
            ExternalRule {
                kind: kind.to_owned(),
                pattern: pattern.to_owned(),
                check,
                group,
                not_followed_by: follow.map(str::to_owned),
            }
        };
        vec![
            rule(
                "AWSKeyDetector",
                "(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
                Check::Token,
                false,
                None,
            ),
            rule(
                "PrivateKeyDetector",
                "BEGIN RSA PRIVATE KEY",
                Check::PrivateKey,
                false,
                None,
            ),
            rule(
                "JwtTokenDetector",
                r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?",
                Check::Jwt,
                false,
                None,
            ),
            rule(
                "GitLabTokenDetector",
                r"(glpat|gldt)-[A-Za-z0-9_\-]{20,50}",
                Check::Token,
                false,
                Some(r"[A-Za-z0-9_]"),
            ),
            rule(
                "BasicAuthDetector",
                r"://[^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+:([^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+)@",
                Check::UrlPassword,
                true,
                None,
            ),
        ]
    }

    #[test]
    fn a_rule_that_does_not_compile_is_named() {
        let bad = ExternalRule {
            kind: "X".into(),
            pattern: "(?=a)".into(),
            check: Check::Token,
            group: false,
            not_followed_by: None,
        };
        let err = Detector::new(&[bad]).err().unwrap();
        assert!(err.contains("the X rule"), "{err}");
    }

    #[test]
    fn aws_key_id_exact_span() {
        let key = format!("AKIA{}", "Q7".repeat(8));
        let text = format!("KEY = \"{key}\"\n");
        assert_eq!(
            kinds(&text),
            vec![("AWSKeyDetector".to_owned(), key.as_str())]
        );
        assert_eq!(kinds(&format!("X{key}")), vec![]);
        assert_eq!(kinds(&format!("{key}Z")), vec![]);
        assert_eq!(kinds("AKIAIOSFODNN7EXAMPLE"), vec![]);
    }

    #[test]
    fn a_private_key_block_is_one_finding() {
        let block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc+/=\n-----END RSA PRIVATE KEY-----";
        let text = format!("k = \"\"\"{block}\"\"\"\n");
        assert_eq!(kinds(&text), vec![("PrivateKeyDetector".to_owned(), block)]);
    }

    #[test]
    fn a_jwt_keeps_its_signature() {
        let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_eq!(
            kinds(&format!("t = '{token}'")),
            vec![("JwtTokenDetector".to_owned(), token)]
        );
    }

    #[test]
    fn a_translated_lookahead_rejects_a_longer_word() {
        let token = format!("glpat-{}", "xY9z".repeat(5));
        assert_eq!(
            kinds(&format!("t: {token}\n")),
            vec![("GitLabTokenDetector".to_owned(), token.as_str())]
        );
        assert_eq!(kinds(&format!("t: {token}{}\n", "Q".repeat(40))), vec![]);
    }

    #[test]
    fn url_passwords_and_their_placeholders() {
        assert_eq!(
            kinds("REDIS = 'redis://:Xk9mQ2vL@cache'\n"),
            vec![("url-password".to_owned(), "Xk9mQ2vL")]
        );
        assert_eq!(
            kinds("redis://:pw@host"),
            vec![("url-password".to_owned(), "pw")]
        );
        assert_eq!(kinds("# e.g. 'ftp://foo:bar@ftp.example.org/'\n"), vec![]);
        assert_eq!(kinds("postgres://user:pass@db/x"), vec![]);
        assert_eq!(kinds("postgres://admin:Zq8vX2mK@db.example.com/x"), vec![]);
        assert_eq!(kinds("postgres://admin:${DB_PASSWORD}@db/x"), vec![]);
        assert_eq!(kinds("postgres://admin:<password>@db/x"), vec![]);
        assert_eq!(
            kinds("postgres://admin:Zq8vX2mK@db.internal/x"),
            vec![("BasicAuthDetector".to_owned(), "Zq8vX2mK")]
        );
    }

    #[test]
    fn generic_assignments() {
        assert_eq!(kinds("password = \"changeme\"\n"), vec![]);
        assert_eq!(kinds("api_key = \"${API_KEY}\"\n"), vec![]);
        assert_eq!(kinds("api_key = \"your_api_key_here\"\n"), vec![]);
        assert_eq!(kinds("password = get_password()\n"), vec![]);
        assert_eq!(kinds("token = os.environ['TOKEN']\n"), vec![]);
        assert_eq!(
            kinds("db_password = \"Zq8vX2mK9pL4rT7w\"\n"),
            vec![("generic-password".to_owned(), "Zq8vX2mK9pL4rT7w")]
        );
        // A placeholder word inside a value does not make it a placeholder.
        assert_eq!(
            kinds("password = \"mytestvalue9Zq\"\n"),
            vec![("generic-password".to_owned(), "mytestvalue9Zq")]
        );
        // Short and all-letter passwords.
        assert_eq!(
            kinds("password = \"hunter2\"\n"),
            vec![("generic-password".to_owned(), "hunter2")]
        );
        assert_eq!(
            kinds("PASSWORD = 'qzvxkbnwmjhtplrf'\n"),
            vec![("generic-password".to_owned(), "qzvxkbnwmjhtplrf")]
        );
        assert_eq!(
            kinds("DB_PASSWORD=hunter22x\n"),
            vec![("generic-secret".to_owned(), "hunter22x")]
        );
    }

    #[test]
    fn an_assignment_inside_a_rejected_value_is_found() {
        assert_eq!(
            kinds("url = '/login?token=abc&password=Zq8vX2mK9pL4rT7w'\n"),
            vec![("generic-secret".to_owned(), "Zq8vX2mK9pL4rT7w")]
        );
        assert_eq!(
            kinds("token=x:pwd=Zq8vX2mK9pL4rT7w"),
            vec![("generic-secret".to_owned(), "Zq8vX2mK9pL4rT7w")]
        );
    }

    #[test]
    fn credentials_in_code() {
        // base64("alice:Zq8vX2mK")
        assert_eq!(
            kinds("-H 'Authorization: Basic YWxpY2U6WnE4dlgybUs='"),
            vec![("basic-auth-header".to_owned(), "YWxpY2U6WnE4dlgybUs=")]
        );
        // base64("user:pass")
        assert_eq!(kinds("Authorization: Basic dXNlcjpwYXNz"), vec![]);
        assert_eq!(
            kinds("curl -s -u alice:Zq8vX2mK https://api.internal/x"),
            vec![("command-line-password".to_owned(), "Zq8vX2mK")]
        );
        assert_eq!(
            kinds("requests.get(url, auth=('alice', 'Zq8vX2mK'))"),
            vec![("auth-tuple".to_owned(), "Zq8vX2mK")]
        );
        assert_eq!(kinds("requests.get(url, auth=('user', 'pass'))"), vec![]);
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
            "BEGIN RSA PRIVATE KEY",
            "curl -u ",
            "auth=('",
            "Authorization: Basic ",
            "&sig=",
            "LS0tLS1CRUdJTi",
            "eyJhbGciOiJIUzI1NiJ9.",
            "://a:b",
        ] {
            let text = unit.repeat(1_000_000 / unit.len());
            let detector = Detector::new(&sample_rules()).unwrap();
            let started = std::time::Instant::now();
            let _ = detector.find(text.as_bytes());
            assert!(started.elapsed().as_secs() < 30, "{unit}");
        }
    }

    #[test]
    fn placeholders() {
        for s in [
            "changeme",
            "your_api_key_here",
            "test123",
            "xxxxxxxx",
            "<password>",
            "${VAR}",
            "foo",
            "YourApiKey",
        ] {
            assert!(placeholder(s.as_bytes()), "{s}");
        }
        for s in ["mytestvalue9Zq", "hunter2", "Zq8vX2mK", "pw"] {
            assert!(!placeholder(s.as_bytes()), "{s}");
        }
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(base64_decode(b"dXNlcjpwYXNz").unwrap(), b"user:pass");
        assert_eq!(
            base64_decode(b"YWxpY2U6WnE4dlgybUs=").unwrap(),
            b"alice:Zq8vX2mK"
        );
        assert!(base64_decode(b"a b").is_none());
    }

    #[test]
    fn entropy_of_uniform_bytes() {
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-12);
        assert_eq!(entropy(b""), 0.0);
    }
}
