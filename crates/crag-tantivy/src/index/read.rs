//! The keyword index's reads that are not searches: term statistics, membership, listing.

use std::collections::HashSet;

use crag_core::ChunkId;
use crag_ports::{DocumentEntries, DocumentEntry, PortResult};
use tantivy::TantivyDocument;

use super::{lookup, Inner, STORE_CACHE_BLOCKS};
use crate::error::{io_error, port_error};

impl Inner {
    /// Per term, the larger of its title and text document frequencies.
    pub(super) fn document_frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        let searcher = self.reader.searcher();
        terms
            .iter()
            .map(|t| {
                let mut most = 0;
                for term in self.fields.field_terms(t) {
                    let n = searcher
                        .doc_freq(&term)
                        .map_err(port_error("failed to read term frequencies"))?;
                    most = most.max(n);
                }
                Ok(most)
            })
            .collect()
    }

    /// The ids' postings and the live-document bitsets, no stored text read.
    pub(super) fn contains(&self, ids: &[ChunkId]) -> PortResult<HashSet<ChunkId>> {
        let searcher = self.reader.searcher();
        let terms: Vec<_> = ids.iter().map(|id| self.fields.chunk_term(id)).collect();
        let rows = lookup::rows_with_terms(&searcher, &terms)
            .map_err(port_error("failed to look chunk ids up"))?;
        Ok(rows.into_iter().map(|(_, i)| ids[i].clone()).collect())
    }

    pub(super) fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        const MESSAGE: &str = "failed to list keyword index documents";
        let mut entries = DocumentEntries::default();
        let searcher = self.reader.searcher();
        for segment in searcher.segment_readers() {
            let store = segment
                .get_store_reader(STORE_CACHE_BLOCKS)
                .map_err(io_error(MESSAGE))?;
            for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
                let doc = doc.map_err(port_error(MESSAGE))?;
                let chunk_id = self.fields.chunk_id(&doc)?;
                let content_hash = self.fields.content_hash(&doc)?;
                let document_id = self.fields.document_id(&doc)?;
                entries.add(&document_id, &chunk_id, content_hash);
            }
        }
        Ok(entries.into_entries())
    }
}
