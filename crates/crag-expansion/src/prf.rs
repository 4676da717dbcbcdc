//! Pseudo-relevance feedback without an LLM: RM3 term feedback for the keyword leg and a
//! Rocchio blend for the vector leg. The caller tokenises (with the analyzer of the keyword
//! index, so the terms are index terms) and supplies the feedback documents; nothing here
//! does IO.

use std::collections::HashMap;

use crag_core::WeightedTerm;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Parameters of pseudo-relevance feedback.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PrfConfig {
    /// Top documents of the first retrieval used as feedback (1..=100).
    pub feedback_docs: usize,
    /// Expansion terms kept from the feedback model.
    pub feedback_terms: usize,
    /// Weight of the original query in the interpolated query model, in [0, 1] (RM3's
    /// lambda); the feedback terms share the rest.
    pub original_weight: f32,
    /// Weight of the feedback documents' mean embedding added to the query embedding, in
    /// [0, 1] (Rocchio's beta, with the query at 1); 0 keeps the query embedding as it is.
    pub rocchio_weight: f32,
}

impl Default for PrfConfig {
    fn default() -> Self {
        Self {
            feedback_docs: 5,
            feedback_terms: 10,
            original_weight: 0.8,
            rocchio_weight: 0.5,
        }
    }
}

impl PrfConfig {
    /// Checks ranges; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.feedback_docs == 0 || self.feedback_docs > 100 {
            return Err("feedback_docs must be within 1..=100".into());
        }
        if self.feedback_terms > 100 {
            return Err("feedback_terms must be at most 100".into());
        }
        if !(0.0..=1.0).contains(&self.original_weight) {
            return Err("original_weight must be within [0, 1]".into());
        }
        if !(0.0..=1.0).contains(&self.rocchio_weight) {
            return Err("rocchio_weight must be within [0, 1]".into());
        }
        Ok(())
    }
}

/// RM3: the query model interpolated with a relevance model estimated from feedback
/// documents. `query` and each document are index terms in order (duplicates kept);
/// `doc_weights` weigh the documents (e.g. their retrieval scores; non-positive or
/// non-finite weights count as 0, all-zero weights as uniform). Returns the terms with
/// positive weight, heaviest first, ties by term, weights summing to 1. An empty query
/// gives no terms.
pub fn rm3(
    query: &[String],
    documents: &[Vec<String>],
    doc_weights: &[f32],
    config: &PrfConfig,
) -> Vec<WeightedTerm> {
    if query.is_empty() {
        return Vec::new();
    }
    let mut model: HashMap<&str, f32> = HashMap::new();
    let q_len = query.len() as f32;
    for t in query {
        *model.entry(t.as_str()).or_default() += config.original_weight / q_len;
    }
    let docs: Vec<(&Vec<String>, f32)> = documents
        .iter()
        .take(config.feedback_docs)
        .zip(doc_weights.iter().copied().chain(std::iter::repeat(0.0)))
        .filter(|(d, _)| !d.is_empty())
        .map(|(d, w)| (d, if w.is_finite() && w > 0.0 { w } else { 0.0 }))
        .collect();
    let total: f32 = docs.iter().map(|(_, w)| w).sum();
    let uniform = total <= 0.0;
    let mut relevance: HashMap<&str, f32> = HashMap::new();
    for (doc, w) in &docs {
        let w = if uniform {
            1.0 / docs.len() as f32
        } else {
            w / total
        };
        let len = doc.len() as f32;
        for t in doc.iter() {
            *relevance.entry(t.as_str()).or_default() += w / len;
        }
    }
    let mut feedback: Vec<(&str, f32)> = relevance.into_iter().collect();
    feedback.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    feedback.truncate(config.feedback_terms);
    let mass: f32 = feedback.iter().map(|(_, p)| p).sum();
    if mass > 0.0 {
        for (t, p) in feedback {
            *model.entry(t).or_default() += (1.0 - config.original_weight) * p / mass;
        }
    }
    let sum: f32 = model.values().sum();
    let mut terms: Vec<WeightedTerm> = model
        .into_iter()
        .filter(|(_, w)| *w > 0.0)
        .map(|(t, w)| WeightedTerm {
            term: t.to_owned(),
            weight: w / sum,
        })
        .collect();
    terms.sort_by(|a, b| b.weight.total_cmp(&a.weight).then(a.term.cmp(&b.term)));
    terms
}

/// Rocchio: `query + beta * mean(feedback)`, L2-normalised. Feedback vectors of another
/// dimension are ignored; with none left, or `beta` 0, the query is returned unchanged.
pub fn rocchio(query: &[f32], feedback: &[Vec<f32>], beta: f32) -> Vec<f32> {
    let usable: Vec<&Vec<f32>> = feedback.iter().filter(|v| v.len() == query.len()).collect();
    if usable.is_empty() || beta <= 0.0 || !beta.is_finite() {
        return query.to_vec();
    }
    let n = usable.len() as f32;
    let mut out = query.to_vec();
    for v in usable {
        for (o, x) in out.iter_mut().zip(v.iter()) {
            *o += beta * x / n;
        }
    }
    let norm = out.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        out.iter_mut().for_each(|x| *x /= norm);
        out
    } else {
        query.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn feedback_terms_join_the_query_with_most_weight_on_the_query() {
        let q = words("vitamin bone");
        let docs = vec![
            words("vitamin calcium bone density calcium"),
            words("calcium bone fracture"),
        ];
        let c = PrfConfig {
            feedback_terms: 2,
            ..PrfConfig::default()
        };
        let terms = rm3(&q, &docs, &[1.0, 1.0], &c);
        let names: Vec<&str> = terms.iter().map(|t| t.term.as_str()).collect();
        // bone (query + feedback), vitamin (query), then calcium (feedback only).
        assert_eq!(names, ["bone", "vitamin", "calcium"]);
        let sum: f32 = terms.iter().map(|t| t.weight).sum();
        assert!((sum - 1.0).abs() < 1e-5);
        let calcium = terms.iter().find(|t| t.term == "calcium").unwrap().weight;
        assert!(
            calcium < 0.2,
            "feedback terms share only 1 - 0.8: {calcium}"
        );
    }

    #[test]
    fn only_the_top_feedback_documents_count() {
        let q = words("a");
        let docs = vec![words("x"), words("y")];
        let c = PrfConfig {
            feedback_docs: 1,
            ..PrfConfig::default()
        };
        let terms = rm3(&q, &docs, &[], &c);
        assert!(terms.iter().any(|t| t.term == "x"));
        assert!(!terms.iter().any(|t| t.term == "y"));
    }

    #[test]
    fn heavier_documents_weigh_more() {
        let q = words("q");
        let docs = vec![words("light"), words("heavy")];
        let terms = rm3(&q, &docs, &[0.1, 0.9], &PrfConfig::default());
        let w = |t: &str| terms.iter().find(|x| x.term == t).unwrap().weight;
        assert!(w("heavy") > w("light"));
    }

    #[test]
    fn full_query_weight_keeps_the_query_alone() {
        let c = PrfConfig {
            original_weight: 1.0,
            ..PrfConfig::default()
        };
        let terms = rm3(&words("a b"), &[words("c d")], &[1.0], &c);
        let names: Vec<&str> = terms.iter().map(|t| t.term.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn rocchio_moves_the_query_towards_the_feedback() {
        let q = vec![1.0, 0.0];
        let out = rocchio(&q, &[vec![0.0, 1.0]], 0.5);
        assert!(out[1] > 0.0 && out[0] > out[1]);
        assert!((out.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        assert_eq!(rocchio(&q, &[vec![0.0, 1.0]], 0.0), q);
        assert_eq!(rocchio(&q, &[vec![1.0]], 0.5), q, "wrong dimension ignored");
    }

    proptest! {
        #[test]
        fn rm3_weights_are_a_distribution(
            q in proptest::collection::vec("[a-e]", 0..5),
            docs in proptest::collection::vec(proptest::collection::vec("[a-h]", 0..8), 0..6),
            weights in proptest::collection::vec(-1.0f32..2.0, 0..6),
        ) {
            let terms = rm3(&q, &docs, &weights, &PrfConfig::default());
            if q.is_empty() {
                prop_assert!(terms.is_empty());
            } else {
                let sum: f32 = terms.iter().map(|t| t.weight).sum();
                prop_assert!((sum - 1.0).abs() < 1e-4);
                prop_assert!(terms.iter().all(|t| t.weight > 0.0 && t.weight.is_finite()));
                for t in &q {
                    prop_assert!(terms.iter().any(|x| &x.term == t), "query term {t} kept");
                }
            }
        }
    }
}
