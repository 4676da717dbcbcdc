//! Property tests of the parsers of outside input: DuckDuckGo's HTML result page, SearXNG's
//! and Brave's JSON answers, and Brave's query bounds. Whatever arrives: no panic, at most
//! `limit` results, each with an http(s) URL, no URL twice.

use proptest::prelude::*;
use url::Url;

use crate::brave::{bounded_query, parse_answer as parse_brave};
use crate::duckduckgo::{parse_page, Selectors};
use crate::searxng::parse_answer;
use crag_ports::WebResult;

const CASES: u32 = 10_000;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn check(results: &[WebResult], limit: usize) -> Result<(), TestCaseError> {
    prop_assert!(results.len() <= limit);
    let mut seen = std::collections::HashSet::new();
    for r in results {
        prop_assert!(
            r.url.starts_with("http://") || r.url.starts_with("https://"),
            "{}",
            r.url
        );
        prop_assert!(seen.insert(r.url.clone()), "{} twice", r.url);
    }
    Ok(())
}

/// Fragments of a real result page, glued with noise.
fn html() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("<div class=\"result results_links\">".to_owned()),
        Just("<div class=\"result result--ad\">".to_owned()),
        Just("<a class=\"result__a\" href=\"".to_owned()),
        Just("//duckduckgo.com/l/?uddg=https%3A%2F%2Fexample.org%2Fa&rut=x".to_owned()),
        Just("https://example.com/page".to_owned()),
        Just("javascript:alert(1)".to_owned()),
        Just("\">".to_owned()),
        Just("</a>".to_owned()),
        Just("<a class=\"result__snippet\">".to_owned()),
        Just("</div>".to_owned()),
        Just("<div class=\"anomaly-modal\">".to_owned()),
        Just("<form id=\"search_form_homepage\">".to_owned()),
        Just("<div id=\"links\">".to_owned()),
        Just("&amp;&lt;&#x1F600;".to_owned()),
        "[a-zA-Z0-9 <>\"=/&;:.%-]{0,20}",
        any::<String>(),
    ];
    prop::collection::vec(fragment, 0..40).prop_map(|v| v.concat())
}

fn json_url() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::json!("https://example.org/a")),
        Just(serde_json::json!("http://example.com/")),
        Just(serde_json::json!("ftp://example.org/")),
        Just(serde_json::json!("not a url")),
        Just(serde_json::json!(null)),
        Just(serde_json::json!(42)),
        any::<String>().prop_map(serde_json::Value::String),
    ]
}

fn json_text() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        any::<String>().prop_map(serde_json::Value::String),
        Just(serde_json::json!("<b>bold</b> &amp; more")),
        Just(serde_json::json!("<strong>Corrective</strong> RAG")),
        Just(serde_json::json!(null)),
        Just(serde_json::json!([1, 2])),
    ]
}

/// SearXNG-like JSON with random values, and garbage.
fn searxng_body() -> impl Strategy<Value = Vec<u8>> {
    let item = (json_url(), json_text(), json_text())
        .prop_map(|(u, t, c)| serde_json::json!({"url": u, "title": t, "content": c}));
    let answer = prop::collection::vec(item, 0..30).prop_map(|results| {
        serde_json::to_vec(&serde_json::json!({ "results": results })).unwrap_or_default()
    });
    prop_oneof![
        answer,
        any::<Vec<u8>>(),
        Just(b"{\"results\": 3}".to_vec()),
        Just(b"[]".to_vec()),
        Just(b"{\"results\": [".to_vec()),
    ]
}

/// Brave-like JSON with random values (extra snippets included), and garbage.
fn brave_body() -> impl Strategy<Value = Vec<u8>> {
    let extras = prop_oneof![
        prop::collection::vec(json_text(), 0..4).prop_map(serde_json::Value::Array),
        json_text(),
    ];
    let item = (json_url(), json_text(), json_text(), extras).prop_map(|(u, t, d, e)| {
        serde_json::json!({"url": u, "title": t, "description": d, "extra_snippets": e})
    });
    let kind = prop_oneof![Just("search".to_owned()), any::<String>()];
    let answer = (kind, prop::collection::vec(item, 0..20), any::<bool>()).prop_map(
        |(kind, results, with_web)| {
            let mut answer = serde_json::json!({"type": kind, "query": {"original": "q"}});
            if with_web {
                answer["web"] = serde_json::json!({"type": "search", "results": results});
            }
            serde_json::to_vec(&answer).unwrap_or_default()
        },
    );
    prop_oneof![
        4 => answer,
        1 => any::<Vec<u8>>(),
        1 => Just(b"{\"type\": \"search\", \"web\": 3}".to_vec()),
        1 => Just(b"{\"type\": \"search\", \"web\": {\"results\": [".to_vec()),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn duckduckgo_pages_never_panic(page in html(), limit in 0usize..12) {
        let selectors = Selectors::new().expect("selectors");
        let base = Url::parse(crate::DEFAULT_DUCKDUCKGO_URL).expect("url");
        if let Ok(results) = parse_page(&page, &base, limit, &selectors) {
            check(&results, limit)?;
        }
    }

    #[test]
    fn searxng_answers_never_panic(body in searxng_body(), limit in 0usize..12) {
        if let Ok(results) = parse_answer(&body, limit) {
            check(&results, limit)?;
        }
    }

    #[test]
    fn brave_answers_never_panic(body in brave_body(), limit in 0usize..12) {
        if let Ok(results) = parse_brave(&body, limit) {
            check(&results, limit)?;
        }
    }

    #[test]
    fn brave_queries_stay_within_bounds(query in any::<String>()) {
        let bounded = bounded_query(&query);
        prop_assert!(query.starts_with(bounded));
        prop_assert!(bounded.chars().count() <= 400);
        prop_assert!(bounded.split_whitespace().count() <= 50);
        if query.chars().count() <= 400 && query.split_whitespace().count() <= 50 {
            prop_assert_eq!(bounded.trim_end(), query.trim_end());
        }
    }
}
