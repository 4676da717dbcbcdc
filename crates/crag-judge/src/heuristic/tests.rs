use super::*;
use proptest::prelude::*;

fn doc(source: &str, text: &str, similarity: f32) -> EvalDocument {
    EvalDocument::new(format!("{source}#0"), source, text, similarity)
}

fn evaluator() -> HeuristicEvaluator {
    HeuristicEvaluator::new(HeuristicConfig::default()).unwrap()
}

fn criterion_score(evaluation: &Evaluation, name: &str) -> f32 {
    evaluation
        .criteria
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.score)
        .unwrap()
}

fn abstract_text(words: &str) -> String {
    std::iter::repeat_n(words, 12).collect::<Vec<_>>().join(" ")
}

#[test]
fn seed_relevant_case_is_correct() {
    let documents = [doc(
        "docs/async.md",
        "Async patterns in Python use asyncio library for concurrent execution",
        0.92,
    )];
    let evaluation = evaluator().evaluate("Python async patterns", &documents);
    assert_eq!(evaluation.verdict, Verdict::Correct, "{evaluation:?}");
    assert!(evaluation.score > 0.75);
    assert!(criterion_score(&evaluation, KEYWORD_OVERLAP) > 0.5);
    assert!(evaluation.document_scores[0].unwrap() > 0.9);
}

#[test]
fn seed_irrelevant_case_is_incorrect() {
    let documents = [doc(
        "docs/frontend.md",
        "React components use hooks for state management",
        0.35,
    )];
    let evaluation = evaluator().evaluate("Kubernetes deployment strategies", &documents);
    assert_eq!(evaluation.verdict, Verdict::Incorrect, "{evaluation:?}");
    assert!(evaluation.score < 0.5);
    assert!(evaluation.document_scores[0].unwrap() < 0.4);
}

#[test]
fn unrelated_query_against_long_abstracts_is_incorrect() {
    // Long texts from distinct sources give length and diversity full marks, and a stray
    // keyword ("latest") matches: the low similarities must still sink the verdict.
    let documents: Vec<_> = (0..5)
        .map(|i| {
            doc(
                &format!("scifact/{i}"),
                &abstract_text(
                    "We report the latest findings on vitamin D receptor expression in \
                     human immune cells and its effect on cytokine levels",
                ),
                0.1 + 0.02 * i as f32,
            )
        })
        .collect();
    let evaluation = evaluator().evaluate("latest SpaceX launch updates", &documents);
    assert_eq!(evaluation.verdict, Verdict::Incorrect, "{evaluation:?}");
    assert_eq!(criterion_score(&evaluation, SEMANTIC_COHERENCE), 0.0);
    assert_eq!(criterion_score(&evaluation, LENGTH_ADEQUACY), 1.0);
    assert_eq!(criterion_score(&evaluation, SOURCE_DIVERSITY), 1.0);
    assert!(evaluation.document_scores.iter().all(|s| s.unwrap() < 0.4));
}

#[test]
fn on_topic_query_is_correct() {
    let documents: Vec<_> = [0.8, 0.72, 0.66, 0.61]
        .iter()
        .enumerate()
        .map(|(i, &sim)| {
            doc(
                &format!("scifact/{i}"),
                &abstract_text(
                    "Vitamin D supplementation affects the immune response and lowers \
                     infection rates in adults",
                ),
                sim,
            )
        })
        .collect();
    let evaluation = evaluator().evaluate("Do vitamins affect the immune response?", &documents);
    assert_eq!(evaluation.verdict, Verdict::Correct, "{evaluation:?}");
    assert_eq!(criterion_score(&evaluation, KEYWORD_OVERLAP), 1.0);
}

#[test]
fn partly_matching_mid_similarity_is_ambiguous() {
    let documents: Vec<_> = [0.55, 0.5, 0.45]
        .iter()
        .enumerate()
        .map(|(i, &sim)| {
            doc(
                &format!("src/{i}"),
                &abstract_text("Vitamin intake among adults in northern countries"),
                sim,
            )
        })
        .collect();
    let evaluation = evaluator().evaluate("vitamin effects on immune cells", &documents);
    assert_eq!(evaluation.verdict, Verdict::Ambiguous, "{evaluation:?}");
}

#[test]
fn uniformly_low_similarities_are_not_coherent() {
    let documents: Vec<_> = (0..4)
        .map(|i| doc(&format!("s{i}"), "text", 0.15))
        .collect();
    let evaluation = evaluator().evaluate("anything here", &documents);
    assert_eq!(criterion_score(&evaluation, SEMANTIC_COHERENCE), 0.0);

    let high: Vec<_> = (0..4).map(|i| doc(&format!("s{i}"), "text", 0.7)).collect();
    let evaluation = evaluator().evaluate("anything here", &high);
    assert_eq!(criterion_score(&evaluation, SEMANTIC_COHERENCE), 1.0);
}

#[test]
fn spread_lowers_coherence() {
    let mixed = [doc("a", "x", 0.9), doc("b", "x", 0.1)];
    let evaluation = evaluator().evaluate("anything here", &mixed);
    // ramped [1, 0]: mean 0.5, variance 0.25 -> 0.5 * 0.75
    assert!((criterion_score(&evaluation, SEMANTIC_COHERENCE) - 0.375).abs() < 1e-6);
}

#[test]
fn empty_documents_are_incorrect() {
    let evaluation = evaluator().evaluate("anything", &[]);
    assert_eq!(evaluation.verdict, Verdict::Incorrect);
    assert_eq!(evaluation.score, 0.0);
    assert!(evaluation.document_scores.is_empty());
    assert!(evaluation.reasoning.contains("no documents"));
}

#[test]
fn criteria_are_reported_with_weights() {
    let documents = [doc("a", "python async", 0.6)];
    let evaluation = evaluator().evaluate("python async", &documents);
    let names: Vec<_> = evaluation
        .criteria
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            KEYWORD_OVERLAP,
            SEMANTIC_COHERENCE,
            LENGTH_ADEQUACY,
            SOURCE_DIVERSITY,
            LEG_AGREEMENT,
            BEST_DOCUMENT
        ]
    );
    // No leg ranks on these documents: agreement is left out.
    let weights: Vec<_> = evaluation.criteria.iter().map(|c| c.weight).collect();
    assert_eq!(weights, [0.30, 0.40, 0.15, 0.15, 0.0, 0.5]);
    assert!(evaluation.reasoning.contains("Verdict"));
    assert!(evaluation.reasoning.contains("weakest length_adequacy"));
}

#[test]
fn score_is_the_normalised_weighted_mean() {
    let config = HeuristicConfig {
        keyword_overlap_weight: 3.0,
        semantic_coherence_weight: 4.0,
        length_adequacy_weight: 1.5,
        source_diversity_weight: 1.5,
        best_document_weight: 5.0,
        ..HeuristicConfig::default()
    };
    let documents = [doc("a", "python async", 0.45), doc("b", "python", 0.45)];
    let scaled = HeuristicEvaluator::new(config)
        .unwrap()
        .evaluate("python async", &documents);
    let plain = evaluator().evaluate("python async", &documents);
    assert!((scaled.score - plain.score).abs() < 1e-5);
    assert_eq!(scaled.verdict, plain.verdict);
}

#[test]
fn few_keywords_lower_the_keyword_weight() {
    let documents = [doc("a", "rust", 0.6)];
    let one = evaluator().evaluate("rust", &documents);
    assert!((one.criteria[0].weight - 0.15).abs() < 1e-6);
    assert!(one.issues.iter().any(|i| i.contains("min_keywords")));

    let none = evaluator().evaluate("how is it?", &documents);
    assert_eq!(none.criteria[0].weight, 0.0);
    // Without keywords the document score rests on similarity alone.
    assert!((none.document_scores[0].unwrap() - ramp(0.6)).abs() < 1e-6);
}

#[test]
fn document_scores_follow_each_documents_evidence() {
    let documents = [
        doc("a", "vitamin D and the immune system", 0.7),
        doc("b", "rocket launch schedule", 0.1),
    ];
    let evaluation = evaluator().evaluate("vitamins immune", &documents);
    let scores: Vec<f32> = evaluation
        .document_scores
        .iter()
        .map(|s| s.unwrap())
        .collect();
    assert!((scores[0] - 1.0).abs() < 1e-6);
    assert_eq!(scores[1], 0.0);
}

#[test]
fn thresholds_come_from_the_config() {
    let documents = [doc("a", "python async", 0.45)];
    let default = evaluator().evaluate("python async", &documents);
    let lenient = HeuristicEvaluator::new(HeuristicConfig {
        correct_threshold: default.score - 0.01,
        ambiguous_threshold: 0.0,
        ..HeuristicConfig::default()
    })
    .unwrap()
    .evaluate("python async", &documents);
    assert_eq!(lenient.verdict, Verdict::Correct);
    let strict = HeuristicEvaluator::new(HeuristicConfig {
        correct_threshold: 1.0,
        ambiguous_threshold: 1.0,
        ..HeuristicConfig::default()
    })
    .unwrap()
    .evaluate("python async", &documents);
    assert_eq!(strict.verdict, Verdict::Incorrect);
}

#[test]
fn non_finite_similarities_are_clamped_and_reported() {
    let documents = [
        doc("a", "x", f32::NAN),
        doc("b", "x", f32::INFINITY),
        doc("c", "x", -0.5),
    ];
    let evaluation = evaluator().evaluate("x y z", &documents);
    let similarity_issues = evaluation
        .issues
        .iter()
        .filter(|i| i.contains("similarity"))
        .count();
    assert_eq!(similarity_issues, 3, "{:?}", evaluation.issues);
    assert!(evaluation.score.is_finite());
}

#[test]
fn validation_names_the_field() {
    let invalid = |config: HeuristicConfig| match config.validate() {
        Err(EvaluationError::InvalidConfig { field, .. }) => field,
        other => panic!("expected invalid config, got {other:?}"),
    };
    assert!(HeuristicConfig::default().validate().is_ok());
    assert_eq!(
        invalid(HeuristicConfig {
            semantic_coherence_weight: f32::NAN,
            ..HeuristicConfig::default()
        }),
        "semantic_coherence_weight"
    );
    assert_eq!(
        invalid(HeuristicConfig {
            length_adequacy_weight: -0.1,
            ..HeuristicConfig::default()
        }),
        "length_adequacy_weight"
    );
    assert_eq!(
        invalid(HeuristicConfig {
            keyword_overlap_weight: 0.0,
            semantic_coherence_weight: 0.0,
            length_adequacy_weight: 0.0,
            source_diversity_weight: 0.0,
            leg_agreement_weight: 0.0,
            best_document_weight: 0.0,
            ..HeuristicConfig::default()
        }),
        "weights"
    );
    assert_eq!(
        invalid(HeuristicConfig {
            keyword_overlap_weight: f32::MAX,
            semantic_coherence_weight: f32::MAX,
            ..HeuristicConfig::default()
        }),
        "weights"
    );
    assert_eq!(
        invalid(HeuristicConfig {
            correct_threshold: 1.5,
            ..HeuristicConfig::default()
        }),
        "correct_threshold"
    );
    assert_eq!(
        invalid(HeuristicConfig {
            ambiguous_threshold: 0.8,
            ..HeuristicConfig::default()
        }),
        "ambiguous_threshold"
    );
    assert!(HeuristicEvaluator::new(HeuristicConfig {
        correct_threshold: f32::NAN,
        ..HeuristicConfig::default()
    })
    .is_err());
}

#[test]
fn config_deserialises_with_defaults_and_rejects_unknown_fields() {
    let config: HeuristicConfig = serde_json::from_str(r#"{"correct_threshold": 0.8}"#).unwrap();
    assert_eq!(config.correct_threshold, 0.8);
    assert_eq!(config.min_tokens_per_chunk, 100);
    assert!(serde_json::from_str::<HeuristicConfig>(r#"{"nope": 1}"#).is_err());
}

fn any_document() -> impl Strategy<Value = EvalDocument> {
    (
        "[a-c]{0,2}",
        ".{0,60}",
        prop_oneof![
            prop::num::f32::ANY,
            Just(f32::NAN),
            Just(f32::INFINITY),
            Just(f32::NEG_INFINITY),
            0.0f32..=1.0
        ],
    )
        .prop_map(|(source, text, similarity)| EvalDocument::new("", source, text, similarity))
}

proptest! {
    #[test]
    fn evaluate_never_panics_and_stays_in_unit_range(
        query in ".{0,40}",
        documents in prop::collection::vec(any_document(), 0..8),
        min_keywords in 0usize..4,
        min_tokens in 0usize..200,
    ) {
        let evaluator = HeuristicEvaluator::new(HeuristicConfig {
            min_keywords,
            min_tokens_per_chunk: min_tokens,
            ..HeuristicConfig::default()
        }).unwrap();
        let evaluation = evaluator.evaluate(&query, &documents);
        prop_assert!((0.0..=1.0).contains(&evaluation.score));
        prop_assert_eq!(evaluation.document_scores.len(), documents.len());
        for score in &evaluation.document_scores {
            let score = score.unwrap();
            prop_assert!((0.0..=1.0).contains(&score));
        }
        for criterion in &evaluation.criteria {
            prop_assert!((0.0..=1.0).contains(&criterion.score));
            prop_assert!(criterion.weight.is_finite() && criterion.weight >= 0.0);
        }
        if documents.is_empty() {
            prop_assert_eq!(evaluation.verdict, Verdict::Incorrect);
        }
    }

    #[test]
    fn verdict_is_monotone_in_the_score(score in 0.0f32..=1.0) {
        let verdict = evaluator().verdict(score);
        let expected = if score > 0.75 {
            Verdict::Correct
        } else if score > 0.5 {
            Verdict::Ambiguous
        } else {
            Verdict::Incorrect
        };
        prop_assert_eq!(verdict, expected);
    }
}

/// A document both legs returned, at these ranks (`None`: that leg did not return it).
fn ranked(id: &str, keyword: Option<usize>, vector: Option<usize>) -> EvalDocument {
    let mut d = doc(id, "python async", 0.5);
    let hit = |rank| crag_core::LegHit { rank, score: 1.0 };
    d.retrieval.keyword = keyword.map(hit);
    d.retrieval.vector = vector.map(hit);
    d
}

fn agree(documents: &[EvalDocument], p: f32) -> f32 {
    leg_agreement(documents, agreement_depth(documents), p)
}

#[test]
fn leg_agreement_is_the_rank_biased_overlap_of_the_legs() {
    let same: Vec<_> = (1..=4)
        .map(|r| ranked(&format!("d{r}"), Some(r), Some(r)))
        .collect();
    assert!((agree(&same, 0.9) - 1.0).abs() < 1e-6);
    let apart = [
        ranked("a", Some(1), None),
        ranked("b", None, Some(1)),
        ranked("c", Some(2), Some(40)),
    ];
    assert_eq!(agree(&apart, 0.9), 0.0);
    // Both legs have `a` at depth 2 and `b` at depth 3 of 3:
    // (1 - p) / (1 - p^3) * (0 + p * 1/2 + p^2 * 2/3), p = 0.5.
    let partly = [
        ranked("a", Some(1), Some(2)),
        ranked("b", Some(3), Some(1)),
        ranked("c", Some(2), Some(9)),
    ];
    let expected = 0.5 / (1.0 - 0.125) * (0.5 * 0.5 + 0.25 * 2.0 / 3.0);
    assert!((agree(&partly, 0.5) - expected).abs() < 1e-6);
    // The vector leg ranks two of the three: agreement is read down to depth 2,
    // (1 - p) / (1 - p^2) * (0 + p * 1/2).
    let short = [
        ranked("a", Some(1), Some(2)),
        ranked("b", Some(3), Some(1)),
        ranked("c", Some(2), None),
    ];
    let expected = 0.5 / (1.0 - 0.25) * (0.5 * 0.5);
    assert!((agree(&short, 0.5) - expected).abs() < 1e-6);
    // A small corpus: the keyword leg matched one chunk, the vector leg's first.
    let small = [
        ranked("a", Some(1), Some(1)),
        ranked("b", None, Some(2)),
        ranked("c", None, Some(3)),
    ];
    assert!((agree(&small, 0.95) - 1.0).abs() < 1e-6);
}

#[test]
fn leg_agreement_counts_with_its_weight_only_when_ranks_are_known() {
    let config = HeuristicConfig {
        leg_agreement_weight: 1.0,
        ..HeuristicConfig::default()
    };
    let evaluator = HeuristicEvaluator::new(config).unwrap();
    let agreed: Vec<_> = (1..=3)
        .map(|r| ranked(&format!("d{r}"), Some(r), Some(r)))
        .collect();
    let apart: Vec<_> = (1..=3)
        .map(|r| ranked(&format!("d{r}"), Some(r), Some(r + 20)))
        .collect();
    let high = evaluator.evaluate("python async", &agreed);
    let low = evaluator.evaluate("python async", &apart);
    assert!((criterion_score(&high, LEG_AGREEMENT) - 1.0).abs() < 1e-6);
    assert_eq!(criterion_score(&low, LEG_AGREEMENT), 0.0);
    assert!(high.score > low.score);
    let web = evaluator.evaluate("python async", &[doc("w", "python async", 0.5)]);
    assert_eq!(web.criteria[4].weight, 0.0);
    // The keyword leg ranked none of them (failed, or matched nothing): not measurable.
    let vector_only: Vec<_> = (1..=3)
        .map(|r| ranked(&format!("d{r}"), None, Some(r)))
        .collect();
    let one_leg = evaluator.evaluate("python async", &vector_only);
    assert_eq!(one_leg.criteria[4].weight, 0.0);
    for p in [0.0, 1.0, f32::NAN] {
        let bad = HeuristicConfig {
            agreement_persistence: p,
            ..HeuristicConfig::default()
        };
        assert!(HeuristicEvaluator::new(bad).is_err(), "{p}");
    }
}

#[test]
fn best_document_is_the_highest_document_score() {
    // One document that answers among four that do not: the best document's criterion is that
    // document's own score, and it lifts the aggregate above a list of five misses.
    let miss = |i: usize| doc(&format!("m{i}"), "gardening tools for spring", 0.25);
    let answer = doc("a", "rust async runtimes schedule futures", 0.8);
    let with_answer: Vec<_> = (0..4).map(miss).chain([answer]).collect();
    let misses: Vec<_> = (0..5).map(miss).collect();
    let judged = evaluator().evaluate("rust async runtimes", &with_answer);
    let best = judged
        .document_scores
        .iter()
        .flatten()
        .copied()
        .fold(0.0, f32::max);
    assert!((criterion_score(&judged, BEST_DOCUMENT) - best).abs() < 1e-6);
    assert!((best - judged.document_scores[4].unwrap()).abs() < 1e-6);
    let without = HeuristicEvaluator::new(HeuristicConfig {
        best_document_weight: 0.0,
        ..HeuristicConfig::default()
    })
    .unwrap()
    .evaluate("rust async runtimes", &with_answer);
    assert!(judged.score > without.score, "{judged:?}\n{without:?}");
    let none = evaluator().evaluate("rust async runtimes", &misses);
    assert!(criterion_score(&none, BEST_DOCUMENT) < 0.2);
    assert!(judged.score > none.score);
}
