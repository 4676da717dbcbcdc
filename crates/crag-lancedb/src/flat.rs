//! The exact scan in memory: a copy of a small table's vectors, searched without LanceDB.
//!
//! A LanceDB search, even of one compacted fragment, plans a query, scans the vector column
//! and takes the projected rows: about 12 ms for 10k MiniLM vectors on the 2-core benchmark
//! machine (a Python probe of the SciFact table, ids only; 15 ms with the chunks' text). The
//! same vectors in one `Vec<f32>` are 15 MiB, and a dot product per row finds the same
//! neighbours with the same cosine scores. The copy also gives stored vectors back by id
//! (pseudo-relevance feedback's Rocchio step) without a filtered LanceDB scan. The copy is keyed by the table's
//! version: any write through this handle moves the version, and the next search reloads.
//! Large copies are scanned twice ([`crate::codes`]): eight-bit codes of every row first, then
//! the best estimates again in `f32`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, RwLock};

use crag_core::{ChunkId, DocumentId, ScoredId};
use crag_ports::{MemoryCopy, PortError, PortResult, VectorIndex};
use futures::TryStreamExt;
use lance_linalg::distance::dot::{dot_f32, Dot};

use crate::codes::Codes;
use crate::error::map_lance_error;
use crate::partitions::{partition_count, MemoryPartitioning, Partitions};
use crate::{schema, score_of, LanceVectorIndex};

/// Default most rows of a table copied into memory for exact scans: 1.5 million MiniLM
/// vectors are about 2.1 GiB, and 0.5 GiB more of codes. Larger tables are searched by
/// LanceDB (its ANN index).
pub const DEFAULT_MEMORY_SCAN_ROWS: usize = 1_500_000;

/// A copy of more rows than this many per row asked for (plus [`CODES_FROM_ROWS`]) is
/// scanned by its codes first; a smaller one is scored exactly at once.
const CODES_FROM_ROWS_PER_HIT: usize = 8;

/// Rows beyond those per row asked for from which the codes pay.
const CODES_FROM_ROWS: usize = 128;

/// The vectors of one table version, as stored, in the order read.
#[derive(Debug)]
pub(crate) struct Matrix {
    version: u64,
    dimension: usize,
    ids: Vec<ChunkId>,
    /// The document of each row.
    documents: Vec<DocumentId>,
    rows: Vec<f32>,
    /// `1 / |row|` of each row (stored vectors are never all zeros).
    inverse_norms: Vec<f32>,
    /// Row of each chunk id.
    positions: HashMap<ChunkId, usize>,
    /// The rows' eight-bit codes, scanned first (in the partitions' order when there are).
    codes: Codes,
    /// The copy's partitions when it is large enough ([`MemoryPartitioning`]).
    partitions: Option<Partitions>,
    /// `1 / |row|` in the partitions' order (empty without partitions).
    partition_inverse_norms: Vec<f32>,
}

/// The in-memory copy, when the table is small enough to hold.
#[derive(Debug, Default)]
pub(crate) struct FlatCache {
    matrix: RwLock<Option<Arc<Matrix>>>,
    /// Held while a copy loads: one load at a time (8 clients after a write would otherwise
    /// read 8 copies at once); searches meanwhile go to LanceDB ([`Loading::Elsewhere`]).
    pub(crate) loading: Arc<tokio::sync::Mutex<()>>,
    /// Copies loaded so far.
    loads: AtomicUsize,
}

impl FlatCache {
    fn current(&self, version: u64) -> Option<Arc<Matrix>> {
        let guard = self.matrix.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().filter(|m| m.version == version).cloned()
    }

    fn store(&self, matrix: Option<Arc<Matrix>>) {
        *self.matrix.write().unwrap_or_else(|e| e.into_inner()) = matrix;
    }
}

/// What a search does when the copy is stale and another task is loading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loading {
    /// Waits for that load (warming: the copy is what it is for).
    Wait,
    /// Searches LanceDB instead, rather than wait (a million rows take seconds to copy, a
    /// LanceDB search through its ANN index about 100 ms): its exact scan's results below
    /// `ann_min_rows`, its index's above.
    Elsewhere,
}

impl LanceVectorIndex {
    /// The `k` nearest ids by an exact scan of the in-memory copy, or `None` when the table
    /// holds more than the configured rows (or memory scans are off).
    pub(crate) async fn flat_nearest(
        &self,
        vector: &[f32],
        k: usize,
    ) -> PortResult<Option<Vec<ScoredId>>> {
        let Some(matrix) = self.flat_matrix(Loading::Elsewhere).await? else {
            return Ok(None);
        };
        let query = unit(vector);
        let probes = self.memory_partitions.probes;
        let hits = tokio::task::spawn_blocking(move || matrix.nearest(&query, k, None, probes))
            .await
            .map_err(|e| PortError::internal("vector scan task failed", e))?;
        Ok(Some(hits))
    }

    /// [`LanceVectorIndex::flat_nearest`] among the rows of `documents` only.
    pub(crate) async fn flat_nearest_within(
        &self,
        vector: &[f32],
        k: usize,
        documents: &HashSet<DocumentId>,
    ) -> PortResult<Option<Vec<ScoredId>>> {
        let Some(matrix) = self.flat_matrix(Loading::Elsewhere).await? else {
            return Ok(None);
        };
        let query = unit(vector);
        let documents = documents.clone();
        let hits =
            tokio::task::spawn_blocking(move || matrix.nearest(&query, k, Some(&documents), 0))
                .await
                .map_err(|e| PortError::internal("vector scan task failed", e))?;
        Ok(Some(hits))
    }

    /// The rows of the in-memory copy when it holds the current table version, without
    /// loading it.
    pub async fn memory_rows(&self) -> PortResult<Option<usize>> {
        Ok(self.memory_copy_state().await?.rows)
    }

    /// The partitions of the in-memory copy when it holds the current table version and is
    /// partitioned ([`LanceVectorIndex::with_memory_partitions`]), without loading it.
    pub async fn memory_partitions(&self) -> PortResult<Option<usize>> {
        Ok(self.memory_copy_state().await?.partitions)
    }

    /// The in-memory copy's state without loading it (`VectorIndex::memory_copy`, and the
    /// accessors above).
    pub(crate) async fn memory_copy_state(&self) -> PortResult<MemoryCopy> {
        let version = self.table_version().await?;
        let current = self.flat.current(version);
        Ok(MemoryCopy {
            rows: current.as_ref().map(|m| m.ids.len()),
            partitions: current
                .as_ref()
                .and_then(|m| m.partitions.as_ref().map(Partitions::len)),
            loading: self.memory_loading(),
            loads: self.memory_loads(),
        })
    }

    /// How many times this handle and its clones loaded the in-memory copy (each load reads
    /// every vector of the table).
    pub fn memory_loads(&self) -> usize {
        self.flat.loads.load(AtomicOrdering::Relaxed)
    }

    pub(crate) async fn table_version(&self) -> PortResult<u64> {
        self.table
            .version()
            .await
            .map_err(map_lance_error("failed to read the vector table version"))
    }

    /// The stored vectors of `ids` from the in-memory copy, or `None` when there is none.
    pub(crate) async fn flat_vectors(
        &self,
        ids: &[ChunkId],
    ) -> PortResult<Option<Vec<(ChunkId, Vec<f32>)>>> {
        Ok(self
            .flat_matrix(Loading::Elsewhere)
            .await?
            .map(|m| m.vectors(ids)))
    }

    /// The copy of the current table version, loaded when missing or stale; `None` when
    /// memory scans are off or the table is too large to copy.
    pub(crate) async fn flat_matrix(&self, loading: Loading) -> PortResult<Option<Arc<Matrix>>> {
        if self.memory_scan_rows == 0 {
            return Ok(None);
        }
        let version = self.table_version().await?;
        if let Some(matrix) = self.flat.current(version) {
            return Ok(self.within_limit(matrix));
        }
        let _loading = match loading {
            Loading::Wait => self.flat.loading.lock().await,
            Loading::Elsewhere => match self.flat.loading.try_lock() {
                Ok(guard) => guard,
                Err(_) => {
                    tracing::debug!("vectors being copied into memory; searching LanceDB");
                    return Ok(None);
                }
            },
        };
        self.load_locked(version).await
    }

    /// The copy when this handle's row limit admits it (clones share the copy; each keeps
    /// to its own limit).
    fn within_limit(&self, matrix: Arc<Matrix>) -> Option<Arc<Matrix>> {
        (matrix.ids.len() <= self.memory_scan_rows).then_some(matrix)
    }

    /// The copy of table version `version`, loaded unless another task loaded it first; the
    /// caller holds [`FlatCache::loading`].
    pub(crate) async fn load_locked(&self, version: u64) -> PortResult<Option<Arc<Matrix>>> {
        if let Some(matrix) = self.flat.current(version) {
            return Ok(self.within_limit(matrix));
        }
        let rows = VectorIndex::count(self).await?;
        if rows > self.memory_scan_rows {
            self.flat.store(None);
            return Ok(None);
        }
        // Batch by batch into the copy: no second copy of every vector while it loads.
        let columns = [schema::CHUNK_ID, schema::DOCUMENT_ID, schema::VECTOR];
        let mut batches = self
            .scan_batches(&columns, "failed to read the vectors into memory")
            .await?;
        let mut matrix = Matrix::with_capacity(version, self.schema.dimension(), rows);
        while let Some(batch) = batches.try_next().await? {
            schema::read_vector_rows(&batch, |id, document, vector| {
                matrix.push(id, document, vector);
            })?;
        }
        // Coding (and partitioning) a million rows takes seconds: not on the async runtime's
        // workers.
        let partitioning = self.memory_partitions;
        let matrix = tokio::task::spawn_blocking(move || Arc::new(matrix.coded(partitioning)))
            .await
            .map_err(|e| PortError::internal("vector copy task failed", e))?;
        self.flat.loads.fetch_add(1, AtomicOrdering::Relaxed);
        tracing::debug!(
            rows = matrix.ids.len(),
            version,
            "vectors copied for exact scans"
        );
        self.flat.store(Some(matrix.clone()));
        Ok(Some(matrix))
    }
}

impl Matrix {
    /// The rows copied.
    pub(crate) fn rows(&self) -> usize {
        self.ids.len()
    }

    /// An empty copy of table version `version` with room for `capacity` rows, filled by
    /// [`Matrix::push`], then coded by [`Matrix::coded`].
    fn with_capacity(version: u64, dimension: usize, capacity: usize) -> Self {
        Self {
            version,
            dimension,
            ids: Vec::with_capacity(capacity),
            documents: Vec::with_capacity(capacity),
            rows: Vec::with_capacity(capacity * dimension),
            inverse_norms: Vec::with_capacity(capacity),
            positions: HashMap::with_capacity(capacity),
            codes: Codes::new(&[], dimension, None),
            partitions: None,
            partition_inverse_norms: Vec::new(),
        }
    }

    fn push(&mut self, id: ChunkId, document: DocumentId, vector: &[f32]) {
        let norm = dot_f32(vector, vector).sqrt();
        self.inverse_norms
            .push(if norm > 0.0 { 1.0 / norm } else { 0.0 });
        self.rows.extend_from_slice(vector);
        self.positions.insert(id.clone(), self.ids.len());
        self.ids.push(id);
        self.documents.push(document);
    }

    /// The copy with its rows coded, and partitioned first when `partitioning` applies to
    /// its size (a copy whose partitioning fails is scanned whole, with a warning).
    fn coded(mut self, partitioning: MemoryPartitioning) -> Self {
        let rows = self.ids.len();
        if partitioning.applies(rows) {
            match Partitions::train(&self.rows, self.dimension, partition_count(rows)) {
                Ok(partitions) => {
                    let order = partitions.order();
                    self.partition_inverse_norms = order
                        .iter()
                        .map(|&row| self.inverse_norms[row as usize])
                        .collect();
                    self.codes = Codes::new(&self.rows, self.dimension, Some(order));
                    tracing::debug!(
                        rows,
                        partitions = partitions.len(),
                        "vector copy partitioned"
                    );
                    self.partitions = Some(partitions);
                    return self;
                }
                Err(error) => tracing::warn!(
                    %error,
                    rows,
                    "vector copy not partitioned; every search scans all its rows"
                ),
            }
        }
        self.codes = Codes::new(&self.rows, self.dimension, None);
        self
    }

    /// The stored vectors of `ids`, in the order asked; ids not held are left out.
    fn vectors(&self, ids: &[ChunkId]) -> Vec<(ChunkId, Vec<f32>)> {
        ids.iter()
            .filter_map(|id| {
                let row = *self.positions.get(id)?;
                let at = row * self.dimension;
                Some((id.clone(), self.rows[at..at + self.dimension].to_vec()))
            })
            .collect()
    }

    /// The `k` rows of highest cosine with the unit `query` (among the rows of `within`'s
    /// documents when given), scored as LanceDB scores them (`1 - cosine_distance / 2`),
    /// best first, equal scores by chunk id. A copy of more rows than a few times `k` is
    /// scanned by its codes first ([`Matrix::candidates`]), and only the rows that can be
    /// among the best `k` are scored exactly: the result is the exact scan's over the rows
    /// scanned, which are those of the `probes` partitions nearest the query when the copy is
    /// partitioned and `probes` is fewer than its partitions, else all of them.
    fn nearest(
        &self,
        query: &[f32],
        k: usize,
        within: Option<&HashSet<DocumentId>>,
        probes: usize,
    ) -> Vec<ScoredId> {
        if k == 0 {
            return Vec::new();
        }
        let kept = |i: usize| within.is_none_or(|w| w.contains(&self.documents[i]));
        let from = k
            .saturating_mul(CODES_FROM_ROWS_PER_HIT)
            .saturating_add(CODES_FROM_ROWS);
        let scored: Vec<(f32, usize)> = if self.ids.len() > from {
            self.candidates(query, k, probes, kept)
                .into_iter()
                .map(|i| (self.exact_score(query, i), i))
                .collect()
        } else {
            // One call over all rows: Lance's kernel for the widest SIMD the CPU has.
            let mut dots = vec![0.0f32; self.ids.len()];
            f32::dot_batch_into(query, &self.rows, self.dimension, &mut dots);
            dots.iter()
                .zip(&self.inverse_norms)
                .enumerate()
                .map(|(i, (dot, inverse))| (score_of(1.0 - dot * inverse), i))
                .filter(|(_, i)| kept(*i))
                .collect()
        };
        self.best(scored, k)
    }

    /// The rows (`kept` ones) whose cosine with the unit `query` can be among the `k` best
    /// ([`Codes::candidates`]), of the `probes` partitions nearest the query when the copy is
    /// partitioned (all rows when `probes` is 0 or not fewer than the partitions).
    fn candidates(
        &self,
        query: &[f32],
        k: usize,
        probes: usize,
        kept: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let all = std::iter::once(0..self.ids.len()).collect::<Vec<_>>();
        let rows = match &self.partitions {
            Some(partitions) => {
                let ranges = if probes > 0 && probes < partitions.len() {
                    partitions.nearest(query, probes, k)
                } else {
                    all
                };
                let scanned: usize = ranges.iter().map(ExactSizeIterator::len).sum();
                let found = self.codes.candidates(
                    query,
                    k,
                    &self.partition_inverse_norms,
                    ranges.into_iter().flatten(),
                    |at| kept(partitions.row(at)),
                );
                tracing::trace!(scanned, partitions = partitions.len(), "partitions probed");
                found.into_iter().map(|at| partitions.row(at)).collect()
            }
            None => self.codes.candidates(
                query,
                k,
                &self.inverse_norms,
                all.into_iter().flatten(),
                kept,
            ),
        };
        tracing::trace!(
            rows = self.ids.len(),
            candidates = rows.len(),
            k,
            "vector scan by codes"
        );
        rows
    }

    /// Row `i`'s score for the unit `query`, as the scan of all rows scores it.
    fn exact_score(&self, query: &[f32], i: usize) -> f32 {
        let at = i * self.dimension;
        // The batch kernel, as the scan of all rows: the same rounding, the same scores.
        let mut dot = [0.0f32];
        f32::dot_batch_into(
            query,
            &self.rows[at..at + self.dimension],
            self.dimension,
            &mut dot,
        );
        score_of(1.0 - dot[0] * self.inverse_norms[i])
    }

    /// The best `k` of `scored` rows as hits, best first, equal scores by chunk id.
    fn best(&self, mut scored: Vec<(f32, usize)>, k: usize) -> Vec<ScoredId> {
        let order = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.ids[a.1].cmp(&self.ids[b.1]))
        };
        if k < scored.len() {
            scored.select_nth_unstable_by(k, order);
            scored.truncate(k);
        }
        scored.sort_unstable_by(order);
        scored
            .into_iter()
            .map(|(score, i)| ScoredId {
                id: self.ids[i].clone(),
                score,
            })
            .collect()
    }
}

/// `v` scaled to unit length (unchanged when its norm is 0).
fn unit(v: &[f32]) -> Vec<f32> {
    let norm = dot_f32(v, v).sqrt();
    if norm > 0.0 {
        v.iter().map(|x| x / norm).collect()
    } else {
        v.to_vec()
    }
}

#[cfg(test)]
mod tests;
