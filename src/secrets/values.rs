//! Values judged in code: base64 decoding, placeholders and entropy, passwords in URLs, and
//! the generic keyword assignments with their thresholds.

use super::Hit;
use super::checks::{is_word, keep};

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

pub(crate) fn url_password_hit(hit: &Hit<'_>) -> Option<(usize, usize)> {
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
pub(crate) fn code_name(s: &[u8]) -> bool {
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

pub(crate) fn mixed(s: &[u8]) -> bool {
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
pub(crate) fn quoted_password(hit: &Hit<'_>) -> Option<(usize, usize)> {
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
pub(crate) fn quoted_secret(hit: &Hit<'_>) -> Option<(usize, usize)> {
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

/// Whether `rest` starts with the name and operator of another query-string assignment
/// (`user=`, `user%3D`).
fn assignment_follows(rest: &[u8]) -> bool {
    let n = rest
        .iter()
        .take_while(|&&b| is_word(b) || b".-[]".contains(&b))
        .count();
    let op = &rest[n..];
    n > 0 && (op.starts_with(b"=") || op.starts_with(b"%3D") || op.starts_with(b"%3d"))
}

/// The length of the unquoted value `text[start..end]` up to where it ends: the
/// percent-encoded form of a byte that ends an unquoted value (a blank, a quote, `=`, `:`,
/// `,`, `;`, a bracket, `#`), or a `&`/`%26` that starts the next assignment of a query string
/// (`&user=`, read on in `text` past the value).
fn value_len(text: &[u8], start: usize, end: usize) -> usize {
    let hex = |b: u8| (b as char).to_digit(16);
    let s = &text[start..end];
    let rest = |i: usize| &text[start + i..text.len().min(start + i + 256)];
    for i in 0..s.len() {
        if s[i] == b'&' && assignment_follows(rest(i + 1)) {
            return i;
        }
        if s[i] == b'%'
            && i + 2 < s.len()
            && let (Some(h), Some(l)) = (hex(s[i + 1]), hex(s[i + 2]))
        {
            let byte = (h * 16 + l) as u8;
            if byte.is_ascii_whitespace() || b"\"'`=:,;()[]{}<>#".contains(&byte) {
                return i;
            }
            if byte == b'&' && assignment_follows(rest(i + 3)) {
                return i;
            }
        }
    }
    s.len()
}

/// An unquoted value: [`MIN_UNQUOTED_LEN`] bytes or more, entropy at least
/// [`MIN_UNQUOTED_ENTROPY`],
/// letters with digits (or symbols, or both cases), no placeholder and no name in code. The
/// value ends before the next assignment of a query string (`&user=`) and before a
/// percent-encoded delimiter ([`value_len`]).
pub(crate) fn unquoted_secret(hit: &Hit<'_>) -> Option<(usize, usize)> {
    let start = hit.secret.0;
    let s = &hit.secret()[..value_len(hit.text, start, hit.secret.1)];
    let ok = s.len() >= MIN_UNQUOTED_LEN
        && entropy(s) >= MIN_UNQUOTED_ENTROPY
        && mixed(s)
        && s.iter().any(u8::is_ascii_digit)
        && !placeholder(s)
        && !code_name(s);
    ok.then_some((start, start + s.len()))
}
