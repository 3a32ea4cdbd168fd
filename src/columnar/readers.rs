//! Column readers over one chunk (record batch): string, integer, score, list and key
//! columns, each cell checked as valid Arrow data before it is read.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type, UInt16Type,
    UInt32Type, UInt64Type,
};
use arrow_array::{
    Array, GenericListArray, GenericStringArray, OffsetSizeTrait, PrimitiveArray, RecordBatch,
    StringViewArray,
};
use arrow_schema::DataType;

use super::{Budget, Spec, TableError};
use crate::engine::Reason;

/// A string column of one chunk.
pub(crate) enum Strs<'a> {
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
    pub(crate) fn new(array: &'a dyn Array) -> Option<Self> {
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
    pub(crate) fn get(&self, i: usize) -> Option<&'a str> {
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
pub(crate) enum Bad {
    /// The cell's bytes are not UTF-8.
    Utf8,
    /// The cell's offsets or view point outside the column's data.
    Bounds,
    /// A dictionary index out of range: the index, the number of dictionary values.
    Key(i128, usize),
}

impl Bad {
    pub(crate) fn problem(self) -> String {
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
pub(crate) const BLOCK_OFFSETS: usize = 4096;

/// Whether every range of `offsets` into `values` is in bounds and valid UTF-8, checked a
/// block of cells at a time: offsets non-decreasing from >= 0 to within `values`, the bytes
/// they span UTF-8, and every offset on a character boundary. False means: look cell by cell.
pub(crate) fn offsets_all_valid<O: Copy + Into<i64>>(offsets: &[O], values: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
        return true;
    };
    let (first, last): (i64, i64) = (first.into(), last.into());
    if first < 0 || last as u64 > values.len() as u64 {
        return false;
    }
    // Without an early exit, so that the loop is vectorised.
    let monotone = offsets
        .windows(2)
        .fold(true, |ok, w| ok & (w[0].into() <= w[1].into()));
    if !monotone {
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
        // Without an early exit; every offset is within `values` or at its end (the offsets
        // are non-decreasing up to `last`).
        let inner = offsets[start + 1..end].iter().fold(true, |ok, &o| {
            let o = o.into() as usize;
            ok & ((o == last) | values.get(o).is_none_or(|&b| (b as i8) >= -0x40))
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
    pub(crate) fn first_invalid(&self) -> Option<(usize, Bad)> {
        let all_valid = match self {
            Self::Utf8(a) => offsets_all_valid(a.value_offsets(), a.values()),
            Self::Large(a) => offsets_all_valid(a.value_offsets(), a.values()),
            Self::View(_) => false,
            Self::Dict {
                keys,
                values,
                n_values,
            } => {
                // Every key in range and every value valid: nothing to look at cell by cell.
                if keys.all_below(*n_values) && values.first_invalid().is_none() {
                    return None;
                }
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
pub(crate) enum Ints<'a> {
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

    /// Whether the column has no null and every value is in `0..n`.
    pub(crate) fn all_below(&self, n: usize) -> bool {
        macro_rules! check {
            ($a:expr) => {
                $a.null_count() == 0
                    && $a.values().iter().fold(true, |ok, &v| {
                        ok & (i128::from(v) >= 0) & (i128::from(v) < n as i128)
                    })
            };
        }
        match self {
            Self::I8(a) => check!(a),
            Self::I16(a) => check!(a),
            Self::I32(a) => check!(a),
            Self::I64(a) => check!(a),
            Self::U8(a) => check!(a),
            Self::U16(a) => check!(a),
            Self::U32(a) => check!(a),
            Self::U64(a) => check!(a),
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<i128> {
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
pub(crate) enum Scores<'a> {
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
    pub(crate) fn get(&self, i: usize) -> Option<f64> {
        match self {
            Self::F32(a) => (!a.is_null(i)).then(|| f64::from(a.value(i))),
            Self::F64(a) => (!a.is_null(i)).then(|| a.value(i)),
            // Every i128 read from a 64-bit integer rounds to the nearest f64, ties to even.
            Self::Int(a) => a.get(i).map(|v| v as f64),
        }
    }
}

/// A `list<string>` column of one chunk.
pub(crate) enum Lists<'a> {
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
    pub(crate) fn first_invalid(&self) -> Option<(usize, String)> {
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
    pub(crate) fn get(&self, i: usize) -> Option<Vec<Option<&'a str>>> {
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
pub(crate) enum Key<'a> {
    Int(i128),
    Str(&'a str),
}

pub(crate) enum Keys<'a> {
    Int(Ints<'a>),
    Str(Strs<'a>),
}

impl<'a> Keys<'a> {
    pub(crate) fn new(array: &'a dyn Array) -> Option<Self> {
        Ints::new(array)
            .map(Self::Int)
            .or_else(|| Strs::new(array).map(Self::Str))
    }

    pub(crate) fn first_invalid(&self) -> Option<(usize, Bad)> {
        match self {
            Self::Int(_) => None,
            Self::Str(a) => a.first_invalid(),
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<Key<'a>> {
        match self {
            Self::Int(a) => a.get(i).map(Key::Int),
            Self::Str(a) => a.get(i).map(Key::Str),
        }
    }

    /// The keys as runs of equal keys, for a column without nulls whose cells are all valid
    /// (`None` for another column): strings compared as bytes straight from the buffers.
    pub(crate) fn runs(&self) -> Option<Vec<(Key<'a>, usize)>> {
        match self {
            Self::Str(Strs::Utf8(a)) if a.null_count() == 0 => Some(str_runs(a)),
            Self::Str(Strs::Large(a)) if a.null_count() == 0 => Some(str_runs(a)),
            _ => None,
        }
    }
}

/// The runs of equal cells of a string column without nulls, all valid.
fn str_runs<'a, O: OffsetSizeTrait>(a: &'a GenericStringArray<O>) -> Vec<(Key<'a>, usize)> {
    let (offsets, values) = (a.value_offsets(), a.values().as_slice());
    let mut runs = Vec::new();
    let mut first = 0;
    let Some(&lo) = offsets.get(1) else {
        return runs;
    };
    let mut run = &values[offsets[0].as_usize()..lo.as_usize()];
    let mut lo = lo.as_usize();
    for (i, &hi) in (1..a.len()).zip(&offsets[2..]) {
        let cell = &values[lo..hi.as_usize()];
        if !same(run, cell) {
            runs.push((Key::Str(a.value(first)), i - first));
            (first, run) = (i, cell);
        }
        lo = hi.as_usize();
    }
    if a.len() > first {
        runs.push((Key::Str(a.value(first)), a.len() - first));
    }
    runs
}

/// Byte equality, inline for short slices (compared eight bytes at a time).
#[inline]
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if !(8..=64).contains(&n) {
        return a == b;
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
    if n <= 16 {
        return (word(a, 0) == word(b, 0)) & (word(a, n - 8) == word(b, n - 8));
    }
    let mut i = 0;
    while i + 8 < n {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 8;
    }
    // The last eight bytes (overlapping the word before when `n` is not a multiple of 8).
    word(a, n - 8) == word(b, n - 8)
}

/// The columns of one chunk (record batch).
pub(crate) struct Chunk<'a> {
    pub(crate) path: Strs<'a>,
    pub(crate) start: Ints<'a>,
    pub(crate) end: Ints<'a>,
    pub(crate) content: Strs<'a>,
    pub(crate) reason: Strs<'a>,
    /// For a dictionary-encoded reason column with few values: each value's reason (`None`
    /// for a value that is not valid or not a reason), so a row's reason is one lookup.
    pub(crate) reasons: Option<Vec<Option<Reason>>>,
    pub(crate) score: Scores<'a>,
    pub(crate) budget: Option<Ints<'a>>,
    pub(crate) failure_files: Option<Lists<'a>>,
}

pub(crate) fn column<'a, T>(
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
    pub(crate) fn new(batch: &'a RecordBatch, spec: &Spec) -> Result<Self, TableError> {
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
    pub(crate) fn reason(&self, i: usize) -> Result<Reason, Option<&'a str>> {
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
pub(crate) struct Table<'a> {
    pub(crate) chunks: Vec<Chunk<'a>>,
    /// First row of each chunk, then the row count.
    pub(crate) starts: Vec<usize>,
}

/// Walks the rows of a group (ascending), remembering the chunk of the last row: the next
/// row is usually in it, so a chunk is looked up only where the rows cross into another.
pub(crate) struct Cursor<'t, 'a> {
    table: &'t Table<'a>,
    chunk: usize,
    /// Rows `lo..hi` of the table are in `chunk`.
    lo: usize,
    hi: usize,
}

impl<'t, 'a> Cursor<'t, 'a> {
    pub(crate) fn new(table: &'t Table<'a>) -> Self {
        Self {
            table,
            chunk: 0,
            lo: 0,
            hi: 0,
        }
    }

    #[inline]
    pub(crate) fn at(&mut self, row: usize) -> (&'t Chunk<'a>, usize) {
        if row < self.lo || row >= self.hi {
            let starts = &self.table.starts;
            self.chunk = starts.partition_point(|&s| s <= row) - 1;
            self.lo = starts[self.chunk];
            self.hi = starts[self.chunk + 1];
        }
        (&self.table.chunks[self.chunk], row - self.lo)
    }

    /// [`Cursor::at`], with the number of rows of the chunk from `row` on.
    #[inline]
    pub(crate) fn run(&mut self, row: usize) -> (&'t Chunk<'a>, usize, usize) {
        let (chunk, i) = self.at(row);
        (chunk, i, self.hi - row)
    }
}
