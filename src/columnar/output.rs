//! The output: the decisions scattered back to table order, as Arrow record batches.

use std::sync::Arc;

use arrow_array::types::Int8Type;
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, PrimitiveArray, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer};
use arrow_schema::{DataType, Field, Schema};

use super::group_build::{Decisions, Summary};
use super::grouping::Groups;

/// `values` cut into consecutive parts of the given sizes.
pub(crate) fn split<'v, T>(
    values: &'v mut [T],
    sizes: &[usize],
) -> impl Iterator<Item = &'v mut [T]> {
    let mut rest = values;
    sizes.iter().map(move |&size| {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(size);
        rest = tail;
        head
    })
}

/// `values` (in group-sorted position) in table order.
fn scatter<T: Copy + Default + Send + Sync>(groups: &Groups, values: Vec<T>) -> Vec<T> {
    if groups.identity {
        return values;
    }
    let mut scattered = vec![T::default(); values.len()];
    for (k, &row) in groups.rows.iter().enumerate() {
        scattered[row as usize] = values[k];
    }
    scattered
}

fn nullable_u32(values: Vec<u32>) -> UInt32Array {
    let valid = NullBuffer::new(BooleanBuffer::collect_bool(values.len(), |i| {
        values[i] != u32::MAX
    }));
    let nulls = (valid.null_count() > 0).then_some(valid);
    UInt32Array::new(values.into(), nulls)
}

pub(crate) fn decision_batch(
    groups: &Groups,
    u32s: Decisions<Vec<u32>>,
    omission: Vec<u8>,
    cost: Vec<u64>,
) -> RecordBatch {
    // Table order: position `k` of the group-sorted columns is table row `rows[k]`. Each
    // column is made on its own thread.
    let ((index, rank), ((order, overlaps), (omission, cost))) = rayon::join(
        || {
            rayon::join(
                || scatter(groups, u32s.index),
                || scatter(groups, u32s.rank),
            )
        },
        || {
            rayon::join(
                || {
                    rayon::join(
                        || nullable_u32(scatter(groups, u32s.order)),
                        || nullable_u32(scatter(groups, u32s.overlaps)),
                    )
                },
                || {
                    rayon::join(
                        || omission_columns(scatter(groups, omission)),
                        || scatter(groups, cost),
                    )
                },
            )
        },
    );
    let (selected, omission) = omission;

    let omission_type = DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8));
    // Nullable, as pyarrow makes fields by default; only `order`, `omission` and `overlaps`
    // hold nulls.
    let schema = Schema::new(vec![
        Field::new("index", DataType::UInt32, true),
        Field::new("rank", DataType::UInt32, true),
        Field::new("selected", DataType::Boolean, true),
        Field::new("order", DataType::UInt32, true),
        Field::new("omission", omission_type, true),
        Field::new("overlaps", DataType::UInt32, true),
        Field::new("cost", DataType::UInt64, true),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(UInt32Array::from(index)),
        Arc::new(UInt32Array::from(rank)),
        Arc::new(selected),
        Arc::new(order),
        Arc::new(omission),
        Arc::new(overlaps),
        Arc::new(UInt64Array::from(cost)),
    ];
    RecordBatch::try_new(Arc::new(schema), columns).expect("columns match the schema")
}

/// The `selected` and `omission` columns from the omission codes (0 none, 1 overlap, 2 budget).
fn omission_columns(omission: Vec<u8>) -> (BooleanArray, DictionaryArray<Int8Type>) {
    let n = omission.len();
    let selected = BooleanArray::new(BooleanBuffer::collect_bool(n, |i| omission[i] == 0), None);
    // Key 0 "overlap" for code 1, key 1 "budget" for code 2, null for a selected row.
    let codes: Vec<i8> = omission.iter().map(|&o| (o as i8 - 1).max(0)).collect();
    let omitted = NullBuffer::new(BooleanBuffer::collect_bool(n, |i| omission[i] != 0));
    let nulls = (omitted.null_count() > 0).then_some(omitted);
    let keys = PrimitiveArray::<Int8Type>::new(codes.into(), nulls);
    let values: ArrayRef = Arc::new(StringArray::from(vec!["overlap", "budget"]));
    let omission = DictionaryArray::<Int8Type>::try_new(keys, values)
        .expect("keys 0 and 1 index the two values");
    (selected, omission)
}

pub(crate) fn summary_batch(summaries: &[Summary]) -> RecordBatch {
    let u32s = |f: fn(&Summary) -> u32| -> ArrayRef {
        Arc::new(UInt32Array::from(
            summaries.iter().map(f).collect::<Vec<_>>(),
        ))
    };
    let u64s = |f: fn(&Summary) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from(
            summaries.iter().map(f).collect::<Vec<_>>(),
        ))
    };
    let truncated: BooleanArray = summaries
        .iter()
        .map(|s| Some(s.overlap + s.budget_omitted > 0))
        .collect();
    // Nullable, as pyarrow makes fields by default, though no value is null.
    let field = |name: &str, t: DataType| Field::new(name, t, true);
    let schema = Schema::new(vec![
        field("first_row", DataType::UInt64),
        field("candidates", DataType::UInt32),
        field("selected", DataType::UInt32),
        field("omitted_overlap", DataType::UInt32),
        field("omitted_budget", DataType::UInt32),
        field("used", DataType::UInt64),
        field("budget", DataType::UInt64),
        field("truncated", DataType::Boolean),
    ]);
    let columns = vec![
        u64s(|s| s.first_row),
        u32s(|s| s.candidates),
        u32s(|s| s.selected),
        u32s(|s| s.overlap),
        u32s(|s| s.budget_omitted),
        u64s(|s| s.used),
        u64s(|s| s.budget),
        Arc::new(truncated) as ArrayRef,
    ];
    RecordBatch::try_new(Arc::new(schema), columns).expect("columns match the schema")
}
