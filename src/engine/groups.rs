//! Packing with groups: a group is selected whole or not at all; stale rows are omitted.

use super::{NO_GROUP, Omission, Omitted, Row, Selection, Windows, reset_windows};

/// [`pack`](super::pack) where a group is selected whole or not at all.
///
/// A group is decided when its best-ranked member comes up: its members, in rank order, are
/// tried against the selected windows and the members tried before them (a member that hits
/// one is omitted as an overlap and costs nothing); if the others' costs together fit what is
/// left of the budget they are all selected, in rank order; else every member is omitted as
/// [`Omitted::Group`], naming the member at which the running cost went past the budget.
/// Candidates in no group are packed as by [`pack`](super::pack). A stale row (in a group or
/// not) is omitted as [`Omitted::Stale`] at its rank, costs nothing and blocks nothing; a group
/// is decided over its other members. Omissions come in rank order.
pub fn pack_groups(
    rows: &[Row],
    order: &[u32],
    budget: u64,
    n_paths: usize,
    n_groups: usize,
) -> Selection {
    let (first, members) = members_by_group(rows, order, n_groups);
    let mut windows = Vec::new();
    reset_windows(&mut windows, n_paths);
    let mut out = Selection::default();
    let mut done = vec![false; n_groups];
    let mut trial = Trial::default();
    for (rank, &index) in (0u32..).zip(order) {
        let row = &rows[index as usize];
        if row.group == NO_GROUP {
            pack_ungrouped(row, index, rank, &mut windows, budget, &mut out);
            continue;
        }
        let group = row.group as usize;
        if done[group] {
            continue;
        }
        done[group] = true;
        let group_members = &members[first[group] as usize..first[group + 1] as usize];
        trial.decide(rows, group_members, &mut windows, budget, &mut out);
    }
    out.omitted.sort_unstable_by_key(|o| o.rank);
    out
}

/// The members of each group in rank order, laid out flat as `(rank, index)`: group `g`'s are
/// `members[first[g]..first[g + 1]]`. Returns `(first, members)`.
fn members_by_group(rows: &[Row], order: &[u32], n_groups: usize) -> (Vec<u32>, Vec<(u32, u32)>) {
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
    (first, members)
}

/// A candidate in no group, packed as by [`pack`](super::pack) (a stale one is omitted).
fn pack_ungrouped(
    row: &Row,
    index: u32,
    rank: u32,
    windows: &mut [Windows],
    budget: u64,
    out: &mut Selection,
) {
    if row.stale {
        out.omitted.push(Omission {
            index,
            rank,
            why: Omitted::Stale,
        });
        return;
    }
    let set = &mut windows[row.path as usize];
    let why = match set.first_from(row.start) {
        Some((_, start, blocker)) if start <= row.end => Omitted::Overlap(blocker),
        _ if row.cost > budget - out.used => Omitted::Budget,
        _ => {
            set.insert(row.end, row.start, index);
            out.used += row.cost;
            out.selected.push(index);
            out.ranks.push(rank);
            return;
        }
    };
    out.omitted.push(Omission { index, rank, why });
}

/// The group being decided: its members, as `(rank, index)`, that hit nothing (`placed`), and
/// the omissions of those that hit a window or are stale (`blocked`). Reused from one group to
/// the next.
#[derive(Default)]
struct Trial {
    placed: Vec<(u32, u32)>,
    blocked: Vec<Omission>,
}

impl Trial {
    /// Decide one group (its members in rank order): select them all or omit them all.
    fn decide(
        &mut self,
        rows: &[Row],
        group_members: &[(u32, u32)],
        windows: &mut [Windows],
        budget: u64,
        out: &mut Selection,
    ) {
        // A small group checks its members against each other by a scan and touches the
        // selected windows only once it fits; a large one is placed in them as it goes and
        // taken out again if it does not fit.
        let small = group_members.len() <= SMALL_GROUP;
        self.placed.clear();
        self.blocked.clear();
        let (cost, culprit) = self.try_members(rows, group_members, windows, budget, out, small);
        match culprit {
            None => {
                out.used += cost;
                for &(r, i) in &self.placed {
                    if small {
                        let m = &rows[i as usize];
                        windows[m.path as usize].insert(m.end, m.start, i);
                    }
                    out.selected.push(i);
                    out.ranks.push(r);
                }
                out.omitted.extend_from_slice(&self.blocked);
            }
            Some(culprit) => {
                if !small {
                    for &(_, i) in &self.placed {
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

    /// Try the members in rank order against the selected windows and each other. Returns the
    /// cost of those placed and, when one went past what is left of the budget, that member
    /// (the trial stops there).
    fn try_members(
        &mut self,
        rows: &[Row],
        group_members: &[(u32, u32)],
        windows: &mut [Windows],
        budget: u64,
        out: &Selection,
        small: bool,
    ) -> (u64, Option<u32>) {
        let mut cost = 0u64;
        for &(r, i) in group_members {
            let m = &rows[i as usize];
            if m.stale {
                self.blocked.push(Omission {
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
                for &(_, j) in &self.placed {
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
                self.blocked.push(Omission {
                    index: i,
                    rank: r,
                    why: Omitted::Overlap(blocker),
                });
                continue;
            }
            if !small {
                set.insert(m.end, m.start, i);
            }
            self.placed.push((r, i));
            // `cost <= budget - used` until a member goes past it; then every member is
            // omitted, whatever the ones after it would hit.
            if m.cost > budget - out.used - cost {
                return (cost, Some(i));
            }
            cost += m.cost;
        }
        (cost, None)
    }
}

/// Groups of at most this many members are checked against themselves by a scan.
pub(super) const SMALL_GROUP: usize = 16;
