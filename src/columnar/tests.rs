//! The columnar builds' unit tests.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, StringArray, StringViewArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{Field, Schema};

use super::readers::{BLOCK_OFFSETS, Bad, Strs, offsets_all_valid};
use super::*;
use arrow_array::types::Int32Type as Key32;
use arrow_array::{Float64Array, Int64Array, ListArray};

fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(columns).unwrap()
}

fn strs(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

fn base(task: &[&str], start: &[Option<i64>]) -> RecordBatch {
    let n = task.len();
    batch(vec![
        (
            "task",
            Arc::new(StringArray::from(task.to_vec())) as ArrayRef,
        ),
        ("path", strs(&vec![Some("a.py"); n])),
        ("start", Arc::new(Int64Array::from(start.to_vec()))),
        (
            "end",
            Arc::new(Int64Array::from_iter(
                start.iter().map(|s| s.map(|v| v + 9)),
            )),
        ),
        ("content", strs(&vec![Some("héllo"); n])),
        ("reason", strs(&vec![Some("search"); n])),
        ("score", Arc::new(Float64Array::from(vec![1.0; n]))),
    ])
}

fn spec(group_by: Option<&str>, budget: u64) -> Spec {
    Spec {
        group_by: group_by.map(str::to_owned),
        budget: Budget::Fixed(budget),
        failure_files: None,
        unit: Unit::Chars,
        max_candidates: 100,
        max_total_chars: 1000,
        threads: Some(2),
    }
}

fn column_u32(out: &RecordBatch, name: &str) -> Vec<Option<u32>> {
    out.column_by_name(name)
        .unwrap()
        .as_primitive::<UInt32Type>()
        .iter()
        .collect()
}

#[test]
fn groups_in_order_of_first_appearance_across_chunks() {
    let one = base(&["b", "a", "b"], &[Some(1), Some(1), Some(5)]);
    let two = base(&["a", "c"], &[Some(20), Some(1)]);
    let out = build_table(&[one, two], &spec(Some("task"), 100)).unwrap();
    // Rows of b: 0, 2 (overlap: 5..10 hits 1..10); a: 1, 3; c: 4.
    assert_eq!(
        column_u32(&out.decisions, "index"),
        [0, 0, 1, 1, 0].map(Some)
    );
    assert_eq!(
        column_u32(&out.decisions, "overlaps"),
        vec![None, None, Some(0), None, None]
    );
    assert_eq!(
        out.groups
            .column_by_name("first_row")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec(),
        vec![0, 1, 4]
    );
    // Costs are code points: "héllo" is 5 of them in 6 bytes.
    let cost = out.decisions.column_by_name("cost").unwrap();
    assert!(
        cost.as_primitive::<UInt64Type>()
            .values()
            .iter()
            .all(|&c| c == 5)
    );
}

#[test]
fn first_error_in_table_order_names_row_and_group_row() {
    let one = base(&["b", "a", "b"], &[Some(1), Some(1), None]);
    let two = base(&["a"], &[Some(0)]);
    let err = build_table(&[one, two], &spec(Some("task"), 100)).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.row, err.local),
        ("start", Some(2), Some(1))
    );
    assert_eq!(err.problem, Problem::Text("is null".into()));
}

#[test]
fn budget_and_dictionary_and_list_columns() {
    let n = 3;
    let dict: DictionaryArray<Key32> = vec!["reference", "search", "reference"]
        .into_iter()
        .collect();
    let failing = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1)]),
        Some(vec![Some(1)]),
        Some(vec![Some(1)]),
    ]);
    // A list of integers is not a list of strings.
    let b = batch(vec![
        ("path", strs(&[Some("a.py"), Some("b.py"), Some("./b.py")])),
        (
            "start",
            Arc::new(Int64Array::from(vec![1, 1, 3])) as ArrayRef,
        ),
        ("end", Arc::new(Int64Array::from(vec![2, 4, 3]))),
        ("content", strs(&vec![Some("xx"); n])),
        ("reason", Arc::new(dict)),
        ("score", Arc::new(Int64Array::from(vec![1, 2, 3]))),
        ("limit", Arc::new(Int64Array::from(vec![4, 4, 4]))),
        ("failing", Arc::new(failing)),
    ]);
    let mut s = spec(None, 0);
    s.budget = Budget::Column("limit".into());
    let out = build_table(std::slice::from_ref(&b), &s).unwrap();
    // Rank: references by score (row 2, then row 0), then the search row 1, which overlaps 2.
    assert_eq!(column_u32(&out.decisions, "rank"), [1, 2, 0].map(Some));
    assert_eq!(
        column_u32(&out.decisions, "overlaps"),
        vec![None, Some(2), None]
    );
    s.failure_files = Some("failing".into());
    let err = build_table(&[b], &s).unwrap_err();
    assert_eq!(err.field, "failing");
    assert_eq!(err.row, None);
}

/// `base` with column `name` replaced.
fn with(b: &RecordBatch, name: &str, column: ArrayRef) -> RecordBatch {
    let i = b.schema().index_of(name).unwrap();
    let mut columns = b.columns().to_vec();
    columns[i] = column;
    let fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let t = if k == i {
                columns[i].data_type().clone()
            } else {
                f.data_type().clone()
            };
            Field::new(f.name(), t, true)
        })
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

/// A utf8 column made unchecked, as the C data interface makes it.
fn unchecked(offsets: Vec<i32>, values: &[u8], nulls: Option<Vec<bool>>) -> ArrayRef {
    // SAFETY (of the test): offsets that may be invalid, on purpose.
    let offsets = unsafe { arrow_buffer::OffsetBuffer::new_unchecked(offsets.into()) };
    let nulls = nulls.map(NullBuffer::from);
    // SAFETY (of the test): the array is invalid on purpose; the build must check every
    // cell before reading it.
    Arc::new(unsafe { StringArray::new_unchecked(offsets, values.to_vec().into(), nulls) })
}

fn arrow_error(b: RecordBatch) -> (String, Option<usize>, Option<usize>, Problem) {
    let err = build_table(&[b], &spec(Some("task"), 100)).unwrap_err();
    (err.field, err.row, err.local, err.problem)
}

#[test]
fn invalid_utf8_is_refused_naming_the_row() {
    let b = base(&["a", "b", "a"], &[Some(1), Some(1), Some(20)]);
    let content = unchecked(vec![0, 1, 3, 4], b"x\xc3(z", None);
    let (field, row, local, problem) = arrow_error(with(&b, "content", content));
    assert_eq!((field.as_str(), row, local), ("content", Some(1), Some(0)));
    assert_eq!(problem, Problem::Text("is not valid UTF-8".into()));
    // A key: no group to name.
    let task = unchecked(vec![0, 1, 2, 3], b"a\xffa", None);
    let (field, row, local, problem) = arrow_error(with(&b, "task", task));
    assert_eq!((field.as_str(), row, local), ("task", Some(1), None));
    assert_eq!(problem, Problem::Text("is not valid UTF-8".into()));
}

#[test]
fn offsets_outside_the_data_and_keys_out_of_range_are_refused() {
    let b = base(&["a", "b", "a"], &[Some(1), Some(1), Some(20)]);
    // Row 1 runs backwards (4..2); row 0 and 2 are fine.
    let path = unchecked(vec![0, 4, 2, 6], b"a.pyb.", None);
    let (field, row, _, problem) = arrow_error(with(&b, "path", path));
    assert_eq!((field.as_str(), row), ("path", Some(1)));
    let Problem::Text(text) = problem else {
        panic!()
    };
    assert!(text.starts_with("is not valid Arrow data"), "{text}");
    let keys = arrow_array::Int32Array::from(vec![0, 2, 1]);
    let values: ArrayRef = Arc::new(StringArray::from(vec!["search", "failure"]));
    // SAFETY (of the test): key 2 is out of range on purpose.
    let reason = unsafe { DictionaryArray::<Key32>::new_unchecked(keys, values) };
    let (field, row, _, problem) = arrow_error(with(&b, "reason", Arc::new(reason)));
    assert_eq!((field.as_str(), row), ("reason", Some(1)));
    assert_eq!(
        problem,
        Problem::Text("has dictionary index 2, out of range for 2 dictionary values".into())
    );
}

#[test]
fn bytes_under_a_null_and_views_outside_their_buffer() {
    let b = base(&["a", "b", "a"], &[Some(1), Some(1), Some(20)]);
    // Invalid bytes under a null cell are never read: the null is what is reported.
    let content = unchecked(vec![0, 1, 3, 4], b"x\xc3(z", Some(vec![true, false, true]));
    let (field, row, _, problem) = arrow_error(with(&b, "content", content));
    assert_eq!(
        (field.as_str(), row, problem),
        ("content", Some(1), Problem::Text("is null".into()))
    );
    // A view of 20 bytes at offset 10 of a 20-byte buffer.
    let mut inline = [0u8; 16];
    inline[0] = 6;
    inline[4..10].copy_from_slice(b"search");
    let good = u128::from_le_bytes(inline);
    let bad = u128::from(20u32) | (10u128 << 96);
    let views = arrow_buffer::ScalarBuffer::from(vec![good, bad, good]);
    let data = arrow_buffer::Buffer::from(vec![b'x'; 20]);
    // SAFETY (of the test): view 1 points outside its buffer on purpose.
    let reason = unsafe { StringViewArray::new_unchecked(views, vec![data], None) };
    let (field, row, _, problem) = arrow_error(with(&b, "reason", Arc::new(reason)));
    assert_eq!((field.as_str(), row), ("reason", Some(1)));
    assert_ne!(problem, Problem::Text("is null".into()));
}

#[test]
fn blocks_of_offsets_check_every_boundary() {
    // 10,000 cells of one two-byte character each, over several blocks.
    let values = "é".repeat(10_000).into_bytes();
    let mut offsets: Vec<i32> = (0..=10_000).map(|i| 2 * i).collect();
    assert!(offsets_all_valid(&offsets, &values));
    // An offset inside a character, at a block's edge and inside a block.
    for at in [BLOCK_OFFSETS, BLOCK_OFFSETS + 7] {
        offsets[at] += 1;
        assert!(!offsets_all_valid(&offsets, &values), "{at}");
        let array = unchecked(offsets.clone(), &values, None);
        let strs = Strs::new(array.as_ref()).unwrap();
        assert_eq!(strs.first_invalid(), Some((at - 1, Bad::Utf8)));
        offsets[at] -= 1;
    }
}

#[test]
fn counts_code_points() {
    assert_eq!(count_chars(""), 0);
    assert_eq!(count_chars("aé日🚀"), 4);
}

/// `n` rows of one group, content `content(i)`, spread over chunks of `chunk` rows.
fn rows_in_chunks(n: usize, chunk: usize, content: impl Fn(usize) -> String) -> Vec<RecordBatch> {
    let texts: Vec<String> = (0..n).map(content).collect();
    (0..n)
        .step_by(chunk)
        .map(|lo| {
            let hi = (lo + chunk).min(n);
            let m = hi - lo;
            let starts: Vec<Option<i64>> = (lo..hi).map(|i| Some(1 + 3 * i as i64)).collect();
            let b = base(&vec!["t"; m], &starts);
            let cells: Vec<Option<&str>> = texts[lo..hi].iter().map(|t| Some(t.as_str())).collect();
            let paths: Vec<Option<String>> =
                (lo..hi).map(|i| Some(format!("p{}.py", i % 3))).collect();
            let b = with(&b, "content", strs(&cells));
            with(&b, "path", Arc::new(StringArray::from(paths)))
        })
        .collect()
}

#[test]
fn column_by_column_read_counts_characters_of_every_cell() {
    // Multi-byte characters at the edges of the 16-row count blocks and inside them, in a
    // group that spans three chunks.
    let wide = [0, 15, 16, 31, 33, 47, 48, 70, 99];
    let content = |i: usize| {
        if wide.contains(&i) {
            format!("é{i}日🚀")
        } else {
            format!("line {i}\n")
        }
    };
    let batches = rows_in_chunks(100, 37, content);
    let mut s = spec(Some("task"), 10_000);
    s.max_total_chars = u64::MAX;
    let out = build_table(&batches, &s).unwrap();
    let cost = out.decisions.column_by_name("cost").unwrap();
    let want: Vec<u64> = (0..100)
        .map(|i| content(i).chars().count() as u64)
        .collect();
    assert_eq!(cost.as_primitive::<UInt64Type>().values().to_vec(), want);
    // The same table with the content as string views (read cell by cell): same decisions.
    let views: Vec<RecordBatch> = batches
        .iter()
        .map(|b| {
            let content = b.column_by_name("content").unwrap().as_string::<i32>();
            let views: StringViewArray = content.iter().collect();
            with(b, "content", Arc::new(views))
        })
        .collect();
    assert_eq!(build_table(&views, &s).unwrap().decisions, out.decisions);
}

#[test]
fn a_character_split_by_an_offset_is_refused_though_the_buffer_is_utf8() {
    let b = base(&["a", "a", "a"], &[Some(1), Some(20), Some(40)]);
    // "aé" + "b": the buffer is valid UTF-8, but offset 2 falls inside "é".
    let content = unchecked(vec![0, 2, 4, 4], "aéb".as_bytes(), None);
    let (field, row, local, problem) = arrow_error(with(&b, "content", content));
    assert_eq!((field.as_str(), row, local), ("content", Some(0), Some(0)));
    assert_eq!(problem, Problem::Text("is not valid UTF-8".into()));
    // Offsets that go back and forth, each cell's range still inside the buffer.
    let content = unchecked(vec![0, 3, 1, 4], "aéb".as_bytes(), None);
    let (field, row, _, problem) = arrow_error(with(&b, "content", content));
    assert_eq!((field.as_str(), row), ("content", Some(1)));
    assert_eq!(problem, Problem::Text(Bad::Bounds.problem()));
}

#[test]
fn a_dictionary_value_that_is_not_utf8_is_refused_only_where_referenced() {
    let b = base(&["a", "a", "a"], &[Some(1), Some(20), Some(40)]);
    let values = unchecked(vec![0, 6, 7], b"search\xff", None);
    let keys = |k: Vec<i32>| arrow_array::Int32Array::from(k);
    let unused = DictionaryArray::<Key32>::try_new(keys(vec![0, 0, 0]), values.clone()).unwrap();
    let out = build_table(
        &[with(&b, "reason", Arc::new(unused))],
        &spec(Some("task"), 100),
    );
    assert!(out.is_ok());
    let used = DictionaryArray::<Key32>::try_new(keys(vec![0, 1, 0]), values).unwrap();
    let (field, row, _, problem) = arrow_error(with(&b, "reason", Arc::new(used)));
    assert_eq!((field.as_str(), row), ("reason", Some(1)));
    assert_eq!(problem, Problem::Text("is not valid UTF-8".into()));
}

#[test]
fn bytes_compared_inline_tell_every_difference() {
    for n in 0..80 {
        let a: Vec<u8> = (0..n as u8).collect();
        assert!(super::readers::same(&a, &a.clone()));
        for p in 0..n {
            let mut b = a.clone();
            b[p] ^= 0x80;
            assert!(!super::readers::same(&a, &b), "{n} {p}");
        }
        assert!(!super::readers::same(&a, &[a.as_slice(), b"x"].concat()));
    }
}

#[test]
fn string_keys_differing_in_one_middle_byte_are_different_groups() {
    for key in ["aaaaaXaaaaaa", "aaaaaaaaaXaaaaaaaaaaaa"] {
        let other = key.replace('X', "Y");
        let b = base(&[key, &other, key], &[Some(1), Some(1), Some(5)]);
        let out = build_table(&[b], &spec(Some("task"), 100)).unwrap();
        assert_eq!(out.groups.num_rows(), 2);
        assert_eq!(column_u32(&out.decisions, "index"), [0, 0, 1].map(Some));
    }
}

#[test]
fn the_first_error_of_a_group_read_column_by_column_is_the_row_by_row_one() {
    let batches = rows_in_chunks(60, 25, |i| format!("x{i:02}"));
    let mut s = spec(Some("task"), 10_000);
    // Over the total at row 40 (3 characters a row).
    s.max_total_chars = 40 * 3 + 2;
    let err = build_table(&batches, &s).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.row, err.local),
        ("content", Some(40), Some(40))
    );
    assert!(matches!(err.kind, ErrorKind::Limit(_)));
    // A refused path at row 30, and a null start at row 55 after it: the path is reported.
    let mut batches = batches;
    let paths: Vec<Option<&str>> = (25..50)
        .map(|i| Some(if i == 30 { "../x" } else { "a" }))
        .collect();
    batches[1] = with(&batches[1], "path", strs(&paths));
    let starts: Vec<Option<i64>> = (50..60).map(|i| (i != 55).then_some(1 + 3 * i)).collect();
    batches[2] = with(&batches[2], "start", Arc::new(Int64Array::from(starts)));
    let err = build_table(&batches, &s).unwrap_err();
    assert_eq!(
        (err.field.as_str(), err.row, err.local),
        ("path", Some(30), Some(30))
    );
    assert_eq!(
        err.problem,
        Problem::Text("must not contain a '..' segment".into())
    );
}
