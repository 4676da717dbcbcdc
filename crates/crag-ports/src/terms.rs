//! The term graph (knowledge graph of prose): the key terms of every chunk, whose
//! co-occurrences are the graph's edges. Kept in step with the keyword and vector indexes by
//! ingestion and deletion; read by the `knowledge_graph` route to expand queries.

use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{ChunkTerms, DocumentId, TermNeighbour};

use crate::PortResult;

/// Stores the key terms of chunks and answers co-occurrence questions. Every write is atomic
/// per call.
///
/// Reads never fail on odd input: unknown terms have frequency 0 and no neighbours, a `limit`
/// of 0 gives an empty answer.
#[async_trait]
pub trait TermGraph: Debug + Send + Sync + 'static {
    /// Removes every chunk of the `replaced` documents and stores `chunks`, in one
    /// transaction: readers see the old terms or the new ones, never a mix. A chunk stored
    /// again (same id) is replaced; a chunk with no terms is stored (its document is listed).
    async fn replace_documents(
        &self,
        replaced: &[DocumentId],
        chunks: &[ChunkTerms],
    ) -> PortResult<()>;

    /// Removes every chunk of these documents; unknown ids are ignored.
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()>;

    /// The documents with at least one stored chunk, ordered by id.
    async fn documents(&self) -> PortResult<Vec<DocumentId>>;

    /// The number of chunks stored.
    async fn chunk_count(&self) -> PortResult<u64>;

    /// In how many stored chunks each term is a key term, in the order asked (0 when never).
    async fn frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>>;

    /// The terms that are key terms of at least `min_together` chunks together with `term`
    /// (never `term` itself), with their counts: most shared chunks first, ties by term, at
    /// most `limit`.
    async fn neighbours(
        &self,
        term: &str,
        min_together: u64,
        limit: usize,
    ) -> PortResult<Vec<TermNeighbour>>;
}
