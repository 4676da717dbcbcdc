//! The symbol index (code intelligence): the definitions and references of ingested source
//! files, the code metadata of their chunks, and the graph they form. Kept in step with the
//! keyword and vector indexes by ingestion and deletion.

use std::collections::HashMap;
use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{ChunkId, CodeMeta, DocumentId, FileSymbols, StoredReference, StoredSymbol};

use crate::PortResult;

/// How a definition is looked up. Every match is exact and case-sensitive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolLookup {
    /// By its own name, exactly (`verify_user`).
    Name(String),
    /// By its qualified path, exactly (`auth::Session::verify_user`), or by a `::`-separated
    /// suffix of it (`Session::verify_user`): the stored path equals the query or ends with
    /// `"::"` followed by it (so `Session::verify_user` does not match
    /// `auth::MySession::verify_user`).
    Qualified(String),
    /// By name, in files whose path contains `path` as a substring (`verify_user in
    /// src/auth.rs`).
    NameInPath {
        /// The symbol's own name.
        name: String,
        /// A substring of the file's path.
        path: String,
    },
}

/// How a definition in a neighbourhood relates to the one it was reached from.
///
/// From a definition `S`:
/// - [`Relation::Uses`]: for each reference whose `from` is `S.qualified`, the definitions
///   named like the reference; when the reference has a qualifier, those whose qualified path
///   ends with `qualifier::name` (segment-aligned) are preferred, and all definitions of that
///   name are taken when none does.
/// - [`Relation::UsedBy`]: the definitions whose qualified path is the `from` of a reference
///   named `S.name`.
/// - [`Relation::Parent`]: the definitions whose qualified path is `S.qualified` without its
///   last `::` segment.
/// - [`Relation::Child`]: the definitions whose qualified path is `S.qualified` followed by
///   `::` and one more segment.
///
/// Within one hop count, neighbourhoods are ordered Uses, Child, Parent, UsedBy (not the
/// declaration order of this enum).
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
///
/// Reads never fail on odd input: a `limit` of 0, an empty list of ids or unknown ids give an
/// empty answer.
#[async_trait]
pub trait SymbolIndex: Debug + Send + Sync + 'static {
    /// Replaces everything stored for `document` (definitions, references, chunk metadata)
    /// with `symbols`, in one transaction: readers see the old rows or the new ones, never a
    /// mix, and concurrent replaces of different documents all land. An empty `symbols`
    /// removes the document. The rows are stored under `document` whatever `document_id` the
    /// items of `symbols` carry; chunk metadata is keyed by chunk id (the last entry wins).
    async fn replace_document(
        &self,
        document: &DocumentId,
        symbols: &FileSymbols,
    ) -> PortResult<()>;

    /// Removes everything stored for these documents; unknown ids are ignored.
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()>;

    /// Definitions matching `lookup`, at most `limit`, ordered by qualified path, then path,
    /// then first line.
    async fn lookup(&self, lookup: &SymbolLookup, limit: usize) -> PortResult<Vec<StoredSymbol>>;

    /// The definitions whose chunk (first part) is one of these, ordered by path, then first
    /// line, then qualified path.
    async fn definitions_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredSymbol>>;

    /// The references occurring in these chunks, ordered by document, then line, then name.
    async fn references_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredReference>>;

    /// Definitions within `hops` (1 or 2) of the definition `qualified`, nearest first, at
    /// most `limit`; the start itself is not included.
    ///
    /// The start is every definition whose qualified path equals `qualified` (there may be
    /// several, across files); none gives an empty answer. Hop 1 follows the [`Relation`]s of
    /// the start definitions, hop 2 those of every hop-1 definition. `hops` of 0 gives an empty
    /// answer, more than 2 counts as 2. Each definition appears once, at its smallest hop
    /// count, with the first relation that reached it in the order below. Ordered by hops,
    /// then relation (Uses, Child, Parent, UsedBy), then qualified path, path and first line;
    /// then cut to `limit`.
    async fn neighbours(
        &self,
        qualified: &str,
        hops: u8,
        limit: usize,
    ) -> PortResult<Vec<Neighbour>>;

    /// The code metadata of those chunks that have some; unknown ids are left out.
    async fn chunk_meta(&self, chunks: &[ChunkId]) -> PortResult<HashMap<ChunkId, CodeMeta>>;

    /// Number of definitions stored.
    async fn count(&self) -> PortResult<usize>;
}
