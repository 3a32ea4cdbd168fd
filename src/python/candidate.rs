//! The `Candidate` class (a proposed window) and the canonical `repr` of its group.

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString, PyTuple};
use pyo3::{IntoPyObjectExt, intern};
use pyo3::{PyTraverseError, PyVisit};

use super::guard::guard;

use super::objects::{compare, reprs};

/// A proposed window: `Candidate(path: str, start: int, end: int, content: str, reason: str,
/// score: int | float)`, lines `start..end` of `path` (1-based, closed) with their text
/// `content`, why it was proposed (`reason`: "failure", "reference" or "search") and how
/// strongly (`score`, higher first). Immutable, compared by value, hashable, picklable. The
/// constructor does not validate: `build` does, naming the candidate's index and field.
#[pyclass(frozen, module = "bugcontext", name = "Candidate")]
pub struct Candidate {
    /// Repository-relative path (`str`; canonical in build results).
    #[pyo3(get)]
    pub(crate) path: Py<PyAny>,
    /// First line (`int`, 1-based, inclusive).
    #[pyo3(get)]
    pub(crate) start: Py<PyAny>,
    /// Last line (`int`, inclusive, `>= start`).
    #[pyo3(get)]
    pub(crate) end: Py<PyAny>,
    /// The text of lines `start..end` (`str`); its cost in characters is `len(content)`.
    #[pyo3(get)]
    pub(crate) content: Py<PyAny>,
    /// Why it was proposed: `"failure"`, `"reference"` or `"search"`.
    #[pyo3(get)]
    pub(crate) reason: Py<PyAny>,
    /// How strongly (`int` or finite `float`); higher ranks first within a reason.
    #[pyo3(get)]
    pub(crate) score: Py<PyAny>,
    /// The group it is packed with, whole or not at all (any hashable id), or `None`.
    #[pyo3(get)]
    pub(crate) group: Py<PyAny>,
    /// Provenance: SHA-256 (64 lower-case hex digits) of the bytes of the file the content was
    /// read from, or `None`.
    #[pyo3(get)]
    pub(crate) source_sha256: Py<PyAny>,
    /// Provenance: which source proposed it (a non-empty `str`, at most 256 characters: the
    /// parser, the reference analyser, the search tool, a plug-in), or `None`.
    #[pyo3(get)]
    pub(crate) source_id: Py<PyAny>,
}

impl Candidate {
    /// True when every field is an exact `str`, `int` or `float`: such a candidate can never be
    /// part of a reference cycle.
    pub(crate) fn holds_only_atomic_values(&self, py: Python<'_>) -> bool {
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
    pub(crate) fn has_provenance(&self, py: Python<'_>) -> bool {
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
