//! `SearxngSearch` against recorded SearXNG answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use crag_ports::{ErrorKind, WebSearch};
use crag_websearch::{SearxngConfig, SearxngSearch};
use url::Url;

use crate::server::{
    fixture, hang_up_url, refused_url, triples, Canned, HangUp, TestServer, STALL, TIMEOUT_BOUND,
};

fn searxng(base_url: Url) -> SearxngSearch {
    SearxngSearch::new(SearxngConfig::new(base_url)).unwrap()
}

async fn serve(canned: Canned) -> (TestServer, SearxngSearch) {
    let server = TestServer::start(canned).await;
    let search = searxng(server.url("/"));
    (server, search)
}

const EXPECTED: [(&str, &str, &str); 5] = [
    (
        "[2401.15884] Corrective Retrieval Augmented Generation",
        "https://arxiv.org/abs/2401.15884",
        "Large language models (LLMs) inevitably exhibit hallucinations since the accuracy of \
         generated texts cannot be secured solely by the parametric knowledge they encapsulate.",
    ),
    (
        "HuskyInSalt/CRAG: Corrective Retrieval Augmented Generation",
        "https://github.com/HuskyInSalt/CRAG",
        "Code for the paper Corrective Retrieval Augmented Generation. A lightweight retrieval \
         evaluator",
    ),
    (
        "Corrective RAG (CRAG) - LangGraph",
        "https://langchain-ai.github.io/langgraph/tutorials/rag/langgraph_crag/",
        "Corrective-RAG (CRAG) is a strategy for RAG that incorporates self-reflection & \
         self-grading on retrieved documents.",
    ),
    (
        "Corrective RAG (CRAG) Implementation With LangGraph | DataCamp",
        "https://www.datacamp.com/tutorial/corrective-rag-crag",
        "Learn how to implement Corrective RAG (CRAG) to refine retrieved documents.",
    ),
    (
        "Corrective Retrieval Augmented Generation | OpenReview",
        "https://openreview.net/forum?id=JnWJbrnaUE",
        "",
    ),
];

#[tokio::test]
async fn returns_cleaned_deduplicated_results_in_order() {
    let (_server, search) = serve(Canned::json(fixture("searxng_results.json"))).await;
    let results = search
        .search("corrective retrieval augmented generation", 10)
        .await
        .unwrap();
    // 7 answers: the repeated arxiv URL and the one without a URL are dropped.
    assert_eq!(triples(&results), EXPECTED);
}

#[tokio::test]
async fn honours_the_limit() {
    let (_server, search) = serve(Canned::json(fixture("searxng_results.json"))).await;
    let results = search.search("crag", 2).await.unwrap();
    assert_eq!(triples(&results), EXPECTED[..2]);
    // The duplicate sits at position 4: the limit counts distinct results.
    let results = search.search("crag", 4).await.unwrap();
    assert_eq!(triples(&results), EXPECTED[..4]);
}

#[tokio::test]
async fn sends_the_query_as_json_search() {
    let server = TestServer::start(Canned::json(fixture("searxng_empty.json"))).await;
    let search: Arc<dyn WebSearch> = Arc::new(searxng(server.url("/")));
    assert_eq!(search.name(), "searxng");
    let query = "CRAG \"web fallback\" & C++ café?";
    search.search(&format!("  {query}\n"), 5).await.unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::GET);
    assert_eq!(seen[0].path, "/search");
    assert_eq!(seen[0].query_values("q"), [query]);
    assert_eq!(seen[0].query_values("format"), ["json"]);
    assert!(seen[0].query_values("categories").is_empty());
    assert!(seen[0].query_values("language").is_empty());
    assert!(seen[0].user_agent.as_deref().unwrap().contains("crag/"));
}

#[tokio::test]
async fn sends_categories_language_and_user_agent_when_configured() {
    let server = TestServer::start(Canned::json(fixture("searxng_empty.json"))).await;
    let mut config = SearxngConfig::new(server.url("/"));
    config.categories = Some("general,science".into());
    config.language = Some("en".into());
    config.user_agent = "crag-test/1.0".into();
    let search = SearxngSearch::new(config).unwrap();
    search.search("crag", 5).await.unwrap();
    let seen = &server.seen()[0];
    assert_eq!(seen.query_values("categories"), ["general,science"]);
    assert_eq!(seen.query_values("language"), ["en"]);
    assert_eq!(seen.user_agent.as_deref(), Some("crag-test/1.0"));
}

#[tokio::test]
async fn keeps_the_path_prefix_of_the_base_url() {
    let server = TestServer::start(Canned::json(fixture("searxng_empty.json"))).await;
    for base in ["/searx", "/searx/"] {
        let search = searxng(server.url(base));
        assert_eq!(search.endpoint().path(), "/searx/search");
        search.search("crag", 5).await.unwrap();
    }
    let paths: Vec<_> = server.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/searx/search", "/searx/search"]);
}

#[tokio::test]
async fn empty_results_are_ok() {
    let (_server, search) = serve(Canned::json(fixture("searxng_empty.json"))).await;
    assert_eq!(
        search
            .search("zxqv crag nonexistent term", 5)
            .await
            .unwrap(),
        []
    );
}

#[tokio::test]
async fn times_out_as_configured() {
    let server =
        TestServer::start(Canned::json(fixture("searxng_results.json")).after(STALL)).await;
    let mut config = SearxngConfig::new(server.url("/"));
    config.timeout = Duration::from_millis(200);
    let search = SearxngSearch::new(config).unwrap();
    let started = Instant::now();
    let error = search.search("crag", 5).await.unwrap_err();
    assert!(
        started.elapsed() < TIMEOUT_BOUND,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.to_string(), "searxng did not answer within 200ms");
}

#[tokio::test]
async fn server_errors_are_unavailable_with_the_status() {
    for status in [500, 502, 503] {
        let (_server, search) = serve(Canned::error(status)).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{status}");
        assert!(error.to_string().contains(&status.to_string()), "{error}");
    }
}

#[tokio::test]
async fn too_many_requests_is_unavailable_with_the_status() {
    let (_server, search) = serve(Canned::error(429).with_header("retry-after", "30")).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(
        error.to_string(),
        "searxng answered http 429 Too Many Requests (retry after 30)"
    );
}

#[tokio::test]
async fn json_format_disabled_is_unavailable() {
    // SearXNG answers 403 when `json` is not among `search.formats`.
    let (_server, search) = serve(Canned::error(403)).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(error.to_string().contains("403"), "{error}");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_internal() {
    let body = "<html><body>SearXNG is starting, please wait (secret-marker)</body></html>";
    let (_server, search) = serve(Canned::json(body)).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Internal);
    assert_eq!(error.to_string(), "searxng answer is not json");
}

#[tokio::test]
async fn a_json_body_of_the_wrong_shape_is_internal() {
    for body in [
        r#"{"error": "secret-marker"}"#,
        r#"{"results": "secret-marker"}"#,
        r#"["secret-marker"]"#,
    ] {
        let (_server, search) = serve(Canned::json(body)).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Internal, "{body}");
        assert_eq!(error.to_string(), "searxng answer has no results list");
    }
}

#[tokio::test]
async fn connection_refused_is_unavailable() {
    let search = searxng(refused_url("/"));
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.to_string(), "searxng is unreachable");
}

#[tokio::test]
async fn connections_closed_without_or_mid_answer_are_unavailable() {
    for how in [HangUp::Silent, HangUp::MidBody] {
        let search = searxng(hang_up_url("/", how));
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{how:?}: {error}");
        assert!(error.to_string().contains("searxng"), "{how:?}: {error}");
    }
}

#[tokio::test]
async fn bad_arguments_are_invalid_input_and_send_nothing() {
    let (server, search) = serve(Canned::json(fixture("searxng_results.json"))).await;
    for (query, limit) in [("", 5), ("  \n\t", 5), ("crag", 0)] {
        let error = search.search(query, limit).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{query:?} {limit}");
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn bad_configuration_is_invalid_input() {
    let base = Url::parse("http://127.0.0.1:8080/").unwrap();
    let mut zero = SearxngConfig::new(base.clone());
    zero.timeout = Duration::ZERO;
    let mut agent = SearxngConfig::new(base);
    agent.user_agent = "crag\r\nx-injected: 1".into();
    let not_http = SearxngConfig::new(Url::parse("ftp://127.0.0.1/").unwrap());
    for config in [zero, agent, not_http] {
        let error = SearxngSearch::new(config).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }
}

#[tokio::test]
async fn an_oversized_answer_is_internal() {
    let body = format!(r#"{{"results": [], "padding": "{}"}}"#, "x".repeat(5 << 20));
    let (_server, search) = serve(Canned::json(body)).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Internal);
    assert_eq!(error.to_string(), "searxng answer is larger than 4 MiB");
}

#[tokio::test]
async fn passes_the_web_search_suite() {
    let (_server, search) = serve(Canned::json(fixture("searxng_results.json"))).await;
    crag_ports::testsuite::web_search_suite(&search, "corrective retrieval augmented generation")
        .await;
}
