//! Exact token counts for OpenAI's `o200k_base` and `cl100k_base` encodings, free of Python
//! types.
//!
//! **Unit.** A count is the number of tokens of the named encoding in the text's encoding with
//! no special tokens: text such as `"<|endoftext|>"` is split and counted as ordinary text, as
//! tiktoken's `Encoding.encode_ordinary` does, so a count equals
//! `len(tiktoken.get_encoding(name).encode_ordinary(text))`. Counts are not additive: the count
//! of a concatenation may differ from the sum of the counts of its parts.
//!
//! The vocabularies and pre-tokenisation patterns are compiled into the binary by the
//! `bpe-openai` crate: nothing is downloaded or read from disk at run time. Each encoding's
//! tables are built on its first use (tens of milliseconds), then shared by all threads.
//! Counting runs the byte-pair encoder without building a token list, and skips it for a
//! pre-tokenised piece that is itself a token (most pieces of source code), as tiktoken does.

use std::fmt;
use std::sync::LazyLock;

use bpe_openai::Tokenizer;
use rustc_hash::{FxHashMap, FxHashSet};
use xxhash_rust::xxh3::xxh3_128;

/// A supported encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `o200k_base` (GPT-4o, GPT-4.1, o-series models).
    O200kBase,
    /// `cl100k_base` (GPT-4, GPT-3.5-turbo, `text-embedding-3-*`).
    Cl100kBase,
}

impl Encoding {
    /// Every supported encoding, in the order its names are listed in error messages.
    pub const ALL: [Self; 2] = [Self::O200kBase, Self::Cl100kBase];

    /// Parse the exact tiktoken name: `"o200k_base"` or `"cl100k_base"`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "o200k_base" => Some(Self::O200kBase),
            "cl100k_base" => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// The tiktoken name of the encoding.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    fn tokenizer(self) -> &'static Tokenizer {
        match self {
            Self::O200kBase => bpe_openai::o200k_base(),
            Self::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }

    fn counter(self) -> &'static Counter {
        static O200K_BASE: LazyLock<Counter> = LazyLock::new(|| Counter::new(Encoding::O200kBase));
        static CL100K_BASE: LazyLock<Counter> =
            LazyLock::new(|| Counter::new(Encoding::Cl100kBase));
        match self {
            Self::O200kBase => &O200K_BASE,
            Self::Cl100kBase => &CL100K_BASE,
        }
    }
}

/// An encoding's tokenizer and the set of its tokens' bytes.
struct Counter {
    tokenizer: &'static Tokenizer,
    /// Every token's bytes (about 4 MB for `o200k_base`): a piece found here is one token,
    /// since byte-pair merging of a token's bytes ends at that token.
    tokens: FxHashSet<&'static [u8]>,
}

impl Counter {
    fn new(encoding: Encoding) -> Self {
        let tokenizer = encoding.tokenizer();
        let bpe = &tokenizer.bpe;
        let tokens = (0..bpe.num_tokens())
            .map(|id| bpe.token_bytes(id as u32))
            .collect();
        Self { tokenizer, tokens }
    }

    fn count(&self, text: &str) -> usize {
        // No normalisation: both encodings count the text as it is (the tokenizers' NFC
        // flag is off).
        self.tokenizer
            .split(text)
            .map(|piece| {
                let bytes = piece.as_bytes();
                if bytes.len() == 1 || self.tokens.contains(bytes) {
                    1
                } else {
                    self.tokenizer.bpe.count(bytes)
                }
            })
            .sum()
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The number of tokens of `encoding` in `text`, special-token text counted as ordinary text
/// (see the module documentation). `0` for the empty string.
pub fn count(encoding: Encoding, text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    encoding.counter().count(text)
}

/// The cache key of a text: the 128-bit XXH3 hash of its UTF-8 bytes.
fn key(text: &str) -> u128 {
    xxh3_128(text.as_bytes())
}

/// Token counts of one encoding, cached by content.
///
/// A text is keyed by the 128-bit XXH3 hash of its UTF-8 bytes, not by the text itself, so
/// an entry takes about 32 bytes whatever the text's length and a lookup reads the text once. Two
/// different texts share a key only on a hash collision. XXH3-128 is not a cryptographic hash,
/// so a collision could be constructed on purpose, but by chance the probability that any two
/// of `n` distinct texts collide is about `n² / 2¹²⁹`: below 10⁻²² for a hundred million
/// texts. And a collision could only make one count wrong, never unsafe.
///
/// The cache only grows (one entry per distinct text counted) until [`TokenCache::clear`].
#[derive(Clone, Debug)]
pub struct TokenCache {
    encoding: Encoding,
    counts: FxHashMap<u128, usize>,
}

impl TokenCache {
    /// An empty cache for `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            counts: FxHashMap::default(),
        }
    }

    /// The encoding the counts are in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Number of distinct texts whose count is cached.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// True when no count is cached.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Forget every cached count.
    pub fn clear(&mut self) {
        self.counts = FxHashMap::default();
    }

    /// The token count of `text` (as [`count`]), from the cache or counted and cached.
    pub fn count(&mut self, text: &str) -> usize {
        let encoding = self.encoding;
        *self
            .counts
            .entry(key(text))
            .or_insert_with(|| count(encoding, text))
    }

    /// The token counts of `texts`, in order. Only texts not yet cached are counted, each
    /// distinct text once (a text repeated within the batch is counted on its first
    /// occurrence); every count is then cached.
    pub fn count_batch<S: AsRef<str>>(&mut self, texts: &[S]) -> Vec<usize> {
        self.counts.reserve(texts.len().min(1 << 16));
        texts.iter().map(|t| self.count(t.as_ref())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_name_round_trip() {
        for encoding in Encoding::ALL {
            assert_eq!(Encoding::parse(encoding.name()), Some(encoding));
            assert_eq!(encoding.to_string(), encoding.name());
        }
        for bad in [
            "",
            "O200K_BASE",
            "o200k",
            "p50k_base",
            "gpt2",
            " cl100k_base",
        ] {
            assert_eq!(Encoding::parse(bad), None, "{bad:?}");
        }
    }

    // Expected values are `len(tiktoken.get_encoding(name).encode_ordinary(text))`.
    #[test]
    fn counts_match_tiktoken_on_known_texts() {
        let cases: &[(&str, usize, usize)] = &[
            // (text, o200k_base, cl100k_base)
            ("", 0, 0),
            ("hello world", 2, 2),
            ("<|endoftext|>", 7, 7),
            ("def f(x):\r\n    return x + 1\r\n", 11, 11),
            ("日本語のテキスト", 6, 8),
            ("😀🎉", 3, 5),
            ("a          \n\n\n   b", 5, 5),
        ];
        for &(text, o200k, cl100k) in cases {
            assert_eq!(
                count(Encoding::O200kBase, text),
                o200k,
                "o200k_base {text:?}"
            );
            assert_eq!(
                count(Encoding::Cl100kBase, text),
                cl100k,
                "cl100k_base {text:?}"
            );
        }
    }

    #[test]
    fn single_token_shortcut_agrees_with_the_encoder() {
        let text =
            "fn main() {\r\n    let naïve = \"日本語 😀\";   \n\n\t// <|endoftext|> 12345\n}\n";
        let text = text.repeat(3) + &" ".repeat(40) + "x";
        for encoding in Encoding::ALL {
            assert_eq!(
                count(encoding, &text),
                encoding.tokenizer().count(text.as_str())
            );
        }
    }

    #[test]
    fn cache_counts_each_distinct_text_once() {
        let mut cache = TokenCache::new(Encoding::O200kBase);
        assert!(cache.is_empty());
        assert_eq!(cache.encoding(), Encoding::O200kBase);
        let texts = ["fn main() {}", "", "fn main() {}", "x = 1"];
        let expected: Vec<usize> = texts
            .iter()
            .map(|t| count(Encoding::O200kBase, t))
            .collect();
        assert_eq!(cache.count_batch(&texts), expected);
        assert_eq!(cache.len(), 3);
        assert!(!cache.is_empty());
        assert_eq!(cache.count_batch(&texts), expected);
        assert_eq!(cache.len(), 3);
        assert_eq!(
            cache.count("new text"),
            count(Encoding::O200kBase, "new text")
        );
        assert_eq!(cache.len(), 4);
        cache.clear();
        assert!(cache.is_empty());
        let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        assert_eq!(cache.count_batch(&owned), expected);
    }

    #[test]
    fn long_texts_count() {
        let text = "let x = 1;\n".repeat(10_000);
        for encoding in Encoding::ALL {
            let n = count(encoding, &text);
            assert!((10_000..=80_000).contains(&n), "{encoding}: {n}");
        }
        let spaces = " ".repeat(100_000);
        assert!(count(Encoding::Cl100kBase, &spaces) > 0);
    }
}
