//! Domain types of crag: documents, chunks, queries and scored results.
//!
//! Everything here is validated at construction and free of IO and async runtimes, so every
//! other crate can rely on a `Chunk` or a `Query` being well formed.

mod chunk;
mod code;
mod error;
mod ids;
mod metadata;
mod query;
mod scored;
mod session;
mod terms;
mod verdict;

pub use chunk::{Chunk, ChunkKind, Document, Span};
pub use code::{
    CodeMeta, FileSymbols, ReferenceKind, StoredReference, StoredSymbol, SymbolDef, SymbolKind,
    SymbolRef,
};
pub use error::{CoreError, Result};
pub use ids::{ChunkId, DocumentId};
pub use metadata::{
    check_metadata, format_time, parse_time, FilterValue, Metadata, MetadataFilter, ValueKind,
    DERIVED_FIELDS, MAX_FILTER_CLAUSES,
};
pub use query::{ChunkFilter, Query, TopK, WeightedTerm, MAX_QUERY_BYTES, MAX_TOP_K};
pub use scored::{FusedHit, LegHit, ScoredChunk, ScoredId};
pub use session::{
    CachedNode, ChatTurn, Session, SessionId, SessionSummary, SessionUpdate, TraversedSymbol,
};
pub use terms::{ChunkTerms, TermNeighbour};
pub use verdict::{
    clip_reason, Correction, CorrectionKind, CriterionScore, EvalDocument, Evaluation,
    RetrievalSignals, Verdict, MAX_DOCUMENT_REASON_CHARS,
};
