//! The key terms of prose chunks for the knowledge graph, written at ingest and filled in for
//! documents ingested before the graph was switched on. The scoring is pure
//! (`crag_expansion::term_graph::key_terms`); this module reads the keyword index and writes the
//! term graph.

use std::collections::{HashMap, HashSet};

use crag_core::{Chunk, ChunkKind, ChunkTerms, DocumentId};
use crag_expansion::term_graph::key_terms;
use crag_expansion::GraphConfig;
use crag_ports::{KeywordIndex, TermGraph};

use crate::error::Result;

/// Documents whose terms are written per call when filling in the graph.
const FILL_BATCH: usize = 64;

/// The text a chunk's key terms are taken from: its title and text, as BM25 indexes them.
fn indexed_text(chunk: &Chunk) -> String {
    format!("{}\n{}", chunk.title, chunk.text)
}

/// The key terms of `chunks` (prose and web text; code chunks are stored without terms, the
/// symbol graph covers code). Document frequencies are the keyword index's plus this batch's,
/// so a batch not yet in the index is weighed against itself too.
pub(crate) async fn chunk_terms(
    keywords: &dyn KeywordIndex,
    chunks: &[Chunk],
    config: &GraphConfig,
) -> Result<Vec<ChunkTerms>> {
    let tokens: Vec<Vec<String>> = chunks
        .iter()
        .map(|c| match c.kind {
            ChunkKind::Code => Vec::new(),
            _ => keywords.analyze(&indexed_text(c)),
        })
        .collect();
    let mut batch_df: HashMap<&str, u64> = HashMap::new();
    for t in &tokens {
        let distinct: HashSet<&str> = t.iter().map(String::as_str).collect();
        for term in distinct {
            *batch_df.entry(term).or_default() += 1;
        }
    }
    let mut vocabulary: Vec<String> = batch_df.keys().map(|t| (*t).to_owned()).collect();
    vocabulary.sort_unstable();
    let stored = keywords.document_frequencies(&vocabulary).await?;
    let df: HashMap<&str, u64> = vocabulary
        .iter()
        .zip(stored)
        .map(|(t, n)| {
            (
                t.as_str(),
                n + batch_df.get(t.as_str()).copied().unwrap_or(0),
            )
        })
        .collect();
    let total = keywords.count().await? as u64 + chunks.len() as u64;
    Ok(chunks
        .iter()
        .zip(&tokens)
        .map(|(c, t)| ChunkTerms {
            chunk: c.id.clone(),
            document: c.document_id.clone(),
            terms: key_terms(
                t,
                |term| df.get(term).copied().unwrap_or(0),
                total,
                config.terms_per_chunk,
            ),
        })
        .collect())
}

/// Brings the graph in step with the keyword index (the catalogue): documents the graph
/// lacks are read back from the keyword index and their terms written, documents only the
/// graph holds are removed. `skip` are documents about to be (re)written anyway. Returns how
/// many documents were filled in.
pub(crate) async fn fill_in(
    keywords: &dyn KeywordIndex,
    graph: &dyn TermGraph,
    config: &GraphConfig,
    catalogue: &HashSet<DocumentId>,
    skip: &HashSet<DocumentId>,
) -> Result<usize> {
    let held: HashSet<DocumentId> = graph.documents().await?.into_iter().collect();
    let stale: Vec<DocumentId> = held.difference(catalogue).cloned().collect();
    if !stale.is_empty() {
        graph.delete_documents(&stale).await?;
    }
    let mut missing: Vec<&DocumentId> = catalogue
        .iter()
        .filter(|d| !held.contains(*d) && !skip.contains(*d))
        .collect();
    missing.sort();
    for batch in missing.chunks(FILL_BATCH) {
        let mut chunks = Vec::new();
        for document in batch {
            chunks.extend(keywords.document_chunks(document).await?);
        }
        let terms = chunk_terms(keywords, &chunks, config).await?;
        let documents: Vec<DocumentId> = batch.iter().map(|d| (*d).clone()).collect();
        graph.replace_documents(&documents, &terms).await?;
    }
    if !missing.is_empty() {
        tracing::info!(
            documents = missing.len(),
            "term graph filled in from the keyword index"
        );
    }
    Ok(missing.len())
}
