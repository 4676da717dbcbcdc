//! Searches through LanceDB: whole chunks or ids alone, ties at the k-th settled by id.

use arrow_array::RecordBatch;
use crag_core::{ChunkId, ScoredChunk, ScoredId};
use crag_ports::PortResult;
use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::DistanceType;

use crate::error::map_lance_error;
use crate::schema::{self, VECTOR};
use crate::{AnnPolicy, LanceVectorIndex, MIN_EF};

impl LanceVectorIndex {
    /// Runs a flat or indexed cosine search returning up to `limit` rows as scored chunks.
    pub(crate) async fn search(
        &self,
        vector: &[f32],
        limit: usize,
    ) -> PortResult<Vec<ScoredChunk>> {
        self.search_rows(vector, limit, schema::SEARCH_COLUMNS, "", |batch| {
            Ok(schema::read_rows(batch)?
                .into_iter()
                .map(|(chunk, distance)| ScoredChunk {
                    chunk,
                    score: score_of(distance),
                })
                .collect())
        })
        .await
    }

    /// [`LanceVectorIndex::search`] reading the chunk ids alone.
    pub(crate) async fn search_ids(
        &self,
        vector: &[f32],
        limit: usize,
    ) -> PortResult<Vec<ScoredId>> {
        self.search_ids_where(vector, limit, "").await
    }

    /// [`LanceVectorIndex::search_ids`] among the rows passing the SQL `predicate` (a
    /// prefilter; none when empty).
    pub(crate) async fn search_ids_where(
        &self,
        vector: &[f32],
        limit: usize,
        predicate: &str,
    ) -> PortResult<Vec<ScoredId>> {
        self.search_rows(vector, limit, schema::ID_COLUMNS, predicate, |batch| {
            Ok(schema::read_ids(batch)?
                .into_iter()
                .map(|(id, distance)| ScoredId {
                    id,
                    score: score_of(distance),
                })
                .collect())
        })
        .await
    }

    /// A flat or indexed cosine search of up to `limit` rows, `columns` read, each batch's
    /// rows made into hits by `read`.
    async fn search_rows<T>(
        &self,
        vector: &[f32],
        limit: usize,
        columns: &[&str],
        predicate: &str,
        read: impl Fn(&RecordBatch) -> PortResult<Vec<T>>,
    ) -> PortResult<Vec<T>> {
        let mut hits = Vec::with_capacity(limit);
        for batch in &self
            .search_batches(vector, limit, columns, predicate)
            .await?
        {
            hits.extend(read(batch)?);
        }
        Ok(hits)
    }

    /// The batches of a flat or indexed cosine search of up to `limit` rows, `columns` read,
    /// among the rows passing `predicate` (none when empty).
    async fn search_batches(
        &self,
        vector: &[f32],
        limit: usize,
        columns: &[&str],
        predicate: &str,
    ) -> PortResult<Vec<RecordBatch>> {
        let mut query = self.table.query();
        if !predicate.is_empty() {
            query = query.only_if(predicate);
        }
        let query = query
            .select(Select::columns(columns))
            .nearest_to(vector)
            .map_err(map_lance_error("invalid vector query"))?
            .column(VECTOR)
            .distance_type(DistanceType::Cosine)
            .limit(limit);
        let query = match self.ann {
            AnnPolicy::Off => query.bypass_vector_index(),
            // The index's distances are approximate (quantised vectors): re-score its
            // candidates with the stored vectors. Ignored when there is no index.
            AnnPolicy::FromRows(_) => {
                let query = query
                    .refine_factor(1)
                    .ef(limit.saturating_mul(2).max(MIN_EF));
                if self.nprobes == 0 {
                    query
                } else {
                    query
                        .nprobes(self.nprobes)
                        .map_err(map_lance_error("invalid vector query"))?
                }
            }
        };
        let stream = query
            .execute()
            .await
            .map_err(map_lance_error("failed to search vector table"))?;
        stream
            .try_collect()
            .await
            .map_err(map_lance_error("failed to read vector search results"))
    }
}

/// A search result: its chunk id and score.
pub(crate) trait Hit {
    fn id(&self) -> &ChunkId;
    fn score(&self) -> f32;
}

impl Hit for ScoredChunk {
    fn id(&self) -> &ChunkId {
        &self.chunk.id
    }
    fn score(&self) -> f32 {
        self.score
    }
}

impl Hit for ScoredId {
    fn id(&self) -> &ChunkId {
        &self.id
    }
    fn score(&self) -> f32 {
        self.score
    }
}

/// The `k` best of `search(limit)`, ties at the k-th settled by chunk id. Asks for one row
/// more than needed; while the last row ties with the k-th, rows of that same score may have
/// been left out in storage order: widen until the last row scores strictly lower (or the
/// table is exhausted).
pub(crate) async fn nearest_of<T, F, Fut>(k: usize, mut search: F) -> PortResult<Vec<T>>
where
    T: Hit,
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = PortResult<Vec<T>>>,
{
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut limit = k.saturating_add(1);
    loop {
        let mut hits = search(limit).await?;
        sort_hits(&mut hits);
        let complete = hits.len() < limit
            || hits
                .last()
                .zip(hits.get(k - 1))
                .is_some_and(|(last, kth)| last.score() < kth.score());
        if complete {
            hits.truncate(k);
            return Ok(hits);
        }
        limit = limit.saturating_mul(2);
    }
}

/// Maps a cosine distance in `[0, 2]` to a score in `[0, 1]`, 1 being best.
pub(crate) fn score_of(distance: f32) -> f32 {
    if distance.is_nan() {
        return 0.0;
    }
    (1.0 - distance / 2.0).clamp(0.0, 1.0)
}

/// Best first; equal scores by chunk id, so results do not depend on storage order.
pub(crate) fn sort_hits<T: Hit>(hits: &mut [T]) {
    hits.sort_by(|a, b| {
        b.score()
            .total_cmp(&a.score())
            .then_with(|| a.id().cmp(b.id()))
    });
}
