//! Reciprocal-rank fusion of ranked lists (merging original and expanded retrievals).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::Hash;

/// crag's reciprocal-rank-fusion constant, for the hybrid search's legs and for merging
/// retrievals (60, Cormack et al. 2009).
pub const RRF_K: f32 = 60.0;

/// The reciprocal-rank-fusion contribution of an item at 1-based `rank` in a list of weight
/// `weight`: `weight / (k + rank)`. Every RRF in crag adds these.
pub fn rrf_term(weight: f32, k: f32, rank: usize) -> f32 {
    weight / (k + rank as f32)
}

/// One item of a fused ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<T> {
    /// The item as it first appeared (lowest list index, then best rank).
    pub item: T,
    /// Fused score: the sum over lists of `1 / (k + rank)`.
    pub score: f32,
    /// Best 1-based rank over all lists.
    pub best_rank: usize,
    /// Number of lists the item appears in.
    pub lists: usize,
}

/// Fuses several ranked lists (best first) of items identified by `key` with reciprocal rank
/// fusion: `score(item) = sum over lists of 1 / (k + rank)`, rank 1-based.
///
/// Items in several lists appear once; the first occurrence's value is kept (so pass the
/// preferred list first, the original retrieval before an expanded one).
/// A repeat of a key within one list is ignored, only its best rank there counts. The output
/// is sorted by fused score, descending; ties keep the order of first appearance (list index,
/// then rank), so the result is deterministic. A negative or non-finite `k` counts as 0.
pub fn fuse_ranked<T: Clone, K: Eq + Hash>(
    lists: &[Vec<T>],
    key: impl Fn(&T) -> K,
    k: f32,
) -> Vec<Fused<T>> {
    fuse_weighted(lists, &vec![1.0; lists.len()], key, k)
}

/// Weighted reciprocal rank fusion: like [`fuse_ranked`], with list `i` contributing
/// `weights[i] / (k + rank)`. Lists without a weight, or with a negative or non-finite one,
/// weigh 0 (their items still appear, after every weighted item, in order of appearance).
pub fn fuse_weighted<T: Clone, K: Eq + Hash>(
    lists: &[Vec<T>],
    weights: &[f32],
    key: impl Fn(&T) -> K,
    k: f32,
) -> Vec<Fused<T>> {
    let k = if k.is_finite() && k > 0.0 { k } else { 0.0 };
    let mut out: Vec<Fused<T>> = Vec::new();
    let mut index: HashMap<K, (usize, usize)> = HashMap::new();
    for (list_no, list) in lists.iter().enumerate() {
        for (i, item) in list.iter().enumerate() {
            let rank = i + 1;
            let weight = weights
                .get(list_no)
                .copied()
                .filter(|w| w.is_finite() && *w > 0.0)
                .unwrap_or(0.0);
            let contribution = rrf_term(weight, k, rank);
            match index.entry(key(item)) {
                Entry::Occupied(mut seen) => {
                    let (at, last_list) = seen.get_mut();
                    if *last_list == list_no {
                        continue;
                    }
                    *last_list = list_no;
                    let fused = &mut out[*at];
                    fused.score += contribution;
                    fused.best_rank = fused.best_rank.min(rank);
                    fused.lists += 1;
                }
                Entry::Vacant(slot) => {
                    slot.insert((out.len(), list_no));
                    out.push(Fused {
                        item: item.clone(),
                        score: contribution,
                        best_rank: rank,
                        lists: 1,
                    });
                }
            }
        }
    }
    // Stable sort: ties keep the order of first appearance.
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn a_lighter_list_never_outranks_the_heavier_one_at_the_same_rank() {
        let original = vec![(1u8, 0u8), (2, 0), (3, 0)];
        let expanded = vec![(9u8, 0u8), (3, 0), (8, 0)];
        let fused = fuse_weighted(&[original, expanded], &[1.0, 0.5], |x| x.0, 60.0);
        let order = ids(&fused);
        assert_eq!(order[0], 3, "in both lists");
        assert!(order.iter().position(|&i| i == 1) < order.iter().position(|&i| i == 9));
        assert_eq!(order.len(), 5, "de-duplicated");
    }

    fn ids(fused: &[Fused<(u8, u8)>]) -> Vec<u8> {
        fused.iter().map(|f| f.item.0).collect()
    }

    #[test]
    fn items_in_both_lists_rise_and_keep_the_first_value() {
        let original = vec![(1, 0), (2, 0), (3, 0)];
        let expanded = vec![(3, 1), (4, 1), (1, 1)];
        let fused = fuse_ranked(&[original, expanded], |x| x.0, 60.0);
        assert_eq!(ids(&fused), [1, 3, 2, 4]);
        assert_eq!(fused[0].item, (1, 0));
        assert_eq!(fused[1].item, (3, 0), "first occurrence kept");
        assert_eq!((fused[1].best_rank, fused[1].lists), (1, 2));
        assert!((fused[0].score - (1.0 / 61.0 + 1.0 / 63.0)).abs() < 1e-6);
        assert_eq!((fused[3].best_rank, fused[3].lists), (2, 1));
    }

    #[test]
    fn ties_follow_first_appearance() {
        let fused = fuse_ranked(&[vec![(1, 0), (2, 0)], vec![(3, 1), (4, 1)]], |x| x.0, 60.0);
        assert_eq!(ids(&fused), [1, 3, 2, 4]);
    }

    #[test]
    fn repeats_within_one_list_count_once() {
        let fused = fuse_ranked(&[vec![(1, 0), (1, 9), (2, 0)]], |x| x.0, 0.0);
        assert_eq!(ids(&fused), [1, 2]);
        assert_eq!((fused[0].score, fused[0].lists), (1.0, 1));
        assert_eq!(fused[1].score, 1.0 / 3.0);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(fuse_ranked::<u8, u8>(&[], |x| *x, 60.0).is_empty());
        assert!(fuse_ranked::<u8, u8>(&[vec![], vec![]], |x| *x, 60.0).is_empty());
        for k in [f32::NAN, -5.0, f32::INFINITY] {
            let fused = fuse_ranked(&[vec![1u8, 2]], |x| *x, k);
            assert_eq!(fused[0].score, 1.0, "k = {k}");
        }
    }

    fn lists() -> impl Strategy<Value = Vec<Vec<(u8, u8)>>> {
        prop::collection::vec(prop::collection::vec((0u8..24, any::<u8>()), 0..16), 0..5)
    }

    proptest! {
        #[test]
        fn fused_is_the_deduplicated_union_sorted_by_score(lists in lists(), k in 0.0f32..100.0) {
            let fused = fuse_ranked(&lists, |x| x.0, k);
            let keys: Vec<u8> = fused.iter().map(|f| f.item.0).collect();
            let unique: HashSet<u8> = keys.iter().copied().collect();
            prop_assert_eq!(unique.len(), keys.len(), "duplicate keys");
            let union: HashSet<u8> = lists.iter().flatten().map(|x| x.0).collect();
            prop_assert_eq!(&unique, &union);
            prop_assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
            for f in &fused {
                prop_assert!(f.lists >= 1 && f.lists <= lists.len());
                prop_assert!(f.best_rank >= 1);
            }
            let again = fuse_ranked(&lists, |x| x.0, k);
            prop_assert_eq!(fused, again);
        }
    }
}
