//! `build_many`: many inputs in one call, the engine run on other threads while the next
//! inputs are read.
//!
//! A pipeline: (1) attached, the calling thread checks each input in order at the top level (by
//! the Python function given) and reads and costs its candidates into compact rows, exactly as
//! `build` does, and hands the rows to (2) up to `threads` ranking threads, which rank and pack
//! them without the GIL while the next inputs are read; (3) attached, as soon as the oldest
//! input's selection is back, its result is built from the caller's own objects and appended,
//! in input order. The results are those of `build` called on each input in turn, errors
//! included: phase 1 reads the inputs in the same order and stops at the same first error (or,
//! when errors are returned, records the exception in that input's place and goes on). With one
//! thread there is no pipeline: each input is read, ranked and built in turn.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use super::build::{Job, Prepared, assemble, prepare};
use super::guard::guard;
use super::tokens::TokenCounter;
use crate::engine::Selection;

/// Inputs read ahead of the oldest one not yet built, per ranking thread: enough to keep the
/// threads busy while the calling thread reads, few enough that an input's objects are still in
/// the CPU caches when its result is built, as in a loop of `build`.
const AHEAD_PER_THREAD: usize = 2;

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

/// What a ranking thread sends back: the input's position and its selection, or the panic it
/// raised (resumed on the calling thread, where the guard makes it an `InternalError`).
type Done = (usize, std::thread::Result<Selection>);

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
        if threads == 1 || inputs.len() <= 1 {
            for input in &inputs {
                py.check_signals()?;
                match read_one(py, check, input) {
                    Ok(prepared) => {
                        let job = &prepared.job;
                        let selection = py.detach(|| job.select());
                        py.check_signals()?;
                        append(py, prepared, selection, &out)?;
                    }
                    Err(err) if returnable(py, &err, return_errors) => {
                        out.append(err.into_value(py))?;
                    }
                    Err(err) => return Err(err),
                }
            }
            return Ok(out);
        }
        let workers = threads.min(inputs.len());
        let (jobs, queue) = channel::<(usize, Job)>();
        let queue = Mutex::new(queue);
        let (done, finished) = channel::<Done>();
        let finished = Mutex::new(finished);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                let done = done.clone();
                let queue = &queue;
                scope.spawn(move || rank(queue, &done));
            }
            drop(done);
            let mut pipe = Pipe {
                waiting: VecDeque::new(),
                selections: (0..inputs.len()).map(|_| None).collect(),
                finished: &finished,
                ahead: workers * AHEAD_PER_THREAD,
            };
            // The queue is closed when `feed` returns (its sender dropped), which ends the
            // ranking threads once they are done with what they hold.
            pipe.feed(py, &inputs, check, return_errors, jobs, &out)
        })?;
        Ok(out)
    })
}

/// A ranking thread: rank and pack the jobs of the queue until it is closed.
fn rank(queue: &Mutex<Receiver<(usize, Job)>>, done: &Sender<Done>) {
    loop {
        let next = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok((position, job)) = next else { return };
        let selection = catch_unwind(AssertUnwindSafe(|| job.select()));
        drop(job);
        if done.send((position, selection)).is_err() {
            return;
        }
    }
}

/// The calling thread's side of the pipeline: the inputs read and not yet built, oldest first.
struct Pipe<'a, 'py> {
    waiting: VecDeque<(usize, Result<Prepared<'py>, PyErr>)>,
    /// The selections back from the ranking threads, by input position, until built.
    selections: Vec<Option<Selection>>,
    finished: &'a Mutex<Receiver<Done>>,
    /// At most this many inputs are read ahead of the oldest one not yet built.
    ahead: usize,
}

impl<'py> Pipe<'_, 'py> {
    /// Read every input in order, sending its rows to the ranking threads and building the
    /// results that are ready in between; then build the rest.
    fn feed(
        &mut self,
        py: Python<'py>,
        inputs: &[Bound<'py, PyAny>],
        check: &Bound<'py, PyAny>,
        return_errors: bool,
        jobs: Sender<(usize, Job)>,
        out: &Bound<'py, PyList>,
    ) -> PyResult<()> {
        for (position, input) in inputs.iter().enumerate() {
            py.check_signals()?;
            match read_one(py, check, input) {
                Ok(mut prepared) => {
                    let job = std::mem::take(&mut prepared.job);
                    jobs.send((position, job))
                        .map_err(|_| PyRuntimeError::new_err("bugcontext: no ranking thread"))?;
                    self.waiting.push_back((position, Ok(prepared)));
                }
                Err(err) if returnable(py, &err, return_errors) => {
                    self.waiting.push_back((position, Err(err)));
                }
                Err(err) => return Err(err),
            }
            self.collect(None)?;
            self.build_ready(py, out, self.ahead)?;
        }
        drop(jobs);
        self.build_ready(py, out, 0)
    }

    /// Take the selections that are back; with `wait`, wait (detached) for that input's.
    fn collect(&mut self, wait: Option<(Python<'py>, usize)>) -> PyResult<()> {
        let finished = self.finished;
        let mut store = |(at, selection): Done| {
            let selection = selection.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            self.selections[at] = Some(selection);
        };
        if let Some((py, position)) = wait {
            loop {
                let next = py.detach(|| finished.lock().ok().map(|queue| queue.recv()));
                let Some(Ok(done)) = next else {
                    return Err(PyRuntimeError::new_err(
                        "bugcontext: an input was not built",
                    ));
                };
                let at = done.0;
                store(done);
                if at == position {
                    break;
                }
            }
        }
        if let Ok(queue) = finished.lock() {
            while let Ok(done) = queue.try_recv() {
                store(done);
            }
        }
        Ok(())
    }

    /// Build and append, in input order, the oldest inputs whose selections are back, waiting
    /// for them while more than `keep` inputs are read and not built.
    fn build_ready(
        &mut self,
        py: Python<'py>,
        out: &Bound<'py, PyList>,
        keep: usize,
    ) -> PyResult<()> {
        while let Some((position, _)) = self.waiting.front() {
            let position = *position;
            let ready = matches!(self.waiting.front(), Some((_, Err(_))))
                || self.selections[position].is_some();
            if !ready {
                if self.waiting.len() <= keep {
                    return Ok(());
                }
                self.collect(Some((py, position)))?;
            }
            let Some((_, prepared)) = self.waiting.pop_front() else {
                break;
            };
            match prepared {
                Ok(prepared) => {
                    let Some(selection) = self.selections[position].take() else {
                        return Err(PyRuntimeError::new_err(
                            "bugcontext: an input was not built",
                        ));
                    };
                    append(py, prepared, selection, out)?;
                }
                Err(err) => out.append(err.into_value(py))?,
            }
        }
        Ok(())
    }
}

/// The result of one input, from its selection, appended to `out` as `build` returns it.
fn append<'py>(
    py: Python<'py>,
    prepared: Prepared<'py>,
    selection: Selection,
    out: &Bound<'py, PyList>,
) -> PyResult<()> {
    let (result, ranks, windows) = assemble(py, prepared, selection)?;
    out.append(PyTuple::new(
        py,
        [
            Bound::new(py, result)?.into_any(),
            PyList::new(py, ranks)?.into_any(),
            windows.into_pyobject(py)?.into_any(),
        ],
    )?)
}

/// Register `build_many` on the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(build_many, m)?)?;
    Ok(())
}
