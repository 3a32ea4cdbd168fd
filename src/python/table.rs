//! The columnar build's binding: imports an Arrow table through the Arrow PyCapsule interface
//! (the `pyo3-arrow` crate over arrow-rs's C stream import), runs [`columnar::build_table`] with
//! the GIL released, and exports the two result tables the same way.
//!
//! Called by `bugcontext.batch.table.build_table` after it checked the arguments and the schema.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;
use pyo3_arrow::PyTable;
use pyo3_arrow::input::AnyRecordBatch;

use super::guard::guard;
use crate::columnar::{self, Budget, ErrorKind, Problem, Spec, Unit};
use crate::tokens::Encoding;

/// Build every group of `table`; return `(decisions, groups)` as Arrow tables (objects with
/// `__arrow_c_stream__`). A validation error is raised as made by
/// `bugcontext.batch.table._table_error(kind, field, problem, row, local, key_row)`.
#[pyfunction]
#[pyo3(signature = (table, *, group_by, budget, budget_column, failure_files, encoding, max_candidates, max_total_chars, threads))]
#[allow(clippy::too_many_arguments)]
fn build_table<'py>(
    py: Python<'py>,
    table: AnyRecordBatch,
    group_by: Option<String>,
    budget: u64,
    budget_column: Option<String>,
    failure_files: Option<String>,
    encoding: Option<String>,
    max_candidates: u64,
    max_total_chars: u64,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    // The import too: the C data interface hands buffers that arrow-rs trusts.
    guard("build_table", || {
        build_table_body(
            py,
            table,
            group_by,
            budget,
            budget_column,
            failure_files,
            encoding,
            max_candidates,
            max_total_chars,
            threads,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn build_table_body<'py>(
    py: Python<'py>,
    table: AnyRecordBatch,
    group_by: Option<String>,
    budget: u64,
    budget_column: Option<String>,
    failure_files: Option<String>,
    encoding: Option<String>,
    max_candidates: u64,
    max_total_chars: u64,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let unit = match encoding {
        None => Unit::Chars,
        Some(name) => Unit::Tokens(Encoding::parse(&name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown encoding {}",
                super::errors::shown(&format!("{name:?}"))
            ))
        })?),
    };
    let spec = Spec {
        group_by,
        budget: budget_column.map_or(Budget::Fixed(budget), Budget::Column),
        failure_files,
        unit,
        max_candidates,
        max_total_chars,
        threads,
    };
    // Import while attached (the exporter's stream may call into Python), then let go.
    let batches = table.into_reader()?.collect::<Result<Vec<_>, _>>();
    let batches = match batches {
        Ok(batches) => batches,
        Err(e) => {
            let problem = format!("cannot be imported as Arrow data: {e}");
            let made = py
                .import("bugcontext.core.errors")?
                .getattr("InvalidInputError")?
                .call1(("table", problem))?;
            return Err(PyErr::from_value(made));
        }
    };
    let outcome = py.detach(|| columnar::build_table(&batches, &spec));
    drop(batches);
    match outcome {
        Ok(out) => {
            let decisions = PyTable::try_new(vec![out.decisions.clone()], out.decisions.schema())?;
            let groups = PyTable::try_new(vec![out.groups.clone()], out.groups.schema())?;
            Ok((
                decisions.into_pyobject(py)?.into_any(),
                groups.into_pyobject(py)?.into_any(),
            ))
        }
        Err(e) => {
            let (kind, limit) = match e.kind {
                ErrorKind::Invalid => ("invalid", None),
                ErrorKind::Limit(found) => {
                    ("limit", Some((found.name, found.value, found.maximum)))
                }
            };
            let problem = match e.problem {
                Problem::Text(t) => t,
                Problem::Reason(given) => format!(
                    "must be one of 'failure', 'reference', 'search', got {}",
                    PyString::new(py, &given).repr()?
                ),
            };
            let made = py
                .import("bugcontext.batch.table")?
                .getattr("_table_error")?
                .call1((kind, e.field, problem, e.row, e.local, e.key_row, limit))?;
            Err(PyErr::from_value(made))
        }
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build_table, m)?)
}
