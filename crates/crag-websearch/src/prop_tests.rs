//! Property tests of the two parsers of outside input: DuckDuckGo's HTML result page and
//! SearXNG's JSON answer. Whatever arrives: no panic, at most `limit` results, each with an
//! http(s) URL, no URL twice.

use proptest::prelude::*;
use url::Url;

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

/// SearXNG-like JSON with random values, and garbage.
fn searxng_body() -> impl Strategy<Value = Vec<u8>> {
    let url = prop_oneof![
        Just(serde_json::json!("https://example.org/a")),
        Just(serde_json::json!("http://example.com/")),
        Just(serde_json::json!("ftp://example.org/")),
        Just(serde_json::json!("not a url")),
        Just(serde_json::json!(null)),
        Just(serde_json::json!(42)),
        any::<String>().prop_map(serde_json::Value::String),
    ];
    let text = prop_oneof![
        any::<String>().prop_map(serde_json::Value::String),
        Just(serde_json::json!("<b>bold</b> &amp; more")),
        Just(serde_json::json!(null)),
        Just(serde_json::json!([1, 2])),
    ];
    let item = (url, text.clone(), text)
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
}
