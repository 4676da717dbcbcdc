//! The best hits of a query over every segment of an index, the segments searched largest
//! first and each started at the k-th best score of those before it (a large index's
//! segments by one thread per core, sharing that score).
//!
//! Tantivy's `TopDocs` searches each segment from scratch: its pruning (MaxScore here,
//! block-max WAND in Tantivy's own disjunctions) learns the k-th best score anew in every
//! segment, and a segment after the first scores every document until its own top k fills.
//! Scores are comparable across segments (the statistics are the whole index's), so the k-th
//! best score of the segments already searched is a floor no later hit can fall under: every
//! segment after the first starts there, and skips what cannot enter the top k.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::OnceLock;

use tantivy::query::{EnableScoring, Query, Weight};
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentReader};

/// The hits of `query` down to the `k`-th and every hit tied with it, so that the caller can
/// break ties by id rather than by where Tantivy stored the rows.
pub(crate) fn top_with_ties(
    searcher: &Searcher,
    query: &dyn Query,
    k: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
    top_with_ties_of(searcher, &Whole(weight.as_ref()), k)
}

/// [`top_with_ties`] of a search that may take ranges of a segment's documents.
pub(crate) fn top_with_ties_of(
    searcher: &Searcher,
    search: &dyn PruningSearch,
    k: usize,
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    let workers = workers(searcher);
    let units = units(searcher, search, workers, RANGE_DOCS);
    top_with_ties_by(searcher, search, k, workers, &units)
}

/// [`top_with_ties`] by `workers` threads over `units` ([`top_k_by`]).
pub(crate) fn top_with_ties_by(
    searcher: &Searcher,
    search: &dyn PruningSearch,
    k: usize,
    workers: usize,
    units: &[Unit],
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    let live = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
    let k = k.min(live);
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut limit = k.saturating_add(1).min(live);
    let mut hits = loop {
        let hits = top_k_by(searcher, search, limit, workers, units)?;
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

/// What the threads of a search run: a weight's pruning search over a segment, or over a
/// range of its documents when the weight can.
pub(crate) trait PruningSearch: Sync {
    /// As [`Weight::for_each_pruning`], over the documents of `docs` only.
    fn for_each_pruning_in(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        docs: Range<DocId>,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()>;

    /// Whether [`PruningSearch::for_each_pruning_in`] takes ranges smaller than a segment.
    fn searches_ranges(&self) -> bool;
}

/// A weight searched by whole segments.
pub(crate) struct Whole<'a>(pub(crate) &'a dyn Weight);

impl PruningSearch for Whole<'_> {
    fn for_each_pruning_in(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        _docs: Range<DocId>,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        self.0.for_each_pruning(threshold, reader, callback)
    }

    fn searches_ranges(&self) -> bool {
        false
    }
}

/// A part of a search: a segment (by ordinal) and a range of its documents.
type Unit = (u32, Range<DocId>);

/// Documents of a segment per part of a search by several threads, for a search that takes
/// ranges: a million documents in parts of this size give each of two threads several.
const RANGE_DOCS: u32 = 131_072;

/// The parts of a search, largest segment first, a segment cut into ranges of `range_docs`
/// documents when there are several workers and `search` takes ranges.
pub(crate) fn units(
    searcher: &Searcher,
    search: &dyn PruningSearch,
    workers: usize,
    range_docs: u32,
) -> Vec<Unit> {
    let readers = searcher.segment_readers();
    let mut order: Vec<u32> = (0..).take(readers.len()).collect();
    order.sort_by_key(|&ordinal| Reverse(readers[ordinal as usize].num_docs()));
    let split = workers > 1 && search.searches_ranges();
    let mut units = Vec::with_capacity(order.len());
    for ordinal in order {
        let max_doc = readers[ordinal as usize].max_doc();
        if !split {
            units.push((ordinal, 0..max_doc));
            continue;
        }
        let step = range_docs.max(1);
        for from in (0..max_doc).step_by(step as usize) {
            units.push((ordinal, from..from.saturating_add(step).min(max_doc)));
        }
    }
    units
}

/// The threads a search of `searcher` takes: one per core for an index of many documents
/// (no more than the search has parts, [`top_k_by`]), else one.
fn workers(searcher: &Searcher) -> usize {
    if searcher.num_docs() >= PARALLEL_FROM_DOCS {
        cores()
    } else {
        1
    }
}

/// Documents from which a search is split across threads: a search of a few milliseconds,
/// against tens of microseconds to start a thread. SciFact's 10k chunks are searched by one.
const PARALLEL_FROM_DOCS: u64 = 100_000;

/// The `limit` best live hits of `search`, best first (equal scores by address), its
/// `units` searched in order, each from the `limit`-th best score found before it, by
/// `workers` threads (the caller's and scoped ones; no more than there are units): each
/// takes the next unit in turn into its own heap, all start from and raise the best
/// `limit`-th score any heap holds. No hit above the final `limit`-th best is pruned, as
/// every floor used is some heap's `limit`-th best at the time.
fn top_k_by(
    searcher: &Searcher,
    search: &dyn PruningSearch,
    limit: usize,
    workers: usize,
    units: &[Unit],
) -> tantivy::Result<Vec<(Score, DocAddress)>> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let next = AtomicUsize::new(0);
    let floor = Floor::new(Score::MIN);
    let work = || search_units(searcher, search, limit, units, &next, &floor);
    let workers = workers.min(units.len());
    let heaps: Vec<Heap> = if workers <= 1 {
        vec![work()?]
    } else {
        std::thread::scope(|scope| {
            let others: Vec<_> = (1..workers).map(|_| scope.spawn(work)).collect();
            let mut heaps = vec![work()?];
            for other in others {
                heaps.push(
                    other
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
                );
            }
            Ok::<_, tantivy::TantivyError>(heaps)
        })?
    };
    let mut hits: Vec<(Score, DocAddress)> = heaps
        .into_iter()
        .flatten()
        .map(|Reverse(Hit(score, address))| (score, address))
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    hits.truncate(limit);
    Ok(hits)
}

/// The best hits one thread found, the lowest on top.
type Heap = BinaryHeap<Reverse<Hit>>;

/// One thread's part of [`top_k_by`]: the units it takes from `next`, each searched from
/// the shared `floor`, into a heap of the `limit` best.
fn search_units(
    searcher: &Searcher,
    search: &dyn PruningSearch,
    limit: usize,
    units: &[Unit],
    next: &AtomicUsize,
    floor: &Floor,
) -> tantivy::Result<Heap> {
    let readers = searcher.segment_readers();
    let mut heap: Heap = BinaryHeap::with_capacity(limit + 1);
    while let Some((ordinal, docs)) = units.get(next.fetch_add(1, AtomicOrdering::Relaxed)) {
        let ordinal = *ordinal;
        let reader = &readers[ordinal as usize];
        let alive = reader.alive_bitset();
        let mut threshold = floor.get();
        search.for_each_pruning_in(threshold, reader, docs.clone(), &mut |doc, score| {
            if alive.is_some_and(|alive| alive.is_deleted(doc)) {
                return threshold;
            }
            heap.push(Reverse(Hit(score, DocAddress::new(ordinal, doc))));
            if heap.len() > limit {
                heap.pop();
            }
            if heap.len() == limit {
                if let Some(Reverse(Hit(lowest, _))) = heap.peek() {
                    floor.raise(*lowest);
                }
            }
            threshold = floor.get();
            threshold
        })?;
    }
    Ok(heap)
}

/// A score the threads of a search share and only raise: an `f32` in an atomic, its bits
/// mapped so that unsigned order is the scores' order.
struct Floor(AtomicU32);

impl Floor {
    fn new(score: Score) -> Self {
        Self(AtomicU32::new(Self::encode(score)))
    }

    fn get(&self) -> Score {
        Self::decode(self.0.load(AtomicOrdering::Relaxed))
    }

    fn raise(&self, score: Score) {
        self.0
            .fetch_max(Self::encode(score), AtomicOrdering::Relaxed);
    }

    fn encode(score: Score) -> u32 {
        let bits = score.to_bits();
        if bits & SIGN != 0 {
            !bits
        } else {
            bits | SIGN
        }
    }

    fn decode(code: u32) -> Score {
        Score::from_bits(if code & SIGN != 0 {
            code & !SIGN
        } else {
            !code
        })
    }
}

const SIGN: u32 = 1 << 31;

/// The cores a search may use (read once: the standard library reads the cgroup's quota).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

#[cfg(test)]
mod tests;
