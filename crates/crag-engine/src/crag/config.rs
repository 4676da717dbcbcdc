use std::time::Duration;

use crag_expansion::{FeedbackRerankConfig, PrfConfig};
use crag_refine::RefineConfig;
use crag_routing::RouterConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub(crate) use super::guard::FailMode;
use super::rerank::RerankConfig;
use crate::error::{EngineError, Result};

/// How an ambiguous query is expanded before it is retrieved again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExpansionStrategy {
    /// Pseudo-relevance feedback: RM3 terms for the keyword leg, Rocchio for the vector leg.
    #[default]
    Prf,
    /// Synonyms of the query's terms from the synonym table.
    Synonyms,
}

/// Tunables of Corrective RAG (see `docs/crag.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CragConfig {
    /// Corrective RAG runs at all: the deployment's switch. `false`: every query is a plain
    /// hybrid retrieval, as a request with `use_crag` off (no judgement, no correction, no
    /// feedback rerank), whatever the request asks; routing and CGRAG still run.
    pub enabled: bool,
    /// Fail closed everywhere: any evaluator, reranker or web search failure, and any correction
    /// that could not be carried out (a sub-query, the knowledge-graph retrieval, the feedback
    /// rerank's embeddings, the language model's rewrite), fails the query (HTTP 503 / gRPC
    /// UNAVAILABLE) instead of falling back with a warning; overrides `evaluator_fail_mode`,
    /// `web_search_fail_mode` and `rerank.fail_mode`.
    pub strict: bool,
    /// Classify queries first; greetings, thanks, arithmetic skip retrieval.
    pub routing_enabled: bool,
    /// Query router rules.
    pub router: RouterConfig,
    /// The evaluator judges and the corrections act on the first this many results; deeper ones
    /// follow unchanged (>= 1).
    pub judge_depth: usize,
    /// Ambiguous verdict: drop documents scored below the threshold (never unscored ones, never
    /// all).
    pub ambiguous_filter_enabled: bool,
    /// Ambiguous verdict: documents scored below are dropped (0..=1); documents scored at least
    /// this count as good for `min_results_before_web_search`.
    pub ambiguous_filter_threshold: f32,
    /// Ambiguous verdict: web search when fewer documents remain.
    pub min_results_before_web_search: usize,
    /// Web results asked for (1..=50).
    pub web_search_limit: usize,
    /// Web search may run at all (it also needs `[web_search] provider`).
    pub web_search_enabled: bool,
    /// Web search failure: `open` keeps the results, `closed` fails the query (HTTP 503 /
    /// UNAVAILABLE).
    pub web_search_fail_mode: FailMode,
    /// Upper bound of one web search call (ms), on top of the adapter's own timeout.
    #[serde(with = "millis")]
    #[schemars(with = "u64")]
    pub web_search_timeout: Duration,
    /// Evaluator failure: `open` returns results unjudged, `closed` fails the query.
    pub evaluator_fail_mode: FailMode,
    /// Upper bound of one evaluation (ms), on top of the adapter's own timeouts.
    #[serde(with = "millis")]
    #[schemars(with = "u64")]
    pub evaluator_timeout: Duration,
    /// Default token budget of the returned context, counted with the embedder's tokenizer.
    pub token_budget: usize,
    /// Ambiguous verdict: expand the query, retrieve again, fuse. Off by default: under whole
    /// documents it no longer pays (nDCG@10 of hybrid + CRAG +0.0001 on SciFact train, -0.0018 on
    /// Cranfield, and +0.0018 on SciFact test without it) and costs a second retrieval (p50 +5 ms
    /// on SciFact): [benchmarks.md](benchmarks.md), "Query expansion off by default".
    pub expansion_enabled: bool,
    /// `prf`: pseudo-relevance feedback (RM3 terms on BM25, Rocchio on the vector leg); `synonyms`:
    /// the synonym table.
    pub expansion: ExpansionStrategy,
    /// Pseudo-relevance feedback parameters.
    pub prf: PrfConfig,
    /// Weight of an expanded or rewritten retrieval in the RRF with the current list (which weighs
    /// 1), 0..=1.
    pub further_retrieval_weight: f32,
    /// Depth of each leg in an expanded or rewritten retrieval, counted like
    /// `retrieval.leg_depth` (at least `judge_depth`): its list is cut to the judged head and
    /// fused by rank with the current list, so it needs fewer candidates than the first.
    pub further_leg_depth: usize,
    /// Judge an expanded or rewritten list again and keep it only if it scores higher (`false`:
    /// the fused list is kept, judged once). Off by default: on SciFact train and Cranfield the
    /// second judgement kept no better lists than fusing every keyword rewrite (0.7397 / 0.4440
    /// against 0.7406 / 0.4443 nDCG@10, equal ablated) and cost a judge call per rewrite
    /// ([benchmarks.md](benchmarks.md), "A rewrite fused without a second judgement"). Turn it
    /// on with a language model's rewrites or expansions (not measured without it); retries
    /// need it.
    pub reevaluate_corrections: bool,
    /// Incorrect verdict: rewrite the query (LLM or keywords), retrieve it, fuse.
    pub rewrite_enabled: bool,
    /// Further attempts after an expansion or rewrite whose list did not judge better
    /// (0..=2): the rewrite, then the configured expansion, then the other one, each not yet
    /// tried, each kept only if it judges better; needs `reevaluate_corrections`.
    pub max_retries: usize,
    /// A retry starts only while the query has run for less than this (ms).
    pub retry_time_limit_ms: u64,
    /// Synonyms added per term.
    pub max_synonyms_per_term: usize,
    /// Refine results of a correct verdict to their relevant strips.
    pub refine_correct: bool,
    /// Refine results of an ambiguous verdict.
    pub refine_ambiguous: bool,
    /// Refine results of an incorrect verdict.
    pub refine_incorrect: bool,
    /// Strip size and selection of knowledge refinement.
    pub refine: RefineConfig,
    /// Answer budget of an LLM query rewrite.
    pub rewrite_max_tokens: u32,
    /// Two-stage retrieval with a cross-encoder (used when a reranker is configured).
    pub rerank: RerankConfig,
    /// The first retrieval's top candidates reordered by their similarity to its first
    /// results (pseudo-relevance feedback on the document side); with Corrective RAG only
    /// (`use_crag`), when no cross-encoder reranks, and not for multi-step questions.
    pub feedback_rerank: FeedbackRerankConfig,
    /// Evaluations kept for a query judged again over the same documents (keyed by the
    /// evaluator, the query and everything each document shows it: id, source, text,
    /// similarity, retrieval signals; a re-ingested document never meets a stale entry); `0`
    /// turns the cache off. Hits and misses: `crag_evaluation_cache_total`.
    pub evaluation_cache_capacity: usize,
    /// How long a cached evaluation stays valid, in milliseconds.
    pub evaluation_cache_ttl_ms: u64,
}

impl Default for CragConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            strict: false,
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
            expansion_enabled: false,
            expansion: ExpansionStrategy::Prf,
            prf: PrfConfig::default(),
            further_retrieval_weight: 1.0,
            further_leg_depth: 30,
            reevaluate_corrections: false,
            rewrite_enabled: true,
            max_retries: 0,
            retry_time_limit_ms: 2_000,
            max_synonyms_per_term: 2,
            refine_correct: false,
            refine_ambiguous: true,
            refine_incorrect: true,
            refine: RefineConfig::default(),
            rewrite_max_tokens: 64,
            rerank: RerankConfig::default(),
            feedback_rerank: FeedbackRerankConfig::default(),
            evaluation_cache_capacity: 10_000,
            evaluation_cache_ttl_ms: 3_600_000,
        }
    }
}

impl CragConfig {
    /// `configured`, or [`FailMode::Closed`] under `strict`.
    pub fn fail_mode(&self, configured: FailMode) -> FailMode {
        if self.strict {
            FailMode::Closed
        } else {
            configured
        }
    }

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
        if self.further_leg_depth == 0 || self.further_leg_depth > 10_000 {
            return bad("further_leg_depth", "must be within 1..=10000");
        }
        if self.max_retries > 2 {
            return bad("max_retries", "must be within 0..=2");
        }
        if self.max_retries > 0 && !self.reevaluate_corrections {
            return bad(
                "max_retries",
                "needs crag.reevaluate_corrections = true (a retry follows an attempt judged \
                 no better)",
            );
        }
        if let Err(why) = self.prf.validate() {
            return bad("prf", &why);
        }
        self.rerank.validate()?;
        if let Err(why) = self.feedback_rerank.validate() {
            return bad("feedback_rerank", &why);
        }
        if self.refine.sentences_per_strip == 0 {
            return bad("refine.sentences_per_strip", "must be positive");
        }
        if !(1..=20).contains(&self.refine.llm_candidates) {
            return bad("refine.llm_candidates", "must be within 1..=20");
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
    fn strict_closes_every_fail_mode() {
        let lenient = CragConfig::default();
        assert!(lenient.enabled && !lenient.strict);
        assert_eq!(lenient.fail_mode(FailMode::Open), FailMode::Open);
        assert_eq!(lenient.fail_mode(FailMode::Closed), FailMode::Closed);
        let strict = CragConfig {
            strict: true,
            ..CragConfig::default()
        };
        assert_eq!(strict.fail_mode(FailMode::Open), FailMode::Closed);
    }

    #[test]
    fn validation_names_the_key() {
        let c = CragConfig {
            ambiguous_filter_threshold: 1.5,
            ..CragConfig::default()
        };
        let msg = c.validate().unwrap_err().to_string();
        assert!(msg.contains("ambiguous_filter_threshold"), "{msg}");
        for depth in [0, 10_001] {
            let c = CragConfig {
                further_leg_depth: depth,
                ..CragConfig::default()
            };
            let msg = c.validate().unwrap_err().to_string();
            assert!(msg.contains("further_leg_depth"), "{msg}");
        }
    }

    #[test]
    fn retries_need_a_second_judgement() {
        let retrying = CragConfig {
            max_retries: 1,
            ..CragConfig::default()
        };
        let msg = retrying.validate().unwrap_err().to_string();
        assert!(
            msg.contains("max_retries") && msg.contains("reevaluate_corrections"),
            "{msg}"
        );
        CragConfig {
            reevaluate_corrections: true,
            ..retrying
        }
        .validate()
        .unwrap();
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_str::<CragConfig>(r#"{"token_budgett": 5}"#).unwrap_err();
        assert!(err.to_string().contains("token_budgett"));
    }
}
