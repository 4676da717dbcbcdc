//! The features the calibrated evaluator judges with: per query (the heuristic's four criteria
//! plus fusion and score-distribution signals) and per document.
//!
//! A value is `None` when its input is missing (documents without retrieval signals, no
//! reranker); the model then uses the training mean, i.e. the feature contributes nothing.
//! Signals that are simply *not there* for a document that did come from the indexes (not
//! returned by one leg) are values, not absences: a leg's reciprocal rank is then 0.

use crag_core::EvalDocument;

use crate::heuristic::{Assessment, HeuristicEvaluator};
use crate::stats::unit;

/// Names of the query features, in the order [`extract`] produces them.
pub const QUERY_FEATURES: &[&str] = &[
    // The heuristic evaluator's criteria.
    "keyword_overlap",
    "semantic_coherence",
    "length_adequacy",
    "source_diversity",
    // Fusion.
    "top_normalized_score",
    "normalized_score_gap",
    "leg_agreement_top5",
    "leg_consensus",
    // Keyword leg.
    "keyword_top_score",
    "keyword_top_score_per_term",
    "keyword_score_gap",
    // Vector leg.
    "top_similarity",
    "mean_similarity",
    "similarity_gap",
    // Query-term coverage.
    "top_term_coverage",
    "first_term_coverage",
    "query_terms",
    // Cross-encoder, when it ran.
    "rerank_present",
    "rerank_max",
];

/// Names of the document features, in the order [`extract`] produces them.
pub const DOCUMENT_FEATURES: &[&str] = &[
    "similarity",
    "similarity_below_top",
    "keyword_score",
    "keyword_score_share",
    "keyword_reciprocal_rank",
    "vector_reciprocal_rank",
    "normalized_score",
    "position_reciprocal_rank",
    "term_coverage",
    "rerank_present",
    "rerank_probability",
];

/// Feature values of one result list.
#[derive(Debug, Clone, PartialEq)]
pub struct Features {
    /// One value per name of [`QUERY_FEATURES`].
    pub query: Vec<Option<f64>>,
    /// Per document, one value per name of [`DOCUMENT_FEATURES`].
    pub documents: Vec<Vec<Option<f64>>>,
    /// The heuristic's view of the list (criteria, aggregate, issues).
    pub(crate) assessment: Assessment,
}

/// What one document's retrieval signals give, sanitised.
struct Signals {
    similarity: f64,
    /// Whether the document came with any retrieval signal (it came from the indexes).
    retrieved: bool,
    keyword_score: Option<f64>,
    keyword_rank: Option<usize>,
    vector_rank: Option<usize>,
    normalized: Option<f64>,
    rerank: Option<f64>,
    coverage: f64,
}

fn finite(x: f32) -> Option<f64> {
    x.is_finite().then_some(f64::from(x))
}

/// Computes the query and document features of `documents` (best first) for `query`, using
/// `heuristic` for the four criteria.
pub fn extract(
    heuristic: &HeuristicEvaluator,
    query: &str,
    documents: &[EvalDocument],
) -> Features {
    let assessment = heuristic.assess(query, documents);
    let signals = signals(documents, &assessment);
    let any_retrieved = signals.iter().any(|s| s.retrieved);
    let when_retrieved = |value: f64| any_retrieved.then_some(value);

    let similarities: Vec<f64> = signals.iter().map(|s| s.similarity).collect();
    let top_similarity = max(&similarities);
    let keyword_scores: Vec<f64> = signals.iter().filter_map(|s| s.keyword_score).collect();
    let top_keyword = max(&keyword_scores).unwrap_or(0.0);
    let normalized: Vec<f64> = signals.iter().filter_map(|s| s.normalized).collect();
    let reranks: Vec<f64> = signals.iter().filter_map(|s| s.rerank).collect();
    let terms = assessment.terms as f64;
    let criterion = |i: usize| assessment.criteria.get(i).map(|c| f64::from(c.score));

    let in_both_top5 = signals
        .iter()
        .filter(|s| s.keyword_rank.is_some_and(|r| r <= 5) && s.vector_rank.is_some_and(|r| r <= 5))
        .count();
    let consensus = signals
        .iter()
        .filter_map(|s| Some(s.keyword_rank?.max(s.vector_rank?)))
        .min()
        .map_or(0.0, |r| 1.0 / r as f64);

    let query_values = vec![
        criterion(0),
        criterion(1),
        criterion(2),
        criterion(3),
        max(&normalized),
        (!normalized.is_empty()).then(|| gap(&normalized)),
        when_retrieved(in_both_top5 as f64 / 5.0),
        when_retrieved(consensus),
        when_retrieved(top_keyword),
        when_retrieved(top_keyword / terms.max(1.0)),
        when_retrieved(if top_keyword > 0.0 {
            gap(&keyword_scores) / top_keyword
        } else {
            0.0
        }),
        top_similarity,
        mean(&similarities),
        (!similarities.is_empty()).then(|| gap(&similarities)),
        max(&signals.iter().map(|s| s.coverage).collect::<Vec<_>>()),
        signals.first().map(|s| s.coverage),
        Some((1.0 + terms).ln()),
        Some(f64::from(u8::from(!reranks.is_empty()))),
        max(&reranks),
    ];
    debug_assert_eq!(query_values.len(), QUERY_FEATURES.len());

    let document_values = document_rows(&signals, top_similarity, top_keyword);

    Features {
        query: query_values,
        documents: document_values,
        assessment,
    }
}

/// Each document's signals, from its retrieval and the heuristic's `assessment`.
fn signals(documents: &[EvalDocument], assessment: &Assessment) -> Vec<Signals> {
    documents
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let r = &d.retrieval;
            Signals {
                similarity: f64::from(unit(d.similarity)),
                retrieved: r.keyword.is_some()
                    || r.vector.is_some()
                    || r.normalized_score.is_some()
                    || r.fused_score.is_some(),
                keyword_score: r.keyword.and_then(|k| finite(k.score)).map(|s| s.max(0.0)),
                keyword_rank: r.keyword.map(|k| k.rank.max(1)),
                vector_rank: r.vector.map(|v| v.rank.max(1)),
                normalized: r
                    .normalized_score
                    .and_then(finite)
                    .map(|s| s.clamp(0.0, 1.0)),
                rerank: r
                    .rerank_probability
                    .and_then(finite)
                    .map(|s| s.clamp(0.0, 1.0)),
                coverage: f64::from(assessment.document_overlap.get(i).copied().unwrap_or(0.0)),
            }
        })
        .collect()
}

/// One row of [`DOCUMENT_FEATURES`] per document, given the list's top similarity and top
/// keyword score.
fn document_rows(
    signals: &[Signals],
    top_similarity: Option<f64>,
    top_keyword: f64,
) -> Vec<Vec<Option<f64>>> {
    signals
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let known = |value: f64| s.retrieved.then_some(value);
            let row = vec![
                Some(s.similarity),
                top_similarity.map(|top| top - s.similarity),
                known(s.keyword_score.unwrap_or(0.0)),
                known(if top_keyword > 0.0 {
                    s.keyword_score.unwrap_or(0.0) / top_keyword
                } else {
                    0.0
                }),
                known(s.keyword_rank.map_or(0.0, |r| 1.0 / r as f64)),
                known(s.vector_rank.map_or(0.0, |r| 1.0 / r as f64)),
                s.normalized,
                Some(1.0 / (i as f64 + 1.0)),
                Some(s.coverage),
                Some(f64::from(u8::from(s.rerank.is_some()))),
                s.rerank,
            ];
            debug_assert_eq!(row.len(), DOCUMENT_FEATURES.len());
            row
        })
        .collect()
}

fn max(values: &[f64]) -> Option<f64> {
    values.iter().copied().reduce(f64::max)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The best value minus the second best (the best itself when there is one value).
fn gap(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    match sorted.as_slice() {
        [first, second, ..] => first - second,
        [first] => *first,
        [] => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HeuristicConfig;
    use crag_core::{LegHit, RetrievalSignals};

    fn heuristic() -> HeuristicEvaluator {
        HeuristicEvaluator::new(HeuristicConfig::default()).unwrap()
    }

    fn leg(rank: usize, score: f32) -> Option<LegHit> {
        Some(LegHit { rank, score })
    }

    fn value(features: &[Option<f64>], names: &[&str], name: &str) -> Option<f64> {
        features[names.iter().position(|n| *n == name).unwrap()]
    }

    #[test]
    fn names_are_unique() {
        for names in [QUERY_FEATURES, DOCUMENT_FEATURES] {
            let mut sorted = names.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len());
        }
    }

    #[test]
    fn fusion_features_follow_the_signals() {
        let documents = [
            EvalDocument::new("a#0", "a", "vitamin d immune response", 0.8).with_retrieval(
                RetrievalSignals {
                    keyword: leg(2, 10.0),
                    vector: leg(1, 0.9),
                    fused_score: Some(0.032),
                    normalized_score: Some(0.98),
                    rerank_probability: None,
                },
            ),
            EvalDocument::new("b#0", "b", "rocket launch", 0.5).with_retrieval(RetrievalSignals {
                keyword: leg(1, 12.0),
                vector: None,
                fused_score: Some(0.016),
                normalized_score: Some(0.5),
                rerank_probability: None,
            }),
        ];
        let f = extract(&heuristic(), "vitamin immune", &documents);
        let q = |name| value(&f.query, QUERY_FEATURES, name);
        assert_eq!(q("keyword_top_score"), Some(12.0));
        assert_eq!(q("keyword_top_score_per_term"), Some(6.0));
        assert!((q("keyword_score_gap").unwrap() - 2.0 / 12.0).abs() < 1e-9);
        assert!((q("normalized_score_gap").unwrap() - 0.48).abs() < 1e-6);
        assert_eq!(q("leg_agreement_top5"), Some(0.2));
        assert_eq!(q("leg_consensus"), Some(0.5));
        assert!((q("top_similarity").unwrap() - 0.8).abs() < 1e-6);
        assert!((q("similarity_gap").unwrap() - 0.3).abs() < 1e-6);
        assert_eq!(q("top_term_coverage"), Some(1.0));
        assert_eq!(q("first_term_coverage"), Some(1.0));
        assert_eq!(q("rerank_present"), Some(0.0));
        assert_eq!(q("rerank_max"), None);

        let d = |i: usize, name| value(&f.documents[i], DOCUMENT_FEATURES, name);
        assert_eq!(d(1, "vector_reciprocal_rank"), Some(0.0));
        assert_eq!(d(1, "keyword_reciprocal_rank"), Some(1.0));
        assert!((d(0, "keyword_score_share").unwrap() - 10.0 / 12.0).abs() < 1e-9);
        assert_eq!(d(1, "position_reciprocal_rank"), Some(0.5));
        assert_eq!(d(1, "term_coverage"), Some(0.0));
        assert_eq!(d(0, "rerank_probability"), None);
    }

    #[test]
    fn documents_without_signals_leave_retrieval_features_absent() {
        let documents = [EvalDocument::new("a", "a", "python async patterns", 0.6)];
        let f = extract(&heuristic(), "python async", &documents);
        for name in ["top_normalized_score", "leg_consensus", "keyword_top_score"] {
            assert_eq!(value(&f.query, QUERY_FEATURES, name), None, "{name}");
        }
        assert!(value(&f.query, QUERY_FEATURES, "keyword_overlap").is_some());
        assert_eq!(
            value(&f.documents[0], DOCUMENT_FEATURES, "keyword_score"),
            None
        );
        assert_eq!(f.query.len(), QUERY_FEATURES.len());
        assert_eq!(f.documents[0].len(), DOCUMENT_FEATURES.len());
    }

    #[test]
    fn rerank_probabilities_are_used_when_present() {
        let documents: Vec<EvalDocument> = [0.2f32, 0.9]
            .iter()
            .map(|&p| {
                EvalDocument::new("a", "a", "text", 0.5).with_retrieval(RetrievalSignals {
                    rerank_probability: Some(p),
                    ..RetrievalSignals::default()
                })
            })
            .collect();
        let f = extract(&heuristic(), "text", &documents);
        assert_eq!(value(&f.query, QUERY_FEATURES, "rerank_present"), Some(1.0));
        assert!((value(&f.query, QUERY_FEATURES, "rerank_max").unwrap() - 0.9).abs() < 1e-6);
        assert_eq!(
            value(&f.documents[0], DOCUMENT_FEATURES, "rerank_present"),
            Some(1.0)
        );
    }
}
