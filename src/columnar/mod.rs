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

mod fast;
mod group_build;
mod grouping;
mod output;
mod readers;
#[cfg(test)]
mod tests;

pub use group_build::count_chars;

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::tokens::Encoding;
use group_build::{Decisions, Found, Out, Scratch, Summary, build_group, text};
use grouping::{Groups, first_invalid_cell, group, local_of};
use output::{decision_batch, split, summary_batch};
use readers::{Chunk, Table};

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
    let (table, n) = read_table(batches, spec)?;
    let groups = group(batches, spec, n)?;

    // Phase 2: the other string columns' Arrow data.
    if let Some((row, field, problem)) = first_invalid_cell(&table, spec) {
        return Err(TableError::row(
            &field,
            text(problem),
            row,
            local_of(&groups, row),
        ));
    }
    check_group_sizes(&groups, spec)?;

    // Phases 4 and 5, and the builds, group by group in parallel.
    let mut u32s = Decisions {
        index: vec![0u32; n],
        rank: vec![0u32; n],
        order: vec![0u32; n],
        overlaps: vec![0u32; n],
    };
    let mut omission = vec![0u8; n];
    let mut cost = vec![0u64; n];
    let summaries = build_groups(&table, &groups, spec, &mut u32s, &mut omission, &mut cost)?;

    Ok(Output {
        decisions: decision_batch(&groups, u32s, omission, cost),
        groups: summary_batch(&summaries),
    })
}

/// The chunks of the table, each with its columns found, and its number of rows (below
/// `2**32`).
fn read_table<'a>(
    batches: &'a [RecordBatch],
    spec: &Spec,
) -> Result<(Table<'a>, usize), TableError> {
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
    Ok((Table { chunks, starts }, n))
}

/// Phase 3: no group has more than `max_candidates` rows (the first such group, in group order,
/// is an error).
fn check_group_sizes(groups: &Groups, spec: &Spec) -> Result<(), TableError> {
    let n_groups = groups.bounds.len() - 1;
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
    Ok(())
}

/// Phases 4 and 5 and the builds, group by group in parallel, each group writing its part of
/// the decision columns. The first error in phase order, then table order, is reported.
fn build_groups(
    table: &Table<'_>,
    groups: &Groups,
    spec: &Spec,
    u32s: &mut Decisions<Vec<u32>>,
    omission: &mut [u8],
    cost: &mut [u64],
) -> Result<Vec<Summary>, TableError> {
    let sizes: Vec<usize> = groups.bounds.windows(2).map(|b| b[1] - b[0]).collect();
    let outs = split(&mut u32s.index, &sizes)
        .zip(split(&mut u32s.rank, &sizes))
        .zip(split(&mut u32s.order, &sizes))
        .zip(split(&mut u32s.overlaps, &sizes))
        .zip(split(omission, &sizes).zip(split(cost, &sizes)))
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
    Ok(results
        .into_iter()
        .map(|r| r.ok().unwrap_or_default())
        .collect())
}
