//! Adapters by kind: each port's table of the configuration (`[evaluator]`, `[web_search]`,
//! `[llm]`, `[reranker]`) is declared here beside the builder that reads it, one file per
//! port (`[storage]`: the object store of the LanceDB database, and where the graphs live).
//! Adding an adapter of an existing port is its variant, its keys (each key's doc comment is
//! its documentation) and its arm in that port's file.

mod evaluator;
mod llm;
mod reranker;
mod storage;
mod web_search;

use crate::compose::error::bail;
use crate::compose::{Context as _, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::Url;

pub use evaluator::{evaluator, EvaluatorKind, EvaluatorSection, HttpEvaluatorSection};
pub use llm::{language_model, LlmSection};
pub use reranker::{reranker, RerankerKind, RerankerSection};
pub use storage::{GraphStore, KeywordStore, StorageSection, DEFAULT_POSTGRES_SCHEMA};
pub use web_search::{web_search, WebProvider, WebSearchSection};

/// crag's adapter sections: the tables of the configuration file naming the adapter of each
/// port that has several.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Adapters {
    /// Which evaluator judges retrievals, and its settings.
    pub evaluator: EvaluatorSection,
    /// Web search provider.
    pub web_search: WebSearchSection,
    /// OpenAI-compatible chat endpoint (LLM evaluator, query rewriting).
    pub llm: Option<LlmSection>,
    /// Cross-encoder reranker (two-stage retrieval); tunables are in `[crag.rerank]`.
    pub reranker: RerankerSection,
    /// The object store holding the LanceDB database (`vectors_uri = "s3://..."`), the read
    /// consistency of processes sharing it, and where the symbol index and the term graph live
    /// (SQLite, or the Postgres database replicas share).
    pub storage: StorageSection,
}

fn parse_url(key: &str, raw: &str) -> Result<Url> {
    if raw.trim().is_empty() {
        bail!("{key} is required");
    }
    Url::parse(raw).with_context(|| format!("{key}: `{raw}` is not a valid URL"))
}

/// The non-empty value of the environment variable `var`, if one is named and set.
fn key_from_env(var: Option<&str>) -> Option<String> {
    var.and_then(|v| std::env::var(v).ok())
        .filter(|k| !k.trim().is_empty())
}

/// Parses a snake_case variant name the way the configuration file spells it (for flags).
fn variant<T: serde::de::DeserializeOwned>(raw: &str) -> Result<T, String> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(raw))
        .map_err(|e| e.to_string())
}
