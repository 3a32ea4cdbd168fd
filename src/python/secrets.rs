//! Secret detection for Python (see `crate::secrets`): `secret_spans` and `SECRET_KINDS`.

use pyo3::exceptions::PyUnicodeEncodeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::guard::guard;
use crate::secrets::{self, KINDS};

/// The secrets in `text` (a `str`), as a list of `(start, end, kind)`: characters (code
/// points) `start..end` (half-open) of `text` are a secret of kind `kind` (one of
/// `SECRET_KINDS`); sorted by `start`, never overlapping. Runs in time linear in the length
/// of `text` with the GIL released. A `str` with lone surrogates is searched in its UTF-8
/// `surrogatepass` form (a surrogate is never part of a secret). Raises `TypeError` for a
/// non-`str`.
#[pyfunction]
fn secret_spans<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> PyResult<Vec<(usize, usize, &'static str)>> {
    guard("secret_spans", || {
        let encoded;
        let bytes: &[u8] = match text.to_str() {
            Ok(s) => s.as_bytes(),
            Err(err) if err.is_instance_of::<PyUnicodeEncodeError>(py) => {
                encoded = text
                    .call_method1(
                        intern!(py, "encode"),
                        (intern!(py, "utf-8"), intern!(py, "surrogatepass")),
                    )?
                    .cast_into::<PyBytes>()?;
                encoded.as_bytes()
            }
            Err(err) => return Err(err),
        };
        Ok(py.detach(|| code_point_spans(bytes, &secrets::find(bytes))))
    })
}

/// The findings' byte ranges of `bytes` (UTF-8, surrogates included) as code point ranges:
/// the code point index of a byte offset is the number of bytes before it that start a
/// character (are not `0b10xx_xxxx` continuation bytes).
fn code_point_spans(bytes: &[u8], found: &[secrets::Finding]) -> Vec<(usize, usize, &'static str)> {
    let mut out = Vec::with_capacity(found.len());
    let (mut at, mut index) = (0usize, 0usize);
    let mut advance = |to: usize| {
        index += bytes[at..to].iter().filter(|&&b| b & 0xC0 != 0x80).count();
        at = to;
        index
    };
    for f in found {
        let start = advance(f.start);
        let end = advance(f.end);
        out.push((start, end, f.kind));
    }
    out
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(secret_spans, m)?)?;
    m.add("SECRET_KINDS", KINDS.to_vec())?;
    Ok(())
}
