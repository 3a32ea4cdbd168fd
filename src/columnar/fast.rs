//! The fast read of a group's rows: a run of consecutive rows of one chunk read column by
//! column, each column's type matched once rather than per cell, for the common case of
//! columns without nulls whose cells pass every check. A cell it does not take (a null, a line
//! or score out of range, a path that is refused, a reason it does not know, a total over the
//! limit) makes it give up; the caller then reads the group row by row, which finds and
//! reports the first error exactly. Both reads give the same rows when every cell is valid.

use arrow_array::{Array, GenericStringArray, OffsetSizeTrait};

use super::group_build::{Scratch, count_chars};
use super::readers::{Chunk, Ints, Scores, Strs, same};
use super::{Spec, Unit};
use crate::engine::{self, MAX_LINE, Reason, Row};
use crate::tokens;

/// Column buffers of the fast read, reused from group to group.
#[derive(Default)]
pub(crate) struct Columns {
    start: Vec<i64>,
    end: Vec<i64>,
    score: Vec<f64>,
    reason: Vec<Reason>,
    chars: Vec<u64>,
    path: Vec<u32>,
    costs: Vec<u64>,
}

/// Rows of a column's cells counted by one character count at a time while they are all
/// ASCII-width (a block whose characters are as many as its bytes): then each cell's count is
/// its length.
const CHAR_BLOCK: usize = 16;

/// Whether `array` has no null in `lo..hi`.
fn no_nulls(array: &dyn Array, lo: usize, hi: usize) -> bool {
    array
        .nulls()
        .is_none_or(|n| n.null_count() == 0 || n.slice(lo, hi - lo).null_count() == 0)
}

/// Rows `lo..hi` of the chunk appended to `scratch.rows`; `false` (and `scratch` to be reset)
/// when a cell is not taken. `total` is the group's running total of content characters.
pub(crate) fn read_run<'a>(
    chunk: &Chunk<'a>,
    lo: usize,
    hi: usize,
    spec: &Spec,
    scratch: &mut Scratch<'a>,
    total: &mut u64,
) -> bool {
    let cols = &mut scratch.columns;
    let taken = ints(&chunk.start, lo, hi, &mut cols.start)
        && ints(&chunk.end, lo, hi, &mut cols.end)
        && lines_valid(&cols.start, &cols.end)
        && scores(&chunk.score, lo, hi, &mut cols.score)
        && reasons(chunk, lo, hi, &mut cols.reason)
        && chars(&chunk.content, lo, hi, &mut cols.chars);
    if !taken {
        return false;
    }
    *total = cols.chars.iter().fold(*total, |t, &c| t.saturating_add(c));
    if *total > spec.max_total_chars || !paths(&chunk.path, lo, hi, scratch) {
        return false;
    }
    let Columns {
        start,
        end,
        score,
        reason,
        chars,
        path,
        costs,
    } = &mut scratch.columns;
    let rows = &mut scratch.rows;
    costs.clear();
    match spec.unit {
        Unit::Chars => costs.extend_from_slice(chars),
        Unit::Tokens(encoding) => {
            for i in lo..hi {
                let Some(text) = chunk.content.get(i) else {
                    return false;
                };
                costs.push(tokens::count(encoding, text) as u64);
            }
        }
    }
    let lines = start.iter().zip(end.iter());
    let cells = path
        .iter()
        .zip(reason.iter())
        .zip(score.iter())
        .zip(costs.iter());
    rows.extend(
        lines.zip(cells).map(
            |((&start, &end), (((&path, &reason), &score), &cost))| Row {
                path,
                start: start as u32,
                end: end as u32,
                cost,
                reason,
                score,
                group: engine::NO_GROUP,
                stale: false,
            },
        ),
    );
    true
}

/// Every `1 <= start <= end <= MAX_LINE`.
fn lines_valid(start: &[i64], end: &[i64]) -> bool {
    let max = i64::from(MAX_LINE);
    start
        .iter()
        .zip(end)
        .fold(true, |ok, (&s, &e)| ok & (s >= 1) & (s <= e) & (e <= max))
}

/// The cells `lo..hi` of an integer column into `out` (cleared first), a value beyond `i64`
/// as `i64::MAX` (out of range for a line all the same).
fn ints(col: &Ints<'_>, lo: usize, hi: usize, out: &mut Vec<i64>) -> bool {
    out.clear();
    macro_rules! take {
        ($a:expr) => {{
            if !no_nulls(*$a, lo, hi) {
                return false;
            }
            let values = &$a.values()[lo..hi];
            out.extend(values.iter().map(|&v| i64::try_from(v).unwrap_or(i64::MAX)));
            true
        }};
    }
    match col {
        Ints::I8(a) => take!(a),
        Ints::I16(a) => take!(a),
        Ints::I32(a) => take!(a),
        Ints::I64(a) => take!(a),
        Ints::U8(a) => take!(a),
        Ints::U16(a) => take!(a),
        Ints::U32(a) => take!(a),
        Ints::U64(a) => take!(a),
    }
}

/// The cells `lo..hi` of the score column into `out` (cleared first): all finite.
fn scores(col: &Scores<'_>, lo: usize, hi: usize, out: &mut Vec<f64>) -> bool {
    out.clear();
    match col {
        Scores::F64(a) if no_nulls(*a, lo, hi) => out.extend_from_slice(&a.values()[lo..hi]),
        Scores::F32(a) if no_nulls(*a, lo, hi) => {
            out.extend(a.values()[lo..hi].iter().map(|&v| f64::from(v)));
        }
        _ => {
            for i in lo..hi {
                let Some(score) = col.get(i) else {
                    return false;
                };
                out.push(score);
            }
        }
    }
    out.iter().fold(true, |ok, s| ok & s.is_finite())
}

/// The reasons of rows `lo..hi` into `out` (cleared first): one lookup per row for a small
/// dictionary with 32-bit keys, else each cell parsed.
fn reasons(chunk: &Chunk<'_>, lo: usize, hi: usize, out: &mut Vec<Reason>) -> bool {
    out.clear();
    if let (Some(parsed), Strs::Dict { keys, .. }) = (&chunk.reasons, &chunk.reason)
        && let Ints::I32(keys) = keys
        && no_nulls(*keys, lo, hi)
    {
        for &key in &keys.values()[lo..hi] {
            match usize::try_from(key).ok().and_then(|k| parsed.get(k)) {
                Some(&Some(reason)) => out.push(reason),
                _ => return false,
            }
        }
        return true;
    }
    for i in lo..hi {
        let Ok(reason) = chunk.reason(i) else {
            return false;
        };
        out.push(reason);
    }
    true
}

/// The characters of the content cells `lo..hi` into `out` (cleared first).
fn chars(col: &Strs<'_>, lo: usize, hi: usize, out: &mut Vec<u64>) -> bool {
    out.clear();
    match col {
        Strs::Utf8(a) => offsets_chars(a, lo, hi, out),
        Strs::Large(a) => offsets_chars(a, lo, hi, out),
        _ => {
            for i in lo..hi {
                let Some(text) = col.get(i) else {
                    return false;
                };
                out.push(count_chars(text));
            }
            true
        }
    }
}

fn offsets_chars<O: OffsetSizeTrait>(
    a: &GenericStringArray<O>,
    lo: usize,
    hi: usize,
    out: &mut Vec<u64>,
) -> bool {
    if !no_nulls(a, lo, hi) {
        return false;
    }
    // In bounds and on character boundaries: checked before any read (phase 2).
    let offsets = &a.value_offsets()[lo..=hi];
    let values = a.values().as_slice();
    for block in (0..hi - lo).step_by(CHAR_BLOCK) {
        let end = (block + CHAR_BLOCK).min(hi - lo);
        count_cells(&offsets[block..=end], values, out);
    }
    true
}

/// The characters of each cell between consecutive `offsets`: the whole span counted once,
/// and each cell's length taken when the span has as many characters as bytes; else halved.
fn count_cells<O: OffsetSizeTrait>(offsets: &[O], values: &[u8], out: &mut Vec<u64>) {
    let n = offsets.len() - 1;
    let span = &values[offsets[0].as_usize()..offsets[n].as_usize()];
    if n > 1 && bytecount::num_chars(span) == span.len() {
        out.extend(
            offsets
                .windows(2)
                .map(|w| (w[1].as_usize() - w[0].as_usize()) as u64),
        );
    } else if n > 2 {
        count_cells(&offsets[..=n / 2], values, out);
        count_cells(&offsets[n / 2..], values, out);
    } else {
        for w in offsets.windows(2) {
            let cell = &values[w[0].as_usize()..w[1].as_usize()];
            out.push(bytecount::num_chars(cell) as u64);
        }
    }
}

/// The path ids of rows `lo..hi` into `scratch.columns.path` (cleared first): a row with the
/// path of the row before takes its id without a lookup.
fn paths<'a>(col: &Strs<'a>, lo: usize, hi: usize, scratch: &mut Scratch<'a>) -> bool {
    let mut ids = std::mem::take(&mut scratch.columns.path);
    ids.clear();
    let taken = match col {
        Strs::Utf8(a) => {
            no_nulls(*a, lo, hi) && path_ids(|i| a.value(i), lo, hi, scratch, &mut ids)
        }
        Strs::Large(a) => {
            no_nulls(*a, lo, hi) && path_ids(|i| a.value(i), lo, hi, scratch, &mut ids)
        }
        _ => path_ids(|i| col.get(i).unwrap_or(""), lo, hi, scratch, &mut ids),
    };
    scratch.columns.path = ids;
    taken
}

fn path_ids<'a>(
    value: impl Fn(usize) -> &'a str,
    lo: usize,
    hi: usize,
    scratch: &mut Scratch<'a>,
    ids: &mut Vec<u32>,
) -> bool {
    let mut previous: Option<(&'a str, u32)> = None;
    for i in lo..hi {
        let raw = value(i);
        let id = match previous {
            Some((p, id)) if same(p.as_bytes(), raw.as_bytes()) => id,
            // A null or empty path (refused) falls to the row-by-row read.
            _ => match scratch.path_id(raw) {
                Ok(id) => id,
                Err(_) => return false,
            },
        };
        previous = Some((raw, id));
        ids.push(id);
    }
    true
}
