//! Rows found through the postings of their id terms, and a query scored at those rows only:
//! what a term-set query restricting another query does, without building an automaton of
//! the terms and intersecting it with the term dictionary on every call.

use tantivy::query::{EnableScoring, Query};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, DocSet, Score, Searcher, Term, TERMINATED};

/// A live row and the index, in the terms looked up, of the term it holds.
pub(super) type Row = (DocAddress, usize);

/// The live rows holding each of `terms` (untokenised terms, such as ids), in row order; a
/// row holding several of the terms is listed once per term.
pub(super) fn rows_with_terms(searcher: &Searcher, terms: &[Term]) -> tantivy::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (ordinal, segment) in (0u32..).zip(searcher.segment_readers()) {
        let alive = segment.alive_bitset();
        let start = rows.len();
        for (index, term) in terms.iter().enumerate() {
            let postings = segment
                .inverted_index(term.field())?
                .read_postings(term, IndexRecordOption::Basic)?;
            let Some(mut postings) = postings else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    rows.push((DocAddress::new(ordinal, doc), index));
                }
                doc = postings.advance();
            }
        }
        rows[start..].sort_unstable();
    }
    Ok(rows)
}

/// `query`'s score at each of `rows` (in row order, as [`rows_with_terms`] gives them) that
/// it matches, with the row: the score a search for `query` gives the row.
pub(super) fn scores_at(
    searcher: &Searcher,
    query: &dyn Query,
    rows: &[Row],
) -> tantivy::Result<Vec<(Score, Row)>> {
    let weight = query.weight(EnableScoring::enabled_from_searcher(searcher))?;
    let mut scored = Vec::new();
    let mut rest = rows;
    while let Some(&(first, _)) = rest.first() {
        let in_segment = rest
            .iter()
            .take_while(|(a, _)| a.segment_ord == first.segment_ord)
            .count();
        let (segment_rows, after) = rest.split_at(in_segment);
        rest = after;
        let Some(segment) = usize::try_from(first.segment_ord)
            .ok()
            .and_then(|ordinal| searcher.segment_readers().get(ordinal))
        else {
            continue;
        };
        let mut scorer = weight.scorer(segment, 1.0)?;
        for &(address, index) in segment_rows {
            let mut doc = scorer.doc();
            if doc < address.doc_id {
                doc = scorer.seek(address.doc_id);
            }
            if doc == address.doc_id {
                scored.push((scorer.score(), (address, index)));
            }
        }
    }
    Ok(scored)
}
