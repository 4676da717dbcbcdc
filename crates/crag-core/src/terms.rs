//! The knowledge graph of prose: the key terms of each chunk, whose co-occurrences form a
//! graph of terms.

use crate::{ChunkId, DocumentId};

/// The key terms of one chunk, in the keyword index's analysed form (lowercased, stemmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkTerms {
    /// The chunk.
    pub chunk: ChunkId,
    /// Its document.
    pub document: DocumentId,
    /// Its key terms; duplicates count once.
    pub terms: Vec<String>,
}

/// A term that shares chunks with another one: an edge of the term graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermNeighbour {
    /// The neighbouring term.
    pub term: String,
    /// In how many chunks both terms are key terms.
    pub together: u64,
    /// In how many chunks the neighbouring term is a key term.
    pub frequency: u64,
}
