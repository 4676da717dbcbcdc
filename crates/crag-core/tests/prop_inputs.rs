//! Property tests of the domain's constructors of outside input: queries, ids, spans, top k,
//! and chunks read from JSON. No panic; what is accepted holds the invariants.

use crag_core::{Chunk, ChunkId, DocumentId, Query, Span, TopK, MAX_QUERY_BYTES, MAX_TOP_K};
use proptest::prelude::*;
use serde_json::{json, Value};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ \t\n\u{0}\u{7f}a-z\u{e9}\u{1F600}]{0,40}",
        Just("x".repeat(MAX_QUERY_BYTES + 1)),
        Just(format!(" {} ", "y".repeat(MAX_QUERY_BYTES))),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn queries_are_trimmed_bounded_and_clean(raw in text()) {
        if let Ok(q) = Query::new(&raw) {
            let s = q.as_str();
            prop_assert!(!s.is_empty() && s.len() <= MAX_QUERY_BYTES);
            prop_assert_eq!(s, s.trim());
            prop_assert!(!s.chars().any(|c| c.is_control() && !c.is_whitespace()));
        }
    }

    #[test]
    fn ids_are_never_blank_or_controlled(raw in text()) {
        let ids = [
            DocumentId::new(raw.clone()).map(|d| d.to_string()),
            ChunkId::new(raw.clone()).map(|c| c.to_string()),
        ];
        for ok in ids.into_iter().flatten() {
            prop_assert!(!ok.trim().is_empty() && !ok.chars().any(char::is_control));
        }
    }

    #[test]
    fn spans_and_top_k_are_ordered(
        a in any::<u64>(), b in any::<u64>(), l1 in any::<u32>(), l2 in any::<u32>(), k in any::<usize>(),
    ) {
        if let Ok(s) = Span::new(a, b, l1, l2) {
            prop_assert!(s.byte_start <= s.byte_end && s.line_start >= 1 && s.line_start <= s.line_end);
        }
        if let Ok(t) = TopK::new(k) {
            prop_assert!((1..=MAX_TOP_K).contains(&t.get()));
        }
    }

    #[test]
    fn chunks_from_json_never_panic(
        id in prop_oneof![text().prop_map(Value::String), Just(json!(null)), Just(json!(7))],
        body in prop_oneof![text().prop_map(Value::String), Just(json!([]))],
        start in any::<i64>(),
        kind in prop_oneof![Just(json!("code")), Just(json!("prose")), Just(json!("pdf")), Just(json!(1))],
    ) {
        let value = json!({
            "id": id, "document_id": "d", "source": "s", "title": "t", "text": body,
            "span": {"byte_start": start, "byte_end": 10, "line_start": 1, "line_end": 1},
            "kind": kind, "content_hash": "h",
            "code": {"language": "rust", "symbol": "f", "symbol_kind": "function",
                     "qualified": "a::f", "signature": "fn f()", "part": 0, "parts": 1}
        });
        if let Ok(chunk) = serde_json::from_value::<Chunk>(value) {
            prop_assert!(!chunk.id.as_str().trim().is_empty());
        }
    }
}
