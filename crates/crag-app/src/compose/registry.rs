//! Adapters by kind: each port's `kind` / `provider` key of the configuration maps to one
//! builder here. Adding an adapter of an existing port is one arm in one of these functions
//! (plus its variant and keys in `crag-config`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use crag_config::{
    read_calibration, Config, EvaluatorKind, HttpEvaluatorSection, LlmSection, RerankerKind,
    RerankerSection, WebProvider, WebSearchSection,
};
use crag_engine::{CalibratedRelevance, HeuristicRelevance, LlmRelevance};
use crag_llm::{
    HttpEvaluator, HttpEvaluatorConfig, HttpReranker, HttpRerankerConfig, OpenAiChat,
    OpenAiChatConfig,
};
use crag_onnx::{CrossEncoderAssets, EmbedderAssets, OnnxCrossEncoder, OnnxCrossEncoderConfig};
use crag_ports::{LanguageModel, RelevanceEvaluator, Reranker, WebSearch};
use crag_websearch::{DuckDuckGoConfig, DuckDuckGoSearch, SearxngConfig, SearxngSearch};
use url::Url;

/// The relevance evaluator of `evaluator.kind`; `llm` is the configured language model.
pub fn evaluator(
    config: &Config,
    llm: Option<Arc<dyn LanguageModel>>,
) -> Result<Arc<dyn RelevanceEvaluator>> {
    let section = &config.evaluator;
    Ok(match section.kind {
        EvaluatorKind::Heuristic => Arc::new(HeuristicRelevance::new(section.heuristic.clone())?),
        EvaluatorKind::Llm => {
            let Some(model) = llm else {
                bail!("evaluator.kind = \"llm\" needs an [llm] section (base_url, model)");
            };
            Arc::new(LlmRelevance::new(model, section.llm.clone())?)
        }
        EvaluatorKind::Http => {
            let Some(http) = &section.http else {
                bail!("evaluator.kind = \"http\" needs [evaluator.http] with a url");
            };
            Arc::new(http_evaluator(http)?)
        }
        EvaluatorKind::Calibrated => {
            let Some(path) = &section.calibration_file else {
                bail!(
                    "evaluator.kind = \"calibrated\" needs evaluator.calibration_file (written by `crag calibrate`)"
                );
            };
            let calibration = read_calibration(path)?;
            let fusion = config.retrieval.fusion().name();
            if calibration.fusion != fusion {
                bail!(
                    "calibration_file {} was fitted under retrieval.fusion = \"{}\" but the engine uses \"{fusion}\": its fused-score features would mean something else; refit it with `crag calibrate` or set retrieval.fusion",
                    path.display(),
                    calibration.fusion
                );
            }
            Arc::new(
                CalibratedRelevance::new(calibration)
                    .with_context(|| format!("invalid calibration_file {}", path.display()))?,
            )
        }
    })
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

/// The OpenAI-compatible chat model of `[llm]`.
pub fn language_model(section: &LlmSection) -> Result<Arc<dyn LanguageModel>> {
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

fn http_evaluator(section: &HttpEvaluatorSection) -> Result<HttpEvaluator> {
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

/// The web search of `web_search.provider`, if any.
pub fn web_search(section: &WebSearchSection) -> Result<Option<Arc<dyn WebSearch>>> {
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
