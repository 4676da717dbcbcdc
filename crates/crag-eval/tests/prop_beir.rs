//! Property tests of the BEIR readers of crag eval: the qrels TSV (`read_qrels`) and
//! `queries.jsonl` (`Collection::read`): any file is read or refused with a message, never a
//! panic; 10,000 cases each.

use crag_eval::collection::read_qrels;
use proptest::prelude::*;

fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_-]{0,8}",
        any::<i64>().prop_map(|n| n.to_string()),
        Just("99999999999999999999999".to_owned()),
        Just("1.5".to_owned()),
        Just(String::new()),
        ".{0,10}",
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ("[a-z0-9]{1,6}", "[a-z0-9]{1,6}", -3i64..4)
            .prop_map(|(q, d, g)| format!("{q}\t{d}\t{g}")),
        2 => prop::collection::vec(field(), 0..5).prop_map(|f| f.join("\t")),
        1 => Just("query-id\tcorpus-id\tscore".to_owned()),
        1 => ".{0,20}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_qrels_file_is_read_or_refused(lines in prop::collection::vec(line(), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("test.tsv");
        std::fs::write(&path, lines.join("\n")).unwrap();
        match read_qrels(&path) {
            Ok(qrels) => {
                prop_assert!(!qrels.is_empty());
                let judged: usize = qrels.values().map(|j| j.len()).sum();
                prop_assert!(judged <= lines.len());
            }
            Err(e) => prop_assert!(crag_config::error_chain(&e).contains("test.tsv"), "{e:#}"),
        }
    }

    /// `queries.jsonl` beside fixed judgements for q0..q4: read (judged, valid queries only)
    /// or refused with a message naming the file or the query.
    #[test]
    fn any_queries_file_is_read_or_refused(lines in prop::collection::vec(query_line(), 0..8)) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("qrels")).unwrap();
        let qrels: Vec<String> = (0..5).map(|i| format!("q{i}\td{i}\t1")).collect();
        std::fs::write(dir.path().join("qrels/test.tsv"), qrels.join("\n")).unwrap();
        std::fs::write(dir.path().join("queries.jsonl"), lines.join("\n")).unwrap();
        let spec = crag_eval::CollectionSpec::new(dir.path());
        match crag_eval::Collection::read(&spec, "test") {
            Ok(collection) => {
                prop_assert!(!collection.queries.is_empty());
                for (id, query) in &collection.queries {
                    prop_assert!(collection.qrels.contains_key(id), "unjudged query {id}");
                    prop_assert!(!query.as_str().trim().is_empty());
                }
            }
            Err(e) => {
                let message = crag_config::error_chain(&e);
                prop_assert!(message.contains("queries.jsonl") || message.contains("query"), "{message}");
            }
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{json, Value};
    prop_oneof![
        "q[0-5]".prop_map(Value::String),
        ".{0,12}".prop_map(Value::String),
        (0i64..6).prop_map(Value::from),
        Just(Value::Null),
        Just(json!({"x": 1})),
        Just(json!(["q1"])),
    ]
}

fn query_line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (json_value(), json_value())
            .prop_map(|(id, text)| serde_json::json!({"_id": id, "text": text}).to_string()),
        1 => json_value().prop_map(|id| serde_json::json!({"_id": id}).to_string()),
        1 => ".{0,20}",
        1 => Just(String::new()),
    ]
}
