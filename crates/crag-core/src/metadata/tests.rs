use proptest::prelude::*;
use serde_json::json;

use super::*;

fn meta(value: Value) -> Metadata {
    match value {
        Value::Object(o) => o,
        other => panic!("not an object: {other}"),
    }
}

fn filter(value: Value) -> MetadataFilter {
    MetadataFilter::from_json(&value).unwrap()
}

fn error(value: Value) -> String {
    MetadataFilter::from_json(&value).unwrap_err().to_string()
}

#[test]
fn equality_in_and_arrays() {
    let m = meta(json!({"team": "billing", "year": 2021, "tags": ["a", "b"], "draft": false}));
    assert!(filter(json!({"team": "billing"})).matches(&m));
    assert!(!filter(json!({"team": "search"})).matches(&m));
    assert!(filter(json!({"year": 2021.0})).matches(&m));
    assert!(filter(json!({"tags": "b"})).matches(&m));
    assert!(filter(json!({"tags": {"$in": ["x", "a"]}})).matches(&m));
    assert!(!filter(json!({"tags": {"$nin": ["x", "a"]}})).matches(&m));
    assert!(filter(json!({"draft": false, "team": {"$ne": "x"}})).matches(&m));
    assert!(filter(json!({"missing": {"$ne": "x"}})).matches(&m));
}

#[test]
fn ranges_on_numbers_and_times() {
    let m = meta(json!({"year": 2021, "modified": "2026-11-27T10:00:00+01:00"}));
    assert!(filter(json!({"year": {"$gte": 2020, "$lt": 2022}})).matches(&m));
    assert!(!filter(json!({"year": {"$gt": 2021}})).matches(&m));
    assert!(filter(json!({"modified": {"$gt": "2026-11-27T08:59:59Z"}})).matches(&m));
    assert!(!filter(json!({"modified": {"$gt": "2026-11-27T09:00:00Z"}})).matches(&m));
    assert!(filter(json!({"modified": "2026-11-27T09:00:00Z"})).matches(&m));
    // A number range never matches a timestamp, nor a time range a number.
    assert!(!filter(json!({"modified": {"$gt": 0}})).matches(&m));
    assert!(!filter(json!({"year": {"$lt": "2030-01-01T00:00:00Z"}})).matches(&m));
}

#[test]
fn logic_and_exists() {
    let m = meta(json!({"a": {"b": [1, {"c": true}]}, "n": null}));
    assert!(filter(json!({"a.b": 1})).matches(&m));
    assert!(filter(json!({"a.b.c": true})).matches(&m));
    assert!(filter(json!({"a.b": {"$exists": true}})).matches(&m));
    assert!(
        filter(json!({"a": {"$exists": true}})).matches(&m),
        "an object holding a value"
    );
    let empty = meta(json!({"e": {}, "f": [], "g": [null]}));
    for field in ["e", "f", "g"] {
        assert!(
            !filter(json!({ field: {"$exists": true} })).matches(&empty),
            "{field}"
        );
    }
    assert!(!filter(json!({"n": {"$exists": true}})).matches(&m));
    assert!(filter(json!({"$or": [{"a.b": 2}, {"a.b": 1}]})).matches(&m));
    assert!(!filter(json!({"$or": []})).matches(&m));
    assert!(filter(json!({"$and": []})).matches(&m));
    assert!(filter(json!({})).matches(&m));
    assert!(!filter(json!({"$not": {"a.b": 1}})).matches(&m));
}

#[test]
fn mistakes_are_named() {
    assert!(error(json!([1])).contains("expected a JSON object"));
    assert!(error(json!({"$nor": []})).contains("unknown operator `$nor`"));
    assert!(error(json!({"a": {"$like": "x"}})).contains("unknown operator `$like`"));
    assert!(error(json!({"a": [1, 2]})).contains("$in"));
    assert!(error(json!({"a": {"$gt": "abc"}})).contains("RFC 3339"));
    assert!(error(json!({"a": {"$gt": 1, "$lt": "2026-01-01T00:00:00Z"}})).contains("bound"));
    assert!(error(json!({"a b": 1})).contains("key `a b`"));
    assert!(error(json!({"a": {}})).contains("no operator"));
    assert!(error(json!({"a": {"$exists": 1}})).contains("true or false"));
    assert!(error(json!({"a": null})).contains("not a string"));
    let wide = Value::Object((0..300).map(|i| (format!("f{i}"), json!(i))).collect());
    assert!(error(wide).contains("more than 256"));
}

#[test]
fn check_names_unknown_fields_and_kinds() {
    let f = filter(json!({"team": "billing", "year": {"$gt": 2000}}));
    let kinds = |field: &str| match field {
        "team" | "year" => Some(vec![ValueKind::Text]),
        _ => None,
    };
    let err = f.check(&kinds).unwrap_err().to_string();
    assert!(
        err.contains("`year` holds string, compared with a number"),
        "{err}"
    );
    let none = |_: &str| None;
    assert!(f
        .check(&none)
        .unwrap_err()
        .to_string()
        .contains("unknown metadata field `team`"));
    let both = |_: &str| Some(vec![ValueKind::Text, ValueKind::Number]);
    f.check(&both).unwrap();
    let objects = |_: &str| Some(vec![]);
    let err = f.check(&objects).unwrap_err().to_string();
    assert!(err.contains("holds only objects"), "{err}");
    filter(json!({"a": {"$exists": true}}))
        .check(&objects)
        .unwrap();
}

#[test]
fn metadata_is_checked() {
    check_metadata(&meta(json!({"team": "x", "a": {"b-c_1": [1]}})), 1000).unwrap();
    let err = check_metadata(&meta(json!({"source": "x"})), 1000).unwrap_err();
    assert!(err.to_string().contains("derives"));
    assert!(check_metadata(&meta(json!({"a.b": 1})), 1000).is_err());
    assert!(check_metadata(&meta(json!({"a": "x".repeat(100)})), 50).is_err());
    let deep = (0..12).fold(json!(1), |v, _| json!({ "a": v }));
    assert!(check_metadata(&meta(deep), 10_000).is_err());
}

fn value() -> impl Strategy<Value = FilterValue> {
    prop_oneof![
        "[a-c]{1,2}".prop_map(FilterValue::Text),
        (-5i32..5).prop_map(|n| FilterValue::Number(f64::from(n))),
        any::<bool>().prop_map(FilterValue::Bool),
        (0i64..4).prop_map(|d| FilterValue::Time(1_700_000_000 + d * 86_400)),
    ]
}

fn leaf() -> impl Strategy<Value = MetadataFilter> {
    let field = prop_oneof![Just("a".to_owned()), Just("b.c".to_owned())];
    prop_oneof![
        (field.clone(), value()).prop_map(|(f, v)| MetadataFilter::Eq(f, v)),
        (field.clone(), prop::collection::vec(value(), 0..3))
            .prop_map(|(f, v)| MetadataFilter::In(f, v)),
        field.clone().prop_map(MetadataFilter::Exists),
        (field, -5i32..5, 0i32..4).prop_map(|(f, l, w)| MetadataFilter::Range {
            field: f,
            lower: Bound::Included(FilterValue::Number(f64::from(l))),
            upper: Bound::Excluded(FilterValue::Number(f64::from(l + w))),
        }),
    ]
}

/// Random filters of the whole language, as the index tests use them.
pub fn any_filter() -> impl Strategy<Value = MetadataFilter> {
    leaf().prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|f| MetadataFilter::Not(Box::new(f))),
            prop::collection::vec(inner.clone(), 0..3).prop_map(MetadataFilter::And),
            prop::collection::vec(inner, 0..3).prop_map(MetadataFilter::Or),
        ]
    })
}

proptest! {
    #[test]
    fn json_form_reads_back(f in any_filter()) {
        let back = MetadataFilter::from_json(&f.to_json()).unwrap();
        prop_assert_eq!(&back, &f);
        let text = serde_json::to_string(&f).unwrap();
        let parsed: MetadataFilter = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(parsed, f);
    }
}
