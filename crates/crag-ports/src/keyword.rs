use std::collections::{BTreeMap, HashSet};
use std::fmt::Debug;

use async_trait::async_trait;
use crag_core::{
    Chunk, ChunkId, DocumentId, Metadata, MetadataFilter, ScoredChunk, ValueKind, WeightedTerm,
};

use crate::metadata::{metadata_fields_of, FIRST_DEPTH};
use crate::PortResult;

/// A document known to an index, with the content hash it was indexed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentEntry {
    /// The document.
    pub id: DocumentId,
    /// Content hash of the document when its chunks were written.
    pub content_hash: String,
    /// Number of chunks stored for it.
    pub chunks: usize,
}

/// Builds the [`DocumentEntry`] list of an index from its stored chunks, one rule for every
/// adapter (the keyword and vector listings are compared by `Engine::reconcile`): each
/// document once, ordered by id, with its number of chunks and the content hash of its chunk
/// with the lowest id.
#[derive(Debug, Default)]
pub struct DocumentEntries {
    documents: BTreeMap<DocumentId, (ChunkId, DocumentEntry)>,
}

impl DocumentEntries {
    /// Counts one stored chunk.
    pub fn add(&mut self, document: &DocumentId, chunk: &ChunkId, content_hash: &str) {
        match self.documents.get_mut(document) {
            Some((first, entry)) => {
                entry.chunks += 1;
                if chunk < first {
                    first.clone_from(chunk);
                    content_hash.clone_into(&mut entry.content_hash);
                }
            }
            None => {
                let entry = DocumentEntry {
                    id: document.clone(),
                    content_hash: content_hash.to_owned(),
                    chunks: 1,
                };
                self.documents
                    .insert(document.clone(), (chunk.clone(), entry));
            }
        }
    }

    /// The entries, ordered by document id.
    pub fn into_entries(self) -> Vec<DocumentEntry> {
        self.documents
            .into_values()
            .map(|(_, entry)| entry)
            .collect()
    }
}

/// How many chunks per document wanted a document ranking reads of a chunk ranking.
pub const DOCUMENT_OVERFETCH: usize = 4;

/// Keeps the first hit of each document of a ranking, at most `k`: each document's best
/// chunk when `hits` are best first.
pub fn best_chunk_per_document(hits: Vec<ScoredChunk>, k: usize) -> Vec<ScoredChunk> {
    let mut seen = HashSet::new();
    hits.into_iter()
        .filter(|h| seen.insert(h.chunk.document_id.clone()))
        .take(k)
        .collect()
}

/// What a keyword search looks for.
#[derive(Debug, Clone, Copy)]
pub enum KeywordQuery<'a> {
    /// Free user text, as [`KeywordIndex::search`] takes it.
    Text(&'a str),
    /// Weighted index terms, as [`KeywordIndex::search_terms`] takes them.
    Terms(&'a [WeightedTerm]),
}

/// Full-text index ranking chunks by BM25.
#[async_trait]
pub trait KeywordIndex: Debug + Send + Sync + 'static {
    /// Inserts chunks, replacing any stored chunk with the same id; durable when it returns.
    async fn upsert(&self, chunks: &[Chunk]) -> PortResult<()>;

    /// Removes every chunk of the `replaced` documents and inserts `chunks`, as one write
    /// where the index can (Tantivy: one commit), so that a failure leaves the old chunks in
    /// place. The default deletes, then upserts.
    async fn replace_documents(&self, replaced: &[DocumentId], chunks: &[Chunk]) -> PortResult<()> {
        self.delete_documents(replaced).await?;
        self.upsert(chunks).await
    }

    /// Removes every chunk of the given documents; durable when it returns.
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()>;

    /// Returns the best `k` chunks for free user text, best first.
    ///
    /// Any text is valid: syntax characters are taken literally; a query with no searchable
    /// term yields an empty list, never an error.
    async fn search(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>>;

    /// The index terms of `text` as this index analyses it (tokenised, normalised, stemmed,
    /// stop words removed), in order, duplicates kept: the terms
    /// [`KeywordIndex::search_terms`] takes.
    fn analyze(&self, text: &str) -> Vec<String>;

    /// Returns the best `k` chunks for a weighted query of index terms (already analysed, as
    /// the index stores them), best first: each term scores as in [`KeywordIndex::search`],
    /// multiplied by its weight. Terms the index does not hold, or with a weight that is not
    /// positive and finite, add nothing; no usable term gives an empty list.
    async fn search_terms(&self, terms: &[WeightedTerm], k: usize) -> PortResult<Vec<ScoredChunk>>;

    /// Returns the best `k` documents for free user text, best first, each as one of its
    /// chunks (the one that best matches the query) scored with the document's score. An
    /// index that ranks whole documents (Tantivy: BM25F over the document's title and whole
    /// text) does so; the default keeps each document's best chunk of a chunk ranking
    /// [`DOCUMENT_OVERFETCH`] times deeper.
    async fn search_documents(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>> {
        let chunks = self
            .search(query, k.saturating_mul(DOCUMENT_OVERFETCH))
            .await?;
        Ok(best_chunk_per_document(chunks, k))
    }

    /// [`KeywordIndex::search_documents`] for a weighted query of index terms, as
    /// [`KeywordIndex::search_terms`] takes them.
    async fn search_terms_documents(
        &self,
        terms: &[WeightedTerm],
        k: usize,
    ) -> PortResult<Vec<ScoredChunk>> {
        let chunks = self
            .search_terms(terms, k.saturating_mul(DOCUMENT_OVERFETCH))
            .await?;
        Ok(best_chunk_per_document(chunks, k))
    }

    /// Returns the number of chunks stored.
    async fn count(&self) -> PortResult<usize>;

    /// Tidies storage after writes so that searches stay fast (an index that searches rows
    /// written since its last update the slow way brings them in, merges small files, drops
    /// superseded versions). Every stored chunk, [`KeywordIndex::count`] and every search
    /// result are the same before and after. Called after each ingestion and deletion; the
    /// default does nothing, for indexes that need no such upkeep.
    async fn optimize(&self) -> PortResult<()> {
        Ok(())
    }

    /// In how many stored chunks each index term (analysed, as [`KeywordIndex::analyze`]
    /// gives it) occurs, in the order asked; 0 for a term never stored. The count may be an
    /// estimate (Tantivy: the largest of the title's and the text's counts, deleted chunks
    /// included until segments merge) but is exact for chunks holding the term in one field.
    async fn document_frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>>;

    /// Lists the stored documents with their content hashes.
    async fn documents(&self) -> PortResult<Vec<DocumentEntry>>;

    /// The stored chunks with these ids, in the order asked; ids not stored are left out.
    async fn get(&self, ids: &[ChunkId]) -> PortResult<Vec<Chunk>>;

    /// Which of these chunk ids are stored: a membership test that need not read any text
    /// (the default reads the chunks). The keyword index is the catalogue of what is fully
    /// ingested, so a query keeps a vector hit only if this says its chunk is stored.
    async fn contains(&self, ids: &[ChunkId]) -> PortResult<HashSet<ChunkId>> {
        Ok(self.get(ids).await?.into_iter().map(|c| c.id).collect())
    }

    /// Every stored chunk of `document`, by position (byte start, then chunk id); empty when
    /// the document is not stored.
    async fn document_chunks(&self, document: &DocumentId) -> PortResult<Vec<Chunk>>;

    /// [`KeywordIndex::search`], [`search_terms`](KeywordIndex::search_terms) or, with
    /// `documents`, their document rankings, among the chunks whose metadata passes
    /// `filter` only: the same hits, scores and order as the unfiltered search with the
    /// chunks that do not pass left out, and `k` of them whenever `k` pass and match. An
    /// index filters inside its search (Tantivy: the filter as query clauses); the default
    /// searches ever deeper until `k` pass or the ranking is exhausted.
    async fn search_filtered(
        &self,
        query: KeywordQuery<'_>,
        documents: bool,
        k: usize,
        filter: &MetadataFilter,
    ) -> PortResult<Vec<ScoredChunk>> {
        search_deeper(self, query, documents, k, filter).await
    }

    /// Every stored document whose metadata passes `filter`, ordered by id. The default reads
    /// each document's first chunk.
    async fn filter_documents(&self, filter: &MetadataFilter) -> PortResult<Vec<DocumentId>> {
        documents_passing(self, filter).await
    }

    /// The metadata fields the stored chunks hold (paths of keys joined by `.`, objects'
    /// paths included), each with the kinds of value it holds; checked against a filter
    /// before it runs. The default reads each document's first chunk.
    async fn metadata_fields(&self) -> PortResult<BTreeMap<String, Vec<ValueKind>>> {
        fields_of_documents(self).await
    }
}

// The default methods' metadata filtering: search ever deeper, filter what is read.

pub(crate) async fn search_deeper<K: KeywordIndex + ?Sized>(
    index: &K,
    query: KeywordQuery<'_>,
    documents: bool,
    k: usize,
    filter: &MetadataFilter,
) -> PortResult<Vec<ScoredChunk>> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let mut depth = k.saturating_mul(FIRST_DEPTH);
    loop {
        let hits = match (query, documents) {
            (KeywordQuery::Text(text), false) => index.search(text, depth).await?,
            (KeywordQuery::Text(text), true) => index.search_documents(text, depth).await?,
            (KeywordQuery::Terms(terms), false) => index.search_terms(terms, depth).await?,
            (KeywordQuery::Terms(terms), true) => {
                index.search_terms_documents(terms, depth).await?
            }
        };
        let exhausted = hits.len() < depth || depth == usize::MAX;
        let kept: Vec<ScoredChunk> = hits
            .into_iter()
            .filter(|h| filter.matches(&h.chunk.metadata))
            .take(k)
            .collect();
        if kept.len() >= k || exhausted {
            return Ok(kept);
        }
        depth = depth.saturating_mul(FIRST_DEPTH);
    }
}

/// Each stored document's metadata (its first chunk's), ordered by id.
async fn metadata_by_document<K: KeywordIndex + ?Sized>(
    index: &K,
) -> PortResult<Vec<(DocumentId, Metadata)>> {
    let mut out = Vec::new();
    for entry in index.documents().await? {
        if let Some(first) = index.document_chunks(&entry.id).await?.into_iter().next() {
            out.push((entry.id, first.metadata));
        }
    }
    Ok(out)
}

pub(crate) async fn documents_passing<K: KeywordIndex + ?Sized>(
    index: &K,
    filter: &MetadataFilter,
) -> PortResult<Vec<DocumentId>> {
    Ok(metadata_by_document(index)
        .await?
        .into_iter()
        .filter(|(_, metadata)| filter.matches(metadata))
        .map(|(id, _)| id)
        .collect())
}

pub(crate) async fn fields_of_documents<K: KeywordIndex + ?Sized>(
    index: &K,
) -> PortResult<BTreeMap<String, Vec<ValueKind>>> {
    let mut fields = BTreeMap::new();
    for (_, metadata) in metadata_by_document(index).await? {
        metadata_fields_of(&metadata, &mut fields);
    }
    Ok(fields)
}
