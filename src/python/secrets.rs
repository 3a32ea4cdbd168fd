//! Secret detection for Python (see `crate::secrets`): `secret_spans`, `install_secret_rules`,
//! `secret_kinds` and `SECRET_KINDS`.

use pyo3::exceptions::{PyUnicodeEncodeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::guard::guard;
use crate::secrets::{self, Check, ExternalRule, Finding};

/// The secrets in `text` (a `str`), as a list of `(start, end, kind)`: characters (code
/// points) `start..end` (half-open) of `text` are a secret of kind `kind` (one of
/// `secret_kinds()`); sorted by `start`, never overlapping. Runs in time linear in the length
/// of `text` with the GIL released. A `str` with lone surrogates is searched in its UTF-8
/// `surrogatepass` form (a surrogate is never part of a secret). Raises `TypeError` for a
/// non-`str`.
#[pyfunction]
fn secret_spans<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> PyResult<Vec<(usize, usize, String)>> {
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
        let detector = secrets::detector();
        Ok(py.detach(|| {
            let found = detector.find(bytes);
            code_point_spans(bytes, &found)
                .into_iter()
                .zip(&found)
                .map(|((start, end), f)| (start, end, detector.kind(f.kind).to_owned()))
                .collect()
        }))
    })
}

/// Compile `rules` (with the built-in ones) and use them for every later `secret_spans` call.
/// Each rule is `(kind, pattern, check, group, not_followed_by)`: `pattern` a `regex`-crate
/// expression (ASCII, no lookaround); `check` one of `"token"`, `"url-password"`, `"jwt"`,
/// `"private-key"`; `group` whether capture group 1 is the secret; `not_followed_by` a
/// character class the byte after the secret may not be in, or `None`. Raises `ValueError`
/// naming the rule (its index and kind) that does not compile or names an unknown check; the
/// rules in use are then kept.
#[pyfunction]
fn install_secret_rules(
    rules: Vec<(String, String, String, bool, Option<String>)>,
) -> PyResult<()> {
    guard("install_secret_rules", || {
        let mut compiled = Vec::with_capacity(rules.len());
        for (index, (kind, pattern, check, group, not_followed_by)) in rules.into_iter().enumerate()
        {
            let Some(check) = Check::named(&check) else {
                return Err(PyValueError::new_err(format!(
                    "secret rule {index} ({kind}): unknown check {check:?}"
                )));
            };
            compiled.push(ExternalRule {
                kind,
                pattern,
                check,
                group,
                not_followed_by,
            });
        }
        secrets::install(&compiled).map_err(PyValueError::new_err)
    })
}

/// The kinds of the rules in use, installed ones first, in rule order.
#[pyfunction]
fn secret_kinds() -> PyResult<Vec<String>> {
    guard("secret_kinds", || Ok(secrets::detector().kinds().to_vec()))
}

/// The findings' byte ranges of `bytes` (UTF-8, surrogates included) as code point ranges:
/// the code point index of a byte offset is the number of bytes before it that start a
/// character (are not `0b10xx_xxxx` continuation bytes).
fn code_point_spans(bytes: &[u8], found: &[Finding]) -> Vec<(usize, usize)> {
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
        out.push((start, end));
    }
    out
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(secret_spans, m)?)?;
    m.add_function(wrap_pyfunction!(install_secret_rules, m)?)?;
    m.add_function(wrap_pyfunction!(secret_kinds, m)?)?;
    m.add("SECRET_KINDS", secrets::builtin_kinds())?;
    Ok(())
}
