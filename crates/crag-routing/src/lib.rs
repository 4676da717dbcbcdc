//! Query routing of crag (pure): decides before retrieval whether a query needs no
//! retrieval, a single retrieval, or several (multi-step), so that queries with nothing to
//! retrieve (greetings, arithmetic) skip retrieval altogether.
//!
//! [`QueryRouter::classify`] applies rules, first match wins:
//!
//! - [`Route::NoRetrieval`]: small talk, when the whole query is greetings, thanks,
//!   farewells, "how are you", "ok" and the like ("hi", "thank you so much", "good
//!   morning"), and pure arithmetic ("2 + 2", "what is 12*7?"). It is conservative: "hello
//!   world program in rust" or "thanks to CRISPR, ..." are not small talk, and "what is
//!   2 + 2 in binary" is not pure arithmetic.
//! - [`Route::MultiStep`]: enumerations, several questions, comparisons or analyses of
//!   several items ("compare A and B", "difference between A and B", "A vs B"), clauses
//!   joined by "and how/why/what ...", and long queries (more than 30 words by default) of
//!   several sentences. The decision carries the parts as sub-queries (2 to
//!   [`RouterConfig::max_sub_queries`], default 4), made to stand alone: compared items
//!   share their context ("A and B for C" gives "A for C" and "B for C") and "it"/"they"
//!   take the subject of the first question.
//! - [`Route::Single`]: everything else.
//!
//! - [`Route::KnowledgeGraph`], when [`RouterConfig::knowledge_graph`] asks for it: every query
//!   that would take a single retrieval (`all`), or only questions about how things relate
//!   (`relational`: "related to", "relationship between", "associated with", "role of"...).
//!
//! No IO, no async, no model; `classify` never panics.

mod arithmetic;
mod compare;
mod config;
mod decompose;
mod relational;
mod route;
mod router;
mod small_talk;
mod words;

pub use config::{GraphRouting, RouterConfig};
pub use route::{Route, RoutingDecision};
pub use router::QueryRouter;
