//! `POST /v1/evaluate`: the evaluator as a service, for documents retrieved elsewhere.

use crag_app::{EvaluateDocumentParams, EvaluateParams};
use crag_engine::EvaluationReport;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ms;
use super::query::CriterionOutput;

/// `POST /v1/evaluate` body: a query and either `documents` or one `context` string.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = EvaluateRequest)]
pub struct EvaluateBody {
    /// The query the documents should answer.
    pub query: String,
    /// The documents to judge, best first (1..=100).
    #[serde(default)]
    pub documents: Vec<EvaluateDocumentBody>,
    /// One context string, judged as one document, instead of `documents`.
    pub context: Option<String>,
}

/// A document to judge.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EvaluateDocumentBody {
    /// Echoed back (default: the document's position, from 0).
    pub id: Option<String>,
    /// Where it came from (default: its id); the heuristic evaluator counts distinct sources.
    pub source: Option<String>,
    /// The text judged (at most `limits.max_document_bytes`).
    pub text: String,
}

impl From<EvaluateBody> for EvaluateParams {
    fn from(b: EvaluateBody) -> Self {
        Self {
            query: b.query,
            documents: b
                .documents
                .into_iter()
                .map(|d| EvaluateDocumentParams {
                    id: d.id,
                    source: d.source,
                    text: d.text,
                })
                .collect(),
            context: b.context,
        }
    }
}

/// `POST /v1/evaluate` answer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateResponse<'a> {
    /// The evaluator that judged: `heuristic`, `calibrated`, `llm` or `http`.
    evaluator: &'a str,
    /// `correct`, `ambiguous` or `incorrect`.
    verdict: &'static str,
    /// The overall score in [0, 1].
    score: f32,
    /// Why, in one or two sentences.
    reasoning: &'a str,
    /// Per-criterion scores and weights (empty for evaluators without criteria).
    criteria: Vec<CriterionOutput<'a>>,
    /// Each document's judgement, in the order sent.
    documents: Vec<JudgedOutput<'a>>,
    /// Problems met while judging (unparsed answer parts, missing entries).
    issues: &'a [String],
    /// Milliseconds spent embedding and judging.
    elapsed_ms: f64,
}

/// One judged document.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct JudgedOutput<'a> {
    id: &'a str,
    /// Its score in [0, 1]; null when the evaluator gave none (e.g. an LLM answer missing it).
    score: Option<f32>,
    /// Why it got its score, in one sentence of at most 200 characters; null when the evaluator
    /// gave no reason (the `heuristic` and `calibrated` evaluators never do).
    reason: Option<&'a str>,
    /// Its cosine similarity to the query, clamped to [0, 1] (what the evaluator was shown).
    similarity: f32,
}

/// The answer for `report`, its documents in the order sent.
pub fn evaluate_response(report: &EvaluationReport) -> EvaluateResponse<'_> {
    let e = &report.evaluation;
    EvaluateResponse {
        evaluator: &report.evaluator,
        verdict: e.verdict.as_str(),
        score: e.score,
        reasoning: &e.reasoning,
        criteria: e.criteria.iter().map(CriterionOutput::from).collect(),
        documents: report
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| JudgedOutput {
                id,
                score: e.document_scores.get(i).copied().flatten(),
                reason: e.document_reason(i),
                similarity: report.similarities.get(i).copied().unwrap_or(0.0),
            })
            .collect(),
        issues: &e.issues,
        elapsed_ms: ms(report.elapsed),
    }
}
