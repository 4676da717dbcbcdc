use super::*;
use crag_core::{LegHit, RetrievalSignals};
use proptest::prelude::*;

/// A synthetic query: answerable ones have a strong first document in both legs.
fn sample(i: usize, answerable: bool) -> LabelledQuery {
    let strength = if answerable { 0.3 } else { 0.0 } + (i % 7) as f32 * 0.02;
    let documents = (0..5)
        .map(|rank| {
            let lead = rank == 0;
            let similarity = 0.4 + if lead { strength } else { 0.0 } - rank as f32 * 0.01;
            let text = if lead && answerable {
                "vitamin d lowers infection in adults"
            } else {
                "unrelated text about rockets"
            };
            EvalDocument::new(
                format!("d{i}-{rank}#0"),
                format!("d{i}-{rank}"),
                text,
                similarity,
            )
            .with_retrieval(RetrievalSignals {
                keyword: Some(LegHit {
                    rank: rank + 1,
                    score: 5.0 + if lead { 20.0 * strength } else { 0.0 },
                }),
                vector: Some(LegHit {
                    rank: rank + 1,
                    score: (1.0 + similarity) / 2.0,
                }),
                fused_score: Some(2.0 / (61.0 + rank as f32)),
                normalized_score: Some(61.0 / (61.0 + rank as f32)),
                rerank_probability: None,
            })
        })
        .collect();
    let relevant = (0..5).map(|rank| answerable && rank == 0).collect();
    LabelledQuery {
        id: i.to_string(),
        query: "does vitamin d lower infection".into(),
        documents,
        relevant,
    }
}

fn samples() -> Vec<LabelledQuery> {
    (0..60).map(|i| sample(i, i % 2 == 0)).collect()
}

#[test]
fn calibration_separates_the_synthetic_classes() {
    let calibration = calibrate(&samples(), &CalibrationOptions::default()).unwrap();
    assert_eq!(calibration.queries, 60);
    assert_eq!(calibration.answerable, 30);
    assert_eq!(calibration.relevant_documents, 30);
    assert!(
        calibration.train_auroc > 0.99,
        "{}",
        calibration.train_auroc
    );
    assert!(calibration.train_document_auroc > 0.99);
    assert!(calibration.thresholds.correct_target_reached);
    let evaluator = CalibratedEvaluator::new(calibration).unwrap();
    let good = evaluator.evaluate(
        "does vitamin d lower infection",
        &sample(1000, true).documents,
    );
    let bad = evaluator.evaluate(
        "does vitamin d lower infection",
        &sample(1001, false).documents,
    );
    assert_eq!(good.verdict, Verdict::Correct, "{good:?}");
    assert_eq!(bad.verdict, Verdict::Incorrect, "{bad:?}");
    assert!(good.score > bad.score);
    assert_eq!(good.document_scores.len(), 5);
    let lead = good.document_scores[0].unwrap();
    assert!(good.document_scores[1..].iter().all(|s| s.unwrap() < lead));
    assert_eq!(good.criteria.len(), QUERY_FEATURES.len());
    assert!(good.reasoning.contains("Most for"), "{}", good.reasoning);
    assert!(good.issues.iter().all(|i| !i.contains("training mean")));
}

#[test]
fn calibration_validates_feature_names_thresholds_and_version() {
    let calibration = calibrate(&samples(), &CalibrationOptions::default()).unwrap();
    assert!(calibration.validate().is_ok());
    let mut renamed = calibration.clone();
    renamed.query_model.features[0].name = "old_feature".into();
    let message = CalibratedEvaluator::new(renamed).unwrap_err().to_string();
    assert!(message.contains("query_model"), "{message}");
    assert!(message.contains("old_feature"), "{message}");
    let mut shorter = calibration.clone();
    shorter.document_model.features.pop();
    assert!(CalibratedEvaluator::new(shorter).is_err());
    let mut crossed = calibration.clone();
    crossed.thresholds.incorrect = crossed.thresholds.correct + 0.1;
    assert!(crossed.validate().is_err());
    let mut future = calibration;
    future.version = 2;
    assert!(future.validate().is_err());
}

#[test]
fn documents_without_signals_are_judged_with_a_warning() {
    let calibration = calibrate(&samples(), &CalibrationOptions::default()).unwrap();
    let evaluator = CalibratedEvaluator::new(calibration).unwrap();
    let plain = [EvalDocument::new(
        "a",
        "a",
        "vitamin d lowers infection",
        0.7,
    )];
    let evaluation = evaluator.evaluate("does vitamin d lower infection", &plain);
    assert!((0.0..=1.0).contains(&evaluation.score));
    assert!(
        evaluation
            .issues
            .iter()
            .any(|i| i.contains("keyword_top_score")),
        "{:?}",
        evaluation.issues
    );
    let empty = evaluator.evaluate("q", &[]);
    assert_eq!(empty.verdict, Verdict::Incorrect);
}

#[test]
fn calibration_needs_both_classes_and_matching_labels() {
    let all_answerable: Vec<_> = (0..10).map(|i| sample(i, true)).collect();
    assert!(calibrate(&all_answerable, &CalibrationOptions::default()).is_err());
    let mut mismatched = samples();
    mismatched[0].relevant.pop();
    assert!(calibrate(&mismatched, &CalibrationOptions::default()).is_err());
    let bad_target = CalibrationOptions {
        target_precision: 1.5,
        ..CalibrationOptions::default()
    };
    assert!(calibrate(&samples(), &bad_target).is_err());
    let bad_recall = CalibrationOptions {
        document_recall: 0.0,
        ..CalibrationOptions::default()
    };
    assert!(calibrate(&samples(), &bad_recall).is_err());
}

#[test]
fn thresholds_of_a_known_ranking() {
    // Scores high to low with labels: 0.9 T, 0.8 T, 0.7 F, 0.6 T, 0.5 F, 0.4 F, 0.3 T, 0.2 F
    let scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2];
    let labels = [true, true, false, true, false, false, true, false];
    let t = choose_thresholds(&scores, &labels, 0.75);
    // Prefix precisions: 1, 1, 2/3, 3/4 -> lowest cut reaching 0.75 is 0.6.
    assert_eq!(t.correct, 0.6);
    assert_eq!(t.correct_precision, 0.75);
    // From the bottom: F (1), F T (1/2), F T F (2/3), F T F F (3/4) -> 0.5 ... then
    // F T F F T (3/5) -> the highest reaching 0.75 is 0.5.
    assert_eq!(t.incorrect, 0.5);
    assert!(t.correct_target_reached && t.incorrect_target_reached);
    assert_eq!(t.verdict(0.6), Verdict::Correct);
    assert_eq!(t.verdict(0.55), Verdict::Ambiguous);
    assert_eq!(t.verdict(0.5), Verdict::Incorrect);
}

#[test]
fn unreachable_targets_fall_back_to_the_best_cut() {
    let scores = [0.9, 0.8, 0.7];
    let labels = [false, true, true];
    let t = choose_thresholds(&scores, &labels, 1.0);
    // Precision from the top: 0, 1/2, 2/3: unreachable; the best is the whole list.
    assert!(!t.correct_target_reached);
    assert_eq!(t.correct, 0.7);
    assert!((t.correct_precision - 2.0 / 3.0).abs() < 1e-12);
    // From the bottom every prefix is answerable: unreachable, best share 1/3 at 0.9,
    // capped at correct.
    assert!(!t.incorrect_target_reached);
    assert_eq!(t.incorrect, 0.7);
    let empty = choose_thresholds(&[], &[], 0.9);
    assert_eq!((empty.correct, empty.incorrect), (1.0, 0.0));
}

#[test]
fn recall_threshold_keeps_the_asked_share_of_positives() {
    let scores = [0.9, 0.8, 0.7, 0.6, 0.5];
    let labels = [true, false, true, true, true];
    assert_eq!(recall_threshold(&scores, &labels, 0.5), 0.7);
    assert_eq!(recall_threshold(&scores, &labels, 0.75), 0.6);
    assert_eq!(recall_threshold(&scores, &labels, 1.0), 0.5);
    assert_eq!(recall_threshold(&scores, &[false; 5], 0.9), 0.0);
    let calibration = calibrate(&samples(), &CalibrationOptions::default()).unwrap();
    assert!((0.0..=1.0).contains(&calibration.document_threshold));
    assert_eq!(calibration.document_recall, 0.9);
}

#[test]
fn ties_are_never_split() {
    let t = choose_thresholds(&[0.5, 0.5, 0.5, 0.1], &[true, false, true, false], 0.6);
    assert_eq!(t.correct, 0.5);
    assert!((t.correct_precision - 2.0 / 3.0).abs() < 1e-12);
}

proptest! {
    #[test]
    fn thresholds_are_ordered_and_monotone_in_the_target(
        pairs in prop::collection::vec((0.0f64..1.0, any::<bool>()), 1..60),
        low in 0.5f64..1.0,
        raise in 0.0f64..0.5,
    ) {
        let (scores, labels): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
        let high = (low + raise).min(1.0);
        let a = choose_thresholds(&scores, &labels, low);
        let b = choose_thresholds(&scores, &labels, high);
        prop_assert!(a.incorrect <= a.correct && b.incorrect <= b.correct);
        prop_assert!(b.correct >= a.correct);
        if a.incorrect < a.correct && b.incorrect < b.correct {
            prop_assert!(b.incorrect <= a.incorrect);
        }
        for t in [a, b] {
            let mut last = Verdict::Incorrect;
            let mut sorted = scores.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            for s in sorted {
                let v = t.verdict(s);
                let rank = |v: Verdict| match v {
                    Verdict::Incorrect => 0,
                    Verdict::Ambiguous => 1,
                    Verdict::Correct => 2,
                };
                prop_assert!(rank(v) >= rank(last));
                last = v;
            }
        }
    }
}
