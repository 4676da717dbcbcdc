//! Information-retrieval metrics for offline evaluation against graded relevance judgements
//! (nDCG, recall, MRR as in pytrec_eval / BEIR), plus percentiles for reports. The AUROC of
//! an evaluator's scores is `crag_judge::auroc` (calibration fits against it).
//!
//! The ranking metrics read `ranked` best first and deduplicate it, keeping each document's
//! first position, before cutting it at `k`: a run is a set of documents, so a repeat neither
//! earns gain twice nor takes a place in the top `k`. A `k` of 0 scores 0.

use std::collections::{HashMap, HashSet};

/// Graded relevance judgements of one query: document id -> grade (0 = not relevant).
pub type Judgements = HashMap<String, u32>;

/// Returns the first `k` distinct documents of `ranked`, in order.
fn distinct_top_k<'a>(ranked: &[&'a str], k: usize) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ranked
        .iter()
        .copied()
        .filter(|id| seen.insert(*id))
        .take(k)
        .collect()
}

/// Returns the grade of `id`, 0 when it is not judged.
fn grade(judgements: &Judgements, id: &str) -> u32 {
    judgements.get(id).copied().unwrap_or(0)
}

/// Returns the discounted cumulative gain of `grades` in rank order (linear gain).
fn dcg(grades: impl Iterator<Item = u32>) -> f64 {
    grades
        .enumerate()
        .map(|(i, g)| f64::from(g) / (i as f64 + 2.0).log2())
        .sum()
}

/// Returns nDCG@k with linear gain (gain = grade, as pytrec_eval / BEIR):
/// `DCG = sum_{i<k} grade_i / log2(i + 2)`, divided by the DCG of the judgements sorted by grade.
///
/// Documents repeated in `ranked` count once (first position); unjudged documents have grade 0.
/// Returns 0.0 when no judged document has grade > 0 or `k` is 0; the result lies in [0, 1].
pub fn ndcg_at_k(ranked: &[&str], judgements: &Judgements, k: usize) -> f64 {
    let mut ideal: Vec<u32> = judgements.values().copied().filter(|&g| g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg = dcg(ideal.into_iter().take(k));
    if idcg <= 0.0 {
        return 0.0;
    }
    let actual = dcg(distinct_top_k(ranked, k)
        .into_iter()
        .map(|id| grade(judgements, id)));
    (actual / idcg).clamp(0.0, 1.0)
}

/// Returns the share of the relevant documents (grade > 0) found in the top `k` distinct
/// documents of `ranked`; 0.0 when there are none.
pub fn recall_at_k(ranked: &[&str], judgements: &Judgements, k: usize) -> f64 {
    let relevant = judgements.values().filter(|&&g| g > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = distinct_top_k(ranked, k)
        .into_iter()
        .filter(|id| grade(judgements, id) > 0)
        .count();
    found as f64 / relevant as f64
}

/// Returns the reciprocal rank (1-based, over distinct documents) of the first relevant document
/// (grade > 0) within the top `k`, else 0.
pub fn mrr_at_k(ranked: &[&str], judgements: &Judgements, k: usize) -> f64 {
    distinct_top_k(ranked, k)
        .into_iter()
        .position(|id| grade(judgements, id) > 0)
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0))
}

/// Returns the nearest-rank percentile of unsorted `values`: the smallest value such that at
/// least a share `p` of the values are at most it, i.e. the `ceil(p * n)`-th smallest (at least
/// the first). `p` is clamped into [0, 1], so `p = 0` gives the minimum and `p = 1` the maximum.
///
/// Returns `None` when `values` is empty or `p` is NaN. Values are ordered by
/// [`f64::total_cmp`], so NaN never panics (a positive NaN sorts above infinity).
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() || p.is_nan() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len();
    // The small slack keeps `0.07 * 100 = 7.000000000000001` at rank 7, not 8.
    let rank = (p.clamp(0.0, 1.0) * n as f64 - 1e-9).ceil() as usize;
    sorted.get(rank.clamp(1, n) - 1).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn judgements(pairs: &[(&str, u32)]) -> Judgements {
        pairs.iter().map(|&(id, g)| (id.to_owned(), g)).collect()
    }

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() < 1e-9
    }

    #[test]
    fn ndcg_of_a_known_ranking() {
        let judged = judgements(&[("a", 3), ("b", 2), ("c", 1), ("d", 0)]);
        // DCG@3 of [b, x, a] = 2 / log2(2) + 0 / log2(3) + 3 / log2(4) = 2 + 0 + 1.5 = 3.5;
        // IDCG@3 = 3 / 1 + 2 / log2(3) + 1 / 2 = 4.761859507142915.
        let ndcg = ndcg_at_k(&["b", "x", "a"], &judged, 3);
        assert!(close(ndcg, 0.7350069851388743), "{ndcg}");
        // At k = 1 only b counts: 2 / 3.
        assert!(close(ndcg_at_k(&["b", "x", "a"], &judged, 1), 2.0 / 3.0));
        // The ideal order scores 1.
        assert!(close(ndcg_at_k(&["a", "b", "c", "d"], &judged, 10), 1.0));
    }

    #[test]
    fn ndcg_at_k_cuts_the_ideal_ranking_too() {
        let judged = judgements(&[("a", 1), ("b", 1), ("c", 1)]);
        // Only one slot: one relevant document in it is perfect.
        assert!(close(ndcg_at_k(&["c", "x"], &judged, 1), 1.0));
        // k larger than the list: DCG = 1, IDCG = 1 + 1 / log2(3) + 1 / 2.
        let expected = 1.0 / (1.0 + 1.0 / 3f64.log2() + 0.5);
        assert!(close(ndcg_at_k(&["c"], &judged, 50), expected));
    }

    #[test]
    fn ndcg_edge_cases() {
        let judged = judgements(&[("a", 2), ("b", 1)]);
        assert_eq!(ndcg_at_k(&[], &judged, 10), 0.0);
        assert_eq!(ndcg_at_k(&["a", "b"], &judged, 0), 0.0);
        assert_eq!(ndcg_at_k(&["x", "y"], &judged, 10), 0.0);
        let none_relevant = judgements(&[("a", 0), ("b", 0)]);
        assert_eq!(ndcg_at_k(&["a", "b"], &none_relevant, 10), 0.0);
        assert_eq!(ndcg_at_k(&["a"], &Judgements::new(), 10), 0.0);
    }

    #[test]
    fn ndcg_counts_a_repeated_document_once() {
        let judged = judgements(&[("a", 2), ("b", 1)]);
        // [a, a, b] is read as [a, b]: the ideal ranking, not a double gain for a.
        assert!(close(ndcg_at_k(&["a", "a", "b"], &judged, 2), 1.0));
        assert!(close(
            ndcg_at_k(&["b", "b", "b", "a"], &judged, 10),
            ndcg_at_k(&["b", "a"], &judged, 10)
        ));
    }

    #[test]
    fn recall_counts_relevant_documents_in_the_top_k() {
        let judged = judgements(&[("a", 3), ("b", 1), ("c", 1), ("d", 0)]);
        assert!(close(
            recall_at_k(&["a", "d", "x", "b"], &judged, 3),
            1.0 / 3.0
        ));
        assert!(close(
            recall_at_k(&["a", "d", "x", "b"], &judged, 4),
            2.0 / 3.0
        ));
        assert!(close(recall_at_k(&["c", "b", "a"], &judged, 100), 1.0));
        // A repeat neither counts twice nor takes a slot.
        assert!(close(recall_at_k(&["a", "a", "b"], &judged, 2), 2.0 / 3.0));
        assert_eq!(recall_at_k(&[], &judged, 10), 0.0);
        assert_eq!(recall_at_k(&["a"], &judged, 0), 0.0);
        assert_eq!(recall_at_k(&["a"], &judgements(&[("a", 0)]), 10), 0.0);
    }

    #[test]
    fn mrr_is_the_reciprocal_rank_of_the_first_relevant_document() {
        let judged = judgements(&[("a", 1), ("b", 0), ("c", 2)]);
        assert_eq!(mrr_at_k(&["a", "c"], &judged, 10), 1.0);
        assert!(close(
            mrr_at_k(&["x", "b", "c", "a"], &judged, 10),
            1.0 / 3.0
        ));
        assert_eq!(mrr_at_k(&["x", "b", "c"], &judged, 2), 0.0);
        assert!(close(mrr_at_k(&["x", "x", "c"], &judged, 2), 0.5));
        assert_eq!(mrr_at_k(&[], &judged, 10), 0.0);
        assert_eq!(mrr_at_k(&["a"], &judged, 0), 0.0);
    }

    #[test]
    fn percentile_is_nearest_rank() {
        let values: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(percentile(&values, 0.0), Some(1.0));
        assert_eq!(percentile(&values, 0.1), Some(1.0));
        assert_eq!(percentile(&values, 0.11), Some(2.0));
        assert_eq!(percentile(&values, 0.5), Some(5.0));
        assert_eq!(percentile(&values, 0.95), Some(10.0));
        assert_eq!(percentile(&values, 1.0), Some(10.0));
        assert_eq!(percentile(&values, 7.0), Some(10.0));
        assert_eq!(percentile(&values, -1.0), Some(1.0));
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 0.07), Some(7.0));
        assert_eq!(percentile(&hundred, 0.99), Some(99.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&values, f64::NAN), None);
        assert_eq!(percentile(&[3.0], 0.5), Some(3.0));
    }

    #[test]
    fn percentile_orders_nan_totally() {
        let values = [f64::NAN, 1.0, 2.0];
        assert_eq!(percentile(&values, 0.0), Some(1.0));
        assert_eq!(percentile(&values, 0.5), Some(2.0));
        assert!(percentile(&values, 1.0).is_some_and(f64::is_nan));
    }

    const IDS: [&str; 8] = ["d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7"];

    fn any_judgements() -> impl Strategy<Value = Judgements> {
        prop::collection::hash_map(prop::sample::select(&IDS[..]), 0u32..4, 0..8).prop_map(|m| {
            m.into_iter()
                .map(|(id, grade)| (id.to_owned(), grade))
                .collect()
        })
    }

    fn any_ranking() -> impl Strategy<Value = Vec<&'static str>> {
        prop::collection::vec(prop::sample::select(&IDS[..]), 0..16)
    }

    proptest! {
        #[test]
        fn ranking_metrics_stay_in_unit_range(
            ranked in any_ranking(),
            judged in any_judgements(),
            k in 0usize..20,
        ) {
            for metric in [ndcg_at_k, recall_at_k, mrr_at_k] {
                let value = metric(&ranked, &judged, k);
                prop_assert!((0.0..=1.0).contains(&value), "{value}");
            }
        }

        #[test]
        fn the_ideal_ranking_has_ndcg_one(judged in any_judgements(), k in 1usize..20) {
            let mut ideal: Vec<(&str, u32)> =
                judged.iter().map(|(id, &g)| (id.as_str(), g)).collect();
            ideal.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let ranked: Vec<&str> = ideal.iter().map(|&(id, _)| id).collect();
            let ndcg = ndcg_at_k(&ranked, &judged, k);
            if judged.values().any(|&g| g > 0) {
                prop_assert!((ndcg - 1.0).abs() < 1e-12, "{ndcg}");
                prop_assert_eq!(recall_at_k(&ranked, &judged, ranked.len()), 1.0);
                prop_assert_eq!(mrr_at_k(&ranked, &judged, k), 1.0);
            } else {
                prop_assert_eq!(ndcg, 0.0);
            }
        }

        #[test]
        fn percentile_returns_an_input_value_monotone_in_p(
            values in prop::collection::vec(prop::num::f64::ANY, 1..30),
            p in 0.0f64..=1.0,
            q in 0.0f64..=1.0,
        ) {
            let (lo, hi) = if p <= q { (p, q) } else { (q, p) };
            let a = percentile(&values, lo).unwrap();
            let b = percentile(&values, hi).unwrap();
            prop_assert!(values.iter().any(|v| v.to_bits() == a.to_bits()));
            prop_assert!(a.total_cmp(&b).is_le());
        }
    }
}
