//! The stages `crag eval` measures, by name, and the request of the Corrective RAG stage.

use crag_core::{Query, TopK};
use crag_engine::QueryRequest;

/// A way of retrieving that the harness measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The BM25 leg alone.
    Bm25,
    /// The vector leg alone.
    Vector,
    /// Both legs fused.
    Hybrid,
    /// Hybrid with the query expanded by the knowledge graph of prose (needs
    /// `[knowledge_graph] enabled`).
    Graph,
    /// Hybrid, reranked by the configured cross-encoder.
    Rerank,
    /// Hybrid, judged and corrected (no web search, no rerank).
    Crag,
}

impl Stage {
    /// Every stage, in the order they run.
    pub const ALL: [Stage; 6] = [
        Stage::Bm25,
        Stage::Vector,
        Stage::Hybrid,
        Stage::Graph,
        Stage::Rerank,
        Stage::Crag,
    ];

    /// Its name in reports and flags.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Vector => "vector",
            Self::Hybrid => "hybrid",
            Self::Graph => "hybrid+kg",
            Self::Rerank => "hybrid+rerank",
            Self::Crag => "hybrid+crag",
        }
    }
}

/// Parses a stage name as flags spell it.
pub fn parse_stage(name: &str) -> Result<Stage, String> {
    Stage::ALL
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| {
            let names: Vec<_> = Stage::ALL.iter().map(|s| s.name()).collect();
            format!(
                "unknown stage `{name}` (expected one of {})",
                names.join(", ")
            )
        })
}

/// The request of the Corrective RAG stage: no web search, no reranking (that is the
/// hybrid+rerank stage's), `top_k` results judged.
pub fn judged_request(q: &Query, top_k: TopK) -> QueryRequest {
    QueryRequest {
        use_web_search: false,
        use_rerank: false,
        // The ranking is measured, not the packing: no result is left out for the budget.
        token_budget: Some(UNBOUNDED_BUDGET),
        ..QueryRequest::new(q.clone(), top_k)
    }
}

/// A token budget no ranking of at most 1000 chunks reaches.
const UNBOUNDED_BUDGET: usize = 1 << 40;
