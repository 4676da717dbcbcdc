use std::fmt::Debug;

use async_trait::async_trait;

use crate::PortResult;

/// A reranker's judgement of one (query, passage) pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RerankScore {
    /// The model's raw relevance logit; higher is more relevant, unbounded.
    pub logit: f32,
    /// `sigmoid(logit)`, in `[0, 1]`: the scale thresholds are set on.
    pub probability: f32,
}

impl RerankScore {
    /// Builds the score of `logit`, its probability computed without overflow.
    pub fn from_logit(logit: f32) -> Self {
        let probability = if logit >= 0.0 {
            1.0 / (1.0 + (-logit).exp())
        } else {
            let e = logit.exp();
            e / (1.0 + e)
        };
        Self { logit, probability }
    }
}

/// Scores (query, passage) pairs jointly, e.g. with a cross-encoder: the second retrieval stage.
#[async_trait]
pub trait Reranker: Debug + Send + Sync + 'static {
    /// Returns a stable identifier of the model, e.g. `ms-marco-MiniLM-L-6-v2`.
    fn model_id(&self) -> &str;

    /// Returns one score per passage, in input order.
    ///
    /// A passage's score depends only on the query and that passage, not on the others in the
    /// call. An empty or blank query is rejected with `InvalidInput`; no passages give no scores.
    async fn rerank(&self, query: &str, passages: &[String]) -> PortResult<Vec<RerankScore>>;
}
