use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, Explanation, Occur, Scorer, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, Schema, TEXT};
use tantivy::{doc, DocId, Index, SegmentReader, Term};

use super::*;

const WORDS: [&str; 8] = [
    "cell", "protein", "gene", "tumour", "mouse", "dose", "brain", "virus",
];

/// Segments of 400, 150, 60 and 25 documents (the largest not first), a few deleted, texts
/// of 1-30 words skewed towards the first words.
fn index() -> (Searcher, Field) {
    let mut schema = Schema::builder();
    let body = schema.add_text_field("body", TEXT);
    let index = Index::create_in_ram(schema.build());
    let mut writer: tantivy::IndexWriter = index.writer(15_000_000).unwrap();
    writer.set_merge_policy(Box::new(NoMergePolicy));
    let mut state = 7u64;
    let mut below = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n
    };
    let mut id = 0;
    for size in [60, 400, 25, 150] {
        for _ in 0..size {
            let len = 1 + below(30);
            let text: Vec<&str> = (0..len)
                .map(|_| WORDS[below(WORDS.len()).min(below(WORDS.len()))])
                .collect();
            writer
                .add_document(doc!(body => format!("{} d{id}", text.join(" "))))
                .unwrap();
            id += 1;
        }
        writer.commit().unwrap();
    }
    for deleted in [3, 90, 200, 470, 600] {
        writer.delete_term(Term::from_field_text(body, &format!("d{deleted}")));
    }
    writer.commit().unwrap();
    (index.reader().unwrap().searcher(), body)
}

fn query(body: Field, words: &[&str]) -> BooleanQuery {
    BooleanQuery::new(
        words
            .iter()
            .map(|w| {
                let term =
                    TermQuery::new(Term::from_field_text(body, w), IndexRecordOption::WithFreqs);
                (Occur::Should, Box::new(term) as Box<dyn Query>)
            })
            .collect(),
    )
}

/// [`top_with_ties_by`] of a query searched by whole segments.
fn with_ties(
    searcher: &Searcher,
    query: &dyn Query,
    k: usize,
    workers: usize,
) -> Vec<(Score, DocAddress)> {
    let weight = query
        .weight(EnableScoring::enabled_from_searcher(searcher))
        .unwrap();
    let search = Whole(weight.as_ref());
    let units = units(searcher, &search, workers, RANGE_DOCS);
    top_with_ties_by(searcher, &search, k, workers, &units).unwrap()
}

/// [`top_k_by`] of a weight searched by whole segments.
fn top_k_of(
    searcher: &Searcher,
    weight: &dyn Weight,
    limit: usize,
    workers: usize,
) -> Vec<(Score, DocAddress)> {
    let search = Whole(weight);
    let units = units(searcher, &search, workers, RANGE_DOCS);
    top_k_by(searcher, &search, limit, workers, &units).unwrap()
}

/// Every live hit, best first, with Tantivy's own collector.
fn every_hit(searcher: &Searcher, query: &dyn Query) -> Vec<(Score, DocAddress)> {
    let live = searcher.num_docs() as usize;
    searcher
        .search(query, &TopDocs::with_limit(live).order_by_score())
        .unwrap()
}

#[test]
fn the_top_k_with_ties_is_the_exhaustive_one() {
    let (searcher, body) = index();
    assert_eq!(searcher.segment_readers().len(), 4);
    let queries: [&[&str]; 4] = [
        &["cell"],
        &["virus", "brain"],
        &["cell", "protein", "gene", "dose"],
        &["mouse", "d17", "nowhere"],
    ];
    for words in queries {
        let query = query(body, words);
        let all = every_hit(&searcher, &query);
        for (k, workers) in [1, 3, 10, 50, 200, 1000]
            .into_iter()
            .flat_map(|k| [(k, 1), (k, 2), (k, 3), (k, 8)])
        {
            let hits = with_ties(&searcher, &query, k, workers);
            let mut expected: Vec<(Score, DocAddress)> = match all.get(k.min(all.len()) - 1) {
                Some(&(cut, _)) => all.iter().copied().filter(|h| h.0 >= cut).collect(),
                None => Vec::new(),
            };
            expected.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            assert_eq!(hits, expected, "{words:?} k={k}, {workers} threads");
        }
    }
}

#[test]
fn deleted_documents_are_never_returned() {
    let (searcher, body) = index();
    let weight = query(body, &["d3", "d90", "d600", "d4"])
        .weight(EnableScoring::enabled_from_searcher(&searcher))
        .unwrap();
    for workers in [1, 2] {
        let hits = top_k_of(&searcher, weight.as_ref(), 10, workers);
        assert_eq!(hits.len(), 1, "only d4 is live: {hits:?}");
    }
}

/// A weight that records the threshold each segment's search starts from.
struct Recording {
    inner: Box<dyn Weight>,
    starts: Mutex<Vec<(u32, Score)>>,
}

impl Weight for Recording {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.inner.scorer(reader, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.inner.explain(reader, doc)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        self.starts
            .lock()
            .unwrap()
            .push((reader.num_docs(), threshold));
        self.inner.for_each_pruning(threshold, reader, callback)
    }
}

#[test]
fn later_segments_start_from_the_k_th_score_of_the_earlier_ones() {
    let (searcher, body) = index();
    let query = query(body, &["cell", "protein"]);
    let weight = Recording {
        inner: query
            .weight(EnableScoring::enabled_from_searcher(&searcher))
            .unwrap(),
        starts: Mutex::new(Vec::new()),
    };
    let limit = 10;
    let hits = top_k_of(&searcher, &weight, limit, 1);
    let starts = weight.starts.into_inner().unwrap();
    let sizes: Vec<u32> = starts.iter().map(|s| s.0).collect();
    let mut largest_first = sizes.clone();
    largest_first.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(sizes, largest_first);
    assert_eq!(starts[0].1, Score::MIN);
    let all = every_hit(&searcher, &query);
    let largest = searcher
        .segment_readers()
        .iter()
        .position(|r| r.num_docs() == sizes[0])
        .unwrap() as u32;
    let in_largest: Vec<Score> = all
        .iter()
        .filter(|h| h.1.segment_ord == largest)
        .map(|h| h.0)
        .collect();
    // The second segment starts from the largest's own k-th best score.
    assert_eq!(starts[1].1, in_largest[limit - 1]);
    assert!(starts.windows(2).all(|w| w[1].1 >= w[0].1));
    let scores: Vec<Score> = hits.iter().map(|h| h.0).collect();
    let expected: Vec<Score> = all.iter().take(limit).map(|h| h.0).collect();
    assert_eq!(scores, expected);
}

#[test]
fn threads_sharing_the_k_th_score_find_the_best_hits_of_one_thread() {
    let (searcher, body) = index();
    for words in [
        &["cell", "protein", "gene"][..],
        &["dose", "virus"],
        &["brain"],
    ] {
        let weight = query(body, words)
            .weight(EnableScoring::enabled_from_searcher(&searcher))
            .unwrap();
        for limit in [1, 5, 20, 100] {
            let one = top_k_of(&searcher, weight.as_ref(), limit, 1);
            for workers in [2, 4] {
                let many = top_k_of(&searcher, weight.as_ref(), limit, workers);
                let scores =
                    |hits: &[(Score, DocAddress)]| hits.iter().map(|h| h.0).collect::<Vec<_>>();
                assert_eq!(
                    scores(&many),
                    scores(&one),
                    "{words:?} {limit}, {workers} threads"
                );
                // Above the last score, the same documents (ties at it may be others).
                let last = one.last().map_or(Score::MIN, |h| h.0);
                let above = |hits: &[(Score, DocAddress)]| {
                    hits.iter()
                        .filter(|h| h.0 > last)
                        .copied()
                        .collect::<Vec<_>>()
                };
                assert_eq!(
                    above(&many),
                    above(&one),
                    "{words:?} {limit}, {workers} threads"
                );
            }
        }
    }
}

#[test]
fn a_shared_floor_orders_scores_as_they_order() {
    let scores = [Score::MIN, -3.5, -0.0, 0.0, 1e-30, 0.25, 7.0, Score::MAX];
    for pair in scores.windows(2) {
        assert!(Floor::encode(pair[0]) <= Floor::encode(pair[1]), "{pair:?}");
    }
    let floor = Floor::new(Score::MIN);
    for (raised, expected) in [(2.5, 2.5), (-1.0, 2.5), (9.0, 9.0), (8.9, 9.0)] {
        floor.raise(raised);
        assert_eq!(floor.get(), expected);
    }
    assert_eq!(Floor::new(-3.5).get(), -3.5);
}

#[test]
fn a_search_taking_ranges_is_cut_into_them_for_several_threads_only() {
    let (searcher, body) = index();
    let weight = query(body, &["cell"])
        .weight(EnableScoring::enabled_from_searcher(&searcher))
        .unwrap();
    let whole = Whole(weight.as_ref());
    let sizes = |units: &[Unit]| units.iter().map(|u| u.1.len()).collect::<Vec<_>>();
    // Largest segment first, whole.
    assert_eq!(sizes(&units(&searcher, &whole, 2, 100)), [400, 150, 60, 25]);
    struct Ranged;
    impl PruningSearch for Ranged {
        fn for_each_pruning_in(
            &self,
            _: Score,
            _: &SegmentReader,
            _: std::ops::Range<DocId>,
            _: &mut dyn FnMut(DocId, Score) -> Score,
        ) -> tantivy::Result<()> {
            Ok(())
        }

        fn searches_ranges(&self) -> bool {
            true
        }
    }
    assert_eq!(
        sizes(&units(&searcher, &Ranged, 1, 100)),
        [400, 150, 60, 25]
    );
    let cut = units(&searcher, &Ranged, 2, 100);
    assert_eq!(sizes(&cut), [100, 100, 100, 100, 100, 50, 60, 25]);
    assert_eq!(cut[0].1, 0..100);
    assert_eq!(cut[3].1, 300..400);
    assert_eq!(cut[4].0, cut[5].0);
    assert_eq!(cut[5].1, 100..150);
}
