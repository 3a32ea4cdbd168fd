//! `build_many`: many inputs in one call, the engine run for all of them in parallel.
//!
//! Three phases, window by window (a window: inputs read until [`WINDOW_ROWS`] candidates and
//! at least `threads` inputs): (1) attached, each input in order is checked at the top level
//! (by the Python function given) and its candidates read and costed into compact rows,
//! exactly as `build` does; (2) detached (GIL released), the engine ranks and packs every input
//! of the window on scoped threads; (3) attached, each result is built from the caller's own
//! objects. The results are those of `build` called on each input in turn, errors included:
//! phase 1 reads the inputs in the same order and stops at the same first error (or, when
//! errors are returned, records the exception in that input's place and goes on).

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::build::{Job, Prepared, assemble, prepare};
use super::guard::guard;
use super::tokens::TokenCounter;
use crate::engine::Selection;

/// Candidates read before the engine runs on what was read (with at least `threads` inputs):
/// the inputs are built window by window, so that the caller's objects of a window are still in
/// the CPU caches when its results are built and its references dropped, as in a loop of
/// `build`; the engine runs in parallel across the inputs of a window.
const WINDOW_ROWS: usize = 8192;

/// The arguments of `build` for one input, as returned by the top-level check.
type Args<'py> = (
    Bound<'py, PyAny>,
    u64,
    Vec<Bound<'py, PyString>>,
    u64,
    Bound<'py, PyAny>,
    Py<PyAny>,
    Option<Bound<'py, TokenCounter>>,
);

/// Whether `err` is returned in its input's place (an `Exception`) rather than raised: a
/// `KeyboardInterrupt`, `SystemExit` or other `BaseException` always ends the call.
fn returnable(py: Python<'_>, err: &PyErr, return_errors: bool) -> bool {
    return_errors && err.is_instance_of::<PyException>(py)
}

/// Read and cost one input: `check(input)` gives `build`'s arguments, then the candidates are
/// read.
fn read_one<'py>(
    py: Python<'py>,
    check: &Bound<'py, PyAny>,
    input: &Bound<'py, PyAny>,
) -> PyResult<Prepared<'py>> {
    let args: Args<'py> = check.call1((input,))?.extract()?;
    let (candidates, budget, failure_files, max_total_chars, cost, budget_obj, counter) = args;
    prepare(
        py,
        &candidates,
        budget,
        failure_files,
        max_total_chars,
        cost,
        budget_obj,
        counter.as_ref(),
        None,
    )
}

/// Rank and pack every prepared input on up to `threads` threads (work is taken input by input
/// from a shared counter). Touches no Python object: call it detached.
fn select_all(jobs: &[Option<Job<'_>>], threads: usize) -> Vec<Option<Selection>> {
    let n = jobs.len();
    let workers = threads.min(n).max(1);
    if workers == 1 {
        return jobs.iter().map(|job| job.map(Job::select)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut out: Vec<Option<Selection>> = (0..n).map(|_| None).collect();
    let done: Vec<Vec<(usize, Selection)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break mine;
                        }
                        if let Some(job) = jobs[i] {
                            mine.push((i, job.select()));
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    for (i, selection) in done.into_iter().flatten() {
        out[i] = Some(selection);
    }
    out
}

/// Build many inputs: `inputs` (a list), `check` (the top-level check: input -> the arguments
/// of `build`), `threads` (>= 1) and `return_errors`. Returns a list with, per input, the
/// `(BuildResult, ranks, windows)` triple of `build` or, when `return_errors`, the exception (an
/// `Exception` instance) its build raised.
#[pyfunction]
#[pyo3(signature = (inputs, check, threads, return_errors))]
fn build_many<'py>(
    py: Python<'py>,
    inputs: &Bound<'py, PyList>,
    check: &Bound<'py, PyAny>,
    threads: usize,
    return_errors: bool,
) -> PyResult<Bound<'py, PyList>> {
    guard("build_many", || {
        if threads == 0 {
            return Err(PyValueError::new_err("threads must be >= 1"));
        }
        // A snapshot of the list: the caller's code run while reading may change it.
        let inputs: Vec<Bound<'py, PyAny>> = inputs.iter().collect();
        let out = PyList::empty(py);
        let mut window: Vec<Result<Prepared<'py>, PyErr>> = Vec::new();
        let mut rows = 0usize;
        for (position, input) in inputs.iter().enumerate() {
            // Phase 1: read, in input order.
            py.check_signals()?;
            match read_one(py, check, input) {
                Ok(p) => {
                    rows += p.job().len();
                    window.push(Ok(p));
                }
                Err(err) if returnable(py, &err, return_errors) => window.push(Err(err)),
                Err(err) => return Err(err),
            }
            let last = position + 1 == inputs.len();
            if last || (rows >= WINDOW_ROWS && window.len() >= threads) {
                build_window(py, std::mem::take(&mut window), threads, &out)?;
                rows = 0;
            }
        }
        Ok(out)
    })
}

/// Phases 2 and 3 for one window of read inputs: the engine for all of them, detached and in
/// parallel; then their results, in input order, appended to `out`.
fn build_window<'py>(
    py: Python<'py>,
    window: Vec<Result<Prepared<'py>, PyErr>>,
    threads: usize,
    out: &Bound<'py, PyList>,
) -> PyResult<()> {
    let jobs: Vec<Option<Job<'_>>> = window
        .iter()
        .map(|p| p.as_ref().ok().map(Prepared::job))
        .collect();
    let selections = py.detach(|| select_all(&jobs, threads));
    drop(jobs);
    py.check_signals()?;

    for (p, selection) in window.into_iter().zip(selections) {
        match (p, selection) {
            (Ok(p), Some(selection)) => {
                let (result, ranks, windows) = assemble(py, p, selection)?;
                out.append(PyTuple::new(
                    py,
                    [
                        Bound::new(py, result)?.into_any(),
                        PyList::new(py, ranks)?.into_any(),
                        windows.into_pyobject(py)?.into_any(),
                    ],
                )?)?;
            }
            (Err(err), _) => out.append(err.into_value(py))?,
            (Ok(_), None) => {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "bugcontext: an input was not built",
                ));
            }
        }
    }
    Ok(())
}

/// Register `build_many` on the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build_many, m)?)?;
    Ok(())
}
