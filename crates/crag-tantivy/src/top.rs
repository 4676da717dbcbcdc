//! The best hits of a query over every segment of an index, the segments searched largest
//! first and each started at the k-th best score of those before it.
//!
//! Tantivy's `TopDocs` searches each segment from scratch: its pruning (MaxScore here,
//! block-max WAND in Tantivy's own disjunctions) learns the k-th best score anew in every
//! segment, and a segment after the first scores every document until its own top k fills.
//! Scores are comparable across segments (the statistics are the whole index's), so the k-th
//! best score of the segments already searched is a floor no later hit can fall under: every
//! segment after the first starts there, and skips what cannot enter the top k.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::{DocAddress, Score, Searcher};

/// The hits of `query` down to the `k`-th and every hit tied with it, so that the caller can
/// break ties by id rather than by where Tantivy stored the rows.
pub(crate) fn top_with_ties(
    searcher: &Searcher,
    query: &dyn Query,
    k: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    let live = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
    let k = k.min(live);
    if k == 0 {
        return Ok(Vec::new());
    }
    let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
    let mut limit = k.saturating_add(1).min(live);
    let mut hits = loop {
        let hits = top_k(searcher, weight.as_ref(), limit)?;
        let tied_past_cut = limit < live
            && hits.len() == limit
            && hits.get(k - 1).map(|h| h.0) == hits.last().map(|h| h.0);
        if !tied_past_cut {
            break hits;
        }
        limit = limit.saturating_mul(2).min(live);
    };
    if let Some(&(cut, _)) = hits.get(k - 1) {
        hits.retain(|&(score, _)| score >= cut);
    }
    Ok(hits)
}

/// A hit in the heap: the lowest score on top, and among equal scores the latest address.
#[derive(PartialEq)]
struct Hit(Score, DocAddress);

impl Eq for Hit {}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| other.1.cmp(&self.1))
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The `limit` best live hits of `weight`, best first (equal scores by address), the
/// segments searched largest first, each from the `limit`-th best score found before it.
pub(crate) fn top_k(
    searcher: &Searcher,
    weight: &dyn Weight,
    limit: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let readers = searcher.segment_readers();
    let mut order: Vec<u32> = (0..).take(readers.len()).collect();
    order.sort_by_key(|&ordinal| Reverse(readers[ordinal as usize].num_docs()));
    let mut heap: BinaryHeap<Reverse<Hit>> = BinaryHeap::with_capacity(limit + 1);
    let mut threshold = Score::MIN;
    for ordinal in order {
        let reader = &readers[ordinal as usize];
        let alive = reader.alive_bitset();
        weight.for_each_pruning(threshold, reader, &mut |doc, score| {
            if alive.is_some_and(|alive| alive.is_deleted(doc)) {
                return threshold;
            }
            heap.push(Reverse(Hit(score, DocAddress::new(ordinal, doc))));
            if heap.len() > limit {
                heap.pop();
            }
            if heap.len() == limit {
                if let Some(Reverse(Hit(lowest, _))) = heap.peek() {
                    threshold = *lowest;
                }
            }
            threshold
        })?;
    }
    let mut hits: Vec<(Score, DocAddress)> = heap
        .into_iter()
        .map(|Reverse(Hit(score, address))| (score, address))
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(hits)
}

#[cfg(test)]
mod tests;
