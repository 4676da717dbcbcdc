//! Token-budget packing: results kept in order within a token budget.

/// The token budget of a query's context by default.
pub const DEFAULT_TOKEN_BUDGET: usize = 8000;

/// The token estimate packing falls back on (words times 1.3, [`crag_text::estimate_tokens`]).
/// Callers with a real tokenizer should count with it instead.
pub use crag_text::estimate_tokens;

/// The result of [`pack_to_budget`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed<T> {
    /// Items kept, in input order.
    pub kept: Vec<T>,
    /// Items that did not fit, in input order.
    pub dropped: Vec<T>,
    /// Tokens of the kept items; never more than the budget.
    pub used_tokens: usize,
}

/// Packs items greedily in order: an item is kept while the running token total stays within
/// `budget`; an item that does not fit is dropped and later, smaller items may still fit.
/// Never exceeds the budget; `tokens` is called once per item.
pub fn pack_to_budget<T>(
    items: Vec<T>,
    budget: usize,
    mut tokens: impl FnMut(&T) -> usize,
) -> Packed<T> {
    let mut packed = Packed {
        kept: Vec::new(),
        dropped: Vec::new(),
        used_tokens: 0,
    };
    for item in items {
        match packed.used_tokens.checked_add(tokens(&item)) {
            Some(total) if total <= budget => {
                packed.used_tokens = total;
                packed.kept.push(item);
            }
            _ => packed.dropped.push(item),
        }
    }
    packed
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn skips_what_does_not_fit_and_keeps_packing() {
        let packed = pack_to_budget(vec![5, 4, 3, 2, 10], 10, |&t| t);
        assert_eq!(packed.kept, [5, 4]);
        assert_eq!(packed.dropped, [3, 2, 10]);
        assert_eq!(packed.used_tokens, 9);
        let packed = pack_to_budget(vec![8, 5, 2], 10, |&t| t);
        assert_eq!((packed.kept, packed.used_tokens), (vec![8, 2], 10));
        let packed = pack_to_budget(vec![usize::MAX, 1], usize::MAX, |&t| t);
        assert_eq!(packed.kept, [usize::MAX]);
        assert_eq!(packed.dropped, [1]);
    }

    #[test]
    fn zero_budget_keeps_only_empty_items() {
        let packed = pack_to_budget(vec![0, 1, 0], 0, |&t| t);
        assert_eq!((packed.kept, packed.dropped), (vec![0, 0], vec![1]));
    }

    #[test]
    fn seed_token_estimate() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("one two three"), 3);
        assert_eq!(estimate_tokens("a b c d e f g h i j"), 13);
    }

    proptest! {
        #[test]
        fn never_exceeds_the_budget_and_keeps_order(
            sizes in prop::collection::vec(0usize..50, 0..40),
            budget in 0usize..300,
        ) {
            let items: Vec<(usize, usize)> = sizes.into_iter().enumerate().collect();
            let packed = pack_to_budget(items.clone(), budget, |x| x.1);
            let sum: usize = packed.kept.iter().map(|x| x.1).sum();
            prop_assert_eq!(sum, packed.used_tokens);
            prop_assert!(packed.used_tokens <= budget);
            prop_assert!(packed.kept.windows(2).all(|w| w[0].0 < w[1].0));
            prop_assert!(packed.dropped.windows(2).all(|w| w[0].0 < w[1].0));
            prop_assert_eq!(packed.kept.len() + packed.dropped.len(), items.len());
            // Greedy: every dropped item would have overflowed when it was considered.
            for d in &packed.dropped {
                let before: usize = packed.kept.iter().filter(|k| k.0 < d.0).map(|k| k.1).sum();
                prop_assert!(before + d.1 > budget);
            }
        }
    }
}
