//! `[cgrag]`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sources::SourcesConfig;
use crate::crag::FailMode;
use crate::error::{EngineError, Result};

/// Which gap detector runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DetectorKind {
    /// The LLM detector when `[llm]` is configured, the LLM-free one otherwise.
    #[default]
    Auto,
    /// The LLM detector (answers and names gaps; needs `[llm]`).
    Llm,
    /// The LLM-free detector: names used in the code context and defined nowhere in it.
    Code,
}

/// Tunables of CGRAG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CgragConfig {
    /// Passes at most, the first retrieval's included (1..=10).
    pub max_passes: usize,
    /// Chunks one gap's retrieval adds at most.
    pub targeted_top_k: usize,
    /// Gaps retrieved per pass at most; the rest count as unresolved.
    pub max_gaps_per_pass: usize,
    /// Chunks of a symbol gap's one-hop neighbourhood in the symbol graph (callees, owning
    /// type, members, callers) fetched with its definitions at most (0..=20; 0: definitions
    /// only). They come after every definition of the pass and stop when the next context's
    /// room is spent.
    pub neighbourhood: usize,
    /// Chunks shown to the gap detector at most.
    pub context_chunks: usize,
    /// Tokens of context shown to the detector at most (small models have small windows).
    pub context_tokens: usize,
    /// `auto`: the LLM detector when `[llm]` is configured, the LLM-free one otherwise; `llm`;
    /// `code` (LLM-free: names used in the code context and defined nowhere).
    pub detector: DetectorKind,
    /// Ask the LLM detector for JSON instead of `ANSWER:` / `MISSING:` sections.
    pub json_prompt: bool,
    /// Tokens the model may write per pass.
    pub answer_max_tokens: u32,
    /// Upper bound of one detector call (ms).
    #[serde(with = "crate::crag::millis")]
    #[schemars(with = "u64")]
    pub detector_timeout: Duration,
    /// Detector failure: `open` returns the context without an answer (stop `detector_failed`),
    /// `closed` fails the request.
    pub detector_fail_mode: FailMode,
    /// Cached context nodes a session keeps (least recently used out first), and symbols of
    /// its traversed subgraph (least recently traversed out first).
    pub max_cached_nodes: usize,
    /// Where pass 1's context comes from, with weights and caps (`[cgrag.sources.*]`).
    pub sources: SourcesConfig,
}

impl Default for CgragConfig {
    fn default() -> Self {
        Self {
            max_passes: 3,
            targeted_top_k: 3,
            max_gaps_per_pass: 5,
            neighbourhood: 4,
            context_chunks: 8,
            context_tokens: 2500,
            detector: DetectorKind::Auto,
            json_prompt: false,
            answer_max_tokens: 384,
            detector_timeout: Duration::from_secs(60),
            detector_fail_mode: FailMode::Open,
            max_cached_nodes: 50,
            sources: SourcesConfig::default(),
        }
    }
}

impl CgragConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(EngineError::InvalidInput(format!("cgrag.{m}")));
        if !(1..=10).contains(&self.max_passes) {
            return bad("max_passes must be within 1..=10");
        }
        if !(1..=50).contains(&self.targeted_top_k) {
            return bad("targeted_top_k must be within 1..=50");
        }
        if !(1..=20).contains(&self.max_gaps_per_pass) {
            return bad("max_gaps_per_pass must be within 1..=20");
        }
        if self.neighbourhood > 20 {
            return bad("neighbourhood must be within 0..=20");
        }
        if !(1..=100).contains(&self.context_chunks) {
            return bad("context_chunks must be within 1..=100");
        }
        if self.context_tokens < 64 {
            return bad("context_tokens must be at least 64");
        }
        if !(1..=8192).contains(&self.answer_max_tokens) {
            return bad("answer_max_tokens must be within 1..=8192");
        }
        if self.detector_timeout.is_zero() {
            return bad("detector_timeout_ms must be positive");
        }
        if !(1..=1000).contains(&self.max_cached_nodes) {
            return bad("max_cached_nodes must be within 1..=1000");
        }
        self.sources.validate()
    }
}
