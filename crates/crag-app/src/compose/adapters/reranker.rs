//! `[reranker]`: the cross-encoder of two-stage retrieval, by `kind`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::compose::error::bail;
use crate::compose::{Context as _, Result};
use crag_llm::{HttpReranker, HttpRerankerConfig};
use crag_onnx::{CrossEncoderAssets, EmbedderAssets, OnnxCrossEncoder, OnnxCrossEncoderConfig};
use crag_ports::Reranker;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{key_from_env, parse_url};

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

/// The reranker of `reranker.kind`, if any.
pub fn reranker(section: &RerankerSection, assets_dir: &Path) -> Result<Option<Arc<dyn Reranker>>> {
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
