//! What crag searches with next: query expansion, rewriting, pseudo-relevance feedback, the
//! term graph's expansion, and the rank-fusion merge of the retrievals they make. The pure
//! text logic behind Corrective RAG's second retrievals (what it returns of them, refinement
//! and packing, is `crag-refine`).
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
//! - [`feedback_order_with_terms`] reranks a retrieval's top candidates by their embeddings'
//!   and their words' ([`CandidateTerms`]) similarity to its first results
//!   ([`FeedbackRerankConfig`]: 30 candidates, 2 feedback documents, weights 1.5 and 2),
//!   pseudo-relevance feedback on the document side.
//! - [`term_graph`]: the knowledge graph of prose ([`GraphConfig`]): key terms of chunks, and
//!   the expansion of a query by walking their co-occurrence graph two hops.
//!
//! [`tokens`] is the tokenizer all of these share (and `crag-refine` scores strips with). No IO, no async, and no
//! function panics on any input.

mod candidate_terms;
mod error;
mod expander;
mod feedback;
mod prf;
mod rewrite;
mod rrf;
mod synonyms;
pub mod term_graph;
pub mod tokens;

pub use candidate_terms::{term_counts, term_counts_in, CandidateTerms, TokenTerms};
/// The memo [`term_counts_in`] reads raw tokens' terms from, shared across queries.
pub use crag_text::TermMemo;
pub use error::{ExpansionError, Result};
pub use expander::{QueryExpander, DEFAULT_MAX_SYNONYMS_PER_TERM};
pub use feedback::{feedback_order, feedback_order_with_terms, FeedbackRerankConfig};
pub use prf::{rm3, rocchio, PrfConfig};
pub use rewrite::rewrite_keywords;
pub use rrf::{fuse_ranked, fuse_weighted, rrf_term, Fused, RRF_K};
pub use synonyms::SynonymTable;
pub use term_graph::GraphConfig;
pub use tokens::content_terms;
