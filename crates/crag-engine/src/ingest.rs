use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::chunker::{chunk_document, ChunkingConfig};
use crate::code::{syntax_chunks, CodeConfig};
use crate::error::Result;
use crate::readers::{Scope, Skipped};
use crag_core::{Chunk, ChunkId, Document, DocumentId, FileSymbols};
use crag_expansion::GraphConfig;
use crag_ports::{EmbeddedChunk, Embedder, KeywordIndex, SymbolIndex, TermGraph, VectorIndex};

mod metadata;
mod terms;

/// Receives ingestion progress (a progress bar on a terminal).
pub trait IngestProgress: Send + Sync {
    /// Called once with the number of documents to (re)index.
    fn start(&self, documents: usize);
    /// Called as documents are written.
    fn advance(&self, documents: usize, chunks: usize);
    /// Called when the run is over.
    fn finish(&self);
}

/// Progress sink that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl IngestProgress for NoProgress {
    fn start(&self, _: usize) {}
    fn advance(&self, _: usize, _: usize) {}
    fn finish(&self) {}
}

/// What an ingestion run did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestReport {
    /// Documents read from the source.
    pub documents_seen: usize,
    /// Documents indexed for the first time.
    pub documents_added: usize,
    /// Documents whose content changed and were re-indexed.
    pub documents_updated: usize,
    /// Documents skipped because their content hash is unchanged.
    pub documents_unchanged: usize,
    /// Stored documents of the scope no longer present, removed from both indexes.
    pub documents_deleted: usize,
    /// Chunks written to both indexes.
    pub chunks_written: usize,
    /// Chunks embedded: written chunks whose text changed or is new. A changed document's
    /// chunks with the same id and text as before keep their stored vectors.
    pub chunks_embedded: usize,
    /// Source files cut along their syntax (one chunk per definition).
    pub syntax_files: usize,
    /// Stored documents whose key terms were filled in from the keyword index (the term
    /// graph switched on for an existing index, or an interrupted run).
    pub graph_documents_filled: usize,
    /// Files or records not ingested, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl IngestReport {
    /// Returns chunks written per second of wall time.
    pub fn chunks_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.chunks_written as f64 / secs
        } else {
            0.0
        }
    }
}

/// Documents per write batch: chunks of a batch are embedded together and committed together.
const DOCUMENTS_PER_BATCH: usize = 64;

pub(crate) struct Ingestor {
    pub(crate) embedder: Arc<dyn Embedder>,
    pub(crate) vectors: Arc<dyn VectorIndex>,
    pub(crate) keywords: Arc<dyn KeywordIndex>,
    pub(crate) symbols: Option<Arc<dyn SymbolIndex>>,
    /// The term graph, when switched on.
    pub(crate) terms: Option<Arc<dyn TermGraph>>,
    pub(crate) graph: GraphConfig,
    pub(crate) chunking: ChunkingConfig,
    pub(crate) code: CodeConfig,
}

/// A batch of documents chunked and embedded, ready to be written.
struct Prepared {
    /// The batch's documents and their kinds.
    documents: Vec<(DocumentId, crag_core::ChunkKind)>,
    /// Documents of the batch already stored (their old chunks are replaced).
    replaced: Vec<DocumentId>,
    chunks: Vec<Chunk>,
    symbols: Vec<(DocumentId, FileSymbols)>,
    records: Vec<EmbeddedChunk>,
    /// Chunks embedded (the others reuse their stored vectors).
    embedded: usize,
}

/// What writing one batch did.
struct Written {
    documents: usize,
    syntax_files: usize,
    chunks_embedded: usize,
    chunks_written: usize,
}

/// The chunks of a batch of documents, and the symbols of its source files.
struct Chunked {
    chunks: Vec<Chunk>,
    symbols: Vec<(DocumentId, FileSymbols)>,
}

impl Ingestor {
    /// Indexes new and changed documents, deletes the scope's vanished ones, skips the rest.
    ///
    /// Vectors are written before keywords and the keyword index is the catalogue of content
    /// hashes, so an interrupted run is redone from where the catalogue says.
    pub(crate) async fn ingest(
        &self,
        documents: Vec<Document>,
        skipped: Vec<Skipped>,
        scope: &Scope,
        progress: &dyn IngestProgress,
    ) -> Result<IngestReport> {
        let started = Instant::now();
        self.chunking.validate()?;
        let documents_seen = documents.len();
        let (documents, repeated) = last_of_each_id(documents);
        let stored: HashMap<DocumentId, String> = self
            .keywords
            .documents()
            .await?
            .into_iter()
            .map(|d| (d.id, d.content_hash))
            .collect();
        let mut report = IngestReport {
            documents_seen,
            skipped: skipped
                .into_iter()
                .map(|s| (s.path.display().to_string(), s.reason))
                .chain(repeated)
                .collect(),
            ..IngestReport::default()
        };
        let seen: HashSet<DocumentId> = documents.iter().map(|d| d.id.clone()).collect();
        let mut to_index = Vec::new();
        for doc in documents {
            match stored.get(&doc.id) {
                Some(hash) if *hash == doc.content_hash() => report.documents_unchanged += 1,
                Some(_) => {
                    report.documents_updated += 1;
                    to_index.push(doc);
                }
                None => {
                    report.documents_added += 1;
                    to_index.push(doc);
                }
            }
        }
        let vanished: Vec<DocumentId> = stored
            .keys()
            .filter(|id| scope.owns(id) && !seen.contains(*id))
            .cloned()
            .collect();
        if !vanished.is_empty() {
            self.delete_documents(&vanished).await?;
            report.documents_deleted = vanished.len();
        }
        if let Some(terms) = &self.terms {
            // Documents ingested before the graph was switched on (or whose terms an
            // interrupted run did not write) are filled in from the keyword index.
            let catalogue: HashSet<DocumentId> = stored
                .keys()
                .filter(|id| !vanished.contains(id))
                .cloned()
                .collect();
            let rewritten: HashSet<DocumentId> = to_index.iter().map(|d| d.id.clone()).collect();
            report.graph_documents_filled = terms::fill_in(
                self.keywords.as_ref(),
                terms.as_ref(),
                &self.graph,
                &catalogue,
                &rewritten,
            )
            .await?;
        }

        progress.start(to_index.len());
        self.index_batches(&to_index, &stored, &mut report, progress)
            .await?;
        progress.finish();
        tidy_indexes(self.vectors.as_ref(), self.keywords.as_ref()).await;
        report.elapsed = started.elapsed();
        tracing::info!(
            added = report.documents_added,
            updated = report.documents_updated,
            unchanged = report.documents_unchanged,
            deleted = report.documents_deleted,
            chunks = report.chunks_written,
            elapsed_ms = report.elapsed.as_millis() as u64,
            "ingestion finished"
        );
        Ok(report)
    }

    /// Deletes `vanished` documents from every index, the keyword index (the catalogue) last.
    async fn delete_documents(&self, vanished: &[DocumentId]) -> Result<()> {
        self.vectors.delete_documents(vanished).await?;
        if let Some(symbols) = &self.symbols {
            symbols.delete_documents(vanished).await?;
        }
        if let Some(terms) = &self.terms {
            terms.delete_documents(vanished).await?;
        }
        self.keywords.delete_documents(vanished).await?;
        Ok(())
    }

    /// Indexes `to_index` batch by batch, adding what each write did to `report`.
    async fn index_batches(
        &self,
        to_index: &[Document],
        stored: &HashMap<DocumentId, String>,
        report: &mut IngestReport,
        progress: &dyn IngestProgress,
    ) -> Result<()> {
        // Two batches in flight: the next batch is chunked and embedded (CPU, on the blocking
        // pool) while the previous one is written (LanceDB, Tantivy's commit). Writes stay in
        // order, one batch at a time, so the catalogue rule below holds batch by batch.
        let batches: Vec<&[Document]> = to_index.chunks(DOCUMENTS_PER_BATCH).collect();
        let mut ready: Option<Prepared> = None;
        for i in 0..=batches.len() {
            let next = batches.get(i).copied();
            let prepare = async {
                match next {
                    Some(batch) => self.prepare(batch, stored).await.map(Some),
                    None => Ok(None),
                }
            };
            let write = async {
                match ready.take() {
                    Some(p) => self.write(p, stored).await.map(Some),
                    None => Ok(None),
                }
            };
            // Ids are unique (see `last_of_each_id`), so the batch being prepared never reads
            // what the one being written changes.
            let (prepared, written) = tokio::join!(prepare, write);
            if let Some(w) = written? {
                report.syntax_files += w.syntax_files;
                report.chunks_embedded += w.chunks_embedded;
                report.chunks_written += w.chunks_written;
                progress.advance(w.documents, w.chunks_written);
                tracing::debug!(documents = w.documents, "ingest batch written");
            }
            ready = prepared?;
        }
        Ok(())
    }

    /// Chunks and embeds one batch of documents to (re)index.
    async fn prepare(
        &self,
        batch: &[Document],
        stored: &HashMap<DocumentId, String>,
    ) -> Result<Prepared> {
        let replaced: Vec<DocumentId> = batch
            .iter()
            .filter(|d| stored.contains_key(&d.id))
            .map(|d| d.id.clone())
            .collect();
        let Chunked { chunks, symbols } = self.chunk_batch(batch.to_vec()).await?;
        let (records, embedded) = self.embed_reusing(&chunks, &replaced).await?;
        Ok(Prepared {
            documents: batch.iter().map(|d| (d.id.clone(), d.kind)).collect(),
            replaced,
            chunks,
            symbols,
            records,
            embedded,
        })
    }

    /// Writes one prepared batch: vectors, symbols and key terms, then the keyword index
    /// (the catalogue) last.
    async fn write(
        &self,
        prepared: Prepared,
        stored: &HashMap<DocumentId, String>,
    ) -> Result<Written> {
        let Prepared {
            documents,
            replaced,
            chunks,
            symbols,
            records,
            embedded,
        } = prepared;
        // The old vectors of a replaced document go; its old chunks stay in the catalogue
        // until the keyword index replaces them in one commit below, so a failure in
        // between keeps the old version listed and searchable (and `reconcile` rebuilds
        // its vectors from it).
        if !replaced.is_empty() {
            self.vectors.delete_documents(&replaced).await?;
        }
        self.vectors.upsert(&records).await?;
        // Symbols before keywords: the keyword index is the catalogue of what is done, so
        // an interrupted run redoes a document whose symbols may be missing.
        if let Some(index) = &self.symbols {
            let with_symbols: HashSet<&DocumentId> = symbols.iter().map(|(d, _)| d).collect();
            for (document, file) in &symbols {
                index.replace_document(document, file).await?;
            }
            // A replaced source file that no longer parses loses its old symbols.
            let replaced_code = documents.iter().filter(|(id, kind)| {
                *kind == crag_core::ChunkKind::Code
                    && stored.contains_key(id)
                    && !with_symbols.contains(id)
            });
            for (document, _) in replaced_code {
                index
                    .replace_document(document, &FileSymbols::default())
                    .await?;
            }
        }
        // Key terms before keywords too, for every document of the batch (a document new
        // to the catalogue may have terms from an interrupted run).
        if let Some(terms) = &self.terms {
            let rows = terms::chunk_terms(self.keywords.as_ref(), &chunks, &self.graph).await?;
            let ids: Vec<DocumentId> = documents.iter().map(|(id, _)| id.clone()).collect();
            terms.replace_documents(&ids, &rows).await?;
        }
        if let Err(error) = self.keywords.replace_documents(&replaced, &chunks).await {
            // The batch is not in the catalogue: take back the vectors of its new
            // documents so that no query meets them (best effort; `reconcile` removes
            // whatever stays).
            let added: Vec<DocumentId> = documents
                .into_iter()
                .map(|(id, _)| id)
                .filter(|id| !stored.contains_key(id))
                .collect();
            if let Err(undo) = self.vectors.delete_documents(&added).await {
                tracing::warn!(error = %undo, "could not take back the vectors of a failed batch");
            }
            return Err(error.into());
        }
        Ok(Written {
            documents: documents.len(),
            syntax_files: symbols.len(),
            chunks_embedded: embedded,
            chunks_written: chunks.len(),
        })
    }

    /// Embeds `chunks`, reusing the stored vector of a chunk of a `replaced` document whose id
    /// and embedded text are unchanged; returns the records and how many chunks were embedded.
    pub(crate) async fn embed_reusing(
        &self,
        chunks: &[Chunk],
        replaced: &[DocumentId],
    ) -> Result<(Vec<EmbeddedChunk>, usize)> {
        let mut reusable: HashMap<ChunkId, Vec<f32>> = HashMap::new();
        if !replaced.is_empty() {
            let mut before: HashMap<ChunkId, String> = HashMap::new();
            for document in replaced {
                for chunk in self.keywords.document_chunks(document).await? {
                    before.insert(chunk.id.clone(), embedding_text(&chunk));
                }
            }
            let same: Vec<ChunkId> = chunks
                .iter()
                .filter(|c| before.get(&c.id) == Some(&embedding_text(c)))
                .map(|c| c.id.clone())
                .collect();
            if !same.is_empty() {
                reusable = self.vectors.vectors(&same).await?.into_iter().collect();
            }
        }
        let fresh: Vec<&Chunk> = chunks
            .iter()
            .filter(|c| !reusable.contains_key(&c.id))
            .collect();
        let texts: Vec<String> = fresh.iter().map(|c| embedding_text(c)).collect();
        let mut vectors = if texts.is_empty() {
            Vec::new()
        } else {
            self.embedder.embed(&texts).await?
        }
        .into_iter();
        let embedded = fresh.len();
        let mut records = Vec::with_capacity(chunks.len());
        for chunk in chunks {
            let vector = match reusable.remove(&chunk.id) {
                Some(v) => v,
                None => vectors.next().ok_or_else(|| {
                    crag_ports::PortError::internal(
                        "embedder returned fewer vectors than texts",
                        std::io::Error::other("short embedding batch"),
                    )
                })?,
            };
            records.push(EmbeddedChunk {
                chunk: chunk.clone(),
                vector,
            });
        }
        Ok((records, embedded))
    }

    /// Tokenises and chunks documents on the blocking pool (tokenising and parsing are CPU
    /// work): source files of a known language along their syntax, the rest in token windows.
    async fn chunk_batch(&self, docs: Vec<Document>) -> Result<Chunked> {
        let embedder = Arc::clone(&self.embedder);
        let config = self.chunking;
        let syntax = self.code.syntax_chunks;
        tokio::task::spawn_blocking(move || -> Result<Chunked> {
            let mut out = Chunked {
                chunks: Vec::new(),
                symbols: Vec::new(),
            };
            let count = |text: &str| {
                embedder
                    .token_spans(text)
                    .map(|spans| spans.len())
                    .unwrap_or_else(|_| text.len() / 4 + 1)
            };
            for doc in &docs {
                let first = out.chunks.len();
                let cut = syntax
                    .then(|| syntax_chunks(doc, config.chunk_tokens, &count))
                    .flatten();
                if let Some(cut) = cut {
                    out.chunks.extend(cut.chunks);
                    out.symbols.push((doc.id.clone(), cut.symbols));
                } else {
                    let spans = embedder.token_spans(&doc.text)?;
                    out.chunks.extend(chunk_document(doc, &spans, config)?);
                }
                metadata::stamp(doc, &mut out.chunks[first..]);
            }
            Ok(out)
        })
        .await
        .map_err(|e| crag_ports::PortError::internal("chunking task failed", e))?
    }
}

/// Keeps the last document of each id, in the order of the first; the earlier ones are
/// reported as skipped. Two versions of one document in one run would both count as new
/// (the catalogue is read once), and chunks only the first had would stay in both indexes.
fn last_of_each_id(documents: Vec<Document>) -> (Vec<Document>, Vec<(String, String)>) {
    let mut position: HashMap<DocumentId, usize> = HashMap::new();
    let mut kept: Vec<Document> = Vec::with_capacity(documents.len());
    let mut repeated = Vec::new();
    for doc in documents {
        match position.get(&doc.id) {
            Some(&at) => {
                let earlier = std::mem::replace(&mut kept[at], doc);
                repeated.push((
                    earlier.source,
                    format!(
                        "document id {} given again later in this ingestion: the later one is kept",
                        earlier.id.as_str()
                    ),
                ));
            }
            None => {
                position.insert(doc.id.clone(), kept.len());
                kept.push(doc);
            }
        }
    }
    (kept, repeated)
}

/// Returns what is embedded for a chunk: its title, then its text.
pub(crate) fn embedding_text(chunk: &Chunk) -> String {
    if chunk.title.is_empty() {
        chunk.text.clone()
    } else {
        format!("{}\n{}", chunk.title, chunk.text)
    }
}

/// Lets both indexes tidy their storage after writes (each one's `optimize`). A failure loses
/// nothing (what was written stays searchable, only slower): logged, not returned.
pub(crate) async fn tidy_indexes(vectors: &dyn VectorIndex, keywords: &dyn KeywordIndex) {
    if let Err(error) = vectors.optimize().await {
        tracing::warn!(%error, "vector index optimization failed; searches may be slower");
    }
    if let Err(error) = keywords.optimize().await {
        tracing::warn!(%error, "keyword index optimization failed; searches may be slower");
    }
}
