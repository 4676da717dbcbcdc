//! What crag returns of its results: the pure text logic of Corrective RAG's last steps.
//!
//! - [`refine`] is the CRAG paper's knowledge refinement without an LLM: documents are
//!   decomposed into strips of a few sentences ([`split_strips`]), each strip is scored
//!   (for example with [`lexical_score`]), the best strips are kept within the budget and
//!   recomposed per document in text order ([`RefineConfig`]: 3 sentences per strip, minimum
//!   score 0.2, at most 10 strips).
//! - With a language model, the filter can be the model's: [`selection_prompt`] shows it the
//!   best strips numbered, [`parse_selection`] reads which it keeps; the caller falls back
//!   to the lexical strips when the model fails or its answer is unreadable.
//! - [`pack_to_budget`] keeps results in order within a token budget
//!   ([`DEFAULT_TOKEN_BUDGET`] = 8000), skipping what does not fit so that a later, smaller
//!   item may still fit; [`estimate_tokens`] estimates words × 1.3.
//!
//! Strips are scored with the query words of `crag-expansion`'s tokenizer, the one the
//! expansion and the rewrite use. No IO, no async, and no function panics on any input.

mod budget;
mod refine;
mod selection;
mod strips;

pub use budget::{estimate_tokens, pack_to_budget, Packed, DEFAULT_TOKEN_BUDGET};
pub use refine::{lexical_score, refine, LexicalScorer, RefineConfig, ScoredStrip};
pub use selection::{
    parse_selection, selection_prompt, Selection, MAX_SHOWN_CHARS, SELECTION_SYSTEM_PROMPT,
};
pub use strips::{split_strips, Strip};
