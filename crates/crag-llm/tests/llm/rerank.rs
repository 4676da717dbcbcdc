//! `HttpReranker` against fake text-embeddings-inference and Cohere-style rerank services.

use std::collections::BTreeSet;
use std::time::Duration;

use crag_llm::{HttpReranker, HttpRerankerConfig, RerankField};
use crag_ports::testsuite::{reranker_suite, RerankerModel};
use crag_ports::{ErrorKind, RerankScore, Reranker};
use serde_json::{json, Value};
use url::Url;

use crate::support::{closed_port_url, FakeServer, Recorded, Reply};

const QUERY: &str = "how does the borrow checker work";

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The logit of the fake model: -4 (no query word) to 4 (every query word).
fn overlap_logit(query: &str, passage: &str) -> f64 {
    let terms = words(query);
    let present = words(passage).intersection(&terms).count();
    8.0 * present as f64 / terms.len().max(1) as f64 - 4.0
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The passages of a request, from `texts` or `documents`.
fn sent_passages(r: &Recorded) -> Vec<String> {
    let list = r.body.get("texts").or_else(|| r.body.get("documents"));
    list.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `(index, logit)` of every passage, best first, as TEI sorts them.
fn scored(r: &Recorded) -> Vec<(usize, f64)> {
    let query = r.field("query");
    let mut scored: Vec<(usize, f64)> = sent_passages(r)
        .iter()
        .enumerate()
        .map(|(i, p)| (i, overlap_logit(&query, p)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored
}

/// A TEI server scoring by term overlap: raw logits, or sigmoids when `raw_scores` is false.
fn tei(r: &Recorded) -> Reply {
    let raw = r.body["raw_scores"].as_bool().unwrap_or(false);
    let results: Vec<Value> = scored(r)
        .into_iter()
        .map(|(index, logit)| {
            let score = if raw { logit } else { sigmoid(logit) };
            json!({"index": index, "score": score})
        })
        .collect();
    Reply::json(200, Value::Array(results))
}

/// A Cohere-style server scoring by term overlap, as probabilities.
fn cohere(r: &Recorded) -> Reply {
    let results: Vec<Value> = scored(r)
        .into_iter()
        .map(|(index, logit)| json!({"index": index, "relevance_score": sigmoid(logit)}))
        .collect();
    Reply::json(200, json!({"id": "rr-1", "results": results, "meta": {}}))
}

fn config(url: Url) -> HttpRerankerConfig {
    HttpRerankerConfig::new(url)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn sample() -> Vec<String> {
    strings(&[
        "Sourdough bread needs a lively starter.",
        "The borrow checker rejects dangling references.",
        "Ownership makes Rust memory safe.",
    ])
}

fn close(a: f32, b: f64) -> bool {
    (f64::from(a) - b).abs() < 1e-5
}

#[tokio::test]
async fn tei_server_passes_the_reranker_suite() {
    let server = FakeServer::start(|_, r| tei(r)).await;
    let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
    assert_eq!(reranker.model_id(), "127.0.0.1");
    reranker_suite(&reranker, RerankerModel::Ranks).await;
    assert!(server.calls() > 0);
}

#[tokio::test]
async fn tei_answer_out_of_order_is_put_back_in_input_order() {
    let server = FakeServer::start(|_, r| tei(r)).await;
    let reranker = HttpReranker::new(HttpRerankerConfig {
        model: Some("bge-reranker-base".into()),
        api_key: Some("rr-key".into()),
        ..config(server.url("/rerank"))
    })
    .expect("reranker");
    assert_eq!(reranker.model_id(), "bge-reranker-base");
    let passages = sample();
    let scores = reranker.rerank(QUERY, &passages).await.expect("rerank");
    assert_eq!(scores.len(), 3);
    for (score, passage) in scores.iter().zip(&passages) {
        let logit = overlap_logit(QUERY, passage);
        assert!(close(score.logit, logit), "{passage}: {score:?}");
        assert!(close(score.probability, sigmoid(logit)), "{score:?}");
    }
    assert!(scores[1].logit > scores[2].logit && scores[2].logit >= scores[0].logit);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/rerank");
    assert_eq!(r.header("authorization").as_deref(), Some("Bearer rr-key"));
    assert_eq!(
        r.body,
        json!({
            "query": QUERY,
            "texts": passages,
            "raw_scores": true,
            "truncate": true,
            "model": "bge-reranker-base",
        })
    );
    // The answer really was out of order.
    let order: Vec<usize> = scored(r).into_iter().map(|(i, _)| i).collect();
    assert_ne!(order, [0, 1, 2]);
}

#[tokio::test]
async fn tei_probabilities_are_turned_into_logits() {
    let server = FakeServer::start(|_, r| tei(r)).await;
    let reranker = HttpReranker::new(HttpRerankerConfig {
        scores_are_logits: false,
        ..config(server.url("/rerank"))
    })
    .expect("reranker");
    let passages = sample();
    let scores = reranker.rerank(QUERY, &passages).await.expect("rerank");
    for (score, passage) in scores.iter().zip(&passages) {
        let logit = overlap_logit(QUERY, passage);
        assert!((f64::from(score.logit) - logit).abs() < 1e-3, "{score:?}");
        assert!(close(score.probability, sigmoid(logit)), "{score:?}");
    }
    assert_eq!(server.requests()[0].body["raw_scores"], json!(false));
}

#[tokio::test]
async fn cohere_shape_is_understood() {
    let server = FakeServer::start(|_, r| cohere(r)).await;
    let reranker = HttpReranker::new(HttpRerankerConfig {
        model: Some("rerank-v3".into()),
        scores_are_logits: false,
        field: RerankField::Documents,
        ..config(server.url("/v1/rerank"))
    })
    .expect("reranker");
    let passages = sample();
    let scores = reranker.rerank(QUERY, &passages).await.expect("rerank");
    for (score, passage) in scores.iter().zip(&passages) {
        let logit = overlap_logit(QUERY, passage);
        assert!((f64::from(score.logit) - logit).abs() < 1e-3, "{score:?}");
        assert!(close(score.probability, sigmoid(logit)), "{score:?}");
    }
    let r = &server.requests()[0];
    assert_eq!(
        r.body,
        json!({"query": QUERY, "documents": passages, "model": "rerank-v3"})
    );
    assert!(r.header("authorization").is_none());
}

#[tokio::test]
async fn cohere_server_passes_the_reranker_suite() {
    let server = FakeServer::start(|_, r| cohere(r)).await;
    let reranker = HttpReranker::new(HttpRerankerConfig {
        scores_are_logits: false,
        field: RerankField::Documents,
        ..config(server.url("/v1/rerank"))
    })
    .expect("reranker");
    reranker_suite(&reranker, RerankerModel::Ranks).await;
}

#[tokio::test]
async fn passages_go_in_batches_in_order() {
    let server = FakeServer::start(|_, r| tei(r)).await;
    let reranker = HttpReranker::new(HttpRerankerConfig {
        max_batch: 2,
        ..config(server.url("/rerank"))
    })
    .expect("reranker");
    let passages = strings(&[
        "borrow",
        "nothing here",
        "the borrow checker",
        "how does it work",
        "how does the borrow checker work",
    ]);
    let scores = reranker.rerank(QUERY, &passages).await.expect("rerank");
    assert_eq!(scores.len(), 5);
    for (score, passage) in scores.iter().zip(&passages) {
        assert!(
            close(score.logit, overlap_logit(QUERY, passage)),
            "{passage}: {score:?}"
        );
    }
    let sent: Vec<Vec<String>> = server.requests().iter().map(sent_passages).collect();
    assert_eq!(
        sent,
        [
            passages[0..2].to_vec(),
            passages[2..4].to_vec(),
            passages[4..5].to_vec()
        ]
    );
    assert_eq!(
        server.max_in_flight(),
        1,
        "batches are sent one after the other"
    );
}

#[tokio::test]
async fn missing_index_is_internal() {
    let server = FakeServer::start(|_, _| {
        Reply::json(
            200,
            json!([{"index": 2, "score": 1.0}, {"index": 0, "score": 0.5}]),
        )
    })
    .await;
    let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
    let err = reranker
        .rerank(QUERY, &sample())
        .await
        .expect_err("missing");
    assert_eq!(err.kind(), ErrorKind::Internal, "{err}");
    assert!(err.to_string().contains("index 1"), "{err}");
}

#[tokio::test]
async fn malformed_answers_are_internal() {
    for reply in [
        Reply::text(200, "<html>gateway</html>"),
        Reply::json(200, json!({"scores": [1.0, 2.0, 3.0]})),
        Reply::json(
            200,
            json!([{"index": 0, "score": 1}, {"index": 1, "score": 2}, {"index": 1, "score": 3}]),
        ),
        Reply::json(
            200,
            json!([{"index": 0, "score": 1}, {"index": 1, "score": 2}, {"index": 3, "score": 3}]),
        ),
        Reply::text(
            200,
            r#"[{"index":0,"score":1},{"index":1,"score":2},{"index":2,"score":1e999}]"#,
        ),
    ] {
        let server = FakeServer::start(move |_, _| reply.clone()).await;
        let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
        let err = reranker
            .rerank(QUERY, &sample())
            .await
            .expect_err("malformed");
        assert_eq!(err.kind(), ErrorKind::Internal, "{err}");
    }
}

#[tokio::test]
async fn slow_service_times_out_without_retry() {
    let server = FakeServer::start(|_, r| tei(r).after(Duration::from_secs(3))).await;
    let reranker = HttpReranker::new(HttpRerankerConfig {
        timeout: Duration::from_millis(150),
        ..config(server.url("/rerank"))
    })
    .expect("reranker");
    let err = reranker
        .rerank(QUERY, &sample())
        .await
        .expect_err("timeout");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(server.calls(), 1);
}

#[tokio::test]
async fn server_errors_are_unavailable_without_retry() {
    for status in [500, 503, 429] {
        let server = FakeServer::start(move |_, _| {
            Reply::json(status, json!({"error": "model overloaded"}))
        })
        .await;
        let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
        let err = reranker.rerank(QUERY, &sample()).await.expect_err("error");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{status}: {err}");
        assert!(err.to_string().contains("model overloaded"), "{err}");
        assert_eq!(server.calls(), 1, "no retry after {status}");
    }
}

#[tokio::test]
async fn rejected_request_is_invalid_input() {
    let server = FakeServer::start(|_, _| {
        Reply::json(
            413,
            json!({"error": "batch size 3 > maximum allowed batch size 2"}),
        )
    })
    .await;
    let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
    let err = reranker.rerank(QUERY, &sample()).await.expect_err("413");
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(
        err.to_string().contains("maximum allowed batch size"),
        "{err}"
    );
}

#[tokio::test]
async fn unreachable_service_is_unavailable() {
    let reranker = HttpReranker::new(config(closed_port_url("/rerank").await)).expect("reranker");
    let err = reranker
        .rerank(QUERY, &sample())
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
}

#[tokio::test]
async fn no_passages_send_no_request_and_blank_queries_none_either() {
    let server = FakeServer::start(|_, r| tei(r)).await;
    let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
    assert!(reranker.rerank(QUERY, &[]).await.expect("empty").is_empty());
    for blank in ["", "  \n"] {
        let err = reranker.rerank(blank, &sample()).await.expect_err("blank");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
    assert_eq!(server.calls(), 0);
}

#[tokio::test]
async fn probability_is_the_sigmoid_of_the_logit() {
    let logits = [-30.0, -2.5, 0.0, 0.75, 12.0];
    let server = FakeServer::start(move |_, _| {
        let results: Vec<Value> = logits
            .iter()
            .enumerate()
            .rev()
            .map(|(index, score)| json!({"index": index, "score": score}))
            .collect();
        Reply::json(200, Value::Array(results))
    })
    .await;
    let reranker = HttpReranker::new(config(server.url("/rerank"))).expect("reranker");
    let passages = strings(&["a", "b", "c", "d", "e"]);
    let scores = reranker.rerank(QUERY, &passages).await.expect("rerank");
    for (score, logit) in scores.iter().zip(logits) {
        assert_eq!(*score, RerankScore::from_logit(logit as f32));
        assert!(close(score.probability, sigmoid(logit)), "{score:?}");
    }
}
