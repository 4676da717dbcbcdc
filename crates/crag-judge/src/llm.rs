//! The LLM judge: one batched prompt over the top documents, JSON scores 0-10 with a reason
//! each, a rank-weighted aggregate and a three-way verdict.

use std::fmt::Write as _;

use crag_core::{EvalDocument, Evaluation, Verdict};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{EvaluationError, Result};
use crate::parse::parse_llm_scores;
use crate::stats::{char_prefix, mean_variance, unit};

/// Characters of the model's own reasoning kept in [`Evaluation::reasoning`].
const MAX_MODEL_REASONING_CHARS: usize = 300;

const SYSTEM_PROMPT: &str = "You judge how relevant retrieved documents are to a search query. \
Rate every document from 0 (unrelated) to 10 (answers the query directly) \
and say in one short sentence why. Judge only by the documents' content. \
Answer with one JSON object and nothing else: no prose, no code fences.";

/// Prompt size, thresholds and answer budget of the LLM judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LlmJudgeConfig {
    /// Documents judged (the best first); the rest get no score.
    pub top_n: usize,
    /// Characters of each document shown to the model (cut on a character boundary).
    pub max_chars_per_document: usize,
    /// Aggregates at or above this are `Correct`.
    pub correct_threshold: f32,
    /// Aggregates at or below this are `Incorrect`.
    pub incorrect_threshold: f32,
    /// Between the thresholds, a variance of the document scores above this is `Ambiguous`;
    /// otherwise the aggregate decides against the thresholds' midpoint.
    pub variance_threshold: f32,
    /// Most tokens the model may spend on its answer.
    pub max_tokens: u32,
}

impl Default for LlmJudgeConfig {
    fn default() -> Self {
        Self {
            top_n: 5,
            max_chars_per_document: 800,
            correct_threshold: 0.7,
            incorrect_threshold: 0.3,
            variance_threshold: 0.1,
            max_tokens: 512,
        }
    }
}

impl LlmJudgeConfig {
    /// Checks that the sizes are positive, `0 <= incorrect_threshold <= correct_threshold <= 1`
    /// and the variance threshold is finite and non-negative.
    pub fn validate(&self) -> Result<()> {
        if self.top_n == 0 {
            return Err(EvaluationError::config("top_n", "must be at least 1"));
        }
        if self.max_chars_per_document == 0 {
            return Err(EvaluationError::config(
                "max_chars_per_document",
                "must be at least 1",
            ));
        }
        if self.max_tokens == 0 {
            return Err(EvaluationError::config("max_tokens", "must be at least 1"));
        }
        for (field, threshold) in [
            ("correct_threshold", self.correct_threshold),
            ("incorrect_threshold", self.incorrect_threshold),
        ] {
            if !(0.0..=1.0).contains(&threshold) {
                return Err(EvaluationError::config(
                    field,
                    format!("must lie in [0, 1], got {threshold}"),
                ));
            }
        }
        if self.incorrect_threshold > self.correct_threshold {
            return Err(EvaluationError::config(
                "incorrect_threshold",
                format!(
                    "must not exceed correct_threshold ({}), got {}",
                    self.correct_threshold, self.incorrect_threshold
                ),
            ));
        }
        if !self.variance_threshold.is_finite() || self.variance_threshold < 0.0 {
            return Err(EvaluationError::config(
                "variance_threshold",
                format!(
                    "must be a finite number >= 0, got {}",
                    self.variance_threshold
                ),
            ));
        }
        Ok(())
    }
}

/// A chat prompt: system instructions and the user turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmPrompt {
    /// The system message.
    pub system: String,
    /// The user message.
    pub user: String,
}

/// Builds the judging prompt and turns the model's answer into an [`Evaluation`]. An unreadable
/// answer is an error, never a guessed score: a guess would pass for a judgement.
///
/// Aggregation: the judged documents' scores, divided by 10, are averaged with weights
/// `1 / (i + 1)` by rank `i` (0-based); documents without a score drop out and the weights are
/// renormalised over the rest. Verdict: `Correct` at or above `correct_threshold`, `Incorrect`
/// at or below `incorrect_threshold`; between them `Ambiguous` when the population variance of
/// the scores exceeds `variance_threshold`, else `Correct` above the thresholds' midpoint (0.5
/// with the defaults) and `Ambiguous` at or below it.
#[derive(Debug, Clone)]
pub struct LlmJudge {
    config: LlmJudgeConfig,
}

impl LlmJudge {
    /// Builds the judge; fails when the configuration does not validate.
    pub fn new(config: LlmJudgeConfig) -> Result<Self> {
        config.validate()?;
        Ok(Self { config })
    }

    /// Returns the configuration.
    pub fn config(&self) -> &LlmJudgeConfig {
        &self.config
    }

    /// Builds one batched prompt over the first `top_n` documents, numbered from 1, asking for
    /// strict JSON with a score and a one-sentence reason per document:
    /// `{"scores": [{"document": 1, "score": 0-10, "reason": "..."}, ...], "reasoning": "..."}`.
    pub fn prompt(&self, query: &str, documents: &[EvalDocument]) -> LlmPrompt {
        let shown = &documents[..documents.len().min(self.config.top_n)];
        // JSON-quoting keeps quotes and newlines inside the query from breaking the layout.
        let quoted = serde_json::to_string(query).unwrap_or_else(|_| format!("{query:?}"));
        let mut user = format!("Query: {quoted}\n\nDocuments:\n");
        if shown.is_empty() {
            user.push_str("(none)\n");
        }
        for (i, document) in shown.iter().enumerate() {
            let (text, cut) = char_prefix(document.text.trim(), self.config.max_chars_per_document);
            let ellipsis = if cut { "..." } else { "" };
            let _ = write!(user, "\n[Document {}]\n{text}{ellipsis}\n", i + 1);
        }
        let _ = write!(
            user,
            "\nRate the relevance of each of the {} document(s) above to the query, from 0 \
             (unrelated) to 10 (answers it directly). Answer with this JSON object only: one \
             entry per document, numbered as above, with its score and one short sentence \
             saying why, then one short sentence of overall reasoning. For example, for two \
             documents:\n\
             {{\"scores\": [{{\"document\": 1, \"score\": 8, \"reason\": \"It explains \
             what the query asks.\"}}, {{\"document\": 2, \"score\": 3, \"reason\": \"It is \
             about another topic.\"}}], \"reasoning\": \"Document 1 answers the query; \
             document 2 is off topic.\"}}",
            shown.len()
        );
        LlmPrompt {
            system: SYSTEM_PROMPT.to_owned(),
            user,
        }
    }

    /// Parses the model's `answer` and aggregates it into an evaluation of `document_count`
    /// documents.
    ///
    /// `document_scores` has `document_count` entries in [0, 1]; those beyond `top_n` or
    /// missing from the answer are `None`, and each is named in `issues`. `document_reasons`
    /// has `document_count` entries too: the model's reason for each scored document (see
    /// [`crate::ParsedScores::reasons`]), `None` where it gave none. With no documents the
    /// verdict is `Incorrect` with score 0. Fails with [`EvaluationError::Unparseable`] when no
    /// score can be read: never a guessed verdict.
    pub fn judge(&self, answer: &str, document_count: usize) -> Result<Evaluation> {
        if document_count == 0 {
            return Ok(Evaluation::nothing_retrieved());
        }
        let judged = document_count.min(self.config.top_n);
        let parsed = parse_llm_scores(answer, judged)?;
        let mut issues = parsed.issues;
        let mut document_reasons = parsed.reasons;
        document_reasons.resize(document_count, None);
        let mut document_scores: Vec<Option<f32>> = parsed
            .scores
            .iter()
            .map(|score| score.map(|s| unit(s / 10.0)))
            .collect();
        document_scores.resize(document_count, None);
        if document_count > judged {
            let range = if document_count == judged + 1 {
                format!("document {document_count}")
            } else {
                format!("documents {}-{document_count}", judged + 1)
            };
            issues.push(format!(
                "{range}: not judged (beyond top_n {})",
                self.config.top_n
            ));
        }

        let (mut weighted, mut weights) = (0.0f64, 0.0f64);
        for (rank, score) in document_scores.iter().enumerate() {
            if let Some(score) = score {
                let weight = 1.0 / (rank as f64 + 1.0);
                weighted += weight * f64::from(*score);
                weights += weight;
            }
        }
        let score = if weights > 0.0 {
            unit((weighted / weights) as f32)
        } else {
            0.0
        };
        let read: Vec<f32> = document_scores.iter().flatten().copied().collect();
        let variance = mean_variance(&read).map_or(0.0, |(_, v)| v);
        let verdict = self.verdict(score, variance);

        let mut reasoning = format!(
            "Verdict {verdict}: rank-weighted score {score:.2} over {} of {document_count} \
             document(s), variance {variance:.3}.",
            read.len()
        );
        if let Some(model) = parsed.reasoning {
            let (text, cut) = char_prefix(model.trim(), MAX_MODEL_REASONING_CHARS);
            let _ = write!(reasoning, " Model: {text}{}", if cut { "..." } else { "" });
        }
        Ok(Evaluation {
            verdict,
            score,
            document_scores,
            document_reasons,
            criteria: Vec::new(),
            reasoning,
            issues,
        })
    }

    fn verdict(&self, score: f32, variance: f32) -> Verdict {
        let config = &self.config;
        if score >= config.correct_threshold {
            Verdict::Correct
        } else if score <= config.incorrect_threshold {
            Verdict::Incorrect
        } else if variance > config.variance_threshold {
            Verdict::Ambiguous
        } else if score > (config.correct_threshold + config.incorrect_threshold) / 2.0 {
            Verdict::Correct
        } else {
            Verdict::Ambiguous
        }
    }
}

#[cfg(test)]
mod tests;
