//! The result classes: `Omission`, `Block` and `BuildResult` (its digest is computed in
//! `byte_form.rs`).

use pyo3::basic::CompareOp;
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use super::guard::guard;

use super::objects::{GcPause, compare, untrack};
use crate::engine::{self, Omitted};

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Why {
    Overlap,
    Budget,
    Group,
    Stale,
}

/// Why a candidate was left out: its input `index`, its 0-based `rank` in the ranked order,
/// `reason` (`"overlap"`, `"budget"`, `"group"` or `"stale"`), for an overlap the input index of
/// the selected window it hits (`overlaps`), and for a group that did not fit the input index of
/// the member at which its cost went past the budget (`member`). A `"stale"` candidate's content
/// is no longer what its file holds at its line range (the build's `verify` reader said so).
#[pyclass(frozen, eq, hash, module = "bugcontext", name = "Omission")]
#[derive(PartialEq, Eq, Hash)]
pub struct Omission {
    /// Input index of the omitted candidate.
    #[pyo3(get)]
    pub(crate) index: usize,
    /// Its 0-based position in the ranked order.
    #[pyo3(get)]
    pub(crate) rank: usize,
    pub(crate) why: Why,
    /// For an overlap, the input index of the selected window it hits; else `None`.
    #[pyo3(get)]
    pub(crate) overlaps: Option<usize>,
    /// For a group omission, the input index of the member that did not fit; else `None`.
    #[pyo3(get)]
    pub(crate) member: Option<usize>,
}

#[pymethods]
impl Omission {
    #[new]
    #[pyo3(signature = (index, rank, reason, overlaps=None, member=None))]
    fn new(
        index: usize,
        rank: usize,
        reason: &str,
        overlaps: Option<usize>,
        member: Option<usize>,
    ) -> PyResult<Self> {
        guard("Omission.__new__", || {
            match (reason, member) {
                ("group", None) => {
                    return Err(PyValueError::new_err(
                        "a group omission names the member that did not fit",
                    ));
                }
                ("group", Some(_)) | (_, None) => {}
                (_, Some(_)) => {
                    return Err(PyValueError::new_err(
                        "only a group omission names a member",
                    ));
                }
            }
            let why = match (reason, overlaps) {
                ("overlap", Some(_)) => Why::Overlap,
                ("budget", None) => Why::Budget,
                ("group", None) => Why::Group,
                ("stale", None) => Why::Stale,
                ("stale", Some(_)) => {
                    return Err(PyValueError::new_err("a stale omission overlaps nothing"));
                }
                ("overlap", None) => {
                    return Err(PyValueError::new_err(
                        "an overlap omission names the window it hits",
                    ));
                }
                ("budget", Some(_)) => {
                    return Err(PyValueError::new_err("a budget omission overlaps nothing"));
                }
                ("group", Some(_)) => {
                    return Err(PyValueError::new_err("a group omission overlaps nothing"));
                }
                _ => {
                    return Err(PyValueError::new_err(
                        "reason must be 'overlap', 'budget', 'group' or 'stale'",
                    ));
                }
            };
            Ok(Self {
                index,
                rank,
                why,
                overlaps,
                member,
            })
        })
    }

    /// Why it was left out: `"overlap"`, `"budget"`, `"group"` or `"stale"`.
    #[getter]
    fn reason<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        guard("Omission.reason", || {
            Ok({
                match self.why {
                    Why::Overlap => intern!(py, "overlap").clone(),
                    Why::Budget => intern!(py, "budget").clone(),
                    Why::Group => intern!(py, "group").clone(),
                    Why::Stale => intern!(py, "stale").clone(),
                }
            })
        })
    }

    /// The JSON form: `index`, `rank`, `reason`, `overlaps` only for an overlap and `member`
    /// only for a group.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard("Omission.to_dict", || {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "index"), self.index)?;
            d.set_item(intern!(py, "rank"), self.rank)?;
            d.set_item(intern!(py, "reason"), self.reason(py)?)?;
            if let Some(overlaps) = self.overlaps {
                d.set_item(intern!(py, "overlaps"), overlaps)?;
            }
            if let Some(member) = self.member {
                d.set_item(intern!(py, "member"), member)?;
            }
            Ok(d)
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard("Omission.__repr__", || {
            Ok({
                let overlaps = self
                    .overlaps
                    .map_or(String::new(), |o| format!(", overlaps={o}"));
                let member = self
                    .member
                    .map_or(String::new(), |m| format!(", member={m}"));
                format!(
                    "Omission(index={}, rank={}, reason='{}'{overlaps}{member})",
                    self.index,
                    self.rank,
                    self.reason(py)?
                )
            })
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        guard("Omission.__reduce__", || {
            let me = slf.get();
            let args = (
                me.index,
                me.rank,
                me.reason(slf.py())?,
                me.overlaps,
                me.member,
            )
                .into_pyobject(slf.py())?;
            Ok((slf.get_type(), args))
        })
    }
}

/// Where a selected item stands in the rendered section: its input `index`, its selection
/// `rank` (position in `items`) and its render `position`.
#[pyclass(frozen, eq, hash, module = "bugcontext", name = "Block")]
#[derive(PartialEq, Eq, Hash)]
pub struct Block {
    /// Input index of the item.
    #[pyo3(get)]
    index: usize,
    /// Its selection rank (position in `BuildResult.items`).
    #[pyo3(get)]
    rank: usize,
    /// Its 0-based position in the rendered section.
    #[pyo3(get)]
    position: usize,
}

#[pymethods]
impl Block {
    #[new]
    fn new(index: usize, rank: usize, position: usize) -> PyResult<Self> {
        guard("Block.__new__", || {
            Ok({
                Self {
                    index,
                    rank,
                    position,
                }
            })
        })
    }

    /// The JSON form: `index`, `rank`, `position`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard("Block.to_dict", || {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "index"), self.index)?;
            d.set_item(intern!(py, "rank"), self.rank)?;
            d.set_item(intern!(py, "position"), self.position)?;
            Ok(d)
        })
    }

    fn __repr__(&self) -> PyResult<String> {
        guard("Block.__repr__", || {
            Ok({
                format!(
                    "Block(index={}, rank={}, position={})",
                    self.index, self.rank, self.position
                )
            })
        })
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        guard("Block.__reduce__", || {
            let me = slf.get();
            let args = (me.index, me.rank, me.position).into_pyobject(slf.py())?;
            Ok((slf.get_type(), args))
        })
    }
}

/// What `build` returns: `items` (tuple of `Candidate`, selection order), `selected` (their
/// input indices), `used_chars` (sum of their content lengths, in characters), `truncated`
/// (something was omitted), `omitted` (tuple of `Omission`, rank order), `failure_file` (the
/// canonical failure file or `None`), `cost` (the `Cost` model), `budget` and `used` (in the
/// cost's unit; with a template, `used` is the cost of the whole rendered section), `blocks`
/// (with a template, one `Block` per item in render order; else empty), `missing_critical`
/// (the failing files whose failure windows were all left out) and `digest` (SHA-256 of the
/// selection in the byte form of `bugcontext.core.digest`, computed on first use).
#[pyclass(frozen, module = "bugcontext", name = "BuildResult")]
pub struct BuildResult {
    /// The selected candidates (tuple of `Candidate`), in selection order, paths canonical.
    #[pyo3(get)]
    pub(crate) items: Py<PyTuple>,
    /// Input indices of `items` (tuple of `int`).
    #[pyo3(get)]
    pub(crate) selected: Py<PyTuple>,
    /// Characters (code points) of the selected contents, summed.
    #[pyo3(get)]
    pub(crate) used_chars: u64,
    /// True exactly when something was omitted.
    #[pyo3(get)]
    pub(crate) truncated: bool,
    /// One `Omission` per left-out candidate (tuple), in rank order: made on first use.
    pub(crate) omitted: Omissions,
    /// The canonical failing files (tuple of `str`), in error order.
    #[pyo3(get)]
    pub(crate) failure_files: Py<PyTuple>,
    /// The cost model (`bugcontext.Cost`) the budget was counted in.
    #[pyo3(get)]
    pub(crate) cost: Py<PyAny>,
    /// The budget (`int`), in the cost model's unit.
    #[pyo3(get)]
    pub(crate) budget: Py<PyAny>,
    /// What the selection costs in that unit (with a template: the whole rendered section).
    #[pyo3(get)]
    pub(crate) used: u64,
    /// With a template, one `Block` per item in render order; else empty.
    #[pyo3(get)]
    pub(crate) blocks: Py<PyTuple>,
    /// The failing files whose failure windows were all left out (tuple of
    /// `bugcontext.MissingEvidence`, in error order).
    #[pyo3(get)]
    pub(crate) missing_critical: Py<PyTuple>,
    /// The digest, computed on first use (see `bugcontext.core.digest`).
    pub(crate) digest: std::sync::OnceLock<Py<PyString>>,
}

impl BuildResult {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (
            self.items.bind(py),
            self.selected.bind(py),
            self.used_chars,
            self.truncated,
            self.omitted.get(py)?,
            self.failure_files.bind(py),
            self.cost.bind(py),
            self.budget.bind(py),
            self.used,
            self.blocks.bind(py),
            self.missing_critical.bind(py),
        )
            .into_pyobject(py)
    }
}

/// The omissions of a result: the engine's records, made into a tuple of `Omission` objects on
/// first use (most callers of `build` never look at them, and a large build omits most of its
/// candidates), then that same tuple at every use.
pub(crate) struct Omissions {
    records: Box<[engine::Omission]>,
    made: std::sync::OnceLock<Py<PyTuple>>,
}

impl Omissions {
    /// The engine's records, in rank order, made into objects on first use.
    pub(crate) fn lazy(records: Vec<engine::Omission>) -> Self {
        Self {
            records: records.into_boxed_slice(),
            made: std::sync::OnceLock::new(),
        }
    }

    /// A tuple of `Omission` objects given as is (a result made by hand).
    fn made(tuple: Py<PyTuple>) -> Self {
        Self {
            records: Box::default(),
            made: std::sync::OnceLock::from(tuple),
        }
    }

    fn len(&self, py: Python<'_>) -> usize {
        self.made
            .get()
            .map_or(self.records.len(), |t| t.bind(py).len())
    }

    /// The tuple, made now if it was not yet.
    pub(crate) fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        if let Some(made) = self.made.get() {
            return Ok(made.bind(py).clone());
        }
        let _pause = GcPause::new(py);
        let mut objects = Vec::with_capacity(self.records.len());
        for o in &self.records {
            let (why, overlaps, member) = match o.why {
                Omitted::Overlap(blocker) => (Why::Overlap, Some(blocker as usize), None),
                Omitted::Budget => (Why::Budget, None, None),
                Omitted::Group(member) => (Why::Group, None, Some(member as usize)),
                Omitted::Stale => (Why::Stale, None, None),
            };
            let omission = Omission {
                index: o.index as usize,
                rank: o.rank as usize,
                why,
                overlaps,
                member,
            };
            let obj = Bound::new(py, omission)?;
            untrack(&obj); // it holds only integers
            objects.push(obj);
        }
        let tuple = PyTuple::new(py, objects)?.unbind();
        // Another thread may have made it meanwhile (the GIL can change hands while objects
        // are made): every caller gets the first one made.
        Ok(self.made.get_or_init(|| tuple).bind(py).clone())
    }
}

fn to_tuple<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    match value.cast::<PyTuple>() {
        Ok(t) => Ok(t.clone()),
        Err(_) => PyTuple::new(value.py(), value.try_iter()?.collect::<PyResult<Vec<_>>>()?),
    }
}

fn dicts<'py>(py: Python<'py>, items: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for item in items.iter() {
        out.append(item.call_method0(intern!(py, "to_dict"))?)?;
    }
    Ok(out)
}

#[pymethods]
impl BuildResult {
    #[new]
    #[pyo3(signature = (items, selected, used_chars, truncated, omitted, failure_files, cost, budget, used, blocks, missing_critical=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        items: &Bound<'_, PyAny>,
        selected: &Bound<'_, PyAny>,
        used_chars: u64,
        truncated: bool,
        omitted: &Bound<'_, PyAny>,
        failure_files: &Bound<'_, PyAny>,
        cost: Py<PyAny>,
        budget: Py<PyAny>,
        used: u64,
        blocks: &Bound<'_, PyAny>,
        missing_critical: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        guard("BuildResult.__new__", || {
            let missing_critical = match missing_critical {
                Some(m) => to_tuple(m)?,
                None => PyTuple::empty(items.py()),
            };
            Ok(Self {
                items: to_tuple(items)?.unbind(),
                selected: to_tuple(selected)?.unbind(),
                used_chars,
                truncated,
                omitted: Omissions::made(to_tuple(omitted)?.unbind()),
                failure_files: to_tuple(failure_files)?.unbind(),
                cost,
                budget,
                used,
                blocks: to_tuple(blocks)?.unbind(),
                missing_critical: missing_critical.unbind(),
                digest: std::sync::OnceLock::new(),
            })
        })
    }

    /// The result's digest (64 lower-case hex digits): SHA-256 over the items in selection
    /// order (canonical path, line range, SHA-256 of the content, reason), the failing files,
    /// the cost model and the policy version, in the byte form of `bugcontext.core.digest`.
    /// Computed on first use; equal selections give equal digests in every process and from
    /// both engines. Raises `TypeError` for a hand-made result whose items are not text and
    /// integers.
    #[getter]
    fn digest<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        guard("BuildResult.digest", || {
            if let Some(d) = self.digest.get() {
                return Ok(d.bind(py).clone());
            }
            let made = PyString::new(py, &self.compute_digest(py)?).unbind();
            Ok(self.digest.get_or_init(|| made).bind(py).clone())
        })
    }

    /// One `Omission` per left-out candidate (tuple), in rank order.
    #[getter]
    fn omitted<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        guard("BuildResult.omitted", || self.omitted.get(py))
    }

    /// The first failing file (the deepest project frame's), or `None`.
    #[getter]
    fn failure_file<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard("BuildResult.failure_file", || {
            Ok({
                let files = self.failure_files.bind(py);
                files
                    .get_item(0)
                    .unwrap_or_else(|_| py.None().into_bound(py))
            })
        })
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.items)?;
        visit.call(&self.selected)?;
        if let Some(omitted) = self.omitted.made.get() {
            visit.call(omitted)?;
        }
        visit.call(&self.failure_files)?;
        visit.call(&self.cost)?;
        visit.call(&self.budget)?;
        visit.call(&self.blocks)?;
        visit.call(&self.missing_critical)?;
        if let Some(d) = self.digest.get() {
            visit.call(d)?;
        }
        Ok(())
    }

    /// The JSON form: `{"items": [...], "selected": [...], "used_chars": N, "truncated": bool,
    /// "omitted": [...], "failure_file": str|null, "cost": {...}, "budget": N, "used": N,
    /// "blocks": [...], "missing_critical": [...], "digest": "<64 hex digits>"}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard("BuildResult.to_dict", || {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "items"), dicts(py, self.items.bind(py))?)?;
            d.set_item(
                intern!(py, "selected"),
                PyList::new(py, self.selected.bind(py))?,
            )?;
            d.set_item(intern!(py, "used_chars"), self.used_chars)?;
            d.set_item(intern!(py, "truncated"), self.truncated)?;
            d.set_item(intern!(py, "omitted"), dicts(py, &self.omitted.get(py)?)?)?;
            d.set_item(intern!(py, "failure_file"), self.failure_file(py)?)?;
            d.set_item(
                intern!(py, "failure_files"),
                PyList::new(py, self.failure_files.bind(py))?,
            )?;
            d.set_item(
                intern!(py, "cost"),
                self.cost.bind(py).call_method0(intern!(py, "to_dict"))?,
            )?;
            d.set_item(intern!(py, "budget"), &self.budget)?;
            d.set_item(intern!(py, "used"), self.used)?;
            d.set_item(intern!(py, "blocks"), dicts(py, self.blocks.bind(py))?)?;
            d.set_item(
                intern!(py, "missing_critical"),
                dicts(py, self.missing_critical.bind(py))?,
            )?;
            d.set_item(intern!(py, "digest"), self.digest(py)?)?;
            Ok(d)
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard("BuildResult.__repr__", || {
            Ok(format!(
                "BuildResult(selected={}, used={} of {} {}, truncated={}, omitted={} omissions)",
                self.selected.bind(py).repr()?,
                self.used,
                self.budget.bind(py).repr()?,
                self.cost.bind(py).getattr(intern!(py, "unit"))?.str()?,
                if self.truncated { "True" } else { "False" },
                self.omitted.len(py)
            ))
        })
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        guard("BuildResult.__richcmp__", || {
            let py = other.py();
            let theirs = match other.cast::<BuildResult>() {
                Ok(r) => Some(r.get().fields(py)?),
                Err(_) => None,
            };
            compare(py, self.fields(py)?, theirs, op)
        })
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        guard("BuildResult.__hash__", || self.fields(py)?.hash())
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        guard("BuildResult.__reduce__", || {
            Ok((slf.get_type(), slf.get().fields(slf.py())?))
        })
    }
}
