//! The result digest and the input cache key: SHA-256 over a specified byte form.
//!
//! Both are computed identically by the Python reference (`bugcontext/core/digest.py`, with
//! `hashlib`) and here; the byte form is the contract, so that any other implementation can
//! reproduce them. Notation (all integers unsigned, big-endian):
//!
//! * `S(x)`: the text `x` as UTF-8, a lone surrogate as its 3-byte form (Python's
//!   `encode("utf-8", "surrogatepass")`), preceded by its byte length as 8 bytes.
//! * `O(x)`: `0x00` for `None`, else `0x01 S(x)`.
//! * `U(n)`: `n` as 8 bytes. `B(b)`: one byte, `0x01` or `0x00`.
//! * `H(x)`: the 32-byte SHA-256 of `x`'s bytes as in `S` (without the length).
//! * `F(s)`: the IEEE 754 binary64 bits of `float(s) + 0.0` as 8 bytes (`-0.0` as `0.0`).
//! * `COST`: `S(unit) O(encoding) O(template) B(line_numbers) S(order)`.
//! * `FILES`: `U(k)` then `S(f)` for each of the `k` canonical failing files, in error order.
//!
//! Digest of a result: lower-case hex of SHA-256 over `S("repo-context result v1")
//! S(POLICY_VERSION) COST FILES U(m)` and, for each of the `m` items in selection order,
//! `S(path) U(start) U(end) H(content) S(reason)`. Cache key of an input: the same over
//! `S("repo-context input v1") S(POLICY_VERSION) COST U(min(budget, 2**64 - 1)) FILES U(n)` and,
//! for each of the `n` candidates in input order, `S(path) U(start) U(end) H(content) S(reason)
//! F(score)`, with the canonical path and the reason's plain text.
//!
//! Extensions of the key (each only when it applies, in this order, after the candidates):
//! the groups, `S("groups") U(n)` and per candidate `U(g)`; exact scores, `S("scores") U(n)` and
//! per candidate `0x00` (a float other than `-0.0`), `0x01` (`-0.0`) or `0x02 S(decimal)` (an
//! `int`); the `verify` reader's state, `S("verified") U(p)` and per canonical path in order of
//! first appearance `O(hex SHA-256 of its bytes)`. See `bugcontext/core/digest.py`.
//!
//! Provenance (v2): when some item of a result (some candidate of an input) carries
//! `source_sha256` or `source_id`, the tag is `"repo-context result v2"` (`"repo-context input
//! v2"`) and every item (candidate) is followed by `O(source_sha256) O(source_id)`. Without any
//! provenance the v1 form above is used unchanged, so every earlier digest and key stays valid.

use sha2::{Digest, Sha256};

/// The ranking and packing policy both engines implement; part of every digest and key, so
/// that a change of the policy changes them.
pub const POLICY_VERSION: &str = "rank-v1: failing files in error order, then reference, failure, search; \
score descending; input index; closed line ranges, first selected wins; whole snippets, first fit";

/// Domain tag of a result digest.
pub const RESULT_TAG: &str = "repo-context result v1";
/// Domain tag of an input cache key.
pub const INPUT_TAG: &str = "repo-context input v1";
/// Domain tag of a result digest whose items carry provenance.
pub const RESULT_TAG_V2: &str = "repo-context result v2";
/// Domain tag of an input cache key whose candidates carry provenance.
pub const INPUT_TAG_V2: &str = "repo-context input v2";

/// An incremental SHA-256 over the fields of the byte form.
#[derive(Clone, Default)]
pub struct Form(Sha256);

impl Form {
    /// A form that starts with `S(tag) S(POLICY_VERSION)`.
    pub fn new(tag: &str) -> Self {
        let mut form = Self(Sha256::new());
        form.text(tag.as_bytes());
        form.text(POLICY_VERSION.as_bytes());
        form
    }

    /// `S(x)` of text already encoded as in the byte form.
    pub fn text(&mut self, bytes: &[u8]) {
        self.number(bytes.len() as u64);
        self.0.update(bytes);
    }

    /// `O(x)`.
    pub fn optional(&mut self, bytes: Option<&[u8]>) {
        match bytes {
            None => self.0.update([0u8]),
            Some(b) => {
                self.0.update([1u8]);
                self.text(b);
            }
        }
    }

    /// `U(n)`.
    pub fn number(&mut self, n: u64) {
        self.0.update(n.to_be_bytes());
    }

    /// `B(b)`.
    pub fn flag(&mut self, b: bool) {
        self.0.update([u8::from(b)]);
    }

    /// `H(x)`.
    pub fn content(&mut self, bytes: &[u8]) {
        self.0.update(Sha256::digest(bytes));
    }

    /// Bytes of the form as they are (a tag byte).
    pub fn raw(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// `H(x)` already computed (by [`content_hashes`]).
    pub fn hash(&mut self, hash: &[u8; 32]) {
        self.0.update(hash);
    }

    /// `F(s)`.
    pub fn score(&mut self, score: f64) {
        self.0.update((score + 0.0).to_bits().to_be_bytes());
    }

    /// The lower-case hex digest.
    pub fn hex(self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(64);
        for byte in self.0.finalize() {
            out.push(HEX[usize::from(byte >> 4)] as char);
            out.push(HEX[usize::from(byte & 15)] as char);
        }
        out
    }
}

/// `H(x)` of each text, in order: on the rayon pool when they hold more than `parallel_above`
/// bytes together, else on this thread.
pub fn content_hashes<T: AsRef<[u8]> + Sync>(texts: &[T], parallel_above: usize) -> Vec<[u8; 32]> {
    use rayon::prelude::*;
    let one = |t: &T| -> [u8; 32] { Sha256::digest(t.as_ref()).into() };
    let total: usize = texts.iter().map(|t| t.as_ref().len()).sum();
    if total > parallel_above {
        texts.par_iter().map(one).collect()
    } else {
        texts.iter().map(one).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_form_is_sha256_of_the_two_length_prefixed_texts() {
        let mut bytes = Vec::new();
        for text in [RESULT_TAG, POLICY_VERSION] {
            bytes.extend((text.len() as u64).to_be_bytes());
            bytes.extend(text.as_bytes());
        }
        let expected: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(Form::new(RESULT_TAG).hex(), expected);
    }

    #[test]
    fn every_field_has_its_byte_form() {
        let mut form = Form::new(INPUT_TAG);
        form.optional(Some(b"xml"));
        form.optional(None);
        form.flag(true);
        form.flag(false);
        form.number(258);
        form.content(b"abc");
        form.score(-0.0);
        form.score(1.5);
        form.raw(&[2]);
        let mut bytes = Vec::new();
        for text in [INPUT_TAG, POLICY_VERSION] {
            bytes.extend((text.len() as u64).to_be_bytes());
            bytes.extend(text.as_bytes());
        }
        bytes.extend([1, 0, 0, 0, 0, 0, 0, 0, 3]);
        bytes.extend(b"xml");
        bytes.extend([0, 1, 0]);
        bytes.extend([0, 0, 0, 0, 0, 0, 1, 2]);
        bytes.extend(Sha256::digest(b"abc"));
        bytes.extend([0; 8]);
        bytes.extend(1.5f64.to_bits().to_be_bytes());
        bytes.push(2);
        let expected: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(form.hex(), expected);
    }

    #[test]
    fn fields_are_unambiguous() {
        let one = |f: &dyn Fn(&mut Form)| {
            let mut form = Form::new(INPUT_TAG);
            f(&mut form);
            form.hex()
        };
        // Length prefixes: "ab" + "c" differs from "a" + "bc".
        assert_ne!(
            one(&|f| {
                f.text(b"ab");
                f.text(b"c")
            }),
            one(&|f| {
                f.text(b"a");
                f.text(b"bc")
            })
        );
        assert_ne!(one(&|f| f.optional(None)), one(&|f| f.optional(Some(b""))));
        assert_eq!(one(&|f| f.score(-0.0)), one(&|f| f.score(0.0)));
        assert_ne!(one(&|f| f.score(1.0)), one(&|f| f.score(2.0)));
    }

    #[test]
    fn content_hashes_are_each_texts_sha256_serial_or_parallel() {
        let texts: Vec<Vec<u8>> = (0..300u32)
            .map(|i| (0..i * 7).map(|j| (j % 251) as u8).collect())
            .collect();
        let expected: Vec<[u8; 32]> = texts.iter().map(|t| Sha256::digest(t).into()).collect();
        assert_eq!(content_hashes(&texts, usize::MAX), expected);
        assert_eq!(content_hashes(&texts, 0), expected);
        let mut one = Form::new(INPUT_TAG);
        let mut other = Form::new(INPUT_TAG);
        one.content(&texts[5]);
        other.hash(&expected[5]);
        assert_eq!(one.hex(), other.hex());
    }
}
