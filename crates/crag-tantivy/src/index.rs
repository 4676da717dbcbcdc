//! The keyword index over an on-disk Tantivy index.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use crag_core::{ChunkId, DocumentId, MetadataFilter, ScoredChunk, ValueKind, WeightedTerm};
use crag_ports::{DocumentEntry, KeywordIndex, KeywordQuery, PortError, PortResult};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

mod lookup;
mod read;
mod search;
mod whole;

use crate::bm25::Bm25;
use crate::documents::{DocumentIndex, DocumentRow};
use crate::error::{io_error, port_error};
use crate::filter;
use crate::schema::{analyzer, open_index, Fields, ANALYZER};

/// Memory the writer may buffer before flushing a segment, across its threads.
pub(crate) const WRITER_MEMORY_BUDGET: usize = 50_000_000;

/// Doc-store blocks cached per segment while listing documents.
const STORE_CACHE_BLOCKS: usize = 1;

/// Decompressed doc-store blocks (16 KiB each) searches cache per segment (Tantivy's: 100).
const SEARCH_STORE_CACHE_BLOCKS: usize = 1_000;

/// A [`KeywordIndex`] ranking chunks by BM25 over their title and text, stored by Tantivy in a
/// directory.
///
/// Writes commit before returning and readers are reloaded right after, so a search issued
/// once `upsert` or `delete_documents` has returned sees the change. Cloning is cheap and
/// shares the index.
#[derive(Clone)]
pub struct TantivyKeywordIndex {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    fields: Fields,
    analyzer: TextAnalyzer,
    bm25: Bm25,
    /// One row per document, ranked by BM25F ([`crate::documents`]).
    documents: DocumentIndex,
    reader: IndexReader,
    /// Tantivy allows one writer per index; writes are serialised through it.
    writer: Mutex<IndexWriter>,
}

/// One write applied through the writer before a commit.
enum Write {
    /// Replaces the chunk identified by the term with the document.
    Upsert(Term, TantivyDocument),
    /// Removes every chunk matching the term.
    Delete(Term),
}

/// The document rows a commit writes first: documents removed, rows (re)written.
#[derive(Default)]
struct DocumentWrites {
    removed: Vec<DocumentId>,
    rows: Vec<DocumentRow>,
}

impl TantivyKeywordIndex {
    /// Opens the index stored in `dir`, creating the directory and an empty index if needed.
    ///
    /// Takes the index's writer lock until the value and its clones are dropped: a second
    /// open of the same directory, even from another process, fails as
    /// [`ErrorKind::Unavailable`](crag_ports::ErrorKind::Unavailable). An index written with
    /// another schema fails as [`ErrorKind::Internal`](crag_ports::ErrorKind::Internal).
    /// Opening does blocking IO. Ranks with crag's default BM25 ([`Bm25::default`], what
    /// `[retrieval]` defaults to).
    pub fn open(dir: &Path) -> PortResult<Self> {
        Self::open_with(dir, Bm25::default())
    }

    /// [`open`](Self::open), ranking with the BM25 parameters `bm25`.
    pub fn open_with(dir: &Path, bm25: Bm25) -> PortResult<Self> {
        const MESSAGE: &str = "failed to open keyword index";
        std::fs::create_dir_all(dir).map_err(io_error(MESSAGE))?;
        let (index, fields) = open_index(dir)?;
        let analyzer = analyzer()?;
        index.tokenizers().register(ANALYZER, analyzer.clone());
        let writer = index
            .writer(WRITER_MEMORY_BUDGET)
            .map_err(port_error(MESSAGE))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .doc_store_cache_num_blocks(SEARCH_STORE_CACHE_BLOCKS)
            .try_into()
            .map_err(port_error(MESSAGE))?;
        let documents = DocumentIndex::open(dir, analyzer.clone())?;
        let inner = Inner {
            path: dir.to_owned(),
            fields,
            analyzer,
            bm25,
            documents,
            reader,
            writer: Mutex::new(writer),
        };
        inner.fill_documents()?;
        tracing::debug!(path = %dir.display(), "opened keyword index");
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Runs `work` on the blocking pool.
    async fn blocking<T, F>(&self, work: F) -> PortResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> PortResult<T> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || work(&inner))
            .await
            .map_err(|err| PortError::internal("keyword index task failed", err))?
    }
}

impl fmt::Debug for TantivyKeywordIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TantivyKeywordIndex")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl Inner {
    /// Applies `writes` and commits them as one, then reloads the reader.
    ///
    /// On failure nothing is committed: the pending writes are rolled back.
    fn commit(&self, writes: Vec<Write>, documents: DocumentWrites) -> PortResult<()> {
        const MESSAGE: &str = "failed to write keyword index";
        let mut writer = self.lock_writer()?;
        // Document rows first: the chunks are the catalogue, and a row without them is
        // never returned.
        self.documents.write(&documents.removed, &documents.rows)?;
        let applied = apply(&mut writer, writes);
        if let Err(err) = applied {
            if let Err(rollback) = writer.rollback() {
                tracing::warn!(error = %rollback, "failed to roll back keyword index writer");
            }
            return Err(port_error(MESSAGE)(err));
        }
        // Reload under the lock so concurrent writers publish their commits in order.
        self.reader.reload().map_err(port_error(MESSAGE))
    }

    /// Locks the writer; after a panic under the lock, drops the uncommitted writes first.
    fn lock_writer(&self) -> PortResult<MutexGuard<'_, IndexWriter>> {
        match self.writer.lock() {
            Ok(writer) => Ok(writer),
            Err(poisoned) => {
                let mut writer = poisoned.into_inner();
                writer
                    .rollback()
                    .map_err(port_error("failed to recover keyword index writer"))?;
                self.writer.clear_poison();
                Ok(writer)
            }
        }
    }

    fn count(&self) -> usize {
        usize::try_from(self.reader.searcher().num_docs()).unwrap_or(usize::MAX)
    }

    /// The stored chunks matching any of `terms` (chunk or document terms).
    fn chunks_matching(&self, terms: Vec<Term>) -> PortResult<Vec<crag_core::Chunk>> {
        const MESSAGE: &str = "failed to read keyword index chunks";
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let mut rows: Vec<tantivy::DocAddress> = lookup::rows_with_terms(&searcher, &terms)
            .map_err(port_error(MESSAGE))?
            .into_iter()
            .map(|(address, _)| address)
            .collect();
        // In row order: a row holding several of the terms is read once.
        rows.dedup();
        rows.into_iter()
            .map(|address| {
                let doc: TantivyDocument = searcher.doc(address).map_err(port_error(MESSAGE))?;
                self.fields.chunk_of(&doc)
            })
            .collect()
    }

    fn get(&self, ids: &[ChunkId]) -> PortResult<Vec<crag_core::Chunk>> {
        let terms = ids.iter().map(|id| self.fields.chunk_term(id)).collect();
        let mut found: HashMap<ChunkId, crag_core::Chunk> = self
            .chunks_matching(terms)?
            .into_iter()
            .map(|c| (c.id.clone(), c))
            .collect();
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    fn document_chunks(&self, document: &DocumentId) -> PortResult<Vec<crag_core::Chunk>> {
        let mut chunks = self.chunks_matching(vec![self.fields.document_term(document)])?;
        chunks.sort_by(|a, b| {
            a.span
                .byte_start
                .cmp(&b.span.byte_start)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(chunks)
    }
}

/// Applies `writes` in order and commits them.
fn apply(writer: &mut IndexWriter, writes: Vec<Write>) -> tantivy::Result<()> {
    for write in writes {
        match write {
            Write::Upsert(id, doc) => {
                writer.delete_term(id);
                writer.add_document(doc)?;
            }
            Write::Delete(term) => {
                writer.delete_term(term);
            }
        }
    }
    writer.commit()?;
    Ok(())
}

#[async_trait]
impl KeywordIndex for TantivyKeywordIndex {
    async fn upsert(&self, chunks: &[crag_core::Chunk]) -> PortResult<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        let fields = self.inner.fields;
        let writes: Vec<Write> = chunks
            .iter()
            .map(|chunk| Write::Upsert(fields.chunk_term(&chunk.id), fields.document_of(chunk)))
            .collect();
        let n = writes.len();
        let chunks = chunks.to_vec();
        self.blocking(move |inner| {
            let rows = inner.rows_with_stored(&chunks, &[])?;
            inner.commit(
                writes,
                DocumentWrites {
                    removed: Vec::new(),
                    rows,
                },
            )
        })
        .await?;
        tracing::debug!(chunks = n, "upserted chunks into keyword index");
        Ok(())
    }

    async fn replace_documents(
        &self,
        replaced: &[DocumentId],
        chunks: &[crag_core::Chunk],
    ) -> PortResult<()> {
        if replaced.is_empty() && chunks.is_empty() {
            return Ok(());
        }
        let fields = self.inner.fields;
        let writes: Vec<Write> = replaced
            .iter()
            .map(|id| Write::Delete(fields.document_term(id)))
            .chain(chunks.iter().map(|chunk| {
                Write::Upsert(fields.chunk_term(&chunk.id), fields.document_of(chunk))
            }))
            .collect();
        let (replaced_ids, written) = (replaced.to_vec(), chunks.to_vec());
        self.blocking(move |inner| {
            let rows = inner.rows_with_stored(&written, &replaced_ids)?;
            let removed = replaced_ids;
            inner.commit(writes, DocumentWrites { removed, rows })
        })
        .await?;
        tracing::debug!(
            documents = replaced.len(),
            chunks = chunks.len(),
            "replaced documents in keyword index"
        );
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let fields = self.inner.fields;
        let writes: Vec<Write> = ids
            .iter()
            .map(|id| Write::Delete(fields.document_term(id)))
            .collect();
        let n = writes.len();
        let removed = ids.to_vec();
        self.blocking(move |inner| {
            let rows = Vec::new();
            inner.commit(writes, DocumentWrites { removed, rows })
        })
        .await?;
        tracing::debug!(documents = n, "deleted documents from keyword index");
        Ok(())
    }

    async fn search(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let query = query.to_owned();
        self.blocking(move |inner| inner.search(&query, k, None))
            .await
    }

    fn analyze(&self, text: &str) -> Vec<String> {
        let mut analyzer = self.inner.analyzer.clone();
        let mut out = Vec::new();
        analyzer.token_stream(text).process(&mut |token| {
            out.push(token.text.clone());
        });
        out
    }

    async fn search_terms(&self, terms: &[WeightedTerm], k: usize) -> PortResult<Vec<ScoredChunk>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let terms = terms.to_vec();
        self.blocking(move |inner| inner.search_terms(&terms, k, None))
            .await
    }

    async fn search_documents(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.search_filtered_by(KeywordQuery::Text(query), true, k, None)
            .await
    }

    async fn search_terms_documents(
        &self,
        terms: &[WeightedTerm],
        k: usize,
    ) -> PortResult<Vec<ScoredChunk>> {
        self.search_filtered_by(KeywordQuery::Terms(terms), true, k, None)
            .await
    }

    async fn search_filtered(
        &self,
        query: KeywordQuery<'_>,
        documents: bool,
        k: usize,
        filter: &MetadataFilter,
    ) -> PortResult<Vec<ScoredChunk>> {
        self.search_filtered_by(query, documents, k, Some(filter))
            .await
    }

    async fn filter_documents(&self, filter: &MetadataFilter) -> PortResult<Vec<DocumentId>> {
        let filter = filter.clone();
        self.blocking(move |inner| {
            inner.metadata_field()?;
            inner.documents.filtered(&filter)
        })
        .await
    }

    async fn metadata_fields(&self) -> PortResult<BTreeMap<String, Vec<ValueKind>>> {
        self.blocking(|inner| {
            filter::fields(&inner.reader.searcher()).map_err(port_error(
                "failed to list the keyword index's metadata fields",
            ))
        })
        .await
    }

    async fn count(&self) -> PortResult<usize> {
        Ok(self.inner.count())
    }

    async fn document_frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let terms = terms.to_vec();
        self.blocking(move |inner| inner.document_frequencies(&terms))
            .await
    }

    async fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        self.blocking(Inner::documents).await
    }

    async fn get(&self, ids: &[ChunkId]) -> PortResult<Vec<crag_core::Chunk>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.to_vec();
        self.blocking(move |inner| inner.get(&ids)).await
    }

    async fn contains(&self, ids: &[ChunkId]) -> PortResult<HashSet<ChunkId>> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        let ids = ids.to_vec();
        self.blocking(move |inner| inner.contains(&ids)).await
    }

    async fn document_chunks(&self, document: &DocumentId) -> PortResult<Vec<crag_core::Chunk>> {
        let document = document.clone();
        self.blocking(move |inner| inner.document_chunks(&document))
            .await
    }
}
