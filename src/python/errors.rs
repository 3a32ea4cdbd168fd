//! Raising the package's typed errors (`bugcontext.core.errors`) from Rust.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Raise `bugcontext.core.errors.<class>(field, problem, index)`.
fn error(py: Python<'_>, class: &str, field: &str, problem: String, index: usize) -> PyErr {
    let made = py
        .import("bugcontext.core.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((field, problem, index)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(err) => err,
    }
}

/// A `bugcontext.core.errors.ResourceLimitError` for a build-level limit: `limit` names the
/// setting of `bugcontext.core.limits.Limits`, `value` the amount found (a running total),
/// `maximum` the configured value.
pub(crate) fn limit_error(
    py: Python<'_>,
    field: &str,
    problem: String,
    index: usize,
    limit: &str,
    value: u64,
    maximum: u64,
) -> PyErr {
    let made = py
        .import("bugcontext.core.errors")
        .and_then(|m| m.getattr("ResourceLimitError"))
        .and_then(|cls| {
            let kwargs = PyDict::new(py);
            kwargs.set_item("limit", limit)?;
            kwargs.set_item("value", value)?;
            kwargs.set_item("maximum", maximum)?;
            cls.call((field, problem, index), Some(&kwargs))
        });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(err) => err,
    }
}

pub(crate) fn invalid(py: Python<'_>, field: &str, problem: String, index: usize) -> PyErr {
    error(py, "InvalidCandidateError", field, problem, index)
}

/// `text` (a value echoed in an error message, such as its `repr`) with every secret the
/// detector finds replaced by `[REDACTED: kind]`, then cut to 200 characters (`...` added):
/// an error never shows a secret passed as a bad template, order or encoding name.
pub(crate) fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(256));
    let mut at = 0;
    for (start, end, kind) in crate::secrets::find(text.as_bytes()) {
        // Spans are byte offsets on a UTF-8 text; a secret's rule reads ASCII only, so its
        // bounds are character bounds.
        if start >= at && text.is_char_boundary(start) && text.is_char_boundary(end) {
            out.push_str(&text[at..start]);
            out.push_str(&format!("[REDACTED: {kind}]"));
            at = end;
        }
    }
    out.push_str(&text[at..]);
    match out.char_indices().nth(200) {
        Some((cut, _)) => format!("{}...", &out[..cut]),
        None => out,
    }
}
