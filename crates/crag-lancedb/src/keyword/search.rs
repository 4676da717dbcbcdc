//! Full-text searches of the keyword table: weighted terms as a disjunction of per-column
//! matches, each boosted by its weight (the title's also by the title weight).

use crag_core::{ScoredChunk, WeightedTerm};
use crag_ports::PortResult;
use futures::TryStreamExt;
use lancedb::index::scalar::{BooleanQuery, FtsQuery, FullTextSearchQuery, MatchQuery, Occur};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use super::{rows, LanceKeywordIndex};
use crate::error::map_lance_error;

/// The full-text query of `terms`: for each usable term (non-empty, one token, weight
/// positive and finite) a match on the text with its weight and, when `title_weight` is
/// positive, one on the title weighted by both; `None` when no term is usable.
pub(crate) fn query_of(terms: &[WeightedTerm], title_weight: f32) -> Option<FtsQuery> {
    let mut clauses = Vec::new();
    for t in terms {
        let usable = t.weight.is_finite()
            && t.weight > 0.0
            && !t.term.is_empty()
            && !t.term.chars().any(char::is_whitespace);
        if !usable {
            continue;
        }
        let matching = |column: &str, boost: f32| -> (Occur, FtsQuery) {
            let query = MatchQuery::new(t.term.clone())
                .with_column(Some(column.to_owned()))
                .with_boost(boost);
            (Occur::Should, FtsQuery::Match(query))
        };
        clauses.push(matching(rows::TEXT_TERMS, t.weight));
        if title_weight > 0.0 {
            clauses.push(matching(rows::TITLE_TERMS, t.weight * title_weight));
        }
    }
    (!clauses.is_empty()).then(|| FtsQuery::Boolean(BooleanQuery::new(clauses)))
}

impl LanceKeywordIndex {
    /// The best `k` chunks for `terms`, best first; ties by chunk id.
    pub(crate) async fn ranked(
        &self,
        terms: &[WeightedTerm],
        k: usize,
    ) -> PortResult<Vec<ScoredChunk>> {
        let Some(query) = query_of(terms, self.title_weight) else {
            return Ok(Vec::new());
        };
        if k == 0 || !self.ensure_index().await? {
            return Ok(Vec::new());
        }
        let batches = self
            .full_text(query, k, &[rows::CHUNK, rows::SCORE])
            .await?;
        let mut hits = Vec::new();
        for batch in &batches {
            for (chunk, score) in rows::read_chunks(batch, true)? {
                if score.is_finite() && score > 0.0 {
                    hits.push(ScoredChunk { chunk, score });
                }
            }
        }
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.chunk.id.cmp(&b.chunk.id))
        });
        hits.truncate(k);
        Ok(hits)
    }

    /// In how many chunks `term` occurs, in the title or the text: every match counted.
    pub(crate) async fn frequency(&self, term: &str) -> PortResult<u64> {
        let Some(query) = query_of(
            &[WeightedTerm {
                term: term.to_owned(),
                weight: 1.0,
            }],
            1.0,
        ) else {
            return Ok(0);
        };
        if !self.ensure_index().await? {
            return Ok(0);
        }
        let stored = crag_ports::KeywordIndex::count(self).await?.max(1);
        let batches = self
            .full_text(query, stored, &[rows::CHUNK_ID, rows::SCORE])
            .await?;
        Ok(batches.iter().map(|b| b.num_rows() as u64).sum())
    }

    /// The best `limit` rows for `query`, `columns` read.
    async fn full_text(
        &self,
        query: FtsQuery,
        limit: usize,
        columns: &[&str],
    ) -> PortResult<Vec<arrow_array::RecordBatch>> {
        let fts_limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.table
            .query()
            .full_text_search(FullTextSearchQuery::new_query(query).limit(Some(fts_limit)))
            .select(Select::columns(columns))
            .limit(limit)
            .execute()
            .await
            .map_err(map_lance_error("full-text search failed"))?
            .try_collect()
            .await
            .map_err(map_lance_error("full-text search failed"))
    }
}
