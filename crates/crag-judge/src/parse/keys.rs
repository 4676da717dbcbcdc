//! The JSON field names a judgement may use (matched case-insensitively).

/// Fields holding the list of per-document scores.
pub(super) const LIST_KEYS: &[&str] = &[
    "scores",
    "evaluations",
    "documents",
    "results",
    "ratings",
    "judgements",
    "judgments",
    "relevance_scores",
];
/// Fields holding a score.
pub(super) const SCORE_KEYS: &[&str] = &["score", "relevance_score", "relevance", "rating"];
/// Fields holding a document's index.
pub(super) const INDEX_KEYS: &[&str] = &[
    "document",
    "doc",
    "index",
    "document_index",
    "doc_index",
    "id",
    "document_id",
    "doc_id",
    "idx",
    "number",
];
/// Fields holding a reason.
pub(super) const REASON_KEYS: &[&str] =
    &["reasoning", "reason", "explanation", "rationale", "summary"];
