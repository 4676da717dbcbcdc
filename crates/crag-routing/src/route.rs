//! The routing decision.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The retrieval strategy chosen for a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// Small talk or pure arithmetic: answer without retrieval.
    NoRetrieval,
    /// One retrieval with the query as asked.
    Single,
    /// A multi-part query: retrieve for each sub-query as well, then fuse.
    MultiStep,
    /// One retrieval with the query expanded by the knowledge graph of prose (related terms
    /// two hops away, with decaying weights).
    KnowledgeGraph,
}

impl Route {
    /// Returns the stable name: `"no_retrieval"`, `"single"`, `"multi_step"` or
    /// `"knowledge_graph"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoRetrieval => "no_retrieval",
            Self::Single => "single",
            Self::MultiStep => "multi_step",
            Self::KnowledgeGraph => "knowledge_graph",
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a query is routed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingDecision {
    /// The chosen strategy.
    pub route: Route,
    /// A short sentence naming the rule that fired, for logs and responses.
    pub reason: String,
    /// For [`Route::MultiStep`]: the parts of the query, at least two, each non-empty; empty
    /// for the other routes.
    pub sub_queries: Vec<String>,
}

impl RoutingDecision {
    /// Creates a decision without sub-queries.
    pub fn new(route: Route, reason: impl Into<String>) -> Self {
        Self {
            route,
            reason: reason.into(),
            sub_queries: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::value::{Error, StrDeserializer};
    use serde::de::IntoDeserializer;

    #[test]
    fn names_are_stable_and_match_serde() {
        for (route, name) in [
            (Route::NoRetrieval, "no_retrieval"),
            (Route::Single, "single"),
            (Route::MultiStep, "multi_step"),
            (Route::KnowledgeGraph, "knowledge_graph"),
        ] {
            assert_eq!(route.as_str(), name);
            assert_eq!(route.to_string(), name);
            let de: StrDeserializer<'_, Error> = name.into_deserializer();
            assert_eq!(Route::deserialize(de), Ok(route));
        }
        let de: StrDeserializer<'_, Error> = "MultiStep".into_deserializer();
        assert!(Route::deserialize(de).is_err());
    }
}
