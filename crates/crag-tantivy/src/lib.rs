//! Tantivy adapter of crag's [`KeywordIndex`](crag_ports::KeywordIndex) port.
//!
//! [`TantivyKeywordIndex`] keeps chunks in an on-disk Tantivy index and ranks them by BM25
//! over their title and text. User text never reaches Tantivy's query parser: it is split by
//! the same English analyzer that indexed the chunks (lowercasing, ASCII folding, stop words,
//! stemming) and its terms are OR-ed, so any text is a valid query.
//!
//! Tantivy work runs on Tokio's blocking pool; every call must come from a Tokio runtime.

mod analysis;
mod bm25;
mod bm25f;
mod documents;
mod error;
mod filter;
mod index;
mod maxscore;
mod schema;
mod top;
mod upgrade;

pub use bm25::{Bm25, DEFAULT_DOCUMENT_TITLE_WEIGHT};
pub use index::TantivyKeywordIndex;
pub use upgrade::{is_upgraded, remove_upgrade_leftovers, upgrade};
