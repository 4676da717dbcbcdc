use super::*;
use crate::auroc::auroc;
use proptest::prelude::*;

fn column(values: &[f64]) -> Vec<Vec<Option<f64>>> {
    values.iter().map(|&v| vec![Some(v)]).collect()
}

#[test]
fn solve_inverts_a_small_system() {
    let a = vec![vec![2.0, 1.0], vec![1.0, 3.0]];
    let x = solve(a, &[3.0, 5.0]).unwrap();
    assert!((x[0] - 0.8).abs() < 1e-12 && (x[1] - 1.4).abs() < 1e-12);
    assert!(solve(vec![vec![0.0, 0.0], vec![0.0, 0.0]], &[1.0, 1.0]).is_none());
}

#[test]
fn fit_recovers_the_direction_of_the_signal() {
    // Label mostly follows x > 0.5; the fitted weight must be positive and the fit
    // ordered like x.
    let xs: Vec<f64> = (0..200).map(|i| i as f64 / 200.0).collect();
    let labels: Vec<bool> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| (x > 0.5) != (i % 10 == 0))
        .collect();
    let model = fit_logistic(&["x"], &column(&xs), &labels, &FitOptions::default()).unwrap();
    assert!(model.features[0].weight > 1.0, "{model:?}");
    assert!((model.features[0].mean - 0.4975).abs() < 1e-9);
    assert!(model.probability(&[Some(0.9)]) > 0.8);
    assert!(model.probability(&[Some(0.1)]) < 0.2);
    // Absent: the training mean, i.e. bias only.
    assert!((model.logit(&[None]) - model.bias).abs() < 1e-12);
}

#[test]
fn fit_matches_the_unpenalised_optimum_when_l2_is_tiny() {
    // Four points, one feature: the gradient of the likelihood vanishes at the optimum,
    // so predicted probabilities sum to the positives within each... here: overall.
    let xs = [0.0, 1.0, 2.0, 3.0, 0.5, 2.5];
    let labels = [false, false, true, true, true, false];
    let model = fit_logistic(
        &["x"],
        &column(&xs),
        &labels,
        &FitOptions {
            l2: 1e-9,
            ..FitOptions::default()
        },
    )
    .unwrap();
    let total: f64 = xs.iter().map(|&x| model.probability(&[Some(x)])).sum();
    assert!((total - 3.0).abs() < 1e-6, "{total}");
}

#[test]
fn constant_and_absent_features_get_no_weight() {
    let rows: Vec<Vec<Option<f64>>> = (0..20)
        .map(|i| vec![Some(i as f64), Some(7.0), None])
        .collect();
    let labels: Vec<bool> = (0..20).map(|i| i >= 10).collect();
    let model = fit_logistic(
        &["x", "constant", "absent"],
        &rows,
        &labels,
        &FitOptions::default(),
    )
    .unwrap();
    assert_eq!(model.features[1].std, 0.0);
    assert_eq!(model.features[1].weight, 0.0);
    assert_eq!(model.features[2].weight, 0.0);
    assert!(model.features[0].weight > 0.0);
}

#[test]
fn fit_rejects_unusable_samples() {
    let rows = column(&[0.0, 1.0]);
    let options = FitOptions::default();
    assert!(fit_logistic(&["x"], &rows, &[true, true], &options).is_err());
    assert!(fit_logistic(&["x"], &rows, &[true], &options).is_err());
    assert!(fit_logistic(&["x", "y"], &rows, &[true, false], &options).is_err());
    let nan = vec![vec![Some(f64::NAN)], vec![Some(1.0)]];
    assert!(fit_logistic(&["x"], &nan, &[true, false], &options).is_err());
    let no_l2 = FitOptions { l2: 0.0, ..options };
    assert!(fit_logistic(&["x"], &rows, &[true, false], &no_l2).is_err());
}

#[test]
fn check_names_missing_and_unknown_features() {
    let model = LogisticModel {
        bias: 0.0,
        features: vec![FeatureWeight {
            name: "old".into(),
            mean: 0.0,
            std: 1.0,
            weight: 1.0,
        }],
    };
    let message = model
        .check("query model", &["new"])
        .unwrap_err()
        .to_string();
    assert!(message.contains("missing: [new]"), "{message}");
    assert!(message.contains("unknown: [old]"), "{message}");
    assert!(model.check("query model", &["old"]).is_ok());
    let broken = LogisticModel {
        bias: f64::NAN,
        ..model
    };
    assert!(broken.check("query model", &["old"]).is_err());
}

proptest! {
    #[test]
    fn separable_data_is_ranked_perfectly(
        negatives in prop::collection::vec(-5.0f64..0.0, 1..30),
        positives in prop::collection::vec(0.001f64..5.0, 1..30),
        absent_every in 2usize..7,
    ) {
        // Feature 0 separates the classes; feature 1 is constant where present.
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        for (i, &x) in negatives.iter().chain(&positives).enumerate() {
            rows.push(vec![Some(x), (i % absent_every != 0).then_some(2.0)]);
            labels.push(x > 0.0);
        }
        let model = fit_logistic(&["signal", "constant"], &rows, &labels, &FitOptions::default())
            .unwrap();
        let scores: Vec<f64> = rows.iter().map(|r| model.probability(r)).collect();
        prop_assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)));
        prop_assert_eq!(auroc(&scores, &labels), Some(1.0));
    }

    #[test]
    fn fit_is_deterministic(xs in prop::collection::vec(-3.0f64..3.0, 4..40)) {
        let labels: Vec<bool> = xs.iter().enumerate().map(|(i, &x)| x + (i % 3) as f64 > 1.0).collect();
        prop_assume!(labels.iter().any(|&l| l) && labels.iter().any(|&l| !l));
        let a = fit_logistic(&["x"], &column(&xs), &labels, &FitOptions::default()).unwrap();
        let b = fit_logistic(&["x"], &column(&xs), &labels, &FitOptions::default()).unwrap();
        prop_assert_eq!(a, b);
    }
}
