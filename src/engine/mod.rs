//! The ranking and packing engine, free of Python types.
//!
//! The contract (the Python reference in `python/bugcontext/core/reference.py` is its executable
//! form):
//!
//! * **Rank** by `(group, -score, index)` ascending. With `k` failing files (in error order),
//!   a candidate from the `i`-th failing file has group `i`; any other has group `k` for
//!   `reference`, `k + 1` for `failure`, `k + 2` for `search`. Scores are finite, compared
//!   as `f64` with `-0.0 == 0.0`; ties fall back to the input index, so the order is total.
//! * **Select** in rank order, never stopping early. A candidate whose closed line range
//!   intersects a window already selected from the same path is omitted as an overlap (naming
//!   the selected window with the smallest start that it hits); else one whose cost would take
//!   the total past the budget is omitted for budget; else it is selected.
//!
//! Selected windows of one path are pairwise disjoint, so ordered by end they are also ordered
//! by start: one sorted set per path, keyed by end, answers "does `[s, e]` hit a selected
//! window?" and takes a new window in `O(log k)` each, whatever the arrival order (a sorted
//! vector while the path has few windows, a B-tree beyond).

use std::borrow::Cow;
use std::collections::BTreeMap;

mod groups;
#[cfg(test)]
mod tests;

pub use groups::pack_groups;

/// Highest accepted line number (`2**31 - 1`).
pub const MAX_LINE: u32 = i32::MAX as u32;

/// [`Row::group`] of a candidate in no group.
pub const NO_GROUP: u32 = u32::MAX;

/// Why a candidate was proposed. Its rank group is [`Reason::group`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Evidence from the failure itself (a traceback frame).
    Failure,
    /// A definition or use found by reference analysis.
    Reference,
    /// A text-search hit.
    Search,
}

impl Reason {
    /// Parse the exact lowercase name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "failure" => Some(Self::Failure),
            "reference" => Some(Self::Reference),
            "search" => Some(Self::Search),
            _ => None,
        }
    }

    /// The exact lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Failure => "failure",
            Self::Reference => "reference",
            Self::Search => "search",
        }
    }

    /// Place among the reasons: `reference` (0) before `failure` (1) before `search` (2). The
    /// failing files' candidates rank above all three, whatever their reason.
    pub fn order(self) -> u8 {
        match self {
            Self::Reference => 0,
            Self::Failure => 1,
            Self::Search => 2,
        }
    }
}

/// Why a path was rejected. [`PathError::problem`] gives the text both engines report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    Empty,
    Nul,
    Backslash,
    Absolute,
    ParentSegment,
    NothingLeft,
}

impl PathError {
    /// The problem text (identical to the reference implementation's).
    pub fn problem(self) -> &'static str {
        match self {
            Self::Empty => "must not be empty",
            Self::Nul => "must not contain NUL",
            Self::Backslash => "must not contain a backslash",
            Self::Absolute => "must be relative, not absolute",
            Self::ParentSegment => "must not contain a '..' segment",
            Self::NothingLeft => "names no file after canonicalisation",
        }
    }
}

/// Canonical form of a repository-relative path: split on `/`, drop empty and `.` segments,
/// join with `/`. Borrows when the input is already canonical (the common case).
///
/// Rejected, in this order: empty, NUL, backslash, leading `/`, a `..` segment, nothing left.
pub fn canonical_path(path: &str) -> Result<Cow<'_, str>, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    let bytes = path.as_bytes();
    // One pass for both bytes (paths are short: a search call each would cost more).
    let (nul, backslash) = bytes.iter().fold((false, false), |(nul, backslash), &b| {
        (nul | (b == 0), backslash | (b == b'\\'))
    });
    if nul {
        return Err(PathError::Nul);
    }
    if backslash {
        return Err(PathError::Backslash);
    }
    if bytes[0] == b'/' {
        return Err(PathError::Absolute);
    }
    let mut canonical = true;
    let mut any = false;
    for segment in path.split('/') {
        match segment {
            ".." => return Err(PathError::ParentSegment),
            "" | "." => canonical = false,
            _ => any = true,
        }
    }
    if !any {
        return Err(PathError::NothingLeft);
    }
    if canonical {
        return Ok(Cow::Borrowed(path));
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    Ok(Cow::Owned(parts.join("/")))
}

/// One validated candidate, as the engine sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Row {
    /// Interned id of the canonical path (`0..n_paths`).
    pub path: u32,
    /// First line, 1-based, inclusive.
    pub start: u32,
    /// Last line, inclusive, `>= start`.
    pub end: u32,
    /// Cost in the build's unit (characters today), computed before packing.
    pub cost: u64,
    pub reason: Reason,
    /// A finite score; higher ranks first.
    pub score: f64,
    /// Dense id of the candidate's group (`0..n_groups`), or [`NO_GROUP`].
    pub group: u32,
    /// Its content is no longer its file's lines (verified provenance): omitted as
    /// [`Omitted::Stale`] at its rank, taking no budget and blocking nothing.
    pub stale: bool,
}

/// Why a candidate was left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Omitted {
    /// It intersects the selected window with this input index.
    Overlap(u32),
    /// Its cost did not fit what was left of the budget.
    Budget,
    /// Its group did not fit: this is the input index of the member at which the group's
    /// running cost went past what was left of the budget.
    Group(u32),
    /// Its content is no longer what its file holds at its line range (verified provenance).
    Stale,
}

/// An omission record: input index, 0-based rank, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Omission {
    pub index: u32,
    pub rank: u32,
    pub why: Omitted,
}

/// The outcome of one build: selected input indices in selection order (with their ranks),
/// omissions in rank order, and the total cost of the selection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub selected: Vec<u32>,
    /// The rank of each selected candidate, parallel to `selected` (increasing).
    pub ranks: Vec<u32>,
    pub omitted: Vec<Omission>,
    pub used: u64,
}

/// Paths with at most this many selected windows keep them in a sorted vector; beyond, in a
/// B-tree. Inserting into the vector moves at most this many windows.
const SMALL_WINDOWS: usize = 32;

/// The selected windows of one path, keyed by their last line (they are pairwise disjoint).
#[derive(Clone, Debug)]
enum Windows {
    /// `(end, start, index)`, ascending by end.
    Small(Vec<(u32, u32, u32)>),
    /// end -> (start, index).
    Large(BTreeMap<u32, (u32, u32)>),
}

impl Default for Windows {
    fn default() -> Self {
        Self::Small(Vec::new())
    }
}

impl Windows {
    /// The first window (by end) that ends at or after `line`: `(end, start, index)`.
    #[inline]
    fn first_from(&self, line: u32) -> Option<(u32, u32, u32)> {
        match self {
            Self::Small(v) => v.get(v.partition_point(|w| w.0 < line)).copied(),
            Self::Large(t) => t.range(line..).next().map(|(&e, &(s, i))| (e, s, i)),
        }
    }

    /// Take a window that hits none of the set's.
    #[inline]
    fn insert(&mut self, end: u32, start: u32, index: u32) {
        match self {
            Self::Small(v) if v.len() < SMALL_WINDOWS => {
                let at = v.partition_point(|w| w.0 < end);
                v.insert(at, (end, start, index));
            }
            Self::Small(v) => {
                let mut tree: BTreeMap<u32, (u32, u32)> =
                    v.iter().map(|&(e, s, i)| (e, (s, i))).collect();
                tree.insert(end, (start, index));
                *self = Self::Large(tree);
            }
            Self::Large(t) => {
                t.insert(end, (start, index));
            }
        }
    }

    /// Give back the window ending at `end`.
    fn remove(&mut self, end: u32) {
        match self {
            Self::Small(v) => {
                if let Ok(at) = v.binary_search_by_key(&end, |w| w.0) {
                    v.remove(at);
                }
            }
            Self::Large(t) => {
                t.remove(&end);
            }
        }
    }

    /// Empty, keeping a small vector's room.
    fn clear(&mut self) {
        match self {
            Self::Small(v) => v.clear(),
            Self::Large(_) => *self = Self::default(),
        }
    }
}

/// `n_paths` empty window sets in `windows`, reusing what is there.
fn reset_windows(windows: &mut Vec<Windows>, n_paths: usize) {
    windows.truncate(n_paths);
    windows.iter_mut().for_each(Windows::clear);
    windows.resize_with(n_paths, Windows::default);
}

/// Buffers that [`build_into`] reuses from one build to the next (a worker building many
/// small groups allocates them once).
#[derive(Debug, Default)]
pub struct Scratch {
    groups: Vec<u32>,
    keys: Vec<u128>,
    order: Vec<u32>,
    windows: Vec<Windows>,
}

/// Order-preserving map of a finite `f64` to `u64`, with `-0.0` and `0.0` equal.
fn score_bits(score: f64) -> u64 {
    let bits = (score + 0.0).to_bits(); // -0.0 + 0.0 == +0.0
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The ranking key packed into one integer: group (32 bits), then descending score (64), then
/// input index (32).
fn rank_key(row: &Row, index: u32, groups: &[u32], failing: u32) -> u128 {
    let group = match groups[row.path as usize] {
        u32::MAX => failing + u32::from(row.reason.order()),
        position => position,
    };
    (u128::from(group) << 96) | (u128::from(!score_bits(row.score)) << 32) | u128::from(index)
}

/// Input indices in rank order. `failure_paths` are the failing files' path ids in error order
/// (a repeated id counts at its first place); `n_paths` bounds the path ids; `rows.len()` and
/// `failure_paths.len() + 2` must fit in `u32`.
pub fn rank(rows: &[Row], failure_paths: &[u32], n_paths: usize) -> Vec<u32> {
    let mut scratch = Scratch::default();
    rank_into(&mut scratch, rows, failure_paths, n_paths);
    scratch.order
}

/// [`rank`] into `scratch.order`.
fn rank_into(scratch: &mut Scratch, rows: &[Row], failure_paths: &[u32], n_paths: usize) {
    // Per path id: its place among the failing files, or u32::MAX.
    let groups = &mut scratch.groups;
    groups.clear();
    groups.resize(n_paths, u32::MAX);
    let mut failing = 0u32;
    for &path in failure_paths {
        if groups[path as usize] == u32::MAX {
            groups[path as usize] = failing;
            failing += 1;
        }
    }
    let keys = &mut scratch.keys;
    keys.clear();
    keys.extend(
        rows.iter()
            .zip(0u32..)
            .map(|(row, index)| rank_key(row, index, groups, failing)),
    );
    // Keys are distinct (they end in the index), so an unstable sort is deterministic.
    keys.sort_unstable();
    scratch.order.clear();
    scratch.order.extend(keys.iter().map(|&key| key as u32));
}

/// Walk `order` once and select, skipping (never stopping at) what does not fit.
///
/// `n_paths` bounds the path ids in `rows`. Each path's selected windows live in a sorted set
/// keyed by their last line (a vector up to `SMALL_WINDOWS` windows, then a B-tree): the
/// windows are pairwise disjoint, so ordering by end also orders by start, and both the overlap
/// query and the insertion take `O(log k)` for `k` windows on that path, whatever order the
/// candidates arrive in (descending, nested, interleaved).
pub fn pack(rows: &[Row], order: &[u32], budget: u64, n_paths: usize) -> Selection {
    let mut windows = Vec::new();
    let mut out = Selection::default();
    pack_into(&mut windows, rows, order, budget, n_paths, &mut out);
    out
}

/// [`pack`] into `out` (cleared first), with `windows` as room for the window sets.
fn pack_into(
    windows: &mut Vec<Windows>,
    rows: &[Row],
    order: &[u32],
    budget: u64,
    n_paths: usize,
    out: &mut Selection,
) {
    reset_windows(windows, n_paths);
    out.selected.clear();
    out.ranks.clear();
    out.omitted.clear();
    out.used = 0;
    for (rank, &index) in (0u32..).zip(order) {
        let row = &rows[index as usize];
        let set = &mut windows[row.path as usize];
        // First selected window that ends at or after our start; it is the only candidate hit
        // with the smallest start, because every earlier window ends before we begin.
        let why = match set.first_from(row.start) {
            Some((_, start, blocker)) if start <= row.end => Omitted::Overlap(blocker),
            // `used <= budget` always holds, so this is `used + cost > budget` without overflow.
            _ if row.cost > budget - out.used => Omitted::Budget,
            _ => {
                set.insert(row.end, row.start, index);
                out.used += row.cost;
                out.selected.push(index);
                out.ranks.push(rank);
                continue;
            }
        };
        out.omitted.push(Omission { index, rank, why });
    }
}

/// Rank then pack: the whole build over validated rows.
pub fn build(rows: &[Row], failure_paths: &[u32], budget: u64, n_paths: usize) -> Selection {
    let mut out = Selection::default();
    build_into(
        &mut Scratch::default(),
        rows,
        failure_paths,
        budget,
        n_paths,
        &mut out,
    );
    out
}

/// [`build`] into `out` (cleared first), reusing the buffers of `scratch`.
pub fn build_into(
    scratch: &mut Scratch,
    rows: &[Row],
    failure_paths: &[u32],
    budget: u64,
    n_paths: usize,
    out: &mut Selection,
) {
    rank_into(scratch, rows, failure_paths, n_paths);
    pack_into(
        &mut scratch.windows,
        rows,
        &scratch.order,
        budget,
        n_paths,
        out,
    );
}

/// Rank then pack with groups and stale rows: [`pack_groups`]; with `n_groups == 0` and no
/// stale row, exactly [`build`].
pub fn build_groups(
    rows: &[Row],
    failure_paths: &[u32],
    budget: u64,
    n_paths: usize,
    n_groups: usize,
) -> Selection {
    let order = rank(rows, failure_paths, n_paths);
    if n_groups == 0 && !rows.iter().any(|r| r.stale) {
        return pack(rows, &order, budget, n_paths);
    }
    pack_groups(rows, &order, budget, n_paths, n_groups)
}
