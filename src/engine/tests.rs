//! The engine's unit tests (the brute-force oracle is `tests/engine_props.rs`).

use super::groups::SMALL_GROUP;
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
