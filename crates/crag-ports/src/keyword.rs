use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{Chunk, DocumentId, ScoredChunk};

use crate::PortResult;

/// A document known to an index, with the content hash it was indexed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentEntry {
    /// The document.
    pub id: DocumentId,
    /// Content hash of the document when its chunks were written.
    pub content_hash: String,
    /// Number of chunks stored for it.
    pub chunks: usize,
}

/// Full-text index ranking chunks by BM25.
#[async_trait]
pub trait KeywordIndex: Debug + Send + Sync + 'static {
    /// Inserts chunks, replacing any stored chunk with the same id; durable when it returns.
    async fn upsert(&self, chunks: &[Chunk]) -> PortResult<()>;

    /// Removes every chunk of the given documents; durable when it returns.
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()>;

    /// Returns the best `k` chunks for free user text, best first.
    ///
    /// Any text is valid: syntax characters are taken literally; a query with no searchable
    /// term yields an empty list, never an error.
    async fn search(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>>;

    /// Returns the number of chunks stored.
    async fn count(&self) -> PortResult<usize>;

    /// Lists the stored documents with their content hashes.
    async fn documents(&self) -> PortResult<Vec<DocumentEntry>>;
}
