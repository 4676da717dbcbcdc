use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{Chunk, ChunkId, DocumentId, ScoredChunk, ScoredId};

use crate::{DocumentEntry, PortResult};

/// A chunk and its embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Its embedding, of the index's dimension.
    pub vector: Vec<f32>,
}

/// Nearest-neighbour index over chunk embeddings, by cosine similarity.
#[async_trait]
pub trait VectorIndex: Debug + Send + Sync + 'static {
    /// Returns the dimension of the stored vectors.
    fn dimension(&self) -> usize;

    /// Inserts records, replacing any stored record with the same chunk id.
    async fn upsert(&self, records: &[EmbeddedChunk]) -> PortResult<()>;

    /// Removes every chunk of the given documents.
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()>;

    /// Returns the `k` chunks closest to `vector`, best first, each scored in [0, 1]
    /// (`1 - cosine_distance / 2`: 1 is the same direction, 0.5 orthogonal, 0 opposite).
    async fn nearest(&self, vector: &[f32], k: usize) -> PortResult<Vec<ScoredChunk>>;

    /// Like [`VectorIndex::nearest`] without the chunks: the same ids, scores and order, but
    /// no chunk text or metadata is read, so a caller reads only the chunks it keeps (hybrid
    /// retrieval reads them after fusion, from the keyword index). Scores may differ from
    /// `nearest`'s in the last float bits when an adapter computes them another way. The
    /// default reads the chunks and drops them.
    async fn nearest_ids(&self, vector: &[f32], k: usize) -> PortResult<Vec<ScoredId>> {
        Ok(self
            .nearest(vector, k)
            .await?
            .into_iter()
            .map(|hit| ScoredId {
                id: hit.chunk.id,
                score: hit.score,
            })
            .collect())
    }

    /// Returns the number of chunks stored.
    async fn count(&self) -> PortResult<usize>;

    /// Lists the stored documents, ordered by id, each with its number of chunks and the
    /// content hash of its first chunk by id (as the keyword index lists them). Compared with
    /// the keyword index's catalogue to find what one index holds and the other does not, or
    /// holds at another version (an interrupted or failed write).
    async fn documents(&self) -> PortResult<Vec<DocumentEntry>>;

    /// Returns the stored embeddings of the given chunks, in the order asked; ids not stored
    /// are left out (no error). Used to move a query towards its feedback documents without
    /// embedding them again.
    async fn vectors(&self, ids: &[ChunkId]) -> PortResult<Vec<(ChunkId, Vec<f32>)>>;

    /// Tidies storage after writes so that searches stay fast: an index whose every write
    /// leaves a file of its own merges them, applies pending deletions and drops superseded
    /// versions. Every stored record, [`VectorIndex::count`] and every search result are the
    /// same before and after. Cheap when there is nothing to tidy; called after each
    /// ingestion. The default does nothing, for indexes that need no such upkeep.
    async fn optimize(&self) -> PortResult<()> {
        Ok(())
    }
}
