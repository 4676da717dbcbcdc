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
use crag_ports::{PortError, PortResult};
use futures::TryStreamExt;
use lance_linalg::distance::dot::{dot_f32, Dot};

use crate::codes::Codes;
use crate::error::map_lance_error;
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
    /// The rows' eight-bit codes, scanned first.
    codes: Codes,
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
        let hits = tokio::task::spawn_blocking(move || matrix.nearest(&query, k, None))
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
        let hits = tokio::task::spawn_blocking(move || matrix.nearest(&query, k, Some(&documents)))
            .await
            .map_err(|e| PortError::internal("vector scan task failed", e))?;
        Ok(Some(hits))
    }

    /// The rows of the in-memory copy when it holds the current table version, without
    /// loading it.
    pub async fn memory_rows(&self) -> PortResult<Option<usize>> {
        let version = self.table_version().await?;
        Ok(self.flat.current(version).map(|m| m.ids.len()))
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
        let rows = self
            .table
            .count_rows(None)
            .await
            .map_err(map_lance_error("failed to count vector table rows"))?;
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
        // Coding a million rows takes seconds: not on the async runtime's workers.
        let matrix = tokio::task::spawn_blocking(move || Arc::new(matrix.coded()))
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
            codes: Codes::new(&[], dimension),
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

    /// The copy with its rows coded.
    fn coded(mut self) -> Self {
        self.codes = Codes::new(&self.rows, self.dimension);
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
    /// among the best `k` are scored exactly: the result is the exact scan's.
    fn nearest(
        &self,
        query: &[f32],
        k: usize,
        within: Option<&HashSet<DocumentId>>,
    ) -> Vec<ScoredId> {
        if k == 0 {
            return Vec::new();
        }
        let kept = |i: &usize| within.is_none_or(|w| w.contains(&self.documents[*i]));
        let from = k
            .saturating_mul(CODES_FROM_ROWS_PER_HIT)
            .saturating_add(CODES_FROM_ROWS);
        let scored: Vec<(f32, usize)> = if self.ids.len() > from {
            self.candidates(query, k, kept)
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
                .filter(|(_, i)| kept(i))
                .collect()
        };
        self.best(scored, k)
    }

    /// The rows (`kept`, in row order) whose cosine with the unit `query` can be among the
    /// `k` best ([`Codes::candidates`]).
    fn candidates(&self, query: &[f32], k: usize, kept: impl Fn(&usize) -> bool) -> Vec<usize> {
        let rows = self.codes.candidates(query, k, &self.inverse_norms, kept);
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
mod tests {
    use super::*;

    fn built(dimension: usize, read: Vec<(ChunkId, DocumentId, Vec<f32>)>) -> Matrix {
        let mut matrix = Matrix::with_capacity(1, dimension, read.len());
        for (id, document, vector) in read {
            matrix.push(id, document, &vector);
        }
        matrix.coded()
    }

    fn matrix(rows: &[(&str, [f32; 3])]) -> Matrix {
        let read = rows
            .iter()
            .map(|(id, v)| {
                let document = DocumentId::new(format!("doc-{id}")).unwrap();
                (ChunkId::new(*id).unwrap(), document, v.to_vec())
            })
            .collect();
        built(3, read)
    }

    #[test]
    fn stored_vectors_are_given_back_as_stored() {
        let m = matrix(&[("a", [2.0, 0.0, 0.0]), ("b", [1.0, 1.0, 0.0])]);
        let ask = ["b", "missing", "a"].map(|id| ChunkId::new(id).unwrap());
        let found = m.vectors(&ask);
        assert_eq!(
            found,
            vec![
                (ask[0].clone(), vec![1.0, 1.0, 0.0]),
                (ask[2].clone(), vec![2.0, 0.0, 0.0]),
            ]
        );
    }

    #[test]
    fn the_scan_of_codes_finds_what_the_exact_scan_finds() {
        let (rows, dimension) = (3_000, 32);
        let values = crate::codes::tests::values;
        // Rows around a few centres, as embeddings of related texts are.
        let centres: Vec<Vec<f32>> = values(8 * dimension, 3)
            .chunks(dimension)
            .map(<[f32]>::to_vec)
            .collect();
        let noise = values(rows * dimension, 5);
        let read = (0..rows)
            .map(|i| {
                let at = i * dimension;
                let v = centres[i % 8]
                    .iter()
                    .zip(&noise[at..at + dimension])
                    .map(|(c, n)| c + 0.3 * n)
                    .collect();
                let id = ChunkId::new(format!("c{i}")).unwrap();
                (id, DocumentId::new(format!("d{}", i / 2)).unwrap(), v)
            })
            .collect();
        let m = built(dimension, read);
        for shift in values(20 * dimension, 9).chunks(dimension) {
            let raw: Vec<f32> = centres[0]
                .iter()
                .zip(shift)
                .map(|(c, s)| c + 0.5 * s)
                .collect();
            let query = unit(&raw);
            let k = 50;
            let exact = (0..rows).map(|i| (m.exact_score(&query, i), i)).collect();
            let want = m.best(exact, k);
            assert_eq!(m.nearest(&query, k, None), want);
            // The bounds leave few rows to score again.
            let candidates = m.candidates(&query, k, |_| true).len();
            assert!(
                (k..rows / 4).contains(&candidates),
                "{candidates} candidates"
            );
        }
        let within: HashSet<DocumentId> = (0..300)
            .map(|d| DocumentId::new(format!("d{d}")).unwrap())
            .collect();
        let query = unit(&centres[1]);
        let exact = (0..rows)
            .filter(|i| within.contains(&m.documents[*i]))
            .map(|i| (m.exact_score(&query, i), i))
            .collect();
        assert_eq!(m.nearest(&query, 50, Some(&within)), m.best(exact, 50));
    }

    #[test]
    fn the_scan_ranks_by_cosine_and_settles_ties_by_id() {
        let m = matrix(&[
            ("d", [0.0, 1.0, 0.0]),
            ("b", [1.0, 1.0, 0.0]),
            ("c", [2.0, 0.0, 0.0]),
            ("a", [1.0, 0.0, 0.0]),
            ("e", [-1.0, 0.0, 0.0]),
        ]);
        let hits = m.nearest(&unit(&[1.0, 0.0, 0.0]), 3, None);
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(
            ids,
            ["a", "c", "b"],
            "same direction first, equal scores by id"
        );
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        let half = 1.0 - (1.0 - std::f32::consts::FRAC_1_SQRT_2) / 2.0;
        assert!((hits[2].score - half).abs() < 1e-6, "{}", hits[2].score);
        let all = m.nearest(&unit(&[1.0, 0.0, 0.0]), 10, None);
        assert_eq!(all.len(), 5);
        assert_eq!(all[4].id.as_str(), "e");
        assert!(all[4].score.abs() < 1e-6, "opposite scores 0");
        assert!(m.nearest(&unit(&[1.0, 0.0, 0.0]), 0, None).is_empty());
        let within: HashSet<DocumentId> = ["doc-e", "doc-b"]
            .map(|d| DocumentId::new(d).unwrap())
            .into();
        let kept = m.nearest(&unit(&[1.0, 0.0, 0.0]), 10, Some(&within));
        let ids: Vec<&str> = kept.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(
            ids,
            ["b", "e"],
            "only the rows of the documents given, in order"
        );
    }
}
