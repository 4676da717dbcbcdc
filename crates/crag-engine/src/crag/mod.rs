//! Corrective RAG: judge a retrieval (correct / ambiguous / incorrect) and correct it.
//!
//! `plan` decides, purely, which corrective actions a verdict calls for by asking each
//! action in turn; `actions` holds one module per action (when it runs, what it does, its
//! tests, over `testkit` in tests); `run` holds a query's state and the stages every path
//! shares; `query` is `Engine::query`, which runs them in order; `guard` calls external
//! services with a time limit and a fail mode.

mod actions;
mod artifact;
mod candidate_terms;
mod components;
mod config;
mod eval_cache;
mod evaluate;
mod evaluators;
mod feedback;
pub(crate) mod guard;
mod metrics;
mod outcome;
mod plan;
mod query;
mod rerank;
mod retry;
mod run;
mod selfcal;
#[cfg(test)]
mod testkit;
mod timings;

pub use artifact::{Artifact, ArtifactOrigin};
pub(crate) use candidate_terms::CandidateTermsCache;
pub use components::CragComponents;
pub(crate) use components::CragRuntime;
pub(crate) use config::millis;
pub use config::{CragConfig, ExpansionStrategy};
pub use evaluate::{EvaluationReport, JudgedDocument, MAX_EVALUATED_DOCUMENTS};
pub use evaluators::{CalibratedRelevance, HeuristicRelevance, LlmRelevance};
pub use guard::FailMode;
pub use metrics::{CopyReading, CragMetrics};
pub use outcome::{EvaluationInput, QueryOutcome, QueryRequest};
pub use rerank::{RerankConfig, RerankOutcome};
pub use selfcal::pseudo_query;
pub use timings::{QueryTimings, Stage};
