//! The answer-and-gaps step of crag's iterative retrieval (CGRAG, seed 002), pure: no IO, no
//! async.
//!
//! Each pass of the loop asks the language model to answer from the context so far and to
//! list what is missing; pass 2 and later retrieve those gaps. This crate holds the text
//! logic of that step; the engine sends the messages through its `LanguageModel` port and
//! runs the retrieval.
//!
//! - [`classify_gap`] turns a gap into a [`GapQuery`] for targeted retrieval: a symbol in a
//!   file, a topic in a file, a qualified name, a symbol (with its kind when named), a path,
//!   or fuzzy text for vector search.
//! - [`gap_key`] is a gap's normalised key for de-duplication and the session's not-found
//!   set.

mod classify;
mod key;
mod text;

pub use classify::{classify_gap, GapQuery, SymbolKind};
pub use key::gap_key;
