//! Small helpers on Python objects shared by the binding: equality and `repr` of the
//! classes, type names and integers in messages, exact `str`/`int` snapshots, the cyclic
//! garbage collector, optional attributes.

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};
use pyo3::{IntoPyObjectExt, ffi, intern};

/// Compare two field tuples for `==`/`!=`; other orderings are not defined.
pub(crate) fn compare(
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

pub(crate) fn reprs(fields: &[(&str, &Bound<'_, PyAny>)]) -> PyResult<String> {
    let mut parts = Vec::with_capacity(fields.len());
    for (name, value) in fields {
        parts.push(format!("{name}={}", value.repr()?));
    }
    Ok(parts.join(", "))
}

/// `str(int)`, or a stand-in for an integer too long for Python to print (its digit limit):
/// identical to `bugcontext.core._input.show_int`, since error messages must never fail.
pub(crate) fn show_int(int: &Bound<'_, PyAny>) -> String {
    int.str().map_or_else(
        |_| "an integer too large to print".to_owned(),
        |s| s.to_string(),
    )
}

pub(crate) fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map_or_else(|_| "object".to_owned(), |n| n.to_string())
}

/// The exact `str` a `str` (or subclass) object holds: `str.__str__(value)`, which runs none
/// of the subclass's own code. An exact `str` is returned as is.
pub(crate) fn exact_str<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: attached; PyUnicode_FromObject copies a str subclass's text into a new exact str
    // (a new reference to an exact str), and fails for anything else.
    unsafe { Bound::from_owned_ptr_or_err(value.py(), ffi::PyUnicode_FromObject(value.as_ptr())) }
}

/// The exact `int` an `int` subclass object holds (`int.__index__(value)`, which runs none of
/// the subclass's own code); an exact `int` is returned as is.
pub(crate) fn exact_int<'py>(value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: attached; for an int (or subclass) PyNumber_Index returns the value as an exact
    // int without calling `__index__` (CPython >= 3.10).
    unsafe { Bound::from_owned_ptr_or_err(value.py(), ffi::PyNumber_Index(value.as_ptr())) }
}

/// Stop the cyclic garbage collector from tracking `obj`, which must not be able to take part
/// in a reference cycle (it holds only atomic values: exact `str`, `int`, `float`). CPython
/// does the same for tuples of atomic values; it spares every later collection a visit.
pub(crate) fn untrack(obj: &Bound<'_, impl Sized>) {
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
pub(crate) struct GcPause(bool);

impl GcPause {
    pub(crate) fn new(_py: Python<'_>) -> Self {
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

pub(crate) fn surrogate_key(text: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    let py = text.py();
    let encoded = text.call_method1(intern!(py, "encode"), ("utf-8", "surrogatepass"))?;
    encoded.extract::<Vec<u8>>()
}

/// `getattr(obj, name)`, or `None` when that raises `AttributeError` (any other error is
/// raised). Same outcome as catching the error, but an object whose type uses the generic
/// attribute lookup (plain classes, dataclasses, `__slots__`) reports a missing attribute
/// without making the exception: an optional field costs little when it is absent.
pub(crate) fn optional_attr<'py>(
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
