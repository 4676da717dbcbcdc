//! The area under the ROC curve: how well a score separates two classes, as calibration and
//! `crag eval` measure an evaluator.

use std::cmp::Ordering;

/// Returns the area under the ROC curve of `scores` against boolean `labels` (`true` =
/// positive): the Mann-Whitney U statistic over all positive-negative pairs, a tie counted 1/2,
/// divided by the number of pairs. A higher score is taken to mean "more likely positive".
///
/// Returns `None` when either class is empty, the lengths differ or a score is NaN. Infinite
/// scores are accepted and `0.0` ties with `-0.0`.
pub fn auroc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    if scores.len() != labels.len() || scores.iter().any(|s| s.is_nan()) {
        return None;
    }
    let positives = labels.iter().filter(|&&l| l).count() as u128;
    let negatives = labels.len() as u128 - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    // No NaN is left, so `partial_cmp` is total here and ties `0.0` with `-0.0`.
    let by_score = |a: &f64, b: &f64| a.partial_cmp(b).unwrap_or(Ordering::Equal);
    let mut order: Vec<(f64, bool)> = scores.iter().copied().zip(labels.iter().copied()).collect();
    order.sort_unstable_by(|a, b| by_score(&a.0, &b.0));
    // Twice the rank sum of the positives, with tied scores sharing their mean rank, so that
    // all arithmetic stays in integers: the ranks start + 1 ..= end average (start + 1 + end) / 2.
    let mut doubled_rank_sum: u128 = 0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && by_score(&order[end].0, &order[start].0) == Ordering::Equal {
            end += 1;
        }
        let tied_positives = order[start..end].iter().filter(|(_, l)| *l).count() as u128;
        doubled_rank_sum += tied_positives * (start as u128 + 1 + end as u128);
        start = end;
    }
    let doubled_u = doubled_rank_sum - positives * (positives + 1);
    Some(doubled_u as f64 / (2 * positives * negatives) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() < 1e-9
    }

    #[test]
    fn auroc_known_values() {
        let labels = [true, true, false, false];
        assert_eq!(auroc(&[0.9, 0.8, 0.2, 0.1], &labels), Some(1.0));
        assert_eq!(auroc(&[0.1, 0.2, 0.8, 0.9], &labels), Some(0.0));
        assert_eq!(auroc(&[0.5; 4], &labels), Some(0.5));
        // Positives 0.9 and 0.7 against negatives 0.8, 0.6, 0.5: 3 + 2 of 6 pairs.
        let auc = auroc(
            &[0.9, 0.8, 0.7, 0.6, 0.5],
            &[true, false, true, false, false],
        )
        .unwrap();
        assert!(close(auc, 5.0 / 6.0), "{auc}");
        // Positives 0.9 and 0.7 against negatives 0.7 and 0.1: 2 + (0.5 + 1) of 4 pairs.
        let auc = auroc(&[0.9, 0.7, 0.7, 0.1], &[true, true, false, false]).unwrap();
        assert!(close(auc, 0.875), "{auc}");
        // Signed zeros tie; infinities are ordinary scores.
        assert_eq!(auroc(&[0.0, -0.0], &[true, false]), Some(0.5));
        let auc = auroc(&[f64::INFINITY, f64::NEG_INFINITY], &[true, false]);
        assert_eq!(auc, Some(1.0));
    }

    #[test]
    fn auroc_rejects_what_it_cannot_score() {
        assert_eq!(auroc(&[], &[]), None);
        assert_eq!(auroc(&[0.1, 0.2], &[true, true]), None);
        assert_eq!(auroc(&[0.1, 0.2], &[false, false]), None);
        assert_eq!(auroc(&[0.1, 0.2], &[true]), None);
        assert_eq!(auroc(&[0.1, f64::NAN], &[true, false]), None);
    }

    /// Counts positive-negative pairs directly, the definition `auroc` must agree with.
    fn auroc_by_pairs(scores: &[f64], labels: &[bool]) -> f64 {
        let mut wins = 0.0;
        let mut pairs = 0.0;
        for (s, _) in scores.iter().zip(labels).filter(|(_, &l)| l) {
            for (t, _) in scores.iter().zip(labels).filter(|(_, &l)| !l) {
                pairs += 1.0;
                if s > t {
                    wins += 1.0;
                } else if s == t {
                    wins += 0.5;
                }
            }
        }
        wins / pairs
    }

    proptest! {
        #[test]
        fn auroc_is_antisymmetric_and_matches_pair_counting(
            points in prop::collection::vec((-4i32..4, any::<bool>()), 0..40),
        ) {
            // Small integer scores make ties common.
            let scores: Vec<f64> = points.iter().map(|&(s, _)| f64::from(s) / 2.0).collect();
            let labels: Vec<bool> = points.iter().map(|&(_, l)| l).collect();
            let negated: Vec<f64> = scores.iter().map(|s| -s).collect();
            match (auroc(&scores, &labels), auroc(&negated, &labels)) {
                (Some(a), Some(b)) => {
                    prop_assert!((0.0..=1.0).contains(&a));
                    prop_assert!((a + b - 1.0).abs() < 1e-12, "{a} + {b}");
                    prop_assert!((a - auroc_by_pairs(&scores, &labels)).abs() < 1e-12);
                }
                (None, None) => {
                    prop_assert!(labels.iter().all(|&l| l) || labels.iter().all(|&l| !l));
                }
                other => prop_assert!(false, "asymmetric result {other:?}"),
            }
        }
    }
}
