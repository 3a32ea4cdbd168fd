//! Validating one field's value as `reference.py` does, message for message: line numbers,
//! the score, the reason and the provenance fields.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyString};
use pyo3::{ffi, intern};

use crate::engine::Reason;

use super::errors::invalid;
use super::objects::{exact_int, exact_str, type_name};

/// A line number: `bool` rejected, `__index__` accepted. Returns the value clamped to `i64`
/// and the exact `int` (for messages).
pub(crate) fn line<'py>(
    value: &Bound<'py, PyAny>,
    field: &str,
    index: usize,
) -> PyResult<(i64, Bound<'py, PyAny>)> {
    let py = value.py();
    if value.is_instance_of::<PyBool>() {
        return Err(invalid(
            py,
            field,
            "must be an int, not bool".to_owned(),
            index,
        ));
    }
    let converted;
    let int = if value.is_exact_instance_of::<PyInt>() {
        value
    } else {
        let operator = py.import(intern!(py, "operator"))?;
        match operator.call_method1(intern!(py, "index"), (value,)) {
            Ok(int) => {
                converted = int;
                &converted
            }
            Err(e) if e.is_instance_of::<PyTypeError>(py) => {
                return Err(invalid(
                    py,
                    field,
                    format!("must be an int, not {}", type_name(value)),
                    index,
                ));
            }
            Err(e) => return Err(e),
        }
    };
    let number = match int.extract::<i64>() {
        Ok(n) => n,
        Err(_) if int.lt(0)? => i64::MIN,
        Err(_) => i64::MAX,
    };
    Ok((number, int.clone()))
}

/// A score, read through the built-in type's own conversion (`float.__float__` of a `float`,
/// the `int` value of an `int`): a subclass's `__float__`, `__index__` or `__int__` plays no
/// part. Returns the value compared and, for a subclass instance, the exact `float` or `int`
/// it holds (the snapshot returned in the result).
pub(crate) fn score<'py>(
    value: &Bound<'py, PyAny>,
    index: usize,
) -> PyResult<(f64, Option<Bound<'py, PyAny>>)> {
    let py = value.py();
    let (number, copy) = if value.is_exact_instance_of::<PyFloat>() {
        (value.cast::<PyFloat>()?.value(), None)
    } else if value.is_instance_of::<PyFloat>() {
        // The C double stored in the object: `float.__float__(value)`.
        let number = value.cast::<PyFloat>()?.value();
        (number, Some(PyFloat::new(py, number).into_any()))
    } else if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        let exact = if value.is_exact_instance_of::<PyInt>() {
            None
        } else {
            Some(exact_int(value)?)
        };
        let int = exact.as_ref().unwrap_or(value);
        // SAFETY: an exact int; PyLong_AsDouble runs no Python code on it.
        let number = unsafe { ffi::PyLong_AsDouble(int.as_ptr()) };
        if number == -1.0
            && let Some(e) = PyErr::take(py)
        {
            if e.is_instance_of::<PyOverflowError>(py) {
                return Err(invalid(
                    py,
                    "score",
                    "is too large to convert to a float".to_owned(),
                    index,
                ));
            }
            return Err(e);
        }
        (number, exact)
    } else {
        let problem = format!("must be an int or a float, not {}", type_name(value));
        return Err(invalid(py, "score", problem, index));
    };
    if !number.is_finite() {
        let shown = if number.is_nan() {
            "nan"
        } else if number > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        return Err(invalid(
            py,
            "score",
            format!("must be finite, got {shown}"),
            index,
        ));
    }
    Ok((number, copy))
}

/// The interned exact `str` naming `reason`.
pub(crate) fn reason_name(py: Python<'_>, reason: Reason) -> &Bound<'_, PyString> {
    match reason {
        Reason::Search => intern!(py, "search"),
        Reason::Reference => intern!(py, "reference"),
        Reason::Failure => intern!(py, "failure"),
    }
}

/// A reason, read by the text it holds (a `str` subclass's own `__eq__`, `__hash__` or `__str__`
/// play no part). Returns it and whether `value` is an exact `str` (else the result carries
/// the interned exact name instead).
pub(crate) fn reason(value: &Bound<'_, PyAny>, index: usize) -> PyResult<(Reason, bool)> {
    const ONE_OF: &str = "must be one of 'failure', 'reference', 'search'";
    let py = value.py();
    // Fast path: string literals in Python code are interned, so usually the very same object.
    for (name, reason) in [
        (intern!(py, "search"), Reason::Search),
        (intern!(py, "reference"), Reason::Reference),
        (intern!(py, "failure"), Reason::Failure),
    ] {
        if value.is(name) {
            return Ok((reason, true));
        }
    }
    let Ok(text) = value.cast::<PyString>() else {
        return Err(invalid(
            py,
            "reason",
            format!("{ONE_OF}, not {}", type_name(value)),
            index,
        ));
    };
    if let Some(reason) = text.to_str().ok().and_then(Reason::parse) {
        return Ok((reason, value.is_exact_instance_of::<PyString>()));
    }
    // Show the plain string value, as `str.__str__(value)` does for a str subclass.
    let plain = exact_str(value)?;
    Err(invalid(
        py,
        "reason",
        format!("{ONE_OF}, got {}", plain.repr()?),
        index,
    ))
}

/// Longest `source_id` accepted, in characters (code points).
pub(crate) const MAX_SOURCE_ID: usize = 256;

/// `source_sha256`: `None`, or exactly 64 lower-case hex digits (a `str` subclass is read by
/// its text and snapshotted as the exact `str`).
pub(crate) fn source_sha256<'py>(
    value: Bound<'py, PyAny>,
    index: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let Some((text, length)) = optional_text(value, "source_sha256", index)? else {
        return Ok(py.None().into_bound(py));
    };
    const WANT: &str = "must be 64 lower-case hex digits (a SHA-256)";
    if length != 64 {
        let problem = format!("{WANT}, got {length} characters");
        return Err(invalid(py, "source_sha256", problem, index));
    }
    let hex = text
        .cast::<PyString>()?
        .to_str()
        .is_ok_and(|s| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    if !hex {
        let problem = format!("{WANT}, got {}", text.repr()?);
        return Err(invalid(py, "source_sha256", problem, index));
    }
    Ok(text)
}

/// An optional text field: `None`, or the exact `str` it holds (a subclass snapshotted) and its
/// length in code points; anything else is an invalid `field`.
fn optional_text<'py>(
    value: Bound<'py, PyAny>,
    field: &str,
    index: usize,
) -> PyResult<Option<(Bound<'py, PyAny>, usize)>> {
    if value.is_none() {
        return Ok(None);
    }
    if value.cast::<PyString>().is_err() {
        let problem = format!("must be a str, not {}", type_name(&value));
        return Err(invalid(value.py(), field, problem, index));
    }
    let text = exact_str(&value)?;
    // SAFETY: an exact str.
    let length = unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) } as usize;
    Ok(Some((text, length)))
}

/// `source_id`: `None`, or a non-empty `str` of at most [`MAX_SOURCE_ID`] characters.
pub(crate) fn source_id<'py>(
    value: Bound<'py, PyAny>,
    index: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let Some((text, length)) = optional_text(value, "source_id", index)? else {
        return Ok(py.None().into_bound(py));
    };
    if length == 0 {
        return Err(invalid(
            py,
            "source_id",
            "must not be empty".to_owned(),
            index,
        ));
    }
    if length > MAX_SOURCE_ID {
        let problem = format!("must be at most {MAX_SOURCE_ID} characters, got {length}");
        return Err(invalid(py, "source_id", problem, index));
    }
    Ok(text)
}
