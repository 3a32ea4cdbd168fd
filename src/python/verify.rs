//! Verified provenance: checking candidates against their files as the `verify` reader gives
//! them, and marking stale rows.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::engine::Row;

use super::candidate::Candidate;
use super::objects::type_name;
use super::reader::Item;

/// A file as the `verify` reader gave it: the hex SHA-256 of its bytes, and its text (the bytes
/// after a leading UTF-8 byte-order mark) with the byte offset where each line starts and,
/// last, the text's length. Lines end at `\n`, `\r\n` or a lone `\r` (as in
/// `bugcontext.job.sources.files.split_lines`), each keeping its line ending.
struct Verified {
    sha256: String,
    text: Vec<u8>,
    starts: Vec<usize>,
}

impl Verified {
    fn new(bytes: &[u8]) -> Self {
        let sha256 = {
            use sha2::{Digest, Sha256};
            Sha256::digest(bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let text = bytes
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(bytes)
            .to_vec();
        let mut starts = vec![0];
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b'\r' if text.get(i + 1) == Some(&b'\n') => {
                    i += 2;
                    starts.push(i);
                }
                b'\r' | b'\n' => {
                    i += 1;
                    starts.push(i);
                }
                _ => i += 1,
            }
        }
        if starts.last() != Some(&text.len()) {
            starts.push(text.len());
        }
        Self {
            sha256,
            text,
            starts,
        }
    }

    /// The bytes of lines `start..=end` (1-based), or `None` past the last line.
    fn lines(&self, start: u32, end: u32) -> Option<&[u8]> {
        let n_lines = self.starts.len() - 1;
        if end as usize > n_lines {
            return None;
        }
        Some(&self.text[self.starts[start as usize - 1]..self.starts[end as usize]])
    }
}

/// Verified provenance: call `verify(path)` once per canonical path (in order of first
/// appearance) and mark stale every row whose file is missing (`None`), whose `source_sha256`
/// differs from the SHA-256 of the bytes read, or whose content is not exactly the file's lines
/// `start..end` (the bytes decoded as UTF-8, a leading BOM dropped, invalid bytes as lone
/// surrogates: `surrogateescape`). Returns the number of stale rows. Mirrors
/// `bugcontext.core.reference._stale`.
pub(crate) fn mark_stale(
    verify: &Bound<'_, PyAny>,
    rows: &mut [Row],
    items: &[Item<'_>],
    n_paths: usize,
) -> PyResult<usize> {
    let py = verify.py();
    let mut files: Vec<Option<Option<Verified>>> = (0..n_paths).map(|_| None).collect();
    let mut n_stale = 0;
    for (row, item) in rows.iter_mut().zip(items) {
        let c = match item {
            Item::Same(obj) => obj.cast::<Candidate>()?.get(),
            Item::New(c) => c,
            Item::Taken => return Err(PyRuntimeError::new_err("bugcontext: item taken")),
        };
        let slot = &mut files[row.path as usize];
        if slot.is_none() {
            let path = c.path.bind(py);
            let got = verify.call1((path,))?;
            *slot = Some(if got.is_none() {
                None
            } else if let Ok(bytes) = got.cast::<pyo3::types::PyBytes>() {
                Some(Verified::new(bytes.as_bytes()))
            } else {
                return Err(PyTypeError::new_err(format!(
                    "verify: the reader must return bytes or None, not {} (for {})",
                    type_name(&got),
                    path.repr()?
                )));
            });
        }
        let stale = match slot.as_ref().and_then(Option::as_ref) {
            None => true,
            Some(file) => {
                let sha = c.source_sha256.bind(py);
                let wrong_file = !sha.is_none()
                    && sha.cast::<PyString>()?.to_str().ok() != Some(file.sha256.as_str());
                wrong_file || !content_matches(file, row, c.content.bind(py))?
            }
        };
        if stale {
            row.stale = true;
            n_stale += 1;
        }
    }
    Ok(n_stale)
}

/// Whether `content` is exactly the file's lines `row.start..=row.end`.
fn content_matches(file: &Verified, row: &Row, content: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Some(lines) = file.lines(row.start, row.end) else {
        return Ok(false);
    };
    let text = content.cast::<PyString>()?;
    match text.to_str() {
        // UTF-8 is one-to-one: equal bytes, equal text (invalid bytes in the file decode to
        // lone surrogates, which a valid `str` cannot hold).
        Ok(s) => Ok(s.as_bytes() == lines),
        // Lone surrogates: compare with the lines decoded as the reference decodes them. Line
        // ends are ASCII, never part of an invalid sequence, so decoding the lines alone gives
        // the same text as cutting them from the decoded file.
        Err(_) => {
            let py = content.py();
            let decoded = pyo3::types::PyBytes::new(py, lines)
                .call_method1(intern!(py, "decode"), ("utf-8", "surrogateescape"))?;
            Ok(decoded.cast::<PyString>()?.to_str().is_err() && decoded.eq(text)?)
        }
    }
}
