use std::collections::HashSet;
use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{Chunk, ChunkId, DocumentId, ScoredChunk, ScoredId};

use crate::metadata::FIRST_DEPTH;
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

    /// Like [`VectorIndex::nearest_ids`] among the chunks of `documents` only: the `k`
    /// nearest of them, whatever their rank among all chunks (`k` whenever `k` are stored).
    /// An index restricts its search (LanceDB: a prefilter on the document id, or the scan of
    /// those rows); the default searches ever deeper until `k` pass or every chunk was seen.
    async fn nearest_ids_within(
        &self,
        vector: &[f32],
        k: usize,
        documents: &HashSet<DocumentId>,
    ) -> PortResult<Vec<ScoredId>> {
        nearest_deeper(self, vector, k, documents).await
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

    /// Loads what searches read from memory, waiting for a load in progress (one started in
    /// the background at open or by [`VectorIndex::optimize`]), so that the searches that
    /// follow all take the same path: for runs that compare answers (evaluations, batches).
    /// The default does nothing, for indexes that hold nothing in memory.
    async fn warm_up(&self) -> PortResult<()> {
        Ok(())
    }

    /// The state of the copy of the vectors searches read from memory, for monitoring;
    /// `None` for an index that keeps no such copy (or has it switched off). The default is
    /// `None`.
    async fn memory_copy(&self) -> PortResult<Option<MemoryCopy>> {
        Ok(None)
    }
}

/// The state of a vector index's in-memory copy ([`VectorIndex::memory_copy`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryCopy {
    /// Rows of the copy of the current version of the vectors; `None` while no copy of it is
    /// loaded (searches read the store meanwhile).
    pub rows: Option<usize>,
    /// Partitions of that copy, when it is partitioned.
    pub partitions: Option<usize>,
    /// Whether a copy is being loaded now.
    pub loading: bool,
    /// Copies loaded since the index was opened.
    pub loads: usize,
}

/// The default [`VectorIndex::nearest_ids_within`]: ever deeper searches, filtered.
async fn nearest_deeper<V: VectorIndex + ?Sized>(
    index: &V,
    vector: &[f32],
    k: usize,
    documents: &HashSet<DocumentId>,
) -> PortResult<Vec<ScoredId>> {
    if k == 0 || documents.is_empty() {
        return Ok(Vec::new());
    }
    let mut depth = k.saturating_mul(FIRST_DEPTH);
    loop {
        let hits = index.nearest(vector, depth).await?;
        let exhausted = hits.len() < depth || depth == usize::MAX;
        let kept: Vec<ScoredId> = hits
            .into_iter()
            .filter(|h| documents.contains(&h.chunk.document_id))
            .take(k)
            .map(|h| ScoredId {
                id: h.chunk.id,
                score: h.score,
            })
            .collect();
        if kept.len() >= k || exhausted {
            return Ok(kept);
        }
        depth = depth.saturating_mul(FIRST_DEPTH);
    }
}
