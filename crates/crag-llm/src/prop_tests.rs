//! Property tests of the parsers of what outside services answer: chat completions, the HTTP
//! evaluation service's judgement, rerank services' scores and `Retry-After` headers. Whatever
//! arrives: no panic, and what is accepted is within its documented range.

use proptest::prelude::*;
use reqwest::header::HeaderValue;
use serde_json::{json, Value};

use crate::chat::parse_reply;
use crate::evaluator::parse_judgement;
use crate::rerank::parse_scores;
use crate::retry::parse_retry_after;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// JSON values of every shape, a few levels deep.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(|x| json!(x)),
        any::<i64>().prop_map(|x| json!(x)),
        Just(json!(1e308)),
        Just(json!(-0.0)),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::hash_map("[a-z_]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Bodies shaped like each service's answer with random values, plus raw bytes.
fn body(shape: fn(Value) -> Value) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        value().prop_map(move |v| serde_json::to_vec(&shape(v)).unwrap_or_default()),
        value().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
        any::<Vec<u8>>(),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn chat_replies_never_panic(
        body in body(|v| json!({"choices": [{"message": {"role": "assistant", "content": v}}]}))
    ) {
        if let Ok(text) = parse_reply(&body) {
            prop_assert!(!text.trim().is_empty());
        }
    }

    #[test]
    fn judgements_never_panic(body in body(|v| json!({"score": v, "verdict": "correct"}))) {
        if let Ok(j) = parse_judgement(&body) {
            prop_assert!((0.0..=1.0).contains(&j.score), "{}", j.score);
        }
    }

    #[test]
    fn rerank_scores_never_panic(
        body in body(|v| json!([{"index": 0, "score": v}, {"index": v, "score": 0.5}])),
        count in 0usize..5,
        logits in any::<bool>(),
    ) {
        if let Ok(scores) = parse_scores(&body, count, logits) {
            prop_assert_eq!(scores.len(), count);
            for s in scores {
                prop_assert!(s.probability.is_finite() && (0.0..=1.0).contains(&s.probability));
            }
        }
    }

    #[test]
    fn retry_after_never_panics(text in "[ -~]{0,30}") {
        if let Ok(value) = HeaderValue::from_str(&text) {
            let _ = parse_retry_after(&value);
        }
    }
}
