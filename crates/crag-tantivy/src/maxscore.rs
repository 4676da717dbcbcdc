//! A disjunction of BM25F words whose top-k search skips the documents that cannot enter the
//! top k (MaxScore, Turtle and Flood 1995).
//!
//! No document scores more for a word than the word's bound (`idf * (k1 + 1) * boost`). With
//! the words sorted by bound, the longest prefix whose bounds add up to no more than the k-th
//! score so far holds the "non-essential" words: a document matching only those cannot enter
//! the top k. Candidates come from the other words' postings alone; a non-essential word's
//! postings are only sought to a candidate, and a candidate is dropped as soon as its score
//! so far plus the bounds of the words not yet looked at cannot beat the k-th. Long queries
//! with common words (a sentence's worth of terms over a large corpus) read most postings
//! only where a rare word matched. Every document that can enter the top k is scored in full,
//! its words' scores added in the query's order as an exhaustive union adds them: the top k
//! is the exhaustive one.

use std::ops::Range;

use tantivy::query::{BooleanQuery, EnableScoring, Explanation, Occur, Query, Scorer, Weight};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

use crate::bm25f::{Bm25fScorer, Bm25fTermQuery, Bm25fWeight};
use crate::top::PruningSearch;

/// Bounds are raised by this factor so that rounding never lets a score pass its word's bound.
const BOUND_SLACK: Score = 1.0 + 1e-4;

/// The sum of BM25F words' scores (documents holding any of them).
#[derive(Clone, Debug)]
pub(crate) struct Bm25fDisjunction {
    words: Vec<Bm25fTermQuery>,
}

impl Bm25fDisjunction {
    pub(crate) fn new(words: Vec<Bm25fTermQuery>) -> Self {
        Self { words }
    }

    /// Its weight over the index `scoring` describes, searched by ranges of documents too
    /// ([`PruningSearch`]).
    pub(crate) fn disjunction_weight(
        &self,
        scoring: EnableScoring<'_>,
    ) -> tantivy::Result<DisjunctionWeight> {
        let clauses = self
            .words
            .iter()
            .map(|word| (Occur::Should, Box::new(word.clone()) as Box<dyn Query>))
            .collect();
        Ok(DisjunctionWeight {
            union: BooleanQuery::new(clauses).weight(scoring)?,
            words: self
                .words
                .iter()
                .map(|word| word.bm25f_weight(scoring))
                .collect::<tantivy::Result<_>>()?,
        })
    }
}

impl Query for Bm25fDisjunction {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.disjunction_weight(scoring)?))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        for word in &self.words {
            word.query_terms(visitor);
        }
    }
}

pub(crate) struct DisjunctionWeight {
    /// The same words as a union, for every use but a top-k search (an intersection with a
    /// filter, a count, an explanation).
    union: Box<dyn Weight>,
    words: Vec<Bm25fWeight>,
}

impl Weight for DisjunctionWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        self.union.scorer(reader, boost)
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        self.union.explain(reader, doc)
    }

    fn for_each_pruning(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        self.for_each_pruning_in(threshold, reader, 0..TERMINATED, callback)
    }
}

impl PruningSearch for DisjunctionWeight {
    fn for_each_pruning_in(
        &self,
        threshold: Score,
        reader: &SegmentReader,
        docs: Range<DocId>,
        callback: &mut dyn FnMut(DocId, Score) -> Score,
    ) -> tantivy::Result<()> {
        let mut words = Vec::with_capacity(self.words.len());
        for (clause, weight) in self.words.iter().enumerate() {
            if let Some(mut scorer) = weight.term_scorer(reader, 1.0)? {
                if scorer.doc() < docs.start {
                    scorer.seek(docs.start);
                }
                if scorer.doc() < docs.end {
                    words.push(Word {
                        clause,
                        bound: weight.bound() * BOUND_SLACK,
                        scorer,
                    });
                }
            }
        }
        max_score(words, self.words.len(), threshold, docs.end, callback);
        Ok(())
    }

    fn searches_ranges(&self) -> bool {
        true
    }
}

/// A word's scorer over a segment, its place in the query and its bound.
struct Word {
    clause: usize,
    bound: Score,
    scorer: Bm25fScorer,
}

/// Calls `callback` with every document before `end` scoring above the threshold it last
/// returned (at first `threshold`), in document order, except those that provably cannot.
fn max_score(
    mut words: Vec<Word>,
    clauses: usize,
    mut threshold: Score,
    end: DocId,
    callback: &mut dyn FnMut(DocId, Score) -> Score,
) {
    words.sort_by(|a, b| a.bound.total_cmp(&b.bound));
    // bounds[i]: the most words[..=i] add to a document's score.
    let bounds: Vec<Score> = words
        .iter()
        .scan(0.0, |sum, word| {
            *sum += word.bound;
            Some(*sum)
        })
        .collect();
    let non_essential = |threshold: Score| bounds.partition_point(|&b| b <= threshold);
    let mut essential = non_essential(threshold);
    // The current document's score for each clause of the query, 0 where it does not match.
    let mut scores: Vec<Score> = vec![0.0; clauses];
    let mut matched: Vec<usize> = Vec::with_capacity(clauses);
    while essential < words.len() {
        let doc = words[essential..]
            .iter()
            .map(|word| word.scorer.doc())
            .min()
            .unwrap_or(TERMINATED);
        if doc >= end {
            break;
        }
        let mut partial: Score = 0.0;
        for word in &mut words[essential..] {
            if word.scorer.doc() == doc {
                let score = word.scorer.score();
                scores[word.clause] = score;
                matched.push(word.clause);
                partial += score;
                word.scorer.advance();
            }
        }
        let mut pruned = false;
        for j in (0..essential).rev() {
            if partial + bounds[j] <= threshold {
                pruned = true;
                break;
            }
            let word = &mut words[j];
            if word.scorer.doc() < doc {
                word.scorer.seek(doc);
            }
            if word.scorer.doc() == doc {
                let score = word.scorer.score();
                scores[word.clause] = score;
                matched.push(word.clause);
                partial += score;
            }
        }
        if !pruned {
            matched.sort_unstable();
            let score = matched.iter().fold(0.0, |sum: Score, &c| sum + scores[c]);
            if score > threshold {
                threshold = callback(doc, score);
                essential = non_essential(threshold);
            }
        }
        for clause in matched.drain(..) {
            scores[clause] = 0.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use tantivy::collector::TopDocs;
    use tantivy::schema::{Field, Schema, TEXT};
    use tantivy::{doc, DocAddress, Index, Searcher};

    use super::*;
    use crate::bm25f::Bm25f;

    const WORDS: [&str; 12] = [
        "cell", "protein", "gene", "tumour", "mouse", "dose", "brain", "virus", "kinase", "zinc",
        "prion", "axon",
    ];

    /// A small linear congruential generator: the same corpus on every run.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }

        /// Word indexes skewed towards the first (common) words.
        fn words(&mut self, len: usize) -> String {
            (0..len)
                .map(|_| WORDS[self.below(WORDS.len()).min(self.below(WORDS.len()))])
                .collect::<Vec<_>>()
                .join(" ")
        }
    }

    /// Documents in several segments, some deleted, titles of 0-3 words and texts of 1-40.
    fn corpus(seed: u64) -> (Searcher, Field, Field) {
        let mut schema = Schema::builder();
        let title = schema.add_text_field("title", TEXT);
        let text = schema.add_text_field("text", TEXT);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer(15_000_000).unwrap();
        let mut rng = Lcg(seed);
        for i in 0..1500 {
            let (title_len, text_len) = (rng.below(4), 1 + rng.below(40));
            let head = rng.words(title_len);
            let body = rng.words(text_len);
            let id = format!("d{i}");
            writer
                .add_document(doc!(title => head.clone(), text => format!("{head} {body} {id}")))
                .unwrap();
            if i % 400 == 399 {
                writer.commit().unwrap();
            }
            if i % 97 == 0 {
                writer.delete_term(Term::from_field_text(text, &format!("d{}", i / 2)));
            }
        }
        writer.commit().unwrap();
        (index.reader().unwrap().searcher(), title, text)
    }

    fn words(title: Field, text: Field, query: &[(&str, Score)], k1: Score) -> Vec<Bm25fTermQuery> {
        let params = Bm25f {
            k1,
            b: 0.75,
            title_weight: 2.0,
        };
        query
            .iter()
            .map(|(w, boost)| {
                Bm25fTermQuery::new(
                    Term::from_field_text(title, w),
                    Term::from_field_text(text, w),
                    params,
                    *boost,
                )
            })
            .collect()
    }

    /// The documents of `hits` strictly above `kth` (beyond its rounding), in address order.
    fn above(hits: &[(Score, DocAddress)], kth: Score) -> Vec<DocAddress> {
        let mut docs: Vec<DocAddress> = hits
            .iter()
            .filter(|h| h.0 > kth * (1.0 + 1e-5))
            .map(|h| h.1)
            .collect();
        docs.sort();
        docs
    }

    fn top(searcher: &Searcher, query: &dyn Query, k: usize) -> Vec<(Score, DocAddress)> {
        searcher
            .search(query, &TopDocs::with_limit(k).order_by_score())
            .unwrap()
    }

    #[test]
    fn the_pruned_top_k_is_the_exhaustive_one() {
        let queries: [&[(&str, Score)]; 5] = [
            &[
                ("cell", 1.0),
                ("protein", 1.0),
                ("prion", 1.0),
                ("axon", 1.0),
            ],
            &[
                ("cell", 1.0),
                ("gene", 1.0),
                ("tumour", 1.0),
                ("mouse", 1.0),
                ("zinc", 1.0),
            ],
            &[("kinase", 0.3), ("cell", 2.0), ("brain", 0.7)],
            &[("axon", 1.0)],
            &[
                ("cell", 1.0),
                ("protein", 1.0),
                ("gene", 1.0),
                ("nowhere", 1.0),
            ],
        ];
        for seed in [1, 7, 42] {
            let (searcher, title, text) = corpus(seed);
            for query in queries {
                for (k, k1) in [(1, 1.2), (10, 1.2), (100, 0.0), (10, 3.0)] {
                    let terms = words(title, text, query, k1);
                    let clauses = terms
                        .iter()
                        .map(|t| (Occur::Should, Box::new(t.clone()) as Box<dyn Query>))
                        .collect();
                    let exhaustive = top(&searcher, &BooleanQuery::new(clauses), k);
                    let pruned = top(&searcher, &Bm25fDisjunction::new(terms), k);
                    assert_eq!(pruned.len(), exhaustive.len(), "{query:?} k={k}");
                    for (p, e) in pruned.iter().zip(&exhaustive) {
                        assert!((p.0 - e.0).abs() <= 1e-5 * e.0.abs(), "{p:?} vs {e:?}");
                    }
                    // Documents strictly above the k-th score are the same (ties may differ
                    // in order only by their rounding).
                    let kth = exhaustive.last().map_or(0.0, |h| h.0);
                    assert_eq!(
                        above(&pruned, kth),
                        above(&exhaustive, kth),
                        "{query:?} k={k}"
                    );
                }
            }
        }
    }

    #[test]
    fn searched_by_ranges_of_documents_on_several_threads_it_finds_the_exhaustive_top_k() {
        use crate::top::{top_with_ties_by, units};
        let query: &[(&str, Score)] = &[
            ("cell", 1.0),
            ("protein", 0.5),
            ("prion", 1.0),
            ("axon", 2.0),
        ];
        for seed in [5, 42] {
            let (searcher, title, text) = corpus(seed);
            let terms = words(title, text, query, 1.2);
            let clauses = terms
                .iter()
                .map(|t| (Occur::Should, Box::new(t.clone()) as Box<dyn Query>))
                .collect();
            let union = BooleanQuery::new(clauses);
            let weight = Bm25fDisjunction::new(terms)
                .disjunction_weight(EnableScoring::enabled_from_searcher(&searcher))
                .unwrap();
            for k in [1, 10, 100] {
                let exhaustive = top(&searcher, &union, k);
                let kth = exhaustive.last().map_or(0.0, |h| h.0);
                for (workers, range_docs) in [(1, 100), (2, 1), (2, 97), (3, 250), (2, 100_000)] {
                    let parts = units(&searcher, &weight, workers, range_docs);
                    let hits = top_with_ties_by(&searcher, &weight, k, workers, &parts).unwrap();
                    let context = format!("seed {seed} k={k}, {workers} threads, {range_docs}");
                    // Every hit down to the k-th, and those tied with it.
                    assert!(hits.len() >= exhaustive.len(), "{context}");
                    for (h, e) in hits.iter().zip(&exhaustive) {
                        assert!(
                            (h.0 - e.0).abs() <= 1e-5 * e.0.abs(),
                            "{h:?} vs {e:?}, {context}"
                        );
                    }
                    assert_eq!(above(&hits, kth), above(&exhaustive, kth), "{context}");
                }
            }
        }
    }

    #[test]
    fn inside_a_filter_it_scores_as_the_union() {
        let (searcher, title, text) = corpus(3);
        let terms = words(
            title,
            text,
            &[("prion", 1.0), ("axon", 0.5), ("cell", 1.0)],
            1.2,
        );
        let filtered = |query: Box<dyn Query>| {
            let filter = tantivy::query::TermQuery::new(
                Term::from_field_text(text, "gene"),
                tantivy::schema::IndexRecordOption::Basic,
            );
            crate::filter::within(query, Box::new(filter))
        };
        let clauses = terms
            .iter()
            .map(|t| (Occur::Should, Box::new(t.clone()) as Box<dyn Query>))
            .collect();
        let union = top(
            &searcher,
            &filtered(Box::new(BooleanQuery::new(clauses))),
            1000,
        );
        let ours = top(
            &searcher,
            &filtered(Box::new(Bm25fDisjunction::new(terms))),
            1000,
        );
        assert!(union.len() > 10, "{}", union.len());
        assert_eq!(ours, union);
    }
}
