//! The keyword index's searches: BM25 queries of text or weighted terms over the chunks, a
//! metadata filter as clauses ANDed with them, and the document ranking's entry point.

use crag_core::{MetadataFilter, ScoredChunk, WeightedTerm};
use crag_ports::{ErrorKind, KeywordQuery, PortError, PortResult, DOCUMENT_OVERFETCH};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query};
use tantivy::{TantivyDocument, Term};

use super::{Inner, TantivyKeywordIndex};
use crate::documents::top_with_ties;
use crate::error::port_error;
use crate::filter;

impl TantivyKeywordIndex {
    /// A ranking of chunks or, with `documents`, of documents (each as its best chunk),
    /// among those `filter` passes.
    pub(super) async fn search_filtered_by(
        &self,
        query: KeywordQuery<'_>,
        documents: bool,
        k: usize,
        filter: Option<&MetadataFilter>,
    ) -> PortResult<Vec<ScoredChunk>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let filter = filter.cloned();
        let (text, terms) = match query {
            KeywordQuery::Text(text) => (Some(text.to_owned()), Vec::new()),
            KeywordQuery::Terms(terms) => (None, terms.to_vec()),
        };
        self.blocking(move |inner| {
            let filter = filter.as_ref();
            let depth = if documents {
                k.saturating_mul(DOCUMENT_OVERFETCH)
            } else {
                k
            };
            let chunks = match &text {
                Some(text) => inner.search(text, depth, filter)?,
                None => inner.search_terms(&terms, depth, filter)?,
            };
            if !documents {
                return Ok(chunks);
            }
            let words: Vec<(String, f32)> = match &text {
                Some(text) => inner.documents.query_words(text),
                None => terms.iter().map(|t| (t.term.clone(), t.weight)).collect(),
            };
            inner.best_chunks(&words, chunks, k, filter)
        })
        .await
    }
}

impl Inner {
    pub(super) fn search(
        &self,
        query: &str,
        k: usize,
        filter: Option<&MetadataFilter>,
    ) -> PortResult<Vec<ScoredChunk>> {
        let terms = self.fields.query_terms(&self.analyzer, query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let clauses = terms
            .into_iter()
            .filter_map(|term| Some((Occur::Should, self.field_query(term)?)))
            .collect();
        self.run_query(Box::new(BooleanQuery::new(clauses)), k, filter)
    }

    /// A weighted query of index terms: each term searched in title and body, its BM25
    /// score multiplied by its weight.
    pub(super) fn search_terms(
        &self,
        terms: &[WeightedTerm],
        k: usize,
        filter: Option<&MetadataFilter>,
    ) -> PortResult<Vec<ScoredChunk>> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .filter(|t| t.weight.is_finite() && t.weight > 0.0 && !t.term.is_empty())
            .flat_map(|t| {
                self.fields.field_terms(&t.term).map(|term| {
                    let q = self.field_query(term)?;
                    let boosted: Box<dyn Query> = Box::new(BoostQuery::new(q, t.weight));
                    Some((Occur::Should, boosted))
                })
            })
            .flatten()
            .collect();
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        self.run_query(Box::new(BooleanQuery::new(clauses)), k, filter)
    }

    /// `term` scored by BM25, a title's by the title weight (none at weight 0).
    fn field_query(&self, term: Term) -> Option<Box<dyn Query>> {
        let weight = self.bm25.title_weight;
        if term.field() != self.fields.title || weight == 1.0 {
            return Some(self.bm25.term_query(term));
        }
        (weight > 0.0).then(|| {
            let query: Box<dyn Query> =
                Box::new(BoostQuery::new(self.bm25.term_query(term), weight));
            query
        })
    }

    /// The best `k` chunks for `query` among those `filter` passes, ties broken by chunk id.
    fn run_query(
        &self,
        query: Box<dyn Query>,
        k: usize,
        filter: Option<&MetadataFilter>,
    ) -> PortResult<Vec<ScoredChunk>> {
        const MESSAGE: &str = "failed to search keyword index";
        let query = match filter {
            None => query,
            Some(_) => filter::restrict(query, self.metadata_field()?, filter),
        };
        let searcher = self.reader.searcher();
        let hits = top_with_ties(&searcher, query.as_ref(), k).map_err(port_error(MESSAGE))?;
        let mut scored = hits
            .into_iter()
            .map(|(score, address)| {
                let doc: TantivyDocument = searcher.doc(address).map_err(port_error(MESSAGE))?;
                let chunk = self.fields.chunk_of(&doc)?;
                Ok(ScoredChunk { chunk, score })
            })
            .collect::<PortResult<Vec<_>>>()?;
        scored.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.chunk.id.cmp(&b.chunk.id))
        });
        scored.truncate(k);
        Ok(scored)
    }

    /// The metadata field, refused for an index from before metadata was stored.
    pub(super) fn metadata_field(&self) -> PortResult<tantivy::schema::Field> {
        self.fields.metadata.ok_or_else(|| {
            PortError::new(
                ErrorKind::InvalidInput,
                "the keyword index was written before metadata was stored: run `crag \
                 reconcile` (or start a server) to upgrade it before filtering on metadata",
            )
        })
    }
}
