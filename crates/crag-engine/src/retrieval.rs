//! What a hybrid retrieval returns: the fused hits with their stage timings. A leaf module, so
//! the query outcomes that carry these timings do not depend on the engine facade.

use std::sync::Arc;
use std::time::Duration;

use crag_core::{FusedHit, ScoredChunk};

/// Time spent in each stage of a retrieval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RetrievalTimings {
    /// BM25 search.
    pub keyword: Duration,
    /// Query embedding.
    pub embed: Duration,
    /// Vector search (after embedding).
    pub vector: Duration,
    /// Rank fusion, with the reading of the chunks only the vector leg found (the vector
    /// leg returns ids and scores).
    pub fusion: Duration,
    /// Whole retrieval, legs concurrent.
    pub total: Duration,
}

impl RetrievalTimings {
    /// The parts of a retrieval with their names, as every transport reports them (the
    /// whole retrieval's time is the query's `retrieve`, so `total` is not listed).
    pub fn named(&self) -> [(&'static str, Duration); 4] {
        let Self {
            keyword,
            embed,
            vector,
            fusion,
            total: _,
        } = *self;
        [
            ("keyword", keyword),
            ("embed", embed),
            ("vector", vector),
            ("fusion", fusion),
        ]
    }
}

/// Result of a hybrid retrieval.
#[derive(Debug, Clone, PartialEq)]
pub struct Retrieval {
    /// Fused hits, best first.
    pub hits: Vec<FusedHit>,
    /// Stage timings.
    pub timings: RetrievalTimings,
    /// Legs that failed (the other leg's results are still returned).
    pub warnings: Vec<String>,
    /// Lowest vector-leg score among the leg's candidates: an upper bound of the similarity of
    /// any chunk the vector leg did not return (`None` when the leg returned nothing).
    pub vector_floor: Option<f32>,
    /// The vector the vector leg searched with (`None` when embedding failed).
    pub query_vector: Option<Vec<f32>>,
    /// The keyword leg's hits as the index returned them, best first, before fusion (empty
    /// when the leg failed): a further retrieval whose keyword query analyses to the same
    /// terms takes its first hits from here instead of searching again.
    pub keyword_hits: Arc<Vec<ScoredChunk>>,
}
