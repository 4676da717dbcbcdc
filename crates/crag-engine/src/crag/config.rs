use std::time::Duration;

use crag_expansion::RefineConfig;
use crag_routing::RouterConfig;
use serde::{Deserialize, Serialize};

use super::rerank::RerankConfig;
use crate::error::{EngineError, Result};

/// What to do when an external service (evaluator, web search) fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// Keep what we have, record the failure in the result's warnings.
    #[default]
    Open,
    /// Fail the query with the service's error.
    Closed,
}

/// Tunables of Corrective RAG; defaults from the seeds (see `docs/crag.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CragConfig {
    /// Classify queries first and skip retrieval for greetings, thanks and arithmetic.
    pub routing_enabled: bool,
    /// Query router rules.
    pub router: RouterConfig,
    /// On an ambiguous verdict, documents scored below this are dropped (seed 001: 0.4).
    pub ambiguous_filter_threshold: f32,
    /// Web search runs on an ambiguous verdict when fewer documents than this remain (seed 001: 3).
    pub min_results_before_web_search: usize,
    /// Web results asked for (seed 000: 5).
    pub web_search_limit: usize,
    /// Whether web search may run at all (it also needs a provider).
    pub web_search_enabled: bool,
    /// Web search failure: keep what we have (open) or fail the query (closed).
    pub web_search_fail_mode: FailMode,
    /// Upper bound on one web search call, on top of the adapter's own timeout.
    #[serde(with = "millis")]
    pub web_search_timeout: Duration,
    /// Evaluator failure: return the retrieval unjudged (open) or fail the query (closed).
    pub evaluator_fail_mode: FailMode,
    /// Upper bound on one evaluation, on top of the adapter's own timeouts.
    #[serde(with = "millis")]
    pub evaluator_timeout: Duration,
    /// Tokens of context returned at most, counted with the embedder's tokenizer (seed 000: 8000).
    pub token_budget: usize,
    /// Expand ambiguous queries with synonyms.
    pub expansion_enabled: bool,
    /// Synonyms added per query term (seed 000: 2).
    pub max_synonyms_per_term: usize,
    /// Refine results of a correct verdict to their relevant strips (off: keep them whole).
    pub refine_correct: bool,
    /// Refine results of an ambiguous verdict.
    pub refine_ambiguous: bool,
    /// Refine results of an incorrect verdict (web results, rewritten retrieval).
    pub refine_incorrect: bool,
    /// Strip size and selection of knowledge refinement.
    pub refine: RefineConfig,
    /// Answer budget of an LLM query rewrite.
    pub rewrite_max_tokens: u32,
    /// Two-stage retrieval with a cross-encoder (used when a reranker is configured).
    pub rerank: RerankConfig,
}

impl Default for CragConfig {
    fn default() -> Self {
        Self {
            routing_enabled: true,
            router: RouterConfig::default(),
            ambiguous_filter_threshold: 0.4,
            min_results_before_web_search: 3,
            web_search_limit: 5,
            web_search_enabled: true,
            web_search_fail_mode: FailMode::Open,
            web_search_timeout: Duration::from_secs(10),
            evaluator_fail_mode: FailMode::Open,
            evaluator_timeout: Duration::from_secs(30),
            token_budget: 8000,
            expansion_enabled: true,
            max_synonyms_per_term: 2,
            refine_correct: false,
            refine_ambiguous: true,
            refine_incorrect: true,
            refine: RefineConfig::default(),
            rewrite_max_tokens: 64,
            rerank: RerankConfig::default(),
        }
    }
}

impl CragConfig {
    /// Checks ranges; the message names the offending key.
    pub fn validate(&self) -> Result<()> {
        let bad =
            |key: &str, why: &str| Err(EngineError::InvalidInput(format!("crag.{key}: {why}")));
        if !(0.0..=1.0).contains(&self.ambiguous_filter_threshold) {
            return bad("ambiguous_filter_threshold", "must be within [0, 1]");
        }
        if self.web_search_limit == 0 || self.web_search_limit > 50 {
            return bad("web_search_limit", "must be within 1..=50");
        }
        if self.token_budget == 0 {
            return bad("token_budget", "must be positive");
        }
        if self.web_search_timeout.is_zero() {
            return bad("web_search_timeout", "must be positive");
        }
        if self.evaluator_timeout.is_zero() {
            return bad("evaluator_timeout", "must be positive");
        }
        self.rerank.validate()?;
        if self.refine.sentences_per_strip == 0 {
            return bad("refine.sentences_per_strip", "must be positive");
        }
        Ok(())
    }
}

/// Durations as integer milliseconds in configuration files.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_seeds_and_valid() {
        let c = CragConfig::default();
        assert_eq!(c.ambiguous_filter_threshold, 0.4);
        assert_eq!(c.min_results_before_web_search, 3);
        assert_eq!(c.web_search_limit, 5);
        assert_eq!(c.token_budget, 8000);
        assert_eq!(c.max_synonyms_per_term, 2);
        c.validate().unwrap();
    }

    #[test]
    fn validation_names_the_key() {
        let c = CragConfig {
            ambiguous_filter_threshold: 1.5,
            ..CragConfig::default()
        };
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.contains("ambiguous_filter_threshold"), "{msg}");
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_str::<CragConfig>(r#"{"token_budgett": 5}"#).unwrap_err();
        assert!(err.to_string().contains("token_budgett"));
    }
}
