//! The PyO3 binding: the only place where Rust meets Python.
//!
//! `build` reads each candidate once, while attached to the interpreter, into a compact
//! [`Row`] (validating it exactly as `reference.py` does), then releases the GIL to rank and
//! pack with [`engine::build`], then builds the result from the caller's own objects: a
//! `Candidate` whose path is already canonical is returned as is, and its strings are never
//! copied. No panic can cross into Python: the engine has none on valid rows, and every
//! Python-side failure is a `PyErr`.

use std::borrow::Cow;

use pyo3::basic::CompareOp;
use pyo3::exceptions::{
    PyAttributeError, PyKeyError, PyOverflowError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PyString, PyTuple, PyType};
use pyo3::{Borrowed, IntoPyObjectExt, ffi, intern};
use pyo3::{PyTraverseError, PyVisit};
use rustc_hash::FxHashMap;

use crate::digest::{self, Form};
use crate::engine::{self, MAX_LINE, Omitted, Reason, Row};

use guard::guard;

mod batch;
mod costing;
mod guard;
mod render;
mod secrets;
mod table;
mod tokens;

/// Compare two field tuples for `==`/`!=`; other orderings are not defined.
fn compare(
    py: Python<'_>,
    mine: Bound<'_, PyTuple>,
    theirs: Option<Bound<'_, PyTuple>>,
    op: CompareOp,
) -> PyResult<Py<PyAny>> {
    let Some(theirs) = theirs else {
        return Ok(py.NotImplemented());
    };
    match op {
        CompareOp::Eq => mine.eq(theirs)?.into_py_any(py),
        CompareOp::Ne => mine.ne(theirs)?.into_py_any(py),
        _ => Ok(py.NotImplemented()),
    }
}

fn reprs(fields: &[(&str, &Bound<'_, PyAny>)]) -> PyResult<String> {
    let mut parts = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        parts.push(format!("{name}={}", value.repr()?));
    }
    Ok(parts.join(", "))
}

/// A proposed window: `Candidate(path: str, start: int, end: int, content: str, reason: str,
/// score: int | float)`, lines `start..end` of `path` (1-based, closed) with their text
/// `content`, why it was proposed (`reason`: "failure", "reference" or "search") and how
/// strongly (`score`, higher first). Immutable, compared by value, hashable, picklable. The
/// constructor does not validate: `build` does, naming the candidate's index and field.
#[pyclass(frozen, module = "bugcontext", name = "Candidate")]
pub struct Candidate {
    /// Repository-relative path (`str`; canonical in build results).
    #[pyo3(get)]
    path: Py<PyAny>,
    /// First line (`int`, 1-based, inclusive).
    #[pyo3(get)]
    start: Py<PyAny>,
    /// Last line (`int`, inclusive, `>= start`).
    #[pyo3(get)]
    end: Py<PyAny>,
    /// The text of lines `start..end` (`str`); its cost in characters is `len(content)`.
    #[pyo3(get)]
    content: Py<PyAny>,
    /// Why it was proposed: `"failure"`, `"reference"` or `"search"`.
    #[pyo3(get)]
    reason: Py<PyAny>,
    /// How strongly (`int` or finite `float`); higher ranks first within a reason.
    #[pyo3(get)]
    score: Py<PyAny>,
    /// The group it is packed with, whole or not at all (any hashable id), or `None`.
    #[pyo3(get)]
    group: Py<PyAny>,
    /// Provenance: SHA-256 (64 lower-case hex digits) of the bytes of the file the content was
    /// read from, or `None`.
    #[pyo3(get)]
    source_sha256: Py<PyAny>,
    /// Provenance: which source proposed it (a non-empty `str`, at most 256 characters: the
    /// parser, the reference analyser, the search tool, a plug-in), or `None`.
    #[pyo3(get)]
    source_id: Py<PyAny>,
}

impl Candidate {
    /// True when every field is an exact `str`, `int` or `float`: such a candidate can never be
    /// part of a reference cycle.
    fn holds_only_atomic_values(&self, py: Python<'_>) -> bool {
        let atomic = |v: &Py<PyAny>| {
            let v = v.bind(py);
            v.is_exact_instance_of::<PyString>()
                || v.is_exact_instance_of::<PyInt>()
                || v.is_exact_instance_of::<PyFloat>()
                || v.is_none()
        };
        [
            &self.path,
            &self.start,
            &self.end,
            &self.content,
            &self.reason,
            &self.score,
            &self.group,
            &self.source_sha256,
            &self.source_id,
        ]
        .into_iter()
        .all(atomic)
    }

    /// Whether it carries provenance (`source_sha256` or `source_id`).
    fn has_provenance(&self, py: Python<'_>) -> bool {
        !self.source_sha256.is_none(py) || !self.source_id.is_none(py)
    }

    /// The six fields, the group when there is one or when there is provenance, and
    /// `source_sha256`, `source_id` when there is provenance (so that a candidate without them
    /// compares, hashes and pickles exactly as before they existed).
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let six = [
            &self.path,
            &self.start,
            &self.end,
            &self.content,
            &self.reason,
            &self.score,
        ];
        let provenance = self.has_provenance(py);
        if self.group.is_none(py) && !provenance {
            return PyTuple::new(py, six);
        }
        let [a, b, c, d, e, f] = six;
        if !provenance {
            return PyTuple::new(py, [a, b, c, d, e, f, &self.group]);
        }
        PyTuple::new(
            py,
            [
                a,
                b,
                c,
                d,
                e,
                f,
                &self.group,
                &self.source_sha256,
                &self.source_id,
            ],
        )
    }

    fn six<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                &self.path,
                &self.start,
                &self.end,
                &self.content,
                &self.reason,
                &self.score,
            ],
        )
    }
}

#[pymethods]
impl Candidate {
    #[new]
    #[pyo3(signature = (path, start, end, content, reason, score, *, group=None, source_sha256=None, source_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: Py<PyAny>,
        start: Py<PyAny>,
        end: Py<PyAny>,
        content: Py<PyAny>,
        reason: Py<PyAny>,
        score: Py<PyAny>,
        group: Option<Py<PyAny>>,
        source_sha256: Option<Py<PyAny>>,
        source_id: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        guard("Candidate.__new__", || {
            Ok({
                Self {
                    path,
                    start,
                    end,
                    content,
                    reason,
                    score,
                    group: group.unwrap_or_else(|| py.None()),
                    source_sha256: source_sha256.unwrap_or_else(|| py.None()),
                    source_id: source_id.unwrap_or_else(|| py.None()),
                }
            })
        })
    }

    /// Let the cyclic GC see the fields: a field may be any object (the constructor does not
    /// validate), so a cycle through a `Candidate` must be collectable.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for field in [
            &self.path,
            &self.start,
            &self.end,
            &self.content,
            &self.reason,
            &self.score,
            &self.group,
            &self.source_sha256,
            &self.source_id,
        ] {
            visit.call(field)?;
        }
        Ok(())
    }

    #[classattr]
    fn __match_args__() -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    ) {
        ("path", "start", "end", "content", "reason", "score")
    }

    /// The JSON form: a dict with the six fields, and `group`, `source_sha256`, `source_id`
    /// each when it is not `None`. A group that is not a JSON scalar (a `str`, `int`, `bool`
    /// or finite `float` exactly) is written as its `repr`, so the form always serialises, in a
    /// canonical form that does not depend on the hash seed: the members of a `frozenset` or
    /// `set` (inside tuples and named tuples too) in the order of their own canonical forms.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard("Candidate.to_dict", || {
            let d = PyDict::new(py);
            d.set_item(intern!(py, "path"), &self.path)?;
            d.set_item(intern!(py, "start"), &self.start)?;
            d.set_item(intern!(py, "end"), &self.end)?;
            d.set_item(intern!(py, "content"), &self.content)?;
            d.set_item(intern!(py, "reason"), &self.reason)?;
            d.set_item(intern!(py, "score"), &self.score)?;
            let group = self.group.bind(py);
            if !group.is_none() {
                let scalar = group.is_exact_instance_of::<PyString>()
                    || group.is_exact_instance_of::<PyInt>()
                    || group.is_exact_instance_of::<PyBool>()
                    || group
                        .cast_exact::<PyFloat>()
                        .is_ok_and(|f| f.value().is_finite());
                if scalar {
                    d.set_item(intern!(py, "group"), group)?;
                } else {
                    d.set_item(intern!(py, "group"), canonical_repr(group, 0)?)?;
                }
            }
            if !self.source_sha256.is_none(py) {
                d.set_item(intern!(py, "source_sha256"), &self.source_sha256)?;
            }
            if !self.source_id.is_none(py) {
                d.set_item(intern!(py, "source_id"), &self.source_id)?;
            }
            Ok(d)
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard("Candidate.__repr__", || {
            let mut group = String::new();
            for (name, value) in [
                ("group", &self.group),
                ("source_sha256", &self.source_sha256),
                ("source_id", &self.source_id),
            ] {
                if !value.is_none(py) {
                    group.push_str(&format!(", {name}={}", value.bind(py).repr()?));
                }
            }
            Ok(format!(
                "Candidate({}{group})",
                reprs(&[
                    ("path", self.path.bind(py)),
                    ("start", self.start.bind(py)),
                    ("end", self.end.bind(py)),
                    ("content", self.content.bind(py)),
                    ("reason", self.reason.bind(py)),
                    ("score", self.score.bind(py)),
                ])?
            ))
        })
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        guard("Candidate.__richcmp__", || {
            let py = other.py();
            let theirs = match other.cast::<Candidate>() {
                Ok(c) => Some(c.get().fields(py)?),
                Err(_) => None,
            };
            compare(py, self.fields(py)?, theirs, op)
        })
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        guard("Candidate.__hash__", || self.fields(py)?.hash())
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        guard("Candidate.__reduce__", || {
            let py = slf.py();
            let me = slf.get();
            if me.group.is_none(py) && !me.has_provenance(py) {
                return (slf.get_type(), me.six(py)?).into_bound_py_any(py);
            }
            // `group`, `source_sha256` and `source_id` are keyword-only: rebuilt through
            // functools.partial with those that are not `None`.
            let kwargs = PyDict::new(py);
            for (name, value) in [
                (intern!(py, "group"), &me.group),
                (intern!(py, "source_sha256"), &me.source_sha256),
                (intern!(py, "source_id"), &me.source_id),
            ] {
                if !value.is_none(py) {
                    kwargs.set_item(name, value)?;
                }
            }
            let partial = py
                .import(intern!(py, "functools"))?
                .getattr(intern!(py, "partial"))?;
            let make = partial.call((slf.get_type(),), Some(&kwargs))?;
            (make, me.six(py)?).into_bound_py_any(py)
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Why {
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
    index: usize,
    /// Its 0-based position in the ranked order.
    #[pyo3(get)]
    rank: usize,
    why: Why,
    /// For an overlap, the input index of the selected window it hits; else `None`.
    #[pyo3(get)]
    overlaps: Option<usize>,
    /// For a group omission, the input index of the member that did not fit; else `None`.
    #[pyo3(get)]
    member: Option<usize>,
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
    items: Py<PyTuple>,
    /// Input indices of `items` (tuple of `int`).
    #[pyo3(get)]
    selected: Py<PyTuple>,
    /// Characters (code points) of the selected contents, summed.
    #[pyo3(get)]
    used_chars: u64,
    /// True exactly when something was omitted.
    #[pyo3(get)]
    truncated: bool,
    /// One `Omission` per left-out candidate (tuple), in rank order.
    #[pyo3(get)]
    omitted: Py<PyTuple>,
    /// The canonical failing files (tuple of `str`), in error order.
    #[pyo3(get)]
    failure_files: Py<PyTuple>,
    /// The cost model (`bugcontext.Cost`) the budget was counted in.
    #[pyo3(get)]
    cost: Py<PyAny>,
    /// The budget (`int`), in the cost model's unit.
    #[pyo3(get)]
    budget: Py<PyAny>,
    /// What the selection costs in that unit (with a template: the whole rendered section).
    #[pyo3(get)]
    used: u64,
    /// With a template, one `Block` per item in render order; else empty.
    #[pyo3(get)]
    blocks: Py<PyTuple>,
    /// The failing files whose failure windows were all left out (tuple of
    /// `bugcontext.MissingEvidence`, in error order).
    #[pyo3(get)]
    missing_critical: Py<PyTuple>,
    /// The digest, computed on first use (see `bugcontext.core.digest`).
    digest: std::sync::OnceLock<Py<PyString>>,
}

impl BuildResult {
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (
            self.items.bind(py),
            self.selected.bind(py),
            self.used_chars,
            self.truncated,
            self.omitted.bind(py),
            self.failure_files.bind(py),
            self.cost.bind(py),
            self.budget.bind(py),
            self.used,
            self.blocks.bind(py),
            self.missing_critical.bind(py),
        )
            .into_pyobject(py)
    }

    /// The digest's byte form over this result's items, cost model and failing files.
    ///
    /// The items' fields are read under the GIL; their contents are hashed (`H(content)`) with
    /// the GIL released, on the rayon pool when there is more than [`PARALLEL_HASH_BYTES`] of
    /// them. The `str` objects stay alive and unchanged meanwhile (the result holds them).
    fn compute_digest(&self, py: Python<'_>) -> PyResult<String> {
        let items = self.items.bind(py);
        // Provenance of each item (`None` when absent); with any, the v2 form carries it.
        let mut provenance = Vec::with_capacity(items.len());
        for item in items.iter() {
            provenance.push((
                present_attr(&item, intern!(py, "source_sha256"))?,
                present_attr(&item, intern!(py, "source_id"))?,
            ));
        }
        let any = provenance
            .iter()
            .any(|(sha, id)| sha.is_some() || id.is_some());
        let mut form = Form::new(if any {
            digest::RESULT_TAG_V2
        } else {
            digest::RESULT_TAG
        });
        cost_form(&mut form, self.cost.bind(py))?;
        files_form(&mut form, self.failure_files.bind(py))?;
        let mut fields = Vec::with_capacity(items.len());
        for item in items.iter() {
            let text = |name: &Bound<'_, PyString>| -> PyResult<Vec<u8>> {
                Ok(text_bytes(&item.getattr(name)?)?.into_owned())
            };
            let content = item.getattr(intern!(py, "content"))?;
            fields.push((
                text(intern!(py, "path"))?,
                item.getattr(intern!(py, "start"))?.extract::<u64>()?,
                item.getattr(intern!(py, "end"))?.extract::<u64>()?,
                content,
                text(intern!(py, "reason"))?,
            ));
        }
        let contents = fields
            .iter()
            .map(|f| text_bytes(&f.3))
            .collect::<PyResult<Vec<_>>>()?;
        let hashes = py.detach(|| digest::content_hashes(&contents, PARALLEL_HASH_BYTES));
        form.number(fields.len() as u64);
        for (((path, start, end, _, reason), hash), (sha, id)) in
            fields.iter().zip(&hashes).zip(&provenance)
        {
            form.text(path);
            form.number(*start);
            form.number(*end);
            form.hash(hash);
            form.text(reason);
            if any {
                provenance_form(&mut form, sha.as_ref(), id.as_ref())?;
            }
        }
        Ok(form.hex())
    }
}

/// Above this many content bytes, a digest hashes the contents on the rayon pool.
const PARALLEL_HASH_BYTES: usize = 1 << 20;

/// An attribute that may be absent: `None` for a missing attribute or a `None` value.
fn present_attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    Ok(optional_attr(obj, name)?.filter(|v| !v.is_none()))
}

/// `O(source_sha256) O(source_id)` of the v2 byte form.
fn provenance_form(
    form: &mut Form,
    sha: Option<&Bound<'_, PyAny>>,
    id: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    form.optional(sha.map(text_bytes).transpose()?.as_deref());
    form.optional(id.map(text_bytes).transpose()?.as_deref());
    Ok(())
}

/// The bytes of a `str` (or subclass) in the digest's byte form: UTF-8, a lone surrogate as its
/// 3-byte form. Borrowed from the `str` when it is valid UTF-8.
fn text_bytes<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    let text = value.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("digest: expected a str, not {}", type_name(value)))
    })?;
    match text.to_str() {
        Ok(s) => Ok(Cow::Borrowed(s.as_bytes())),
        Err(_) => surrogate_key(text).map(Cow::Owned),
    }
}

/// `COST` of the byte form, from a `bugcontext.Cost`.
fn cost_form(form: &mut Form, cost: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = cost.py();
    let optional = |name: &Bound<'_, PyString>| -> PyResult<Option<Vec<u8>>> {
        let value = cost.getattr(name)?;
        if value.is_none() {
            Ok(None)
        } else {
            text_bytes(&value).map(|b| Some(b.into_owned()))
        }
    };
    form.text(&text_bytes(&cost.getattr(intern!(py, "unit"))?)?);
    form.optional(optional(intern!(py, "encoding"))?.as_deref());
    form.optional(optional(intern!(py, "template"))?.as_deref());
    form.flag(cost.getattr(intern!(py, "line_numbers"))?.is_truthy()?);
    form.text(&text_bytes(&cost.getattr(intern!(py, "order"))?)?);
    Ok(())
}

/// `FILES` of the byte form.
fn files_form(form: &mut Form, files: &Bound<'_, PyAny>) -> PyResult<()> {
    let files: Vec<Bound<'_, PyAny>> = files.try_iter()?.collect::<PyResult<_>>()?;
    form.number(files.len() as u64);
    for f in &files {
        form.text(&text_bytes(f)?);
    }
    Ok(())
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
                omitted: to_tuple(omitted)?.unbind(),
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
        visit.call(&self.omitted)?;
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
            d.set_item(intern!(py, "omitted"), dicts(py, self.omitted.bind(py))?)?;
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
                self.omitted.bind(py).len()
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

// ---------------------------------------------------------------------------------------------
// Reading and validating candidates (mirrors `_validate` in reference.py, message for message).

/// Raise `bugcontext.core.errors.<class>(field, problem, index)`.
fn error(py: Python<'_>, class: &str, field: &str, problem: String, index: usize) -> PyErr {
    let made = py
        .import("bugcontext.core.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((field, problem, index)));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(err) => err,
    }
}

/// A `bugcontext.core.errors.ResourceLimitError` for a build-level limit: `limit` names the
/// setting of `bugcontext.core.limits.Limits`, `value` the amount found (a running total),
/// `maximum` the configured value.
fn limit_error(
    py: Python<'_>,
    field: &str,
    problem: String,
    index: usize,
    limit: &str,
    value: u64,
    maximum: u64,
) -> PyErr {
    let made = py
        .import("bugcontext.core.errors")
        .and_then(|m| m.getattr("ResourceLimitError"))
        .and_then(|cls| {
            let kwargs = PyDict::new(py);
            kwargs.set_item("limit", limit)?;
            kwargs.set_item("value", value)?;
            kwargs.set_item("maximum", maximum)?;
            cls.call((field, problem, index), Some(&kwargs))
        });
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(err) => err,
    }
}

fn invalid(py: Python<'_>, field: &str, problem: String, index: usize) -> PyErr {
    error(py, "InvalidCandidateError", field, problem, index)
}

/// `str(int)`, or a stand-in for an integer too long for Python to print (its digit limit):
/// identical to `bugcontext.core._input.show_int`, since error messages must never fail.
fn show_int(int: &Bound<'_, PyAny>) -> String {
    int.str().map_or_else(
        |_| "an integer too large to print".to_owned(),
        |s| s.to_string(),
    )
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string())
}

/// A field value: borrowed from a `Candidate`, or owned when read from a mapping or attribute.
enum Field<'a, 'py> {
    Borrowed(Borrowed<'a, 'py, PyAny>),
    Owned(Bound<'py, PyAny>),
}

impl<'py> std::ops::Deref for Field<'_, 'py> {
    type Target = Bound<'py, PyAny>;

    fn deref(&self) -> &Bound<'py, PyAny> {
        match self {
            Field::Borrowed(b) => b,
            Field::Owned(o) => o,
        }
    }
}

/// How to read the six fields of one candidate.
enum Shape<'a, 'py> {
    Native(&'a Candidate),
    Dict(&'a Bound<'py, PyDict>),
    Mapping,
    Attributes,
}

fn field<'py>(
    obj: &Bound<'py, PyAny>,
    shape: &Shape<'_, 'py>,
    name: &Bound<'py, PyString>,
    index: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let missing = || {
        invalid(
            py,
            name.to_str().unwrap_or("?"),
            "is missing".to_owned(),
            index,
        )
    };
    match shape {
        // Read directly by the caller; the attribute is the same value.
        Shape::Native(_) => obj.getattr(name),
        Shape::Dict(d) => d.get_item(name)?.ok_or_else(missing),
        Shape::Mapping => obj.get_item(name).map_err(|e| {
            if e.is_instance_of::<PyKeyError>(py) {
                missing()
            } else {
                e
            }
        }),
        Shape::Attributes => obj.getattr(name).map_err(|e| {
            if e.is_instance_of::<PyAttributeError>(py) {
                missing()
            } else {
                e
            }
        }),
    }
}

/// A line number: `bool` rejected, `__index__` accepted. Returns the value clamped to `i64`
/// and the exact `int` (for messages).
fn line<'py>(
    value: &Bound<'py, PyAny>,
    field: &str,
    index: usize,
) -> PyResult<(i64, Bound<'py, PyAny>)> {
    let py = value.py();
    if value.is_instance_of::<PyBool>() {
        return Err(invalid(
            py,
            field,
            "must be an int, not bool".to_owned(),
            index,
        ));
    }
    let converted;
    let int = if value.is_exact_instance_of::<PyInt>() {
        value
    } else {
        let operator = py.import(intern!(py, "operator"))?;
        match operator.call_method1(intern!(py, "index"), (value,)) {
            Ok(int) => {
                converted = int;
                &converted
            }
            Err(e) if e.is_instance_of::<PyTypeError>(py) => {
                return Err(invalid(
                    py,
                    field,
                    format!("must be an int, not {}", type_name(value)),
                    index,
                ));
            }
            Err(e) => return Err(e),
        }
    };
    let number = match int.extract::<i64>() {
        Ok(n) => n,
        Err(_) if int.lt(0)? => i64::MIN,
        Err(_) => i64::MAX,
    };
    Ok((number, int.clone()))
}

/// A score, read through the built-in type's own conversion (`float.__float__` of a `float`,
/// the `int` value of an `int`): a subclass's `__float__`, `__index__` or `__int__` plays no
/// part. Returns the value compared and, for a subclass instance, the exact `float` or `int`
/// it holds (the snapshot returned in the result).
fn score<'py>(
    value: &Bound<'py, PyAny>,
    index: usize,
) -> PyResult<(f64, Option<Bound<'py, PyAny>>)> {
    let py = value.py();
    let (number, copy) = if value.is_exact_instance_of::<PyFloat>() {
        (value.cast::<PyFloat>()?.value(), None)
    } else if value.is_instance_of::<PyFloat>() {
        // The C double stored in the object: `float.__float__(value)`.
        let number = value.cast::<PyFloat>()?.value();
        (number, Some(PyFloat::new(py, number).into_any()))
    } else if value.is_instance_of::<PyInt>() && !value.is_instance_of::<PyBool>() {
        let exact = if value.is_exact_instance_of::<PyInt>() {
            None
        } else {
            Some(exact_int(value)?)
        };
        let int = exact.as_ref().unwrap_or(value);
        // SAFETY: an exact int; PyLong_AsDouble runs no Python code on it.
        let number = unsafe { ffi::PyLong_AsDouble(int.as_ptr()) };
        if number == -1.0
            && let Some(e) = PyErr::take(py)
        {
            if e.is_instance_of::<PyOverflowError>(py) {
                return Err(invalid(
                    py,
                    "score",
                    "is too large to convert to a float".to_owned(),
                    index,
                ));
            }
            return Err(e);
        }
        (number, exact)
    } else {
        let problem = format!("must be an int or a float, not {}", type_name(value));
        return Err(invalid(py, "score", problem, index));
    };
    if !number.is_finite() {
        let shown = if number.is_nan() {
            "nan"
        } else if number > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        return Err(invalid(
            py,
            "score",
            format!("must be finite, got {shown}"),
            index,
        ));
    }
    Ok((number, copy))
}

/// The exact `str` a `str` (or subclass) object holds: `str.__str__(value)`, which runs none
/// of the subclass's own code. An exact `str` is returned as is.
fn exact_str<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: attached; PyUnicode_FromObject copies a str subclass's text into a new exact str
    // (a new reference to an exact str), and fails for anything else.
    unsafe { Bound::from_owned_ptr_or_err(value.py(), ffi::PyUnicode_FromObject(value.as_ptr())) }
}

/// The exact `int` an `int` subclass object holds (`int.__index__(value)`, which runs none of
/// the subclass's own code); an exact `int` is returned as is.
fn exact_int<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: attached; for an int (or subclass) PyNumber_Index returns the value as an exact
    // int without calling `__index__` (CPython >= 3.10).
    unsafe { Bound::from_owned_ptr_or_err(value.py(), ffi::PyNumber_Index(value.as_ptr())) }
}

/// Nesting below which [`canonical_repr`] falls back to `repr` (which raises `RecursionError`
/// past Python's own limit rather than overflowing this thread's stack).
const MAX_REPR_DEPTH: usize = 64;

/// The `repr` of a group with the members of every `frozenset` or `set` in it sorted by their
/// own canonical form, so that it is the same under every `PYTHONHASHSEED`: a `tuple`, a named
/// tuple (a tuple subclass with `_fields`) and a set are written as Python writes them, with
/// their members in canonical form; anything else is its own `repr`.
fn canonical_repr<'py>(value: &Bound<'py, PyAny>, depth: usize) -> PyResult<Bound<'py, PyString>> {
    use pyo3::types::{PyFrozenSet, PyList, PySet, PyTuple};
    let py = value.py();
    if depth >= MAX_REPR_DEPTH {
        return value.repr();
    }
    // The text of `parts` joined by `sep`: Python strings throughout, so that a `repr` holding
    // a lone surrogate is kept as it is.
    let join = |sep: &str, parts: &Bound<'py, PyList>| -> PyResult<Bound<'py, PyString>> {
        Ok(PyString::new(py, sep)
            .call_method1(intern!(py, "join"), (parts,))?
            .cast_into::<PyString>()?)
    };
    let name = || -> PyResult<Bound<'py, PyString>> { value.get_type().name() };
    if value.is_instance_of::<PyFrozenSet>() || value.is_instance_of::<PySet>() {
        let members = PyList::empty(py);
        for m in value.try_iter()? {
            members.append(canonical_repr(&m?, depth + 1)?)?;
        }
        members.sort()?;
        let inner = join(", ", &members)?;
        let exact_set = value.is_exact_instance_of::<PySet>();
        let head = if value.is_exact_instance_of::<PyFrozenSet>() {
            PyString::new(py, "frozenset")
        } else if exact_set {
            PyString::new(py, "")
        } else {
            name()?
        };
        let parts = PyList::empty(py);
        parts.append(&head)?;
        match (members.is_empty(), exact_set) {
            (true, true) => parts.append("set()")?,
            (true, false) => parts.append("()")?,
            (false, true) => {
                parts.append("{")?;
                parts.append(inner)?;
                parts.append("}")?;
            }
            (false, false) => {
                parts.append("({")?;
                parts.append(inner)?;
                parts.append("})")?;
            }
        }
        return join("", &parts);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        let members = PyList::empty(py);
        for m in tuple.iter() {
            members.append(canonical_repr(&m, depth + 1)?)?;
        }
        let parts = PyList::empty(py);
        if value.is_exact_instance_of::<PyTuple>() {
            parts.append("(")?;
            parts.append(join(", ", &members)?)?;
            parts.append(if members.len() == 1 { ",)" } else { ")" })?;
            return join("", &parts);
        }
        let fields = value.get_type().getattr(intern!(py, "_fields")).ok();
        if let Some(fields) = fields.and_then(|f| f.cast_into::<PyTuple>().ok())
            && fields.len() == members.len()
        {
            let named = PyList::empty(py);
            for (field, member) in fields.iter().zip(members.iter()) {
                let pair = PyList::empty(py);
                pair.append(field.str()?)?;
                pair.append(member)?;
                named.append(join("=", &pair)?)?;
            }
            parts.append(name()?)?;
            parts.append("(")?;
            parts.append(join(", ", &named)?)?;
            parts.append(")")?;
            return join("", &parts);
        }
    }
    value.repr()
}

/// The interned exact `str` naming `reason`.
fn reason_name(py: Python<'_>, reason: Reason) -> &Bound<'_, PyString> {
    match reason {
        Reason::Search => intern!(py, "search"),
        Reason::Reference => intern!(py, "reference"),
        Reason::Failure => intern!(py, "failure"),
    }
}

/// A reason, read by the text it holds (a `str` subclass's own `__eq__`, `__hash__` or `__str__`
/// play no part). Returns it and whether `value` is an exact `str` (else the result carries
/// the interned exact name instead).
fn reason(value: &Bound<'_, PyAny>, index: usize) -> PyResult<(Reason, bool)> {
    const ONE_OF: &str = "must be one of 'failure', 'reference', 'search'";
    let py = value.py();
    // Fast path: string literals in Python code are interned, so usually the very same object.
    for (name, reason) in [
        (intern!(py, "search"), Reason::Search),
        (intern!(py, "reference"), Reason::Reference),
        (intern!(py, "failure"), Reason::Failure),
    ] {
        if value.is(name) {
            return Ok((reason, true));
        }
    }
    let Ok(text) = value.cast::<PyString>() else {
        return Err(invalid(
            py,
            "reason",
            format!("{ONE_OF}, not {}", type_name(value)),
            index,
        ));
    };
    if let Some(reason) = text.to_str().ok().and_then(Reason::parse) {
        return Ok((reason, value.is_exact_instance_of::<PyString>()));
    }
    // Show the plain string value, as `str.__str__(value)` does for a str subclass.
    let plain = exact_str(value)?;
    Err(invalid(
        py,
        "reason",
        format!("{ONE_OF}, got {}", plain.repr()?),
        index,
    ))
}

/// The canonical path of a candidate, interned to a dense id.
struct Paths<'py> {
    ids: FxHashMap<Box<[u8]>, u32>,
    /// Path objects already seen, by address, with their id and canonical replacement:
    /// candidates often share path objects, which then skip decoding and hashing the text.
    /// `seen` keeps each object alive, so an address cannot be reused within the build.
    by_object: FxHashMap<usize, (u32, Option<Bound<'py, PyString>>)>,
    seen: Vec<Bound<'py, PyAny>>,
}

impl<'py> Paths<'py> {
    fn new() -> Self {
        Self {
            ids: FxHashMap::default(),
            by_object: FxHashMap::default(),
            seen: Vec::new(),
        }
    }

    fn id(&mut self, key: &[u8]) -> u32 {
        let next = self.ids.len() as u32;
        if let Some(&id) = self.ids.get(key) {
            return id;
        }
        self.ids.insert(key.into(), next);
        next
    }

    /// Validate a path; return its id and, when the caller's string cannot be reused as the
    /// canonical path, the canonical string.
    fn read(
        &mut self,
        value: &Bound<'py, PyAny>,
        index: usize,
    ) -> PyResult<(u32, Option<Bound<'py, PyString>>)> {
        if let Some((id, canonical)) = self.by_object.get(&(value.as_ptr() as usize)) {
            return Ok((*id, canonical.clone()));
        }
        let py = value.py();
        let Ok(text) = value.cast::<PyString>() else {
            let problem = format!("must be a str, not {}", type_name(value));
            return Err(invalid(py, "path", problem, index));
        };
        let exact = value.is_exact_instance_of::<PyString>();
        let (id, canonical) = match text.to_str() {
            Ok(s) => match engine::canonical_path(s) {
                Err(e) => return Err(invalid(py, "path", e.problem().to_owned(), index)),
                Ok(Cow::Borrowed(c)) => (
                    self.id(c.as_bytes()),
                    (!exact).then(|| PyString::new(py, c)),
                ),
                Ok(Cow::Owned(c)) => (self.id(c.as_bytes()), Some(PyString::new(py, &c))),
            },
            // Lone surrogates have no UTF-8 form: use the reference's rule, and key the path by
            // its surrogate-pass encoding (never valid UTF-8, so it cannot collide).
            Err(_) => {
                let input = py.import(intern!(py, "bugcontext.core._input"))?;
                let canonical = match input.call_method1(intern!(py, "canonical_path"), (value,)) {
                    Ok(c) => c.cast_into::<PyString>()?,
                    Err(e) => {
                        let problem = e.value(py).str()?.to_string();
                        return Err(invalid(py, "path", problem, index));
                    }
                };
                let key = surrogate_key(&canonical)?;
                (self.id(&key), Some(canonical))
            }
        };
        self.by_object
            .insert(value.as_ptr() as usize, (id, canonical.clone()));
        self.seen.push(value.clone());
        Ok((id, canonical))
    }
}

/// Stop the cyclic garbage collector from tracking `obj`, which must not be able to take part
/// in a reference cycle (it holds only atomic values: exact `str`, `int`, `float`). CPython
/// does the same for tuples of atomic values; it spares every later collection a visit.
fn untrack(obj: &Bound<'_, impl Sized>) {
    // SAFETY: attached; the object is alive and, being GC-enabled, may be untracked at any time
    // (its deallocator untracks again, which is a no-op).
    unsafe {
        if ffi::PyObject_IS_GC(obj.as_ptr()) != 0 {
            ffi::PyObject_GC_UnTrack(obj.as_ptr().cast());
        }
    }
}

/// Pauses the cyclic garbage collector while the result's objects are created: they hold no
/// cycles, and thousands of allocations would otherwise trigger collections of the young
/// generation for nothing. The previous state is restored on drop, on every path.
struct GcPause(bool);

impl GcPause {
    fn new(_py: Python<'_>) -> Self {
        // SAFETY: attached to the interpreter; PyGC_Disable only flips the collector's flag.
        Self(unsafe { ffi::PyGC_Disable() } == 1)
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: as above; the guard lives within the attached `build` call.
            unsafe { ffi::PyGC_Enable() };
        }
    }
}

fn surrogate_key(text: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    let py = text.py();
    let encoded = text.call_method1(intern!(py, "encode"), ("utf-8", "surrogatepass"))?;
    encoded.extract::<Vec<u8>>()
}

/// One candidate as it will be returned if selected.
pub(crate) enum Item<'py> {
    /// The caller's own `Candidate`: already canonical, plain ints.
    Same(Bound<'py, PyAny>),
    /// A new `Candidate` with the canonical path and plain-int lines.
    New(Candidate),
    /// Already moved into the result.
    Taken,
}

struct Reader<'py> {
    paths: Paths<'py>,
    kinds: Kinds<'py>,
    rows: Vec<Row>,
    items: Vec<Item<'py>>,
    total: u64,
    max_total: u64,
    /// Group id by group object (made at the first candidate with a group).
    groups: Option<Bound<'py, PyDict>>,
}

impl<'py> Reader<'py> {
    fn new(n: usize, max_total: u64) -> Self {
        Self {
            paths: Paths::new(),
            kinds: Kinds::new(),
            rows: Vec::with_capacity(n),
            items: Vec::with_capacity(n),
            total: 0,
            max_total,
            groups: None,
        }
    }

    /// The number of distinct groups read.
    fn n_groups(&self) -> usize {
        self.groups.as_ref().map_or(0, |g| g.len())
    }

    /// The optional `group` field, read after the six (a mapping without the key, an object
    /// without the attribute: `None`), and its dense id; it must be hashable.
    fn group(
        &mut self,
        obj: &Bound<'py, PyAny>,
        shape: &Shape<'_, 'py>,
        index: usize,
    ) -> PyResult<(Bound<'py, PyAny>, u32)> {
        let py = obj.py();
        let name = intern!(py, "group");
        let value = match shape {
            Shape::Native(c) => c.group.bind(py).clone(),
            Shape::Dict(d) => d
                .get_item(name)?
                .unwrap_or_else(|| py.None().into_bound(py)),
            Shape::Mapping => match obj.get_item(name) {
                Ok(v) => v,
                Err(e) if e.is_instance_of::<PyKeyError>(py) => py.None().into_bound(py),
                Err(e) => return Err(e),
            },
            Shape::Attributes => {
                optional_attr(obj, name)?.unwrap_or_else(|| py.None().into_bound(py))
            }
        };
        if value.is_none() {
            return Ok((value, engine::NO_GROUP));
        }
        if let Err(e) = value.hash() {
            if e.is_instance_of::<PyTypeError>(py) {
                let problem = format!("must be hashable, not {}", type_name(&value));
                return Err(invalid(py, "group", problem, index));
            }
            return Err(e);
        }
        let groups = self.groups.get_or_insert_with(|| PyDict::new(py));
        // `groups.setdefault(value, len(groups))`: one lookup, as in the reference.
        let next = (groups.len() as u32).into_pyobject(py)?;
        // SAFETY: both objects are alive; the result is a borrowed reference to a value the
        // dict holds, or NULL with an exception set.
        let id = unsafe {
            Borrowed::from_ptr_or_err(
                py,
                ffi::PyDict_SetDefault(groups.as_ptr(), value.as_ptr(), next.as_ptr()),
            )
        }?;
        let id = id.extract::<u32>()?;
        Ok((value, id))
    }
}

/// `getattr(obj, name)`, or `None` when that raises `AttributeError` (any other error is
/// raised). Same outcome as catching the error, but an object whose type uses the generic
/// attribute lookup (plain classes, dataclasses, `__slots__`) reports a missing attribute
/// without making the exception: an optional field costs little when it is absent.
fn optional_attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    #[cfg(any(Py_3_13, PyPy, GraalPy))]
    {
        obj.getattr_opt(name)
    }
    #[cfg(not(any(Py_3_13, PyPy, GraalPy)))]
    {
        unsafe extern "C" {
            // CPython 3.7-3.12: 1 found, 0 missing (AttributeError suppressed), -1 error.
            fn _PyObject_LookupAttr(
                obj: *mut ffi::PyObject,
                name: *mut ffi::PyObject,
                result: *mut *mut ffi::PyObject,
            ) -> std::ffi::c_int;
        }
        let py = obj.py();
        let mut found: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: both objects are alive; on 1 `found` is a new reference, else NULL.
        match unsafe { _PyObject_LookupAttr(obj.as_ptr(), name.as_ptr(), &mut found) } {
            1 => Ok(Some(unsafe { Bound::from_owned_ptr(py, found) })),
            0 => Ok(None),
            _ => Err(PyErr::fetch(py)),
        }
    }
}

/// Whether candidates of a type are mappings (`isinstance(obj, collections.abc.Mapping)`),
/// remembered per type within one build: the ABC check costs about as much as reading all six
/// fields of an object, and candidates are mostly of one or two types.
///
/// The answer is only remembered for a type that can give no other answer for another of its
/// instances: no class in its MRO but `object` defines `__class__` or `__getattribute__`
/// (`ABCMeta.__instancecheck__` reads `instance.__class__`), and it is forgotten when the ABC
/// registry changes (`abc.get_cache_token()`, e.g. `Mapping.register(...)` run by the caller's
/// code during the build). Remembered types are kept alive, so an address is never reused.
struct Kinds<'py> {
    by_type: FxHashMap<usize, bool>,
    alive: Vec<Bound<'py, PyType>>,
    /// `abc.get_cache_token` and the token the remembered answers were computed under.
    get_token: Option<Bound<'py, PyAny>>,
    token: u64,
    /// `collections.abc.Mapping`.
    mapping_abc: Option<Bound<'py, PyAny>>,
}

impl<'py> Kinds<'py> {
    fn new() -> Self {
        Self {
            by_type: FxHashMap::default(),
            alive: Vec::new(),
            get_token: None,
            token: 0,
            mapping_abc: None,
        }
    }

    fn current_token(&mut self, py: Python<'py>) -> PyResult<u64> {
        let get = match &self.get_token {
            Some(get) => get,
            None => self.get_token.insert(
                py.import(intern!(py, "abc"))?
                    .getattr(intern!(py, "get_cache_token"))?,
            ),
        };
        get.call0()?.extract::<u64>()
    }

    /// `isinstance(obj, collections.abc.Mapping)` for an object that is neither a `Candidate`
    /// nor an exact `dict`.
    fn is_mapping(&mut self, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
        let py = obj.py();
        let ty = obj.get_type();
        let key = ty.as_ptr() as usize;
        if !self.by_type.is_empty() {
            let token = self.current_token(py)?;
            if token != self.token {
                self.by_type.clear();
            } else if let Some(&mapping) = self.by_type.get(&key) {
                return Ok(mapping);
            }
        }
        // `isinstance(obj, Mapping)`, its errors raised (as the reference's `isinstance` does),
        // not swallowed as `cast::<PyMapping>()` would.
        let abc = match &self.mapping_abc {
            Some(abc) => abc,
            None => self.mapping_abc.insert(
                py.import(intern!(py, "collections.abc"))?
                    .getattr(intern!(py, "Mapping"))?,
            ),
        };
        let mapping = obj.is_instance(abc)?;
        if plain_class(&ty)? {
            if self.by_type.is_empty() {
                self.token = self.current_token(py)?;
            }
            self.by_type.insert(key, mapping);
            self.alive.push(ty);
        }
        Ok(mapping)
    }
}

/// True when `ty`'s metaclass is exactly `type` (so, of every class in its MRO, and nothing
/// can hide the real `__mro__` or `__dict__`) and no class in its MRO but `object` defines
/// `__class__` or `__getattribute__`: then `instance.__class__ is type(instance)` for every
/// instance.
fn plain_class(ty: &Bound<'_, PyType>) -> PyResult<bool> {
    let py = ty.py();
    if !ty.get_type().is(py.get_type::<PyType>()) {
        return Ok(false);
    }
    let object = py.get_type::<PyAny>();
    for klass in ty
        .getattr(intern!(py, "__mro__"))?
        .cast_into::<PyTuple>()?
        .iter()
    {
        if klass.is(&object) {
            continue;
        }
        let attrs = klass.getattr(intern!(py, "__dict__"))?;
        if attrs.contains(intern!(py, "__class__"))?
            || attrs.contains(intern!(py, "__getattribute__"))?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

impl<'py> Reader<'py> {
    fn read(&mut self, obj: &Bound<'py, PyAny>, index: usize) -> PyResult<()> {
        let py = obj.py();
        let shape = if let Ok(c) = obj.cast::<Candidate>() {
            Shape::Native(c.get())
        } else if let Ok(d) = obj.cast_exact::<PyDict>() {
            Shape::Dict(d)
        } else if self.kinds.is_mapping(obj)? {
            Shape::Mapping
        } else {
            Shape::Attributes
        };
        // A `Candidate`'s fields are borrowed (no reference-count writes on the hot path).
        let get = |name: &Bound<'py, PyString>, native: fn(&Candidate) -> &Py<PyAny>| match &shape {
            Shape::Native(c) => Ok(Field::Borrowed(native(c).bind_borrowed(py))),
            _ => field(obj, &shape, name, index).map(Field::Owned),
        };

        let path = get(intern!(py, "path"), |c| &c.path)?;
        let (path_id, canonical) = self.paths.read(&path, index)?;

        let start_obj = get(intern!(py, "start"), |c| &c.start)?;
        let (start, start_int) = line(&start_obj, "start", index)?;
        if start < 1 {
            return Err(invalid(
                py,
                "start",
                format!("must be >= 1, got {}", show_int(&start_int)),
                index,
            ));
        }
        if start > i64::from(MAX_LINE) {
            let problem = format!("must be <= {MAX_LINE}, got {}", show_int(&start_int));
            return Err(invalid(py, "start", problem, index));
        }
        let end_obj = get(intern!(py, "end"), |c| &c.end)?;
        let (end, end_int) = line(&end_obj, "end", index)?;
        if end < start {
            let problem = format!("must be >= start ({start}), got {}", show_int(&end_int));
            return Err(invalid(py, "end", problem, index));
        }
        if end > i64::from(MAX_LINE) {
            let problem = format!("must be <= {MAX_LINE}, got {}", show_int(&end_int));
            return Err(invalid(py, "end", problem, index));
        }

        let content = get(intern!(py, "content"), |c| &c.content)?;
        let cost = match content.cast::<PyString>() {
            // SAFETY: a str (or subclass) object; its length in code points, read from the
            // object itself, so that a subclass's own __len__ plays no part.
            Ok(_) => (unsafe { ffi::PyUnicode_GetLength(content.as_ptr()) }) as u64,
            Err(_) => {
                let problem = format!("must be a str, not {}", type_name(&content));
                return Err(invalid(py, "content", problem, index));
            }
        };
        // The snapshot: a str subclass becomes the exact str it holds (`str.__str__`).
        let content_exact = content.is_exact_instance_of::<PyString>();
        let reason_obj = get(intern!(py, "reason"), |c| &c.reason)?;
        let (reason, reason_exact) = reason(&reason_obj, index)?;
        let score_obj = get(intern!(py, "score"), |c| &c.score)?;
        let (score, score_copy) = score(&score_obj, index)?;
        let (group_obj, group) = self.group(obj, &shape, index)?;
        let (sha_obj, sha_exact) =
            optional_field(obj, &shape, intern!(py, "source_sha256"), |c| {
                &c.source_sha256
            })?;
        let sha_obj = source_sha256(sha_obj, index)?;
        let (id_obj, id_exact) =
            optional_field(obj, &shape, intern!(py, "source_id"), |c| &c.source_id)?;
        let id_obj = source_id(id_obj, index)?;

        self.total = self.total.saturating_add(cost);
        if self.total > self.max_total {
            let problem = format!(
                "total content is {} characters, over the limit max_total_chars = {} characters",
                self.total, self.max_total
            );
            return Err(limit_error(
                py,
                "content",
                problem,
                index,
                "max_total_chars",
                self.total,
                self.max_total,
            ));
        }

        let plain_lines =
            start_obj.is_exact_instance_of::<PyInt>() && end_obj.is_exact_instance_of::<PyInt>();
        let exact = plain_lines
            && content_exact
            && reason_exact
            && score_copy.is_none()
            && sha_exact
            && id_exact;
        let item = if matches!(shape, Shape::Native(_)) && canonical.is_none() && exact {
            Item::Same(obj.clone())
        } else {
            let content = if content_exact {
                content.clone().unbind()
            } else {
                exact_str(&content)?.unbind()
            };
            let reason_obj = if reason_exact {
                reason_obj.clone().unbind()
            } else {
                reason_name(py, reason).clone().into_any().unbind()
            };
            Item::New(Candidate {
                path: canonical.map_or_else(|| path.clone().unbind(), |c| c.into_any().unbind()),
                start: start_int.unbind(),
                end: end_int.unbind(),
                content,
                reason: reason_obj,
                score: score_copy.map_or_else(|| score_obj.clone().unbind(), Bound::unbind),
                group: group_obj.unbind(),
                source_sha256: sha_obj.unbind(),
                source_id: id_obj.unbind(),
            })
        };
        // Both in 1..=MAX_LINE here.
        self.rows.push(Row {
            path: path_id,
            start: start as u32,
            end: end as u32,
            cost,
            reason,
            score,
            group,
            stale: false,
        });
        self.items.push(item);
        Ok(())
    }
}

/// An optional field (`group`'s siblings `source_sha256`, `source_id`), read as `Reader::group`
/// reads `group`: a mapping without the key, an object without the attribute, `None`. Returns
/// the value and whether it is `None` or an exact `str` (else it is snapshotted).
fn optional_field<'py>(
    obj: &Bound<'py, PyAny>,
    shape: &Shape<'_, 'py>,
    name: &Bound<'py, PyString>,
    native: fn(&Candidate) -> &Py<PyAny>,
) -> PyResult<(Bound<'py, PyAny>, bool)> {
    let py = obj.py();
    let value = match shape {
        Shape::Native(c) => native(c).bind(py).clone(),
        Shape::Dict(d) => d
            .get_item(name)?
            .unwrap_or_else(|| py.None().into_bound(py)),
        Shape::Mapping => match obj.get_item(name) {
            Ok(v) => v,
            Err(e) if e.is_instance_of::<PyKeyError>(py) => py.None().into_bound(py),
            Err(e) => return Err(e),
        },
        Shape::Attributes => optional_attr(obj, name)?.unwrap_or_else(|| py.None().into_bound(py)),
    };
    let exact = value.is_none() || value.is_exact_instance_of::<PyString>();
    Ok((value, exact))
}

/// Longest `source_id` accepted, in characters (code points).
pub(crate) const MAX_SOURCE_ID: usize = 256;

/// `source_sha256`: `None`, or exactly 64 lower-case hex digits (a `str` subclass is read by
/// its text and snapshotted as the exact `str`).
fn source_sha256<'py>(value: Bound<'py, PyAny>, index: usize) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let Some((text, length)) = optional_text(value, "source_sha256", index)? else {
        return Ok(py.None().into_bound(py));
    };
    const WANT: &str = "must be 64 lower-case hex digits (a SHA-256)";
    if length != 64 {
        let problem = format!("{WANT}, got {length} characters");
        return Err(invalid(py, "source_sha256", problem, index));
    }
    let hex = text
        .cast::<PyString>()?
        .to_str()
        .is_ok_and(|s| s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
    if !hex {
        let problem = format!("{WANT}, got {}", text.repr()?);
        return Err(invalid(py, "source_sha256", problem, index));
    }
    Ok(text)
}

/// An optional text field: `None`, or the exact `str` it holds (a subclass snapshotted) and its
/// length in code points; anything else is an invalid `field`.
fn optional_text<'py>(
    value: Bound<'py, PyAny>,
    field: &str,
    index: usize,
) -> PyResult<Option<(Bound<'py, PyAny>, usize)>> {
    if value.is_none() {
        return Ok(None);
    }
    if value.cast::<PyString>().is_err() {
        let problem = format!("must be a str, not {}", type_name(&value));
        return Err(invalid(value.py(), field, problem, index));
    }
    let text = exact_str(&value)?;
    // SAFETY: an exact str.
    let length = unsafe { ffi::PyUnicode_GetLength(text.as_ptr()) } as usize;
    Ok(Some((text, length)))
}

/// `source_id`: `None`, or a non-empty `str` of at most [`MAX_SOURCE_ID`] characters.
fn source_id<'py>(value: Bound<'py, PyAny>, index: usize) -> PyResult<Bound<'py, PyAny>> {
    let py = value.py();
    let Some((text, length)) = optional_text(value, "source_id", index)? else {
        return Ok(py.None().into_bound(py));
    };
    if length == 0 {
        return Err(invalid(
            py,
            "source_id",
            "must not be empty".to_owned(),
            index,
        ));
    }
    if length > MAX_SOURCE_ID {
        let problem = format!("must be at most {MAX_SOURCE_ID} characters, got {length}");
        return Err(invalid(py, "source_id", problem, index));
    }
    Ok(text)
}

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

/// One input read and costed, ready for the engine: everything the engine needs (`rows`,
/// `failure_ids`, `budget`, `n_paths`) is plain Rust data, so it can run with the GIL released.
pub(crate) struct Prepared<'py> {
    items: Vec<Item<'py>>,
    rows: Vec<Row>,
    failure_ids: Vec<u32>,
    n_paths: usize,
    /// Number of distinct groups (0: no candidate has a group).
    n_groups: usize,
    /// Number of stale rows (0 without a `verify` reader).
    n_stale: usize,
    budget: u64,
    /// Content lengths when the cost is something else (see `costing::apply`).
    lengths: Option<Vec<u64>>,
    failure_files: Vec<Bound<'py, PyString>>,
    /// Per failing file, the input indices of its failure windows (see `failure_windows`).
    windows: Vec<Vec<u32>>,
    cost: Bound<'py, PyAny>,
    budget_obj: Py<PyAny>,
}

impl Prepared<'_> {
    /// What the engine reads: plain Rust data, to be used with the GIL released.
    pub(crate) fn job(&self) -> Job<'_> {
        Job {
            rows: &self.rows,
            failure_ids: &self.failure_ids,
            budget: self.budget,
            n_paths: self.n_paths,
            n_groups: self.n_groups,
            n_stale: self.n_stale,
        }
    }
}

/// The engine's input for one build, borrowed from a [`Prepared`]: no Python object, so it can
/// cross to other threads while detached.
#[derive(Clone, Copy)]
pub(crate) struct Job<'a> {
    rows: &'a [Row],
    failure_ids: &'a [u32],
    budget: u64,
    n_paths: usize,
    n_groups: usize,
    n_stale: usize,
}

impl Job<'_> {
    /// Number of candidates.
    pub(crate) fn len(self) -> usize {
        self.rows.len()
    }

    /// Rank and pack (groups packed whole when some candidate has one; stale rows omitted).
    pub(crate) fn select(self) -> engine::Selection {
        if self.n_groups == 0 && self.n_stale == 0 {
            engine::build(self.rows, self.failure_ids, self.budget, self.n_paths)
        } else {
            engine::build_groups(
                self.rows,
                self.failure_ids,
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
        rows,
        failure_ids,
        n_paths,
        n_groups,
        n_stale,
        budget,
        lengths,
        failure_files,
        windows,
        cost,
        budget_obj,
    })
}

/// A file as the `verify` reader gave it: the hex SHA-256 of its bytes, and its text (the bytes
/// after a leading UTF-8 byte-order mark) with the byte offset where each line starts and,
/// last, the text's length. Lines end at `\n`, `\r\n` or a lone `\r` (as in
/// `bugcontext.job.sources.files.split_lines`), each keeping its line ending.
struct Verified {
    sha256: String,
    text: Vec<u8>,
    starts: Vec<usize>,
}

impl Verified {
    fn new(bytes: &[u8]) -> Self {
        let sha256 = {
            use sha2::{Digest, Sha256};
            Sha256::digest(bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let text = bytes
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(bytes)
            .to_vec();
        let mut starts = vec![0];
        let mut i = 0;
        while i < text.len() {
            match text[i] {
                b'\r' if text.get(i + 1) == Some(&b'\n') => {
                    i += 2;
                    starts.push(i);
                }
                b'\r' | b'\n' => {
                    i += 1;
                    starts.push(i);
                }
                _ => i += 1,
            }
        }
        if starts.last() != Some(&text.len()) {
            starts.push(text.len());
        }
        Self {
            sha256,
            text,
            starts,
        }
    }

    /// The bytes of lines `start..=end` (1-based), or `None` past the last line.
    fn lines(&self, start: u32, end: u32) -> Option<&[u8]> {
        let n_lines = self.starts.len() - 1;
        if end as usize > n_lines {
            return None;
        }
        Some(&self.text[self.starts[start as usize - 1]..self.starts[end as usize]])
    }
}

/// Verified provenance: call `verify(path)` once per canonical path (in order of first
/// appearance) and mark stale every row whose file is missing (`None`), whose `source_sha256`
/// differs from the SHA-256 of the bytes read, or whose content is not exactly the file's lines
/// `start..end` (the bytes decoded as UTF-8, a leading BOM dropped, invalid bytes as lone
/// surrogates: `surrogateescape`). Returns the number of stale rows. Mirrors
/// `bugcontext.reference._stale`.
fn mark_stale(
    verify: &Bound<'_, PyAny>,
    rows: &mut [Row],
    items: &[Item<'_>],
    n_paths: usize,
) -> PyResult<usize> {
    let py = verify.py();
    let mut files: Vec<Option<Option<Verified>>> = (0..n_paths).map(|_| None).collect();
    let mut n_stale = 0;
    for (row, item) in rows.iter_mut().zip(items) {
        let c = match item {
            Item::Same(obj) => obj.cast::<Candidate>()?.get(),
            Item::New(c) => c,
            Item::Taken => return Err(PyRuntimeError::new_err("bugcontext: item taken")),
        };
        let slot = &mut files[row.path as usize];
        if slot.is_none() {
            let path = c.path.bind(py);
            let got = verify.call1((path,))?;
            *slot = Some(if got.is_none() {
                None
            } else if let Ok(bytes) = got.cast::<pyo3::types::PyBytes>() {
                Some(Verified::new(bytes.as_bytes()))
            } else {
                return Err(PyTypeError::new_err(format!(
                    "verify: the reader must return bytes or None, not {} (for {})",
                    type_name(&got),
                    path.repr()?
                )));
            });
        }
        let stale = match slot.as_ref().and_then(Option::as_ref) {
            None => true,
            Some(file) => {
                let sha = c.source_sha256.bind(py);
                let wrong_file = !sha.is_none()
                    && sha.cast::<PyString>()?.to_str().ok() != Some(file.sha256.as_str());
                wrong_file || !content_matches(file, row, c.content.bind(py))?
            }
        };
        if stale {
            row.stale = true;
            n_stale += 1;
        }
    }
    Ok(n_stale)
}

/// Whether `content` is exactly the file's lines `row.start..=row.end`.
fn content_matches(file: &Verified, row: &Row, content: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Some(lines) = file.lines(row.start, row.end) else {
        return Ok(false);
    };
    let text = content.cast::<PyString>()?;
    match text.to_str() {
        // UTF-8 is one-to-one: equal bytes, equal text (invalid bytes in the file decode to
        // lone surrogates, which a valid `str` cannot hold).
        Ok(s) => Ok(s.as_bytes() == lines),
        // Lone surrogates: compare with the lines decoded as the reference decodes them. Line
        // ends are ASCII, never part of an invalid sequence, so decoding the lines alone gives
        // the same text as cutting them from the decoded file.
        Err(_) => {
            let py = content.py();
            let decoded = pyo3::types::PyBytes::new(py, lines)
                .call_method1(intern!(py, "decode"), ("utf-8", "surrogateescape"))?;
            Ok(decoded.cast::<PyString>()?.to_str().is_err() && decoded.eq(text)?)
        }
    }
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
    let mut omitted = Vec::with_capacity(selection.omitted.len());
    for (n, o) in selection.omitted.iter().enumerate() {
        check_signals(py, n)?;
        let (why, overlaps, member) = match o.why {
            Omitted::Overlap(blocker) => (Why::Overlap, Some(blocker as usize), None),
            Omitted::Budget => (Why::Budget, None, None),
            Omitted::Group(member) => (Why::Group, None, Some(member as usize)),
            Omitted::Stale => (Why::Stale, None, None),
        };
        let index = o.index as usize;
        let rank = o.rank as usize;
        let obj = Bound::new(
            py,
            Omission {
                index,
                rank,
                why,
                overlaps,
                member,
            },
        )?;
        untrack(&obj); // it holds only integers
        omitted.push(obj);
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
        omitted: PyTuple::new(py, omitted)?.unbind(),
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

/// The cache key of an input (see `bugcontext.core.digest`): the candidates are read and validated
/// exactly as `build` reads them, then hashed in input order with the budget, the canonical
/// failing files and the cost model.
///
/// With `verify` (a build's reader), the reader is called as `build` calls it (once per
/// canonical path, in order of first appearance) and its state ends the form: `S("verified")
/// U(p)` and, per path, `O(hex SHA-256 of the bytes)` (`0x00` for `None`). When some score is
/// an `int` or `-0.0`, `S("scores") U(n)` and each candidate's exact score (`score_form`) come
/// before it, after the groups.
#[pyfunction]
#[pyo3(signature = (candidates, budget, failure_files, max_total_chars, cost, verify=None))]
fn cache_key<'py>(
    py: Python<'py>,
    candidates: &Bound<'py, PyAny>,
    budget: u64,
    failure_files: Vec<Bound<'py, PyString>>,
    max_total_chars: u64,
    cost: Bound<'py, PyAny>,
    verify: Option<Bound<'py, PyAny>>,
) -> PyResult<String> {
    guard("cache_key", || {
        let n = candidates.len()?;
        let mut reader = Reader::new(n, max_total_chars);
        for (index, obj) in candidates.try_iter()?.enumerate() {
            reader.read(&obj?, index)?;
        }
        let candidate = |item: &Item<'py>| -> PyResult<Candidate> {
            let c = match item {
                Item::Same(obj) => obj.cast::<Candidate>()?.get(),
                Item::New(c) => c,
                Item::Taken => return Err(PyRuntimeError::new_err("bugcontext: item taken")),
            };
            Ok(Candidate {
                path: c.path.clone_ref(py),
                start: c.start.clone_ref(py),
                end: c.end.clone_ref(py),
                content: c.content.clone_ref(py),
                reason: c.reason.clone_ref(py),
                score: c.score.clone_ref(py),
                group: c.group.clone_ref(py),
                source_sha256: c.source_sha256.clone_ref(py),
                source_id: c.source_id.clone_ref(py),
            })
        };
        let candidates: Vec<Candidate> = reader
            .items
            .iter()
            .map(candidate)
            .collect::<PyResult<_>>()?;
        let any = candidates.iter().any(|c| c.has_provenance(py));
        let mut form = Form::new(if any {
            digest::INPUT_TAG_V2
        } else {
            digest::INPUT_TAG
        });
        cost_form(&mut form, &cost)?;
        form.number(budget);
        form.number(failure_files.len() as u64);
        for f in &failure_files {
            form.text(&text_bytes(f)?);
        }
        let contents = candidates
            .iter()
            .map(|c| text_bytes(c.content.bind(py)))
            .collect::<PyResult<Vec<_>>>()?;
        let hashes = py.detach(|| digest::content_hashes(&contents, PARALLEL_HASH_BYTES));
        form.number(reader.rows.len() as u64);
        for ((row, c), hash) in reader.rows.iter().zip(&candidates).zip(&hashes) {
            form.text(&text_bytes(c.path.bind(py))?);
            form.number(u64::from(row.start));
            form.number(u64::from(row.end));
            form.hash(hash);
            form.text(row.reason.name().as_bytes());
            form.score(row.score);
            if any {
                let some = |v: &Py<PyAny>| (!v.is_none(py)).then(|| v.bind(py).clone());
                provenance_form(
                    &mut form,
                    some(&c.source_sha256).as_ref(),
                    some(&c.source_id).as_ref(),
                )?;
            }
        }
        // The partition into groups (`bugcontext.core.digest`): each candidate's dense group id + 1.
        if reader.n_groups() > 0 {
            form.text(b"groups");
            form.number(reader.rows.len() as u64);
            for row in &reader.rows {
                form.number(if row.group == engine::NO_GROUP {
                    0
                } else {
                    u64::from(row.group) + 1
                });
            }
        }
        // Exact scores (`bugcontext.core.digest`): the type and value the result carries.
        let scores = candidates
            .iter()
            .map(|c| score_form(c.score.bind(py)))
            .collect::<PyResult<Vec<_>>>()?;
        if scores.iter().any(|s| !matches!(s, ScoreForm::Float)) {
            form.text(b"scores");
            form.number(scores.len() as u64);
            for s in &scores {
                match s {
                    ScoreForm::Float => form.raw(&[0]),
                    ScoreForm::NegativeZero => form.raw(&[1]),
                    ScoreForm::Int(digits) => {
                        form.raw(&[2]);
                        form.text(digits.as_bytes());
                    }
                }
            }
        }
        // The verify reader's state: each file's SHA-256 as the reader returned it.
        if let Some(verify) = verify {
            let mut seen = vec![false; reader.paths.ids.len()];
            let mut hashes = Vec::new();
            for (row, c) in reader.rows.iter().zip(&candidates) {
                let slot = &mut seen[row.path as usize];
                if *slot {
                    continue;
                }
                *slot = true;
                let path = c.path.bind(py);
                let got = verify.call1((path,))?;
                if got.is_none() {
                    hashes.push(None);
                } else if let Ok(bytes) = got.cast::<pyo3::types::PyBytes>() {
                    use sha2::{Digest, Sha256};
                    let hex: String = Sha256::digest(bytes.as_bytes())
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect();
                    hashes.push(Some(hex));
                } else {
                    return Err(PyTypeError::new_err(format!(
                        "verify: the reader must return bytes or None, not {} (for {})",
                        type_name(&got),
                        path.repr()?
                    )));
                }
            }
            form.text(b"verified");
            form.number(hashes.len() as u64);
            for h in &hashes {
                form.optional(h.as_ref().map(String::as_bytes));
            }
        }
        Ok(form.hex())
    })
}

/// A candidate's score in the key's `"scores"` extension (see `bugcontext.core.digest`).
enum ScoreForm {
    /// A float other than `-0.0`: its bits are already in the form.
    Float,
    /// `-0.0` (the form's `F` wrote `0.0`).
    NegativeZero,
    /// An `int`: its decimal digits, `-` first when negative.
    Int(String),
}

/// The exact form of a validated score (an exact `int` or `float`, as the reader keeps it).
fn score_form(score: &Bound<'_, PyAny>) -> PyResult<ScoreForm> {
    if let Ok(f) = score.cast::<PyFloat>() {
        let v = f.value();
        return Ok(if v == 0.0 && v.is_sign_negative() {
            ScoreForm::NegativeZero
        } else {
            ScoreForm::Float
        });
    }
    // An int (`bool` is refused by validation): `int.__repr__`, which runs no Python code of
    // a subclass (the reader keeps an exact copy of a subclass's value anyway).
    let exact = exact_int(score)?;
    Ok(ScoreForm::Int(exact.repr()?.to_str()?.to_owned()))
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
        let job = prepared.job();
        let selection = py.detach(|| job.select());
        py.check_signals()?;
        assemble(py, prepared, selection)
    })
}

/// The `bugcontext._core` extension module.
#[pymodule]
#[pyo3(name = "_core")]
fn core_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Candidate>()?;
    m.add_class::<Omission>()?;
    m.add_class::<BuildResult>()?;
    m.add_class::<BuildInput>()?;
    m.add_class::<Block>()?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(cache_key, m)?)?;
    batch::register(m)?;
    m.add("MAX_LINE", MAX_LINE)?;
    m.add("POLICY_VERSION", digest::POLICY_VERSION)?;
    tokens::register(m)?;
    render::register(m)?;
    secrets::register(m)?;
    table::register(m)?;
    guard::register(m)?;
    Ok(())
}
