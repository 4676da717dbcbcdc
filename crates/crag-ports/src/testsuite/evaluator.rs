//! The relevance-evaluator contract.

use crag_core::{EvalDocument, Query, Verdict};

use crate::RelevanceEvaluator;

/// A query and three documents, the first on topic, the last unrelated.
pub fn sample_evaluation_input() -> (Query, Vec<EvalDocument>) {
    let query = Query::new("How does vitamin D affect bone density?").expect("query");
    let docs = [
        (
            "vitamin.md#0",
            "Vitamin D deficiency lowers bone density in older adults and raises fracture risk.",
            0.9,
        ),
        (
            "calcium.md#0",
            "Calcium absorption in the gut needs vitamin D; dairy is a common source.",
            0.7,
        ),
        (
            "sail.md#0",
            "Sailing upwind needs a close-hauled course and a well-trimmed jib.",
            0.1,
        ),
    ]
    .into_iter()
    .map(|(id, text, similarity)| EvalDocument::new(id, id, text, similarity))
    .collect();
    (query, docs)
}

/// Runs the relevance-evaluator contract: an empty list is judged incorrect; otherwise one
/// score slot per document, no reason slots or one per document (each short and trimmed), every
/// score (aggregate, per document, per criterion) finite and in
/// [0, 1], and the same input judged the same way twice.
pub async fn relevance_evaluator_suite(evaluator: &dyn RelevanceEvaluator) {
    assert!(!evaluator.name().is_empty(), "an evaluator has a name");
    let (query, docs) = sample_evaluation_input();

    let empty = evaluator
        .evaluate(&query, &[])
        .await
        .expect("an empty list is judged, not an error");
    assert_eq!(empty.verdict, Verdict::Incorrect, "nothing retrieved");
    assert!(empty.document_scores.is_empty());

    let ev = evaluator.evaluate(&query, &docs).await.expect("evaluate");
    let unit = |x: f32| x.is_finite() && (0.0..=1.0).contains(&x);
    assert!(unit(ev.score), "aggregate score {}", ev.score);
    assert_eq!(
        ev.document_scores.len(),
        docs.len(),
        "one score slot per document, in order"
    );
    assert!(
        ev.document_scores.iter().flatten().all(|s| unit(*s)),
        "document scores in [0, 1]: {:?}",
        ev.document_scores
    );
    assert!(
        ev.document_reasons.is_empty() || ev.document_reasons.len() == docs.len(),
        "no reason slots or one per document: {:?}",
        ev.document_reasons
    );
    assert!(
        ev.document_reasons.iter().flatten().all(|r| {
            !r.is_empty()
                && r.trim() == r
                && r.chars().count() <= crag_core::MAX_DOCUMENT_REASON_CHARS
        }),
        "document reasons are short and trimmed: {:?}",
        ev.document_reasons
    );
    assert!(
        ev.criteria.iter().all(|c| unit(c.score)),
        "criterion scores in [0, 1]: {:?}",
        ev.criteria
    );
    assert!(
        !ev.reasoning.trim().is_empty(),
        "a verdict gives its reasoning"
    );

    let again = evaluator
        .evaluate(&query, &docs)
        .await
        .expect("evaluate again");
    assert_eq!(again.verdict, ev.verdict, "same input, same verdict");
    assert_eq!(again.score, ev.score, "same input, same score");
    assert_eq!(again.document_scores, ev.document_scores);
}
