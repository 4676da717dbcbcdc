//! `DuckDuckGoSearch` against recorded DuckDuckGo HTML pages.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::Method;
use crag_ports::{ErrorKind, WebSearch};
use crag_websearch::{DuckDuckGoConfig, DuckDuckGoSearch};
use url::Url;

use crate::server::{fixture, refused_url, triples, Canned, TestServer, STALL, TIMEOUT_BOUND};

fn config(base_url: Url) -> DuckDuckGoConfig {
    DuckDuckGoConfig {
        base_url,
        ..DuckDuckGoConfig::default()
    }
}

fn duckduckgo(base_url: Url) -> DuckDuckGoSearch {
    DuckDuckGoSearch::new(config(base_url)).unwrap()
}

async fn serve(canned: Canned) -> (TestServer, DuckDuckGoSearch) {
    let server = TestServer::start(canned).await;
    let search = duckduckgo(server.url("/html/"));
    (server, search)
}

const EXPECTED: [(&str, &str, &str); 5] = [
    (
        "[2401.15884] Corrective Retrieval Augmented Generation",
        "https://arxiv.org/abs/2401.15884",
        "Large language models (LLMs) inevitably exhibit hallucinations since the accuracy of \
         generated texts cannot be secured solely by the parametric knowledge they \
         encapsulate. Although retrieval-augmented generation (RAG) is a practicable \
         complement to LLMs, it relies heavily on the relevance of retrieved documents.",
    ),
    (
        "GitHub - HuskyInSalt/CRAG: Corrective Retrieval Augmented Generation",
        "https://github.com/HuskyInSalt/CRAG",
        "Code for the paper 'Corrective Retrieval Augmented Generation'. A lightweight \
         retrieval evaluator assesses the overall quality of retrieved documents.",
    ),
    (
        "Corrective RAG (CRAG) - GitHub Pages",
        "https://langchain-ai.github.io/langgraph/tutorials/rag/langgraph_crag/",
        "Corrective-RAG (CRAG) is a strategy for RAG that incorporates self-reflection / \
         self-grading on retrieved documents.",
    ),
    (
        "CRAG explained: what & why",
        "https://blog.example.com/posts?id=42&lang=en",
        "When the evaluator judges retrieval incorrect, CRAG falls back to web search\u{2026}",
    ),
    (
        "Corrective RAG (CRAG) Implementation With LangGraph | DataCamp",
        "https://www.datacamp.com/tutorial/corrective-rag-crag",
        "Learn how to implement Corrective RAG (CRAG) to refine retrieved documents and fall \
         back to web search when they are not relevant.",
    ),
];

#[tokio::test]
async fn scrapes_organic_results_and_skips_ads() {
    let (_server, search) = serve(Canned::html(fixture("duckduckgo_results.html"))).await;
    let results = search
        .search("corrective retrieval augmented generation", 10)
        .await
        .unwrap();
    // The page holds an ad, six organic results with redirect links (one repeating the arxiv
    // URL) and a result whose link is not http(s).
    assert_eq!(triples(&results), EXPECTED);
}

#[tokio::test]
async fn honours_the_limit() {
    let (_server, search) = serve(Canned::html(fixture("duckduckgo_results.html"))).await;
    let results = search.search("crag", 1).await.unwrap();
    assert_eq!(triples(&results), EXPECTED[..1]);
    let results = search.search("crag", 4).await.unwrap();
    assert_eq!(triples(&results), EXPECTED[..4]);
}

#[tokio::test]
async fn posts_the_query_as_a_form() {
    let server = TestServer::start(Canned::html(fixture("duckduckgo_empty.html"))).await;
    let search: Arc<dyn WebSearch> = Arc::new(duckduckgo(server.url("/html/")));
    assert_eq!(search.name(), "duckduckgo");
    let query = "CRAG \"web fallback\" & C++ café?";
    search.search(query, 5).await.unwrap();
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, Method::POST);
    assert_eq!(seen[0].path, "/html/");
    assert_eq!(
        seen[0].content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(seen[0].form_values("q"), [query]);
    assert!(seen[0].form_values("kl").is_empty());
}

#[tokio::test]
async fn sends_the_region_when_configured() {
    let server = TestServer::start(Canned::html(fixture("duckduckgo_empty.html"))).await;
    let search = DuckDuckGoSearch::new(DuckDuckGoConfig {
        region: Some("de-de".into()),
        ..config(server.url("/html/"))
    })
    .unwrap();
    search.search("crag", 5).await.unwrap();
    assert_eq!(server.seen()[0].form_values("kl"), ["de-de"]);
}

#[tokio::test]
async fn a_page_without_results_is_ok_and_empty() {
    let (_server, search) = serve(Canned::html(fixture("duckduckgo_empty.html"))).await;
    assert_eq!(
        search
            .search("zxqv crag nonexistent term", 5)
            .await
            .unwrap(),
        []
    );
}

#[tokio::test]
async fn the_bot_challenge_is_unavailable_not_empty() {
    for status in [200, 202] {
        let canned = Canned::html(fixture("duckduckgo_anomaly.html")).with_status(status);
        let (_server, search) = serve(canned).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{status}");
        assert_eq!(error.to_string(), "duckduckgo blocked the request");
    }
}

#[tokio::test]
async fn an_unrecognised_page_is_internal() {
    let body = "<html><body><h1>Welcome</h1><p>secret-marker</p></body></html>";
    let (_server, search) = serve(Canned::html(body)).await;
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Internal);
    assert!(!error.to_string().contains("secret-marker"), "{error}");
}

#[tokio::test]
async fn times_out_as_configured() {
    let canned = Canned::html(fixture("duckduckgo_results.html")).after(STALL);
    let server = TestServer::start(canned).await;
    let search = DuckDuckGoSearch::new(DuckDuckGoConfig {
        timeout: Duration::from_millis(200),
        ..config(server.url("/html/"))
    })
    .unwrap();
    let started = Instant::now();
    let error = search.search("crag", 5).await.unwrap_err();
    assert!(
        started.elapsed() < TIMEOUT_BOUND,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(error.to_string(), "duckduckgo did not answer within 200ms");
}

#[tokio::test]
async fn server_errors_and_rate_limits_are_unavailable_with_the_status() {
    for status in [429, 500, 503] {
        let (_server, search) = serve(Canned::error(status)).await;
        let error = search.search("crag", 5).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Unavailable, "{status}");
        assert!(error.to_string().contains(&status.to_string()), "{error}");
    }
}

#[tokio::test]
async fn connection_refused_is_unavailable() {
    let search = duckduckgo(refused_url("/html/"));
    let error = search.search("crag", 5).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert_eq!(error.to_string(), "duckduckgo is unreachable");
}

#[tokio::test]
async fn bad_arguments_are_invalid_input_and_send_nothing() {
    let (server, search) = serve(Canned::html(fixture("duckduckgo_results.html"))).await;
    for (query, limit) in [("", 5), (" \u{a0}\n", 5), ("crag", 0)] {
        let error = search.search(query, limit).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{query:?} {limit}");
    }
    assert!(server.seen().is_empty());
}

#[tokio::test]
async fn bad_configuration_is_invalid_input() {
    let base = Url::parse("http://127.0.0.1:8080/html/").unwrap();
    let zero = DuckDuckGoConfig {
        timeout: Duration::ZERO,
        ..config(base.clone())
    };
    let not_http = config(Url::parse("file:///html/").unwrap());
    for config in [zero, not_http] {
        let error = DuckDuckGoSearch::new(config).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }
}

#[tokio::test]
async fn passes_the_web_search_suite() {
    let (_server, search) = serve(Canned::html(fixture("duckduckgo_results.html"))).await;
    crag_ports::testsuite::web_search_suite(&search, "corrective retrieval augmented generation")
        .await;
}
