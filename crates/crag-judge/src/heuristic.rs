//! The LLM-free heuristic evaluator: keyword overlap, semantic coherence, length adequacy and
//! source diversity, plus the retrieval legs' agreement and the best document's own score,
//! combined in a weighted mean.

use std::collections::HashSet;

use crag_core::{CriterionScore, EvalDocument, Evaluation, LegHit, RetrievalSignals, Verdict};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{EvaluationError, Result};
use crate::stats::{mean_variance, unit};
use crate::terms::{query_terms, terms_found};

/// Similarity at or below which a document counts as carrying no semantic evidence.
///
/// Cosine similarities of sentence embeddings (all-MiniLM-L6-v2) rarely fall below ~0.1 even
/// for unrelated text, so the raw value overstates relevance at the low end.
pub const SIMILARITY_FLOOR: f32 = 0.2;

/// Similarity at or above which a document counts as fully on topic.
///
/// Relevant passages rarely exceed ~0.7 with sentence embeddings, even when they answer the
/// query outright.
pub const SIMILARITY_CEILING: f32 = 0.7;

/// The cap on the variance penalty of semantic coherence: spread costs at most 30 % of the mean.
const VARIANCE_CAP: f32 = 0.3;

pub(crate) const KEYWORD_OVERLAP: &str = "keyword_overlap";
pub(crate) const SEMANTIC_COHERENCE: &str = "semantic_coherence";
pub(crate) const LENGTH_ADEQUACY: &str = "length_adequacy";
pub(crate) const SOURCE_DIVERSITY: &str = "source_diversity";
pub(crate) const LEG_AGREEMENT: &str = "leg_agreement";
pub(crate) const BEST_DOCUMENT: &str = "best_document";

/// Weights, thresholds and limits of the heuristic evaluator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HeuristicConfig {
    /// Weight of the share of query keywords found in the documents.
    pub keyword_overlap_weight: f32,
    /// Weight of the similarity distribution (high mean, low spread).
    pub semantic_coherence_weight: f32,
    /// Weight of having enough text to answer.
    pub length_adequacy_weight: f32,
    /// Weight of the share of distinct sources.
    pub source_diversity_weight: f32,
    /// Weight of the two retrieval legs' agreement: the rank-biased overlap of the BM25 and
    /// vector rankings over the judged documents.
    pub leg_agreement_weight: f32,
    /// The rank-biased overlap's persistence `p` in (0, 1): how much deeper ranks count.
    pub agreement_persistence: f32,
    /// Weight of the best document's own score (its keyword overlap and similarity, as in
    /// the per-document scores): one document that answers makes a list worth keeping.
    pub best_document_weight: f32,
    /// Scores above this are `Correct`.
    pub correct_threshold: f32,
    /// Scores above this (and not above `correct_threshold`) are `Ambiguous`, the rest
    /// `Incorrect`.
    pub ambiguous_threshold: f32,
    /// Keywords a query needs for keyword overlap to count with its full weight; with fewer,
    /// the weight shrinks in proportion (and is zero for a query without keywords).
    pub min_keywords: usize,
    /// Estimated tokens per document for full length adequacy.
    pub min_tokens_per_chunk: usize,
}

impl Default for HeuristicConfig {
    fn default() -> Self {
        Self {
            keyword_overlap_weight: 0.30,
            semantic_coherence_weight: 0.40,
            length_adequacy_weight: 0.15,
            source_diversity_weight: 0.15,
            leg_agreement_weight: 1.0,
            agreement_persistence: 0.95,
            best_document_weight: 0.5,
            correct_threshold: 0.75,
            ambiguous_threshold: 0.50,
            min_keywords: 2,
            min_tokens_per_chunk: 100,
        }
    }
}

impl HeuristicConfig {
    /// Checks that the weights are finite, non-negative, not all zero and of finite sum, and that
    /// `0 <= ambiguous_threshold <= correct_threshold <= 1`.
    pub fn validate(&self) -> Result<()> {
        let weights = [
            ("keyword_overlap_weight", self.keyword_overlap_weight),
            ("semantic_coherence_weight", self.semantic_coherence_weight),
            ("length_adequacy_weight", self.length_adequacy_weight),
            ("source_diversity_weight", self.source_diversity_weight),
            ("leg_agreement_weight", self.leg_agreement_weight),
            ("best_document_weight", self.best_document_weight),
        ];
        for (field, weight) in weights {
            if !weight.is_finite() || weight < 0.0 {
                return Err(EvaluationError::config(
                    field,
                    format!("must be a finite number >= 0, got {weight}"),
                ));
            }
        }
        let sum = weights.iter().map(|(_, w)| w).sum::<f32>();
        if sum <= 0.0 {
            return Err(EvaluationError::config(
                "weights",
                "at least one criterion weight must be positive",
            ));
        }
        if !sum.is_finite() {
            return Err(EvaluationError::config(
                "weights",
                "the weights' sum must be finite",
            ));
        }
        for (field, threshold) in [
            ("correct_threshold", self.correct_threshold),
            ("ambiguous_threshold", self.ambiguous_threshold),
        ] {
            if !(0.0..=1.0).contains(&threshold) {
                return Err(EvaluationError::config(
                    field,
                    format!("must lie in [0, 1], got {threshold}"),
                ));
            }
        }
        let p = self.agreement_persistence;
        if !(p > 0.0 && p < 1.0) {
            return Err(EvaluationError::config(
                "agreement_persistence",
                format!("must lie in (0, 1), got {p}"),
            ));
        }
        if self.ambiguous_threshold > self.correct_threshold {
            return Err(EvaluationError::config(
                "ambiguous_threshold",
                format!(
                    "must not exceed correct_threshold ({}), got {}",
                    self.correct_threshold, self.ambiguous_threshold
                ),
            ));
        }
        Ok(())
    }
}

/// Judges a result list with fast, LLM-free heuristics.
///
/// The six criteria, each in [0, 1] and reported in [`Evaluation::criteria`]:
///
/// - `keyword_overlap`: share of the query's keywords (see [`crate::keywords`]) found in at least
///   one document, matched on normalised whole words (a substring match would find `cat` in
///   `education`).
/// - `semantic_coherence`: each similarity is mapped onto [0, 1] by the ramp
///   `r = (s - SIMILARITY_FLOOR) / (SIMILARITY_CEILING - SIMILARITY_FLOOR)`, clamped; then
///   `coherence = mean(r) * (1 - min(var(r), 0.3))` over the ramped values.
///   Coherence never exceeds the mean, so a uniformly low set (every similarity at or below the
///   floor) scores 0 however small its variance: low spread cannot rescue a low mean.
/// - `length_adequacy`: estimated tokens (words x 1.3) over `min_tokens_per_chunk` per document,
///   capped at 1.
/// - `source_diversity`: distinct sources over documents.
/// - `leg_agreement`: the rank-biased overlap (Webber et al., 2010) of the BM25 and vector
///   rankings, read from the documents' leg ranks down to depth `n` (the number of documents, or
///   fewer when a leg returned fewer of them):
///   `(1 - p) / (1 - p^n) * sum_{d=1..n} p^(d-1) * |both within d| / d`,
///   1 when both legs rank the same documents in the same order. When the answer is in the
///   collection the two legs tend to find the same few chunks first; when it is not, each
///   finds its own near misses. Label-free and on the same scale in every corpus. Left out
///   (weight 0) when a leg ranked none of the documents (web results, a failed leg).
/// - `best_document`: the highest of the documents' own scores (below). Corrective RAG's
///   rule (Yan et al., 2024): one document that answers makes a list correct, however weak
///   the rest; a mean over the list cannot tell one answer among nine misses from ten misses.
///
/// The aggregate is the weighted mean of the criteria, normalised by the weights' sum. Keyword
/// overlap carries `keyword_overlap_weight * min(1, keywords / min_keywords)`: a query with
/// fewer keywords gives less evidence, and one without any leaves the criterion out (weight 0).
///
/// Each document's own score is `(wk * overlap_i + wc * r_i) / (wk + wc)`, where `overlap_i` is
/// the share of query keywords in that document, `r_i` its ramped similarity and `wk`, `wc` the
/// aggregate's (effective) keyword and coherence weights; equal weights when both are zero.
#[derive(Debug, Clone)]
pub struct HeuristicEvaluator {
    config: HeuristicConfig,
}

impl HeuristicEvaluator {
    /// Builds the evaluator; fails when the configuration does not validate.
    pub fn new(config: HeuristicConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }

    /// Returns the configuration.
    pub fn config(&self) -> &HeuristicConfig {
        &self.config
    }

    /// Judges `documents` (best first) for `query`.
    ///
    /// An empty list is `Incorrect` with score 0. Non-finite or out-of-range similarities are
    /// clamped into [0, 1] (NaN counts as 0) and reported in `issues`.
    pub fn evaluate(&self, query: &str, documents: &[EvalDocument]) -> Evaluation {
        if documents.is_empty() {
            return Evaluation::nothing_retrieved();
        }
        let Assessment {
            criteria,
            score,
            document_scores,
            issues,
            ..
        } = self.assess(query, documents);
        let verdict = self.verdict(score);

        Evaluation {
            verdict,
            score,
            document_scores: document_scores.into_iter().map(Some).collect(),
            document_reasons: Vec::new(),
            reasoning: reasoning(verdict, score, &criteria),
            criteria,
            issues,
        }
    }

    /// Computes the six criteria, the aggregate and each document's keyword overlap and own
    /// score (the calibrated evaluator's features build on these).
    pub(crate) fn assess(&self, query: &str, documents: &[EvalDocument]) -> Assessment {
        let config = &self.config;
        let mut issues = Vec::new();

        let terms = query_terms(query);
        let found: Vec<Vec<bool>> = documents
            .iter()
            .map(|d| terms_found(&terms, &d.text))
            .collect();
        let document_overlap: Vec<f32> = found.iter().map(|f| share(f)).collect();
        let keyword_overlap = if terms.is_empty() {
            0.0
        } else {
            let hits = (0..terms.len())
                .filter(|&t| found.iter().any(|f| f[t]))
                .count();
            hits as f32 / terms.len() as f32
        };
        let keyword_weight = effective_keyword_weight(config, terms.len(), &mut issues);

        let ramped_similarity: Vec<f32> = documents
            .iter()
            .enumerate()
            .map(|(i, d)| ramp(sanitize_similarity(d.similarity, i, &mut issues)))
            .collect();
        let coherence = match mean_variance(&ramped_similarity) {
            Some((mean, variance)) => unit(mean * (1.0 - variance.min(VARIANCE_CAP))),
            None => 0.0,
        };

        let total_tokens: f64 = documents
            .iter()
            .map(|d| crag_text::estimate_tokens(&d.text) as f64)
            .sum();
        let expected_tokens = config.min_tokens_per_chunk as f64 * documents.len() as f64;
        let length = if expected_tokens <= 0.0 {
            1.0
        } else {
            (total_tokens / expected_tokens).min(1.0) as f32
        };

        let sources: HashSet<&str> = documents.iter().map(|d| d.source.as_str()).collect();
        let diversity = if documents.is_empty() {
            0.0
        } else {
            unit(sources.len() as f32 / documents.len() as f32)
        };

        // Unmeasurable when a leg ranked none of the documents (web results, a failed leg):
        // left out rather than counted as disagreement.
        let depth = agreement_depth(documents);
        let agreement_weight = if depth > 0 {
            config.leg_agreement_weight
        } else {
            0.0
        };
        let agreement = leg_agreement(documents, depth, config.agreement_persistence);

        let (wk, wc) = match (keyword_weight, config.semantic_coherence_weight) {
            (k, c) if k + c > 0.0 => (k, c),
            _ if terms.is_empty() => (0.0, 1.0),
            _ => (1.0, 1.0),
        };
        let document_scores: Vec<f32> = document_overlap
            .iter()
            .zip(&ramped_similarity)
            .map(|(&o, &r)| unit((wk * o + wc * r) / (wk + wc)))
            .collect();
        let best = document_scores.iter().copied().fold(0.0, f32::max);

        let criteria = vec![
            criterion(KEYWORD_OVERLAP, keyword_overlap, keyword_weight),
            criterion(
                SEMANTIC_COHERENCE,
                coherence,
                config.semantic_coherence_weight,
            ),
            criterion(LENGTH_ADEQUACY, length, config.length_adequacy_weight),
            criterion(SOURCE_DIVERSITY, diversity, config.source_diversity_weight),
            criterion(LEG_AGREEMENT, agreement, agreement_weight),
            criterion(BEST_DOCUMENT, best, config.best_document_weight),
        ];
        let weight_sum: f32 = criteria.iter().map(|c| c.weight).sum();
        let score = if weight_sum > 0.0 {
            unit(criteria.iter().map(|c| c.weight * c.score).sum::<f32>() / weight_sum)
        } else {
            issues.push("no criterion carries weight for this query; score set to 0".into());
            0.0
        };
        Assessment {
            criteria,
            score,
            terms: terms.len(),
            document_overlap,
            document_scores,
            issues,
        }
    }

    fn verdict(&self, score: f32) -> Verdict {
        if score > self.config.correct_threshold {
            Verdict::Correct
        } else if score > self.config.ambiguous_threshold {
            Verdict::Ambiguous
        } else {
            Verdict::Incorrect
        }
    }
}

/// What the heuristic computes before its verdict.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Assessment {
    /// The six criteria, in the order keyword overlap, semantic coherence, length adequacy,
    /// source diversity, leg agreement, best document, with their effective weights.
    pub(crate) criteria: Vec<CriterionScore>,
    /// The weighted mean of the criteria.
    pub(crate) score: f32,
    /// Number of (normalised) query keywords.
    pub(crate) terms: usize,
    /// Share of the query keywords in each document.
    pub(crate) document_overlap: Vec<f32>,
    /// Each document's own score, from its keyword overlap and ramped similarity.
    pub(crate) document_scores: Vec<f32>,
    /// Problems met (clamped similarities, few keywords).
    pub(crate) issues: Vec<String>,
}

/// The depth both legs reach among the documents: their number, or fewer when a leg ranked
/// fewer of them (a keyword leg that matched two chunks of a small corpus cannot agree beyond
/// depth 2); 0 when a leg ranked none.
fn agreement_depth(documents: &[EvalDocument]) -> usize {
    let ranked = |leg: fn(&RetrievalSignals) -> Option<LegHit>| {
        documents
            .iter()
            .filter(|d| leg(&d.retrieval).is_some())
            .count()
    };
    ranked(|r| r.keyword).min(ranked(|r| r.vector))
}

/// Rank-biased overlap of the two legs' rankings down to depth `n` ([`agreement_depth`]).
fn leg_agreement(documents: &[EvalDocument], n: usize, p: f32) -> f32 {
    if n == 0 {
        return 0.0;
    }
    // Each document's depth at which both legs have it: the larger of its two ranks.
    let mut both_within: Vec<usize> = documents
        .iter()
        .filter_map(|d| Some(d.retrieval.keyword?.rank.max(d.retrieval.vector?.rank)))
        .filter(|&r| r <= n)
        .collect();
    both_within.sort_unstable();
    let (mut sum, mut weight, mut overlap) = (0.0f32, 1.0f32, 0usize);
    for depth in 1..=n {
        overlap += both_within[overlap..]
            .iter()
            .take_while(|&&r| r <= depth)
            .count();
        sum += weight * overlap as f32 / depth as f32;
        weight *= p;
    }
    // `weight` is now p^n: normalise so that full agreement scores 1.
    unit(sum * (1.0 - p) / (1.0 - weight))
}

/// Maps a similarity onto [0, 1] between [`SIMILARITY_FLOOR`] and [`SIMILARITY_CEILING`].
fn ramp(similarity: f32) -> f32 {
    unit((similarity - SIMILARITY_FLOOR) / (SIMILARITY_CEILING - SIMILARITY_FLOOR))
}

fn sanitize_similarity(similarity: f32, index: usize, issues: &mut Vec<String>) -> f32 {
    if !similarity.is_finite() {
        issues.push(format!(
            "document {}: similarity {similarity} is not finite; clamped to {}",
            index + 1,
            unit(similarity)
        ));
    } else if !(0.0..=1.0).contains(&similarity) {
        issues.push(format!(
            "document {}: similarity {similarity} lies outside [0, 1]; clamped",
            index + 1
        ));
    }
    unit(similarity)
}

fn effective_keyword_weight(
    config: &HeuristicConfig,
    keywords: usize,
    issues: &mut Vec<String>,
) -> f32 {
    let full = config.keyword_overlap_weight;
    if keywords >= config.min_keywords && keywords > 0 {
        return full;
    }
    let factor = if keywords == 0 {
        0.0
    } else {
        keywords as f32 / config.min_keywords as f32
    };
    let weight = full * factor;
    if full > 0.0 {
        issues.push(if keywords == 0 {
            "query has no keywords; keyword_overlap left out of the score".to_owned()
        } else {
            format!(
                "query has {keywords} keyword(s), fewer than min_keywords {}; keyword_overlap \
                 weight lowered to {weight:.2}",
                config.min_keywords
            )
        });
    }
    weight
}

fn share(found: &[bool]) -> f32 {
    if found.is_empty() {
        0.0
    } else {
        found.iter().filter(|&&f| f).count() as f32 / found.len() as f32
    }
}

fn criterion(name: &str, score: f32, weight: f32) -> CriterionScore {
    CriterionScore {
        name: name.to_owned(),
        score: unit(score),
        weight,
    }
}

fn reasoning(verdict: Verdict, score: f32, criteria: &[CriterionScore]) -> String {
    let weighted = || criteria.iter().filter(|c| c.weight > 0.0);
    let strongest = weighted().max_by(|a, b| a.score.total_cmp(&b.score));
    let weakest = weighted().min_by(|a, b| a.score.total_cmp(&b.score));
    let head = format!("Verdict {verdict} with score {score:.2}.");
    match (strongest, weakest) {
        (Some(s), Some(w)) => format!(
            "{head} Strongest criterion {} ({:.2}), weakest {} ({:.2}).",
            s.name, s.score, w.name, w.score
        ),
        _ => head,
    }
}

#[cfg(test)]
mod tests;
