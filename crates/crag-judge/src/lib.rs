//! Relevance evaluation of crag (pure): judges a retrieved result list as correct, ambiguous or
//! incorrect, the decision Corrective RAG acts on.
//!
//! Three evaluators, each producing a [`crag_core::Evaluation`] with an aggregate score, one score
//! per document and the reasons:
//!
//! - [`HeuristicEvaluator`], LLM-free: keyword overlap 0.30, semantic coherence 0.40, length
//!   adequacy 0.15 and source diversity 0.15, combined in a weighted mean; `Correct` above 0.75,
//!   `Ambiguous` above 0.50, else `Incorrect`. Similarities are mapped onto [0, 1] between
//!   [`SIMILARITY_FLOOR`] and [`SIMILARITY_CEILING`] first, so a set of uniformly low similarities
//!   cannot pass as coherent.
//! - [`LlmJudge`]: builds one batched prompt over the top 5 documents (800 characters each) asking
//!   for JSON scores 0-10, reads the answer with [`parse_llm_scores`] and aggregates with rank
//!   weights `1 / (i + 1)`; `Correct` at or above 0.7, `Incorrect` at or below 0.3, in between
//!   `Ambiguous` when the scores' variance exceeds 0.1, else `Correct` above 0.5. An answer without
//!   a readable score is an error, never a guessed verdict. The judge does no IO: the caller sends
//!   the prompt to its model.
//! - [`CalibratedEvaluator`]: two logistic models fitted by [`calibrate`] on labelled queries —
//!   "the list holds a relevant document" over [`QUERY_FEATURES`] (the heuristic's criteria plus
//!   fusion, score-distribution, term-coverage and rerank features) and "this document is relevant"
//!   over [`DOCUMENT_FEATURES`] — with verdict thresholds chosen for a target precision
//!   ([`choose_thresholds`]). A [`Calibration`] is plain serde data; reading and writing its file
//!   is the caller's job.
//!
//! [`auroc`] measures how well verdict scores separate answerable from unanswerable queries;
//! the ranking metrics and the evaluation harness are the `crag-eval` crate's.
//!
//! [`keywords`] exposes the keyword extraction the heuristic and the features use. Nothing here performs IO or panics on
//! any input.

mod auroc;
mod calibrated;
mod error;
mod features;
mod heuristic;
mod llm;
mod logistic;
mod parse;
mod stats;
mod terms;

pub use auroc::auroc;
pub use calibrated::{
    calibrate, choose_thresholds, recall_threshold, CalibratedEvaluator, Calibration,
    CalibrationOptions, LabelledQuery, Thresholds, CALIBRATION_VERSION, DEFAULT_FUSION,
};
pub use error::{EvaluationError, Result};
pub use features::{extract as extract_features, Features, DOCUMENT_FEATURES, QUERY_FEATURES};
pub use heuristic::{HeuristicConfig, HeuristicEvaluator, SIMILARITY_CEILING, SIMILARITY_FLOOR};
pub use llm::{LlmJudge, LlmJudgeConfig, LlmPrompt};
pub use logistic::{fit_logistic, sigmoid, FeatureWeight, FitOptions, LogisticModel};
pub use parse::{parse_llm_scores, ParsedScores};
pub use terms::keywords;
