use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crag_core::{Chunk, Document, DocumentId};
use crag_ports::{EmbeddedChunk, Embedder, KeywordIndex, VectorIndex};

use crate::chunker::{chunk_document, ChunkingConfig};
use crate::error::Result;
use crate::sources::Skipped;

/// Which stored documents an ingestion run owns: those it does not see again are deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Documents whose id starts with this prefix (a directory or a corpus file).
    Prefix(String),
    /// Exactly this document (a single file).
    Exact(DocumentId),
    /// Nothing is deleted (documents pushed one by one).
    None,
}

impl Scope {
    fn owns(&self, id: &DocumentId) -> bool {
        match self {
            Self::Prefix(prefix) => id.as_str().starts_with(prefix.as_str()),
            Self::Exact(exact) => exact == id,
            Self::None => false,
        }
    }
}

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
    pub(crate) chunking: ChunkingConfig,
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
        let stored: HashMap<DocumentId, String> = self
            .keywords
            .documents()
            .await?
            .into_iter()
            .map(|d| (d.id, d.content_hash))
            .collect();
        let mut report = IngestReport {
            documents_seen: documents.len(),
            skipped: skipped
                .into_iter()
                .map(|s| (s.path.display().to_string(), s.reason))
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
            self.vectors.delete_documents(&vanished).await?;
            self.keywords.delete_documents(&vanished).await?;
            report.documents_deleted = vanished.len();
        }

        progress.start(to_index.len());
        for batch in to_index.chunks(DOCUMENTS_PER_BATCH) {
            let replaced: Vec<DocumentId> = batch
                .iter()
                .filter(|d| stored.contains_key(&d.id))
                .map(|d| d.id.clone())
                .collect();
            let chunks = self.chunk_batch(batch.to_vec()).await?;
            let texts: Vec<String> = chunks.iter().map(embedding_text).collect();
            let vectors = self.embedder.embed(&texts).await?;
            let records: Vec<EmbeddedChunk> = chunks
                .iter()
                .cloned()
                .zip(vectors)
                .map(|(chunk, vector)| EmbeddedChunk { chunk, vector })
                .collect();
            if !replaced.is_empty() {
                self.vectors.delete_documents(&replaced).await?;
                self.keywords.delete_documents(&replaced).await?;
            }
            self.vectors.upsert(&records).await?;
            self.keywords.upsert(&chunks).await?;
            report.chunks_written += chunks.len();
            progress.advance(batch.len(), chunks.len());
        }
        progress.finish();
        tidy_vectors(self.vectors.as_ref()).await;
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

    /// Tokenises and chunks documents on the blocking pool (tokenising is CPU work).
    async fn chunk_batch(&self, docs: Vec<Document>) -> Result<Vec<Chunk>> {
        let embedder = Arc::clone(&self.embedder);
        let config = self.chunking;
        tokio::task::spawn_blocking(move || -> Result<Vec<Chunk>> {
            let mut out = Vec::new();
            for doc in &docs {
                let spans = embedder.token_spans(&doc.text)?;
                out.extend(chunk_document(doc, &spans, config)?);
            }
            Ok(out)
        })
        .await
        .map_err(|e| crag_ports::PortError::internal("chunking task failed", e))?
    }
}

/// Returns what is embedded for a chunk: its title, then its text.
pub(crate) fn embedding_text(chunk: &Chunk) -> String {
    if chunk.title.is_empty() {
        chunk.text.clone()
    } else {
        format!("{}\n{}", chunk.title, chunk.text)
    }
}

/// Lets the vector index tidy its storage after writes ([`VectorIndex::optimize`]). A failure
/// loses nothing (what was written stays written and searchable, only slower), so it is
/// logged rather than returned.
pub(crate) async fn tidy_vectors(vectors: &dyn VectorIndex) {
    if let Err(error) = vectors.optimize().await {
        tracing::warn!(%error, "vector index optimization failed; searches may be slower");
    }
}
