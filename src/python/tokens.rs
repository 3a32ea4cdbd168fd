//! Token counting for Python: the `TokenCounter` class (see `crate::tokens`).

use pyo3::prelude::*;

/// Register the token-counting classes on the extension module.
pub(crate) fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
