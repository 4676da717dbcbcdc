//! `HttpEvaluator` against a fake evaluation service.

use std::time::Duration;

use crag_core::{EvalDocument, Query, Verdict};
use crag_llm::{HttpEvaluator, HttpEvaluatorConfig};
use crag_ports::{ErrorKind, RelevanceEvaluator};
use serde_json::json;
use url::Url;

use crate::support::{FakeServer, Recorded, Reply};

const QUERY: &str = "how does the borrow checker work";

fn config(url: Url) -> HttpEvaluatorConfig {
    HttpEvaluatorConfig {
        timeout: Duration::from_secs(5),
        ..HttpEvaluatorConfig::new(url)
    }
}

fn doc(id: &str, text: &str) -> EvalDocument {
    EvalDocument::new(id, format!("fixtures/{id}"), text, 0.5)
}

fn docs() -> Vec<EvalDocument> {
    vec![
        doc(
            "rust.md#0",
            "The borrow checker rejects dangling references.",
        ),
        doc("bread.md#0", "Sourdough bread needs a lively starter."),
        doc("rust.md#1", "Ownership makes Rust memory safe."),
    ]
}

fn query() -> Query {
    Query::new(QUERY).expect("query")
}

/// The overall request is the one whose context joins several documents.
fn is_overall(r: &Recorded) -> bool {
    r.field("context").contains("\n\n")
}

/// Scores each document by its text and the whole context 0.8 with verdict `correct`.
fn scripted(r: &Recorded) -> Reply {
    let context = r.field("context");
    if is_overall(r) {
        return Reply::json(
            200,
            json!({"score": 0.8, "verdict": "correct", "reasoning": "the first document answers"}),
        );
    }
    if context.contains("borrow checker") {
        return Reply::json(
            200,
            json!({"score": 0.9, "verdict": "relevant", "reasoning": "  Defines the\nborrow checker. "}),
        );
    }
    let score = if context.contains("Sourdough") {
        0.1
    } else {
        0.6
    };
    Reply::json(200, json!({"score": score, "verdict": "relevant"}))
}

fn close(a: Option<f32>, b: f32) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-6)
}

#[tokio::test]
async fn happy_path_scores_every_document() {
    let server = FakeServer::start(|_, r| scripted(r)).await;
    let evaluator = HttpEvaluator::new(HttpEvaluatorConfig {
        api_key: Some("eval-key".into()),
        ..config(server.url("/evaluate"))
    })
    .expect("evaluator");
    assert_eq!(evaluator.name(), "http");

    let evaluation = evaluator
        .evaluate(&query(), &docs())
        .await
        .expect("evaluation");
    assert_eq!(evaluation.verdict, Verdict::Correct);
    assert!((evaluation.score - 0.8).abs() < 1e-6);
    assert_eq!(evaluation.document_scores.len(), 3);
    assert!(close(evaluation.document_scores[0], 0.9), "{evaluation:?}");
    assert!(close(evaluation.document_scores[1], 0.1), "{evaluation:?}");
    assert!(close(evaluation.document_scores[2], 0.6), "{evaluation:?}");
    assert_eq!(evaluation.reasoning, "the first document answers");
    assert_eq!(
        evaluation.document_reasons,
        [Some("Defines the borrow checker.".to_owned()), None, None],
        "the service's reasoning of a document is its reason, made one line"
    );
    assert!(evaluation.issues.is_empty(), "{:?}", evaluation.issues);

    let requests = server.requests();
    assert_eq!(requests.len(), 4, "one per document plus the overall one");
    for r in &requests {
        assert_eq!(r.path, "/evaluate");
        assert_eq!(r.field("query"), QUERY);
        assert_eq!(
            r.header("authorization").as_deref(),
            Some("Bearer eval-key")
        );
    }
    let overall: Vec<&Recorded> = requests.iter().filter(|r| is_overall(r)).collect();
    assert_eq!(overall.len(), 1);
    let expected: Vec<String> = docs().into_iter().map(|d| d.text).collect();
    assert_eq!(overall[0].field("context"), expected.join("\n\n"));
}

#[tokio::test]
async fn only_top_n_documents_are_sent_cut_on_char_boundaries() {
    let server = FakeServer::start(|_, r| {
        if is_overall(r) {
            Reply::json(200, json!({"score": 0.5, "verdict": "ambiguous"}))
        } else {
            Reply::json(200, json!({"score": 0.4}))
        }
    })
    .await;
    let evaluator = HttpEvaluator::new(HttpEvaluatorConfig {
        top_n: 2,
        max_chars_per_document: 5,
        ..config(server.url("/evaluate"))
    })
    .expect("evaluator");
    let documents = vec![
        doc("a", "abcdefghij"),
        doc("b", "日本語のテキスト"),
        doc("c", "never sent"),
        doc("d", "never sent either"),
    ];
    let evaluation = evaluator
        .evaluate(&query(), &documents)
        .await
        .expect("evaluation");
    assert_eq!(evaluation.verdict, Verdict::Ambiguous);
    assert_eq!(evaluation.document_scores.len(), 4);
    assert!(close(evaluation.document_scores[0], 0.4));
    assert!(close(evaluation.document_scores[1], 0.4));
    assert_eq!(evaluation.document_scores[2..], [None, None]);

    let mut contexts: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.field("context"))
        .collect();
    contexts.sort();
    assert_eq!(contexts, ["abcde", "abcde\n\n日本語のテ", "日本語のテ"]);
}

#[tokio::test]
async fn missing_verdict_is_derived_from_thresholds() {
    for (score, verdict) in [
        (0.95, Verdict::Correct),
        (0.7, Verdict::Correct),
        (0.5, Verdict::Ambiguous),
        (0.3, Verdict::Incorrect),
        (0.05, Verdict::Incorrect),
    ] {
        let server = FakeServer::start(move |_, _| Reply::json(200, json!({"score": score}))).await;
        let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
        // A single document: its context is the whole context, so one request serves both.
        let documents = vec![doc(
            "only",
            "The borrow checker rejects dangling references.",
        )];
        let evaluation = evaluator
            .evaluate(&query(), &documents)
            .await
            .expect("evaluation");
        assert_eq!(evaluation.verdict, verdict, "score {score}");
        assert!(close(evaluation.document_scores[0], score as f32));
        assert_eq!(evaluation.document_reason(0), None, "no reasoning sent");
        assert!(
            evaluation.reasoning.contains("derived"),
            "{}",
            evaluation.reasoning
        );
        assert_eq!(server.calls(), 1);
    }
}

#[tokio::test]
async fn custom_thresholds_apply() {
    let server = FakeServer::start(|_, _| Reply::json(200, json!({"score": 0.6}))).await;
    let evaluator = HttpEvaluator::new(HttpEvaluatorConfig {
        correct_threshold: 0.55,
        incorrect_threshold: 0.2,
        ..config(server.url("/evaluate"))
    })
    .expect("evaluator");
    let evaluation = evaluator
        .evaluate(&query(), &docs())
        .await
        .expect("evaluation");
    assert_eq!(evaluation.verdict, Verdict::Correct);
}

#[tokio::test]
async fn service_error_is_unavailable() {
    let server =
        FakeServer::start(|_, _| Reply::json(500, json!({"error": {"message": "model crashed"}})))
            .await;
    let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
    let err = evaluator
        .evaluate(&query(), &docs())
        .await
        .expect_err("500");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("model crashed"), "{err}");
}

#[tokio::test]
async fn slow_service_times_out() {
    let server = FakeServer::start(|_, r| scripted(r).after(Duration::from_secs(3))).await;
    let evaluator = HttpEvaluator::new(HttpEvaluatorConfig {
        timeout: Duration::from_millis(150),
        ..config(server.url("/evaluate"))
    })
    .expect("evaluator");
    let err = evaluator
        .evaluate(&query(), &docs())
        .await
        .expect_err("timeout");
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
}

#[tokio::test]
async fn unparseable_answers_are_internal() {
    for reply in [
        Reply::text(200, "<html>gateway</html>"),
        Reply::json(200, json!({"verdict": "correct"})),
        Reply::json(200, json!({"score": 1.7, "verdict": "correct"})),
        Reply::json(200, json!({"score": -0.2})),
        Reply::json(200, json!({"score": 0.5, "verdict": "perhaps"})),
    ] {
        let server = FakeServer::start(move |_, _| reply.clone()).await;
        let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
        let err = evaluator
            .evaluate(&query(), &docs())
            .await
            .expect_err("garbage");
        assert_eq!(err.kind(), ErrorKind::Internal, "{err}");
    }
}

#[tokio::test]
async fn one_failed_document_leaves_a_gap_and_an_issue() {
    let server = FakeServer::start(|_, r| {
        if r.field("context").contains("Sourdough") && !is_overall(r) {
            Reply::text(500, "boom")
        } else {
            scripted(r)
        }
    })
    .await;
    let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
    let evaluation = evaluator
        .evaluate(&query(), &docs())
        .await
        .expect("overall still ok");
    assert_eq!(evaluation.verdict, Verdict::Correct);
    assert!(close(evaluation.document_scores[0], 0.9));
    assert_eq!(evaluation.document_scores[1], None);
    assert!(close(evaluation.document_scores[2], 0.6));
    assert_eq!(evaluation.issues.len(), 1, "{:?}", evaluation.issues);
    assert!(
        evaluation.issues[0].contains("bread.md#0"),
        "{:?}",
        evaluation.issues
    );
    assert!(
        evaluation.issues[0].contains("500"),
        "{:?}",
        evaluation.issues
    );
}

#[tokio::test]
async fn empty_documents_are_incorrect_without_a_request() {
    let server = FakeServer::start(|_, r| scripted(r)).await;
    let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
    let evaluation = evaluator.evaluate(&query(), &[]).await.expect("evaluation");
    assert_eq!(evaluation.verdict, Verdict::Incorrect);
    assert_eq!(evaluation.score, 0.0);
    assert!(evaluation.document_scores.is_empty());
    assert_eq!(server.calls(), 0);
}

#[tokio::test]
async fn requests_run_concurrently() {
    let server = FakeServer::start(|_, r| scripted(r).after(Duration::from_millis(300))).await;
    let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
    evaluator
        .evaluate(&query(), &docs())
        .await
        .expect("evaluation");
    assert_eq!(server.calls(), 4);
    assert!(server.max_in_flight() > 1, "requests were sent one by one");
}

/// The words of `text` that carry meaning: lowercased runs of letters and digits, of three
/// characters or more, without the question words.
fn terms(text: &str) -> std::collections::BTreeSet<String> {
    const STOP: [&str; 8] = ["how", "does", "what", "the", "and", "why", "which", "when"];
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(&w.as_str()))
        .collect()
}

/// An evaluation service that judges what it is sent: the score is the share of the query's
/// terms the context contains, the reasoning names them, the verdict is left to the client.
fn term_overlap(r: &Recorded) -> Reply {
    let (query, context) = (terms(&r.field("query")), terms(&r.field("context")));
    if query.is_empty() {
        return Reply::json(400, json!({"error": "no query terms"}));
    }
    let found: Vec<&String> = query.intersection(&context).collect();
    let score = found.len() as f64 / query.len() as f64;
    Reply::json(
        200,
        json!({"score": score, "reasoning": format!("{} of {} query terms in the context: {found:?}", found.len(), query.len())}),
    )
}

#[tokio::test]
async fn passes_the_relevance_evaluator_suite() {
    let server = FakeServer::start(|_, r| term_overlap(r)).await;
    let evaluator = HttpEvaluator::new(config(server.url("/evaluate"))).expect("evaluator");
    crag_ports::testsuite::relevance_evaluator_suite(&evaluator).await;
    // The suite asks three times: the empty list is judged without the service, each of the
    // two others sends the joined context and each of the three documents.
    assert_eq!(server.calls(), 8, "{:?}", server.requests());

    // The scores are the service's reading of what it was sent, in the documents' order:
    // "vitamin", "bone" and "density" of four query terms in the first document, "vitamin"
    // in the second, none in the third, the first's three in the joined context.
    let (query, docs) = crag_ports::testsuite::sample_evaluation_input();
    let evaluation = evaluator.evaluate(&query, &docs).await.expect("evaluation");
    assert!(close(evaluation.document_scores[0], 0.75), "{evaluation:?}");
    assert!(close(evaluation.document_scores[1], 0.25), "{evaluation:?}");
    assert!(close(evaluation.document_scores[2], 0.0), "{evaluation:?}");
    assert!((evaluation.score - 0.75).abs() < 1e-6, "{evaluation:?}");
    assert_eq!(evaluation.verdict, Verdict::Correct, "derived: 0.75 >= 0.7");
    assert!(
        evaluation.reasoning.starts_with("3 of 4 query terms"),
        "{}",
        evaluation.reasoning
    );
}
