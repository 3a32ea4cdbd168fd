//! The `BuildInput` class: the input of a build, as a value.

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, intern};
use pyo3::{PyTraverseError, PyVisit};

use super::guard::guard;

use super::objects::{compare, reprs};

/// The input of a build: `candidates` (a list of `Candidate`, mappings or objects with the six
/// attributes), the budget (`max_chars` in characters, or `budget` in the unit of `cost`), the
/// optional `failure_file` and the optional `cost` model.
#[pyclass(frozen, module = "bugcontext", name = "BuildInput")]
pub struct BuildInput {
    /// The candidates (a tuple snapshot of the iterable given).
    #[pyo3(get)]
    candidates: Py<PyAny>,
    /// The budget in characters, or `None`.
    #[pyo3(get)]
    max_chars: Py<PyAny>,
    /// The failure file, or `None`.
    #[pyo3(get)]
    failure_file: Py<PyAny>,
    /// The failing files in error order (list or tuple), or `None`.
    #[pyo3(get)]
    failure_files: Py<PyAny>,
    /// The budget in the cost model's unit, or `None`.
    #[pyo3(get)]
    budget: Py<PyAny>,
    /// The cost model (`Cost` or its mapping form), or `None`.
    #[pyo3(get)]
    cost: Py<PyAny>,
}

impl BuildInput {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                &self.candidates,
                &self.max_chars,
                &self.failure_file,
                &self.budget,
                &self.cost,
            ],
        )
    }
}

#[pymethods]
impl BuildInput {
    #[new]
    #[pyo3(signature = (candidates, max_chars=None, failure_file=None, *, failure_files=None, budget=None, cost=None))]
    fn new(
        py: Python<'_>,
        candidates: Py<PyAny>,
        max_chars: Option<Py<PyAny>>,
        failure_file: Option<Py<PyAny>>,
        failure_files: Option<Py<PyAny>>,
        budget: Option<Py<PyAny>>,
        cost: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        guard("BuildInput.__new__", || {
            let none = || py.None();
            // An immutable snapshot of the candidates (a generator is read once, here), unless they
            // are not a collection of candidates at all: then `build` reports that.
            let given = candidates.bind(py);
            let collection = !(given.is_instance_of::<PyString>()
                || given.is_instance_of::<pyo3::types::PyBytes>()
                || given.is_instance_of::<pyo3::types::PyByteArray>()
                || given.cast::<PyMapping>().is_ok());
            let candidates = match given.try_iter() {
                Ok(iter) if collection && !given.is_exact_instance_of::<PyTuple>() => {
                    PyTuple::new(py, iter.collect::<PyResult<Vec<_>>>()?)?
                        .into_any()
                        .unbind()
                }
                _ => candidates,
            };
            Ok(Self {
                candidates,
                max_chars: max_chars.unwrap_or_else(none),
                failure_file: failure_file.unwrap_or_else(none),
                failure_files: failure_files.unwrap_or_else(none),
                budget: budget.unwrap_or_else(none),
                cost: cost.unwrap_or_else(none),
            })
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for field in [
            &self.candidates,
            &self.max_chars,
            &self.failure_file,
            &self.budget,
            &self.cost,
        ] {
            visit.call(field)?;
        }
        Ok(())
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        guard("BuildInput.__hash__", || self.fields(py)?.hash())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard("BuildInput.__repr__", || {
            Ok(format!(
                "BuildInput({})",
                reprs(&[
                    ("candidates", self.candidates.bind(py)),
                    ("max_chars", self.max_chars.bind(py)),
                    ("failure_file", self.failure_file.bind(py)),
                    ("failure_files", self.failure_files.bind(py)),
                    ("budget", self.budget.bind(py)),
                    ("cost", self.cost.bind(py)),
                ])?
            ))
        })
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        guard("BuildInput.__richcmp__", || {
            let py = other.py();
            let theirs = match other.cast::<BuildInput>() {
                Ok(b) => Some(b.get().fields(py)?),
                Err(_) => None,
            };
            compare(py, self.fields(py)?, theirs, op)
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        guard("BuildInput.__reduce__", || {
            // Rebuilt through a keyword-aware helper, since `budget` and `cost` are keyword-only.
            let py = slf.py();
            let me = slf.get();
            let kwargs = PyDict::new(py);
            kwargs.set_item(intern!(py, "failure_files"), &me.failure_files)?;
            kwargs.set_item(intern!(py, "budget"), &me.budget)?;
            kwargs.set_item(intern!(py, "cost"), &me.cost)?;
            let partial = py
                .import(intern!(py, "functools"))?
                .getattr(intern!(py, "partial"))?;
            let make = partial.call((slf.get_type(),), Some(&kwargs))?;
            let args = PyTuple::new(py, [&me.candidates, &me.max_chars, &me.failure_file])?;
            (make, args).into_bound_py_any(py)
        })
    }
}
