//! `[llm]`: the OpenAI-compatible chat model of the LLM evaluator, query rewriting and the
//! LLM gap detector.

use std::sync::Arc;
use std::time::Duration;

use crate::compose::error::bail;
use crate::compose::Result;
use crag_llm::{OpenAiChat, OpenAiChatConfig};
use crag_ports::LanguageModel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::parse_url;
use crate::Config;

/// `[llm]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSection {
    /// Base URL of the OpenAI-compatible API (required), e.g. `http://127.0.0.1:8000/v1`.
    #[schemars(example = &"http://127.0.0.1:8000/v1")]
    pub base_url: String,
    /// Model name (required).
    #[schemars(example = &"smollm2-135m-instruct")]
    pub model: String,
    /// Environment variable holding the API key (unset or empty: no key sent).
    pub api_key_env: String,
    /// Per-request timeout (ms).
    pub timeout_ms: u64,
    /// Retries on 429 / 5xx / connection errors, with exponential backoff, honouring
    /// `Retry-After`.
    pub max_retries: u32,
    /// Rewrite incorrect queries with the model (otherwise: keyword extraction).
    pub rewrite: bool,
    /// Knowledge refinement asks the model which of the best strips (`[crag.refine]
    /// llm_candidates`) help answer the query, and keeps those; the lexical strips when the
    /// model fails or answers unreadably. Off by default: it adds a model call to every
    /// refined query (docs/benchmarks.md, "Refinement by the language model").
    pub refine: bool,
}

impl Default for LlmSection {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            model: String::new(),
            api_key_env: "CRAG_LLM_API_KEY".into(),
            timeout_ms: 30_000,
            max_retries: 3,
            rewrite: true,
            refine: false,
        }
    }
}

/// The OpenAI-compatible chat model of `[llm]`, when the section is there.
pub fn language_model(config: &Config) -> Result<Option<Arc<dyn LanguageModel>>> {
    config.adapters.llm.as_ref().map(openai_chat).transpose()
}

fn openai_chat(section: &LlmSection) -> Result<Arc<dyn LanguageModel>> {
    let url = parse_url("llm.base_url", &section.base_url)?;
    if section.model.trim().is_empty() {
        bail!("llm.model is required");
    }
    let mut config =
        OpenAiChatConfig::new(url, section.model.clone()).api_key_from_env(&section.api_key_env);
    config.timeout = Duration::from_millis(section.timeout_ms.max(1));
    config.max_retries = section.max_retries;
    Ok(Arc::new(OpenAiChat::new(config)?))
}
