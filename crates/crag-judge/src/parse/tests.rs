use super::*;
use proptest::prelude::*;

fn scores(answer: &str, expected: usize) -> Vec<Option<f32>> {
    parse_llm_scores(answer, expected)
        .unwrap_or_else(|e| panic!("{answer:?}: {e}"))
        .scores
}

fn unparseable(answer: &str, expected: usize) -> bool {
    matches!(
        parse_llm_scores(answer, expected),
        Err(EvaluationError::Unparseable { .. })
    )
}

#[test]
fn reads_the_prompted_shape() {
    let parsed = parse_llm_scores(
        r#"{"scores": [{"document": 1, "score": 8}, {"document": 2, "score": 3}],
            "reasoning": "The first answers it."}"#,
        2,
    )
    .unwrap();
    assert_eq!(parsed.scores, [Some(8.0), Some(3.0)]);
    assert_eq!(parsed.reasoning.as_deref(), Some("The first answers it."));
    assert!(parsed.issues.is_empty(), "{:?}", parsed.issues);
}

#[test]
fn reads_fenced_json_with_prose_around() {
    let answer = "Sure! Here is my evaluation:\n```json\n{\"scores\": [7, 3]}\n```\nHope it helps.";
    assert_eq!(scores(answer, 2), [Some(7.0), Some(3.0)]);
    let bare_fence = "```\n[5, 6]\n```";
    assert_eq!(scores(bare_fence, 2), [Some(5.0), Some(6.0)]);
}

#[test]
fn reads_json_embedded_in_prose() {
    let answer = r#"After reading them, {"scores": [9, 1]} is my judgement. {"unrelated": true}"#;
    assert_eq!(scores(answer, 2), [Some(9.0), Some(1.0)]);
}

#[test]
fn reads_the_seed_shape_and_other_list_keys() {
    let seed = r#"{"evaluations": [{"score": 9, "reason": "Highly relevant"},
                                   {"score": 8, "reason": "Very relevant"}]}"#;
    let parsed = parse_llm_scores(seed, 2).unwrap();
    assert_eq!(parsed.scores, [Some(9.0), Some(8.0)]);
    assert_eq!(
        parsed.reasoning.as_deref(),
        Some("Highly relevant; Very relevant")
    );
    let documents = r#"{"documents": [{"id": 2, "score": 4}, {"id": 1, "score": 7}]}"#;
    assert_eq!(scores(documents, 2), [Some(7.0), Some(4.0)]);
    let nested = r#"{"result": {"Scores": [{"Document": "Document 1", "Relevance": "6"}]}}"#;
    assert_eq!(scores(nested, 1), [Some(6.0)]);
}

#[test]
fn zero_based_indices_are_detected_and_reported() {
    let parsed = parse_llm_scores(
        r#"{"scores": [{"index": 0, "score": 7}, {"index": 1, "score": 2}]}"#,
        2,
    )
    .unwrap();
    assert_eq!(parsed.scores, [Some(7.0), Some(2.0)]);
    assert!(parsed.issues.iter().any(|i| i.contains("0-based")));
    let one_based = r#"{"scores": [{"index": 2, "score": 2}, {"index": 1, "score": 7}]}"#;
    assert_eq!(scores(one_based, 2), [Some(7.0), Some(2.0)]);
}

#[test]
fn reads_maps_and_numeric_strings() {
    assert_eq!(
        scores(r#"{"scores": {"1": "8", "2": "3/10", "3": 4.5}}"#, 3),
        [Some(8.0), Some(3.0), Some(4.5)]
    );
}

#[test]
fn reads_a_single_scored_object() {
    let parsed = parse_llm_scores(r#"{"score": 6, "reasoning": "Partly."}"#, 1).unwrap();
    assert_eq!(parsed.scores, [Some(6.0)]);
    assert_eq!(parsed.reasoning.as_deref(), Some("Partly."));
}

#[test]
fn missing_entries_are_reported_one_by_one() {
    let parsed = parse_llm_scores(r#"{"scores": [{"document": 2, "score": 5}]}"#, 3).unwrap();
    assert_eq!(parsed.scores, [None, Some(5.0), None]);
    assert!(parsed
        .issues
        .iter()
        .any(|i| i == "document 1: no score in the answer"));
    assert!(parsed
        .issues
        .iter()
        .any(|i| i == "document 3: no score in the answer"));
}

#[test]
fn out_of_range_and_invalid_values_are_reported() {
    let parsed = parse_llm_scores(r#"{"scores": [12, -1, "NaN", "high", null, 5, 5]}"#, 6).unwrap();
    assert_eq!(
        parsed.scores,
        [Some(10.0), Some(0.0), None, None, None, Some(5.0)]
    );
    let issues = parsed.issues.join("\n");
    assert!(
        issues.contains("score 12 outside 0-10; clamped to 10"),
        "{issues}"
    );
    assert!(
        issues.contains("score -1 outside 0-10; clamped to 0"),
        "{issues}"
    );
    assert!(issues.contains("document 3: unreadable score"), "{issues}");
    assert!(issues.contains("document 4: unreadable score"), "{issues}");
    assert!(issues.contains("documents 7 lie outside"), "{issues}");
}

#[test]
fn duplicates_keep_the_first_score() {
    let parsed = parse_llm_scores(
        r#"{"scores": [{"document": 1, "score": 8}, {"document": 1, "score": 2}]}"#,
        1,
    )
    .unwrap();
    assert_eq!(parsed.scores, [Some(8.0)]);
    assert!(parsed.issues.iter().any(|i| i.contains("more than once")));
}

#[test]
fn truncated_answers_are_salvaged_from_complete_entries() {
    let answer = r#"{"scores": [{"document": 1, "score": 8}, {"document": 2, "score": 3}, {"docu"#;
    let parsed = parse_llm_scores(answer, 3).unwrap();
    assert_eq!(parsed.scores, [Some(8.0), Some(3.0), None]);
    assert!(parsed.issues.iter().any(|i| i.contains("separate objects")));
}

#[test]
fn prose_is_never_read_as_a_verdict() {
    assert!(unparseable("No, I cannot help with that.", 3));
    assert!(unparseable("Yes.", 1));
    assert!(unparseable(
        "Document 1 is not relevant. Document 2 is relevant, I'd say 8/10.",
        2
    ));
    assert!(unparseable(
        "These documents are not relevant to the query.",
        2
    ));
    assert!(unparseable("See [1] and [2] for details.", 2));
    assert!(unparseable("", 1));
    assert!(unparseable(r#"{"verdict": "no"}"#, 1));
    assert!(unparseable(r#"{"scores": ["high", "low"]}"#, 2));
    assert!(unparseable(
        r#"{"scores": [{"document": 9, "score": 7}]}"#,
        2
    ));
}

#[test]
fn unparseable_carries_an_excerpt() {
    let long = "No. ".repeat(200);
    match parse_llm_scores(&long, 2) {
        Err(EvaluationError::Unparseable { excerpt, message }) => {
            assert_eq!(excerpt.chars().count(), EXCERPT_CHARS);
            assert!(message.contains("no JSON"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_scale_mismatch_is_flagged() {
    let parsed = parse_llm_scores(r#"{"scores": [0.9, 0.2]}"#, 2).unwrap();
    assert!(parsed.issues.iter().any(|i| i.contains("0-1 scale")));
}

#[test]
fn nothing_expected_reads_nothing() {
    let parsed = parse_llm_scores("garbage", 0).unwrap();
    assert!(parsed.scores.is_empty());
}

#[test]
fn reads_a_reason_per_document() {
    let parsed = parse_llm_scores(
        r#"{"scores": [{"document": 1, "score": 8, "reason": "Explains the borrow checker."},
                       {"document": 2, "score": 3, "Explanation": "About bread."}],
            "reasoning": "The first answers it."}"#,
        2,
    )
    .unwrap();
    assert_eq!(parsed.scores, [Some(8.0), Some(3.0)]);
    assert_eq!(
        parsed.reasons,
        [
            Some("Explains the borrow checker.".to_owned()),
            Some("About bread.".to_owned())
        ]
    );
    assert_eq!(parsed.reasoning.as_deref(), Some("The first answers it."));
    assert!(parsed.issues.is_empty(), "{:?}", parsed.issues);
}

#[test]
fn a_missing_reason_is_none() {
    let parsed = parse_llm_scores(
        r#"{"scores": [{"document": 1, "score": 8}, {"document": 2, "score": 3, "reason": "  "},
                       {"document": 3, "score": 6, "reason": "Partly."}]}"#,
        4,
    )
    .unwrap();
    assert_eq!(
        parsed.reasons,
        [None, None, Some("Partly.".to_owned()), None]
    );
    assert_eq!(scores("[7, 2]", 2), [Some(7.0), Some(2.0)]);
    assert_eq!(parse_llm_scores("[7, 2]", 2).unwrap().reasons, [None, None]);
}

#[test]
fn reasons_are_read_through_prose_and_fences() {
    let fenced = "Sure! Here is my evaluation:\n```json\n{\"scores\": [{\"document\": 1, \
                  \"score\": 7, \"reason\": \"On topic.\"}]}\n```\nHope it helps.";
    let parsed = parse_llm_scores(fenced, 1).unwrap();
    assert_eq!(parsed.reasons, [Some("On topic.".to_owned())]);
    // A small model's answer cut short, with repeated lines: the complete objects count, the
    // first entry of a document wins, score and reason together.
    let cut = r#"Scores:
        {"document": 1, "score": 9, "reason": "Defines it."}
        {"document": 1, "score": 2, "reason": "Repeated."}
        {"document": 2, "score": 4}
        {"document": 3, "score": 6, "reas"#;
    let parsed = parse_llm_scores(cut, 3).unwrap();
    assert_eq!(parsed.scores, [Some(9.0), Some(4.0), None]);
    assert_eq!(parsed.reasons, [Some("Defines it.".to_owned()), None, None]);
    assert!(parsed.issues.iter().any(|i| i.contains("more than once")));
}

#[test]
fn an_overlong_reason_is_cut() {
    let long = format!("{} end", "word\n ".repeat(100));
    let answer = serde_json::json!({"scores": [{"document": 1, "score": 5, "reason": long}]});
    let parsed = parse_llm_scores(&answer.to_string(), 1).unwrap();
    let reason = parsed.reasons[0].as_deref().unwrap();
    assert_eq!(reason.chars().count(), crag_core::MAX_DOCUMENT_REASON_CHARS);
    assert!(reason.starts_with("word word "), "{reason}");
    assert!(reason.ends_with("..."), "{reason}");
    assert!(!reason.contains('\n'), "{reason}");
}

#[test]
fn unusable_reasons_are_dropped_never_guessed() {
    let parsed = parse_llm_scores(
        r#"{"scores": [{"document": 1, "score": 6, "reason": 7},
                       {"document": 2, "score": 4, "reason": {"why": "nested"}},
                       {"document": 3, "score": "high", "reason": "Unscored."},
                       {"document": 9, "score": 8, "reason": "Not a document."}]}"#,
        3,
    )
    .unwrap();
    assert_eq!(parsed.scores, [Some(6.0), Some(4.0), None]);
    assert_eq!(parsed.reasons, [None, None, None]);
    assert!(unparseable(
        r#"{"scores": [{"document": 1, "reason": "No score at all."}]}"#,
        1
    ));
    assert!(unparseable(
        "Document 1: 8, because it answers the query.",
        1
    ));
}

#[test]
fn index_strings() {
    assert!(matches!(index_from_str("Document 12"), Index::At(12)));
    assert!(matches!(index_from_str("doc_3]"), Index::At(3)));
    assert!(matches!(index_from_str("none"), Index::Unreadable));
    assert!(matches!(
        index_from_str("99999999999999999999999"),
        Index::Unreadable
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parse_never_panics(answer in ".{0,300}", expected in 0usize..8) {
        if let Ok(parsed) = parse_llm_scores(&answer, expected) {
            prop_assert_eq!(parsed.scores.len(), expected);
            for score in parsed.scores.iter().flatten() {
                prop_assert!((0.0..=10.0).contains(score));
            }
        }
    }

    #[test]
    fn reasons_go_with_scores_and_stay_short(
        reasons in prop::collection::vec(prop::option::of(".{0,300}"), 1..6),
    ) {
        let entries: Vec<serde_json::Value> = reasons
            .iter()
            .enumerate()
            .map(|(i, r)| serde_json::json!({"document": i + 1, "score": 5, "reason": r}))
            .collect();
        let answer = serde_json::json!({"scores": entries}).to_string();
        let parsed = parse_llm_scores(&answer, reasons.len()).unwrap();
        prop_assert_eq!(parsed.reasons.len(), reasons.len());
        for (read, sent) in parsed.reasons.iter().zip(&reasons) {
            let blank = sent.as_deref().is_none_or(|s| s.trim().is_empty());
            prop_assert_eq!(read.is_none(), blank);
            if let Some(read) = read {
                prop_assert!(read.chars().count() <= crag_core::MAX_DOCUMENT_REASON_CHARS);
                prop_assert_eq!(read.trim(), read.as_str());
            }
        }
    }

    #[test]
    fn parse_never_panics_on_json_like_text(
        parts in prop::collection::vec(
            prop_oneof![
                Just("{".to_owned()), Just("}".to_owned()), Just("[".to_owned()),
                Just("]".to_owned()), Just("\"scores\":".to_owned()),
                Just("\"score\":".to_owned()), Just("\"document\":".to_owned()),
                Just(",".to_owned()), Just("```json\n".to_owned()), Just("```".to_owned()),
                "-?[0-9]{1,3}(\\.[0-9])?", "\"[a-z0-9 /]{0,6}\"", ".{0,4}",
            ],
            0..40,
        ),
        expected in 0usize..6,
    ) {
        let answer = parts.concat();
        if let Ok(parsed) = parse_llm_scores(&answer, expected) {
            prop_assert_eq!(parsed.scores.len(), expected);
            for score in parsed.scores.iter().flatten() {
                prop_assert!((0.0..=10.0).contains(score));
            }
        }
    }

    #[test]
    fn well_formed_answers_round_trip(
        values in prop::collection::vec(prop::option::of(0u8..=10), 1..8),
        fenced in any::<bool>(),
    ) {
        let entries: Vec<String> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!(r#"{{"document": {}, "score": {v}}}"#, i + 1)))
            .collect();
        let json = format!(r#"{{"scores": [{}], "reasoning": "ok"}}"#, entries.join(", "));
        let answer = if fenced { format!("Here:\n```json\n{json}\n```") } else { json };
        let result = parse_llm_scores(&answer, values.len());
        if values.iter().all(Option::is_none) {
            prop_assert!(result.is_err());
        } else {
            let parsed = result.unwrap();
            let expected: Vec<Option<f32>> = values.iter().map(|v| v.map(f32::from)).collect();
            prop_assert_eq!(parsed.scores, expected);
            let missing = values.iter().filter(|v| v.is_none()).count();
            prop_assert_eq!(
                parsed.issues.iter().filter(|i| i.ends_with("no score in the answer")).count(),
                missing
            );
        }
    }
}
