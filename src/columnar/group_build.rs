//! One group's build: its cells validated into the engine's rows, then built.

use std::borrow::Cow;
use std::hash::{Hash, Hasher};

use rustc_hash::FxHashMap;

use super::fast::{self, Columns};
use super::readers::{Cursor, Table, same};
use super::{Budget, ErrorKind, LimitFound, Problem, Spec, TableError, Unit};
use crate::engine::{self, MAX_LINE, Omitted, Row};
use crate::tokens;

/// The decision columns, in group-sorted position (table order when every group is one run in
/// order); one group's part of each is handed to its build.
#[derive(Default)]
pub(crate) struct Decisions<T> {
    /// The row's position within its group.
    pub(crate) index: T,
    pub(crate) rank: T,
    /// Selection order, or `u32::MAX`.
    pub(crate) order: T,
    /// For an overlap, the blocker's row within the group; else `u32::MAX`.
    pub(crate) overlaps: T,
}

/// One group's part of the decision columns.
pub(crate) struct Out<'d> {
    /// `index`, `rank`, `order`, `overlaps`.
    pub(crate) u32s: Decisions<&'d mut [u32]>,
    /// 0 none (selected), 1 overlap, 2 budget.
    pub(crate) omission: &'d mut [u8],
    pub(crate) cost: &'d mut [u64],
}

/// One group's summary.
#[derive(Clone, Copy, Default)]
pub(crate) struct Summary {
    pub(crate) first_row: u64,
    pub(crate) candidates: u32,
    pub(crate) selected: u32,
    pub(crate) overlap: u32,
    pub(crate) budget_omitted: u32,
    pub(crate) used: u64,
    pub(crate) budget: u64,
}

/// A group's first error, with the validation phase it belongs to (4 or 5, see the module doc).
pub(crate) type Found = (u8, TableError);

pub(crate) fn text(s: impl Into<String>) -> Problem {
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
pub(crate) struct Scratch<'a> {
    pub(crate) rows: Vec<Row>,
    pub(crate) columns: Columns,
    /// Canonical path -> path id.
    paths: FxHashMap<Cow<'a, str>, u32>,
    /// Path as given -> path id.
    raw: FxHashMap<Given<'a>, u32>,
    engine: engine::Scratch,
    selection: engine::Selection,
    failure_ids: Vec<u32>,
}

/// Phase 5 and the build of one group; fills `out` (the group's rows, in order).
pub(crate) fn build_group<'a>(
    table: &'a Table<'a>,
    rows: &[u32],
    spec: &Spec,
    scratch: &mut Scratch<'a>,
    out: Out<'_>,
) -> Result<Summary, Found> {
    let (budget, failing) = group_cells(table, rows, spec).map_err(|e| (4, e))?;
    read_rows(table, rows, spec, scratch)?;

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
    Ok(write_decisions(
        out,
        &scratch.rows,
        &scratch.selection,
        rows,
        budget,
    ))
}

/// The group's rows read column by column, a run of consecutive rows of one chunk at a time
/// (see [`fast`]); `false` when a cell is not taken.
fn read_fast<'a>(
    table: &'a Table<'a>,
    rows: &[u32],
    spec: &Spec,
    scratch: &mut Scratch<'a>,
) -> bool {
    scratch.clear();
    let mut total = 0u64;
    let mut cursor = Cursor::new(table);
    let mut k = 0;
    while k < rows.len() {
        let first = rows[k] as usize;
        let (chunk, i, left) = cursor.run(first);
        let mut run = 1;
        while run < left && k + run < rows.len() && rows[k + run] as usize == first + run {
            run += 1;
        }
        if !fast::read_run(chunk, i, i + run, spec, scratch, &mut total) {
            return false;
        }
        k += run;
    }
    true
}

/// Phase 5: the group's rows (`rows`, table rows in order) validated into `scratch.rows`, in
/// the order path, start, end, content, reason, score, then the running total of content.
fn read_rows<'a>(
    table: &'a Table<'a>,
    rows: &[u32],
    spec: &Spec,
    scratch: &mut Scratch<'a>,
) -> Result<(), Found> {
    if read_fast(table, rows, spec, scratch) {
        return Ok(());
    }
    scratch.clear();
    let mut total = 0u64;
    let mut cursor = Cursor::new(table);
    for (local, &row) in rows.iter().enumerate() {
        let row = row as usize;
        let (chunk, i) = cursor.at(row);
        let fail = |field: &str, problem: Problem| (5, TableError::row(field, problem, row, local));
        let null = |field: &str| fail(field, text("is null"));

        let raw = chunk.path.get(i).ok_or_else(|| null("path"))?;
        let path = scratch
            .path_id(raw)
            .map_err(|e| fail("path", text(e.problem())))?;
        let start = chunk.start.get(i).ok_or_else(|| null("start"))?;
        if let Some(problem) = start_problem(start) {
            return Err(fail("start", text(problem)));
        }
        let end = chunk.end.get(i).ok_or_else(|| null("end"))?;
        if let Some(problem) = end_problem(start, end) {
            return Err(fail("end", text(problem)));
        }
        let content = chunk.content.get(i).ok_or_else(|| null("content"))?;
        let chars = count_chars(content);
        let reason = chunk.reason(i).map_err(|given| match given {
            None => null("reason"),
            Some(given) => fail("reason", Problem::Reason(given.into())),
        })?;
        let score = chunk.score.get(i).ok_or_else(|| null("score"))?;
        if let Some(problem) = score_problem(score) {
            return Err(fail("score", text(problem)));
        }
        total = total.saturating_add(chars);
        if total > spec.max_total_chars {
            return Err((5, total_error(total, spec, row, local)));
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
    Ok(())
}

impl<'a> Scratch<'a> {
    /// Empty rows and paths, for the next read.
    fn clear(&mut self) {
        self.rows.clear();
        self.paths.clear();
        self.raw.clear();
    }

    /// The id of a path as given: canonicalised once per group (rows share few paths).
    pub(crate) fn path_id(&mut self, raw: &'a str) -> Result<u32, engine::PathError> {
        Ok(match self.raw.get(&Given(raw)) {
            Some(&id) => id,
            None => {
                let canonical = engine::canonical_path(raw)?;
                let next = self.paths.len() as u32;
                let id = *self.paths.entry(canonical).or_insert(next);
                self.raw.insert(Given(raw), id);
                id
            }
        })
    }
}

/// A path as given, compared inline (see [`same`]).
#[derive(Clone, Copy)]
struct Given<'a>(&'a str);

impl PartialEq for Given<'_> {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        same(self.0.as_bytes(), other.0.as_bytes())
    }
}

impl Eq for Given<'_> {}

impl Hash for Given<'_> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0.as_bytes());
    }
}

/// What is wrong with a `start` line, if anything: it must be in `1..=MAX_LINE`.
fn start_problem(start: i128) -> Option<String> {
    if start < 1 {
        return Some(format!("must be >= 1, got {start}"));
    }
    if start > i128::from(MAX_LINE) {
        return Some(format!("must be <= {MAX_LINE}, got {start}"));
    }
    None
}

/// What is wrong with an `end` line, if anything: it must be in `start..=MAX_LINE`.
fn end_problem(start: i128, end: i128) -> Option<String> {
    if end < start {
        return Some(format!("must be >= start ({start}), got {end}"));
    }
    if end > i128::from(MAX_LINE) {
        return Some(format!("must be <= {MAX_LINE}, got {end}"));
    }
    None
}

/// What is wrong with a score, if anything: it must be finite.
fn score_problem(score: f64) -> Option<String> {
    if score.is_finite() {
        return None;
    }
    let shown = if score.is_nan() {
        "nan"
    } else if score > 0.0 {
        "inf"
    } else {
        "-inf"
    };
    Some(format!("must be finite, got {shown}"))
}

/// The group's running total of content characters went past `max_total_chars` at `row`.
fn total_error(total: u64, spec: &Spec, row: usize, local: usize) -> TableError {
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
    e
}

/// The engine's decisions for the group's rows written into `out`; returns the summary.
fn write_decisions(
    out: Out<'_>,
    engine_rows: &[Row],
    selection: &engine::Selection,
    rows: &[u32],
    budget: u64,
) -> Summary {
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
    for (c, row) in cost.iter_mut().zip(engine_rows) {
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
    summary
}

/// The number of Unicode code points in `text`: its bytes that are not UTF-8 continuation
/// bytes.
#[inline]
pub fn count_chars(text: &str) -> u64 {
    bytecount::num_chars(text.as_bytes()) as u64
}
