//! The LLM judge of seed 001: one batched prompt over the top documents, JSON scores 0-10, a
//! rank-weighted aggregate and a three-way verdict.

use std::fmt::Write as _;

use crag_core::{EvalDocument, Evaluation, Verdict};
use serde::{Deserialize, Serialize};

use crate::error::{EvaluationError, Result};
use crate::parse::parse_llm_scores;
use crate::stats::{char_prefix, mean_variance, unit};

/// Characters of the model's own reasoning kept in [`Evaluation::reasoning`].
const MAX_MODEL_REASONING_CHARS: usize = 300;

const SYSTEM_PROMPT: &str = "You judge how relevant retrieved documents are to a search query. \
Rate every document from 0 (unrelated) to 10 (answers the query directly). \
Judge only by the documents' content. \
Answer with one JSON object and nothing else: no prose, no code fences.";

/// Prompt size, thresholds and answer budget of the LLM judge (defaults from seed 001).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// Builds the judging prompt and turns the model's answer into an [`Evaluation`] (seed 001's
/// `RelevanceEvaluator`, without the seed's guessed 0.5 on an unreadable answer).
///
/// Aggregation: the judged documents' scores, divided by 10, are averaged with weights
/// `1 / (i + 1)` by rank `i` (0-based); documents without a score drop out and the weights are
/// renormalised over the rest. Verdict: `Correct` at or above `correct_threshold`, `Incorrect`
/// at or below `incorrect_threshold`; between them `Ambiguous` when the population variance of
/// the scores exceeds `variance_threshold`, else `Correct` above the thresholds' midpoint (0.5
/// with the defaults, the seed's constant) and `Ambiguous` at or below it.
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
    /// strict JSON: `{"scores": [{"document": 1, "score": 0-10}, ...], "reasoning": "..."}`.
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
             (unrelated) to 10 (answers it directly). Answer with this JSON object only, one \
             entry per document, numbered as above, and one short sentence of reasoning. For \
             example, for two documents:\n\
             {{\"scores\": [{{\"document\": 1, \"score\": 8}}, {{\"document\": 2, \"score\": 3}}], \
             \"reasoning\": \"Document 1 answers the query; document 2 is off topic.\"}}",
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
    /// missing from the answer are `None`, and each is named in `issues`. With no documents the
    /// verdict is `Incorrect` with score 0. Fails with [`EvaluationError::Unparseable`] when no
    /// score can be read: never a guessed verdict.
    pub fn judge(&self, answer: &str, document_count: usize) -> Result<Evaluation> {
        if document_count == 0 {
            return Ok(Evaluation::nothing_retrieved());
        }
        let judged = document_count.min(self.config.top_n);
        let parsed = parse_llm_scores(answer, judged)?;
        let mut issues = parsed.issues;
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn judge() -> LlmJudge {
        LlmJudge::new(LlmJudgeConfig::default()).unwrap()
    }

    fn documents(n: usize) -> Vec<EvalDocument> {
        (0..n)
            .map(|i| {
                EvalDocument::new(
                    format!("c{i}"),
                    format!("s{i}"),
                    format!("text of document {i}"),
                    0.5,
                )
            })
            .collect()
    }

    fn evaluations(scores: &[u8]) -> String {
        let items: Vec<String> = scores
            .iter()
            .map(|s| format!(r#"{{"score": {s}, "reason": "r{s}"}}"#))
            .collect();
        format!(r#"{{"evaluations": [{}]}}"#, items.join(", "))
    }

    #[test]
    fn seed_relevant_case_is_correct() {
        let evaluation = judge().judge(&evaluations(&[9, 8]), 2).unwrap();
        assert_eq!(evaluation.verdict, Verdict::Correct);
        assert!(evaluation.score > 0.7);
        assert_eq!(evaluation.document_scores, [Some(0.9), Some(0.8)]);
        assert!(evaluation.criteria.is_empty());
    }

    #[test]
    fn seed_irrelevant_case_is_incorrect() {
        let evaluation = judge().judge(&evaluations(&[2, 1]), 2).unwrap();
        assert_eq!(evaluation.verdict, Verdict::Incorrect);
        assert!(evaluation.score < 0.3);
    }

    #[test]
    fn rank_weights_favour_the_top_documents() {
        // (0.8 * 1 + 0.3 / 2 + 0.5 / 3) / (1 + 1/2 + 1/3)
        let evaluation = judge().judge(&evaluations(&[8, 3, 5]), 3).unwrap();
        let expected = (0.8 + 0.15 + 0.5 / 3.0) / (1.0 + 0.5 + 1.0 / 3.0);
        assert!((evaluation.score - expected).abs() < 1e-5);
    }

    #[test]
    fn seed_mixed_case_follows_the_seeds_rule() {
        // Seed 001's test expects ambiguous for [8, 3, 5], but its own rule gives correct:
        // score 0.61 lies between the thresholds, variance 0.042 <= 0.1, and 0.61 > 0.5.
        // The rule is kept; a lower variance threshold makes the case ambiguous.
        let evaluation = judge().judge(&evaluations(&[8, 3, 5]), 3).unwrap();
        assert_eq!(evaluation.verdict, Verdict::Correct);
        let stricter = LlmJudge::new(LlmJudgeConfig {
            variance_threshold: 0.04,
            ..LlmJudgeConfig::default()
        })
        .unwrap();
        let evaluation = stricter.judge(&evaluations(&[8, 3, 5]), 3).unwrap();
        assert_eq!(evaluation.verdict, Verdict::Ambiguous);
    }

    #[test]
    fn high_variance_between_thresholds_is_ambiguous() {
        // score 0.68, variance 0.142
        let evaluation = judge().judge(&evaluations(&[9, 1, 9]), 3).unwrap();
        assert!(evaluation.score > 0.3 && evaluation.score < 0.7);
        assert_eq!(evaluation.verdict, Verdict::Ambiguous);
        // Consistent middling scores fall on either side of the midpoint.
        assert_eq!(
            judge().judge(&evaluations(&[6, 6]), 2).unwrap().verdict,
            Verdict::Correct
        );
        assert_eq!(
            judge().judge(&evaluations(&[4, 4]), 2).unwrap().verdict,
            Verdict::Ambiguous
        );
    }

    #[test]
    fn boundaries_are_inclusive_as_in_the_seed() {
        assert_eq!(judge().verdict(0.7, 0.0), Verdict::Correct);
        assert_eq!(judge().verdict(0.3, 0.0), Verdict::Incorrect);
        assert_eq!(judge().verdict(0.5, 0.0), Verdict::Ambiguous);
        assert_eq!(judge().verdict(0.69, 0.2), Verdict::Ambiguous);
    }

    #[test]
    fn thresholds_come_from_the_config() {
        let strict = LlmJudge::new(LlmJudgeConfig {
            correct_threshold: 0.95,
            incorrect_threshold: 0.9,
            ..LlmJudgeConfig::default()
        })
        .unwrap();
        assert_eq!(
            strict.judge(&evaluations(&[9, 8]), 2).unwrap().verdict,
            Verdict::Incorrect
        );
    }

    #[test]
    fn no_documents_is_incorrect() {
        let evaluation = judge().judge("anything", 0).unwrap();
        assert_eq!(evaluation.verdict, Verdict::Incorrect);
        assert_eq!(evaluation.score, 0.0);
        assert!(evaluation.reasoning.contains("no documents"));
    }

    #[test]
    fn documents_beyond_top_n_and_missing_ones_are_none_and_reported() {
        let answer = r#"{"scores": [{"document": 1, "score": 10}, {"document": 3, "score": 0}]}"#;
        let evaluation = judge().judge(answer, 8).unwrap();
        assert_eq!(evaluation.document_scores.len(), 8);
        assert_eq!(
            evaluation.document_scores[..3],
            [Some(1.0), None, Some(0.0)]
        );
        assert!(evaluation.document_scores[3..].iter().all(Option::is_none));
        let issues = evaluation.issues.join("\n");
        for missing in [
            "document 2:",
            "document 4:",
            "document 5:",
            "documents 6-8: not judged",
        ] {
            assert!(issues.contains(missing), "{missing} in {issues}");
        }
        // Missing documents drop out of the weights: (1 * 1 + 0 / 3) / (1 + 1/3).
        assert!((evaluation.score - 0.75).abs() < 1e-6);
    }

    #[test]
    fn unreadable_answers_are_errors_not_verdicts() {
        for answer in [
            "No, I cannot help with that.",
            "The documents are not relevant to the query.",
            "yes",
        ] {
            assert!(
                matches!(
                    judge().judge(answer, 3),
                    Err(EvaluationError::Unparseable { .. })
                ),
                "{answer}"
            );
        }
    }

    #[test]
    fn model_reasoning_is_kept_short() {
        let long = "x".repeat(1000);
        let answer = format!(r#"{{"scores": [7], "reasoning": "{long}"}}"#);
        let evaluation = judge().judge(&answer, 1).unwrap();
        assert!(evaluation.reasoning.starts_with("Verdict correct"));
        assert!(evaluation.reasoning.len() < 500);
    }

    #[test]
    fn prompt_batches_the_top_documents_and_asks_for_json() {
        let mut docs = documents(7);
        docs[0].text = "é".repeat(1000);
        let prompt = judge().prompt("what is \"CRAG\"?", &docs);
        assert!(prompt.system.contains("JSON"));
        assert!(prompt.user.contains(r#"Query: "what is \"CRAG\"?""#));
        assert!(prompt.user.contains("[Document 5]"));
        assert!(!prompt.user.contains("[Document 6]"));
        assert!(prompt.user.contains(&format!("{}...", "é".repeat(800))));
        assert!(!prompt.user.contains(&"é".repeat(801)));
        assert!(prompt
            .user
            .contains(r#"{"scores": [{"document": 1, "score": 8}"#));
        assert!(prompt.user.contains("each of the 5 document(s)"));

        let empty = judge().prompt("q", &[]);
        assert!(empty.user.contains("(none)"));
    }

    #[test]
    fn the_prompts_example_answer_parses() {
        let prompt = judge().prompt("q", &documents(2));
        let example = &prompt.user[prompt.user.rfind("{\"scores\"").unwrap()..];
        let evaluation = judge().judge(example, 2).unwrap();
        assert_eq!(evaluation.document_scores, [Some(0.8), Some(0.3)]);
    }

    #[test]
    fn validation_names_the_field() {
        let field = |config: LlmJudgeConfig| match config.validate() {
            Err(EvaluationError::InvalidConfig { field, .. }) => field,
            other => panic!("expected invalid config, got {other:?}"),
        };
        assert!(LlmJudgeConfig::default().validate().is_ok());
        let d = LlmJudgeConfig::default;
        assert_eq!(field(LlmJudgeConfig { top_n: 0, ..d() }), "top_n");
        assert_eq!(
            field(LlmJudgeConfig {
                max_chars_per_document: 0,
                ..d()
            }),
            "max_chars_per_document"
        );
        assert_eq!(
            field(LlmJudgeConfig {
                max_tokens: 0,
                ..d()
            }),
            "max_tokens"
        );
        assert_eq!(
            field(LlmJudgeConfig {
                correct_threshold: f32::NAN,
                ..d()
            }),
            "correct_threshold"
        );
        assert_eq!(
            field(LlmJudgeConfig {
                incorrect_threshold: 0.8,
                ..d()
            }),
            "incorrect_threshold"
        );
        assert_eq!(
            field(LlmJudgeConfig {
                variance_threshold: -1.0,
                ..d()
            }),
            "variance_threshold"
        );
        let error = LlmJudge::new(LlmJudgeConfig { top_n: 0, ..d() }).unwrap_err();
        assert!(error.to_string().contains("top_n"));
    }

    #[test]
    fn config_deserialises_with_defaults_and_rejects_unknown_fields() {
        let config: LlmJudgeConfig = serde_json::from_str(r#"{"top_n": 3}"#).unwrap();
        assert_eq!(config.top_n, 3);
        assert_eq!(config.max_chars_per_document, 800);
        assert!(serde_json::from_str::<LlmJudgeConfig>(r#"{"topn": 3}"#).is_err());
    }

    proptest! {
        #[test]
        fn judge_never_panics_and_stays_in_unit_range(
            answer in ".{0,200}",
            scores in prop::collection::vec(-20.0f64..30.0, 0..8),
            count in 0usize..10,
            use_scores in any::<bool>(),
        ) {
            let answer = if use_scores {
                format!(r#"{{"scores": {scores:?}}}"#)
            } else {
                answer
            };
            if let Ok(evaluation) = judge().judge(&answer, count) {
                prop_assert!((0.0..=1.0).contains(&evaluation.score));
                prop_assert_eq!(evaluation.document_scores.len(), count);
                for score in evaluation.document_scores.iter().flatten() {
                    prop_assert!((0.0..=1.0).contains(score));
                }
            }
        }

        #[test]
        fn prompt_never_panics(query in ".{0,50}", texts in prop::collection::vec(".{0,50}", 0..8)) {
            let documents: Vec<EvalDocument> = texts
                .into_iter()
                .map(|text| EvalDocument::new("", "", text, f32::NAN))
                .collect();
            let prompt = judge().prompt(&query, &documents);
            prop_assert!(prompt.user.contains("Query: "));
        }
    }
}
