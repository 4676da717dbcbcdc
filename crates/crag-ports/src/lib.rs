//! Ports of crag: the async traits the engine talks to and adapters implement.
//!
//! Each port is used as `Arc<dyn Port>` so a deployment picks adapters at run time. Each has a
//! conformance suite (feature `testsuite`) that the in-memory fakes and every real adapter run.

mod embedder;
mod error;
mod evaluator;
mod gaps;
mod keyword;
mod llm;
mod metadata;
mod reranker;
mod session;
mod symbols;
mod terms;
mod vector;
mod websearch;

#[cfg(any(test, feature = "testsuite"))]
pub mod fakes;
#[cfg(any(test, feature = "testsuite"))]
pub mod testsuite;

pub use embedder::Embedder;
pub use error::{ErrorKind, PortError, PortResult};
pub use evaluator::RelevanceEvaluator;
pub use gaps::{ContextItem, GapDetector, GapReport};
pub use keyword::{
    best_chunk_per_document, DocumentEntries, DocumentEntry, KeywordIndex, KeywordQuery,
    DOCUMENT_OVERFETCH,
};
pub use llm::{ChatMessage, CompletionRequest, LanguageModel, Role, MAX_TEMPERATURE};
pub use metadata::metadata_fields_of;
pub use reranker::{RerankScore, Reranker};
pub use session::{SessionStore, DEFAULT_MAX_NODES};
pub use symbols::{Neighbour, Relation, SymbolIndex, SymbolLookup};
pub use terms::TermGraph;
pub use vector::{EmbeddedChunk, MemoryCopy, VectorIndex};
pub use websearch::{WebResult, WebSearch};
