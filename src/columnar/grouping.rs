//! Grouping: the rows of the table split into groups by the key column, numbered in order of
//! first appearance.

use arrow_array::RecordBatch;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::group_build::text;
use super::readers::{Bad, Key, Keys, Table, column};
use super::{Spec, TableError};

/// Rows sorted by group: `rows[bounds[g]..bounds[g + 1]]` are group `g`'s rows, ascending.
pub(crate) struct Groups {
    pub(crate) rows: Vec<u32>,
    pub(crate) bounds: Vec<usize>,
    /// True when `rows` is `0..n` (every group is one run, in order of first appearance).
    pub(crate) identity: bool,
}

pub(crate) fn group(batches: &[RecordBatch], spec: &Spec, n: usize) -> Result<Groups, TableError> {
    let Some(name) = &spec.group_by else {
        return Ok(Groups {
            rows: (0..n as u32).into_par_iter().collect(),
            bounds: vec![0, n],
            identity: true,
        });
    };
    let chunks = chunk_runs(batches, name)?;
    let (runs, counts, identity) = number_runs(chunks, name)?;
    Ok(sort_rows(n, &runs, &counts, identity))
}

/// One chunk's keys as runs of equal keys, up to its first null or invalid key (then that
/// key's offset and problem, `None` for a null).
type ChunkRuns<'k> = (Vec<(Key<'k>, usize)>, Option<(usize, Option<Bad>)>);

/// Each chunk's [`ChunkRuns`] of the key column `name`, the chunks in parallel.
fn chunk_runs<'k>(
    batches: &'k [RecordBatch],
    name: &str,
) -> Result<Vec<ChunkRuns<'k>>, TableError> {
    batches
        .par_iter()
        .map(|batch| {
            let keys = column(batch, name, Keys::new, "an integer or string")?;
            // No key is read past the chunk's first invalid one.
            let bad = keys.first_invalid();
            if bad.is_none()
                && let Some(runs) = keys.runs()
            {
                return Ok((runs, None));
            }
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
        .collect()
}

/// Runs of rows as `(first row, length, group id)`.
type Runs = Vec<(usize, usize, u32)>;

/// Runs of rows as `(first row, length, group id)` in table order, the groups numbered in
/// order of first appearance; the number of rows of each group; and whether every group is
/// one run, in order. The first null or invalid key in table order is an error.
fn number_runs(
    chunks: Vec<ChunkRuns<'_>>,
    name: &str,
) -> Result<(Runs, Vec<usize>, bool), TableError> {
    let mut ids: FxHashMap<Key<'_>, u32> = FxHashMap::default();
    let mut runs: Runs = Vec::new();
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
    Ok((runs, counts, identity))
}

/// The rows sorted by group (stable), from the runs and counts of [`number_runs`].
fn sort_rows(n: usize, runs: &[(usize, usize, u32)], counts: &[usize], identity: bool) -> Groups {
    let mut bounds = Vec::with_capacity(counts.len() + 1);
    bounds.push(0);
    for c in counts {
        bounds.push(bounds.last().unwrap() + c);
    }
    let rows = if identity {
        (0..n as u32).into_par_iter().collect()
    } else {
        let mut next = bounds.clone();
        let mut rows = vec![0u32; n];
        for &(first, len, g) in runs {
            let at = next[g as usize];
            for (slot, r) in rows[at..at + len].iter_mut().zip(first..) {
                *slot = r as u32;
            }
            next[g as usize] += len;
        }
        rows
    };
    Groups {
        rows,
        bounds,
        identity,
    }
}

/// Phase 2: the first cell, in table order (then in the order path, content, reason, failing
/// files), of the string columns a build reads that is not valid Arrow data; as `(row, field,
/// problem)`.
pub(crate) fn first_invalid_cell(
    table: &Table<'_>,
    spec: &Spec,
) -> Option<(usize, String, String)> {
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
pub(crate) fn local_of(groups: &Groups, row: usize) -> usize {
    let row = row as u32;
    groups
        .bounds
        .windows(2)
        .find_map(|b| groups.rows[b[0]..b[1]].binary_search(&row).ok())
        .unwrap_or(0)
}
