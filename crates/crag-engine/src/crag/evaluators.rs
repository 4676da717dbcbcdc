//! The in-process evaluators as adapters of the `RelevanceEvaluator` port: the pure heuristic
//! and calibrated evaluators of `crag-judge`, and the LLM judge over any `LanguageModel`.

use std::sync::Arc;

use async_trait::async_trait;
use crag_core::{EvalDocument, Evaluation, Query};
use crag_judge::{
    CalibratedEvaluator, Calibration, EvaluationError, HeuristicConfig, HeuristicEvaluator,
    LlmJudge, LlmJudgeConfig,
};
use crag_ports::{
    ChatMessage, CompletionRequest, ErrorKind, LanguageModel, PortError, PortResult,
    RelevanceEvaluator,
};

/// The LLM-free heuristic evaluator (keyword overlap, semantic coherence, length, diversity).
#[derive(Debug, Clone)]
pub struct HeuristicRelevance {
    inner: HeuristicEvaluator,
}

impl HeuristicRelevance {
    /// Builds the evaluator; fails on invalid weights or thresholds.
    pub fn new(config: HeuristicConfig) -> PortResult<Self> {
        Ok(Self {
            inner: HeuristicEvaluator::new(config).map_err(config_error)?,
        })
    }
}

#[async_trait]
impl RelevanceEvaluator for HeuristicRelevance {
    fn name(&self) -> &str {
        "heuristic"
    }

    async fn evaluate(&self, query: &Query, documents: &[EvalDocument]) -> PortResult<Evaluation> {
        Ok(self.inner.evaluate(query.as_str(), documents))
    }
}

/// The calibrated evaluator: logistic models fitted by `crag calibrate` over the heuristic's
/// criteria and the retrieval signals (fusion, per-leg agreement, rerank).
#[derive(Debug, Clone)]
pub struct CalibratedRelevance {
    inner: CalibratedEvaluator,
}

impl CalibratedRelevance {
    /// Builds the evaluator; fails when the calibration does not validate (wrong feature
    /// names, non-finite numbers, crossed thresholds).
    pub fn new(calibration: Calibration) -> PortResult<Self> {
        Ok(Self {
            inner: CalibratedEvaluator::new(calibration).map_err(config_error)?,
        })
    }

    /// Returns the calibration in use.
    pub fn calibration(&self) -> &Calibration {
        self.inner.calibration()
    }
}

#[async_trait]
impl RelevanceEvaluator for CalibratedRelevance {
    fn name(&self) -> &str {
        "calibrated"
    }

    async fn evaluate(&self, query: &Query, documents: &[EvalDocument]) -> PortResult<Evaluation> {
        Ok(self.inner.evaluate(query.as_str(), documents))
    }
}

/// The batched LLM judge over a chat model.
#[derive(Debug, Clone)]
pub struct LlmRelevance {
    model: Arc<dyn LanguageModel>,
    judge: LlmJudge,
}

impl LlmRelevance {
    /// Builds the evaluator over `model`; fails on invalid thresholds.
    pub fn new(model: Arc<dyn LanguageModel>, config: LlmJudgeConfig) -> PortResult<Self> {
        Ok(Self {
            model,
            judge: LlmJudge::new(config).map_err(config_error)?,
        })
    }
}

#[async_trait]
impl RelevanceEvaluator for LlmRelevance {
    fn name(&self) -> &str {
        "llm"
    }

    async fn evaluate(&self, query: &Query, documents: &[EvalDocument]) -> PortResult<Evaluation> {
        if documents.is_empty() {
            return Ok(empty_evaluation());
        }
        let prompt = self.judge.prompt(query.as_str(), documents);
        let request = CompletionRequest {
            messages: vec![
                ChatMessage::system(prompt.system),
                ChatMessage::user(prompt.user),
            ],
            max_tokens: self.judge.config().max_tokens,
            temperature: 0.0,
        };
        let answer = self.model.complete(&request).await?;
        self.judge
            .judge(&answer, documents.len())
            .map_err(|e| match e {
                EvaluationError::Unparseable { .. } => PortError::with_source(
                    ErrorKind::Internal,
                    "the language model's judgement could not be parsed",
                    e,
                ),
                other => config_error(other),
            })
    }
}

fn empty_evaluation() -> Evaluation {
    Evaluation {
        verdict: crag_core::Verdict::Incorrect,
        score: 0.0,
        document_scores: Vec::new(),
        document_reasons: Vec::new(),
        criteria: Vec::new(),
        reasoning: "no documents were retrieved".into(),
        issues: Vec::new(),
    }
}

fn config_error(e: EvaluationError) -> PortError {
    PortError::with_source(
        ErrorKind::InvalidInput,
        "invalid evaluator configuration",
        e,
    )
}
