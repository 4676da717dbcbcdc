//! LanceDB adapter of crag: a [`VectorIndex`] over one LanceDB table.
//!
//! [`LanceVectorIndex`] stores every [`Chunk`](crag_core::Chunk) field next to its embedding, one row per chunk,
//! and answers nearest-neighbour queries by cosine distance. The table lives wherever
//! `lancedb::connect` can reach: a local directory or an S3-compatible object store
//! ([`StoreOptions`]).
//!
//! Searches are exact (flat) until the table holds [`AnnPolicy`]'s number of rows; then
//! [`VectorIndex::optimize`] builds an IVF-HNSW-SQ index and searches use it, re-scoring its
//! candidates exactly. `optimize` also compacts the small fragments every write leaves.

mod ann;
mod codes;
mod error;
mod flat;
mod keys;
mod keyword;
mod partitions;
mod records;
mod schema;
mod search;
mod store;
mod tidy;
mod vectors;
mod warming;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use arrow_array::RecordBatchIterator;
use async_trait::async_trait;
use crag_core::{ChunkId, DocumentId, ScoredChunk, ScoredId};
use crag_ports::{DocumentEntry, EmbeddedChunk, MemoryCopy, PortError, PortResult, VectorIndex};
use lancedb::Table;

use crate::error::map_lance_error;
pub use crate::flat::DEFAULT_MEMORY_SCAN_ROWS;
pub use crate::keys::{KEY_INDEX_SEGMENTS, WRITES_PER_UPKEEP};
pub use crate::keyword::{LanceKeywordIndex, BACKGROUND_TIDY_ROWS, DEFAULT_TITLE_WEIGHT};
pub use crate::partitions::{
    MemoryPartitioning, DEFAULT_PARTITION_FROM_ROWS, DEFAULT_PARTITION_PROBES,
};
pub use crate::records::{read_record, record_once, RECORDS_TABLE};
use crate::schema::ChunkSchema;
use crate::search::{nearest_of, score_of};
pub use crate::store::{drop_database, StoreOptions};
pub use crate::tidy::CacheBudget;
use crate::tidy::PruneClock;
pub use crate::warming::{Warming, DEFAULT_WARM_WAIT_ROWS};

/// Most document ids put in one `DELETE ... IN (...)` predicate.
const DELETE_BATCH: usize = 512;

/// Rows at which [`AnnPolicy::default`] builds an ANN index. Below it an exact scan is fast
/// enough (SciFact's 10192 chunks: 16 ms, docs/benchmarks.md) and exact.
pub const DEFAULT_ANN_MIN_ROWS: usize = 100_000;

/// Rows per IVF partition of the ANN index: 10k-100k rows make 1 to 13 partitions, each an
/// HNSW graph searched whole.
const ROWS_PER_PARTITION: usize = 8192;

/// Least candidate list of the HNSW search (`ef`): LanceDB's default of 1.5 `k` misses too
/// many neighbours for small `k`. Searches use `max(2 limit, MIN_EF)`.
const MIN_EF: usize = 100;

/// Whether a [`LanceVectorIndex`] searches an approximate (ANN) index or scans every vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnPolicy {
    /// Every search scans all vectors (an index built earlier is bypassed): exact results.
    Off,
    /// [`VectorIndex::optimize`] builds an IVF-HNSW-SQ index (cosine) once the table holds at
    /// least this many rows, and adds later rows to it. Searches then use the index and
    /// re-score its candidates with the full vectors, so scores stay exact cosine; a true
    /// neighbour can be missed (recall@100 0.994 on SciFact, docs/benchmarks.md). Rows not yet
    /// in the index are scanned exactly.
    FromRows(usize),
}

impl Default for AnnPolicy {
    fn default() -> Self {
        Self::FromRows(DEFAULT_ANN_MIN_ROWS)
    }
}

/// An index of a [`LanceVectorIndex`]'s table (the ANN index, as [`LanceVectorIndex::ann_index`]
/// reads it, or the chunk-id index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnIndex {
    /// LanceDB's name of the index.
    pub name: String,
    /// Rows the index covers.
    pub indexed_rows: usize,
    /// Rows written since, scanned exactly until [`VectorIndex::optimize`] adds them.
    pub unindexed_rows: usize,
    /// Segments (delta indexes) the index is stored in; a search consults each.
    pub segments: usize,
}

/// How a [`LanceVectorIndex`]'s table is stored, as [`LanceVectorIndex::layout`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableLayout {
    /// Fragments (files of rows) the table is made of.
    pub fragments: usize,
    /// Fragments of fewer than 100k rows, which compaction merges.
    pub small_fragments: usize,
    /// Rows stored.
    pub rows: usize,
    /// Rows deleted but still on disk (in deletion files) until compaction.
    pub deleted_rows: usize,
}

/// Vector index backed by one LanceDB table.
///
/// Scores are `1 - cosine_distance / 2`, clamped to `[0, 1]`: LanceDB's cosine distance is
/// `1 - cosine_similarity` in `[0, 2]`, so 1 means the same direction, 0.5 orthogonal and
/// 0 opposite. Results come best first; equal scores are ordered by chunk id.
///
/// Cloning is cheap and clones share the table handle.
#[derive(Clone)]
pub struct LanceVectorIndex {
    uri: String,
    table_name: String,
    schema: Arc<ChunkSchema>,
    table: Table,
    ann: AnnPolicy,
    budget: CacheBudget,
    prune: Arc<PruneClock>,
    /// Most rows copied into memory for exact scans (0: none).
    memory_scan_rows: usize,
    /// When the copy is partitioned, and the partitions a search of it visits.
    memory_partitions: MemoryPartitioning,
    /// Most rows of a copy [`LanceVectorIndex::start_warm`] loads before it returns.
    warm_wait_rows: usize,
    /// Partitions of the ANN index a search visits (0: LanceDB's adaptive choice).
    nprobes: usize,
    flat: Arc<flat::FlatCache>,
    /// Writes made through this handle and its clones (see [`keys`]).
    writes: Arc<AtomicUsize>,
}

impl fmt::Debug for LanceVectorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LanceVectorIndex")
            .field("uri", &self.uri)
            .field("table", &self.table_name)
            .field("dimension", &self.schema.dimension())
            .field("ann", &self.ann)
            .field("budget", &self.budget)
            .finish()
    }
}

impl LanceVectorIndex {
    /// Opens the table `table` of the LanceDB database at `uri`, creating an empty one if it
    /// does not exist.
    ///
    /// `uri` is passed to `lancedb::connect` unchanged, so a local directory and an
    /// object-store URI both work. Fails with [`ErrorKind::InvalidInput`] if `dimension` is 0
    /// or the existing table stores vectors of another dimension or has another schema.
    ///
    /// [`ErrorKind::InvalidInput`]: crag_ports::ErrorKind::InvalidInput
    pub async fn open(uri: &str, table: &str, dimension: usize) -> PortResult<Self> {
        Self::open_with(uri, table, dimension, &StoreOptions::default()).await
    }

    /// [`LanceVectorIndex::open`] with the object store's options, the read consistency
    /// and LanceDB's cache budgets of `options`.
    pub async fn open_with(
        uri: &str,
        table: &str,
        dimension: usize,
        options: &StoreOptions,
    ) -> PortResult<Self> {
        let schema = Arc::new(ChunkSchema::new(dimension)?);
        let budget = options.budget;
        let connection = store::connect(uri, options).await?;
        let handle =
            store::open_or_create(&connection, table, schema.arrow(), "vector table").await?;
        let stored = handle
            .schema()
            .await
            .map_err(map_lance_error("failed to read vector table schema"))?;
        schema.check_compatible(table, &stored)?;
        tracing::debug!(uri, table, dimension, "opened lancedb vector table");
        Ok(Self {
            uri: uri.to_owned(),
            table_name: table.to_owned(),
            schema,
            table: handle,
            ann: AnnPolicy::default(),
            budget,
            prune: Arc::default(),
            memory_scan_rows: DEFAULT_MEMORY_SCAN_ROWS,
            memory_partitions: MemoryPartitioning::default(),
            warm_wait_rows: DEFAULT_WARM_WAIT_ROWS,
            nprobes: 0,
            flat: Arc::default(),
            writes: Arc::default(),
        })
    }

    /// Sets the most rows whose vectors are copied into memory, where
    /// [`VectorIndex::nearest_ids`] scans them exactly without LanceDB (default
    /// [`DEFAULT_MEMORY_SCAN_ROWS`]; 0: never). The copy costs rows x dimension x 4 bytes.
    pub fn with_memory_scan(mut self, rows: usize) -> Self {
        self.memory_scan_rows = rows;
        self
    }

    /// Sets when the in-memory copy is partitioned and how many of its partitions a search
    /// visits (default: [`MemoryPartitioning::default`]): a copy of at least `from_rows`
    /// rows is split by k-means into the square root of its rows partitions when it loads,
    /// and a search scans the `probes` partitions nearest the query instead of every row
    /// (faster; a neighbour in a partition not visited is missed). Searches among given
    /// documents scan every row. Acts at the next load for `from_rows`, at once for `probes`.
    pub fn with_memory_partitions(mut self, partitioning: MemoryPartitioning) -> Self {
        self.memory_partitions = partitioning;
        self
    }

    /// Sets how many partitions of the ANN index a search visits (0, the default: LanceDB's
    /// adaptive choice): fewer is faster and finds fewer of the true nearest.
    pub fn with_nprobes(mut self, nprobes: usize) -> Self {
        self.nprobes = nprobes;
        self
    }

    /// Sets when the ANN index is built and used (default: [`AnnPolicy::default`]).
    pub fn with_ann(mut self, ann: AnnPolicy) -> Self {
        self.ann = ann;
        self
    }

    /// Returns the URI of the database holding the table.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Returns the name of the table.
    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    fn check_vector(&self, what: impl FnOnce() -> String, vector: &[f32]) -> PortResult<()> {
        let expected = self.schema.dimension();
        if vector.len() != expected {
            return Err(PortError::invalid_input(format!(
                "{} has dimension {}, expected {expected}",
                what(),
                vector.len()
            )));
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(PortError::invalid_input(format!(
                "{} contains non-finite values",
                what()
            )));
        }
        // Cosine distance is undefined for a zero vector: LanceDB would never return such a
        // row, so it is refused rather than stored unreachable.
        if vector.iter().all(|x| *x == 0.0) {
            return Err(PortError::invalid_input(format!("{} is all zeros", what())));
        }
        Ok(())
    }

    /// Returns how the table is stored: fragments and rows deleted but not yet compacted.
    pub async fn layout(&self) -> PortResult<TableLayout> {
        tidy::layout_of(&self.table).await
    }
}

/// Most documents in one prefiltered LanceDB search (one `IN` list).
pub const PREFILTER_DOCUMENTS: usize = 10_000;

/// Builds the `document_id IN (...)` predicate, quoting ids as SQL string literals.
///
/// LanceDB's SQL dialect reads backslashes literally, so doubling single quotes is the only
/// escaping needed.
fn document_predicate(ids: &[DocumentId]) -> String {
    in_predicate(schema::DOCUMENT_ID, ids.iter().map(DocumentId::as_str))
}

/// `column IN (...)` over `values` quoted as SQL string literals (single quotes doubled).
pub(crate) fn in_predicate<'a>(column: &str, values: impl Iterator<Item = &'a str>) -> String {
    let literals: Vec<String> = values
        .map(|v| format!("'{}'", v.replace('\'', "''")))
        .collect();
    format!("{column} IN ({})", literals.join(", "))
}

#[async_trait]
impl VectorIndex for LanceVectorIndex {
    fn dimension(&self) -> usize {
        self.schema.dimension()
    }

    async fn upsert(&self, records: &[EmbeddedChunk]) -> PortResult<()> {
        for record in records {
            self.check_vector(
                || format!("vector of chunk {}", record.chunk.id),
                &record.vector,
            )?;
        }
        // merge_insert wants unique keys in its input: the last record of a chunk id wins,
        // as if the records were upserted one by one.
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            last.insert(record.chunk.id.as_str(), i);
        }
        let unique: Vec<&EmbeddedChunk> = records
            .iter()
            .enumerate()
            .filter(|(i, r)| last.get(r.chunk.id.as_str()) == Some(i))
            .map(|(_, r)| r)
            .collect();
        if unique.is_empty() {
            return Ok(());
        }
        let batch = self.schema.to_batch(&unique)?;
        let reader = RecordBatchIterator::new([Ok(batch)], self.schema.arrow());
        let mut merge = self.table.merge_insert(&[schema::CHUNK_ID]);
        merge
            .when_matched_update_all(None)
            .when_not_matched_insert_all();
        merge
            .execute(Box::new(reader))
            .await
            .map_err(map_lance_error("failed to upsert into vector table"))?;
        // The write is done: a failed upkeep (e.g. another writer's compaction won the
        // commit) costs speed, not data, and the next one or `optimize` tries again.
        if let Err(error) = self.after_write().await {
            tracing::warn!(%error, "vector table upkeep failed; the next one will try again");
        }
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        for group in ids.chunks(DELETE_BATCH) {
            self.table
                .delete(document_predicate(group).as_str())
                .await
                .map_err(map_lance_error("failed to delete from vector table"))?;
        }
        Ok(())
    }

    async fn nearest(&self, vector: &[f32], k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.check_vector(|| "query vector".to_owned(), vector)?;
        nearest_of(k, |limit| self.search(vector, limit)).await
    }

    /// From the in-memory copy of a table of at most `memory_scan_rows` chunks, else from
    /// LanceDB reading the ids alone.
    async fn nearest_ids(&self, vector: &[f32], k: usize) -> PortResult<Vec<ScoredId>> {
        self.check_vector(|| "query vector".to_owned(), vector)?;
        if k == 0 {
            return Ok(Vec::new());
        }
        if let Some(hits) = self.flat_nearest(vector, k).await? {
            return Ok(hits);
        }
        nearest_of(k, |limit| self.search_ids(vector, limit)).await
    }

    /// An exact scan of the in-memory copy's rows of `documents`; without a copy, a LanceDB
    /// search prefiltered on the document id (`document_id IN (...)`, applied before the
    /// nearest rows are taken, with or without the ANN index), in pieces of at most
    /// [`PREFILTER_DOCUMENTS`] documents merged by score.
    async fn nearest_ids_within(
        &self,
        vector: &[f32],
        k: usize,
        documents: &HashSet<DocumentId>,
    ) -> PortResult<Vec<ScoredId>> {
        self.check_vector(|| "query vector".to_owned(), vector)?;
        if k == 0 || documents.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(hits) = self.flat_nearest_within(vector, k, documents).await? {
            return Ok(hits);
        }
        let mut ids: Vec<&DocumentId> = documents.iter().collect();
        ids.sort();
        let mut hits = Vec::new();
        for piece in ids.chunks(PREFILTER_DOCUMENTS) {
            let predicate = in_predicate(schema::DOCUMENT_ID, piece.iter().map(|d| d.as_str()));
            hits.extend(
                nearest_of(k, |limit| self.search_ids_where(vector, limit, &predicate)).await?,
            );
        }
        search::sort_hits(&mut hits);
        hits.truncate(k);
        Ok(hits)
    }

    /// From the in-memory copy when there is one, else a filtered LanceDB scan.
    async fn vectors(&self, ids: &[ChunkId]) -> PortResult<Vec<(ChunkId, Vec<f32>)>> {
        if let Some(found) = self.flat_vectors(ids).await? {
            return Ok(found);
        }
        self.read_vectors(ids).await
    }

    async fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        self.read_documents().await
    }

    async fn count(&self) -> PortResult<usize> {
        self.table
            .count_rows(None)
            .await
            .map_err(map_lance_error("failed to count vector table rows"))
    }

    /// See [`LanceVectorIndex::tidy`].
    async fn optimize(&self) -> PortResult<()> {
        self.tidy().await?;
        // The writes moved the table's version: the copy is reloaded here (a large one in
        // the background) rather than by the next search. A failure costs nothing but that
        // search's wait.
        if let Err(error) = self.start_warm().await {
            tracing::warn!(%error, "vectors not copied into memory; the next search will try");
        }
        Ok(())
    }

    async fn warm_up(&self) -> PortResult<()> {
        self.warm().await.map(|_| ())
    }

    async fn memory_copy(&self) -> PortResult<Option<MemoryCopy>> {
        if self.memory_scan_rows == 0 {
            return Ok(None);
        }
        self.memory_copy_state().await.map(Some)
    }
}

#[cfg(test)]
mod tests;
