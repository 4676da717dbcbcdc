//! The adapter sections of the configuration (`[evaluator]`, `[web_search]`, `[llm]`,
//! `[reranker]`) and the builders turning them into port implementations.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use crag_evaluation::{Calibration, HeuristicConfig, LlmJudgeConfig};
use crag_llm::{
    HttpEvaluator, HttpEvaluatorConfig, HttpReranker, HttpRerankerConfig, OpenAiChat,
    OpenAiChatConfig,
};
use crag_onnx::{CrossEncoderAssets, EmbedderAssets, OnnxCrossEncoder, OnnxCrossEncoderConfig};
use crag_ports::{LanguageModel, Reranker, WebSearch};
use crag_websearch::{DuckDuckGoConfig, DuckDuckGoSearch, SearxngConfig, SearxngSearch};
use serde::{Deserialize, Serialize};
use url::Url;

/// Reranker kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RerankerSection {
    /// Which reranker.
    pub kind: RerankerKind,
    /// ONNX model file.
    pub model: Option<PathBuf>,
    /// `tokenizer.json` of the ONNX model.
    pub tokenizer: Option<PathBuf>,
    /// Use the project's tiny test cross-encoder from the assets directory.
    pub tiny: bool,
    /// Model name (ONNX: reported id; HTTP: sent as `model` when set).
    pub model_id: Option<String>,
    /// Pairs per ONNX batch.
    pub batch_size: usize,
    /// Tokens per (query, passage) pair; the passage is truncated.
    pub max_length: usize,
    /// Rerank service URL (kind = "http").
    pub url: Option<String>,
    /// Environment variable holding the service's bearer token.
    pub api_key_env: Option<String>,
    /// Service timeout.
    pub timeout_ms: u64,
    /// The service returns probabilities rather than logits (Cohere-compatible servers).
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvaluatorSection {
    /// Which evaluator.
    pub kind: EvaluatorKind,
    /// Weights and thresholds of the heuristic.
    pub heuristic: HeuristicConfig,
    /// Prompt size and thresholds of the LLM judge.
    pub llm: LlmJudgeConfig,
    /// The external service.
    pub http: Option<HttpEvaluatorSection>,
    /// Calibration written by `crag calibrate` (kind = "calibrated").
    pub calibration_file: Option<PathBuf>,
}

/// `[evaluator.http]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpEvaluatorSection {
    /// Endpoint receiving `POST {query, context}`.
    pub url: String,
    /// Per-request timeout.
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchSection {
    /// Provider.
    pub provider: WebProvider,
    /// Base URL (SearXNG: required; DuckDuckGo: optional override of the HTML endpoint).
    pub url: Option<String>,
    /// Per-request timeout.
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSection {
    /// Base URL of the OpenAI-compatible API, e.g. `http://localhost:8000/v1`.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Per-request timeout.
    pub timeout_ms: u64,
    /// Retries on 429 / 5xx / connection errors.
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

pub(crate) fn parse_url(key: &str, raw: &str) -> Result<Url> {
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

pub(crate) fn build_llm(section: &LlmSection) -> Result<Arc<dyn LanguageModel>> {
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

pub(crate) fn build_http_evaluator(section: &HttpEvaluatorSection) -> Result<HttpEvaluator> {
    let url = parse_url("evaluator.http.url", &section.url)?;
    let api_key = key_from_env(section.api_key_env.as_deref());
    Ok(HttpEvaluator::new(HttpEvaluatorConfig {
        url,
        timeout: Duration::from_millis(section.timeout_ms.max(1)),
        api_key,
        top_n: section.top_n,
        max_chars_per_document: section.max_chars_per_document,
        correct_threshold: section.correct_threshold,
        incorrect_threshold: section.incorrect_threshold,
    })?)
}

pub(crate) fn build_reranker(
    section: &RerankerSection,
    assets_dir: &Path,
) -> Result<Option<Arc<dyn Reranker>>> {
    Ok(match section.kind {
        RerankerKind::Off => None,
        RerankerKind::Onnx => {
            let assets = if section.tiny {
                CrossEncoderAssets::tiny_from_manifest(assets_dir)?.with_context(|| {
                    format!(
                        "reranker.tiny: no tiny cross-encoder in {} (run scripts/setup-assets.sh)",
                        assets_dir.display()
                    )
                })?
            } else {
                let (Some(model), Some(tokenizer)) = (&section.model, &section.tokenizer) else {
                    bail!("reranker.kind = \"onnx\" needs reranker.model and reranker.tokenizer (or tiny = true)");
                };
                CrossEncoderAssets {
                    runtime_library: EmbedderAssets::from_manifest(assets_dir)?.runtime_library,
                    model: model.clone(),
                    tokenizer: tokenizer.clone(),
                }
            };
            let id = section.model_id.clone().unwrap_or_else(|| {
                if section.tiny {
                    "tiny-cross-encoder".into()
                } else {
                    "cross-encoder".into()
                }
            });
            let mut config = OnnxCrossEncoderConfig::new(id, assets);
            config.batch_size = section.batch_size;
            config.max_length = section.max_length;
            Some(Arc::new(OnnxCrossEncoder::new(config)?))
        }
        RerankerKind::Http => {
            let url = parse_url("reranker.url", section.url.as_deref().unwrap_or(""))?;
            let mut config = HttpRerankerConfig::new(url);
            config.model = section.model_id.clone();
            config.api_key = key_from_env(section.api_key_env.as_deref());
            config.timeout = Duration::from_millis(section.timeout_ms.max(1));
            config.scores_are_logits = !section.probabilities;
            Some(Arc::new(HttpReranker::new(config)?))
        }
    })
}

pub(crate) fn build_web(section: &WebSearchSection) -> Result<Option<Arc<dyn WebSearch>>> {
    let timeout = Duration::from_millis(section.timeout_ms.max(1));
    Ok(match section.provider {
        WebProvider::Off => None,
        WebProvider::Searxng => {
            let url = parse_url("web_search.url", section.url.as_deref().unwrap_or(""))?;
            let mut config = SearxngConfig::new(url);
            config.timeout = timeout;
            Some(Arc::new(SearxngSearch::new(config)?))
        }
        WebProvider::Duckduckgo => {
            let mut config = DuckDuckGoConfig::default();
            if let Some(raw) = &section.url {
                config.base_url = parse_url("web_search.url", raw)?;
            }
            config.timeout = timeout;
            Some(Arc::new(DuckDuckGoSearch::new(config)?))
        }
    })
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
