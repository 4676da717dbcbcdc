use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::scored::LegHit;

/// How well a retrieval answers its query (Corrective RAG's three-way judgement).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The results answer the query: keep them.
    Correct,
    /// Mixed: filter, expand the query and retrieve again.
    Ambiguous,
    /// The results do not answer the query: discard, rewrite, search the web.
    Incorrect,
}

impl Verdict {
    /// Returns the lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Correct => "correct",
            Self::Ambiguous => "ambiguous",
            Self::Incorrect => "incorrect",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Verdict {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "correct" | "relevant" => Ok(Self::Correct),
            "ambiguous" | "partial" => Ok(Self::Ambiguous),
            "incorrect" | "irrelevant" => Ok(Self::Incorrect),
            other => Err(CoreError::invalid(
                "verdict",
                format!("unknown verdict `{other}`"),
            )),
        }
    }
}

/// One criterion of an evaluation, with its weight in the aggregate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionScore {
    /// Name, e.g. `keyword_overlap`.
    pub name: String,
    /// Score in [0, 1].
    pub score: f32,
    /// Weight in the aggregate score.
    pub weight: f32,
}

/// A relevance evaluator's judgement of a result list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The verdict.
    pub verdict: Verdict,
    /// Aggregate score in [0, 1].
    pub score: f32,
    /// One score in [0, 1] per evaluated document, in input order; `None` where the evaluator
    /// gave no judgement for it (e.g. an LLM answer missing an entry).
    pub document_scores: Vec<Option<f32>>,
    /// Why each document got its score, in input order: one short reason per document where the
    /// evaluator gave one (an LLM judge's sentence, cut by [`clip_reason`]), `None` where it did
    /// not; empty for evaluators that give no per-document reasons. Read it with
    /// [`Evaluation::document_reason`], which covers both.
    #[serde(default)]
    pub document_reasons: Vec<Option<String>>,
    /// Per-criterion scores (empty for evaluators without criteria).
    pub criteria: Vec<CriterionScore>,
    /// Why, in one or two sentences.
    pub reasoning: String,
    /// Problems met while evaluating (unparsed answer parts, missing entries), never hidden.
    pub issues: Vec<String>,
}

impl Evaluation {
    /// The judgement of an empty result list, whatever the evaluator: `Incorrect`, score 0.
    pub fn nothing_retrieved() -> Self {
        Self {
            verdict: Verdict::Incorrect,
            score: 0.0,
            document_scores: Vec::new(),
            document_reasons: Vec::new(),
            criteria: Vec::new(),
            reasoning: "Verdict incorrect: no documents were retrieved.".into(),
            issues: Vec::new(),
        }
    }

    /// The reason given for the document at `index` (input order), if any.
    pub fn document_reason(&self, index: usize) -> Option<&str> {
        self.document_reasons.get(index)?.as_deref()
    }
}

/// Characters at most of a per-document reason kept by [`clip_reason`].
pub const MAX_DOCUMENT_REASON_CHARS: usize = 200;

/// A per-document reason as an evaluation keeps it: runs of whitespace (newlines included)
/// made one space, trimmed, and at most [`MAX_DOCUMENT_REASON_CHARS`] characters (cut on a
/// character boundary, the last three replaced by `...` when cut); `None` for blank text.
pub fn clip_reason(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    let mut reason = words.next()?.to_owned();
    for word in words {
        reason.push(' ');
        reason.push_str(word);
    }
    if reason.chars().nth(MAX_DOCUMENT_REASON_CHARS).is_some() {
        let keep = reason
            .char_indices()
            .nth(MAX_DOCUMENT_REASON_CHARS - 3)
            .map_or(reason.len(), |(byte, _)| byte);
        reason.truncate(keep);
        reason.push_str("...");
    }
    Some(reason)
}

/// A corrective action the engine took.
///
/// The one list of correction kinds: the wire names (`as_str`), the order a query's main
/// correction is chosen in ([`CorrectionKind::priority`]) and the lists in the docs and the proto
/// comments (checked against [`CorrectionKind::iter`] by crag-engine's `tests/lists.rs`) all
/// come from here.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumIter,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum CorrectionKind {
    /// Results kept as they were.
    Keep,
    /// Results dropped (all, or those scored below the filter threshold).
    Discard,
    /// Query expanded with synonyms and retrieved again.
    Expand,
    /// Query rewritten.
    Rewrite,
    /// Web search run.
    WebSearch,
    /// Results refined to their most relevant strips.
    Refine,
}

/// The strategy reported for a query none of whose corrections changed its results.
pub const NO_CORRECTION: &str = "none";

impl CorrectionKind {
    /// Returns the snake_case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every kind, in declaration order.
    pub fn iter() -> impl Iterator<Item = Self> {
        <Self as strum::IntoEnumIterator>::iter()
    }

    /// How a kind ranks when one correction names a query's strategy (metrics labels, summaries):
    /// the kind that changed the results most wins, web results over a second retrieval over a
    /// refined text over a filter. `None` for `Keep`, which changes nothing.
    pub fn priority(self) -> Option<u8> {
        match self {
            Self::Keep => None,
            Self::Discard => Some(1),
            Self::Refine => Some(2),
            Self::Rewrite => Some(3),
            Self::Expand => Some(4),
            Self::WebSearch => Some(5),
        }
    }

    /// The names a query's strategy can take, from the strongest to [`NO_CORRECTION`].
    pub fn strategies() -> Vec<&'static str> {
        let mut kinds: Vec<Self> = Self::iter().filter(|k| k.priority().is_some()).collect();
        kinds.sort_by_key(|k| std::cmp::Reverse(k.priority()));
        kinds
            .into_iter()
            .map(Self::as_str)
            .chain([NO_CORRECTION])
            .collect()
    }

    /// The strategy of a query that made `corrections`: the name of the one with the highest
    /// [`priority`](Self::priority), or [`NO_CORRECTION`].
    pub fn strategy(corrections: &[Correction]) -> &'static str {
        corrections
            .iter()
            .filter_map(|c| c.kind.priority().map(|p| (p, c.kind)))
            .max_by_key(|(p, _)| *p)
            .map_or(NO_CORRECTION, |(_, k)| k.as_str())
    }
}

impl fmt::Display for CorrectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A corrective action with its reason and the queries it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Correction {
    /// What was done.
    pub kind: CorrectionKind,
    /// Why.
    pub reason: String,
    /// Queries issued by the action (expanded, rewritten or web queries).
    pub queries: Vec<String>,
}

impl Correction {
    /// Builds a correction without queries.
    pub fn new(kind: CorrectionKind, reason: impl Into<String>) -> Self {
        Self {
            kind,
            reason: reason.into(),
            queries: Vec::new(),
        }
    }

    /// Adds the queries the action ran.
    #[must_use]
    pub fn with_queries(mut self, queries: Vec<String>) -> Self {
        self.queries = queries;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_parses_seed_names() {
        assert_eq!("RELEVANT".parse::<Verdict>().unwrap(), Verdict::Correct);
        assert_eq!("partial".parse::<Verdict>().unwrap(), Verdict::Ambiguous);
        assert_eq!(
            " Incorrect ".parse::<Verdict>().unwrap(),
            Verdict::Incorrect
        );
        assert!("maybe".parse::<Verdict>().is_err());
    }

    #[test]
    fn reasons_are_collapsed_trimmed_and_capped() {
        assert_eq!(clip_reason(" \n\t "), None);
        assert_eq!(
            clip_reason("  Answers\n the   query. ").as_deref(),
            Some("Answers the query.")
        );
        let exact = "é".repeat(MAX_DOCUMENT_REASON_CHARS);
        assert_eq!(clip_reason(&exact).as_deref(), Some(exact.as_str()));
        let long = clip_reason(&"é".repeat(MAX_DOCUMENT_REASON_CHARS + 1)).unwrap();
        assert_eq!(long.chars().count(), MAX_DOCUMENT_REASON_CHARS);
        assert!(long.ends_with("é..."), "{long}");
        let evaluation = Evaluation {
            document_reasons: vec![None, Some("fits".into())],
            ..Evaluation::nothing_retrieved()
        };
        assert_eq!(evaluation.document_reason(0), None);
        assert_eq!(evaluation.document_reason(1), Some("fits"));
        assert_eq!(evaluation.document_reason(2), None);
    }

    #[test]
    fn correction_kind_names() {
        assert_eq!(CorrectionKind::WebSearch.as_str(), "web_search");
        assert_eq!(CorrectionKind::WebSearch.to_string(), "web_search");
    }

    #[test]
    fn eval_documents_read_without_retrieval_signals() {
        let doc: EvalDocument =
            serde_json::from_str(r#"{"id": "a#0", "source": "a", "text": "t", "similarity": 0.5}"#)
                .unwrap();
        assert_eq!(doc, EvalDocument::new("a#0", "a", "t", 0.5));
        assert_eq!(doc.retrieval, RetrievalSignals::default());
        let signals = RetrievalSignals {
            keyword: Some(LegHit {
                rank: 2,
                score: 7.5,
            }),
            rerank_probability: Some(0.9),
            ..RetrievalSignals::default()
        };
        let with = doc.with_retrieval(signals);
        let back: EvalDocument =
            serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back.retrieval, signals);
    }
}

/// A retrieved document as an evaluator sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalDocument {
    /// Chunk id (or URL for web results).
    pub id: String,
    /// Where it comes from (path or URL), for source diversity.
    pub source: String,
    /// Its text.
    pub text: String,
    /// Query-document similarity from retrieval, in [0, 1] (cosine similarity clamped at 0).
    pub similarity: f32,
    /// What retrieval said of it (ranks and scores per leg, fused score, rerank probability);
    /// all absent for documents that did not come from the indexes.
    #[serde(default)]
    pub retrieval: RetrievalSignals,
}

impl EvalDocument {
    /// Builds a document without retrieval signals.
    pub fn new(
        id: impl Into<String>,
        source: impl Into<String>,
        text: impl Into<String>,
        similarity: f32,
    ) -> Self {
        Self {
            id: id.into(),
            source: source.into(),
            text: text.into(),
            similarity,
            retrieval: RetrievalSignals::default(),
        }
    }

    /// Adds what retrieval said of the document.
    #[must_use]
    pub fn with_retrieval(mut self, retrieval: RetrievalSignals) -> Self {
        self.retrieval = retrieval;
        self
    }
}

/// Retrieval features of one evaluated document, each absent when that stage did not see it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrievalSignals {
    /// Rank and BM25 score in the keyword leg.
    pub keyword: Option<LegHit>,
    /// Rank and score in the vector leg (`1 - d / 2`, d the cosine distance).
    pub vector: Option<LegHit>,
    /// Reciprocal-rank-fusion score.
    pub fused_score: Option<f32>,
    /// Fused score normalised to [0, 1] (1: first in every leg).
    pub normalized_score: Option<f32>,
    /// The cross-encoder's probability of relevance, when the two-stage reranker ran.
    pub rerank_probability: Option<f32>,
}
