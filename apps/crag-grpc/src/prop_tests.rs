//! Property tests of what a gRPC client sends: arbitrary bytes decoded as each request message,
//! and arbitrary field values, converted and checked against `[limits]` as the service does.
//! No panic; a request either becomes a valid domain request or is refused with a message.

use crag_app::Limits;
use crag_config::LimitsSection;
use proptest::prelude::*;
use prost::Message;

use crate::convert::{ask_params, document, query_params};
use crate::pb;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn filters() -> impl Strategy<Value = Option<pb::Filters>> {
    let words = prop::collection::vec(
        prop_oneof![
            Just("code".to_owned()),
            Just("rust".to_owned()),
            Just("function".to_owned()),
            any::<String>()
        ],
        0..4,
    );
    prop::option::of(
        (
            any::<String>(),
            words.clone(),
            words.clone(),
            words,
            prop_oneof![
                Just(String::new()),
                Just(r#"{"team": "a", "year": {"$gte": 1}}"#.to_owned()),
                any::<String>()
            ],
        )
            .prop_map(
                |(source_prefix, kinds, languages, symbol_kinds, metadata_json)| pb::Filters {
                    source_prefix,
                    kinds,
                    languages,
                    symbol_kinds,
                    metadata_json,
                },
            ),
    )
}

fn query_request() -> impl Strategy<Value = pb::QueryRequest> {
    (
        any::<String>(),
        prop::option::of(any::<i64>()),
        prop::option::of(any::<i64>()),
        any::<String>(),
        filters(),
        prop::option::of(any::<bool>()),
        (
            prop::sample::select(vec!["", "convex", "rrf", "max", " rrf"]),
            prop::option::of(any::<f64>()),
            prop::option::of(any::<f64>()),
        ),
    )
        .prop_map(
            |(query, top_k, token_budget, session_id, filters, flag, fusion)| pb::QueryRequest {
                query,
                top_k,
                token_budget,
                session_id,
                filters,
                use_crag: flag,
                use_web_search: flag,
                use_rerank: flag,
                fusion: fusion.0.to_owned(),
                keyword_weight: fusion.1,
                rrf_k: fusion.2,
            },
        )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_decode_or_fail_cleanly(bytes in any::<Vec<u8>>()) {
        let limits = Limits(LimitsSection::default());
        if let Ok(Ok(p)) = pb::QueryRequest::decode(bytes.as_slice()).map(query_params) {
            let _ = limits.query_request(&p);
        }
        if let Ok(Ok(p)) = pb::AskRequest::decode(bytes.as_slice()).map(ask_params) {
            let _ = limits.query_request(&p.query);
        }
        if let Ok(Ok(p)) = pb::Document::decode(bytes.as_slice()).map(document) {
            let _ = limits.document(&p);
        }
    }

    #[test]
    fn arbitrary_queries_are_valid_or_refused(m in query_request()) {
        let limits = Limits(LimitsSection::default());
        let has_filter = m.filters.as_ref().is_some_and(|f| !f.metadata_json.trim().is_empty());
        let Ok(params) = query_params(m) else {
            prop_assert!(has_filter, "only a metadata filter's JSON is parsed");
            return Ok(());
        };
        if let Ok(request) = limits.query_request(&params) {
            prop_assert!(!request.query.as_str().is_empty());
            prop_assert!(request.top_k.get() >= 1);
        }
    }
}
