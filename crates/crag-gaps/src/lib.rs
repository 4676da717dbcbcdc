//! The answer-and-gaps step of crag's iterative retrieval (CGRAG), pure: no IO, no async.
//!
//! Each pass of the loop asks the language model to answer from the context so far and to
//! list what is missing; pass 2 and later retrieve those gaps. This crate holds the text
//! logic of that step; the engine sends the messages through its `LanguageModel` port and
//! runs the retrieval.
//!
//! - [`answer_and_gaps_prompt`] builds the sections prompt (the question, the chunks numbered
//!   with their ids, and `ANSWER:` / `MISSING (or "NONE" if nothing needed):`);
//!   [`answer_and_gaps_json_prompt`] asks for `{"answer", "is_sufficient", "missing",
//!   "useful_chunk_ids"}` instead. Both return plain strings ([`GapsPrompt`]).
//! - [`parse_answer_and_gaps`] reads either reply into a [`ParsedReply`]. Small models ignore
//!   formats (a 135M model answers with a numbered list restating the context), so it
//!   tolerates header case and markdown, bullets and numbering, quotes, "NONE"-like items,
//!   prose around sections or JSON, fenced, embedded and truncated JSON, repeated and
//!   over-long items; what it cannot read is [`Format::Unparsed`] with no gaps and a warning.
//!   It never panics, and the gaps are bounded ([`MAX_GAPS`] of [`MAX_GAP_CHARS`]).
//! - [`classify_gap`] turns a gap into a [`GapQuery`] for targeted retrieval: a symbol in a
//!   file, a topic in a file, a qualified name, a symbol (with its kind when named), a path,
//!   or fuzzy text for vector search.
//! - [`code_gaps`] names the gaps of code context without a language model: names used in the
//!   code and defined nowhere in it (a lexical reading; the engine's detector prefers the symbol
//!   graph when it has one).
//! - [`gap_key`] is a gap's normalised key for de-duplication and the session's not-found
//!   set; [`resolve_chunk_ids`] maps a reply's chunk references onto the prompt's chunks.

mod chunks;
mod classify;
mod clean;
mod code;
mod key;
mod parse;
mod prompt;

pub use chunks::resolve_chunk_ids;
pub use classify::{classify_gap, GapQuery, SymbolKind};
pub use code::{code_gaps, is_builtin, MAX_CODE_GAPS};
pub use key::gap_key;
pub use parse::{
    parse_answer_and_gaps, Format, ParsedReply, MAX_CHUNK_IDS, MAX_CHUNK_ID_BYTES, MAX_GAPS,
    MAX_GAP_CHARS, MAX_REPLY_BYTES,
};
pub use prompt::{
    answer_and_gaps_json_prompt, answer_and_gaps_prompt, ContextChunk, GapsPrompt,
    JSON_PLACEHOLDERS, SECTIONS_ANSWER_PLACEHOLDER, SECTIONS_EXAMPLE_GAPS,
};
