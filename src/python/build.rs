//! The build entry point: read and cost the candidates (`prepare`), run the engine with the
//! GIL released, and make the result from the caller's own objects (`assemble`).

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use pyo3::{Borrowed, ffi};

use crate::engine::{self, Reason, Row};

use super::costing;
use super::guard::guard;
use super::tokens;

use super::candidate::Candidate;
use super::objects::{GcPause, surrogate_key, untrack};
use super::reader::{Item, Paths, Reader};
use super::result::{BuildResult, Omissions};
use super::verify::mark_stale;

/// Candidates ahead of the reader, in list positions: the object itself at `FAR`, the objects
/// its fields point to at `NEAR` (by then the candidate is in cache, so its fields can be read).
const FAR: usize = 16;

const NEAR: usize = 8;

/// Hint the CPU to load what the reader will touch a few candidates from now.
///
/// Reading a candidate is bound by memory latency, not arithmetic: its path, lines, content and
/// score are separate heap objects, each a likely cache miss. Software prefetch overlaps those
/// misses. It is only a hint: it never changes what is read, and it is a no-op off x86-64.
#[inline(always)]
fn prefetch_ahead(list: &Bound<'_, PyList>, index: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let touch = |ptr: *const ffi::PyObject| {
            // SAFETY: a prefetch never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast::<i8>()) }
        };
        // Read afresh at every call: code run by an earlier candidate may have resized the list.
        let len = list.len();
        // SAFETY: in bounds; the list holds a reference to the item for the whole call.
        let item = |i: usize| {
            (i < len).then(|| unsafe { ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t) })
        };
        if let Some(far) = item(index + FAR) {
            touch(far);
            // The Rust fields of a pyclass follow the object header, often on the next line.
            touch(far.wrapping_byte_add(64));
        }
        if let Some(near) = item(index + NEAR) {
            // SAFETY: `near` is a live object owned by the list (see above).
            let near = unsafe { Borrowed::from_ptr(list.py(), near) };
            if let Ok(c) = near.cast::<Candidate>() {
                let c = c.get();
                // Not the path: it is looked up by address, and usually shared.
                for field in [&c.start, &c.end, &c.content, &c.score] {
                    touch(field.as_ptr());
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (list, index);
}

/// Candidates read between two checks for a pending signal (Ctrl-C): often enough that a
/// `KeyboardInterrupt` is raised within milliseconds, rarely enough to cost nothing measurable.
const SIGNAL_EVERY: usize = 4096;

/// Run the Python signal handlers now and then; a handler that raises (SIGINT raises
/// `KeyboardInterrupt`) ends the build with that exception, nothing half-written.
#[inline(always)]
fn check_signals(py: Python<'_>, index: usize) -> PyResult<()> {
    if index % SIGNAL_EVERY == SIGNAL_EVERY - 1 {
        py.check_signals()?;
    }
    Ok(())
}

/// One input read and costed, ready for the engine: everything the engine needs is in `job`,
/// plain Rust data, so it can run with the GIL released (on another thread too).
pub(crate) struct Prepared<'py> {
    items: Vec<Item<'py>>,
    /// Content lengths when the cost is something else (see `costing::apply`).
    lengths: Option<Vec<u64>>,
    failure_files: Vec<Bound<'py, PyString>>,
    /// Per failing file, the input indices of its failure windows (see `failure_windows`).
    windows: Vec<Vec<u32>>,
    cost: Bound<'py, PyAny>,
    budget_obj: Py<PyAny>,
    /// What the engine reads.
    pub(crate) job: Job,
}

/// The engine's input for one build: no Python object, so it can cross to other threads while
/// detached.
#[derive(Default)]
pub(crate) struct Job {
    rows: Vec<Row>,
    failure_ids: Vec<u32>,
    budget: u64,
    n_paths: usize,
    /// Number of distinct groups (0: no candidate has a group).
    n_groups: usize,
    /// Number of stale rows (0 without a `verify` reader).
    n_stale: usize,
}

impl Job {
    /// Rank and pack (groups packed whole when some candidate has one; stale rows omitted).
    pub(crate) fn select(&self) -> engine::Selection {
        if self.n_groups == 0 && self.n_stale == 0 {
            engine::build(&self.rows, &self.failure_ids, self.budget, self.n_paths)
        } else {
            engine::build_groups(
                &self.rows,
                &self.failure_ids,
                self.budget,
                self.n_paths,
                self.n_groups,
            )
        }
    }
}

/// Read, validate and cost the candidates of one input (attached: this reads Python objects).
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare<'py>(
    py: Python<'py>,
    candidates: &Bound<'py, PyAny>,
    budget: u64,
    failure_files: Vec<Bound<'py, PyString>>,
    max_total_chars: u64,
    cost: Bound<'py, PyAny>,
    budget_obj: Py<PyAny>,
    counter: Option<&Bound<'py, tokens::TokenCounter>>,
    verify: Option<&Bound<'py, PyAny>>,
) -> PyResult<Prepared<'py>> {
    let n = candidates.len()?;
    if u32::try_from(n).is_err() {
        return Err(PyValueError::new_err("more than 2**32 - 1 candidates"));
    }
    let mut reader = Reader::new(n, max_total_chars);
    if let Ok(list) = candidates.cast_exact::<PyList>() {
        for (index, obj) in list.iter().enumerate() {
            prefetch_ahead(list, index);
            reader.read(&obj, index)?;
            check_signals(py, index)?;
        }
    } else {
        for (index, obj) in candidates.try_iter()?.enumerate() {
            reader.read(&obj?, index)?;
            check_signals(py, index)?;
        }
    }

    // The failing files that some candidate comes from, as path ids, in error order.
    let mut failure_ids = Vec::with_capacity(failure_files.len());
    for f in &failure_files {
        let id = match f.to_str() {
            Ok(s) => reader.paths.ids.get(s.as_bytes()).copied(),
            Err(_) => reader.paths.ids.get(surrogate_key(f)?.as_slice()).copied(),
        };
        failure_ids.extend(id);
    }
    let n_groups = reader.n_groups();
    let mut rows = reader.rows;
    let n_stale = match verify {
        Some(verify) => mark_stale(verify, &mut rows, &reader.items, reader.paths.ids.len())?,
        None => 0,
    };
    let counter = counter.map(Bound::get);
    let n_paths = reader.paths.ids.len();
    let mut failing = vec![false; n_paths];
    for &id in &failure_ids {
        failing[id as usize] = true;
    }
    let windows = failure_windows(&rows, &failure_files, &reader.paths)?;
    let lengths = costing::apply(py, &cost, counter, &mut rows, &reader.items, &failing)?;
    Ok(Prepared {
        items: reader.items,
        lengths,
        failure_files,
        windows,
        cost,
        budget_obj,
        job: Job {
            rows,
            failure_ids,
            budget,
            n_paths,
            n_groups,
            n_stale,
        },
    })
}

/// The engine's result for one prepared input, from the caller's own objects (attached).
pub(crate) fn assemble<'py>(
    py: Python<'py>,
    prepared: Prepared<'py>,
    selection: engine::Selection,
) -> PyResult<(BuildResult, Vec<u32>, Vec<Vec<u32>>)> {
    let _pause = GcPause::new(py);
    let mut fresh = prepared.items;
    let mut items = Vec::with_capacity(selection.selected.len());
    for (n, &index) in selection.selected.iter().enumerate() {
        check_signals(py, n)?;
        // Each index is selected once, so its new `Candidate` can be moved out.
        items.push(
            match std::mem::replace(&mut fresh[index as usize], Item::Taken) {
                Item::Same(obj) => obj,
                Item::New(c) => {
                    let atomic = c.holds_only_atomic_values(py);
                    let obj = Bound::new(py, c)?.into_any();
                    if atomic {
                        untrack(&obj);
                    }
                    obj
                }
                Item::Taken => {
                    return Err(PyRuntimeError::new_err(
                        "bugcontext: an index was selected twice",
                    ));
                }
            },
        );
    }
    let used_chars = match &prepared.lengths {
        None => selection.used,
        Some(lengths) => selection
            .selected
            .iter()
            .map(|&i| lengths[i as usize])
            .sum(),
    };
    let result = BuildResult {
        items: PyTuple::new(py, items)?.unbind(),
        selected: PyTuple::new(py, &selection.selected)?.unbind(),
        used_chars,
        truncated: !selection.omitted.is_empty(),
        omitted: Omissions::lazy(selection.omitted),
        failure_files: PyTuple::new(py, prepared.failure_files)?.unbind(),
        cost: prepared.cost.unbind(),
        budget: prepared.budget_obj,
        used: selection.used,
        blocks: PyTuple::empty(py).unbind(),
        missing_critical: PyTuple::empty(py).unbind(),
        digest: std::sync::OnceLock::new(),
    };
    Ok((result, selection.ranks, prepared.windows))
}

/// Per failing file (parallel to `failure_files`), the input indices of its failure windows:
/// the candidates from that file with reason `failure`, in input order.
fn failure_windows(
    rows: &[Row],
    failure_files: &[Bound<'_, PyString>],
    paths: &Paths<'_>,
) -> PyResult<Vec<Vec<u32>>> {
    let mut windows = vec![Vec::new(); failure_files.len()];
    let mut place = vec![u32::MAX; paths.ids.len()];
    for (i, f) in failure_files.iter().enumerate() {
        let id = match f.to_str() {
            Ok(s) => paths.ids.get(s.as_bytes()).copied(),
            Err(_) => paths.ids.get(surrogate_key(f)?.as_slice()).copied(),
        };
        if let Some(id) = id
            && place[id as usize] == u32::MAX
        {
            place[id as usize] = i as u32;
        }
    }
    if windows.is_empty() {
        return Ok(windows);
    }
    for (row, index) in rows.iter().zip(0u32..) {
        let at = place[row.path as usize];
        if at != u32::MAX && row.reason == Reason::Failure {
            windows[at as usize].push(index);
        }
    }
    Ok(windows)
}

/// Validate, rank and pack. Called by `bugcontext.ContextBuilder.build` after the top
/// level of the input was checked by `bugcontext.core._input.normalize_input`.
///
/// `candidates` is a list or tuple; `budget` the budget in the cost's unit (`budget_obj` as
/// given); `failure_files` the canonical failing files; `max_total_chars` the total-content
/// limit; `counter` the builder's token counter for the cost's encoding, or `None`; `verify`
/// a reader `path -> bytes | None` whose files the candidates are checked against (stale ones
/// omitted, see `mark_stale`), or `None`.
/// A pending signal (Ctrl-C) is honoured while candidates are read, costed and returned.
#[pyfunction]
#[pyo3(signature = (candidates, budget, failure_files, max_total_chars, cost, budget_obj, counter, verify=None))]
#[allow(clippy::too_many_arguments)]
fn build<'py>(
    py: Python<'py>,
    candidates: &Bound<'py, PyAny>,
    budget: u64,
    failure_files: Vec<Bound<'py, PyString>>,
    max_total_chars: u64,
    cost: Bound<'py, PyAny>,
    budget_obj: Py<PyAny>,
    counter: Option<Bound<'py, tokens::TokenCounter>>,
    verify: Option<Bound<'py, PyAny>>,
) -> PyResult<(BuildResult, Vec<u32>, Vec<Vec<u32>>)> {
    guard("build", || {
        let prepared = prepare(
            py,
            candidates,
            budget,
            failure_files,
            max_total_chars,
            cost,
            budget_obj,
            counter.as_ref(),
            verify.as_ref(),
        )?;
        let job = &prepared.job;
        let selection = py.detach(|| job.select());
        py.check_signals()?;
        assemble(py, prepared, selection)
    })
}

/// Add `build` to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build, m)?)?;
    Ok(())
}
