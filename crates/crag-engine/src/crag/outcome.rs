//! A query as asked, what the evaluator is shown of it, and what it returns.

use crag_core::{Correction, CorrectionKind, Evaluation, Query, Verdict};
use crag_routing::RoutingDecision;

use super::artifact::Artifact;
use super::rerank::RerankOutcome;
use super::timings::QueryTimings;
use crate::fusion::Fusion;

/// A query with what the caller wants done to it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryRequest {
    /// The query.
    pub query: Query,
    /// Results retrieved (before corrections and packing).
    pub top_k: crag_core::TopK,
    /// Judge and correct the retrieval (Corrective RAG); off: plain hybrid retrieval.
    pub use_crag: bool,
    /// Allow web search (it also needs a configured provider).
    pub use_web_search: bool,
    /// Token budget of the returned context; `None`: the configured default.
    pub token_budget: Option<usize>,
    /// Rerank the candidates (it also needs a configured reranker and `crag.rerank.enabled`).
    pub use_rerank: bool,
    /// Only indexed chunks passing this filter are retrieved (web results are not filtered).
    pub filter: crag_core::ChunkFilter,
    /// How every retrieval of the query fuses its two legs; `None`: the configured fusion.
    pub fusion: Option<Fusion>,
}

impl QueryRequest {
    /// A request with Corrective RAG and web search on and the default budget.
    pub fn new(query: Query, top_k: crag_core::TopK) -> Self {
        Self {
            query,
            top_k,
            use_crag: true,
            use_web_search: true,
            token_budget: None,
            use_rerank: true,
            filter: crag_core::ChunkFilter::default(),
            fusion: None,
        }
    }
}

/// A query's first retrieval as the relevance evaluator is shown it, not yet judged
/// ([`crate::Engine::evaluation_input`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluationInput {
    /// How the query was routed, and why.
    pub route: RoutingDecision,
    /// The first retrieval (after reranking), best first.
    pub artifacts: Vec<Artifact>,
    /// What the evaluator judges: one document per artifact, in the same order.
    pub documents: Vec<crag_core::EvalDocument>,
    /// Things that went wrong without failing the retrieval (a leg or the reranker failing
    /// open).
    pub warnings: Vec<String>,
}

/// What a query returns: the context and how it was judged and corrected.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOutcome {
    /// The query as asked.
    pub query: Query,
    /// How the query was routed, and why.
    pub route: RoutingDecision,
    /// Final context, best first, within the token budget.
    pub artifacts: Vec<Artifact>,
    /// The relevance evaluation of the first retrieval (`None`: CRAG off, no retrieval, or the
    /// evaluator failed open).
    pub evaluation: Option<Evaluation>,
    /// Name of the evaluator that judged.
    pub evaluator: Option<String>,
    /// Corrective actions taken, in order.
    pub corrections: Vec<Correction>,
    /// Whether web results were added.
    pub web_search_used: bool,
    /// Results of the first retrieval (after reranking), before corrections.
    pub original_count: usize,
    /// What the rerank stage did; `None` when no reranker is configured or it is off.
    pub rerank: Option<RerankOutcome>,
    /// Tokens of the returned artifacts.
    pub tokens_used: usize,
    /// The token budget applied.
    pub token_budget: usize,
    /// Per-stage timings.
    pub timings: QueryTimings,
    /// Things that went wrong without failing the query (a leg, the evaluator or web search
    /// failing open).
    pub warnings: Vec<String>,
}

impl QueryOutcome {
    /// The verdict, when the retrieval was judged.
    pub fn verdict(&self) -> Option<Verdict> {
        self.evaluation.as_ref().map(|e| e.verdict)
    }

    /// The decision as counted in metrics and summaries: the verdict's name, `no_retrieval`
    /// when routing skipped retrieval, or `unjudged` (CRAG off, or the evaluator failed open).
    pub fn decision(&self) -> &'static str {
        match (&self.evaluation, self.route.route) {
            (Some(e), _) => e.verdict.as_str(),
            (None, crag_routing::Route::NoRetrieval) => "no_retrieval",
            (None, _) => "unjudged",
        }
    }

    /// The main correction applied, for summaries and metric labels: the name of the
    /// strongest correction made (see [`CorrectionKind::priority`]), or `none`.
    pub fn correction_strategy(&self) -> &'static str {
        CorrectionKind::strategy(&self.corrections)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_prefers_the_strongest_correction() {
        let c = |k| Correction::new(k, "r");
        let strategy = CorrectionKind::strategy;
        assert_eq!(strategy(&[c(CorrectionKind::Keep)]), "none");
        assert_eq!(strategy(&[]), "none");
        assert_eq!(
            strategy(&[c(CorrectionKind::Discard), c(CorrectionKind::Expand)]),
            "expand"
        );
        assert_eq!(
            strategy(&[
                c(CorrectionKind::Discard),
                c(CorrectionKind::Rewrite),
                c(CorrectionKind::WebSearch)
            ]),
            "web_search"
        );
        assert_eq!(
            CorrectionKind::strategies(),
            [
                "web_search",
                "expand",
                "rewrite",
                "refine",
                "discard",
                "none"
            ]
        );
    }
}
