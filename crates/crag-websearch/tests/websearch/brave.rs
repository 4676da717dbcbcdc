//! `BraveSearch` against recorded Brave Search API answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use crag_ports::{ErrorKind, WebSearch};
use crag_websearch::{BraveConfig, BraveSearch, BRAVE_MAX_COUNT, DEFAULT_BRAVE_URL};
use url::Url;

use crate::server::{fixture, refused_url, triples, Canned, TestServer, STALL, TIMEOUT_BOUND};

const KEY: &str = "BSAtest-0123456789abcdef";

fn config(endpoint: Url) -> BraveConfig {
    BraveConfig {
        endpoint,
        ..BraveConfig::new(KEY)
    }
}

fn brave(endpoint: Url) -> BraveSearch {
    BraveSearch::new(config(endpoint)).unwrap()
}

/// A server answering `canned` only to requests carrying [`KEY`], and the adapter pointed at it.
async fn serve(canned: Canned) -> (TestServer, BraveSearch) {
    let server = TestServer::start(canned.requiring_header("x-subscription-token", KEY)).await;
    let search = brave(server.url("/res/v1/web/search"));
    (server, search)
}

const EXPECTED: [(&str, &str, &str); 6] = [
    (
        "[2401.15884] Corrective Retrieval Augmented Generation",
        "https://arxiv.org/abs/2401.15884",
        concat!(
            "Large language models (LLMs) inevitably exhibit hallucinations since the accuracy of ",
            "generated texts cannot be secured solely by the parametric knowledge they encapsulate. ",
            "Although retrieval-augmented generation (RAG) is a practicable complement to LLMs, it ",
            "relies heavily on the relevance of retrieved documents. ",
            "To this end, we propose the Corrective Retrieval Augmented Generation (CRAG) to ",
            "improve the robustness of generation. ",
            "Specifically, a lightweight retrieval evaluator is designed to assess the overall ",
            "quality of retrieved documents for a query, returning a confidence degree based on ",
            "which different knowledge retrieval actions can be triggered."
        ),
    ),
    (
        "GitHub - HuskyInSalt/CRAG: Corrective Retrieval Augmented Generation",
        "https://github.com/HuskyInSalt/CRAG",
        "Code for the paper Corrective Retrieval Augmented Generation. Contribute to \
         HuskyInSalt/CRAG development by creating an account on GitHub.",
    ),
    (
        "Corrective RAG (CRAG) - LangGraph",
        "https://langchain-ai.github.io/langgraph/tutorials/rag/langgraph_crag/",
        "Corrective-RAG (CRAG) is a strategy for RAG that incorporates self-reflection / \
         self-grading on retrieved documents. In the paper, a few steps are taken: If at least \
         one document exceeds the threshold for relevance, then it proceeds to generation.",
    ),
    (
        "Corrective RAG (CRAG) Implementation With LangGraph | DataCamp",
        "https://www.datacamp.com/tutorial/corrective-rag-crag",
        "Learn how to implement Corrective RAG (CRAG) to refine retrieved documents & integrate \
         web search when retrieval isn't enough.",
    ),
    (
        "Corrective Retrieval Augmented Generation | OpenReview",
        "https://openreview.net/forum?id=JnWJbrnaUE",
        "",
    ),
    (
        "Self-RAG and Corrective RAG compared",
        "https://blog.example.org/self-rag-vs-crag",
        "Two ways to let a RAG pipeline check its own retrieval: reflection tokens (Self-RAG) \
         and a retrieval evaluator with web search as a fallback (CRAG).",
    ),
];

#[tokio::test]
async fn returns_cleaned_deduplicated_web_results_in_order() {
    let (_server, search) = serve(Canned::json(fixture("brave_results.json"))).await;
    let results = search
        .search("corrective retrieval augmented generation", 10)
        .await
        .unwrap();
    // 7 web results: the arxiv URL repeated with a fragment is dropped; the video is not a
    // web result; markup and entities are gone, extra snippets follow the description unless
    // the description already holds them.
    assert_eq!(triples(&results), EXPECTED);
}

#[tokio::test]
async fn honours_the_limit_and_asks_for_that_many() {
    let (server, search) = serve(Canned::json(fixture("brave_results.json"))).await;
    let results = search.search("crag", 2).await.unwrap();
    assert_eq!(triples(&results), EXPECTED[..2]);
    // The duplicate sits at position 6: the limit counts distinct results.
    let results = search.search("crag", 6).await.unwrap();
    assert_eq!(triples(&results), EXPECTED[..6]);
    // Brave gives at most 20 results a request.
    search.search("crag", 50).await.unwrap();
    let counts: Vec<_> = server
        .seen()
        .iter()
        .map(|s| s.query_values("count").concat())
        .collect();
    assert_eq!(counts, ["2", "6", &BRAVE_MAX_COUNT.to_string()]);
}

#[tokio::test]
async fn sends_the_key_header_and_the_query_params() {
    let (server, search) = serve(Canned::json(fixture("brave_empty.json"))).await;
    let search: Arc<dyn WebSearch> = Arc::new(search);
    assert_eq!(search.name(), "brave");
    let query = "CRAG \"web fallback\" & C++ café?";
    search.search(&format!("  {query}\n"), 5).await.unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::GET);
    assert_eq!(seen[0].path, "/res/v1/web/search");
    assert_eq!(seen[0].query_values("q"), [query]);
    assert_eq!(seen[0].query_values("count"), ["5"]);
    assert!(seen[0].query_values("extra_snippets").is_empty());
    assert_eq!(seen[0].header("x-subscription-token"), Some(KEY));
    assert_eq!(seen[0].header("accept"), Some("application/json"));
    assert!(seen[0].user_agent.as_deref().unwrap().contains("crag/"));
}

#[tokio::test]
async fn asks_for_extra_snippets_when_configured() {
    let server = TestServer::start(Canned::json(fixture("brave_empty.json"))).await;
    let mut config = config(server.url("/search?stale=1#f"));
    config.extra_snippets = true;
    let search = BraveSearch::new(config).unwrap();
    assert_eq!(search.endpoint().as_str(), server.url("/search").as_str());
    search.search("crag", 5).await.unwrap();
    let seen = &server.seen()[0];
    assert_eq!(seen.query_values("extra_snippets"), ["true"]);
    assert!(seen.query_values("stale").is_empty());
}

#[tokio::test]
async fn cuts_queries_to_brave_limits() {
    let (server, search) = serve(Canned::json(fixture("brave_empty.json"))).await;
    let words: Vec<String> = (0..80).map(|i| format!("word{i}")).collect();
    search.search(&words.join(" "), 5).await.unwrap();
    let sent = server.seen()[0].query_values("q").concat();
    assert_eq!(sent, words[..50].join(" "));
}

#[tokio::test]
async fn empty_results_are_ok() {
    // Brave leaves `web` out when it found no page; an empty list is read the same way.
    let empty_list = r#"{"type": "search", "query": {"original": "zxqv"},
        "web": {"type": "search", "results": [], "family_friendly": true}}"#;
    for body in [fixture("brave_empty.json"), empty_list.to_owned()] {
        let (_server, search) = serve(Canned::json(body)).await;
        let results = search.search("zxqv crag nonexistent term", 5).await;
        assert_eq!(results.unwrap(), []);
    }
}

const KEY_REJECTED: &str =
    "the api key is missing, invalid or not subscribed to the web search api";

#[tokio::test]
async fn a_rejected_key_is_unavailable_and_says_so() {
    // The server refuses any other key with 401.
    let server = TestServer::start(
        Canned::json(fixture("brave_results.json")).requiring_header("x-subscription-token", KEY),
    )
    .await;
    let mut wrong = config(server.url("/res/v1/web/search"));
    wrong.api_key = "BSA-wrong-key-9876".into();
    let error = BraveSearch::new(wrong)
        .unwrap()
        .search("crag", 5)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(
        error.to_string(),
        format!("brave answered http 401 Unauthorized: {KEY_REJECTED}")
    );
    assert!(!error.to_string().contains("wrong-key"), "{error}");
    // Brave's own answers for a bad key: 401/403, or 422 with SUBSCRIPTION_TOKEN_INVALID.
    for status in [401, 403, 422] {
        let canned = Canned::json(fixture("brave_invalid_token.json")).with_status(status);
        let (_server, search) = serve(canned).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{status}");
        assert!(error.to_string().ends_with(KEY_REJECTED), "{error}");
        assert!(error.to_string().contains(&status.to_string()), "{error}");
        assert!(
            !error.to_string().contains("provided"),
            "the body is not quoted"
        );
    }
}

#[tokio::test]
async fn too_many_requests_is_unavailable_and_says_so() {
    let canned = Canned::json(fixture("brave_rate_limited.json"))
        .with_status(429)
        .with_header("x-ratelimit-limit", "1, 2000")
        .with_header("x-ratelimit-remaining", "0, 1882")
        .with_header("x-ratelimit-reset", "1, 1419704");
    let (_server, search) = serve(canned).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(
        error.to_string(),
        "brave answered http 429 Too Many Requests: the rate limit or quota of the api key is \
         exhausted (x-ratelimit-reset: 1, 1419704)"
    );
    let (_server, search) = serve(Canned::error(429).with_header("retry-after", "30")).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "brave answered http 429 Too Many Requests: the rate limit or quota of the api key is \
         exhausted (retry after 30)"
    );
}

#[tokio::test]
async fn server_errors_are_unavailable_with_the_status() {
    for status in [500, 502, 503] {
        let (_server, search) = serve(Canned::error(status)).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{status}");
        assert!(
            error
                .to_string()
                .starts_with(&format!("brave answered http {status}")),
            "{error}"
        );
        assert!(
            !error.to_string().contains("upstream"),
            "the body is not quoted"
        );
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_internal() {
    for body in [
        "<html><body>Service starting (secret-marker)</body></html>",
        r#"{"type": "search", "web": {"results": [{"title": "cut"#,
    ] {
        let (_server, search) = serve(Canned::json(body)).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Internal);
        assert_eq!(error.to_string(), "brave answer is not json");
    }
}

#[tokio::test]
async fn a_json_body_of_the_wrong_shape_is_internal() {
    for body in [
        r#"{"error": "secret-marker"}"#,
        r#"{"type": "ErrorResponse", "error": {"code": "secret-marker"}}"#,
        r#"{"type": "search", "web": {"results": "secret-marker"}}"#,
        r#"["secret-marker"]"#,
    ] {
        let (_server, search) = serve(Canned::json(body)).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Internal, "{body}");
        assert_eq!(error.to_string(), "brave answer is not a web search answer");
    }
}

#[tokio::test]
async fn times_out_as_configured() {
    let canned = Canned::json(fixture("brave_results.json")).after(STALL);
    let server = TestServer::start(canned).await;
    let mut config = config(server.url("/res/v1/web/search"));
    config.timeout = Duration::from_millis(200);
    let search = BraveSearch::new(config).unwrap();
    let started = Instant::now();
    let error = search.search("crag", 5).await.unwrap_err();
    assert!(
        started.elapsed() < TIMEOUT_BOUND,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.to_string(), "brave did not answer within 200ms");
}

#[tokio::test]
async fn connection_refused_is_unavailable() {
    let search = brave(refused_url("/res/v1/web/search"));
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.to_string(), "brave is unreachable");
}

#[tokio::test]
async fn bad_arguments_are_invalid_input_and_send_nothing() {
    let (server, search) = serve(Canned::json(fixture("brave_results.json"))).await;
    for (query, limit) in [("", 5), ("  \n\t", 5), ("crag", 0)] {
        let error = search.search(query, limit).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{query:?} {limit}");
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn bad_configuration_is_invalid_input_and_never_shows_the_key() {
    let endpoint = Url::parse(DEFAULT_BRAVE_URL).unwrap();
    assert_eq!(BraveConfig::new(KEY).endpoint, endpoint);
    let with_key = |key: &str| BraveConfig {
        api_key: key.into(),
        ..config(endpoint.clone())
    };
    let mut zero = config(endpoint.clone());
    zero.timeout = Duration::ZERO;
    let mut agent = config(endpoint.clone());
    agent.user_agent = "crag\r\nx-injected: 1".into();
    let not_http = config(Url::parse("ftp://127.0.0.1/").unwrap());
    let cases = [
        (with_key(""), "brave api key is empty"),
        (with_key("  \t"), "brave api key is empty"),
        (
            with_key("BSA-secret\nx-injected: 1"),
            "brave api key is not a valid header value",
        ),
        (zero, "brave timeout must be positive"),
        (agent, "brave user agent is not a valid header value"),
        (not_http, "brave endpoint must be an http or https url"),
    ];
    for (config, message) in cases {
        let error = BraveSearch::new(config).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert_eq!(error.to_string(), message);
    }
}

#[tokio::test]
async fn passes_the_web_search_suite() {
    let (_server, search) = serve(Canned::json(fixture("brave_results.json"))).await;
    crag_ports::testsuite::web_search_suite(&search, "corrective retrieval augmented generation")
        .await;
}
