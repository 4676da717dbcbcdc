//! The symbol index (code intelligence): the definitions and references of ingested source
//! files, the code metadata of their chunks, and the graph they form. Kept in step with the
//! keyword and vector indexes by ingestion and deletion.

use std::collections::HashMap;
use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{ChunkId, CodeMeta, DocumentId, FileSymbols, StoredReference, StoredSymbol};

use crate::PortResult;

/// How a definition is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolLookup {
    /// By its own name, exactly (`verify_user`).
    Name(String),
    /// By its qualified path, exactly (`auth::Session::verify_user`), or by a `::`-separated
    /// suffix of it (`Session::verify_user`).
    Qualified(String),
    /// By name, in files whose path contains `path` (`verify_user in src/auth.rs`).
    NameInPath {
        /// The symbol's own name.
        name: String,
        /// A substring of the file's path.
        path: String,
    },
}

/// How a definition in a neighbourhood relates to the one it was reached from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Relation {
    /// The definition is called, used as a type or imported by the one before it.
    Uses,
    /// The definition calls, uses or imports the one before it.
    UsedBy,
    /// The definition encloses the one before it (`Type` of `Type::method`).
    Parent,
    /// The definition is enclosed by the one before it.
    Child,
}

/// A definition reached from a start definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The definition reached.
    pub symbol: StoredSymbol,
    /// Hops from the start (1 or 2).
    pub hops: u8,
    /// How it relates to the definition of the previous hop.
    pub relation: Relation,
}

/// Stores the symbols of source files. Every write is atomic per call.
#[async_trait]
pub trait SymbolIndex: Debug + Send + Sync + 'static {
    /// Replaces everything stored for `document` (definitions, references, chunk metadata)
    /// with `symbols`; an empty `symbols` removes the document.
    async fn replace_document(
        &self,
        document: &DocumentId,
        symbols: &FileSymbols,
    ) -> PortResult<()>;

    /// Removes everything stored for these documents.
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()>;

    /// Definitions matching `lookup`, at most `limit`, ordered by qualified path.
    async fn lookup(&self, lookup: &SymbolLookup, limit: usize) -> PortResult<Vec<StoredSymbol>>;

    /// The definitions whose chunk (first part) is one of these.
    async fn definitions_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredSymbol>>;

    /// The references occurring in these chunks.
    async fn references_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredReference>>;

    /// Definitions within `hops` (1 or 2) of the definition `qualified`, nearest first, at
    /// most `limit`; the start itself is not included.
    async fn neighbours(
        &self,
        qualified: &str,
        hops: u8,
        limit: usize,
    ) -> PortResult<Vec<Neighbour>>;

    /// The code metadata of those chunks that have some.
    async fn chunk_meta(&self, chunks: &[ChunkId]) -> PortResult<HashMap<ChunkId, CodeMeta>>;

    /// Number of definitions stored.
    async fn count(&self) -> PortResult<usize>;
}
