//! Reading candidates (a `Candidate`, a `dict`, any mapping or any object with the fields)
//! into the engine's compact rows, validating them (mirrors `_validate` in reference.py,
//! message for message), and keeping each as it will be returned if selected.

use std::borrow::Cow;

use pyo3::exceptions::{PyAttributeError, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString, PyTuple, PyType};
use pyo3::{Borrowed, ffi, intern};
use rustc_hash::FxHashMap;

use crate::engine::{self, MAX_LINE, Reason, Row};

use super::access::{Layout, Read, field};
use super::candidate::Candidate;
use super::errors::{invalid, limit_error};
use super::fields::{line, reason, reason_name, score, source_id, source_sha256};
use super::objects::{exact_str, optional_attr, show_int, surrogate_key, type_name};

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
    /// An exact `dict` holding the six fields and nothing else, read in one pass (see
    /// [`six_fields`]): the values, in [`field`] order.
    Six([Bound<'py, PyAny>; 6]),
    Dict(&'a Bound<'py, PyDict>),
    Mapping,
    /// Attributes, read by the class's layout where it has one.
    Attributes(Option<Layout>),
}

fn field<'py>(
    obj: &Bound<'py, PyAny>,
    shape: &Shape<'_, 'py>,
    name: &Bound<'py, PyString>,
    slot: usize,
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
        Shape::Six(values) => Ok(values[slot].clone()),
        Shape::Dict(d) => d.get_item(name)?.ok_or_else(missing),
        Shape::Mapping => obj.get_item(name).map_err(|e| {
            if e.is_instance_of::<PyKeyError>(py) {
                missing()
            } else {
                e
            }
        }),
        Shape::Attributes(layout) => {
            match layout.map_or(Read::Generic, |layout| layout.read(obj, slot)) {
                Read::Value(value) => return Ok(value),
                Read::Missing => return Err(missing()),
                Read::Generic => {}
            }
            obj.getattr(name).map_err(|e| {
                if e.is_instance_of::<PyAttributeError>(py) {
                    missing()
                } else {
                    e
                }
            })
        }
    }
}

/// An optional attribute (`group`, `source_sha256`, `source_id`) read by the class's layout
/// where it has one, else by `getattr`: `None` when it is missing.
fn optional_attribute<'py>(
    obj: &Bound<'py, PyAny>,
    layout: Option<&Layout>,
    name: &Bound<'py, PyString>,
    slot: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    match layout.map_or(Read::Generic, |layout| layout.read(obj, slot)) {
        Read::Value(value) => Ok(value),
        Read::Missing => Ok(py.None().into_bound(py)),
        Read::Generic => Ok(optional_attr(obj, name)?.unwrap_or_else(|| py.None().into_bound(py))),
    }
}

/// The six fields of an exact `dict` that holds them and nothing else, read in one pass over
/// its entries instead of nine look-ups (six fields, three optional ones), or `None` to read it
/// by look-ups. Taken only when every key is the interned field name itself (as the keys of a
/// dict written with literal keys are: found by address, no key's `__eq__` or `__hash__` runs)
/// and every value is of an exact built-in type whose reading runs none of the caller's code
/// (`str` for `path`, `content` and `reason`, `int` for the lines, `float` or `int` for the
/// score): then no code can change the dict between the reads, the values are those the
/// look-ups would give, and a dict of six entries holding the six fields has no optional one.
fn six_fields<'py>(d: &Bound<'py, PyDict>) -> Option<[Bound<'py, PyAny>; 6]> {
    if d.len() != 6 {
        return None;
    }
    let py = d.py();
    let names = [
        intern!(py, "path").as_ptr(),
        intern!(py, "start").as_ptr(),
        intern!(py, "end").as_ptr(),
        intern!(py, "content").as_ptr(),
        intern!(py, "reason").as_ptr(),
        intern!(py, "score").as_ptr(),
    ];
    let mut found = [std::ptr::null_mut::<ffi::PyObject>(); 6];
    let mut pos: ffi::Py_ssize_t = 0;
    let mut key = std::ptr::null_mut();
    let mut value = std::ptr::null_mut();
    // SAFETY: attached, `d` is a live dict; between the calls only addresses are compared (no
    // code runs that could change the dict), and the borrowed values are owned below before
    // anything else runs.
    unsafe {
        while ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut key, &mut value) != 0 {
            let slot = names.iter().position(|&name| name == key)?;
            found[slot] = value;
        }
        // A dict holds each key once: six entries with six of the names are the six fields.
        if found.iter().any(|value| value.is_null()) {
            return None;
        }
        let ty = |p: *mut ffi::PyObject| ffi::Py_TYPE(p);
        let text = &raw mut ffi::PyUnicode_Type;
        let int = &raw mut ffi::PyLong_Type;
        let exact = ty(found[0]) == text
            && ty(found[1]) == int
            && ty(found[2]) == int
            && ty(found[3]) == text
            && ty(found[4]) == text
            && (ty(found[5]) == &raw mut ffi::PyFloat_Type || ty(found[5]) == int);
        if !exact {
            return None;
        }
        Some(found.map(|value| Bound::from_borrowed_ptr(py, value)))
    }
}

/// The canonical path of a candidate, interned to a dense id.
pub(crate) struct Paths<'py> {
    pub(crate) ids: FxHashMap<Box<[u8]>, u32>,
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

/// One candidate as it will be returned if selected.
pub(crate) enum Item<'py> {
    /// The caller's own `Candidate`: already canonical, plain ints.
    Same(Bound<'py, PyAny>),
    /// A new `Candidate` with the canonical path and plain-int lines.
    New(Candidate),
    /// Already moved into the result.
    Taken,
}

pub(crate) struct Reader<'py> {
    pub(crate) paths: Paths<'py>,
    kinds: Kinds<'py>,
    pub(crate) rows: Vec<Row>,
    pub(crate) items: Vec<Item<'py>>,
    total: u64,
    max_total: u64,
    /// Group id by group object (made at the first candidate with a group).
    groups: Option<Bound<'py, PyDict>>,
}

impl<'py> Reader<'py> {
    pub(crate) fn new(n: usize, max_total: u64) -> Self {
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
    pub(crate) fn n_groups(&self) -> usize {
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
            Shape::Six(_) => py.None().into_bound(py),
            Shape::Dict(d) => d
                .get_item(name)?
                .unwrap_or_else(|| py.None().into_bound(py)),
            Shape::Mapping => match obj.get_item(name) {
                Ok(v) => v,
                Err(e) if e.is_instance_of::<PyKeyError>(py) => py.None().into_bound(py),
                Err(e) => return Err(e),
            },
            Shape::Attributes(layout) => {
                optional_attribute(obj, layout.as_ref(), name, field::GROUP)?
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

impl<'py> Reader<'py> {
    pub(crate) fn read(&mut self, obj: &Bound<'py, PyAny>, index: usize) -> PyResult<()> {
        let py = obj.py();
        let shape = self.shape(obj)?;
        // A `Candidate`'s fields are borrowed (no reference-count writes on the hot path).
        let get = |name: &Bound<'py, PyString>,
                   slot: usize,
                   native: fn(&Candidate) -> &Py<PyAny>| match &shape {
            Shape::Native(c) => Ok(Field::Borrowed(native(c).bind_borrowed(py))),
            _ => field(obj, &shape, name, slot, index).map(Field::Owned),
        };

        let path = get(intern!(py, "path"), field::PATH, |c| &c.path)?;
        let (path_id, canonical) = self.paths.read(&path, index)?;

        let start_obj = get(intern!(py, "start"), field::START, |c| &c.start)?;
        let (start, start_int) = line(&start_obj, "start", index)?;
        check_start(start, &start_int, index)?;
        let end_obj = get(intern!(py, "end"), field::END, |c| &c.end)?;
        let (end, end_int) = line(&end_obj, "end", index)?;
        check_end(start, end, &end_int, index)?;

        let content = get(intern!(py, "content"), field::CONTENT, |c| &c.content)?;
        let cost = content_length(&content, index)?;
        // The snapshot: a str subclass becomes the exact str it holds (`str.__str__`).
        let content_exact = content.is_exact_instance_of::<PyString>();
        let reason_obj = get(intern!(py, "reason"), field::REASON, |c| &c.reason)?;
        let (reason, reason_exact) = reason(&reason_obj, index)?;
        let score_obj = get(intern!(py, "score"), field::SCORE, |c| &c.score)?;
        let (score, score_copy) = score(&score_obj, index)?;
        let (group_obj, group) = self.group(obj, &shape, index)?;
        let (sha_obj, sha_exact) = optional_field(
            obj,
            &shape,
            intern!(py, "source_sha256"),
            field::SOURCE_SHA256,
            |c| &c.source_sha256,
        )?;
        let sha_obj = source_sha256(sha_obj, index)?;
        let (id_obj, id_exact) = optional_field(
            obj,
            &shape,
            intern!(py, "source_id"),
            field::SOURCE_ID,
            |c| &c.source_id,
        )?;
        let id_obj = source_id(id_obj, index)?;

        self.add_to_total(py, cost, index)?;

        let snapshot = Snapshot {
            path: &path,
            canonical,
            start: start_int,
            start_exact: start_obj.is_exact_instance_of::<PyInt>(),
            end: end_int,
            end_exact: end_obj.is_exact_instance_of::<PyInt>(),
            content: &content,
            content_exact,
            reason_obj: &reason_obj,
            reason,
            reason_exact,
            score: &score_obj,
            score_copy,
            group: group_obj,
            source_sha256: (sha_obj, sha_exact),
            source_id: (id_obj, id_exact),
        };
        let item = snapshot.into_item(obj, matches!(shape, Shape::Native(_)))?;
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

    /// How to read the fields of `obj`.
    #[inline]
    fn shape<'a>(&mut self, obj: &'a Bound<'py, PyAny>) -> PyResult<Shape<'a, 'py>> {
        Ok(if let Ok(c) = obj.cast::<Candidate>() {
            Shape::Native(c.get())
        } else if let Ok(d) = obj.cast_exact::<PyDict>() {
            six_fields(d).map_or(Shape::Dict(d), Shape::Six)
        } else {
            match self.kinds.classify(obj)? {
                Kind::Mapping => Shape::Mapping,
                Kind::Attributes(layout) => Shape::Attributes(layout),
            }
        })
    }

    /// Count `cost` into the running total of content, which must stay within `max_total`.
    #[inline]
    fn add_to_total(&mut self, py: Python<'py>, cost: u64, index: usize) -> PyResult<()> {
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
        Ok(())
    }
}

/// `start` (as read by [`line`]) must be in `1..=MAX_LINE`.
#[inline]
fn check_start(start: i64, start_int: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
    let py = start_int.py();
    if start < 1 {
        return Err(invalid(
            py,
            "start",
            format!("must be >= 1, got {}", show_int(start_int)),
            index,
        ));
    }
    if start > i64::from(MAX_LINE) {
        let problem = format!("must be <= {MAX_LINE}, got {}", show_int(start_int));
        return Err(invalid(py, "start", problem, index));
    }
    Ok(())
}

/// `end` (as read by [`line`]) must be in `start..=MAX_LINE`.
#[inline]
fn check_end(start: i64, end: i64, end_int: &Bound<'_, PyAny>, index: usize) -> PyResult<()> {
    let py = end_int.py();
    if end < start {
        let problem = format!("must be >= start ({start}), got {}", show_int(end_int));
        return Err(invalid(py, "end", problem, index));
    }
    if end > i64::from(MAX_LINE) {
        let problem = format!("must be <= {MAX_LINE}, got {}", show_int(end_int));
        return Err(invalid(py, "end", problem, index));
    }
    Ok(())
}

/// The content's length in code points: its cost in characters. It must be a `str`.
#[inline]
fn content_length(content: &Bound<'_, PyAny>, index: usize) -> PyResult<u64> {
    match content.cast::<PyString>() {
        // SAFETY: a str (or subclass) object; its length in code points, read from the
        // object itself, so that a subclass's own __len__ plays no part.
        Ok(_) => Ok((unsafe { ffi::PyUnicode_GetLength(content.as_ptr()) }) as u64),
        Err(_) => {
            let problem = format!("must be a str, not {}", type_name(content));
            Err(invalid(content.py(), "content", problem, index))
        }
    }
}

/// The validated fields of one candidate, as read (borrowed where the reader borrowed them),
/// with whether each is exactly what a `Candidate` in a result holds.
struct Snapshot<'s, 'py> {
    path: &'s Bound<'py, PyAny>,
    /// The canonical path, when the caller's string cannot be reused.
    canonical: Option<Bound<'py, PyString>>,
    start: Bound<'py, PyAny>,
    start_exact: bool,
    end: Bound<'py, PyAny>,
    end_exact: bool,
    content: &'s Bound<'py, PyAny>,
    content_exact: bool,
    reason_obj: &'s Bound<'py, PyAny>,
    reason: Reason,
    reason_exact: bool,
    score: &'s Bound<'py, PyAny>,
    /// For a subclass instance, the exact `float` or `int` it holds.
    score_copy: Option<Bound<'py, PyAny>>,
    group: Bound<'py, PyAny>,
    source_sha256: (Bound<'py, PyAny>, bool),
    source_id: (Bound<'py, PyAny>, bool),
}

impl<'py> Snapshot<'_, 'py> {
    /// The candidate as it will be returned if selected: the caller's own `Candidate` (`obj`,
    /// when `native`) if it is already canonical and exact, else a new one holding the snapshot
    /// of exact values.
    #[inline]
    fn into_item(self, obj: &Bound<'py, PyAny>, native: bool) -> PyResult<Item<'py>> {
        let py = obj.py();
        let exact = self.start_exact
            && self.end_exact
            && self.content_exact
            && self.reason_exact
            && self.score_copy.is_none()
            && self.source_sha256.1
            && self.source_id.1;
        if native && self.canonical.is_none() && exact {
            return Ok(Item::Same(obj.clone()));
        }
        let content = if self.content_exact {
            self.content.clone().unbind()
        } else {
            exact_str(self.content)?.unbind()
        };
        let reason_obj = if self.reason_exact {
            self.reason_obj.clone().unbind()
        } else {
            reason_name(py, self.reason).clone().into_any().unbind()
        };
        let path = self.path;
        let score = self.score;
        Ok(Item::New(Candidate {
            path: (self.canonical).map_or_else(|| path.clone().unbind(), |c| c.into_any().unbind()),
            start: self.start.unbind(),
            end: self.end.unbind(),
            content,
            reason: reason_obj,
            score: (self.score_copy).map_or_else(|| score.clone().unbind(), Bound::unbind),
            group: self.group.unbind(),
            source_sha256: self.source_sha256.0.unbind(),
            source_id: self.source_id.0.unbind(),
        }))
    }
}

/// An optional field (`group`'s siblings `source_sha256`, `source_id`), read as `Reader::group`
/// reads `group`: a mapping without the key, an object without the attribute, `None`. Returns
/// the value and whether it is `None` or an exact `str` (else it is snapshotted).
fn optional_field<'py>(
    obj: &Bound<'py, PyAny>,
    shape: &Shape<'_, 'py>,
    name: &Bound<'py, PyString>,
    slot: usize,
    native: fn(&Candidate) -> &Py<PyAny>,
) -> PyResult<(Bound<'py, PyAny>, bool)> {
    let py = obj.py();
    let value = match shape {
        Shape::Native(c) => native(c).bind(py).clone(),
        Shape::Six(_) => py.None().into_bound(py),
        Shape::Dict(d) => d
            .get_item(name)?
            .unwrap_or_else(|| py.None().into_bound(py)),
        Shape::Mapping => match obj.get_item(name) {
            Ok(v) => v,
            Err(e) if e.is_instance_of::<PyKeyError>(py) => py.None().into_bound(py),
            Err(e) => return Err(e),
        },
        Shape::Attributes(layout) => optional_attribute(obj, layout.as_ref(), name, slot)?,
    };
    let exact = value.is_none() || value.is_exact_instance_of::<PyString>();
    Ok((value, exact))
}

/// How a candidate that is neither a `Candidate` nor an exact `dict` is read.
#[derive(Clone, Copy)]
enum Kind {
    /// `isinstance(obj, collections.abc.Mapping)`: by key.
    Mapping,
    /// By attribute, with its class's layout when it has one.
    Attributes(Option<Layout>),
}

/// What is remembered of one class: whether its instances are mappings, and how their
/// attributes are read (`None`: by `getattr`).
struct Remembered {
    mapping: bool,
    layout: Option<Layout>,
}

/// Whether candidates of a type are mappings (`isinstance(obj, collections.abc.Mapping)`),
/// remembered per type within one build with the layout of its attributes: the ABC check costs
/// about as much as reading all six fields of an object, and candidates are mostly of one or
/// two types.
///
/// The answer is only remembered for a type that can give no other answer for another of its
/// instances: no class in its MRO but `object` defines `__class__` or `__getattribute__`
/// (`ABCMeta.__instancecheck__` reads `instance.__class__`), and it is forgotten when the ABC
/// registry changes (`abc.get_cache_token()`, e.g. `Mapping.register(...)` run by the caller's
/// code during the build; the token is read before every candidate) and, for a class with a
/// layout, when the class is changed (its version tag, see `access.rs`). Remembered types are
/// kept alive, so an address is never reused.
struct Kinds<'py> {
    by_type: FxHashMap<usize, Remembered>,
    alive: Vec<Bound<'py, PyType>>,
    /// `abc.get_cache_token` and the token the remembered answers were computed under.
    token: Option<Token<'py>>,
    at: u64,
    /// `collections.abc.Mapping`.
    mapping_abc: Option<Bound<'py, PyAny>>,
}

impl<'py> Kinds<'py> {
    fn new() -> Self {
        Self {
            by_type: FxHashMap::default(),
            alive: Vec::new(),
            token: None,
            at: 0,
            mapping_abc: None,
        }
    }

    fn current_token(&mut self, py: Python<'py>) -> PyResult<u64> {
        let token = match &self.token {
            Some(token) => token,
            None => self.token.insert(Token::new(py)?),
        };
        token.read()
    }

    /// How to read `obj`, neither a `Candidate` nor an exact `dict`: as a mapping when
    /// `isinstance(obj, collections.abc.Mapping)`, else by attribute.
    fn classify(&mut self, obj: &Bound<'py, PyAny>) -> PyResult<Kind> {
        let py = obj.py();
        let ty = obj.get_type();
        let key = ty.as_ptr() as usize;
        if !self.by_type.is_empty() {
            let token = self.current_token(py)?;
            if token != self.at {
                self.by_type.clear();
            } else if let Some(known) = self.by_type.get(&key) {
                match known.layout {
                    _ if known.mapping => return Ok(Kind::Mapping),
                    None => return Ok(Kind::Attributes(None)),
                    Some(layout) if layout.holds(&ty) => {
                        return Ok(Kind::Attributes(Some(layout)));
                    }
                    // The class was changed since: work it out again.
                    Some(_) => {
                        self.by_type.remove(&key);
                    }
                }
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
        let mut layout = None;
        if plain_class(&ty)? {
            if !mapping {
                layout = Layout::of(&ty);
            }
            if self.by_type.is_empty() {
                self.at = self.current_token(py)?;
            }
            self.by_type.insert(key, Remembered { mapping, layout });
            self.alive.push(ty);
        }
        Ok(if mapping {
            Kind::Mapping
        } else {
            Kind::Attributes(layout)
        })
    }
}

/// `abc.get_cache_token()`, which changes whenever a class is registered with an ABC. On
/// CPython it is read from the `_abc` module's state (the counter `get_cache_token` returns),
/// which costs a memory read rather than a call, when that counter is where CPython 3.10 and
/// later keep it and holds what the call returns; else it is called.
struct Token<'py> {
    get: Bound<'py, PyAny>,
    /// The counter in the `_abc` module's state, which `module` keeps alive.
    counter: Option<*const u64>,
    _module: Option<Bound<'py, PyAny>>,
}

impl<'py> Token<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let get = py
            .import(intern!(py, "abc"))?
            .getattr(intern!(py, "get_cache_token"))?;
        let mut token = Self {
            get,
            counter: None,
            _module: None,
        };
        #[cfg(not(any(PyPy, GraalPy, Py_LIMITED_API, Py_GIL_DISABLED)))]
        if let Ok(module) = py.import(intern!(py, "_abc"))
            && module
                .getattr(intern!(py, "get_cache_token"))
                .is_ok_and(|g| g.is(&token.get))
        {
            // SAFETY: attached; `module` is a live module object (NULL: no state).
            let state = unsafe { ffi::PyModule_GetState(module.as_ptr()) };
            if !state.is_null() {
                // `_abcmodule_state { PyTypeObject *_abc_data_type; unsigned long long
                // abc_invalidation_counter; }`: the counter follows one pointer.
                let counter = state
                    .cast::<u8>()
                    .wrapping_add(std::mem::size_of::<*mut ffi::PyObject>())
                    .cast::<u64>()
                    .cast_const();
                let called = token.call()?;
                // SAFETY: the state is at least a pointer and a counter long where this layout
                // holds; it is only used when what it reads is what the call returned.
                if counter.is_aligned() && unsafe { counter.read() } == called {
                    token.counter = Some(counter);
                    token._module = Some(module.into_any());
                }
            }
        }
        Ok(token)
    }

    fn call(&self) -> PyResult<u64> {
        self.get.call0()?.extract::<u64>()
    }

    /// The current token.
    #[inline]
    fn read(&self) -> PyResult<u64> {
        match self.counter {
            // SAFETY: attached (the interpreter writes it only while attached too); the module
            // holding the state is alive.
            Some(counter) => Ok(unsafe { counter.read_volatile() }),
            None => self.call(),
        }
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
