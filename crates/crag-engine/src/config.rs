//! The engine's tunables.

use crag_expansion::GraphConfig;

use crate::chunker::ChunkingConfig;
use crate::code::CodeConfig;
use crate::fusion::{Fusion, DEFAULT_KEYWORD_WEIGHT, RRF_K};
use crate::query_vectors::DEFAULT_QUERY_CACHE_ENTRIES;

/// Tunables of the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// How documents are chunked.
    pub chunking: ChunkingConfig,
    /// Candidates asked of each leg before fusion (at least `top_k`).
    pub leg_depth: usize,
    /// How the two legs are fused: by default the convex combination with weight 0.5, which
    /// beat RRF on SciFact (train and test) and Cranfield (docs/benchmarks.md).
    pub fusion: Fusion,
    /// Reciprocal-rank-fusion constant of the merges of several result lists (sub-queries,
    /// expanded queries), whatever `fusion` is.
    pub rrf_k: f32,
    /// Syntax-aware chunking of source files and the expansion of code results.
    pub code: CodeConfig,
    /// Query embeddings kept for repeated queries (0: none).
    pub query_cache_entries: u64,
    /// The knowledge graph of prose: key terms kept at ingest, query expansion.
    pub graph: GraphConfig,
    /// What hybrid retrieval ranks: whole documents (the keyword leg ranks documents, each
    /// leg keeps a document's best chunk and the fusion adds a document's two legs, each
    /// document returned as one chunk) or chunks (each chunk on its own).
    pub scope: RetrievalScope,
}

/// What hybrid retrieval ranks (`[retrieval] scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetrievalScope {
    /// Whole documents, each shown as its best chunk.
    #[default]
    Documents,
    /// Chunks, each on its own (several of one document may be returned).
    Chunks,
}

impl RetrievalScope {
    /// What one result is under this scope: its document (documents) or itself (chunks).
    /// Lists from several retrievals are fused and de-duplicated by this key, so that one
    /// document shown as two different chunks by two retrievals adds up once.
    pub fn result_key(self, chunk: &crag_core::Chunk) -> &str {
        match self {
            Self::Documents => chunk.document_id.as_str(),
            Self::Chunks => chunk.id.as_str(),
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            chunking: ChunkingConfig::default(),
            leg_depth: 100,
            fusion: Fusion::Convex {
                keyword_weight: DEFAULT_KEYWORD_WEIGHT,
            },
            rrf_k: RRF_K,
            code: CodeConfig::default(),
            query_cache_entries: DEFAULT_QUERY_CACHE_ENTRIES,
            graph: GraphConfig::default(),
            scope: RetrievalScope::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_ports::testsuite::chunk;

    #[test]
    fn a_result_is_its_document_under_documents_scope_and_itself_under_chunks() {
        let (first, second) = (chunk("paper", 0, "", "a"), chunk("paper", 3, "", "b"));
        let documents = RetrievalScope::Documents;
        assert_eq!(documents.result_key(&first), "paper");
        assert_eq!(documents.result_key(&first), documents.result_key(&second));
        let chunks = RetrievalScope::Chunks;
        assert_ne!(chunks.result_key(&first), chunks.result_key(&second));
        assert_eq!(chunks.result_key(&second), second.id.as_str());
    }
}
