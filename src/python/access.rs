//! Reading a candidate's fields from an object of a caller's class, per field the way its class
//! lays it out.
//!
//! `getattr(obj, name)` on an object whose class uses the generic attribute lookup looks the
//! name up in the class (and its bases), then calls the descriptor found or looks in the
//! instance's `__dict__`. For a name that the class defines as a `__slots__` member, the value
//! is a pointer at a fixed offset in the object; for a name the class does not define, on a
//! class without instance dicts, the attribute is missing. Both answers depend only on the
//! class, so they are worked out once per class and read straight from the object after that,
//! as long as the class is unchanged: CPython gives a class a new version tag whenever it or a
//! base is modified (an attribute set or deleted, `__bases__` assigned), and the answers are
//! only used while the tag they were worked out under is the class's tag.
//!
//! Every other case (a property, a class attribute, an instance dict, a `__getattr__` or
//! `__getattribute__` of the caller's) is read with `getattr`, exactly as before.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The fields a candidate may have, in the order [`Layout`] lists them.
pub(crate) const NAMES: [&str; 9] = [
    "path",
    "start",
    "end",
    "content",
    "reason",
    "score",
    "group",
    "source_sha256",
    "source_id",
];

/// Index of a field in [`NAMES`].
pub(crate) mod field {
    pub(crate) const PATH: usize = 0;
    pub(crate) const START: usize = 1;
    pub(crate) const END: usize = 2;
    pub(crate) const CONTENT: usize = 3;
    pub(crate) const REASON: usize = 4;
    pub(crate) const SCORE: usize = 5;
    pub(crate) const GROUP: usize = 6;
    pub(crate) const SOURCE_SHA256: usize = 7;
    pub(crate) const SOURCE_ID: usize = 8;
}

/// How one field of a class's instances is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Access {
    /// Through `getattr`.
    Generic,
    /// A `__slots__` member: the object pointer at this byte offset (NULL: not set, missing).
    Slot(usize),
    /// Neither the class nor a base defines it and instances have no `__dict__`: missing.
    Absent,
}

/// What reading one field gave.
pub(crate) enum Read<'py> {
    Value(Bound<'py, PyAny>),
    Missing,
    Generic,
}

/// How the fields of the instances of one class are read, valid while the class's version tag
/// is `version`: per field, [`GENERIC`], [`ABSENT`] or the byte offset of its slot (at least the
/// size of an object header, so never one of those).
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    /// The class (its address; the reader keeps it alive).
    ty: usize,
    version: u32,
    fields: [u32; 9],
}

const GENERIC: u32 = 0;
const ABSENT: u32 = 1;

impl Access {
    fn code(self) -> Option<u32> {
        match self {
            Access::Generic => Some(GENERIC),
            Access::Absent => Some(ABSENT),
            Access::Slot(offset) => u32::try_from(offset).ok().filter(|o| *o > ABSENT),
        }
    }
}

impl Layout {
    /// The layout of `ty`'s instances, or `None` when no field can be read but by `getattr`.
    /// `ty` must be a class whose instances give no other answer than `ty`'s (see
    /// `reader::plain_class`); it is looked up here, which runs none of the caller's code.
    #[cfg(not(any(PyPy, GraalPy, Py_LIMITED_API)))]
    pub(crate) fn of(ty: &Bound<'_, PyType>) -> Option<Layout> {
        unsafe extern "C" {
            // CPython: the attribute `name` as found in `ty`'s MRO (borrowed), or NULL; sets no
            // error. It gives `ty` a version tag if it had none (when tags are available).
            fn _PyType_Lookup(
                ty: *mut ffi::PyTypeObject,
                name: *mut ffi::PyObject,
            ) -> *mut ffi::PyObject;
        }
        let py = ty.py();
        let raw = ty.as_type_ptr();
        // SAFETY: attached; `raw` is a live type object.
        unsafe {
            // By address: the generic lookup is one function of the interpreter.
            let generic = ffi::PyObject_GenericGetAttr as *const () as usize;
            if (*raw).tp_getattro.map(|f| f as *const () as usize) != Some(generic) {
                return None;
            }
            let has_dict =
                (*raw).tp_dictoffset != 0 || (*raw).tp_flags & ffi::Py_TPFLAGS_MANAGED_DICT != 0;
            let basic = usize::try_from((*raw).tp_basicsize).ok()?;
            let mut fields = [Access::Generic; 9];
            for (access, name) in fields.iter_mut().zip(NAMES) {
                let name = pyo3::types::PyString::intern(py, name);
                let descr = _PyType_Lookup(raw, name.as_ptr());
                *access = if descr.is_null() {
                    if has_dict {
                        Access::Generic
                    } else {
                        Access::Absent
                    }
                } else {
                    slot(raw, descr, basic).unwrap_or(Access::Generic)
                };
            }
            if fields.iter().all(|a| *a == Access::Generic) {
                return None;
            }
            let flags = (*raw).tp_flags;
            let version = (*raw).tp_version_tag;
            if version == 0 || flags & ffi::Py_TPFLAGS_VALID_VERSION_TAG == 0 {
                return None;
            }
            let mut codes = [GENERIC; 9];
            for (code, access) in codes.iter_mut().zip(fields) {
                *code = access.code().unwrap_or(GENERIC);
            }
            Some(Layout {
                ty: raw as usize,
                version,
                fields: codes,
            })
        }
    }

    #[cfg(any(PyPy, GraalPy, Py_LIMITED_API))]
    pub(crate) fn of(_ty: &Bound<'_, PyType>) -> Option<Layout> {
        None
    }

    /// Whether the layout still holds for `ty` (the class it was made for): the class, and
    /// every base, is unchanged since.
    #[inline]
    pub(crate) fn holds(&self, ty: &Bound<'_, PyType>) -> bool {
        #[cfg(not(any(PyPy, GraalPy, Py_LIMITED_API)))]
        {
            let raw = ty.as_type_ptr();
            // SAFETY: attached; `raw` is a live type object.
            unsafe {
                (*raw).tp_version_tag == self.version
                    && (*raw).tp_flags & ffi::Py_TPFLAGS_VALID_VERSION_TAG != 0
            }
        }
        #[cfg(any(PyPy, GraalPy, Py_LIMITED_API))]
        {
            let _ = ty;
            false
        }
    }

    /// Field `field` of `obj`: by the layout while `obj` is an instance of exactly the class it
    /// was made for and that class is unchanged (checked at every field, since the caller's
    /// code run while an earlier field was read may have changed either), else `Generic`.
    #[inline]
    pub(crate) fn read<'py>(&self, obj: &Bound<'py, PyAny>, field: usize) -> Read<'py> {
        let ty = obj.get_type();
        if ty.as_ptr() as usize != self.ty || !self.holds(&ty) {
            return Read::Generic;
        }
        match self.fields[field] {
            GENERIC => Read::Generic,
            ABSENT => Read::Missing,
            offset => {
                let offset = offset as usize;
                // SAFETY: attached; `obj` is an instance of the class the layout was made for,
                // whose member at `offset` (within its basic size) is an object pointer.
                let value = unsafe {
                    *obj.as_ptr()
                        .cast::<u8>()
                        .add(offset)
                        .cast::<*mut ffi::PyObject>()
                };
                if value.is_null() {
                    Read::Missing
                } else {
                    // SAFETY: a live object the instance holds a reference to.
                    Read::Value(unsafe { Bound::from_borrowed_ptr(obj.py(), value) })
                }
            }
        }
    }
}

/// The slot a descriptor found in `ty`'s MRO reads, when it is a plain `__slots__` member of
/// `ty` or a base (the member descriptor's own check `isinstance(obj, d_type)` then always
/// holds for an instance of `ty`).
#[cfg(not(any(PyPy, GraalPy, Py_LIMITED_API)))]
unsafe fn slot(
    ty: *mut ffi::PyTypeObject,
    descr: *mut ffi::PyObject,
    basic: usize,
) -> Option<Access> {
    // SAFETY (whole body): attached; `descr` is a live object, read as a member descriptor
    // only when its type is exactly that.
    unsafe {
        if ffi::Py_TYPE(descr) != &raw mut ffi::PyMemberDescr_Type {
            return None;
        }
        let descr = descr.cast::<ffi::PyMemberDescrObject>();
        let member = (*descr).d_member;
        if member.is_null() || ffi::PyType_IsSubtype(ty, (*descr).d_common.d_type) == 0 {
            return None;
        }
        let member = *member;
        // An object member that raises AttributeError when unset, with no flag but
        // read-only (no audit, no relative offset).
        if member.type_code != ffi::Py_T_OBJECT_EX || member.flags & !ffi::Py_READONLY != 0 {
            return None;
        }
        let offset = usize::try_from(member.offset).ok()?;
        let size = std::mem::size_of::<*mut ffi::PyObject>();
        if offset < std::mem::size_of::<ffi::PyObject>() || offset + size > basic {
            return None;
        }
        Some(Access::Slot(offset))
    }
}
