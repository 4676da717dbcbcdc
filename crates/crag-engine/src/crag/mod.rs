//! Corrective RAG: judge a retrieval (correct / ambiguous / incorrect) and correct it.

mod artifact;
mod config;
mod evaluators;
mod metrics;
mod pipeline;
mod rerank;

pub use artifact::{
    Artifact, ArtifactOrigin, EvaluationInput, QueryOutcome, QueryRequest, QueryTimings,
};
pub use config::{CragConfig, FailMode};
pub use evaluators::{CalibratedRelevance, HeuristicRelevance, LlmRelevance};
pub use metrics::CragMetrics;
pub use pipeline::CragComponents;
pub(crate) use pipeline::CragRuntime;
pub use rerank::{RerankConfig, RerankOutcome};
