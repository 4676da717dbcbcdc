//! Feedback reranking: pseudo-relevance feedback on the document side. The first results
//! of a retrieval are the best evidence of what the query is about (the cluster hypothesis:
//! relevant documents resemble each other), so each of the top candidates gains by its
//! embedding's similarity to the score-weighted centroid of the first few, and by its words'
//! (tf-idf within the candidates). No labels, no model call: the stored embeddings of the
//! candidates, their shown text and their fused scores. Pure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::candidate_terms::CandidateTerms;

/// Parameters of the feedback rerank.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FeedbackRerankConfig {
    /// Rerank the first retrieval's top `depth` candidates by their similarity to its first
    /// `feedback_docs` (`false`: the fused order as it is). Chosen on SciFact train and
    /// Cranfield ([benchmarks.md](benchmarks.md#feedback-rerank-issue-15-release-build-2026-11-26)).
    pub enabled: bool,
    /// Candidates reordered (2..=1000); the first retrieval fetches at least this many, and
    /// the results below stay in their order.
    pub depth: usize,
    /// Top candidates whose embeddings, weighted by their min-max normalised fused score,
    /// make the centroid (1..=`depth`).
    pub feedback_docs: usize,
    /// Weight of a candidate's cosine similarity to the centroid, added to its min-max
    /// normalised fused score, within [0, 10] (0: the fused order). 1.5 since documents are
    /// shown as the vector leg's chunk (chosen on SciFact train and Cranfield:
    /// [benchmarks.md](benchmarks.md), "The feedback rerank under whole documents").
    pub weight: f32,
    /// Weight of a candidate's similarity to the same first candidates in index terms
    /// (tf-idf over the reordered candidates, each shown chunk's title and text), added like
    /// `weight`'s, within [0, 10] (0: embeddings only). 2 chosen on SciFact train and
    /// Cranfield ([benchmarks.md](benchmarks.md), "The feedback rerank in words too").
    pub term_weight: f32,
}

impl Default for FeedbackRerankConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            depth: 30,
            feedback_docs: 2,
            weight: 1.5,
            term_weight: 2.0,
        }
    }
}

impl FeedbackRerankConfig {
    /// Checks ranges; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=1000).contains(&self.depth) {
            return Err("depth must be within 2..=1000".into());
        }
        if self.feedback_docs == 0 || self.feedback_docs > self.depth {
            return Err("feedback_docs must be within 1..=depth".into());
        }
        if !(0.0..=10.0).contains(&self.weight) {
            return Err("weight must be within [0, 10]".into());
        }
        if !(0.0..=10.0).contains(&self.term_weight) {
            return Err("term_weight must be within [0, 10]".into());
        }
        Ok(())
    }
}

/// The new order of candidates given their fused `scores` (best first, the retrieval's
/// order) and their embeddings (`vectors[i]` of candidate `i`): a permutation of
/// `0..scores.len()`. Each candidate scores its min-max normalised fused score plus `weight`
/// times its cosine similarity to the centroid of the first `feedback_docs` embeddings, each
/// weighted by its normalised score (the first weighs 1); ties keep the retrieval's order.
/// The order is unchanged when there are fewer than two candidates, when the lengths differ,
/// when an embedding's dimension differs from the first's, or when the centroid is zero.
pub fn feedback_order(
    scores: &[f32],
    vectors: &[Vec<f32>],
    feedback_docs: usize,
    weight: f32,
) -> Vec<usize> {
    feedback_order_with_terms(
        scores,
        vectors,
        &CandidateTerms::new(),
        feedback_docs,
        weight,
        0.0,
    )
}

/// [`feedback_order`] with a second similarity in index terms: `terms` holds each
/// candidate's analysed terms ([`CandidateTerms`], candidate `i` the `i`th pushed), and each
/// candidate also gains `term_weight` times the cosine of its tf-idf vector with the
/// score-weighted centroid of the first `feedback_docs` (`term_similarities`). `terms` of
/// another length than `scores` (e.g. empty) leaves the embeddings alone to decide.
pub fn feedback_order_with_terms(
    scores: &[f32],
    vectors: &[Vec<f32>],
    terms: &CandidateTerms,
    feedback_docs: usize,
    weight: f32,
    term_weight: f32,
) -> Vec<usize> {
    let n = scores.len();
    let unchanged: Vec<usize> = (0..n).collect();
    let dim = vectors.first().map_or(0, Vec::len);
    if n < 2
        || vectors.len() != n
        || dim == 0
        || vectors.iter().any(|v| v.len() != dim)
        || !weight.is_finite()
        || !term_weight.is_finite()
        || scores.iter().any(|s| !s.is_finite())
    {
        return unchanged;
    }
    let (lo, hi) = scores
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &s| {
            (lo.min(s), hi.max(s))
        });
    let normalised: Vec<f32> = scores
        .iter()
        .map(|&s| if hi > lo { (s - lo) / (hi - lo) } else { 1.0 })
        .collect();
    let mut centroid = vec![0.0f32; dim];
    for (v, w) in vectors.iter().zip(&normalised).take(feedback_docs.max(1)) {
        for (c, x) in centroid.iter_mut().zip(v) {
            *c += w * x;
        }
    }
    let norm = centroid.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm <= 0.0 || !norm.is_finite() {
        return unchanged;
    }
    let lexical = if terms.len() == n && term_weight > 0.0 {
        term_similarities(terms, &normalised, feedback_docs)
    } else {
        vec![0.0; n]
    };
    let combined: Vec<f32> = vectors
        .iter()
        .zip(&normalised)
        .zip(&lexical)
        .map(|((v, s), l)| s + weight * cosine(v, &centroid, norm) + term_weight * l)
        .collect();
    let mut order = unchanged;
    // Stable: equal scores keep the retrieval's order.
    order.sort_by(|&a, &b| combined[b].total_cmp(&combined[a]));
    order
}

/// Each candidate's cosine, in index terms, with the centroid of the first `feedback_docs`
/// candidates weighted by `weights`: a candidate is its terms' sublinear frequencies (1 +
/// ln tf) times their inverse frequency among these candidates (ln(1 + n / df)), unit length.
/// Candidates without terms score 0, as all do when the centroid is empty.
fn term_similarities(terms: &CandidateTerms, weights: &[f32], feedback_docs: usize) -> Vec<f32> {
    let n = terms.len();
    let vocabulary = terms.distinct_terms();
    // Each candidate's (term, count), by term.
    let counts: Vec<Vec<(u32, f32)>> = terms
        .candidates
        .iter()
        .map(|ids| {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            let mut tf: Vec<(u32, f32)> = Vec::new();
            for id in sorted {
                match tf.last_mut() {
                    Some((last, c)) if *last == id => *c += 1.0,
                    _ => tf.push((id, 1.0)),
                }
            }
            tf
        })
        .collect();
    let mut df = vec![0.0f32; vocabulary];
    for tf in &counts {
        for &(id, _) in tf {
            df[id as usize] += 1.0;
        }
    }
    let unit: Vec<Vec<(u32, f32)>> = counts
        .into_iter()
        .map(|tf| {
            let mut v: Vec<(u32, f32)> = tf
                .into_iter()
                .map(|(id, c)| (id, (1.0 + c.ln()) * (1.0 + n as f32 / df[id as usize]).ln()))
                .collect();
            let norm = v.iter().map(|(_, x)| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                v.iter_mut().for_each(|(_, x)| *x /= norm);
            }
            v
        })
        .collect();
    let mut centroid = vec![0.0f32; vocabulary];
    for (v, w) in unit.iter().zip(weights).take(feedback_docs.max(1)) {
        for &(id, x) in v {
            centroid[id as usize] += w * x;
        }
    }
    let norm = centroid.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm <= 0.0 || !norm.is_finite() {
        return vec![0.0; n];
    }
    unit.iter()
        .map(|v| {
            v.iter()
                .map(|&(id, x)| x * centroid[id as usize])
                .sum::<f32>()
                / norm
        })
        .collect()
}

/// Cosine of `v` with `c`, whose norm is `c_norm` (> 0); 0 for a zero `v`.
fn cosine(v: &[f32], c: &[f32], c_norm: f32) -> f32 {
    let v_norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if v_norm <= 0.0 || !v_norm.is_finite() {
        return 0.0;
    }
    let dot: f32 = v.iter().zip(c).map(|(a, b)| a * b).sum();
    dot / (v_norm * c_norm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_candidate_like_the_first_results_moves_up() {
        // Three candidates about topic x, one about topic y ranked second by its score.
        let scores = [1.0, 0.9, 0.85, 0.8];
        let x = vec![1.0, 0.0];
        let y = vec![0.0, 1.0];
        let vectors = vec![x.clone(), y, x.clone(), x];
        // Normalised scores 1, 0.5, 0.25, 0; the centroid of the first two, x + 0.5 y, has
        // cosine 0.89 with x and 0.45 with y: the 3rd passes the y candidate (1.14 > 0.95),
        // and with twice the weight the 4th too (1.79 > 1.39).
        assert_eq!(feedback_order(&scores, &vectors, 2, 1.0), vec![0, 2, 1, 3]);
        assert_eq!(feedback_order(&scores, &vectors, 2, 2.0), vec![0, 2, 3, 1]);
        // Without weight, the fused order.
        assert_eq!(feedback_order(&scores, &vectors, 2, 0.0), vec![0, 1, 2, 3]);
    }

    #[test]
    fn the_weight_trades_the_fused_score_against_similarity() {
        let scores = [1.0, 0.5, 0.0];
        let vectors = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.8, 0.6]];
        // Candidate 2: 0 + w * 0.8; candidate 1: 0.5 + w * 0 (centroid = first only).
        assert_eq!(feedback_order(&scores, &vectors, 1, 0.5), vec![0, 1, 2]);
        assert_eq!(feedback_order(&scores, &vectors, 1, 1.0), vec![0, 2, 1]);
    }

    #[test]
    fn unusable_input_keeps_the_order() {
        let scores = [0.9, 0.8, 0.7];
        let ragged = vec![vec![1.0, 0.0], vec![1.0], vec![0.0, 1.0]];
        assert_eq!(feedback_order(&scores, &ragged, 2, 1.0), vec![0, 1, 2]);
        let short = vec![vec![1.0, 0.0]];
        assert_eq!(feedback_order(&scores, &short, 2, 1.0), vec![0, 1, 2]);
        let zero = vec![vec![0.0, 0.0], vec![0.0, 0.0], vec![1.0, 0.0]];
        assert_eq!(feedback_order(&scores, &zero, 2, 1.0), vec![0, 1, 2]);
        assert_eq!(feedback_order(&[], &[], 2, 1.0), Vec::<usize>::new());
        let nan = [f32::NAN, 0.8, 0.7];
        let fine = vec![vec![1.0, 0.0]; 3];
        assert_eq!(feedback_order(&nan, &fine, 2, 1.0), vec![0, 1, 2]);
    }

    #[test]
    fn equal_scores_and_vectors_keep_the_order() {
        let scores = [0.5; 4];
        let vectors = vec![vec![0.6, 0.8]; 4];
        assert_eq!(feedback_order(&scores, &vectors, 2, 1.0), vec![0, 1, 2, 3]);
    }

    fn candidates(texts: &[&str]) -> CandidateTerms {
        let mut terms = CandidateTerms::new();
        for text in texts {
            terms.push("", text);
        }
        terms
    }

    #[test]
    fn term_similarity_follows_the_first_candidates_words() {
        let words = candidates(&[
            "graphene conduct heat graphene",
            "bread oven sourdough",
            "heat conduct metal",
            "oven temperature",
        ]);
        let sims = term_similarities(&words, &[1.0, 0.5, 0.25, 0.0], 1);
        // The first is its own centroid; the third shares two of its words, the others none.
        assert!((sims[0] - 1.0).abs() < 1e-5, "{sims:?}");
        assert!(sims[2] > 0.3 && sims[2] < 1.0, "{sims:?}");
        assert_eq!(sims[1], 0.0);
        assert_eq!(sims[3], 0.0);
        // No terms anywhere: nothing to be like.
        assert_eq!(
            term_similarities(&candidates(&["", "the"]), &[1.0, 0.0], 2),
            vec![0.0, 0.0]
        );
    }

    #[test]
    fn terms_break_what_the_embeddings_leave_even() {
        // Equal embeddings: only the words tell the fourth candidate from the second.
        let scores = [1.0, 0.9, 0.85, 0.8];
        let vectors = vec![vec![1.0, 0.0]; 4];
        let words = candidates(&[
            "graphene heat",
            "bread oven",
            "cake",
            "graphene heat conduct",
        ]);
        let order = feedback_order_with_terms(&scores, &vectors, &words, 1, 1.0, 1.0);
        assert_eq!(order, vec![0, 3, 1, 2]);
        // Without the term weight, or with terms of another length, the fused order.
        let plain = feedback_order_with_terms(&scores, &vectors, &words, 1, 1.0, 0.0);
        assert_eq!(plain, vec![0, 1, 2, 3]);
        let short = candidates(&["graphene heat", "bread oven"]);
        let order = feedback_order_with_terms(&scores, &vectors, &short, 1, 1.0, 1.0);
        assert_eq!(order, vec![0, 1, 2, 3]);
    }

    #[test]
    fn validation_names_the_field() {
        assert!(FeedbackRerankConfig::default().validate().is_ok());
        let bad = |c: FeedbackRerankConfig| c.validate().unwrap_err();
        let d = FeedbackRerankConfig::default();
        assert!(bad(FeedbackRerankConfig { depth: 1, ..d }).contains("depth"));
        assert!(bad(FeedbackRerankConfig {
            feedback_docs: 0,
            ..d
        })
        .contains("feedback_docs"));
        assert!(bad(FeedbackRerankConfig {
            feedback_docs: 31,
            ..d
        })
        .contains("feedback_docs"));
        assert!(bad(FeedbackRerankConfig { weight: -1.0, ..d }).contains("weight"));
        assert!(bad(FeedbackRerankConfig {
            term_weight: 11.0,
            ..d
        })
        .contains("term_weight"));
        assert!(bad(FeedbackRerankConfig {
            weight: f32::NAN,
            ..d
        })
        .contains("weight"));
    }

    proptest! {
        #[test]
        fn the_order_is_a_permutation(
            scores in proptest::collection::vec(-10.0f32..10.0, 0..20),
            seed in proptest::collection::vec(-1.0f32..1.0, 60),
            m in 0usize..5,
            w in 0.0f32..5.0,
        ) {
            let vectors: Vec<Vec<f32>> = (0..scores.len())
                .map(|i| vec![seed[i % 60], seed[(i * 7 + 1) % 60], seed[(i * 13 + 2) % 60]])
                .collect();
            let mut order = feedback_order(&scores, &vectors, m, w);
            order.sort_unstable();
            prop_assert_eq!(order, (0..scores.len()).collect::<Vec<_>>());
        }
    }
}
