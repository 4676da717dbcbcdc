//! `[evaluator]`: the relevance evaluator judging each retrieval, by `kind`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::compose::error::bail;
use crate::compose::{Context as _, Result};
use crag_config::read_calibration;
use crag_engine::{CalibratedRelevance, HeuristicRelevance, LlmRelevance};
use crag_judge::{HeuristicConfig, LlmJudgeConfig};
use crag_llm::{HttpEvaluator, HttpEvaluatorConfig};
use crag_ports::{LanguageModel, RelevanceEvaluator};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{key_from_env, parse_url, variant};
use crate::Config;

/// Evaluator kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EvaluatorKind {
    /// LLM-free heuristic: keyword overlap, coherence, length and diversity; needs no model.
    #[default]
    Heuristic,
    /// Batched LLM judge, one prompt scoring the top documents; needs `[llm]`.
    Llm,
    /// External evaluation service over HTTP; needs `[evaluator.http]`.
    Http,
    /// Logistic models fitted by `crag calibrate`; needs `calibration_file`.
    Calibrated,
}

/// `[evaluator]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EvaluatorSection {
    /// `heuristic` (LLM-free), `llm` (a batched LLM judge, needs `[llm]`), `http` (an external
    /// service, needs `[evaluator.http]`), `calibrated` (a logistic model fitted by `crag
    /// calibrate`, needs `calibration_file`).
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

/// The relevance evaluator of `evaluator.kind`; `llm` is the configured language model.
pub fn evaluator(
    config: &Config,
    llm: Option<Arc<dyn LanguageModel>>,
) -> Result<Arc<dyn RelevanceEvaluator>> {
    let section = &config.adapters.evaluator;
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

impl std::str::FromStr for EvaluatorKind {
    type Err = String;
    fn from_str(raw: &str) -> Result<Self, String> {
        variant(raw)
    }
}
