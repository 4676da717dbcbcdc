//! The keyword index's searches: BM25 queries of text or weighted terms over the chunks, a
//! metadata filter as clauses ANDed with them, and the document ranking's entry point.

use std::collections::HashMap;

use crag_core::{DocumentId, MetadataFilter, ScoredChunk, WeightedTerm};
use crag_ports::{ErrorKind, KeywordQuery, PortError, PortResult};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query};
use tantivy::{DocAddress, Score, TantivyDocument, Term};

use super::{lookup, Inner, TantivyKeywordIndex};
use crate::error::port_error;
use crate::filter;
use crate::top::top_with_ties;

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
            if !documents {
                return match &text {
                    Some(text) => inner.search(text, k, filter),
                    None => inner.search_terms(&terms, k, filter),
                };
            }
            let words: Vec<(String, f32)> = match &text {
                Some(text) => inner.documents.query_words(text),
                None => terms.iter().map(|t| (t.term.clone(), t.weight)).collect(),
            };
            let ranked = inner
                .documents
                .search(&words, k, inner.bm25.documents(), filter)?;
            // Each ranked document's best chunk: the chunk query scored at their chunks alone
            // (the filter passed them already), however many other chunks match.
            let query = match &text {
                Some(text) => inner.text_query(text),
                None => inner.terms_query(&terms),
            };
            let chunks = match query {
                Some(query) if !ranked.is_empty() => {
                    inner.best_chunk_of_each(query.as_ref(), ranked.iter().map(|(d, _)| d))?
                }
                _ => Vec::new(),
            };
            inner.best_chunks(ranked, chunks)
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
        match self.text_query(query) {
            Some(query) => self.run_query(query, k, filter),
            None => Ok(Vec::new()),
        }
    }

    /// A weighted query of index terms: each term searched in title and body, its BM25
    /// score multiplied by its weight.
    pub(super) fn search_terms(
        &self,
        terms: &[WeightedTerm],
        k: usize,
        filter: Option<&MetadataFilter>,
    ) -> PortResult<Vec<ScoredChunk>> {
        match self.terms_query(terms) {
            Some(query) => self.run_query(query, k, filter),
            None => Ok(Vec::new()),
        }
    }

    /// The chunk query of analysed `text`; none when no term is left.
    fn text_query(&self, text: &str) -> Option<Box<dyn Query>> {
        let clauses: Vec<_> = self
            .fields
            .query_terms(&self.analyzer, text)
            .into_iter()
            .filter_map(|term| Some((Occur::Should, self.field_query(term)?)))
            .collect();
        (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
    }

    /// The chunk query of weighted index terms; none when no term is left.
    fn terms_query(&self, terms: &[WeightedTerm]) -> Option<Box<dyn Query>> {
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
        (!clauses.is_empty()).then(|| Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>)
    }

    /// The best chunk of each of `documents` for `query`: its highest score (equal scores by
    /// chunk id), as a search for `query` scores it. A document none of whose chunks
    /// `query` matches is left out.
    fn best_chunk_of_each<'a>(
        &self,
        query: &dyn Query,
        documents: impl Iterator<Item = &'a DocumentId>,
    ) -> PortResult<Vec<ScoredChunk>> {
        const MESSAGE: &str = "failed to search keyword index";
        let searcher = self.reader.searcher();
        let terms: Vec<Term> = documents.map(|d| self.fields.document_term(d)).collect();
        let rows = lookup::rows_with_terms(&searcher, &terms).map_err(port_error(MESSAGE))?;
        let scored = lookup::scores_at(&searcher, query, &rows).map_err(port_error(MESSAGE))?;
        // Per document (the index of its term), its best score and the rows scoring it.
        let mut best: HashMap<usize, (Score, Vec<DocAddress>)> = HashMap::new();
        for (score, (address, document)) in scored {
            let (top, rows) = best.entry(document).or_insert((score, Vec::new()));
            if score > *top {
                *top = score;
                rows.clear();
            }
            if score == *top {
                rows.push(address);
            }
        }
        let mut chunks = Vec::with_capacity(best.len());
        for (score, rows) in best.into_values() {
            let mut tied = Vec::with_capacity(rows.len());
            for address in rows {
                let doc: TantivyDocument = searcher.doc(address).map_err(port_error(MESSAGE))?;
                tied.push(self.fields.chunk_of(&doc)?);
            }
            if let Some(chunk) = tied.into_iter().min_by(|a, b| a.id.cmp(&b.id)) {
                chunks.push(ScoredChunk { chunk, score });
            }
        }
        Ok(chunks)
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
