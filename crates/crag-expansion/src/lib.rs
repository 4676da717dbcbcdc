//! Query expansion, rewriting, rank-fusion merging, token-budget packing and knowledge
//! refinement of crag: the pure text logic behind the corrective actions of Corrective RAG.
//!
//! - [`QueryExpander`] adds synonyms from a [`SynonymTable`] to a query, at most
//!   [`DEFAULT_MAX_SYNONYMS_PER_TERM`] (2) per matched term, for the second retrieval of an
//!   ambiguous verdict. [`SynonymTable::seed_default`] is the built-in table of 9 programming
//!   terms; [`SynonymTable::from_json`] loads a custom one from a file.
//! - [`rewrite_keywords`] rewrites a question into its content words, the LLM-free query
//!   rewrite of an incorrect verdict, for the local retrieval and the web search.
//! - [`fuse_ranked`] merges the original and the expanded (or sub-query) rankings by
//!   reciprocal rank fusion ([`RRF_K`] = 60; [`rrf_term`] per item, which the hybrid
//!   search's fusion of its legs adds too), de-duplicated, original first.
//! - [`rm3`] and [`rocchio`] are pseudo-relevance feedback for the keyword and vector legs
//!   ([`PrfConfig`]: 5 feedback documents, 10 terms, query weight 0.8, Rocchio 0.5).
//! - [`feedback_order`] reranks a retrieval's top candidates by their embeddings' similarity
//!   to its first results ([`FeedbackRerankConfig`]: 30 candidates, 2 feedback documents,
//!   weight 1), pseudo-relevance feedback on the document side.
//! - [`pack_to_budget`] keeps results in order within a token budget
//!   ([`DEFAULT_TOKEN_BUDGET`] = 8000), skipping what does not fit so that a later, smaller
//!   item may still fit; [`estimate_tokens`] estimates words × 1.3.
//! - [`refine`] is the CRAG paper's knowledge refinement without an LLM: documents are
//!   decomposed into strips of a few sentences ([`split_strips`]), each strip is scored
//!   (for example with [`lexical_score`]), the best strips are kept within the budget and
//!   recomposed per document in text order ([`RefineConfig`]: 3 sentences per strip, minimum
//!   score 0.2, at most 10 strips).
//!
//! - [`graph`]: the knowledge graph of prose ([`GraphConfig`]): key terms of chunks, and
//!   the expansion of a query by walking their co-occurrence graph two hops.
//!
//! [`content_terms`] exposes the tokenizer all of these share. No IO, no async, and no
//! function panics on any input.

mod budget;
mod error;
mod expander;
mod feedback;
mod prf;
mod refine;
mod rewrite;
mod rrf;
mod strips;
mod synonyms;
pub mod term_graph;
mod tokens;

pub use budget::{estimate_tokens, pack_to_budget, Packed, DEFAULT_TOKEN_BUDGET};
pub use error::{ExpansionError, Result};
pub use expander::{QueryExpander, DEFAULT_MAX_SYNONYMS_PER_TERM};
pub use feedback::{feedback_order, FeedbackRerankConfig};
pub use prf::{rm3, rocchio, PrfConfig};
pub use refine::{lexical_score, refine, LexicalScorer, RefineConfig, ScoredStrip};
pub use rewrite::rewrite_keywords;
pub use rrf::{fuse_ranked, fuse_weighted, rrf_term, Fused, RRF_K};
pub use strips::{split_strips, Strip};
pub use synonyms::SynonymTable;
pub use term_graph::GraphConfig;
pub use tokens::content_terms;
