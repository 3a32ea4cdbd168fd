//! Block rendering for Python (see `crate::render`): `render_block`, the Rust renderer behind
//! the same signature as `bugcontext.core.composer.render_block`, for differential testing.

use pyo3::exceptions::{PyUnicodeEncodeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::guard::guard;
use crate::engine::Reason;
use crate::render::{self, Template};

/// One item as a block of a prompt section, rendered in Rust (`src/render.rs`): the same text
/// as `bugcontext.core.composer.render_block` with the same arguments. A `path` or `content` with
/// lone surrogates has no UTF-8 form; that call is handed to the Python renderer.
#[pyfunction]
#[pyo3(signature = (path, start, end, content, reason, *, failing, template, line_numbers, source_id=None))]
#[allow(clippy::too_many_arguments)] // the Python signature
fn render_block<'py>(
    py: Python<'py>,
    path: &Bound<'py, PyString>,
    start: u32,
    end: u32,
    content: &Bound<'py, PyString>,
    reason: &Bound<'py, PyString>,
    failing: bool,
    template: &Bound<'py, PyString>,
    line_numbers: bool,
    source_id: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    guard("render_block", || {
        let template_name = template.to_str().ok();
        let Some(template_kind) = template_name.and_then(Template::parse) else {
            return Err(PyValueError::new_err(format!(
                "template must be 'markdown' or 'xml', got {}",
                super::errors::shown(&template.repr()?.to_string_lossy())
            )));
        };
        let Some(reason_kind) = reason.to_str().ok().and_then(Reason::parse) else {
            return Err(PyValueError::new_err(format!(
                "reason must be 'failure', 'reference' or 'search', got {}",
                super::errors::shown(&reason.repr()?.to_string_lossy())
            )));
        };
        let (path_str, content_str) = match (utf8(path)?, utf8(content)?) {
            (Some(p), Some(c)) => (p, c),
            _ => {
                // Lone surrogates: only the Python renderer can write them (as base64 in XML).
                let kwargs = PyDict::new(py);
                kwargs.set_item(intern!(py, "failing"), failing)?;
                kwargs.set_item(intern!(py, "template"), template)?;
                kwargs.set_item(intern!(py, "line_numbers"), line_numbers)?;
                kwargs.set_item(intern!(py, "source_id"), source_id)?;
                return py
                    .import(intern!(py, "bugcontext.core.composer"))?
                    .getattr(intern!(py, "render_block"))?
                    .call((path, start, end, content, reason), Some(&kwargs));
            }
        };
        let text = render::block(
            path_str,
            start,
            end,
            content_str,
            reason_kind,
            failing,
            source_id.is_some_and(is_caller),
            template_kind,
            line_numbers,
        );
        Ok(PyString::new(py, &text).into_any())
    })
}

/// Whether a candidate's `source_id` is the exact text of [`render::CALLER_SOURCE`] (a `str`,
/// a subclass read by the text it holds; anything else is not).
pub(super) fn is_caller(source_id: &Bound<'_, PyAny>) -> bool {
    source_id
        .cast::<PyString>()
        .ok()
        .and_then(|s| s.to_str().ok())
        .is_some_and(|s| s == render::CALLER_SOURCE)
}

/// The UTF-8 form of `text`, or `None` if it holds lone surrogates.
fn utf8<'a>(text: &'a Bound<'_, PyString>) -> PyResult<Option<&'a str>> {
    match text.to_str() {
        Ok(s) => Ok(Some(s)),
        Err(err) if err.is_instance_of::<PyUnicodeEncodeError>(text.py()) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Register the rendering functions on the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(render_block, m)?)?;
    Ok(())
}
