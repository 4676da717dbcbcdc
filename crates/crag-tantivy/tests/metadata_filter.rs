//! Property test of metadata filters in the Tantivy keyword index: for random metadata and
//! random filters, the filtered chunk and document rankings are the unfiltered ones with what
//! the filter leaves out taken away (ids, scores and order kept), and the documents passing
//! are those a brute force over the metadata finds.

use std::ops::Bound;

use crag_core::{Chunk, FilterValue, MetadataFilter};
use crag_ports::testsuite::{chunk, filter_matches_brute_force, with_metadata};
use crag_ports::KeywordIndex;
use crag_tantivy::TantivyKeywordIndex;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{json, Value};

const WORDS: [&str; 6] = ["oven", "bread", "rye", "crust", "steam", "flour"];

/// A value of the small domains the filters draw from: texts, whole and fractional numbers,
/// booleans, timestamps, arrays of texts.
fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec!["a", "b", "c"]).prop_map(|s| json!(s)),
        (-3i64..4).prop_map(|n| json!(n)),
        (-3i64..4).prop_map(|n| json!(n as f64 + 0.5)),
        any::<bool>().prop_map(|b| json!(b)),
        (1u32..4).prop_map(|d| json!(format!("2026-0{d}-01T00:00:00Z"))),
        prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 0..3)
            .prop_map(|v| json!(v)),
    ]
}

fn metadata() -> impl Strategy<Value = Value> {
    (
        prop::option::of(value()),
        prop::option::of(value()),
        prop::option::of(value()),
    )
        .prop_map(|(x, y, z)| {
            let mut object = serde_json::Map::new();
            if let Some(x) = x {
                object.insert("x".into(), x);
            }
            if let Some(y) = y {
                object.insert("y".into(), y);
            }
            if let Some(z) = z {
                object.insert("n".into(), json!({ "z": z }));
            }
            Value::Object(object)
        })
}

fn scalar() -> impl Strategy<Value = FilterValue> {
    prop_oneof![
        prop::sample::select(vec!["a", "b", "c"]).prop_map(|s| FilterValue::Text(s.into())),
        (-3i32..4).prop_map(|n| FilterValue::Number(f64::from(n))),
        (-3i32..4).prop_map(|n| FilterValue::Number(f64::from(n) + 0.5)),
        any::<bool>().prop_map(FilterValue::Bool),
        (1i64..4).prop_map(|d| FilterValue::Time(1_767_225_600 + (d - 1) * 2_678_400)),
    ]
}

fn bound() -> impl Strategy<Value = Bound<FilterValue>> {
    let number = (-4i32..5).prop_map(|n| FilterValue::Number(f64::from(n) / 2.0));
    prop_oneof![
        Just(Bound::Unbounded),
        number.clone().prop_map(Bound::Included),
        number.prop_map(Bound::Excluded),
    ]
}

fn filter() -> impl Strategy<Value = MetadataFilter> {
    let field = prop::sample::select(vec!["x", "y", "n.z", "n", "w"]).prop_map(String::from);
    let leaf = prop_oneof![
        (field.clone(), scalar()).prop_map(|(f, v)| MetadataFilter::Eq(f, v)),
        (field.clone(), prop::collection::vec(scalar(), 0..3))
            .prop_map(|(f, v)| MetadataFilter::In(f, v)),
        field.clone().prop_map(MetadataFilter::Exists),
        (field, bound(), bound())
            .prop_filter("one bound at least", |(_, l, u)| {
                !matches!((l, u), (Bound::Unbounded, Bound::Unbounded))
            })
            .prop_map(|(field, lower, upper)| MetadataFilter::Range {
                field,
                lower,
                upper,
            }),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|f| MetadataFilter::Not(Box::new(f))),
            prop::collection::vec(inner.clone(), 0..3).prop_map(MetadataFilter::And),
            prop::collection::vec(inner, 0..3).prop_map(MetadataFilter::Or),
        ]
    })
}

fn corpus(metadata: &[Value]) -> Vec<Chunk> {
    metadata
        .iter()
        .enumerate()
        .flat_map(|(i, m)| {
            let document = format!("doc{i}.md");
            let text = move |j: usize| {
                format!(
                    "{} {} {}",
                    WORDS[(i + j) % 6],
                    WORDS[(i * 2 + j) % 6],
                    WORDS[(i + 3) % 6]
                )
            };
            (0..=i % 2).map(move |j| with_metadata(chunk(&document, j, "T", &text(j)), m))
        })
        .collect()
}

#[test]
fn filtered_rankings_are_the_brute_force_ones() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let config = Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    };
    let cases = (
        prop::collection::vec(metadata(), 4..12),
        prop::collection::vec(filter(), 1..6),
    );
    TestRunner::new(config)
        .run(&cases, |(metadata, filters)| {
            let dir = tempfile::tempdir().expect("temp dir");
            let index = TantivyKeywordIndex::open(dir.path()).expect("open");
            let chunks = corpus(&metadata);
            runtime
                .block_on(index.upsert(&chunks))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            for filter in &filters {
                // The suite's checks panic with the filter and query on a mismatch.
                let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runtime.block_on(filter_matches_brute_force(
                        &index,
                        &chunks,
                        &["oven rye", "bread crust steam", "flour"],
                        filter,
                    ));
                }));
                prop_assert!(checked.is_ok(), "{filter:?} over {metadata:?}");
            }
            Ok(())
        })
        .expect("every filter matches its brute force");
}
