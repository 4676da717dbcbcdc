//! Router tunables.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Tunables of the [`crate::QueryRouter`]; every field has a default, unknown fields are
/// rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RouterConfig {
    /// Queries of at least this many words are split into sub-queries when they have separable
    /// parts (sentences, clauses). Default 31: a query of more than 30 words is taken as complex.
    pub multi_step_min_words: usize,
    /// At most this many sub-queries (default 4); further parts are merged into the last.
    /// Below 2, no query is routed multi-step.
    pub max_sub_queries: usize,
    /// Route greetings, thanks, farewells and similar small talk to no retrieval (default true).
    pub detect_small_talk: bool,
    /// Route pure arithmetic ("2 + 2", "what is 12*7?") to no retrieval (default true).
    pub detect_arithmetic: bool,
    /// Single words marking an analytical question; with several items ("compare A and B")
    /// the query is multi-step, one sub-query per item. Inflections match ("comparing",
    /// "evaluation").
    pub analysis_keywords: Vec<String>,
    /// Which single-retrieval queries take the knowledge-graph route (default `off`; the
    /// engine needs `[knowledge_graph] enabled`).
    pub knowledge_graph: GraphRouting,
}

/// Which queries the router sends to [`crate::Route::KnowledgeGraph`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GraphRouting {
    /// None.
    #[default]
    Off,
    /// Questions about how things relate: "related to", "relationship between", "associated
    /// with", "link between", "role of", "interaction of"...
    Relational,
    /// Every query that would take a single retrieval.
    All,
}

impl Default for RouterConfig {
    fn default() -> Self {
        Self {
            multi_step_min_words: 31,
            max_sub_queries: 4,
            detect_small_talk: true,
            detect_arithmetic: true,
            analysis_keywords: [
                "analyze", "analyse", "analysis", "compare", "contrast", "evaluate", "assess",
            ]
            .map(String::from)
            .to_vec(),
            knowledge_graph: GraphRouting::Off,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::value::{Error, MapDeserializer};

    fn from_pairs(pairs: Vec<(&'static str, usize)>) -> Result<RouterConfig, Error> {
        RouterConfig::deserialize(MapDeserializer::<_, Error>::new(pairs.into_iter()))
    }

    #[test]
    fn missing_fields_take_defaults_and_unknown_fields_are_rejected() {
        let c = from_pairs(vec![("max_sub_queries", 3)]).unwrap();
        assert_eq!(
            c,
            RouterConfig {
                max_sub_queries: 3,
                ..RouterConfig::default()
            }
        );
        let err = from_pairs(vec![("max_subqueries", 3)]).unwrap_err();
        assert!(err.to_string().contains("max_subqueries"), "{err}");
    }
}
