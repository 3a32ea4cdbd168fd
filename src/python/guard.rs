//! No Rust panic crosses into Python: every entry point of the extension runs its body through
//! [`guard`], which turns a panic into `bugcontext.core.errors.InternalError` (a `RuntimeError`,
//! so an `except Exception` catches it; PyO3's own `PanicException` is a `BaseException`).
//!
//! A panic is a bug: input the engine refuses is an `InvalidInputError` made before any work.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Run `body`; a panic in it becomes an `InternalError` naming `name` (the entry point).
#[inline]
pub(crate) fn guard<T>(name: &str, body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| Err(internal(name, &*payload)))
}

/// The panic's message, when it is text.
fn message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic")
}

/// The error for a panic in entry point `name`.
fn internal(name: &str, payload: &(dyn Any + Send)) -> PyErr {
    let text = format!(
        "bugcontext: internal error in {name}: {} (a bug: please report it)",
        message(payload)
    );
    Python::attach(|py| {
        py.import("bugcontext.core.errors")
            .and_then(|m| m.getattr("InternalError"))
            .and_then(|class| class.call1((text.as_str(),)))
            .map(PyErr::from_value)
            .unwrap_or_else(|_| PyRuntimeError::new_err(text.clone()))
    })
}

/// For the tests: panics with `message` inside [`guard`], so that a test can see what a panic
/// in any entry point becomes.
#[pyfunction]
fn _panic(message: &str) -> PyResult<()> {
    guard("_panic", || panic!("{message}"))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_panic, m)?)
}
