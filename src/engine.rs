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
    if bytes.contains(&0) {
        return Err(PathError::Nul);
    }
    if bytes.contains(&b'\\') {
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

/// [`pack`] where a group is selected whole or not at all.
///
/// A group is decided when its best-ranked member comes up: its members, in rank order, are
/// tried against the selected windows and the members tried before them (a member that hits
/// one is omitted as an overlap and costs nothing); if the others' costs together fit what is
/// left of the budget they are all selected, in rank order; else every member is omitted as
/// [`Omitted::Group`], naming the member at which the running cost went past the budget.
/// Candidates in no group are packed as by [`pack`]. A stale row (in a group or not) is omitted
/// as [`Omitted::Stale`] at its rank, costs nothing and blocks nothing; a group is decided over
/// its other members. Omissions come in rank order.
pub fn pack_groups(
    rows: &[Row],
    order: &[u32],
    budget: u64,
    n_paths: usize,
    n_groups: usize,
) -> Selection {
    // The members of each group in rank order, laid out flat: group `g`'s are
    // `members[first[g]..first[g + 1]]`.
    let mut first = vec![0u32; n_groups + 1];
    for row in rows {
        if row.group != NO_GROUP {
            first[row.group as usize + 1] += 1;
        }
    }
    for g in 0..n_groups {
        first[g + 1] += first[g];
    }
    let mut next = first.clone();
    let mut members = vec![(0u32, 0u32); first[n_groups] as usize];
    for (rank, &index) in (0u32..).zip(order) {
        let group = rows[index as usize].group;
        if group != NO_GROUP {
            let slot = &mut next[group as usize];
            members[*slot as usize] = (rank, index);
            *slot += 1;
        }
    }
    let mut windows = Vec::new();
    reset_windows(&mut windows, n_paths);
    let mut out = Selection::default();
    let mut done = vec![false; n_groups];
    // The members of the group being decided that hit nothing, and those that hit a window.
    let mut placed: Vec<(u32, u32)> = Vec::new();
    let mut blocked: Vec<Omission> = Vec::new();
    for (rank, &index) in (0u32..).zip(order) {
        let row = &rows[index as usize];
        if row.stale && row.group == NO_GROUP {
            out.omitted.push(Omission {
                index,
                rank,
                why: Omitted::Stale,
            });
            continue;
        }
        if row.group == NO_GROUP {
            let set = &mut windows[row.path as usize];
            let why = match set.first_from(row.start) {
                Some((_, start, blocker)) if start <= row.end => Omitted::Overlap(blocker),
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
            continue;
        }
        let group = row.group as usize;
        if done[group] {
            continue;
        }
        done[group] = true;
        let group_members = &members[first[group] as usize..first[group + 1] as usize];
        // A small group checks its members against each other by a scan and touches the
        // selected windows only once it fits; a large one is placed in them as it goes and
        // taken out again if it does not fit.
        let small = group_members.len() <= SMALL_GROUP;
        placed.clear();
        blocked.clear();
        let mut cost = 0u64;
        let mut culprit = None;
        for &(r, i) in group_members {
            let m = &rows[i as usize];
            if m.stale {
                blocked.push(Omission {
                    index: i,
                    rank: r,
                    why: Omitted::Stale,
                });
                continue;
            }
            let set = &mut windows[m.path as usize];
            // The window it hits with the smallest end (the windows it may hit are disjoint).
            let mut hit = match set.first_from(m.start) {
                Some((end, start, blocker)) if start <= m.end => Some((end, blocker)),
                _ => None,
            };
            if small {
                for &(_, j) in &placed {
                    let o = &rows[j as usize];
                    if o.path == m.path
                        && o.start <= m.end
                        && m.start <= o.end
                        && hit.is_none_or(|(end, _)| o.end < end)
                    {
                        hit = Some((o.end, j));
                    }
                }
            }
            if let Some((_, blocker)) = hit {
                blocked.push(Omission {
                    index: i,
                    rank: r,
                    why: Omitted::Overlap(blocker),
                });
                continue;
            }
            if !small {
                set.insert(m.end, m.start, i);
            }
            placed.push((r, i));
            // `cost <= budget - used` until a member goes past it; then every member is
            // omitted, whatever the ones after it would hit.
            if m.cost > budget - out.used - cost {
                culprit = Some(i);
                break;
            }
            cost += m.cost;
        }
        match culprit {
            None => {
                out.used += cost;
                for &(r, i) in &placed {
                    if small {
                        let m = &rows[i as usize];
                        windows[m.path as usize].insert(m.end, m.start, i);
                    }
                    out.selected.push(i);
                    out.ranks.push(r);
                }
                out.omitted.extend_from_slice(&blocked);
            }
            Some(culprit) => {
                if !small {
                    for &(_, i) in &placed {
                        let m = &rows[i as usize];
                        windows[m.path as usize].remove(m.end);
                    }
                }
                out.omitted
                    .extend(group_members.iter().map(|&(r, i)| Omission {
                        index: i,
                        rank: r,
                        // A stale member stays stale: it was never tried.
                        why: if rows[i as usize].stale {
                            Omitted::Stale
                        } else {
                            Omitted::Group(culprit)
                        },
                    }));
            }
        }
    }
    out.omitted.sort_unstable_by_key(|o| o.rank);
    out
}

/// Groups of at most this many members are checked against themselves by a scan.
const SMALL_GROUP: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    fn row(path: u32, start: u32, end: u32, cost: u64, reason: Reason, score: f64) -> Row {
        Row {
            path,
            start,
            end,
            cost,
            reason,
            score,
            group: NO_GROUP,
            stale: false,
        }
    }

    fn grouped(mut r: Row, group: u32) -> Row {
        r.group = group;
        r
    }

    #[test]
    fn a_group_is_selected_whole_at_its_best_members_rank() {
        let rows = [
            row(0, 1, 1, 1, Reason::Reference, 9.0),
            grouped(row(1, 1, 5, 2, Reason::Search, 1.0), 0),
            row(2, 1, 1, 1, Reason::Reference, 5.0),
            grouped(row(2, 3, 3, 2, Reason::Reference, 8.0), 0),
        ];
        // Rank: 0, 3 (group 0: with its member 1), 2, 1.
        let s = build_groups(&rows, &[], 5, 3, 1);
        assert_eq!(s.selected, vec![0, 3, 1]);
        assert_eq!(s.ranks, vec![0, 1, 3]);
        assert_eq!(s.used, 5);
        assert_eq!(
            s.omitted,
            vec![Omission {
                index: 2,
                rank: 2,
                why: Omitted::Budget
            }]
        );
    }

    #[test]
    fn a_large_group_that_does_not_fit_leaves_no_window_behind() {
        // A group of SMALL_GROUP + 4 one-line members on lines 1.. of path 0 (placed in the
        // window index as it goes) whose last member does not fit; then ungrouped windows over
        // each of those lines: every one must be free again.
        let n = (SMALL_GROUP + 4) as u32;
        let mut rows: Vec<Row> = (0..n)
            .map(|i| grouped(row(0, i + 1, i + 1, 1, Reason::Reference, 9.0), 0))
            .collect();
        rows.extend((0..n).map(|i| row(0, i + 1, i + 1, 1, Reason::Search, 1.0)));
        let s = build_groups(&rows, &[], u64::from(n) - 1, 1, 1);
        assert_eq!(s.selected, (n..2 * n - 1).collect::<Vec<_>>());
        assert_eq!(s.used, u64::from(n) - 1);
        let culprit = n - 1;
        let expected: Vec<Omission> = (0..n)
            .map(|i| Omission {
                index: i,
                rank: i,
                why: Omitted::Group(culprit),
            })
            .chain(std::iter::once(Omission {
                index: 2 * n - 1,
                rank: 2 * n - 1,
                why: Omitted::Budget,
            }))
            .collect();
        assert_eq!(s.omitted, expected);
    }

    #[test]
    fn a_group_that_does_not_fit_is_omitted_whole_naming_the_member() {
        let rows = [
            grouped(row(0, 1, 1, 2, Reason::Reference, 9.0), 0),
            grouped(row(1, 1, 1, 2, Reason::Reference, 8.0), 0),
            grouped(row(0, 1, 1, 1, Reason::Search, 7.0), 0), // overlaps member 0
            row(2, 1, 1, 3, Reason::Search, 0.0),
        ];
        let s = build_groups(&rows, &[], 3, 3, 1);
        assert_eq!(s.selected, vec![3]);
        let group = |index, rank| Omission {
            index,
            rank,
            why: Omitted::Group(1),
        };
        assert_eq!(s.omitted, vec![group(0, 0), group(1, 1), group(2, 2)]);
        // With room: the overlapping member is omitted as an overlap and costs nothing.
        let s = build_groups(&rows, &[], 4, 3, 1);
        assert_eq!(s.selected, vec![0, 1]);
        assert_eq!(
            s.omitted,
            vec![
                Omission {
                    index: 2,
                    rank: 2,
                    why: Omitted::Overlap(0)
                },
                Omission {
                    index: 3,
                    rank: 3,
                    why: Omitted::Budget
                }
            ]
        );
    }

    #[test]
    fn without_groups_build_groups_is_build() {
        let rows = [
            row(0, 1, 10, 4, Reason::Reference, 9.0),
            row(0, 5, 12, 2, Reason::Search, 1.0),
            row(0, 20, 30, 2, Reason::Search, 0.5),
        ];
        assert_eq!(build_groups(&rows, &[], 3, 1, 0), build(&rows, &[], 3, 1));
        // Singleton groups pack like no groups, but name themselves when they do not fit.
        let single: Vec<Row> = rows.iter().zip(0..).map(|(r, g)| grouped(*r, g)).collect();
        let s = build_groups(&single, &[], 3, 1, 3);
        assert_eq!(s.selected, build(&rows, &[], 3, 1).selected);
    }

    #[test]
    fn reason_names_and_groups() {
        assert_eq!(Reason::parse("failure"), Some(Reason::Failure));
        assert_eq!(Reason::parse("reference"), Some(Reason::Reference));
        assert_eq!(Reason::parse("search"), Some(Reason::Search));
        for bad in ["", "Failure", "search ", "hit"] {
            assert_eq!(Reason::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Reason::Failure.name(), "failure");
        assert_eq!(Reason::Reference.name(), "reference");
        assert_eq!(Reason::Search.name(), "search");
        assert_eq!(Reason::Reference.order(), 0);
        assert_eq!(Reason::Failure.order(), 1);
        assert_eq!(Reason::Search.order(), 2);
    }

    #[test]
    fn path_problem_texts() {
        // The reference implementation reports the same texts (python/bugcontext/core/_input.py).
        assert_eq!(PathError::Empty.problem(), "must not be empty");
        assert_eq!(PathError::Nul.problem(), "must not contain NUL");
        assert_eq!(
            PathError::Backslash.problem(),
            "must not contain a backslash"
        );
        assert_eq!(
            PathError::Absolute.problem(),
            "must be relative, not absolute"
        );
        assert_eq!(
            PathError::ParentSegment.problem(),
            "must not contain a '..' segment"
        );
        assert_eq!(
            PathError::NothingLeft.problem(),
            "names no file after canonicalisation"
        );
    }

    #[test]
    fn a_group_counts_what_is_already_used() {
        // 3 of 6 used before the group comes up: its 2 + 2 fit 6 but not the 3 left.
        let rows = [
            row(0, 1, 1, 3, Reason::Reference, 9.0),
            grouped(row(1, 1, 1, 2, Reason::Reference, 8.0), 0),
            grouped(row(1, 5, 5, 2, Reason::Reference, 7.0), 0),
            row(2, 1, 1, 3, Reason::Search, 0.0),
        ];
        let s = build_groups(&rows, &[], 6, 3, 1);
        assert_eq!(s.selected, vec![0, 3]);
        assert_eq!(s.ranks, vec![0, 3]);
        assert_eq!(s.used, 6);
        let group = |index, rank| Omission {
            index,
            rank,
            why: Omitted::Group(2),
        };
        assert_eq!(s.omitted, vec![group(1, 1), group(2, 2)]);
    }

    #[test]
    fn ungrouped_candidates_overlap_group_members() {
        // The group's window [3, 6] is selected; the ungrouped [5, 9] on the same path hits it,
        // the ungrouped [7, 9] does not.
        let rows = [
            grouped(row(0, 3, 6, 1, Reason::Reference, 9.0), 0),
            row(0, 5, 9, 1, Reason::Reference, 8.0),
            row(0, 7, 9, 1, Reason::Search, 0.0),
        ];
        let s = build_groups(&rows, &[], 10, 1, 1);
        assert_eq!(s.selected, vec![0, 2]);
        assert_eq!(s.used, 2);
        assert_eq!(
            s.omitted,
            vec![Omission {
                index: 1,
                rank: 1,
                why: Omitted::Overlap(0)
            }]
        );
    }

    #[test]
    fn a_stale_row_is_omitted_without_any_group() {
        // No groups at all: the stale row still goes the stale way, not the plain packing's.
        let mut stale = row(0, 1, 10, 4, Reason::Reference, 9.0);
        stale.stale = true;
        let rows = [stale, row(0, 5, 12, 4, Reason::Search, 1.0)];
        let s = build_groups(&rows, &[], 5, 1, 0);
        assert_eq!(s.selected, vec![1]);
        assert_eq!(s.used, 4);
        assert_eq!(
            s.omitted,
            vec![Omission {
                index: 0,
                rank: 0,
                why: Omitted::Stale
            }]
        );
    }

    #[test]
    fn a_stale_row_is_omitted_at_its_rank_and_takes_no_budget_nor_blocks() {
        let mut stale = row(0, 1, 10, 4, Reason::Reference, 9.0);
        stale.stale = true;
        let rows = [
            stale,
            row(0, 5, 12, 4, Reason::Search, 1.0),
            grouped(row(1, 1, 2, 1, Reason::Search, 0.5), 0),
            {
                let mut m = grouped(row(1, 3, 4, 9, Reason::Search, 0.4), 0);
                m.stale = true;
                m
            },
        ];
        let s = build_groups(&rows, &[], 5, 2, 1);
        // The stale window blocks nothing: the overlapping search hit is selected; the stale
        // member costs nothing, so its group-mate fits.
        assert_eq!(s.selected, vec![1, 2]);
        assert_eq!(s.used, 5);
        assert_eq!(
            s.omitted,
            vec![
                Omission {
                    index: 0,
                    rank: 0,
                    why: Omitted::Stale
                },
                Omission {
                    index: 3,
                    rank: 3,
                    why: Omitted::Stale
                },
            ]
        );
        // A group that does not fit: its stale member stays stale.
        let t = build_groups(&rows, &[], 4, 2, 1);
        assert_eq!(t.selected, vec![1]);
        assert_eq!(
            t.omitted.iter().map(|o| o.why).collect::<Vec<_>>(),
            vec![Omitted::Stale, Omitted::Group(2), Omitted::Stale]
        );
    }

    #[test]
    fn canonical_paths() {
        assert_eq!(canonical_path("src/a.py").unwrap(), "src/a.py");
        assert!(matches!(
            canonical_path("src/a.py").unwrap(),
            Cow::Borrowed(_)
        ));
        assert_eq!(canonical_path("./src//a.py").unwrap(), "src/a.py");
        assert_eq!(canonical_path("a/").unwrap(), "a");
        assert_eq!(canonical_path("a/./b/.").unwrap(), "a/b");
        assert_eq!(canonical_path(""), Err(PathError::Empty));
        assert_eq!(canonical_path("a\0b"), Err(PathError::Nul));
        assert_eq!(canonical_path("a\\b"), Err(PathError::Backslash));
        assert_eq!(canonical_path("/a"), Err(PathError::Absolute));
        assert_eq!(canonical_path("a/../b"), Err(PathError::ParentSegment));
        assert_eq!(canonical_path("./."), Err(PathError::NothingLeft));
        assert_eq!(canonical_path("..."), Ok(Cow::Borrowed("...")));
        assert_eq!(canonical_path("A.py").unwrap(), "A.py"); // no case folding
    }

    #[test]
    fn failure_file_first_then_reason_then_score_then_index() {
        let rows = [
            row(0, 1, 1, 1, Reason::Search, 100.0),
            row(1, 1, 1, 1, Reason::Search, -5.0), // the failure file
            row(0, 3, 3, 1, Reason::Failure, 7.0),
            row(0, 5, 5, 1, Reason::Reference, 0.5),
            row(0, 7, 7, 1, Reason::Reference, 0.5),
        ];
        assert_eq!(rank(&rows, &[1], 2), vec![1, 3, 4, 2, 0]);
        assert_eq!(rank(&rows, &[], 2), vec![3, 4, 2, 0, 1]);
    }

    #[test]
    fn several_failing_files_rank_first_in_list_order() {
        let rows = [
            row(0, 1, 1, 1, Reason::Reference, 9.0),
            row(1, 1, 1, 1, Reason::Search, 1.0),
            row(2, 1, 1, 1, Reason::Search, 5.0),
            row(1, 2, 2, 1, Reason::Reference, 0.0),
            row(2, 2, 2, 1, Reason::Failure, 0.0),
        ];
        // Failing files 2 then 1 (a repeat counts once): all of file 2, then file 1 (by score,
        // whatever the reason), then the rest.
        assert_eq!(rank(&rows, &[2, 1, 2], 3), vec![2, 4, 1, 3, 0]);
    }

    #[test]
    fn negative_zero_ties_with_zero_and_negatives_rank_below() {
        let rows = [
            row(0, 1, 1, 1, Reason::Search, 0.0),
            row(0, 2, 2, 1, Reason::Search, -0.0),
            row(0, 3, 3, 1, Reason::Search, -1.0),
            row(0, 4, 4, 1, Reason::Search, f64::MIN_POSITIVE),
            row(0, 5, 5, 1, Reason::Search, f64::MAX),
            row(0, 6, 6, 1, Reason::Search, f64::MIN),
        ];
        assert_eq!(rank(&rows, &[], 1), vec![4, 3, 0, 1, 2, 5]);
    }

    #[test]
    fn closed_intervals_shared_endpoint_overlaps_adjacent_does_not() {
        let rows = [
            row(0, 1, 10, 1, Reason::Reference, 1.0),
            row(0, 10, 12, 1, Reason::Search, 1.0),
            row(0, 11, 12, 1, Reason::Search, 0.0),
        ];
        let s = build(&rows, &[], 100, 1);
        assert_eq!(s.selected, vec![0, 2]);
        assert_eq!(
            s.omitted,
            vec![Omission {
                index: 1,
                rank: 1,
                why: Omitted::Overlap(0)
            }]
        );
    }

    #[test]
    fn overlap_names_the_blocker_with_the_smallest_start() {
        let rows = [
            row(0, 20, 30, 1, Reason::Reference, 3.0),
            row(0, 5, 10, 1, Reason::Reference, 2.0),
            row(0, 1, 40, 1, Reason::Search, 1.0),
            row(1, 1, 40, 1, Reason::Search, 1.0), // another path: kept
        ];
        let s = build(&rows, &[], 100, 2);
        assert_eq!(s.selected, vec![0, 1, 3]);
        assert_eq!(
            s.omitted,
            vec![Omission {
                index: 2,
                rank: 2,
                why: Omitted::Overlap(1)
            }]
        );
    }

    #[test]
    fn budget_skips_and_continues_and_unselected_windows_do_not_block() {
        let rows = [
            row(0, 1, 10, 4, Reason::Reference, 9.0), // too big: skipped
            row(0, 5, 12, 2, Reason::Search, 1.0),    // overlaps 0, but 0 was not selected
            row(0, 20, 30, 2, Reason::Search, 0.5),   // would exceed 3 after the 2 above
        ];
        let s = build(&rows, &[], 3, 1);
        assert_eq!(s.selected, vec![1]);
        assert_eq!(s.used, 2);
        assert_eq!(
            s.omitted,
            vec![
                Omission {
                    index: 0,
                    rank: 0,
                    why: Omitted::Budget
                },
                Omission {
                    index: 2,
                    rank: 2,
                    why: Omitted::Budget
                },
            ]
        );
    }

    #[test]
    fn zero_budget_and_zero_cost() {
        let rows = [
            row(0, 1, 1, 0, Reason::Search, 0.0),
            row(0, 2, 2, 1, Reason::Search, 0.0),
        ];
        let s = build(&rows, &[], 0, 1);
        assert_eq!(s.selected, vec![0]);
        assert_eq!(s.omitted.len(), 1);
        assert_eq!(build(&[], &[], 0, 0), Selection::default());
    }

    #[test]
    fn huge_costs_do_not_overflow() {
        let rows = [
            row(0, 1, 1, u64::MAX, Reason::Search, 1.0),
            row(0, 2, 2, u64::MAX, Reason::Search, 0.0),
        ];
        let s = build(&rows, &[], u64::MAX, 1);
        assert_eq!(s.selected, vec![0]);
        assert_eq!(s.omitted[0].why, Omitted::Budget);
    }
}
