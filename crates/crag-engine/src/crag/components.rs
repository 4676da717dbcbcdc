//! What Corrective RAG runs with, and its per-engine runtime state.

use std::sync::Arc;

use crag_core::Query;
use crag_expansion::{QueryExpander, SynonymTable};
use crag_ports::{LanguageModel, RelevanceEvaluator, Reranker, WebSearch};
use crag_routing::{QueryRouter, Route, RoutingDecision};

use super::config::CragConfig;
use super::evaluators::HeuristicRelevance;
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
    /// The LLM-free defaults: heuristic evaluator, seed synonyms, no web search, fresh metrics.
    pub fn heuristic(config: CragConfig) -> Result<Self> {
        Ok(Self {
            evaluator: Arc::new(HeuristicRelevance::new(Default::default())?),
            web_search: None,
            rewriter: None,
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
    pub(crate) parts: CragComponents,
    pub(crate) expander: QueryExpander,
    router: QueryRouter,
    pub(crate) rerank_cache: RerankCache,
}

impl CragRuntime {
    pub(crate) fn new(parts: CragComponents) -> Result<Self> {
        parts.config.validate()?;
        Ok(Self {
            expander: QueryExpander::new(
                parts.synonyms.clone(),
                parts.config.max_synonyms_per_term,
            ),
            router: QueryRouter::new(parts.config.router.clone()),
            rerank_cache: RerankCache::for_config(&parts.config.rerank),
            parts,
        })
    }

    pub(crate) fn metrics(&self) -> &CragMetrics {
        &self.parts.metrics
    }

    pub(crate) fn config(&self) -> &CragConfig {
        &self.parts.config
    }

    pub(crate) fn has_reranker(&self) -> bool {
        self.parts.reranker.is_some() && self.parts.config.rerank.enabled
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
