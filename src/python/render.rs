//! Block rendering for Python (see `crate::render`).

use pyo3::prelude::*;

/// Register the rendering functions on the extension module.
pub(crate) fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
