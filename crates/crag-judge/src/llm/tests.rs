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
    // Scores [8, 3, 5] look mixed, but the rule gives correct:
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
        .contains(r#"{"scores": [{"document": 1, "score": 8, "reason": ""#));
    assert!(prompt.user.contains("one short sentence saying why"));
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
    assert_eq!(
        evaluation.document_reasons,
        [
            Some("It explains what the query asks.".to_owned()),
            Some("It is about another topic.".to_owned())
        ]
    );
    assert!(evaluation
        .reasoning
        .ends_with("Model: Document 1 answers the query; document 2 is off topic."));
}

#[test]
fn each_document_keeps_its_own_reason() {
    let answer = r#"Here you go: {"scores": [
        {"document": 2, "score": 2, "reason": "  Off\ntopic.  "},
        {"document": 1, "score": 9, "reason": "Answers it."},
        {"document": 3, "score": 5}],
        "reasoning": "Mixed."} Thanks!"#;
    let evaluation = judge().judge(answer, 7).unwrap();
    assert_eq!(evaluation.document_reasons.len(), 7);
    assert_eq!(evaluation.document_reason(0), Some("Answers it."));
    assert_eq!(evaluation.document_reason(1), Some("Off topic."));
    assert_eq!(evaluation.document_reason(2), None, "no reason given");
    assert!(evaluation.document_reasons[3..].iter().all(Option::is_none));
    assert!(evaluation.reasoning.ends_with("Model: Mixed."));
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
            prop_assert_eq!(evaluation.document_reasons.len(), count);
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
