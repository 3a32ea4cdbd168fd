//! Columnar builds: one independent build per group of rows of an Arrow table, free of Python
//! types.
//!
//! The input is a table as Arrow record batches with the columns `path`, `start`, `end`,
//! `content`, `reason` and `score` (strings may be `utf8`, `large_utf8`, `utf8_view` or
//! dictionary-encoded; lines any integer type; scores float32, float64 or any integer type),
//! an optional key column (integers or strings) that splits the rows into groups, the budget
//! (one number, or an integer column constant within each group) and an optional
//! `list<string>` column of failing files (constant within each group).
//!
//! Every group is built exactly as [`engine::build`] builds the group's rows taken as a list
//! of candidates in table order (the Python function `bugcontext.build` on that list gives
//! the same decisions): the row's position within its group is its candidate index. Groups
//! run in parallel (rayon); content is read in place (a character cost counts code points
//! straight from the UTF-8 bytes) and never copied.
//!
//! Validation is complete before any output, and its order is fixed, so that the first error
//! reported is well defined:
//!
//! 1. a group key that is null or not valid Arrow data (first such row in table order);
//! 2. a cell of the other string columns (path, content, reason, failing files: first such
//!    row in table order, then in that column order) that is not valid Arrow data: bytes that
//!    are not UTF-8, offsets or views outside the column's data, a dictionary index out of
//!    range. The C data interface imports buffers unchecked, so every string cell the build
//!    reads is checked here (null cells are never read, and not checked) before any `&str` is
//!    made of it;
//! 3. a group with more than `max_candidates` rows (first such group in group order);
//! 4. the budget and failing-files cells, row by row in table order (each cell on its own,
//!    then equal to the cell of the group's first row);
//! 5. the candidates, row by row in table order: path, start, end, content, reason, score,
//!    then the group's running total of content characters against `max_total_chars`.
//!
//! Groups are numbered in order of first appearance.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, GenericListArray, GenericStringArray,
    PrimitiveArray, RecordBatch, StringArray, StringViewArray, UInt32Array, UInt64Array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, Field, Schema};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::engine::{self, MAX_LINE, Omitted, Reason, Row};
use crate::tokens::{self, Encoding};

/// The budget of every group.
#[derive(Clone, Debug)]
pub enum Budget {
    /// The same budget for every group.
    Fixed(u64),
    /// The name of an integer column holding each group's budget (the same in all its rows).
    Column(String),
}

/// The unit of cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Characters: Unicode code points of the content.
    Chars,
    /// Tokens of an encoding, counted in the content (see [`crate::tokens`]).
    Tokens(Encoding),
}

/// What to build.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The key column, or `None` for one group holding every row.
    pub group_by: Option<String>,
    pub budget: Budget,
    /// The `list<string>` column of failing files, or `None`.
    pub failure_files: Option<String>,
    pub unit: Unit,
    /// At most this many rows in one group.
    pub max_candidates: u64,
    /// At most this many content characters in one group.
    pub max_total_chars: u64,
    /// Worker threads; `None` uses rayon's global pool (one thread per core).
    pub threads: Option<usize>,
}

/// Which error class a [`TableError`] maps to (`bugcontext.core.errors`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// `InvalidInputError` (a column) or `InvalidCandidateError` (a row).
    Invalid,
    /// `ResourceLimitError`, with the limit that was exceeded (boxed: errors stay small).
    Limit(Box<LimitFound>),
}

/// A resource limit exceeded: `name` the setting of `bugcontext.core.limits.Limits`, `value`
/// the amount found, `maximum` the setting's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitFound {
    pub name: &'static str,
    pub value: u64,
    pub maximum: u64,
}

/// What is wrong, as text, except where the binding must quote a value its own way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    Text(String),
    /// A reason that is not one of the three names: the text as given.
    Reason(String),
}

/// The first validation error of the whole table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError {
    pub kind: ErrorKind,
    /// The offending column.
    pub field: String,
    pub problem: Problem,
    /// The row in the whole table (`None` for a column or a whole group).
    pub row: Option<usize>,
    /// The row within its group (its candidate index in the group's build).
    pub local: Option<usize>,
    /// A row of the offending group, to name its key (`None` for a column).
    pub key_row: Option<usize>,
}

impl TableError {
    fn column(field: &str, problem: String) -> Self {
        Self {
            kind: ErrorKind::Invalid,
            field: field.to_owned(),
            problem: Problem::Text(problem),
            row: None,
            local: None,
            key_row: None,
        }
    }

    fn row(field: &str, problem: Problem, row: usize, local: usize) -> Self {
        Self {
            kind: ErrorKind::Invalid,
            field: field.to_owned(),
            problem,
            row: Some(row),
            local: Some(local),
            key_row: Some(row),
        }
    }
}

/// The outcome: one decision row per input row (table order), one summary row per group.
#[derive(Debug)]
pub struct Output {
    /// Columns `index`, `rank`, `selected`, `order`, `omission`, `overlaps`, `cost`.
    pub decisions: RecordBatch,
    /// Columns `first_row`, `candidates`, `selected`, `omitted_overlap`, `omitted_budget`,
    /// `used`, `budget`, `truncated`, one row per group in order of first appearance.
    pub groups: RecordBatch,
}

// ---------------------------------------------------------------------------------------------
// Column readers over one chunk.

/// A string column of one chunk.
enum Strs<'a> {
    Utf8(&'a GenericStringArray<i32>),
    Large(&'a GenericStringArray<i64>),
    View(&'a StringViewArray),
    Dict {
        keys: Ints<'a>,
        values: Box<Strs<'a>>,
        n_values: usize,
    },
}

impl<'a> Strs<'a> {
    fn new(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Utf8 => Self::Utf8(array.as_string::<i32>()),
            DataType::LargeUtf8 => Self::Large(array.as_string::<i64>()),
            DataType::Utf8View => Self::View(array.as_string_view()),
            DataType::Dictionary(_, _) => {
                let dict = array.as_any_dictionary();
                Self::Dict {
                    keys: Ints::new(dict.keys())?,
                    values: Box::new(Self::new(dict.values().as_ref())?),
                    n_values: dict.values().len(),
                }
            }
            _ => return None,
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Self::Utf8(a) => (!a.is_null(i)).then(|| a.value(i)),
            Self::Large(a) => (!a.is_null(i)).then(|| a.value(i)),
            Self::View(a) => (!a.is_null(i)).then(|| a.value(i)),
            Self::Dict {
                keys,
                values,
                n_values,
            } => {
                // Every key read is in range (`first_invalid` ran before any read); this only
                // keeps an unchecked one from panicking.
                let key = usize::try_from(keys.get(i)?).ok()?;
                if key >= *n_values {
                    return None;
                }
                values.get(key)
            }
        }
    }
}

/// Why a cell of a column is not valid Arrow data (the C data interface imports buffers
/// unchecked, so a producer can hand any bytes and offsets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bad {
    /// The cell's bytes are not UTF-8.
    Utf8,
    /// The cell's offsets or view point outside the column's data.
    Bounds,
    /// A dictionary index out of range: the index, the number of dictionary values.
    Key(i128, usize),
}

impl Bad {
    fn problem(self) -> String {
        match self {
            Self::Utf8 => "is not valid UTF-8".to_owned(),
            Self::Bounds => {
                "is not valid Arrow data: its offsets point outside the column's data".to_owned()
            }
            Self::Key(key, n) => {
                format!("has dictionary index {key}, out of range for {n} dictionary values")
            }
        }
    }
}

/// The problem of the byte range `start..end` of a values buffer whose length is `last` (the
/// last offset, which the C data import takes as the buffer's length).
#[inline]
fn range_problem(values: &[u8], start: i64, end: i64, last: i64) -> Option<Bad> {
    if start < 0 || start > end || end > last || end as u64 > values.len() as u64 {
        return Some(Bad::Bounds);
    }
    simdutf8::basic::from_utf8(&values[start as usize..end as usize])
        .err()
        .map(|_| Bad::Utf8)
}

/// Offsets per block of [`offsets_all_valid`]: a block's bytes (some hundred KiB for typical
/// cells) are still in the cache when its offsets are checked, so the data is read once.
const BLOCK_OFFSETS: usize = 4096;

/// Whether every range of `offsets` into `values` is in bounds and valid UTF-8, checked a
/// block of cells at a time: offsets non-decreasing from >= 0 to within `values`, the bytes
/// they span UTF-8, and every offset on a character boundary. False means: look cell by cell.
fn offsets_all_valid<O: Copy + Into<i64>>(offsets: &[O], values: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        return true;
    };
    let (first, last): (i64, i64) = (first.into(), last.into());
    if first < 0 || last as u64 > values.len() as u64 {
        return false;
    }
    if !offsets.windows(2).all(|w| w[0].into() <= w[1].into()) {
        return false;
    }
    let last = last as usize;
    // Each block's bytes are valid UTF-8 (so they start on a character boundary), and every
    // offset inside the block at a byte that is not a continuation byte (or at the end): then
    // every range is valid UTF-8 on its own.
    let mut start = 0;
    while start + 1 < offsets.len() {
        let end = (start + BLOCK_OFFSETS).min(offsets.len() - 1);
        let (lo, hi) = (offsets[start].into() as usize, offsets[end].into() as usize);
        if simdutf8::basic::from_utf8(&values[lo..hi]).is_err() {
            return false;
        }
        let inner = offsets[start + 1..end].iter().all(|&o| {
            let o = o.into() as usize;
            o == last || (values[o] as i8) >= -0x40
        });
        if !inner {
            return false;
        }
        start = end;
    }
    true
}

/// The problem of view `i` of a string view column.
fn view_problem(a: &StringViewArray, i: usize) -> Option<Bad> {
    let view = a.views()[i];
    let len = view as u32 as usize;
    if len <= 12 {
        let bytes = view.to_le_bytes();
        return simdutf8::basic::from_utf8(&bytes[4..4 + len])
            .err()
            .map(|_| Bad::Utf8);
    }
    let buffer = (view >> 64) as u32 as usize;
    let offset = (view >> 96) as u32 as usize;
    let Some(data) = a.data_buffers().get(buffer) else {
        return Some(Bad::Bounds);
    };
    let Some(bytes) = data.as_slice().get(offset..offset + len) else {
        return Some(Bad::Bounds);
    };
    simdutf8::basic::from_utf8(bytes).err().map(|_| Bad::Utf8)
}

impl Strs<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Utf8(a) => a.len(),
            Self::Large(a) => a.len(),
            Self::View(a) => a.len(),
            Self::Dict { keys, .. } => keys.len(),
        }
    }

    fn is_valid(&self, i: usize) -> bool {
        match self {
            Self::Utf8(a) => a.is_valid(i),
            Self::Large(a) => a.is_valid(i),
            Self::View(a) => a.is_valid(i),
            Self::Dict { keys, .. } => keys.get(i).is_some(),
        }
    }

    /// The problem of cell `i`, if it is not null (a null cell is never read).
    fn cell_problem(&self, i: usize) -> Option<Bad> {
        if !self.is_valid(i) {
            return None;
        }
        match self {
            Self::Utf8(a) => {
                let o = a.value_offsets();
                let last = i64::from(o[o.len() - 1]);
                range_problem(a.values(), o[i].into(), o[i + 1].into(), last)
            }
            Self::Large(a) => {
                let o = a.value_offsets();
                range_problem(a.values(), o[i], o[i + 1], o[o.len() - 1])
            }
            Self::View(a) => view_problem(a, i),
            Self::Dict {
                keys,
                values,
                n_values,
            } => {
                let key = keys.get(i)?;
                match usize::try_from(key) {
                    Ok(k) if k < *n_values => values.cell_problem(k),
                    _ => Some(Bad::Key(key, *n_values)),
                }
            }
        }
    }

    /// The first cell (in order) that is not null and not valid, with its problem.
    fn first_invalid(&self) -> Option<(usize, Bad)> {
        let all_valid = match self {
            Self::Utf8(a) => offsets_all_valid(a.value_offsets(), a.values()),
            Self::Large(a) => offsets_all_valid(a.value_offsets(), a.values()),
            Self::View(_) => false,
            Self::Dict {
                keys,
                values,
                n_values,
            } => {
                // Each dictionary value is checked once, when first referenced.
                let mut seen: Vec<Option<Option<Bad>>> = vec![None; *n_values];
                return (0..keys.len()).find_map(|i| {
                    let key = keys.get(i)?;
                    let bad = match usize::try_from(key) {
                        Ok(k) if k < *n_values => {
                            *seen[k].get_or_insert_with(|| values.cell_problem(k))
                        }
                        _ => Some(Bad::Key(key, *n_values)),
                    };
                    bad.map(|b| (i, b))
                });
            }
        };
        if all_valid {
            return None;
        }
        (0..self.len()).find_map(|i| self.cell_problem(i).map(|b| (i, b)))
    }
}

/// An integer column of one chunk, read as `i128` (wide enough for every integer type).
enum Ints<'a> {
    I8(&'a PrimitiveArray<Int8Type>),
    I16(&'a PrimitiveArray<Int16Type>),
    I32(&'a PrimitiveArray<Int32Type>),
    I64(&'a PrimitiveArray<Int64Type>),
    U8(&'a PrimitiveArray<UInt8Type>),
    U16(&'a PrimitiveArray<UInt16Type>),
    U32(&'a PrimitiveArray<UInt32Type>),
    U64(&'a PrimitiveArray<UInt64Type>),
}

impl<'a> Ints<'a> {
    fn new(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Int8 => Self::I8(array.as_primitive()),
            DataType::Int16 => Self::I16(array.as_primitive()),
            DataType::Int32 => Self::I32(array.as_primitive()),
            DataType::Int64 => Self::I64(array.as_primitive()),
            DataType::UInt8 => Self::U8(array.as_primitive()),
            DataType::UInt16 => Self::U16(array.as_primitive()),
            DataType::UInt32 => Self::U32(array.as_primitive()),
            DataType::UInt64 => Self::U64(array.as_primitive()),
            _ => return None,
        })
    }

    fn len(&self) -> usize {
        match self {
            Self::I8(a) => a.len(),
            Self::I16(a) => a.len(),
            Self::I32(a) => a.len(),
            Self::I64(a) => a.len(),
            Self::U8(a) => a.len(),
            Self::U16(a) => a.len(),
            Self::U32(a) => a.len(),
            Self::U64(a) => a.len(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Option<i128> {
        macro_rules! read {
            ($a:expr) => {
                (!$a.is_null(i)).then(|| i128::from($a.value(i)))
            };
        }
        match self {
            Self::I8(a) => read!(a),
            Self::I16(a) => read!(a),
            Self::I32(a) => read!(a),
            Self::I64(a) => read!(a),
            Self::U8(a) => read!(a),
            Self::U16(a) => read!(a),
            Self::U32(a) => read!(a),
            Self::U64(a) => read!(a),
        }
    }
}

/// A score column of one chunk: floats, or integers compared as the nearest `f64` (as
/// Python's `float(int)` does).
enum Scores<'a> {
    F32(&'a PrimitiveArray<Float32Type>),
    F64(&'a PrimitiveArray<Float64Type>),
    Int(Ints<'a>),
}

impl<'a> Scores<'a> {
    fn new(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Float32 => Self::F32(array.as_primitive()),
            DataType::Float64 => Self::F64(array.as_primitive()),
            _ => Self::Int(Ints::new(array)?),
        })
    }

    #[inline]
    fn get(&self, i: usize) -> Option<f64> {
        match self {
            Self::F32(a) => (!a.is_null(i)).then(|| f64::from(a.value(i))),
            Self::F64(a) => (!a.is_null(i)).then(|| a.value(i)),
            // Every i128 read from a 64-bit integer rounds to the nearest f64, ties to even.
            Self::Int(a) => a.get(i).map(|v| v as f64),
        }
    }
}

/// A `list<string>` column of one chunk.
enum Lists<'a> {
    List(&'a GenericListArray<i32>, Strs<'a>),
    Large(&'a GenericListArray<i64>, Strs<'a>),
}

impl<'a> Lists<'a> {
    fn new(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::List(_) => {
                let list = array.as_list::<i32>();
                Self::List(list, Strs::new(list.values().as_ref())?)
            }
            DataType::LargeList(_) => {
                let list = array.as_list::<i64>();
                Self::Large(list, Strs::new(list.values().as_ref())?)
            }
            _ => return None,
        })
    }

    /// The first row (in order) that is not null and not valid: offsets outside the items, or
    /// an item that is not valid (the problem prefixed with `item {j}: `).
    fn first_invalid(&self) -> Option<(usize, String)> {
        let (n, items) = match self {
            Self::List(a, v) => (a.len(), v),
            Self::Large(a, v) => (a.len(), v),
        };
        // Each item is checked once, when first referenced.
        let mut seen: Vec<Option<Option<Bad>>> = vec![None; items.len()];
        (0..n).find_map(|i| {
            let (start, end): (i64, i64) = match self {
                Self::List(a, _) if a.is_valid(i) => {
                    (a.value_offsets()[i].into(), a.value_offsets()[i + 1].into())
                }
                Self::Large(a, _) if a.is_valid(i) => {
                    (a.value_offsets()[i], a.value_offsets()[i + 1])
                }
                _ => return None,
            };
            if start < 0 || start > end || end as u64 > items.len() as u64 {
                return Some((i, Bad::Bounds.problem()));
            }
            (start as usize..end as usize).find_map(|j| {
                let bad = (*seen[j].get_or_insert_with(|| items.cell_problem(j)))?;
                Some((i, format!("item {}: {}", j - start as usize, bad.problem())))
            })
        })
    }

    /// The items of row `i`, or `None` for a null list.
    fn get(&self, i: usize) -> Option<Vec<Option<&'a str>>> {
        let (range, values) = match self {
            Self::List(a, v) => {
                let o = a.value_offsets();
                (a.is_valid(i).then(|| o[i] as usize..o[i + 1] as usize)?, v)
            }
            Self::Large(a, v) => {
                let o = a.value_offsets();
                (a.is_valid(i).then(|| o[i] as usize..o[i + 1] as usize)?, v)
            }
        };
        Some(range.map(|j| values.get(j)).collect())
    }
}

/// A group key: an integer or a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key<'a> {
    Int(i128),
    Str(&'a str),
}

enum Keys<'a> {
    Int(Ints<'a>),
    Str(Strs<'a>),
}

impl<'a> Keys<'a> {
    fn new(array: &'a dyn Array) -> Option<Self> {
        Ints::new(array)
            .map(Self::Int)
            .or_else(|| Strs::new(array).map(Self::Str))
    }

    fn first_invalid(&self) -> Option<(usize, Bad)> {
        match self {
            Self::Int(_) => None,
            Self::Str(a) => a.first_invalid(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Option<Key<'a>> {
        match self {
            Self::Int(a) => a.get(i).map(Key::Int),
            Self::Str(a) => a.get(i).map(Key::Str),
        }
    }
}

/// The columns of one chunk (record batch).
struct Chunk<'a> {
    path: Strs<'a>,
    start: Ints<'a>,
    end: Ints<'a>,
    content: Strs<'a>,
    reason: Strs<'a>,
    /// For a dictionary-encoded reason column with few values: each value's reason (`None`
    /// for a value that is not valid or not a reason), so a row's reason is one lookup.
    reasons: Option<Vec<Option<Reason>>>,
    score: Scores<'a>,
    budget: Option<Ints<'a>>,
    failure_files: Option<Lists<'a>>,
}

fn column<'a, T>(
    batch: &'a RecordBatch,
    name: &str,
    read: fn(&'a dyn Array) -> Option<T>,
    kind: &str,
) -> Result<T, TableError> {
    let Some(array) = batch.column_by_name(name) else {
        return Err(TableError::column(
            name,
            "is not a column of the table".to_owned(),
        ));
    };
    read(array.as_ref()).ok_or_else(|| {
        TableError::column(
            name,
            format!("must be {kind} column, not {}", array.data_type()),
        )
    })
}

const STRING: &str = "a string";
const INTEGER: &str = "an integer";

impl<'a> Chunk<'a> {
    fn new(batch: &'a RecordBatch, spec: &Spec) -> Result<Self, TableError> {
        Ok(Self {
            path: column(batch, "path", Strs::new, STRING)?,
            start: column(batch, "start", Ints::new, INTEGER)?,
            end: column(batch, "end", Ints::new, INTEGER)?,
            content: column(batch, "content", Strs::new, STRING)?,
            reason: column(batch, "reason", Strs::new, STRING)?,
            reasons: None,
            score: column(batch, "score", Scores::new, "an integer or float")?,
            budget: match &spec.budget {
                Budget::Fixed(_) => None,
                Budget::Column(name) => Some(column(batch, name, Ints::new, INTEGER)?),
            },
            failure_files: match &spec.failure_files {
                None => None,
                Some(name) => Some(column(batch, name, Lists::new, "a list<string>")?),
            },
        }
        .with_reasons())
    }

    /// Parse a small reason dictionary's values once.
    fn with_reasons(mut self) -> Self {
        if let Strs::Dict {
            values, n_values, ..
        } = &self.reason
            && *n_values <= MAX_REASON_VALUES
        {
            let parsed = (0..*n_values)
                .map(|k| match values.cell_problem(k) {
                    None => values.get(k).and_then(Reason::parse),
                    Some(_) => None,
                })
                .collect();
            self.reasons = Some(parsed);
        }
        self
    }

    /// The reason of row `i`: `Err(None)` for a null cell, `Err(Some(text))` for a text that
    /// names no reason.
    #[inline]
    fn reason(&self, i: usize) -> Result<Reason, Option<&'a str>> {
        if let (Some(parsed), Strs::Dict { keys, .. }) = (&self.reasons, &self.reason)
            && let Some(key) = keys.get(i)
            && let Some(&Some(reason)) = usize::try_from(key).ok().and_then(|k| parsed.get(k))
        {
            return Ok(reason);
        }
        let text = self.reason.get(i).ok_or(None)?;
        Reason::parse(text).ok_or(Some(text))
    }
}

/// Reason dictionaries of at most this many values are parsed once per chunk.
const MAX_REASON_VALUES: usize = 64;

/// Rows of the whole table addressed across chunks.
struct Table<'a> {
    chunks: Vec<Chunk<'a>>,
    /// First row of each chunk, then the row count.
    starts: Vec<usize>,
}

/// Walks the rows of a group (ascending), remembering the chunk of the last row: the next
/// row is usually in it, so a chunk is looked up only where the rows cross into another.
struct Cursor<'t, 'a> {
    table: &'t Table<'a>,
    chunk: usize,
    /// Rows `lo..hi` of the table are in `chunk`.
    lo: usize,
    hi: usize,
}

impl<'t, 'a> Cursor<'t, 'a> {
    fn new(table: &'t Table<'a>) -> Self {
        Self {
            table,
            chunk: 0,
            lo: 0,
            hi: 0,
        }
    }

    #[inline]
    fn at(&mut self, row: usize) -> (&'t Chunk<'a>, usize) {
        if row < self.lo || row >= self.hi {
            let starts = &self.table.starts;
            self.chunk = starts.partition_point(|&s| s <= row) - 1;
            self.lo = starts[self.chunk];
            self.hi = starts[self.chunk + 1];
        }
        (&self.table.chunks[self.chunk], row - self.lo)
    }
}

// ---------------------------------------------------------------------------------------------
// Grouping.

/// Rows sorted by group: `rows[bounds[g]..bounds[g + 1]]` are group `g`'s rows, ascending.
struct Groups {
    rows: Vec<u32>,
    bounds: Vec<usize>,
    /// True when `rows` is `0..n` (every group is one run, in order of first appearance).
    identity: bool,
}

fn group(batches: &[RecordBatch], spec: &Spec, n: usize) -> Result<Groups, TableError> {
    let Some(name) = &spec.group_by else {
        return Ok(Groups {
            rows: (0..n as u32).into_par_iter().collect(),
            bounds: vec![0, n],
            identity: true,
        });
    };
    // Each chunk, in parallel: its keys as runs of equal keys, up to its first null or invalid
    // key (then that key's offset and problem, `None` for a null).
    type ChunkRuns<'k> = (Vec<(Key<'k>, usize)>, Option<(usize, Option<Bad>)>);
    let chunks: Vec<ChunkRuns<'_>> = batches
        .par_iter()
        .map(|batch| {
            let keys = column(batch, name, Keys::new, "an integer or string")?;
            // No key is read past the chunk's first invalid one.
            let bad = keys.first_invalid();
            let mut runs: Vec<(Key<'_>, usize)> = Vec::new();
            for i in 0..bad.map_or(batch.num_rows(), |(i, _)| i) {
                let Some(key) = keys.get(i) else {
                    return Ok((runs, Some((i, None))));
                };
                match runs.last_mut() {
                    Some((k, len)) if *k == key => *len += 1,
                    _ => runs.push((key, 1)),
                }
            }
            Ok((runs, bad.map(|(i, b)| (i, Some(b)))))
        })
        .collect::<Result<_, TableError>>()?;
    let mut ids: FxHashMap<Key<'_>, u32> = FxHashMap::default();
    // Runs of rows as (first row, length, group id), in table order.
    let mut runs: Vec<(usize, usize, u32)> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    let mut previous: Option<(Key<'_>, u32)> = None;
    let mut identity = true;
    let mut row = 0usize;
    for (chunk_runs, stop) in chunks {
        for (key, len) in chunk_runs {
            // Rows of one group usually come in runs: hash only where a run starts.
            let id = match previous {
                Some((k, id)) if k == key => id,
                _ => {
                    let next = counts.len() as u32;
                    let id = *ids.entry(key).or_insert(next);
                    if id == next {
                        counts.push(0);
                    } else {
                        identity = false;
                    }
                    previous = Some((key, id));
                    id
                }
            };
            counts[id as usize] += len;
            match runs.last_mut() {
                Some((_, run, last)) if *last == id => *run += len,
                _ => runs.push((row, len, id)),
            }
            row += len;
        }
        if let Some((_, bad)) = stop {
            // A null key names no group: no row within a group, no key to show.
            let problem = bad.map_or_else(|| "is null".to_owned(), Bad::problem);
            return Err(TableError {
                local: None,
                key_row: None,
                ..TableError::row(name, text(problem), row, 0)
            });
        }
    }
    let mut bounds = Vec::with_capacity(counts.len() + 1);
    bounds.push(0);
    for c in &counts {
        bounds.push(bounds.last().unwrap() + c);
    }
    let rows = if identity {
        (0..n as u32).into_par_iter().collect()
    } else {
        let mut next = bounds.clone();
        let mut rows = vec![0u32; n];
        for &(first, len, g) in &runs {
            let at = next[g as usize];
            for (slot, r) in rows[at..at + len].iter_mut().zip(first..) {
                *slot = r as u32;
            }
            next[g as usize] += len;
        }
        rows
    };
    Ok(Groups {
        rows,
        bounds,
        identity,
    })
}

/// Phase 2: the first cell, in table order (then in the order path, content, reason, failing
/// files), of the string columns a build reads that is not valid Arrow data; as `(row, field,
/// problem)`.
fn first_invalid_cell(table: &Table<'_>, spec: &Spec) -> Option<(usize, String, String)> {
    table
        .chunks
        .par_iter()
        .enumerate()
        .find_map_first(|(c, chunk)| {
            let strs = [
                ("path", &chunk.path),
                ("content", &chunk.content),
                ("reason", &chunk.reason),
            ];
            let mut found: Vec<(usize, usize, String, String)> = strs
                .iter()
                .enumerate()
                .filter_map(|(k, (field, col))| {
                    let (i, bad) = col.first_invalid()?;
                    Some((i, k, (*field).to_owned(), bad.problem()))
                })
                .collect();
            if let (Some(col), Some(name)) = (&chunk.failure_files, &spec.failure_files)
                && let Some((i, problem)) = col.first_invalid()
            {
                found.push((i, strs.len(), name.clone(), problem));
            }
            let (i, _, field, problem) = found.into_iter().min_by_key(|f| (f.0, f.1))?;
            Some((table.starts[c] + i, field, problem))
        })
}

/// The position of table row `row` within its group.
fn local_of(groups: &Groups, row: usize) -> usize {
    let row = row as u32;
    groups
        .bounds
        .windows(2)
        .find_map(|b| groups.rows[b[0]..b[1]].binary_search(&row).ok())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// One group's build.

/// The decision columns, in group-sorted position (table order when every group is one run in
/// order); one group's part of each is handed to its build.
#[derive(Default)]
struct Decisions<T> {
    /// The row's position within its group.
    index: T,
    rank: T,
    /// Selection order, or `u32::MAX`.
    order: T,
    /// For an overlap, the blocker's row within the group; else `u32::MAX`.
    overlaps: T,
}

/// One group's part of the decision columns.
struct Out<'d> {
    /// `index`, `rank`, `order`, `overlaps`.
    u32s: Decisions<&'d mut [u32]>,
    /// 0 none (selected), 1 overlap, 2 budget.
    omission: &'d mut [u8],
    cost: &'d mut [u64],
}

/// One group's summary.
#[derive(Clone, Copy, Default)]
struct Summary {
    first_row: u64,
    candidates: u32,
    selected: u32,
    overlap: u32,
    budget_omitted: u32,
    used: u64,
    budget: u64,
}

/// A group's first error, with the validation phase it belongs to (4 or 5, see the module doc).
type Found = (u8, TableError);

fn text(s: impl Into<String>) -> Problem {
    Problem::Text(s.into())
}

/// A group's budget and its failing files as given.
type Cells<'a> = (u64, Option<Vec<Option<&'a str>>>);

/// Phase 4: the budget and failing-files cells. Returns the budget and the raw failing files.
fn group_cells<'a>(
    table: &'a Table<'a>,
    rows: &[u32],
    spec: &Spec,
) -> Result<Cells<'a>, TableError> {
    let mut budget: Option<(i128, usize)> = None;
    let mut failing: Option<Vec<Option<&'a str>>> = None;
    let reads = matches!(spec.budget, Budget::Column(_)) || spec.failure_files.is_some();
    let mut cursor = Cursor::new(table);
    for (local, &row) in rows.iter().enumerate().filter(|_| reads) {
        let row = row as usize;
        let (chunk, i) = cursor.at(row);
        if let (Some(col), Budget::Column(name)) = (&chunk.budget, &spec.budget) {
            let Some(value) = col.get(i) else {
                return Err(TableError::row(name, text("is null"), row, local));
            };
            if value < 0 {
                let problem = format!("must be >= 0, got {value}");
                return Err(TableError::row(name, text(problem), row, local));
            }
            match budget {
                None => budget = Some((value, local)),
                Some((first, _)) if first == value => {}
                Some((first, first_local)) => {
                    let problem = format!(
                        "must be the same in every row of a group, got {value} here and {first} in row {first_local} of the group"
                    );
                    return Err(TableError::row(name, text(problem), row, local));
                }
            }
        }
        if let (Some(col), Some(name)) = (&chunk.failure_files, &spec.failure_files) {
            let Some(items) = col.get(i) else {
                return Err(TableError::row(name, text("is null"), row, local));
            };
            for (j, item) in items.iter().enumerate() {
                let problem = match item {
                    None => "is null",
                    Some(path) => match engine::canonical_path(path) {
                        Ok(_) => continue,
                        Err(e) => e.problem(),
                    },
                };
                let problem = format!("item {j}: {problem}");
                return Err(TableError::row(name, text(problem), row, local));
            }
            match &failing {
                None => failing = Some(items),
                Some(first) if *first == items => {}
                Some(_) => {
                    let problem = "must be the same in every row of a group";
                    return Err(TableError::row(name, text(problem), row, local));
                }
            }
        }
    }
    let budget = match (&spec.budget, budget) {
        (Budget::Fixed(b), _) => *b,
        (Budget::Column(_), Some((b, _))) => u64::try_from(b).unwrap_or(u64::MAX),
        (Budget::Column(_), None) => 0, // an empty group (the whole, empty, table)
    };
    Ok((budget, failing))
}

/// Scratch space reused by the groups one worker builds.
#[derive(Default)]
struct Scratch<'a> {
    rows: Vec<Row>,
    /// Canonical path -> path id.
    paths: FxHashMap<Cow<'a, str>, u32>,
    /// Path as given -> path id.
    raw: FxHashMap<&'a str, u32>,
    engine: engine::Scratch,
    selection: engine::Selection,
    failure_ids: Vec<u32>,
}

/// Phase 5 and the build of one group; fills `out` (the group's rows, in order).
fn build_group<'a>(
    table: &'a Table<'a>,
    rows: &[u32],
    spec: &Spec,
    scratch: &mut Scratch<'a>,
    out: Out<'_>,
) -> Result<Summary, Found> {
    let (budget, failing) = group_cells(table, rows, spec).map_err(|e| (4, e))?;
    scratch.rows.clear();
    scratch.paths.clear();
    scratch.raw.clear();
    let mut total = 0u64;
    let mut cursor = Cursor::new(table);
    for (local, &row) in rows.iter().enumerate() {
        let row = row as usize;
        let (chunk, i) = cursor.at(row);
        let fail = |field: &str, problem: Problem| (5, TableError::row(field, problem, row, local));
        let null = |field: &str| fail(field, text("is null"));

        let raw = chunk.path.get(i).ok_or_else(|| null("path"))?;
        // A path as given is canonicalised once per group (rows share few paths).
        let path = match scratch.raw.get(raw) {
            Some(&id) => id,
            None => {
                let canonical =
                    engine::canonical_path(raw).map_err(|e| fail("path", text(e.problem())))?;
                let next = scratch.paths.len() as u32;
                let id = *scratch.paths.entry(canonical).or_insert(next);
                scratch.raw.insert(raw, id);
                id
            }
        };

        let start = chunk.start.get(i).ok_or_else(|| null("start"))?;
        if start < 1 {
            return Err(fail("start", text(format!("must be >= 1, got {start}"))));
        }
        if start > i128::from(MAX_LINE) {
            let problem = format!("must be <= {MAX_LINE}, got {start}");
            return Err(fail("start", text(problem)));
        }
        let end = chunk.end.get(i).ok_or_else(|| null("end"))?;
        if end < start {
            let problem = format!("must be >= start ({start}), got {end}");
            return Err(fail("end", text(problem)));
        }
        if end > i128::from(MAX_LINE) {
            let problem = format!("must be <= {MAX_LINE}, got {end}");
            return Err(fail("end", text(problem)));
        }
        let content = chunk.content.get(i).ok_or_else(|| null("content"))?;
        let chars = count_chars(content);
        let reason = chunk.reason(i).map_err(|given| match given {
            None => null("reason"),
            Some(given) => fail("reason", Problem::Reason(given.into())),
        })?;
        let score = chunk.score.get(i).ok_or_else(|| null("score"))?;
        if !score.is_finite() {
            let shown = if score.is_nan() {
                "nan"
            } else if score > 0.0 {
                "inf"
            } else {
                "-inf"
            };
            return Err(fail("score", text(format!("must be finite, got {shown}"))));
        }
        total = total.saturating_add(chars);
        if total > spec.max_total_chars {
            let problem = format!(
                "total content is {total} characters, over the limit max_total_chars = {} characters",
                spec.max_total_chars
            );
            let mut e = TableError::row("content", text(problem), row, local);
            e.kind = ErrorKind::Limit(Box::new(LimitFound {
                name: "max_total_chars",
                value: total,
                maximum: spec.max_total_chars,
            }));
            return Err((5, e));
        }
        let cost = match spec.unit {
            Unit::Chars => chars,
            Unit::Tokens(encoding) => tokens::count(encoding, content) as u64,
        };
        scratch.rows.push(Row {
            path,
            start: start as u32,
            end: end as u32,
            cost,
            reason,
            score,
            group: engine::NO_GROUP,
            stale: false,
        });
    }

    // The failing files that some row comes from, as path ids, in error order.
    scratch.failure_ids.clear();
    for path in failing.iter().flatten().flatten() {
        // Valid (checked in phase 4).
        if let Ok(canonical) = engine::canonical_path(path)
            && let Some(&id) = scratch.paths.get(&canonical)
        {
            scratch.failure_ids.push(id);
        }
    }
    let n_paths = scratch.paths.len();
    let selection = &mut scratch.selection;
    engine::build_into(
        &mut scratch.engine,
        &scratch.rows,
        &scratch.failure_ids,
        budget,
        n_paths,
        selection,
    );

    let Out {
        u32s:
            Decisions {
                index,
                rank,
                order,
                overlaps,
            },
        omission,
        cost,
    } = out;
    for (local, slot) in (0u32..).zip(index.iter_mut()) {
        *slot = local;
    }
    order.fill(u32::MAX);
    overlaps.fill(u32::MAX);
    omission.fill(0);
    for (c, row) in cost.iter_mut().zip(&scratch.rows) {
        *c = row.cost;
    }
    for (o, (&index, &r)) in (0u32..).zip(selection.selected.iter().zip(&selection.ranks)) {
        rank[index as usize] = r;
        order[index as usize] = o;
    }
    let mut summary = Summary {
        first_row: rows.first().map_or(0, |&r| u64::from(r)),
        candidates: rows.len() as u32,
        selected: selection.selected.len() as u32,
        used: selection.used,
        budget,
        ..Summary::default()
    };
    for o in &selection.omitted {
        let i = o.index as usize;
        rank[i] = o.rank;
        match o.why {
            Omitted::Overlap(blocker) => {
                omission[i] = 1;
                overlaps[i] = blocker;
                summary.overlap += 1;
            }
            // Table rows carry no group and are never stale, so `engine::build` never gives
            // `Group` or `Stale`; were it to, it is counted as a budget omission.
            Omitted::Budget | Omitted::Group(_) | Omitted::Stale => {
                omission[i] = 2;
                summary.budget_omitted += 1;
            }
        }
    }
    Ok(summary)
}

/// The number of Unicode code points in `text`: its bytes that are not UTF-8 continuation
/// bytes.
#[inline]
pub fn count_chars(text: &str) -> u64 {
    bytecount::num_chars(text.as_bytes()) as u64
}

// ---------------------------------------------------------------------------------------------
// The whole job.

/// Validate and build every group of `batches` (all of one schema); see the module doc.
pub fn build_table(batches: &[RecordBatch], spec: &Spec) -> Result<Output, TableError> {
    match spec.threads {
        None => run(batches, spec),
        Some(threads) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| TableError::column("threads", format!("cannot start: {e}")))?;
            pool.install(|| run(batches, spec))
        }
    }
}

fn run(batches: &[RecordBatch], spec: &Spec) -> Result<Output, TableError> {
    let mut starts = Vec::with_capacity(batches.len() + 1);
    let mut chunks = Vec::with_capacity(batches.len());
    let mut n = 0usize;
    for batch in batches {
        chunks.push(Chunk::new(batch, spec)?);
        starts.push(n);
        n += batch.num_rows();
    }
    starts.push(n);
    if u32::try_from(n).is_err() {
        return Err(TableError::column(
            "table",
            "has more than 2**32 - 1 rows".to_owned(),
        ));
    }
    let table = Table { chunks, starts };
    let groups = group(batches, spec, n)?;
    let n_groups = groups.bounds.len() - 1;

    // Phase 2: the other string columns' Arrow data.
    if let Some((row, field, problem)) = first_invalid_cell(&table, spec) {
        return Err(TableError::row(
            &field,
            text(problem),
            row,
            local_of(&groups, row),
        ));
    }

    // Phase 3: group sizes.
    for g in 0..n_groups {
        let size = groups.bounds[g + 1] - groups.bounds[g];
        if size as u64 > spec.max_candidates {
            let first = groups.rows[groups.bounds[g]] as usize;
            return Err(TableError {
                kind: ErrorKind::Limit(Box::new(LimitFound {
                    name: "max_candidates",
                    value: size as u64,
                    maximum: spec.max_candidates,
                })),
                field: "candidates".to_owned(),
                problem: text(format!(
                    "{size} candidates, over the limit max_candidates = {} candidates",
                    spec.max_candidates
                )),
                row: None,
                local: None,
                key_row: Some(first),
            });
        }
    }

    // Phases 4 and 5, and the builds, group by group in parallel.
    let mut u32s = Decisions {
        index: vec![0u32; n],
        rank: vec![0u32; n],
        order: vec![0u32; n],
        overlaps: vec![0u32; n],
    };
    let mut omission = vec![0u8; n];
    let mut cost = vec![0u64; n];
    let sizes: Vec<usize> = groups.bounds.windows(2).map(|b| b[1] - b[0]).collect();
    let outs = split(&mut u32s.index, &sizes)
        .zip(split(&mut u32s.rank, &sizes))
        .zip(split(&mut u32s.order, &sizes))
        .zip(split(&mut u32s.overlaps, &sizes))
        .zip(split(&mut omission, &sizes).zip(split(&mut cost, &sizes)))
        .map(
            |((((index, rank), order), overlaps), (omission, cost))| Out {
                u32s: Decisions {
                    index,
                    rank,
                    order,
                    overlaps,
                },
                omission,
                cost,
            },
        )
        .collect::<Vec<_>>();
    let table = &table;
    let results: Vec<Result<Summary, Found>> = outs
        .into_par_iter()
        .enumerate()
        .map_init(Scratch::default, |scratch, (g, out)| {
            let rows = &groups.rows[groups.bounds[g]..groups.bounds[g + 1]];
            build_group(table, rows, spec, scratch, out)
        })
        .collect();
    let mut first: Option<Found> = None;
    for result in &results {
        if let Err((phase, e)) = result {
            let earlier = match &first {
                None => true,
                Some((p, f)) => (*phase, e.row) < (*p, f.row),
            };
            if earlier {
                first = Some((*phase, e.clone()));
            }
        }
    }
    if let Some((_, e)) = first {
        return Err(e);
    }
    let summaries: Vec<Summary> = results
        .into_iter()
        .map(|r| r.ok().unwrap_or_default())
        .collect();

    Ok(Output {
        decisions: decision_batch(&groups, u32s, omission, cost),
        groups: summary_batch(&summaries),
    })
}

/// `values` cut into consecutive parts of the given sizes.
fn split<'v, T>(values: &'v mut [T], sizes: &[usize]) -> impl Iterator<Item = &'v mut [T]> {
    let mut rest = values;
    sizes.iter().map(move |&size| {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(size);
        rest = tail;
        head
    })
}

/// `values` (in group-sorted position) in table order.
fn scatter<T: Copy + Default + Send + Sync>(groups: &Groups, values: Vec<T>) -> Vec<T> {
    if groups.identity {
        return values;
    }
    let mut scattered = vec![T::default(); values.len()];
    for (k, &row) in groups.rows.iter().enumerate() {
        scattered[row as usize] = values[k];
    }
    scattered
}

fn nullable_u32(values: Vec<u32>) -> UInt32Array {
    let valid = NullBuffer::new(BooleanBuffer::collect_bool(values.len(), |i| {
        values[i] != u32::MAX
    }));
    let nulls = (valid.null_count() > 0).then_some(valid);
    UInt32Array::new(values.into(), nulls)
}

fn decision_batch(
    groups: &Groups,
    u32s: Decisions<Vec<u32>>,
    omission: Vec<u8>,
    cost: Vec<u64>,
) -> RecordBatch {
    // Table order: position `k` of the group-sorted columns is table row `rows[k]`. Each
    // column is made on its own thread.
    let ((index, rank), ((order, overlaps), (omission, cost))) = rayon::join(
        || {
            rayon::join(
                || scatter(groups, u32s.index),
                || scatter(groups, u32s.rank),
            )
        },
        || {
            rayon::join(
                || {
                    rayon::join(
                        || nullable_u32(scatter(groups, u32s.order)),
                        || nullable_u32(scatter(groups, u32s.overlaps)),
                    )
                },
                || {
                    rayon::join(
                        || omission_columns(scatter(groups, omission)),
                        || scatter(groups, cost),
                    )
                },
            )
        },
    );
    let (selected, omission) = omission;

    let omission_type = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    // Nullable, as pyarrow makes fields by default; only `order`, `omission` and `overlaps`
    // hold nulls.
    let schema = Schema::new(vec![
        Field::new("index", DataType::UInt32, true),
        Field::new("rank", DataType::UInt32, true),
        Field::new("selected", DataType::Boolean, true),
        Field::new("order", DataType::UInt32, true),
        Field::new("omission", omission_type, true),
        Field::new("overlaps", DataType::UInt32, true),
        Field::new("cost", DataType::UInt64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(index)),
        Arc::new(UInt32Array::from(rank)),
        Arc::new(selected),
        Arc::new(order),
        Arc::new(omission),
        Arc::new(overlaps),
        Arc::new(UInt64Array::from(cost)),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).expect("columns match the schema")
}

/// The `selected` and `omission` columns from the omission codes (0 none, 1 overlap, 2 budget).
fn omission_columns(omission: Vec<u8>) -> (BooleanArray, DictionaryArray<Int8Type>) {
    let n = omission.len();
    let selected = BooleanArray::new(BooleanBuffer::collect_bool(n, |i| omission[i] == 0), None);
    // Key 0 "overlap" for code 1, key 1 "budget" for code 2, null for a selected row.
    let codes: Vec<i8> = omission.iter().map(|&o| (o as i8 - 1).max(0)).collect();
    let omitted = NullBuffer::new(BooleanBuffer::collect_bool(n, |i| omission[i] != 0));
    let nulls = (omitted.null_count() > 0).then_some(omitted);
    let keys = PrimitiveArray::<Int8Type>::new(codes.into(), nulls);
    let values: ArrayRef = Arc::new(StringArray::from(vec!["overlap", "budget"]));
    let omission = DictionaryArray::<Int8Type>::try_new(keys, values)
        .expect("keys 0 and 1 index the two values");
    (selected, omission)
}

fn summary_batch(summaries: &[Summary]) -> RecordBatch {
    let u32s = |f: fn(&Summary) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from(
            summaries.iter().map(f).collect::<Vec<_>>(),
        ))
    };
    let u64s = |f: fn(&Summary) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from(
            summaries.iter().map(f).collect::<Vec<_>>(),
        ))
    };
    let truncated: BooleanArray = summaries
        .iter()
        .map(|s| Some(s.overlap + s.budget_omitted > 0))
        .collect();
    // Nullable, as pyarrow makes fields by default, though no value is null.
    let field = |name: &str, t: DataType| Field::new(name, t, true);
    let schema = Schema::new(vec![
        field("first_row", DataType::UInt64),
        field("candidates", DataType::UInt32),
        field("selected", DataType::UInt32),
        field("omitted_overlap", DataType::UInt32),
        field("omitted_budget", DataType::UInt32),
        field("used", DataType::UInt64),
        field("budget", DataType::UInt64),
        field("truncated", DataType::Boolean),
    ]);
    let columns = vec![
        u64s(|s| s.first_row),
        u32s(|s| s.candidates),
        u32s(|s| s.selected),
        u32s(|s| s.overlap),
        u32s(|s| s.budget_omitted),
        u64s(|s| s.used),
        u64s(|s| s.budget),
        Arc::new(truncated) as ArrayRef,
    ];
    RecordBatch::try_new(Arc::new(schema), columns).expect("columns match the schema")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int32Type as Key32;
    use arrow_array::{Float64Array, Int64Array, ListArray};

    fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).unwrap()
    }

    fn strs(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringArray::from(values.to_vec()))
    }

    fn base(task: &[&str], start: &[Option<i64>]) -> RecordBatch {
        let n = task.len();
        batch(vec![
            (
                "task",
                Arc::new(StringArray::from(task.to_vec())) as ArrayRef,
            ),
            ("path", strs(&vec![Some("a.py"); n])),
            ("start", Arc::new(Int64Array::from(start.to_vec()))),
            (
                "end",
                Arc::new(Int64Array::from_iter(
                    start.iter().map(|s| s.map(|v| v + 9)),
                )),
            ),
            ("content", strs(&vec![Some("héllo"); n])),
            ("reason", strs(&vec![Some("search"); n])),
            ("score", Arc::new(Float64Array::from(vec![1.0; n]))),
        ])
    }

    fn spec(group_by: Option<&str>, budget: u64) -> Spec {
        Spec {
            group_by: group_by.map(str::to_owned),
            budget: Budget::Fixed(budget),
            failure_files: None,
            unit: Unit::Chars,
            max_candidates: 100,
            max_total_chars: 1000,
            threads: Some(2),
        }
    }

    fn column_u32(out: &RecordBatch, name: &str) -> Vec<Option<u32>> {
        out.column_by_name(name)
            .unwrap()
            .as_primitive::<UInt32Type>()
            .iter()
            .collect()
    }

    #[test]
    fn groups_in_order_of_first_appearance_across_chunks() {
        let one = base(&["b", "a", "b"], &[Some(1), Some(1), Some(5)]);
        let two = base(&["a", "c"], &[Some(20), Some(1)]);
        let out = build_table(&[one, two], &spec(Some("task"), 100)).unwrap();
        // Rows of b: 0, 2 (overlap: 5..10 hits 1..10); a: 1, 3; c: 4.
        assert_eq!(
            column_u32(&out.decisions, "index"),
            [0, 0, 1, 1, 0].map(Some)
        );
        assert_eq!(
            column_u32(&out.decisions, "overlaps"),
            vec![None, None, Some(0), None, None]
        );
        assert_eq!(
            out.groups
                .column_by_name("first_row")
                .unwrap()
                .as_primitive::<UInt64Type>()
                .values()
                .to_vec(),
            vec![0, 1, 4]
        );
        // Costs are code points: "héllo" is 5 of them in 6 bytes.
        let cost = out.decisions.column_by_name("cost").unwrap();
        assert!(
            cost.as_primitive::<UInt64Type>()
                .values()
                .iter()
                .all(|&c| c == 5)
        );
    }

    #[test]
    fn first_error_in_table_order_names_row_and_group_row() {
        let one = base(&["b", "a", "b"], &[Some(1), Some(1), None]);
        let two = base(&["a"], &[Some(0)]);
        let err = build_table(&[one, two], &spec(Some("task"), 100)).unwrap_err();
        assert_eq!(
            (err.field.as_str(), err.row, err.local),
            ("start", Some(2), Some(1))
        );
        assert_eq!(err.problem, Problem::Text("is null".into()));
    }

    #[test]
    fn budget_and_dictionary_and_list_columns() {
        let n = 3;
        let dict: DictionaryArray<Key32> = vec!["reference", "search", "reference"]
            .into_iter()
            .collect();
        let failing = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1)]),
            Some(vec![Some(1)]),
            Some(vec![Some(1)]),
        ]);
        // A list of integers is not a list of strings.
        let b = batch(vec![
            ("path", strs(&[Some("a.py"), Some("b.py"), Some("./b.py")])),
            (
                "start",
                Arc::new(Int64Array::from(vec![1, 1, 3])) as ArrayRef,
            ),
            ("end", Arc::new(Int64Array::from(vec![2, 4, 3]))),
            ("content", strs(&vec![Some("xx"); n])),
            ("reason", Arc::new(dict)),
            ("score", Arc::new(Int64Array::from(vec![1, 2, 3]))),
            ("limit", Arc::new(Int64Array::from(vec![4, 4, 4]))),
            ("failing", Arc::new(failing)),
        ]);
        let mut s = spec(None, 0);
        s.budget = Budget::Column("limit".into());
        let out = build_table(std::slice::from_ref(&b), &s).unwrap();
        // Rank: references by score (row 2, then row 0), then the search row 1, which overlaps 2.
        assert_eq!(column_u32(&out.decisions, "rank"), [1, 2, 0].map(Some));
        assert_eq!(
            column_u32(&out.decisions, "overlaps"),
            vec![None, Some(2), None]
        );
        s.failure_files = Some("failing".into());
        let err = build_table(&[b], &s).unwrap_err();
        assert_eq!(err.field, "failing");
        assert_eq!(err.row, None);
    }

    /// `base` with column `name` replaced.
    fn with(b: &RecordBatch, name: &str, column: ArrayRef) -> RecordBatch {
        let i = b.schema().index_of(name).unwrap();
        let mut columns = b.columns().to_vec();
        columns[i] = column;
        let fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let t = if k == i {
                    columns[i].data_type().clone()
                } else {
                    f.data_type().clone()
                };
                Field::new(f.name(), t, true)
            })
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    }

    /// A utf8 column made unchecked, as the C data interface makes it.
    fn unchecked(offsets: Vec<i32>, values: &[u8], nulls: Option<Vec<bool>>) -> ArrayRef {
        // SAFETY (of the test): offsets that may be invalid, on purpose.
        let offsets = unsafe { arrow_buffer::OffsetBuffer::new_unchecked(offsets.into()) };
        let nulls = nulls.map(NullBuffer::from);
        // SAFETY (of the test): the array is invalid on purpose; the build must check every
        // cell before reading it.
        Arc::new(unsafe { StringArray::new_unchecked(offsets, values.to_vec().into(), nulls) })
    }

    fn arrow_error(b: RecordBatch) -> (String, Option<usize>, Option<usize>, Problem) {
        let err = build_table(&[b], &spec(Some("task"), 100)).unwrap_err();
        (err.field, err.row, err.local, err.problem)
    }

    #[test]
    fn invalid_utf8_is_refused_naming_the_row() {
        let b = base(&["a", "b", "a"], &[Some(1), Some(1), Some(20)]);
        let content = unchecked(vec![0, 1, 3, 4], b"x\xc3(z", None);
        let (field, row, local, problem) = arrow_error(with(&b, "content", content));
        assert_eq!((field.as_str(), row, local), ("content", Some(1), Some(0)));
        assert_eq!(problem, Problem::Text("is not valid UTF-8".into()));
        // A key: no group to name.
        let task = unchecked(vec![0, 1, 2, 3], b"a\xffa", None);
        let (field, row, local, problem) = arrow_error(with(&b, "task", task));
        assert_eq!((field.as_str(), row, local), ("task", Some(1), None));
        assert_eq!(problem, Problem::Text("is not valid UTF-8".into()));
    }

    #[test]
    fn offsets_outside_the_data_and_keys_out_of_range_are_refused() {
        let b = base(&["a", "b", "a"], &[Some(1), Some(1), Some(20)]);
        // Row 1 runs backwards (4..2); row 0 and 2 are fine.
        let path = unchecked(vec![0, 4, 2, 6], b"a.pyb.", None);
        let (field, row, _, problem) = arrow_error(with(&b, "path", path));
        assert_eq!((field.as_str(), row), ("path", Some(1)));
        let Problem::Text(text) = problem else {
            panic!()
        };
        assert!(text.starts_with("is not valid Arrow data"), "{text}");
        let keys = arrow_array::Int32Array::from(vec![0, 2, 1]);
        let values: ArrayRef = Arc::new(StringArray::from(vec!["search", "failure"]));
        // SAFETY (of the test): key 2 is out of range on purpose.
        let reason = unsafe { DictionaryArray::<Key32>::new_unchecked(keys, values) };
        let (field, row, _, problem) = arrow_error(with(&b, "reason", Arc::new(reason)));
        assert_eq!((field.as_str(), row), ("reason", Some(1)));
        assert_eq!(
            problem,
            Problem::Text("has dictionary index 2, out of range for 2 dictionary values".into())
        );
    }

    #[test]
    fn bytes_under_a_null_and_views_outside_their_buffer() {
        let b = base(&["a", "b", "a"], &[Some(1), Some(1), Some(20)]);
        // Invalid bytes under a null cell are never read: the null is what is reported.
        let content = unchecked(vec![0, 1, 3, 4], b"x\xc3(z", Some(vec![true, false, true]));
        let (field, row, _, problem) = arrow_error(with(&b, "content", content));
        assert_eq!(
            (field.as_str(), row, problem),
            ("content", Some(1), Problem::Text("is null".into()))
        );
        // A view of 20 bytes at offset 10 of a 20-byte buffer.
        let mut inline = [0u8; 16];
        inline[0] = 6;
        inline[4..10].copy_from_slice(b"search");
        let good = u128::from_le_bytes(inline);
        let bad = u128::from(20u32) | (10u128 << 96);
        let views = arrow_buffer::ScalarBuffer::from(vec![good, bad, good]);
        let data = arrow_buffer::Buffer::from(vec![b'x'; 20]);
        // SAFETY (of the test): view 1 points outside its buffer on purpose.
        let reason = unsafe { StringViewArray::new_unchecked(views, vec![data], None) };
        let (field, row, _, problem) = arrow_error(with(&b, "reason", Arc::new(reason)));
        assert_eq!((field.as_str(), row), ("reason", Some(1)));
        assert_ne!(problem, Problem::Text("is null".into()));
    }

    #[test]
    fn blocks_of_offsets_check_every_boundary() {
        // 10,000 cells of one two-byte character each, over several blocks.
        let values = "é".repeat(10_000).into_bytes();
        let mut offsets: Vec<i32> = (0..=10_000).map(|i| 2 * i).collect();
        assert!(offsets_all_valid(&offsets, &values));
        // An offset inside a character, at a block's edge and inside a block.
        for at in [BLOCK_OFFSETS, BLOCK_OFFSETS + 7] {
            offsets[at] += 1;
            assert!(!offsets_all_valid(&offsets, &values), "{at}");
            let array = unchecked(offsets.clone(), &values, None);
            let strs = Strs::new(array.as_ref()).unwrap();
            assert_eq!(strs.first_invalid(), Some((at - 1, Bad::Utf8)));
            offsets[at] -= 1;
        }
    }

    #[test]
    fn counts_code_points() {
        assert_eq!(count_chars(""), 0);
        assert_eq!(count_chars("aé日🚀"), 4);
    }
}
