//! The adapter sections of the configuration (`[evaluator]`, `[web_search]`, `[llm]`,
//! `[reranker]`); `crag-app` turns them into port implementations.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use crag_evaluation::{Calibration, HeuristicConfig, LlmJudgeConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Reranker kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RerankerKind {
    /// No reranking.
    #[default]
    Off,
    /// A BERT cross-encoder exported to ONNX (`model`, `tokenizer`), or the project's tiny
    /// random-weight test model (`tiny = true`: plumbing only, its scores mean nothing).
    Onnx,
    /// A rerank service (`POST {query, texts}`, text-embeddings-inference or Cohere shape).
    Http,
}

/// `[reranker]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RerankerSection {
    /// `off`, `onnx` (a BERT cross-encoder exported to ONNX), `http` (a rerank service).
    pub kind: RerankerKind,
    /// ONNX model and its `tokenizer.json` (`kind = "onnx"`).
    pub model: Option<PathBuf>,
    /// ONNX model and its `tokenizer.json` (`kind = "onnx"`).
    pub tokenizer: Option<PathBuf>,
    /// Use the project's tiny random-weight test model from the assets (plumbing only).
    pub tiny: bool,
    /// Reported model id; sent as `model` to an HTTP service.
    pub model_id: Option<String>,
    /// Pairs per ONNX batch.
    pub batch_size: usize,
    /// Tokens per (query, passage) pair; the passage is truncated.
    pub max_length: usize,
    /// Rerank service (`kind = "http"`).
    pub url: Option<String>,
    /// Variable holding the service's bearer token.
    pub api_key_env: Option<String>,
    /// Service timeout.
    pub timeout_ms: u64,
    /// The service returns probabilities (Cohere-style) rather than logits.
    pub probabilities: bool,
}

impl Default for RerankerSection {
    fn default() -> Self {
        Self {
            kind: RerankerKind::Off,
            model: None,
            tokenizer: None,
            tiny: false,
            model_id: None,
            batch_size: 16,
            max_length: 256,
            url: None,
            api_key_env: None,
            timeout_ms: 5000,
            probabilities: false,
        }
    }
}

/// Evaluator kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvaluatorKind {
    /// LLM-free heuristic (seed 000).
    #[default]
    Heuristic,
    /// Batched LLM judge (seed 001); needs `[llm]`.
    Llm,
    /// External evaluation service (seed 004); needs `[evaluator.http]`.
    Http,
    /// Logistic models fitted by `crag calibrate` (issue 4); needs `calibration_file`.
    Calibrated,
}

/// `[evaluator]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EvaluatorSection {
    /// `heuristic` (LLM-free, seed 000), `llm` (needs `[llm]`, seed 001), `http` (needs
    /// `[evaluator.http]`, seed 004), `calibrated` (a logistic model fitted by `crag calibrate`,
    /// needs `calibration_file`).
    pub kind: EvaluatorKind,
    /// Weights and thresholds of the heuristic.
    pub heuristic: HeuristicConfig,
    /// Prompt size and thresholds of the LLM judge.
    pub llm: LlmJudgeConfig,
    /// The external service.
    pub http: Option<HttpEvaluatorSection>,
    /// Calibration written by `crag calibrate` (kind = "calibrated").
    #[schemars(example = &"calibration.toml")]
    pub calibration_file: Option<PathBuf>,
}

/// `[evaluator.http]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HttpEvaluatorSection {
    /// Endpoint receiving `POST {query, context}` and answering `{score, verdict}`
    /// (required).
    #[schemars(example = &"http://127.0.0.1:9000/evaluate")]
    pub url: String,
    /// Per-request timeout (ms).
    pub timeout_ms: u64,
    /// Environment variable holding a bearer token, if any.
    pub api_key_env: Option<String>,
    /// Documents judged one by one.
    pub top_n: usize,
    /// Characters of each document sent.
    pub max_chars_per_document: usize,
    /// Score at or above which the verdict is correct when the service gives none.
    pub correct_threshold: f32,
    /// Score at or below which the verdict is incorrect when the service gives none.
    pub incorrect_threshold: f32,
}

impl Default for HttpEvaluatorSection {
    fn default() -> Self {
        Self {
            url: String::new(),
            timeout_ms: 5000,
            api_key_env: None,
            top_n: 5,
            max_chars_per_document: 800,
            correct_threshold: 0.7,
            incorrect_threshold: 0.3,
        }
    }
}

/// Web search providers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebProvider {
    /// No web search.
    #[default]
    Off,
    /// A SearXNG instance's JSON API (`url` required).
    Searxng,
    /// DuckDuckGo's HTML endpoint (no key).
    Duckduckgo,
}

/// `[web_search]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchSection {
    /// `off`, `searxng` (JSON API, `url` required), `duckduckgo` (HTML endpoint, no key).
    pub provider: WebProvider,
    /// SearXNG base URL; for DuckDuckGo an override of the HTML endpoint.
    #[schemars(example = &"http://127.0.0.1:8888")]
    pub url: Option<String>,
    /// Per-request timeout (ms).
    pub timeout_ms: u64,
}

impl Default for WebSearchSection {
    fn default() -> Self {
        Self {
            provider: WebProvider::Off,
            url: None,
            timeout_ms: 5000,
        }
    }
}

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
        }
    }
}

/// Reads a calibration file written by `crag calibrate`; errors name the file.
pub fn read_calibration(path: &Path) -> Result<Calibration> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read calibration_file {}", path.display()))?;
    let calibration: Calibration = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .with_context(|| format!("invalid calibration_file {}", path.display()))?;
    calibration
        .validate()
        .with_context(|| format!("invalid calibration_file {}", path.display()))?;
    Ok(calibration)
}

/// Writes `calibration` to `path` as TOML, headed by comments saying what it is and what it
/// was fitted on.
pub fn write_calibration(path: &Path, calibration: &Calibration) -> Result<()> {
    let body = toml::to_string(calibration).context("failed to render the calibration")?;
    let text = format!(
        "# crag calibration (calibrated relevance evaluator), written by `crag calibrate`.\n\
         # Fitted on: {}\n\
         # Load it with [evaluator] kind = \"calibrated\", calibration_file = \"<this file>\".\n\
         # Feature names must match what this crag version computes; refit after upgrades.\n\n{body}",
        calibration.fitted_on.replace('\n', " ")
    );
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// Parses a snake_case variant name the way the configuration file spells it (for flags).
fn variant<T: serde::de::DeserializeOwned>(raw: &str) -> Result<T, String> {
    T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(raw))
        .map_err(|e| e.to_string())
}

impl std::str::FromStr for EvaluatorKind {
    type Err = String;
    fn from_str(raw: &str) -> Result<Self, String> {
        variant(raw)
    }
}

impl std::str::FromStr for WebProvider {
    type Err = String;
    fn from_str(raw: &str) -> Result<Self, String> {
        variant(raw)
    }
}
