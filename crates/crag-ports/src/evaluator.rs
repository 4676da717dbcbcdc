use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{EvalDocument, Evaluation, Query};

use crate::PortResult;

/// Judges how well retrieved documents answer a query (correct / ambiguous / incorrect).
#[async_trait]
pub trait RelevanceEvaluator: Debug + Send + Sync + 'static {
    /// Returns a short name of the evaluator, e.g. `heuristic`, `llm`, `http`.
    fn name(&self) -> &str;

    /// Evaluates `documents` (best first) against `query`.
    ///
    /// An empty list is judged incorrect. When the evaluator cannot reach a judgement (its
    /// service fails, its answer cannot be parsed) it returns an error, never a guessed verdict.
    async fn evaluate(&self, query: &Query, documents: &[EvalDocument]) -> PortResult<Evaluation>;
}
