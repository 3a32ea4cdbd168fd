//! The checks run on a rule's match: the token helpers, the built-in checks, and the
//! installed checks that extend a span (a JWT's signature, a private key's body).

use super::Hit;
use super::values::{
    MIN_ENTROPY, base64_decode, code_name, credential, entropy, mixed, placeholder,
};

pub(crate) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/'
}

/// Whether `text[..at]` ends in a percent escape (`%3D`, `%2f`).
fn after_escape(text: &[u8], at: usize) -> bool {
    at >= 3
        && text[at - 3] == b'%'
        && text[at - 2].is_ascii_hexdigit()
        && text[at - 1].is_ascii_hexdigit()
}

/// Whether the bytes of `text` right around `start..end` are not letters or digits (the byte
/// before may end a percent escape: `token%3D<token>`).
/// The long prefixes of vendor tokens that no word ends in: a token with one is a secret
/// even glued to letters or digits before it (`user1ghp_...`).
const DISTINCTIVE: &[&[u8]] = &[
    b"ghp_",
    b"gho_",
    b"ghu_",
    b"ghs_",
    b"ghr_",
    b"github_pat_",
    b"xoxa-",
    b"xoxb-",
    b"xoxe-",
    b"xoxo-",
    b"xoxp-",
    b"xoxr-",
    b"xoxs-",
    b"xapp-",
    b"sk-ant-",
    b"sk-proj-",
    b"sk-svcacct-",
    b"sk-admin-",
    b"npm_",
    b"shpat_",
    b"shpca_",
    b"shppa_",
    b"shpss_",
    b"dop_v1_",
    b"doo_v1_",
    b"dor_v1_",
];

/// Whether the token at `start` has a [`DISTINCTIVE`] prefix.
pub(crate) fn distinctive(text: &[u8], start: usize) -> bool {
    DISTINCTIVE.iter().any(|p| text[start..].starts_with(p))
}

fn standalone(text: &[u8], start: usize, end: usize) -> bool {
    let before = start == 0
        || !text[start - 1].is_ascii_alphanumeric()
        || after_escape(text, start)
        || distinctive(text, start);
    let after = end >= text.len() || !text[end].is_ascii_alphanumeric();
    before && after
}

pub(crate) fn token(hit: &Hit<'_>) -> Option<(usize, usize)> {
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
pub(crate) fn keep(hit: &Hit<'_>, ok: bool) -> Option<(usize, usize)> {
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

/// Whether `body` reads as a random token rather than a word or a camel-case name: both cases
/// and digits (36 random base62 characters lack a digit with odds of 1 in 550, a case far
/// less often).
fn random_body(body: &[u8]) -> bool {
    let lower = body.iter().any(u8::is_ascii_lowercase);
    let upper = body.iter().any(u8::is_ascii_uppercase);
    let digits = body.iter().any(u8::is_ascii_digit);
    lower && upper && digits
}

/// A token of `exact` bytes after a `prefix` of that many bytes, or a longer run that reads as
/// random ([`random_body`]): a token glued to more letters is redacted with them.
fn glued(hit: &Hit<'_>, prefix: usize, exact: usize) -> Option<(usize, usize)> {
    let (start, end) = hit.secret;
    let body = &hit.text[start + prefix.min(end - start)..end];
    keep(
        hit,
        (body.len() == exact || (body.len() > exact && random_body(body)))
            && standalone(hit.text, start, end),
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

// --- the built-in checks ------------------------------------------------------------------

pub(crate) fn aws_secret(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(hit, s.len() == 40 && mixed(s))
}

// Ends of tokens. Each prefixed rule matches a token's whole run of its alphabet, so a token
// glued to more letters is one run. Where the format has a fixed length and a distinctive
// prefix, a longer run is a token glued to text and is redacted whole when it reads as random
// (GitHub's classic tokens, npm, Google) or starts with the token's hex digits (Shopify,
// DigitalOcean). Stripe keys, fine-grained
// GitHub tokens, Slack, Vault, Anthropic, OpenAI and PyPI tokens have no fixed length: any run
// up to their bound is taken. Hugging Face tokens (34 letters) take 30-40 characters, or a
// longer run with both cases. Kept exact on purpose: Mailgun's `key-` + 32 hex digits
// (`key-` also starts names of hex digests, `key-<sha256>`), and the installed rules' AWS key
// id (`AKIA` + 16, where a longer upper-case run is a constant or base32 text) and Twilio's
// `AC`/`SK` + 32 (a two-letter prefix).

/// A classic GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`): 36 characters or more
/// after the prefix that read as random, the whole run; not inside a word (a `_` or a percent
/// escape may come before).
pub(crate) fn github_run(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let (start, end) = hit.secret;
    let body = &hit.text[start + 4..end];
    // `gh[pousr]_` is distinctive: glued to letters before it (`user1ghp_...`) too.
    keep(hit, body.len() >= 36 && random_body(body))
}

pub(crate) fn github_pat(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, "github_pat_".len(), 22..=255)
}

pub(crate) fn slack(hit: &Hit<'_>) -> Option<(usize, usize)> {
    keep(hit, after(hit.secret(), b'-', 1).len() >= 10)
}

pub(crate) fn slack_webhook(hit: &Hit<'_>) -> Option<(usize, usize)> {
    keep(
        hit,
        hit.secret().len() >= "hooks.slack.com/services/".len() + 20,
    )
}

pub(crate) fn google(hit: &Hit<'_>) -> Option<(usize, usize)> {
    glued(hit, "AIza".len(), 35)
}

pub(crate) fn stripe(hit: &Hit<'_>) -> Option<(usize, usize)> {
    sized(hit, "sk_live_".len(), 20..=255)
}

pub(crate) fn npm(hit: &Hit<'_>) -> Option<(usize, usize)> {
    glued(hit, "npm_".len(), 36)
}

pub(crate) fn pypi(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let prefix = if s.starts_with(b"pypi-AgEI") { 20 } else { 27 };
    keep(hit, s.len() >= prefix + 50)
}

pub(crate) fn anthropic(hit: &Hit<'_>) -> Option<(usize, usize)> {
    keep(hit, after(hit.secret(), b'-', 3).len() >= 20)
}

pub(crate) fn openai(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.windows(8).any(|w| w == b"T3BlbkFJ") || after(s, b'-', 2).len() >= 40,
    )
}

pub(crate) fn huggingface(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let prefix = if s.starts_with(b"hf_") { 3 } else { 8 };
    // Hugging Face tokens are letters only: a longer run in both cases.
    let body = &s[prefix.min(s.len())..];
    let long = body.len() > 40
        && body.iter().any(u8::is_ascii_lowercase)
        && body.iter().any(u8::is_ascii_uppercase);
    if long && standalone(hit.text, hit.secret.0, hit.secret.1) {
        return Some(hit.secret);
    }
    sized(hit, prefix, 30..=40)
}

pub(crate) fn azure_key(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(hit, (40..=90).contains(&s.len()) && mixed(s))
}

/// A run of `prefix` bytes and then `hex` hex digits (`lower`: lower-case ones only), the run
/// longer only when glued to more letters and digits.
fn hex_token(hit: &Hit<'_>, prefix: usize, hex: usize, lower: bool) -> Option<(usize, usize)> {
    let (start, end) = hit.secret;
    let body = &hit.text[start + prefix..end];
    let digit = |b: &u8| {
        b.is_ascii_digit() || (b'a'..=b'f').contains(b) || (!lower && (b'A'..=b'F').contains(b))
    };
    keep(
        hit,
        body.len() >= hex && body[..hex].iter().all(digit) && standalone(hit.text, start, end),
    )
}

pub(crate) fn shopify(hit: &Hit<'_>) -> Option<(usize, usize)> {
    hex_token(hit, "shpat_".len(), 32, false)
}

pub(crate) fn digitalocean(hit: &Hit<'_>) -> Option<(usize, usize)> {
    hex_token(hit, "dop_v1_".len(), 64, true)
}

pub(crate) fn vault(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.len() >= 4 + 24
            && entropy(&s[4..]) >= 4.0
            && standalone(hit.text, hit.secret.0, hit.secret.1),
    )
}

/// An older Vault service token (`s.` and 24 base62 characters), as `vault login` takes it.
pub(crate) fn vault_legacy(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    keep(
        hit,
        s.len() == 2 + 24 && entropy(&s[2..]) >= 3.5 && !placeholder(s),
    )
}

pub(crate) fn mailgun(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let s = hit.secret();
    let body = after(s, b'-', 1);
    keep(
        hit,
        body.len() == 32 && standalone(hit.text, hit.secret.0, hit.secret.1),
    )
}

pub(crate) fn sas_signature(hit: &Hit<'_>) -> Option<(usize, usize)> {
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
pub(crate) fn basic_header(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let decoded = base64_decode(hit.secret())?;
    let printable = decoded.iter().all(|b| b.is_ascii_graphic() || *b == b' ');
    let colon = decoded.iter().position(|&b| b == b':')?;
    keep(
        hit,
        printable && credential(&decoded[..colon], &decoded[colon + 1..], b""),
    )
}

pub(crate) fn bearer(hit: &Hit<'_>) -> Option<(usize, usize)> {
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
pub(crate) fn password_arg(hit: &Hit<'_>) -> Option<(usize, usize)> {
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

/// htpasswd's password: as [`password_arg`], of a batch-mode command (a `b` in one of its
/// option words; without it htpasswd asks, and the word read is no password).
pub(crate) fn htpasswd_arg(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let head = &hit.text[hit.whole.0..hit.secret.0];
    let batch = head
        .split(|&b| b == b' ' || b == b'\t')
        .any(|word| word.first() == Some(&b'-') && word[1..].contains(&b'b'));
    password_arg(hit).filter(|_| batch)
}

/// A long option's password (`--password X`): as [`password_arg`], and not a name in code or
/// a help text's metavariable (`TEXT`, `pw_file`).
pub(crate) fn option_password(hit: &Hit<'_>) -> Option<(usize, usize)> {
    password_arg(hit).filter(|_| !code_name(hit.secret()))
}

pub(crate) fn base64_pem(hit: &Hit<'_>) -> Option<(usize, usize)> {
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

pub(crate) fn jwt(hit: &Hit<'_>) -> Option<(usize, usize)> {
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

pub(crate) fn private_key(hit: &Hit<'_>) -> Option<(usize, usize)> {
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
