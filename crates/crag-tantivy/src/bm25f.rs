//! BM25F (Robertson, Zaragoza and Taylor 2004) over a document's title and text: a term's
//! frequencies in both fields, each divided by its field's length normalisation and the
//! title's weighted, are added before one saturation; the document frequency and the mean
//! lengths are the documents index's own.

use std::fmt;
use std::sync::Arc;

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::{Postings, SegmentPostings};
use tantivy::query::{EmptyScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TantivyError, Term};

/// BM25F's parameters for whole documents (from [`Bm25`](crate::Bm25)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Bm25f {
    /// Term-frequency saturation, >= 0.
    pub k1: f32,
    /// Length normalisation of each field, within [0, 1].
    pub b: f32,
    /// Weight of a title occurrence against one in the text (which holds the title too), >= 0.
    pub title_weight: f32,
}

/// One word scored by BM25F over a document's title and text.
#[derive(Clone, Debug)]
pub(crate) struct Bm25fTermQuery {
    title: Term,
    text: Term,
    params: Bm25f,
    boost: Score,
}

impl Bm25fTermQuery {
    /// The word as a term of the title and of the text (which holds the title too), its
    /// score multiplied by `boost`.
    pub(crate) fn new(title: Term, text: Term, params: Bm25f, boost: Score) -> Self {
        Self {
            title,
            text,
            params,
            boost,
        }
    }
}

impl Query for Bm25fTermQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.bm25f_weight(scoring)?))
    }

    fn query_terms<'a>(&'a self, visitor: &mut dyn FnMut(&'a Term, bool)) {
        visitor(&self.title, false);
        visitor(&self.text, false);
    }
}

impl Bm25fTermQuery {
    /// The word's weight over the index `scoring` describes.
    pub(crate) fn bm25f_weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Bm25fWeight> {
        let EnableScoring::Enabled {
            statistics_provider: statistics,
            ..
        } = scoring
        else {
            return Err(TantivyError::InvalidArgument(
                "BM25F needs scoring enabled".into(),
            ));
        };
        let documents = statistics.total_num_docs()?;
        // The text holds the title: its document frequency is the word's over both fields.
        let frequency = statistics.doc_freq(&self.text)?.min(documents);
        let odds = ((documents - frequency) as Score + 0.5) / (frequency as Score + 0.5);
        let idf = (1.0 + odds).ln();
        // `scale / (1 - b + b * length / mean length)` per length code: a frequency is
        // multiplied by it (a product, not a quotient, per document scored).
        let norms = |field: Field, scale: Score| -> tantivy::Result<Arc<[Score; 256]>> {
            let tokens = statistics.total_num_tokens(field)?;
            let mean = if documents == 0 {
                1.0
            } else {
                (tokens as Score / documents as Score).max(Score::MIN_POSITIVE)
            };
            let mut norms = [0.0; 256];
            for (code, norm) in norms.iter_mut().enumerate() {
                let length = FieldNormReader::id_to_fieldnorm(code as u8) as Score;
                *norm = scale / (1.0 - self.params.b + self.params.b * length / mean);
            }
            Ok(Arc::new(norms))
        };
        Ok(Bm25fWeight {
            query: self.clone(),
            weight: idf * (self.params.k1 + 1.0) * self.boost,
            title_norms: norms(self.title.field(), self.params.title_weight)?,
            text_norms: norms(self.text.field(), 1.0)?,
        })
    }
}

/// One word's BM25F weight over an index.
pub(crate) struct Bm25fWeight {
    query: Bm25fTermQuery,
    /// `idf * (k1 + 1) * boost`.
    weight: Score,
    /// Per length code, what a title's frequency is multiplied by: the title weight over
    /// `1 - b + b * length / mean length`.
    title_norms: Arc<[Score; 256]>,
    /// Per length code, `1 / (1 - b + b * length / mean length)` of the text.
    text_norms: Arc<[Score; 256]>,
}

impl Bm25fWeight {
    /// No document scores more than this (times the scorer's boost): `frequency /
    /// (frequency + k1)` stays below 1.
    pub(crate) fn bound(&self) -> Score {
        self.weight
    }

    /// The word's scorer over one segment; none when the segment lacks the word.
    pub(crate) fn term_scorer(
        &self,
        reader: &SegmentReader,
        boost: Score,
    ) -> tantivy::Result<Option<Bm25fScorer>> {
        let postings = |term: &Term| -> tantivy::Result<Option<SegmentPostings>> {
            Ok(reader
                .inverted_index(term.field())?
                .read_postings(term, IndexRecordOption::WithFreqs)?)
        };
        // Every document with the word in its title has it in its text: the text's postings
        // list the matches, the title's are read alongside.
        let Some(text) = postings(&self.query.text)? else {
            return Ok(None);
        };
        Ok(Some(Bm25fScorer {
            text,
            title: postings(&self.query.title)?,
            text_lengths: reader.get_fieldnorms_reader(self.query.text.field())?,
            title_lengths: reader.get_fieldnorms_reader(self.query.title.field())?,
            weight: self.weight * boost,
            k1: self.query.params.k1,
            title_norms: Arc::clone(&self.title_norms),
            text_norms: Arc::clone(&self.text_norms),
        }))
    }
}

impl Weight for Bm25fWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        Ok(match self.term_scorer(reader, boost)? {
            Some(scorer) => Box::new(scorer),
            None => Box::new(EmptyScorer),
        })
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        let mut scorer = self.scorer(reader, 1.0)?;
        if scorer.doc() > doc || scorer.seek(doc) != doc {
            return Err(TantivyError::InvalidArgument(format!(
                "document #{doc} does not match"
            )));
        }
        Ok(Explanation::new(
            "BM25F over title and text",
            scorer.score(),
        ))
    }
}

/// One word's BM25F scores over the documents of a segment that hold it.
pub(crate) struct Bm25fScorer {
    text: SegmentPostings,
    title: Option<SegmentPostings>,
    text_lengths: FieldNormReader,
    title_lengths: FieldNormReader,
    weight: Score,
    k1: Score,
    /// As [`Bm25fWeight`]'s: the title weight over the length normalisation, per length code.
    title_norms: Arc<[Score; 256]>,
    /// As [`Bm25fWeight`]'s: one over the length normalisation, per length code.
    text_norms: Arc<[Score; 256]>,
}

impl DocSet for Bm25fScorer {
    fn advance(&mut self) -> DocId {
        self.text.advance()
    }

    fn seek(&mut self, target: DocId) -> DocId {
        self.text.seek(target)
    }

    fn doc(&self) -> DocId {
        self.text.doc()
    }

    fn size_hint(&self) -> u32 {
        self.text.size_hint()
    }
}

impl Scorer for Bm25fScorer {
    fn score(&mut self) -> Score {
        let doc = self.text.doc();
        let text_norm = self.text_norms[usize::from(self.text_lengths.fieldnorm_id(doc))];
        let mut frequency = self.text.term_freq() as Score * text_norm;
        if let Some(title) = &mut self.title {
            if title.doc() < doc {
                title.seek(doc);
            }
            if title.doc() == doc {
                let norm = self.title_norms[usize::from(self.title_lengths.fieldnorm_id(doc))];
                frequency += title.term_freq() as Score * norm;
            }
        }
        self.weight * frequency / (frequency + self.k1)
    }
}

impl fmt::Debug for Bm25fScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bm25fScorer")
            .field("doc", &self.text.doc())
            .finish()
    }
}
