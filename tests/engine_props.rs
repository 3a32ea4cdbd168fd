//! Property test of the engine against a brute-force oracle (proptest).
//!
//! The oracle ranks with a comparison sort over `(group, -score, index)` and selects by scanning
//! every selected window: obviously right, quadratic. Inputs crowd a few paths and a few dozen
//! lines so that ranges collide, mix every reason, signed zeros and ties in score, give one or
//! several (repeated) failing files, and budgets from zero to more than everything. Windows
//! arrive in any order, so the B-tree index meets descending, nested and interleaved starts.
//!
//! Cases: `PROPTEST_CASES` (`scripts/test.sh` runs 100,000 with `cargo test`); by default
//! 5,000 in a debug build (debug assertions on) and 100,000 in a release build.

use bugcontext::engine::{
    NO_GROUP, Omission, Omitted, Reason, Row, Scratch, Selection, build, build_groups, build_into,
};
use proptest::prelude::*;

const PATHS: u32 = 3;

fn ranked(rows: &[Row], failure: &[u32]) -> Vec<u32> {
    let mut failing: Vec<u32> = Vec::new();
    for &f in failure {
        if !failing.contains(&f) {
            failing.push(f);
        }
    }
    let group = |r: &Row| match failing.iter().position(|&f| f == r.path) {
        Some(place) => place as u32,
        // The contract's reason order, restated here rather than read from the engine.
        None => {
            failing.len() as u32
                + match r.reason {
                    Reason::Reference => 0,
                    Reason::Failure => 1,
                    Reason::Search => 2,
                }
        }
    };
    let mut order: Vec<u32> = (0..rows.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&rows[a as usize], &rows[b as usize]);
        group(ra)
            .cmp(&group(rb))
            .then(rb.score.partial_cmp(&ra.score).unwrap())
            .then(a.cmp(&b))
    });
    order
}

/// The selected (or tentatively placed) window with the smallest start that `r` intersects.
fn hit(rows: &[Row], windows: &[u32], r: &Row) -> Option<u32> {
    windows
        .iter()
        .filter(|&&j| {
            let w = &rows[j as usize];
            w.path == r.path && w.start <= r.end && r.start <= w.end
        })
        .min_by_key(|&&j| rows[j as usize].start)
        .copied()
}

/// The selection rule restated: candidates in no group are selected in rank order unless they
/// hit a selected window or do not fit. Groups by the lesson's words: a group is decided whole at its best-ranked member; members
/// that hit a selected window or an earlier member cost nothing and are omitted as overlaps;
/// if the rest fit they are all selected, else every member is omitted naming the member at
/// which the running cost went past what was left.
fn oracle(rows: &[Row], failure: &[u32], budget: u64) -> Selection {
    let order = ranked(rows, failure);
    let mut out = Selection::default();
    let mut decided: Vec<u32> = Vec::new();
    for (rank, &i) in order.iter().enumerate() {
        let r = &rows[i as usize];
        if r.group == NO_GROUP {
            let why = match hit(rows, &out.selected, r) {
                Some(j) => Omitted::Overlap(j),
                None if u128::from(out.used) + u128::from(r.cost) > u128::from(budget) => {
                    Omitted::Budget
                }
                None => {
                    out.used += r.cost;
                    out.selected.push(i);
                    out.ranks.push(rank as u32);
                    continue;
                }
            };
            out.omitted.push(Omission {
                index: i,
                rank: rank as u32,
                why,
            });
            continue;
        }
        if decided.contains(&r.group) {
            continue;
        }
        decided.push(r.group);
        let members: Vec<(u32, u32)> = order
            .iter()
            .enumerate()
            .filter(|&(_, &j)| rows[j as usize].group == r.group)
            .map(|(k, &j)| (k as u32, j))
            .collect();
        let mut windows = out.selected.clone();
        let (mut placed, mut blocked) = (Vec::new(), Vec::new());
        let mut cost = 0u128;
        let mut culprit = None;
        for &(k, j) in &members {
            let m = &rows[j as usize];
            if let Some(b) = hit(rows, &windows, m) {
                blocked.push(Omission {
                    index: j,
                    rank: k,
                    why: Omitted::Overlap(b),
                });
                continue;
            }
            windows.push(j);
            placed.push((k, j));
            if culprit.is_none() {
                if u128::from(out.used) + cost + u128::from(m.cost) > u128::from(budget) {
                    culprit = Some(j);
                } else {
                    cost += u128::from(m.cost);
                }
            }
        }
        match culprit {
            None => {
                out.used += cost as u64;
                for (k, j) in placed {
                    out.selected.push(j);
                    out.ranks.push(k);
                }
                out.omitted.extend(blocked);
            }
            Some(c) => out.omitted.extend(members.iter().map(|&(k, j)| Omission {
                index: j,
                rank: k,
                why: Omitted::Group(c),
            })),
        }
    }
    out.omitted.sort_by_key(|o| o.rank);
    out
}

fn row() -> impl Strategy<Value = Row> {
    (
        0..PATHS,
        1u32..40,
        0u32..10,
        prop_oneof![4 => 0u64..12, 1 => Just(u64::MAX / 4)],
        prop_oneof![
            Just(Reason::Failure),
            Just(Reason::Reference),
            Just(Reason::Search)
        ],
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            Just(2.5),
            Just(-3.0),
            Just(f64::MAX),
            Just(f64::MIN_POSITIVE),
            -100.0f64..100.0,
        ],
    )
        .prop_map(|(path, start, span, cost, reason, score)| Row {
            group: bugcontext::engine::NO_GROUP,
            stale: false,
            path,
            start,
            end: start + span,
            cost,
            reason,
            score,
        })
}

fn cases() -> u32 {
    let default = if cfg!(debug_assertions) {
        5_000
    } else {
        100_000
    };
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn build_equals_the_brute_force_oracle(
        rows in prop::collection::vec(row(), 0..40),
        failure in prop::collection::vec(0..PATHS, 0..4),
        budget in prop_oneof![0u64..80, Just(u64::MAX)],
    ) {
        prop_assert_eq!(build(&rows, &failure, budget, PATHS as usize), oracle(&rows, &failure, budget));
    }

    #[test]
    fn build_groups_equals_the_group_oracle(
        rows in prop_oneof![
            prop::collection::vec(
                (row(), prop_oneof![2 => Just(NO_GROUP), 3 => 0u32..3, 2 => 0u32..12]),
                0..40,
            ),
            // Groups past the small-group scan (more than 16 members).
            prop::collection::vec(
                (row(), prop_oneof![1 => Just(NO_GROUP), 5 => Just(0u32), 1 => 1u32..3]),
                17..60,
            ),
        ],
        failure in prop::collection::vec(0..PATHS, 0..4),
        budget in prop_oneof![0u64..80, Just(u64::MAX)],
    ) {
        // Dense group ids in order of first appearance, as the readers make them.
        let mut ids: Vec<u32> = Vec::new();
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|(mut r, g)| {
                if g != NO_GROUP {
                    r.group = match ids.iter().position(|&x| x == g) {
                        Some(p) => p as u32,
                        None => {
                            ids.push(g);
                            ids.len() as u32 - 1
                        }
                    };
                }
                r
            })
            .collect();
        prop_assert_eq!(
            build_groups(&rows, &failure, budget, PATHS as usize, ids.len()),
            oracle(&rows, &failure, budget)
        );
    }

    #[test]
    fn many_windows_on_one_path_equal_the_oracle(
        // Short windows over a few hundred lines of one path: past the sorted vector's size,
        // so the window set changes form mid-build.
        rows in prop::collection::vec(
            (1u32..300, 0u32..3, 0u64..4, -10.0f64..10.0).prop_map(|(start, span, cost, score)| Row {
                path: 0,
                start,
                end: start + span,
                cost,
                reason: Reason::Search,
                score,
                group: NO_GROUP,
                stale: false,
            }),
            0..200,
        ),
        budget in prop_oneof![0u64..200, Just(u64::MAX)],
    ) {
        prop_assert_eq!(build(&rows, &[], budget, 1), oracle(&rows, &[], budget));
    }

    #[test]
    fn build_into_reusing_its_buffers_equals_build(
        inputs in prop::collection::vec(
            (prop::collection::vec(row(), 0..40), prop::collection::vec(0..PATHS, 0..4), 0u64..80),
            1..6,
        ),
    ) {
        // One scratch and one selection across several builds, as a worker reuses them.
        let mut scratch = Scratch::default();
        let mut out = Selection::default();
        for (rows, failure, budget) in &inputs {
            build_into(&mut scratch, rows, failure, *budget, PATHS as usize, &mut out);
            prop_assert_eq!(&out, &build(rows, failure, *budget, PATHS as usize));
        }
    }
}
