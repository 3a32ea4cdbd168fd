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
//!   code such as an `Authorization` header, `curl -u`, the password options of database and
//!   remote-shell clients, an auth tuple, an Azure SAS
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

mod checks;
mod rules;
#[cfg(test)]
mod tests;
mod values;

pub use rules::builtin_kinds;
pub use values::{
    MIN_ENTROPY, MIN_LETTER_PASSWORD_ENTROPY, MIN_LETTER_PASSWORD_LEN, MIN_PASSWORD_ENTROPY,
    MIN_PASSWORD_LEN, MIN_QUOTED_LEN, MIN_UNQUOTED_ENTROPY, MIN_UNQUOTED_LEN, base64_decode,
    credential, entropy, placeholder,
};

use std::sync::{Arc, LazyLock, RwLock};

use regex::bytes::{Regex, RegexSet, RegexSetBuilder};

use checks::{jwt, private_key, token};
use rules::BUILTINS;
use values::url_password_hit;

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

/// A built-in rule: `pattern` (group 1, when it has one, is the secret), its check, and
/// whether the option it reads may be given again in the same command ([`Repeat`]).
pub(crate) struct Builtin {
    kind: &'static str,
    pattern: &'static str,
    check: CheckFn,
    repeat: Repeat,
}

/// How a command-line option whose value a rule found is read again later in the same
/// command (`redis-cli -a X -a Y`: a program takes the last, and both are secrets): the
/// value glued to the option (`-pX`), after blanks (`-k X`), or either; the command ends
/// at a pipe, `;`, `&` or the line's end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    No,
    Glued,
    Blank,
    Either,
}

/// One compiled rule.
struct Compiled {
    kind: usize,
    regex: Regex,
    group: bool,
    check: CheckFn,
    not_followed_by: Option<Regex>,
    repeat: Repeat,
}

impl Compiled {
    /// Every match of the rule in `text`, in order, as a hit handed to `each`.
    fn hits(&self, text: &[u8], mut each: impl FnMut(Hit<'_>)) {
        if self.group {
            // The secret is group 1; the capture engine runs on each match's span only.
            // The next search starts where the secret starts, not after the match: an
            // assignment can begin inside the value of the one before
            // (`token=abc&password=...`, where the first value is rejected and would hide
            // the second). A value holds no operator, so each search starts past the
            // operator of the match before: every byte is still read a bounded number
            // of times.
            let mut at = 0;
            while let Some(caps) = self.regex.captures_at(text, at) {
                let whole = caps.get(0).expect("group 0 is the match");
                let secret = caps.get(1);
                if let Some(secret) = secret {
                    each(Hit {
                        text,
                        whole: (whole.start(), whole.end()),
                        secret: (secret.start(), secret.end()),
                    });
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
            for m in self.regex.find_iter(text) {
                let span = (m.start(), m.end());
                each(Hit {
                    text,
                    whole: span,
                    secret: span,
                });
            }
        }
    }
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
                repeat: Repeat::No,
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
                repeat: rule.repeat,
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
            // A span a check extended past its match is not read again by the next match;
            // nor is the rest of a command already read for a repeated option.
            let mut covered = 0usize;
            let mut repeats_read = 0usize;
            let mut push = |found: &mut Vec<(usize, usize, usize)>, hit: Hit<'_>| {
                if hit.whole.0 < covered {
                    return;
                }
                if let Some(class) = &rule.not_followed_by
                    && class.is_match(&text[hit.secret.1..])
                {
                    return;
                }
                if rule.repeat != Repeat::No && hit.secret.0 >= repeats_read {
                    repeats_read = option_again(text, hit.secret, rule.repeat, |again| {
                        if let Some((start, end)) = (rule.check)(&again)
                            && end > start
                        {
                            found.push((start, index, end));
                        }
                    });
                }
                if let Some((start, end)) = (rule.check)(&hit)
                    && end > start
                {
                    covered = covered.max(end);
                    found.push((start, index, end));
                }
            };
            rule.hits(text, |hit| push(&mut found, hit));
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

fn blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn ends_command(b: u8) -> bool {
    b"\n\r|;&".contains(&b)
}

/// The option whose value starts at byte `at` of `text`: the word the value is glued to
/// (`-pX`, `-p'X'`), or the word before the blanks before it (`-a X`); `None` when that word
/// is no option (it does not start with `-`).
fn option_before(text: &[u8], at: usize) -> Option<&[u8]> {
    let mut at = at;
    if at > 0 && matches!(text[at - 1], b'"' | b'\'') {
        at -= 1;
    }
    let mut stop = at;
    if stop > 0 && blank(text[stop - 1]) {
        while stop > 0 && blank(text[stop - 1]) {
            stop -= 1;
        }
    }
    let mut start = stop;
    while start > 0 && !blank(text[start - 1]) && !ends_command(text[start - 1]) {
        start -= 1;
    }
    let option = &text[start..stop];
    (option.len() >= 2 && option[0] == b'-').then_some(option)
}

/// An option's value in bytes `from..to` of `text`, as the rules' option values: an
/// optional quote, then a run up to a quote or backtick that does not start with `$` (a
/// variable) or `-` (the next option).
fn option_value(text: &[u8], from: usize, to: usize) -> Option<(usize, usize)> {
    let mut from = from;
    if from < to && matches!(text[from], b'"' | b'\'') {
        from += 1;
    }
    let run = text[from..to]
        .iter()
        .take_while(|&&b| !matches!(b, b'"' | b'\'' | b'`'))
        .count();
    let first = *text.get(from)?;
    (run > 0 && !matches!(first, b'$' | b'-')).then_some((from, from + run))
}

/// Every later value, in the same command, of the option whose value is `secret` (the
/// value glued to the option or after blanks, as `repeat` allows), each handed to `found`
/// as a hit (the option and its value). Returns where the command ends: its bytes are read
/// once, whatever the number of hits.
fn option_again(
    text: &[u8],
    secret: (usize, usize),
    repeat: Repeat,
    mut found: impl FnMut(Hit<'_>),
) -> usize {
    let command_end = text[secret.1..]
        .iter()
        .position(|&b| ends_command(b))
        .map_or(text.len(), |n| secret.1 + n);
    let Some(option) = option_before(text, secret.0) else {
        return command_end;
    };
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut i = secret.1;
    while i < command_end {
        if blank(text[i]) {
            i += 1;
            continue;
        }
        let first = i;
        while i < command_end && !blank(text[i]) {
            i += 1;
        }
        words.push((first, i));
    }
    let separated = matches!(repeat, Repeat::Blank | Repeat::Either);
    let glued = matches!(repeat, Repeat::Glued | Repeat::Either);
    for (n, &(first, last)) in words.iter().enumerate() {
        let word = &text[first..last];
        let taken = if word == option {
            match words.get(n + 1) {
                Some(&(next, next_end)) if separated => option_value(text, next, next_end),
                _ => None,
            }
        } else if glued && word.len() > option.len() && word.starts_with(option) {
            option_value(text, first + option.len(), last)
        } else {
            None
        };
        if let Some(span) = taken {
            found(Hit {
                text,
                whole: (first, span.1),
                secret: span,
            });
        }
    }
    command_end
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
