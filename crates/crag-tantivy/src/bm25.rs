//! BM25 with chosen `k1` and `b`: Tantivy's own term scorer fixes them at 1.2 and 0.75.
//!
//! A [`Bm25TermQuery`] scores one term of one field as Lucene's and Tantivy's BM25 do (the same
//! idf, `ln(1 + (N - n + 0.5) / (n + 0.5))`, over the same statistics: documents of every
//! segment, deleted ones included, and the field's mean length), with the caller's parameters.
//! With Tantivy's parameters the index uses Tantivy's `TermQuery` instead, which keeps its
//! block-max WAND pruning; a disjunction of these queries is scored exhaustively.

use std::fmt;
use std::sync::Arc;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{
    Bm25StatisticsProvider, EmptyScorer, EnableScoring, Explanation, Query, Scorer, TermQuery,
    Weight,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocId, DocSet, Score, SegmentReader, TantivyError, Term};

/// How the keyword index scores: BM25's term-saturation (`k1`) and length-normalisation (`b`)
/// parameters, and the weight of a chunk's title field against its text (each field is
/// scored by BM25 on its own and the scores add up).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation, >= 0 (0: a term counts once whatever its frequency).
    pub k1: f32,
    /// Length normalisation in [0, 1] (0: the length of a chunk does not matter).
    pub b: f32,
    /// Multiplies the BM25 score of a query term in a chunk's title, >= 0 (0: titles are
    /// not searched).
    pub title_weight: f32,
    /// Whole documents (BM25F, same `k1` and `b`): what a title occurrence of a term adds to
    /// its frequency in the text, which holds the title too, >= 0.
    pub document_title_weight: f32,
}

impl Bm25 {
    /// Tantivy's (and Lucene's) `k1` and `b`, titles weighing as much as text.
    pub const TANTIVY: Bm25 = Bm25 {
        k1: 1.2,
        b: 0.75,
        title_weight: 1.0,
        document_title_weight: DEFAULT_DOCUMENT_TITLE_WEIGHT,
    };

    /// Checked parameters, titles weighing as much as text.
    pub fn new(k1: f32, b: f32) -> Result<Self, String> {
        if !(k1.is_finite() && k1 >= 0.0) {
            return Err(format!("BM25 k1 must be a finite number >= 0, got {k1}"));
        }
        if !(0.0..=1.0).contains(&b) {
            return Err(format!("BM25 b must lie within [0, 1], got {b}"));
        }
        Ok(Self {
            k1,
            b,
            ..Self::TANTIVY
        })
    }

    /// The same, with a title match weighing `weight` times its BM25 score.
    pub fn with_title_weight(self, weight: f32) -> Result<Self, String> {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(format!(
                "the title weight must be a finite number >= 0, got {weight}"
            ));
        }
        Ok(Self {
            title_weight: weight,
            ..self
        })
    }

    /// The same, a title occurrence of a term adding `weight` to its frequency in a whole
    /// document's text.
    pub fn with_document_title_weight(self, weight: f32) -> Result<Self, String> {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(format!(
                "the document title weight must be a finite number >= 0, got {weight}"
            ));
        }
        Ok(Self {
            document_title_weight: weight,
            ..self
        })
    }

    /// BM25F's parameters for whole documents.
    pub(crate) fn documents(self) -> crate::bm25f::Bm25f {
        crate::bm25f::Bm25f {
            k1: self.k1,
            b: self.b,
            title_weight: self.document_title_weight,
        }
    }

    /// The query scoring `term` with `k1` and `b` (the title weight is the caller's).
    pub(crate) fn term_query(self, term: Term) -> Box<dyn Query> {
        if (self.k1, self.b) == (Self::TANTIVY.k1, Self::TANTIVY.b) {
            Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs))
        } else {
            Box::new(Bm25TermQuery { term, params: self })
        }
    }
}

/// Default [`Bm25::document_title_weight`]: chosen on SciFact train and Cranfield
/// (docs/benchmarks.md, "Whole documents").
pub const DEFAULT_DOCUMENT_TITLE_WEIGHT: f32 = 2.0;

/// crag's defaults: Tantivy's `k1` and `b`, a title match at 0.75 of its BM25 score (chosen
/// on SciFact train and Cranfield; `[retrieval] bm25_title_weight`, docs/benchmarks.md).
impl Default for Bm25 {
    fn default() -> Self {
        Self {
            title_weight: 0.75,
            ..Self::TANTIVY
        }
    }
}

/// One term scored by BM25 with [`Bm25`] parameters.
#[derive(Clone, Debug)]
pub(crate) struct Bm25TermQuery {
    pub(crate) term: Term,
    pub(crate) params: Bm25,
}

impl Query for Bm25TermQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let EnableScoring::Enabled {
            statistics_provider,
            ..
        } = scoring
        else {
            return TermQuery::new(self.term.clone(), IndexRecordOption::Basic).weight(scoring);
        };
        Ok(Box::new(Bm25TermWeight::new(
            self.term.clone(),
            self.params,
            statistics_provider,
        )?))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        visitor(&self.term, false);
    }
}

struct Bm25TermWeight {
    term: Term,
    /// `idf * (k1 + 1)`.
    weight: Score,
    /// `k1 * (1 - b + b * length / mean length)` for each of Tantivy's 256 length codes.
    norms: Arc<[Score; 256]>,
}

impl Bm25TermWeight {
    fn new(
        term: Term,
        params: Bm25,
        statistics: &dyn Bm25StatisticsProvider,
    ) -> tantivy::Result<Self> {
        let documents = statistics.total_num_docs()?;
        let tokens = statistics.total_num_tokens(term.field())?;
        let frequency = statistics.doc_freq(&term)?.min(documents);
        let mean_length = if documents == 0 {
            1.0
        } else {
            (tokens as Score / documents as Score).max(Score::MIN_POSITIVE)
        };
        let odds = ((documents - frequency) as Score + 0.5) / (frequency as Score + 0.5);
        let idf = (1.0 + odds).ln();
        let mut norms = [0.0; 256];
        for (code, norm) in norms.iter_mut().enumerate() {
            let length = FieldNormReader::id_to_fieldnorm(code as u8) as Score;
            *norm = params.k1 * (1.0 - params.b + params.b * length / mean_length);
        }
        Ok(Self {
            term,
            weight: idf * (params.k1 + 1.0),
            norms: Arc::new(norms),
        })
    }
}

impl Weight for Bm25TermWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let field = self.term.field();
        let postings = reader
            .inverted_index(field)?
            .read_postings(&self.term, IndexRecordOption::WithFreqs)?;
        let Some(postings) = postings else {
            return Ok(Box::new(EmptyScorer));
        };
        Ok(Box::new(Bm25TermScorer {
            postings,
            lengths: reader.get_fieldnorms_reader(field)?,
            weight: self.weight * boost,
            norms: Arc::clone(&self.norms),
        }))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.doc() > doc || scorer.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document #{doc} does not match"
            )));
        }
        let mut explanation = Explanation::new("BM25 with chosen k1 and b", scorer.score());
        explanation.add_context(format!("term={:?}", self.term));
        Ok(explanation)
    }
}

struct Bm25TermScorer {
    postings: SegmentPostings,
    lengths: FieldNormReader,
    weight: Score,
    norms: Arc<[Score; 256]>,
}

impl fmt::Debug for Bm25TermScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bm25TermScorer")
            .field("doc", &self.postings.doc())
            .finish()
    }
}

impl DocSet for Bm25TermScorer {
    fn advance(&mut self) -> DocId {
        self.postings.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.postings.seek(target)
    }

    fn doc(&self) -> DocId {
        self.postings.doc()
    }

    fn size_hint(&self) -> u32 {
        self.postings.size_hint()
    }
}

impl Scorer for Bm25TermScorer {
    fn score(&mut self) -> Score {
        let frequency = self.postings.term_freq() as Score;
        let norm = self.norms[usize::from(self.lengths.fieldnorm_id(self.postings.doc()))];
        self.weight * frequency / (frequency + norm)
    }
}

#[cfg(test)]
mod tests {
    use tantivy::collector::TopDocs;
    use tantivy::query::{BooleanQuery, Occur};
    use tantivy::schema::{Schema, TEXT};
    use tantivy::{doc, Index, Searcher};

    use super::*;

    const TEXTS: [&str; 4] = [
        "apple",
        "apple apple banana",
        "banana cherry date elderberry fig grape apple",
        "cherry cherry cherry cherry apple date fig",
    ];

    fn searcher() -> (Searcher, tantivy::schema::Field) {
        let mut schema = Schema::builder();
        let body = schema.add_text_field("body", TEXT);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer(15_000_000).unwrap();
        for (i, text) in TEXTS.iter().enumerate() {
            writer.add_document(doc!(body => *text)).unwrap();
            if i == 1 {
                writer.commit().unwrap(); // two segments: statistics span both
            }
        }
        writer.commit().unwrap();
        (index.reader().unwrap().searcher(), body)
    }

    fn scores(searcher: &Searcher, query: &dyn Query) -> Vec<(u32, Score)> {
        let mut hits: Vec<_> = searcher
            .search(query, &TopDocs::with_limit(10).order_by_score())
            .unwrap()
            .into_iter()
            .map(|(score, address)| (address.segment_ord * 100 + address.doc_id, score))
            .collect();
        hits.sort_by_key(|h| h.0);
        hits
    }

    fn disjunction(terms: &[Term], params: Bm25, own: bool) -> BooleanQuery {
        BooleanQuery::new(
            terms
                .iter()
                .map(|t| {
                    let query: Box<dyn Query> = if own {
                        Box::new(Bm25TermQuery {
                            term: t.clone(),
                            params,
                        })
                    } else {
                        params.term_query(t.clone())
                    };
                    (Occur::Should, query)
                })
                .collect(),
        )
    }

    #[test]
    fn with_tantivys_parameters_it_scores_as_tantivy_does() {
        let (searcher, body) = searcher();
        let terms = [
            Term::from_field_text(body, "apple"),
            Term::from_field_text(body, "cherry"),
        ];
        let theirs = scores(&searcher, &disjunction(&terms, Bm25::TANTIVY, false));
        let ours = scores(&searcher, &disjunction(&terms, Bm25::TANTIVY, true));
        assert_eq!(theirs.len(), 4);
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a.0, b.0);
            assert!((a.1 - b.1).abs() < 1e-5, "{ours:?} vs {theirs:?}");
        }
    }

    #[test]
    fn other_parameters_follow_the_bm25_formula() {
        let (searcher, body) = searcher();
        let params = Bm25::new(0.9, 0.4).unwrap();
        let term = Term::from_field_text(body, "cherry");
        let ours = scores(&searcher, &disjunction(&[term], params, false));
        // cherry: in documents 2 (once, 7 words) and 3 (4 times, 7 words); 4 documents of
        // 1 + 3 + 7 + 7 = 18 words.
        let idf = (1.0f32 + (4.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
        let mean = 18.0 / 4.0;
        let bm25 =
            |tf: f32, length: f32| idf * 1.9 * tf / (tf + 0.9 * (1.0 - 0.4 + 0.4 * length / mean));
        assert_eq!(ours.len(), 2);
        assert!((ours[0].1 - bm25(1.0, 7.0)).abs() < 1e-5, "{ours:?}");
        assert!((ours[1].1 - bm25(4.0, 7.0)).abs() < 1e-5, "{ours:?}");
        let tantivy = scores(
            &searcher,
            &disjunction(
                &[Term::from_field_text(body, "cherry")],
                Bm25::TANTIVY,
                false,
            ),
        );
        assert!(
            (tantivy[1].1 - ours[1].1).abs() > 1e-3,
            "the parameters changed nothing"
        );
    }

    #[test]
    fn parameters_are_checked() {
        assert!(Bm25::new(0.9, 0.4).is_ok());
        assert!(Bm25::new(-1.0, 0.4).unwrap_err().contains("k1"));
        assert!(Bm25::new(f32::NAN, 0.4).unwrap_err().contains("k1"));
        assert!(Bm25::new(0.9, 1.5).unwrap_err().contains("b must"));
        let titled = Bm25::TANTIVY.with_title_weight(0.5).unwrap();
        assert_eq!((titled.k1, titled.b, titled.title_weight), (1.2, 0.75, 0.5));
        assert!(Bm25::TANTIVY.with_title_weight(-0.1).is_err());
    }
}
