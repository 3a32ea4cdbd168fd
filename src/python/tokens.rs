//! Token counting for Python: the `TokenCounter` class (see `crate::tokens`).
//!
//! Texts are read while attached to the interpreter (a `str` with a UTF-8 form is borrowed,
//! never copied), then counted with the GIL released, the cache behind a `Mutex` that is only
//! taken while detached. A `str` holding lone surrogates has no UTF-8 form; it is counted the
//! way tiktoken's `Encoding.encode_ordinary` counts it, as
//! `text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")`: a high surrogate
//! followed by a low one becomes the astral character they encode, any other surrogate
//! becomes U+FFFD.

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::{PyTypeError, PyUnicodeEncodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use pyo3::{intern, types::PyType};

use super::guard::guard;
use crate::tokens::{Encoding, TokenCache};

/// The text whose tokens tiktoken counts for `text`: its own UTF-8 (borrowed) when it has one,
/// else, for a `str` with lone surrogates, the UTF-16 round trip that tiktoken applies.
pub(crate) fn text_for_counting<'a>(text: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, str>> {
    match text.to_str() {
        Ok(s) => Ok(Cow::Borrowed(s)),
        Err(err) if err.is_instance_of::<PyUnicodeEncodeError>(text.py()) => {
            surrogate_replacement(text).map(Cow::Owned)
        }
        Err(err) => Err(err),
    }
}

/// `str.encode(text, "utf-16", "surrogatepass").decode("utf-16", "replace")`, as tiktoken
/// does (through `str.encode` itself, so that a subclass cannot change it).
#[cold]
fn surrogate_replacement(text: &Bound<'_, PyString>) -> PyResult<String> {
    let py = text.py();
    let utf16 = PyType::new::<PyString>(py).call_method1(
        intern!(py, "encode"),
        (text, intern!(py, "utf-16"), intern!(py, "surrogatepass")),
    )?;
    let decoded = PyString::from_encoded_object(&utf16, Some(c"utf-16"), Some(c"replace"))?;
    Ok(decoded.to_str()?.to_owned())
}

/// Exact token counts in one encoding (`"o200k_base"` or `"cl100k_base"`), cached by content.
///
/// A count is the number of tokens of the encoding with no special tokens (text such as
/// ``"<|endoftext|>"`` counts as ordinary text): `len(encoding.encode_ordinary(text))` in
/// tiktoken, whose handling of lone surrogates it also follows. The encodings are compiled in:
/// nothing is downloaded. Counts are cached by a 128-bit hash of the text, so counting the
/// same text again is a lookup; the cache grows until `clear_cache()`. Thread-safe.
///
/// `TokenCounter(encoding)` raises `ValueError` for an unknown encoding name and `TypeError`
/// for a non-`str`; `count(texts)` (an iterable of `str`, not a bare `str`) returns a
/// `list[int]` and raises `TypeError` naming the index of a non-`str` item.
#[pyclass(frozen, module = "bugcontext", name = "TokenCounter")]
pub struct TokenCounter {
    encoding: Encoding,
    cache: Mutex<TokenCache>,
}

impl TokenCounter {
    /// A counter with an empty cache.
    pub(crate) fn with_encoding(encoding: Encoding) -> Self {
        Self {
            encoding,
            cache: Mutex::new(TokenCache::new(encoding)),
        }
    }

    /// The encoding counted in.
    pub(crate) fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The cache. A panic while it was held cannot leave a wrong count in it (an entry is
    /// inserted whole), so a poisoned lock is taken over.
    fn cache(&self) -> MutexGuard<'_, TokenCache> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Count `texts` through the cache. Does not touch Python: call it while detached (it may
    /// wait for another thread's count to finish).
    pub(crate) fn count_batch<S: AsRef<str>>(&self, texts: &[S]) -> Vec<u64> {
        let counts = self.cache().count_batch(texts);
        counts.into_iter().map(|n| n as u64).collect()
    }

    /// Count Rust strings through the cache, with the GIL released.
    pub(crate) fn count_texts<S: AsRef<str> + Sync>(
        &self,
        py: Python<'_>,
        texts: &[S],
    ) -> Vec<u64> {
        py.detach(|| self.count_batch(texts))
    }

    /// Count Python strings through the cache: read while attached (see
    /// [`text_for_counting`]), counted with the GIL released.
    pub(crate) fn count_strings(
        &self,
        py: Python<'_>,
        texts: &[Bound<'_, PyString>],
    ) -> PyResult<Vec<u64>> {
        let texts = texts
            .iter()
            .map(text_for_counting)
            .collect::<PyResult<Vec<_>>>()?;
        Ok(self.count_texts(py, &texts))
    }
}

fn accepted_encodings() -> String {
    let names: Vec<String> = Encoding::ALL
        .iter()
        .map(|e| format!("'{}'", e.name()))
        .collect();
    names.join(" or ")
}

#[pymethods]
impl TokenCounter {
    #[new]
    fn new(encoding: &Bound<'_, PyAny>) -> PyResult<Self> {
        guard("TokenCounter.__new__", || {
            let Ok(name) = encoding.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "encoding must be a str ({}), not {}",
                    accepted_encodings(),
                    encoding.get_type().name()?
                )));
            };
            match name.to_str().ok().and_then(Encoding::parse) {
                Some(encoding) => Ok(Self::with_encoding(encoding)),
                None => Err(PyValueError::new_err(format!(
                    "unknown encoding {}: expected {}",
                    super::errors::shown(&name.repr()?.to_string_lossy()),
                    accepted_encodings()
                ))),
            }
        })
    }

    /// The encoding's tiktoken name.
    #[getter(encoding)]
    fn encoding_name(&self) -> PyResult<&'static str> {
        guard("TokenCounter.encoding", || Ok(self.encoding().name()))
    }

    /// Number of distinct texts whose count is cached.
    #[getter]
    fn cache_size(&self, py: Python<'_>) -> PyResult<usize> {
        guard("TokenCounter.cache_size", || {
            Ok(py.detach(|| self.cache().len()))
        })
    }

    /// Forget every cached count.
    fn clear_cache(&self, py: Python<'_>) -> PyResult<()> {
        guard("TokenCounter.clear_cache", || {
            py.detach(|| self.cache().clear());
            Ok(())
        })
    }

    /// The token count of each text, in order (tokens of the encoding, no special tokens).
    /// Texts not yet cached are counted, all at once with the GIL released, and cached.
    fn count(&self, py: Python<'_>, texts: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
        guard("TokenCounter.count", || {
            if texts.is_instance_of::<PyString>() {
                return Err(PyTypeError::new_err(
                    "texts must be a sequence of str, not a str (use count_one for one text)",
                ));
            }
            let mut strings = Vec::with_capacity(texts.len().unwrap_or(0));
            for (index, text) in texts.try_iter()?.enumerate() {
                let text = text?;
                match text.cast_into::<PyString>() {
                    Ok(s) => strings.push(s),
                    Err(e) => {
                        return Err(PyTypeError::new_err(format!(
                            "texts[{index}] must be a str, not {}",
                            e.into_inner().get_type().name()?
                        )));
                    }
                }
            }
            self.count_strings(py, &strings)
        })
    }

    /// The token count of one text (tokens of the encoding, no special tokens), through the
    /// cache.
    fn count_one(&self, py: Python<'_>, text: Bound<'_, PyString>) -> PyResult<u64> {
        guard("TokenCounter.count_one", || {
            let counts = self.count_strings(py, std::slice::from_ref(&text))?;
            Ok(counts[0])
        })
    }

    fn __repr__(&self) -> PyResult<String> {
        guard("TokenCounter.__repr__", || {
            Ok(format!("TokenCounter('{}')", self.encoding().name()))
        })
    }
}

/// Register the token-counting classes on the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TokenCounter>()?;
    Ok(())
}
