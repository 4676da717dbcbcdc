//! A [`KeywordIndex`] inside LanceDB: BM25 from LanceDB's own full-text (inverted) index,
//! so that both legs live in one database, which may be an object store, and a replica needs
//! no local index.
//!
//! crag analyses the text (`crag-text`: the tokens, stemmer and stop words Tantivy's adapter
//! uses) and stores each chunk's title and text terms space-separated; LanceDB indexes them
//! split on whitespace, nothing more, so both adapters rank the same terms. A chunk scores
//! the BM25 of its text plus `title_weight` times the BM25 of its title (LanceDB's k1 1.2,
//! b 0.75). Rows written since the full-text index was last updated are searched too (LanceDB
//! scans them); [`KeywordIndex::optimize`] (after each ingestion) brings them in, as a write
//! does in the background once [`BACKGROUND_TIDY_ROWS`] wait.

mod rows;
mod search;

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::RecordBatchIterator;
use async_trait::async_trait;
use crag_core::{Chunk, ChunkId, DocumentId, ScoredChunk, WeightedTerm};
use crag_ports::{DocumentEntries, DocumentEntry, KeywordIndex, PortError, PortResult};
use futures::TryStreamExt;
use lancedb::index::scalar::FtsIndexBuilder;
use lancedb::index::Index;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::OptimizeAction;
use lancedb::Table;

use crate::error::map_lance_error;
use crate::schema;
use crate::store::{self, connect, StoreOptions};
use crate::tidy::{compact_if_needed, prune_if_due, PruneClock};
use crate::{in_predicate, DELETE_BATCH};

/// Unindexed rows at which a write starts bringing them into the full-text index in the
/// background, without waiting for the end of the ingestion.
pub const BACKGROUND_TIDY_ROWS: usize = 50_000;

/// The title's weight against the text's when none is set: 1, both fields alike.
pub const DEFAULT_TITLE_WEIGHT: f32 = 1.0;

/// Keyword index backed by one LanceDB table with a full-text index on its term columns.
///
/// Cloning is cheap and clones share the table handle.
#[derive(Clone)]
pub struct LanceKeywordIndex {
    uri: String,
    table_name: String,
    table: Table,
    title_weight: f32,
    /// Whether an index update is running in the background.
    updating: Arc<AtomicBool>,
    /// When the table's old versions were last pruned.
    prune: Arc<PruneClock>,
    /// Set once both full-text indexes are seen to exist (they are never dropped), so a
    /// search need not list the table's indexes.
    indexed: Arc<AtomicBool>,
    /// Held by whatever changes the full-text index through this handle (its creation, its
    /// updates): two at once would only make one of them fail with a commit conflict.
    maintenance: Arc<tokio::sync::Mutex<()>>,
}

impl fmt::Debug for LanceKeywordIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LanceKeywordIndex")
            .field("uri", &self.uri)
            .field("table", &self.table_name)
            .field("title_weight", &self.title_weight)
            .finish()
    }
}

impl LanceKeywordIndex {
    /// Opens the keyword table `table` of the LanceDB database at `uri` (a directory or an
    /// object-store URI, reached with `options`), creating an empty one if it does not exist.
    pub async fn open(uri: &str, table: &str, options: &StoreOptions) -> PortResult<Self> {
        let connection = connect(uri, options).await?;
        let handle =
            store::open_or_create(&connection, table, rows::arrow(), "keyword table").await?;
        let stored = handle
            .schema()
            .await
            .map_err(map_lance_error("failed to read keyword table schema"))?;
        rows::check_compatible(table, &stored)?;
        Ok(Self {
            uri: uri.to_owned(),
            table_name: table.to_owned(),
            table: handle,
            title_weight: DEFAULT_TITLE_WEIGHT,
            updating: Arc::default(),
            prune: Arc::default(),
            indexed: Arc::default(),
            maintenance: Arc::default(),
        })
    }

    /// Sets the title's BM25 weight against the text's (0: titles not searched). Fails
    /// unless finite and not negative.
    pub fn with_title_weight(mut self, weight: f32) -> PortResult<Self> {
        if !weight.is_finite() || weight < 0.0 {
            return Err(PortError::invalid_input(format!(
                "title weight must be finite and >= 0, got {weight}"
            )));
        }
        self.title_weight = weight;
        Ok(self)
    }

    /// Rows the full-text index does not cover yet (scanned by every search until the
    /// background update adds them); `None` before the index exists.
    pub async fn unindexed_rows(&self) -> PortResult<Option<usize>> {
        let Some(name) = self.index_name(rows::TEXT_TERMS).await? else {
            return Ok(None);
        };
        let stats = self
            .table
            .index_stats(&name)
            .await
            .map_err(map_lance_error(
                "failed to read the full-text index's statistics",
            ))?;
        Ok(stats.map(|s| s.num_unindexed_rows))
    }

    /// Asks LanceDB to load the full-text indexes into its cache now, so that searches do
    /// not fetch them term by term (from an object store, a request each); how many indexes
    /// there were to load.
    pub async fn warm(&self) -> PortResult<usize> {
        let mut warmed = 0;
        for column in [rows::TITLE_TERMS, rows::TEXT_TERMS] {
            if let Some(name) = self.index_name(column).await? {
                self.table
                    .prewarm_index(&name)
                    .await
                    .map_err(map_lance_error("failed to load the full-text index"))?;
                warmed += 1;
            }
        }
        Ok(warmed)
    }

    /// Brings the full-text index up to date now: creates it when the table has rows and no
    /// index, else adds the rows written since its last update.
    pub async fn update_index(&self) -> PortResult<()> {
        if !self.ensure_index().await? {
            return Ok(());
        }
        let _guard = self.maintenance.lock().await;
        retry_conflicts(|| {
            self.table
                .optimize(OptimizeAction::Index(Default::default()))
        })
        .await
        .map_err(map_lance_error("failed to update the full-text index"))?;
        Ok(())
    }

    async fn index_name(&self, column: &str) -> PortResult<Option<String>> {
        let indices = self.table.list_indices().await.map_err(map_lance_error(
            "failed to list the keyword table's indexes",
        ))?;
        Ok(indices
            .into_iter()
            .find(|i| i.columns.iter().any(|c| c == column))
            .map(|i| i.name))
    }

    /// Creates the full-text index of each term column that has none, once the table holds
    /// rows (LanceDB builds none over an empty table); whether both exist afterwards.
    async fn ensure_index(&self) -> PortResult<bool> {
        if self.indexed.load(Ordering::Acquire) {
            return Ok(true);
        }
        let mut missing = Vec::new();
        for column in [rows::TITLE_TERMS, rows::TEXT_TERMS] {
            if self.index_name(column).await?.is_none() {
                missing.push(column);
            }
        }
        if missing.is_empty() {
            self.indexed.store(true, Ordering::Release);
            return Ok(true);
        }
        let _guard = self.maintenance.lock().await;
        if self.count().await? == 0 {
            return Ok(false);
        }
        for column in missing {
            // Looked up again under the lock: created meanwhile through this handle?
            if self.index_name(column).await?.is_some() {
                continue;
            }
            let created = retry_conflicts(|| {
                self.table
                    .create_index(&[column], Index::FTS(fts_params()))
                    .execute()
            })
            .await;
            match created {
                Ok(()) => {
                    tracing::info!(table = %self.table_name, column, "created full-text index")
                }
                // Another process created it since the lookup.
                Err(e) if self.index_name(column).await?.is_some() => {
                    tracing::debug!(error = %e, column, "full-text index created elsewhere");
                }
                Err(e) => return Err(map_lance_error("failed to create the full-text index")(e)),
            }
        }
        self.indexed.store(true, Ordering::Release);
        Ok(true)
    }

    /// Upkeep after writes, as the vector table gets it: the full-text index brought up to
    /// date, the small fragments compacted once there are 8 (or a tenth of the rows is
    /// deleted), versions superseded over 10 minutes ago pruned at most once a minute.
    pub async fn tidy(&self) -> PortResult<()> {
        self.update_index().await?;
        // A compaction that loses a commit race to another writer fails here and is tried
        // again after the next write.
        let _guard = self.maintenance.lock().await;
        compact_if_needed(&self.table).await?;
        prune_if_due(&self.table, &self.prune).await
    }

    /// After a write: when the index does not exist yet, or [`BACKGROUND_TIDY_ROWS`] rows
    /// are unindexed (a long ingestion), [`LanceKeywordIndex::tidy`] in the background, one
    /// at a time. Otherwise the rows are searched unindexed until the ingestion's end calls
    /// [`KeywordIndex::optimize`].
    fn after_write(&self) {
        if self.updating.swap(true, Ordering::AcqRel) {
            return;
        }
        let index = self.clone();
        tokio::spawn(async move {
            let due = match index.unindexed_rows().await {
                Ok(None) => true,
                Ok(Some(rows)) => rows >= BACKGROUND_TIDY_ROWS,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the full-text index's statistics");
                    false
                }
            };
            if due {
                if let Err(error) = index.tidy().await {
                    tracing::warn!(%error, "keyword table not tidied; searches scan the new rows");
                }
            }
            index.updating.store(false, Ordering::Release);
        });
    }

    async fn read_chunks(&self, predicate: &str) -> PortResult<Vec<Chunk>> {
        let batches: Vec<arrow_array::RecordBatch> = self
            .table
            .query()
            .only_if(predicate)
            .select(Select::columns(&[rows::CHUNK]))
            .execute()
            .await
            .map_err(map_lance_error("failed to read keyword table"))?
            .try_collect()
            .await
            .map_err(map_lance_error("failed to read keyword table"))?;
        let mut chunks = Vec::new();
        for batch in &batches {
            chunks.extend(rows::read_chunks(batch, false)?.into_iter().map(|(c, _)| c));
        }
        Ok(chunks)
    }
}

/// The full-text index's analysis: none beyond splitting on whitespace, the terms being
/// crag's already.
fn fts_params() -> FtsIndexBuilder {
    FtsIndexBuilder::default()
        .base_tokenizer("whitespace".to_owned())
        .lower_case(false)
        .stem(false)
        .remove_stop_words(false)
        .ascii_folding(false)
        .max_token_length(None)
        .with_position(false)
}

/// Attempts at a write that lost a commit race to another writer of the table.
const CONFLICT_ATTEMPTS: u32 = 5;

/// Runs `write` again (after 50, 100, 200, ... ms) while it fails with a commit conflict:
/// another process (or handle) committed first, and the write is valid on the new version.
async fn retry_conflicts<T, F, Fut>(mut write: F) -> lancedb::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = lancedb::Result<T>>,
{
    let mut attempt = 1;
    loop {
        match write().await {
            Err(lancedb::Error::Lance {
                source:
                    lance::Error::RetryableCommitConflict { .. } | lance::Error::CommitConflict { .. },
            }) if attempt < CONFLICT_ATTEMPTS => {
                tokio::time::sleep(std::time::Duration::from_millis(50 << (attempt - 1))).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The analysed terms of user text, each weighted by how often it occurs.
fn text_terms(terms: Vec<String>) -> Vec<WeightedTerm> {
    let mut counts: BTreeMap<String, f32> = BTreeMap::new();
    for term in terms {
        *counts.entry(term).or_default() += 1.0;
    }
    counts
        .into_iter()
        .map(|(term, weight)| WeightedTerm { term, weight })
        .collect()
}

#[async_trait]
impl KeywordIndex for LanceKeywordIndex {
    async fn upsert(&self, chunks: &[Chunk]) -> PortResult<()> {
        // merge_insert wants unique keys: the last chunk of an id wins.
        let mut seen = HashSet::new();
        let mut unique: Vec<&Chunk> = chunks
            .iter()
            .rev()
            .filter(|c| seen.insert(c.id.as_str()))
            .collect();
        if unique.is_empty() {
            return Ok(());
        }
        unique.reverse();
        let batch = rows::to_batch(&unique, |text| self.analyze(text))?;
        let reader = RecordBatchIterator::new([Ok(batch)], rows::arrow());
        let mut merge = self.table.merge_insert(&[rows::CHUNK_ID]);
        merge
            .when_matched_update_all(None)
            .when_not_matched_insert_all();
        merge
            .execute(Box::new(reader))
            .await
            .map_err(map_lance_error("failed to upsert into keyword table"))?;
        self.after_write();
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        for group in ids.chunks(DELETE_BATCH) {
            let predicate = in_predicate(rows::DOCUMENT_ID, group.iter().map(DocumentId::as_str));
            self.table
                .delete(&predicate)
                .await
                .map_err(map_lance_error("failed to delete from keyword table"))?;
        }
        Ok(())
    }

    async fn search(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.search_terms(&text_terms(self.analyze(query)), k).await
    }

    fn analyze(&self, text: &str) -> Vec<String> {
        crag_text::tokens(text)
            .filter_map(|t| crag_text::term(t.text))
            .collect()
    }

    async fn search_terms(&self, terms: &[WeightedTerm], k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.ranked(terms, k).await
    }

    async fn count(&self) -> PortResult<usize> {
        self.table
            .count_rows(None)
            .await
            .map_err(map_lance_error("failed to count keyword table rows"))
    }

    /// [`LanceKeywordIndex::tidy`].
    async fn optimize(&self) -> PortResult<()> {
        self.tidy().await
    }

    async fn document_frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        let mut out = Vec::with_capacity(terms.len());
        for term in terms {
            out.push(self.frequency(term).await?);
        }
        Ok(out)
    }

    async fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        let batches: Vec<arrow_array::RecordBatch> = self
            .table
            .query()
            .select(Select::columns(schema::DOCUMENT_COLUMNS))
            .execute()
            .await
            .map_err(map_lance_error("failed to list keyword table documents"))?
            .try_collect()
            .await
            .map_err(map_lance_error("failed to list keyword table documents"))?;
        let mut entries = DocumentEntries::default();
        for batch in &batches {
            for (document, chunk, hash) in schema::read_document_rows(batch)? {
                entries.add(&document, &chunk, &hash);
            }
        }
        Ok(entries.into_entries())
    }

    async fn get(&self, ids: &[ChunkId]) -> PortResult<Vec<Chunk>> {
        let mut found = std::collections::HashMap::new();
        for group in ids.chunks(DELETE_BATCH) {
            let predicate = in_predicate(rows::CHUNK_ID, group.iter().map(ChunkId::as_str));
            for chunk in self.read_chunks(&predicate).await? {
                found.insert(chunk.id.clone(), chunk);
            }
        }
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    async fn document_chunks(&self, document: &DocumentId) -> PortResult<Vec<Chunk>> {
        let predicate = in_predicate(rows::DOCUMENT_ID, std::iter::once(document.as_str()));
        let mut chunks = self.read_chunks(&predicate).await?;
        chunks.sort_by(|a, b| (a.span.byte_start, &a.id).cmp(&(b.span.byte_start, &b.id)));
        Ok(chunks)
    }
}
