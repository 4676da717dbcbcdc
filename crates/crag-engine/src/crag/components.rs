//! What Corrective RAG runs with, and its per-engine runtime state.

use std::sync::Arc;
use std::time::Duration;

use crag_core::{EvalDocument, Evaluation, Query};
use crag_expansion::{QueryExpander, SynonymTable};
use crag_ports::{LanguageModel, RelevanceEvaluator, Reranker, WebSearch};
use crag_routing::{QueryRouter, Route, RoutingDecision};

use super::config::CragConfig;
use super::eval_cache::EvaluationCache;
use super::evaluators::HeuristicRelevance;
use super::guard::{guarded, FailMode, Guarded};
use super::metrics::CragMetrics;
use super::rerank::RerankCache;
use crate::error::Result;

/// The parts Corrective RAG runs with; everything but the evaluator is optional.
#[derive(Debug, Clone)]
pub struct CragComponents {
    /// Judges retrievals.
    pub evaluator: Arc<dyn RelevanceEvaluator>,
    /// Web search provider; `None`: no web search.
    pub web_search: Option<Arc<dyn WebSearch>>,
    /// Rewrites incorrect queries; `None`: keyword extraction.
    pub rewriter: Option<Arc<dyn LanguageModel>>,
    /// Chooses the strips knowledge refinement keeps; `None`: the lexical strips.
    pub refiner: Option<Arc<dyn LanguageModel>>,
    /// Cross-encoder for two-stage retrieval; `None`: no reranking.
    pub reranker: Option<Arc<dyn Reranker>>,
    /// Synonyms for query expansion.
    pub synonyms: SynonymTable,
    /// Tunables.
    pub config: CragConfig,
    /// Where decisions, corrections and latencies are counted.
    pub metrics: CragMetrics,
}

impl CragComponents {
    /// The LLM-free defaults: heuristic evaluator, built-in synonyms, no web search, fresh metrics.
    pub fn heuristic(config: CragConfig) -> Result<Self> {
        Ok(Self {
            evaluator: Arc::new(HeuristicRelevance::new(Default::default())?),
            web_search: None,
            rewriter: None,
            refiner: None,
            reranker: None,
            synonyms: SynonymTable::seed_default(),
            config,
            metrics: CragMetrics::new()?,
        })
    }
}

/// Corrective RAG's state in an engine: its parts and what is built from them once.
#[derive(Debug)]
pub(crate) struct CragRuntime {
    pub(crate) components: CragComponents,
    pub(crate) expander: QueryExpander,
    router: QueryRouter,
    pub(crate) rerank_cache: RerankCache,
    pub(crate) evaluation_cache: Option<EvaluationCache>,
}

impl CragRuntime {
    pub(crate) fn new(components: CragComponents) -> Result<Self> {
        components.config.validate()?;
        Ok(Self {
            expander: QueryExpander::new(
                components.synonyms.clone(),
                components.config.max_synonyms_per_term,
            ),
            router: QueryRouter::new(components.config.router.clone()),
            rerank_cache: RerankCache::for_config(&components.config.rerank),
            evaluation_cache: EvaluationCache::new(
                components.config.evaluation_cache_capacity,
                Duration::from_millis(components.config.evaluation_cache_ttl_ms),
            ),
            components,
        })
    }

    /// Judges `documents` with the evaluator, bounded by `crag.evaluator_timeout`, failing
    /// as `fail_mode` says (a failure is counted in `crag_evaluator_failures_total` and
    /// logged either way); a judgement of the same documents within the cache's time to live
    /// is returned from the evaluation cache instead.
    pub(crate) async fn judge(
        &self,
        query: &Query,
        documents: &[EvalDocument],
        fail_mode: FailMode,
    ) -> Result<Guarded<Evaluation>> {
        let evaluator = &self.components.evaluator;
        let name = evaluator.name();
        let cache = (self.evaluation_cache.as_ref())
            .map(|cache| (cache, EvaluationCache::key(name, query, documents)));
        if let Some((cache, key)) = &cache {
            let hit = cache.get(key);
            self.metrics().evaluation_cache(hit.is_some());
            if let Some(evaluation) = hit {
                return Ok(Guarded::Done(evaluation));
            }
        }
        let judged = guarded(
            &format!("evaluator `{name}`"),
            self.config().evaluator_timeout,
            fail_mode,
            evaluator.evaluate(query, documents),
        )
        .await;
        let failure = match &judged {
            Ok(Guarded::Done(evaluation)) => {
                if let Some((cache, key)) = cache {
                    cache.insert(key, evaluation.clone());
                }
                None
            }
            Ok(Guarded::FailedOpen(e)) => Some(e.to_string()),
            Err(e) => Some(e.to_string()),
        };
        if let Some(failure) = failure {
            self.metrics().evaluator_failure(name);
            tracing::warn!(evaluator = name, error = %failure, "relevance evaluation failed");
        }
        judged
    }

    pub(crate) fn metrics(&self) -> &CragMetrics {
        &self.components.metrics
    }

    pub(crate) fn config(&self) -> &CragConfig {
        &self.components.config
    }

    pub(crate) fn has_reranker(&self) -> bool {
        self.components.reranker.is_some() && self.components.config.rerank.enabled
    }

    /// Routes `query`: the router's decision, or a single retrieval when routing is off.
    pub(crate) fn route(&self, query: &Query) -> RoutingDecision {
        if self.config().routing_enabled {
            self.router.classify(query.as_str())
        } else {
            RoutingDecision {
                route: Route::Single,
                reason: "routing is disabled".into(),
                sub_queries: Vec::new(),
            }
        }
    }
}
