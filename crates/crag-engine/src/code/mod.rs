//! Code intelligence in the engine: syntax-aware chunks at ingest (tree-sitter, through
//! `crag-syntax`), their symbols written to the [`SymbolIndex`](crag_ports::SymbolIndex), code
//! metadata put back on retrieved chunks, and the expansion of code results with the
//! definitions they use.

mod chunking;
mod config;
mod expand;
mod hydrate;

pub(crate) use chunking::syntax_chunks;
pub use config::CodeConfig;
pub(crate) use expand::expand_with_definitions;
pub(crate) use hydrate::hydrate;
