//! The keyword index's whole documents: keeping their rows beside the chunks, and answering a
//! document ranking with each document's best chunk.

use std::collections::{HashMap, HashSet};

use crag_core::{Chunk, ChunkId, DocumentId, ScoredChunk};
use crag_ports::PortResult;
use tantivy::{Score, TantivyDocument};

use super::Inner;
use crate::documents::{rows_of, DocumentRow};
use crate::error::{io_error, port_error};

impl Inner {
    /// Writes the document rows of an index that has chunks but none (one written before
    /// documents were ranked whole, or whose rows were removed): read from the stored chunks.
    pub(super) fn fill_documents(&self) -> PortResult<()> {
        const MESSAGE: &str = "failed to rebuild the keyword index's documents";
        if self.documents.count() > 0 || self.count() == 0 {
            return Ok(());
        }
        let searcher = self.reader.searcher();
        let mut chunks = Vec::new();
        for segment in searcher.segment_readers() {
            let store = segment.get_store_reader(1).map_err(io_error(MESSAGE))?;
            for doc in store.iter::<TantivyDocument>(segment.alive_bitset()) {
                chunks.push(self.fields.chunk_of(&doc.map_err(port_error(MESSAGE))?)?);
            }
        }
        let rows = rows_of(&chunks);
        self.documents.write(&[], &rows)?;
        tracing::info!(
            path = %self.path.display(),
            documents = rows.len(),
            "keyword index: whole documents written from the stored chunks"
        );
        Ok(())
    }

    /// The rows of the documents of `chunks` once they are written: their stored chunks
    /// (those of `replaced` documents left out) with `chunks` in place of the same ids.
    pub(super) fn rows_with_stored(
        &self,
        chunks: &[Chunk],
        replaced: &[DocumentId],
    ) -> PortResult<Vec<DocumentRow>> {
        let replaced: HashSet<&DocumentId> = replaced.iter().collect();
        let new: HashSet<&ChunkId> = chunks.iter().map(|c| &c.id).collect();
        let kept: HashSet<&DocumentId> = chunks
            .iter()
            .map(|c| &c.document_id)
            .filter(|d| !replaced.contains(d))
            .collect();
        let terms = kept.iter().map(|d| self.fields.document_term(d)).collect();
        let stored: Vec<Chunk> = self
            .chunks_matching(terms)?
            .into_iter()
            .filter(|c| !new.contains(&c.id))
            .collect();
        Ok(rows_of(stored.iter().chain(chunks)))
    }

    /// The documents of a ranking, each as its best chunk of the chunk ranking `chunks` (or
    /// its first chunk when that ranking does not hold one), scored with the document's
    /// score. A document whose chunks are not stored is left out.
    pub(super) fn best_chunks(
        &self,
        ranked: Vec<(DocumentId, Score)>,
        chunks: Vec<ScoredChunk>,
    ) -> PortResult<Vec<ScoredChunk>> {
        let mut best: HashMap<DocumentId, Chunk> = HashMap::new();
        for hit in chunks {
            best.entry(hit.chunk.document_id.clone())
                .or_insert(hit.chunk);
        }
        let first: Vec<ChunkId> = ranked
            .iter()
            .filter(|(d, _)| !best.contains_key(d))
            .map(|(d, _)| ChunkId::for_document(d, 0))
            .collect();
        if !first.is_empty() {
            for chunk in self.get(&first)? {
                best.entry(chunk.document_id.clone()).or_insert(chunk);
            }
        }
        Ok(ranked
            .into_iter()
            .filter_map(|(document, score)| {
                let chunk = match best.remove(&document) {
                    Some(chunk) => chunk,
                    // No chunk numbered 0 (or not stored): its first stored chunk.
                    None => self.document_chunks(&document).ok()?.into_iter().next()?,
                };
                Some(ScoredChunk { chunk, score })
            })
            .collect())
    }
}
