use std::time::Duration;

use crag_expansion::{PrfConfig, RefineConfig};
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

/// How an ambiguous query is expanded before it is retrieved again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpansionStrategy {
    /// Pseudo-relevance feedback: RM3 terms for the keyword leg, Rocchio for the vector leg.
    #[default]
    Prf,
    /// Synonyms from the synonym table (seed 000).
    Synonyms,
}

/// Tunables of Corrective RAG; defaults from the seeds (see `docs/crag.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CragConfig {
    /// Classify queries first and skip retrieval for greetings, thanks and arithmetic.
    pub routing_enabled: bool,
    /// Query router rules.
    pub router: RouterConfig,
    /// The evaluator judges the first this many results and the corrections work on them;
    /// deeper results (a `top_k` above this) follow unchanged, de-duplicated.
    pub judge_depth: usize,
    /// On an ambiguous verdict, drop the documents scored below the threshold.
    pub ambiguous_filter_enabled: bool,
    /// On an ambiguous verdict, documents scored below this are dropped (seed 001: 0.4); the
    /// documents scored at least this count towards `min_results_before_web_search`.
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
    /// Expand ambiguous queries and retrieve again.
    pub expansion_enabled: bool,
    /// How queries are expanded.
    pub expansion: ExpansionStrategy,
    /// Pseudo-relevance feedback parameters.
    pub prf: PrfConfig,
    /// Weight of a further retrieval (expanded or rewritten query) when it is fused with the
    /// current list by RRF; the current list weighs 1.
    pub further_retrieval_weight: f32,
    /// Judge a corrected list again and keep it only if it scores above the list it corrects.
    pub reevaluate_corrections: bool,
    /// On an incorrect verdict, rewrite the query and retrieve it again.
    pub rewrite_enabled: bool,
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
            judge_depth: 10,
            ambiguous_filter_enabled: true,
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
            expansion: ExpansionStrategy::Prf,
            prf: PrfConfig::default(),
            further_retrieval_weight: 1.0,
            reevaluate_corrections: true,
            rewrite_enabled: true,
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
        if self.judge_depth == 0 {
            return bad("judge_depth", "must be positive");
        }
        if !(0.0..=1.0).contains(&self.further_retrieval_weight) {
            return bad("further_retrieval_weight", "must be within [0, 1]");
        }
        if let Err(why) = self.prf.validate() {
            return bad("prf", &why);
        }
        self.rerank.validate()?;
        if self.refine.sentences_per_strip == 0 {
            return bad("refine.sentences_per_strip", "must be positive");
        }
        Ok(())
    }
}

/// Durations as integer milliseconds in configuration files.
pub(crate) mod millis {
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
