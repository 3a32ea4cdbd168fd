//! The statement outline of Python source for Python (see `crate::outline`):
//! `python_outline`.

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::guard::guard;
use crate::outline;

/// The statements of the Python module `text` (a `str`) and of its classes' bodies, as a
/// list of `(depth, kind, start, end, name)`: lines `start..end` (1-based, closed; decorators
/// included), `kind` 0 a function, 1 a class, 2 an import, 3 any other statement, `depth` the
/// number of classes around it, `name` the function's or class's name (else empty); in file order, a class before its body. `None` when the text
/// is not read exactly as the interpreter would (then parse it with `ast`), a `str` with lone
/// surrogates included. Runs in time linear in the length of `text` with the GIL released.
/// One statement: `(depth, kind, start, end, name)`.
type Record = (u32, u8, u32, u32, String);

#[pyfunction]
fn python_outline(py: Python<'_>, text: &Bound<'_, PyString>) -> PyResult<Option<Vec<Record>>> {
    guard("python_outline", || {
        let Ok(text) = text.to_str() else {
            return Ok(None);
        };
        Ok(py.detach(|| {
            outline::outline(text.as_bytes()).map(|found| {
                found
                    .into_iter()
                    .map(|s| (s.depth, s.kind, s.start, s.end, s.name))
                    .collect()
            })
        }))
    })
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(python_outline, m)?)
}
