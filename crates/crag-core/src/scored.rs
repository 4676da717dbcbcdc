use serde::{Deserialize, Serialize};

use crate::chunk::Chunk;

/// A chunk id with the score one retrieval leg gave it (higher is better), without the
/// chunk: what a vector search returns before the chunks a caller keeps are read.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredId {
    /// The chunk's id.
    pub id: crate::ids::ChunkId,
    /// Leg-specific score, as in [`ScoredChunk::score`].
    pub score: f32,
}

/// A chunk with the score one retrieval leg gave it (higher is better).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Leg-specific score: BM25 score for keywords, cosine similarity mapped to [0, 1] for vectors.
    pub score: f32,
}

/// Rank (1-based) and score of a result in one retrieval leg.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LegHit {
    /// 1-based rank in that leg.
    pub rank: usize,
    /// The leg's own score.
    pub score: f32,
}

/// A result of hybrid retrieval with its fused score and what each leg said of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FusedHit {
    /// The chunk.
    pub chunk: Chunk,
    /// The fusion's score: the convex combination of the normalised leg scores, or the
    /// reciprocal-rank-fusion sum over legs of `1 / (k + rank)`.
    pub fused_score: f32,
    /// Fused score divided by the best score a chunk can reach (first in every leg), in [0, 1].
    pub normalized_score: f32,
    /// Keyword (BM25) leg, when the chunk was in its top results.
    pub keyword: Option<LegHit>,
    /// Vector leg, when the chunk was in its top results.
    pub vector: Option<LegHit>,
}
