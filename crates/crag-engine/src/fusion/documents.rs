//! A fusion of documents: each leg keeps a document's best hit, and a document's two legs
//! are fused as one hit.

use std::collections::{HashMap, HashSet};

use crag_core::{Chunk, DocumentId, ScoredChunk, ScoredId};

/// The document a chunk id names (`<document>#<ordinal>`, [`ChunkId::for_document`]), or
/// the whole id when it names none.
///
/// [`ChunkId::for_document`]: crag_core::ChunkId::for_document
pub fn document_of(chunk_id: &str) -> &str {
    chunk_id
        .rsplit_once('#')
        .map_or(chunk_id, |(document, _)| document)
}

/// A ranking of chunk ids cut to its first `k` documents, each at its first (best) chunk: the
/// vector leg's depth counted in documents when documents are ranked, so that a leg of `k`
/// chunks holding several chunks of one document does not give fewer than `k` documents.
pub fn first_per_document(ids: Vec<ScoredId>, k: usize) -> Vec<ScoredId> {
    let mut seen = HashSet::new();
    ids.into_iter()
        .filter(|h| seen.insert(document_of(h.id.as_str()).to_owned()))
        .take(k)
        .collect()
}

/// One leg's ids and scores, best first.
type Leg<'a> = Vec<(&'a str, f32)>;

/// Both legs' ids per document, for a fusion of documents: each leg keeps a document's first
/// (best) hit, and a document both legs found is shown as the vector leg's best chunk of it,
/// so that [`fuse_ids`](crate::fuse_ids) adds the document's two legs under one id. The vector
/// leg's chunk is the passage closest in meaning to the query; the keyword leg's best chunk
/// (of its chunk ranking) shows a document only it found. Chosen on SciFact train and
/// Cranfield (docs/benchmarks.md, "The chunk that shows a document"). Returns the keyword leg
/// and the vector leg.
pub fn per_document_ids<'a>(keyword: &[(&'a str, f32)], vector: Leg<'a>) -> (Leg<'a>, Leg<'a>) {
    let mut seen = HashSet::new();
    let vector: Leg<'a> = vector
        .into_iter()
        .filter(|(id, _)| seen.insert(document_of(id)))
        .collect();
    let shown: HashMap<&str, &'a str> = vector
        .iter()
        .map(|&(id, _)| (document_of(id), id))
        .collect();
    let mut seen = HashSet::new();
    let keyword = keyword
        .iter()
        .filter(|(id, _)| seen.insert(document_of(id)))
        .map(|&(id, score)| (shown.get(document_of(id)).copied().unwrap_or(id), score))
        .collect();
    (keyword, vector)
}

/// [`per_document_ids`] over whole hits: each leg keeps a document's best hit, a keyword hit
/// shown as the vector leg's chunk of its document when there is one.
pub fn per_document(
    keyword: Vec<ScoredChunk>,
    vector: Vec<ScoredChunk>,
) -> (Vec<ScoredChunk>, Vec<ScoredChunk>) {
    let mut seen = HashSet::new();
    let vector: Vec<ScoredChunk> = vector
        .into_iter()
        .filter(|h| seen.insert(h.chunk.document_id.clone()))
        .collect();
    let shown: HashMap<&DocumentId, &Chunk> = vector
        .iter()
        .map(|h| (&h.chunk.document_id, &h.chunk))
        .collect();
    let mut seen = HashSet::new();
    let keyword = keyword
        .into_iter()
        .filter(|h| seen.insert(h.chunk.document_id.clone()))
        .map(|h| match shown.get(&h.chunk.document_id) {
            Some(chunk) => ScoredChunk {
                chunk: (*chunk).clone(),
                score: h.score,
            },
            None => h,
        })
        .collect();
    (keyword, vector)
}

#[cfg(test)]
mod tests {
    use crag_ports::testsuite::chunk;

    use super::*;
    use crate::fusion::{fuse_ids, Fusion};

    #[test]
    fn first_per_document_counts_documents() {
        let id = |s: &str, score: f32| ScoredId {
            id: crag_core::ChunkId::new(s).unwrap(),
            score,
        };
        let ids = vec![
            id("a#0", 0.9),
            id("a#1", 0.8),
            id("b#2", 0.7),
            id("a#2", 0.6),
            id("c#0", 0.5),
            id("d#0", 0.4),
        ];
        let kept: Vec<String> = first_per_document(ids, 3)
            .into_iter()
            .map(|h| h.id.to_string())
            .collect();
        assert_eq!(kept, ["a#0", "b#2", "c#0"]);
    }

    #[test]
    fn a_chunk_id_names_its_document() {
        assert_eq!(document_of("docs/a.md#3"), "docs/a.md");
        assert_eq!(document_of("a#b.md#0"), "a#b.md");
        assert_eq!(document_of("plain"), "plain");
    }

    #[test]
    fn per_document_a_documents_two_legs_add_up_under_the_vector_legs_chunk() {
        // d1's best vector chunk is #2, the keyword leg's is #0: fused as one hit shown as #2;
        // d2's vector chunk #1 shows it; d4, only a keyword hit, keeps its keyword chunk.
        let keyword = [("d1#0", 5.0), ("d1#1", 4.5), ("d2#0", 4.0), ("d4#3", 2.0)];
        let vector = vec![("d1#2", 0.9), ("d3#0", 0.8), ("d1#0", 0.7), ("d2#1", 0.1)];
        let (keyword, vector) = per_document_ids(&keyword, vector);
        assert_eq!(keyword, [("d1#2", 5.0), ("d2#1", 4.0), ("d4#3", 2.0)]);
        assert_eq!(vector, [("d1#2", 0.9), ("d3#0", 0.8), ("d2#1", 0.1)]);
        let fused = fuse_ids(
            &keyword,
            &vector,
            Fusion::Convex {
                keyword_weight: 0.5,
            },
            10,
        );
        let ids: Vec<&str> = fused.iter().map(|f| f.id).collect();
        assert_eq!(ids, ["d1#2", "d3#0", "d2#1", "d4#3"]);
        assert!(fused[0].keyword.is_some() && fused[0].vector.is_some());
    }

    #[test]
    fn per_document_over_whole_hits_shows_the_vector_legs_chunk() {
        let hit = |doc: &str, ordinal: usize, score: f32| ScoredChunk {
            chunk: chunk(doc, ordinal, "t", &format!("{doc} {ordinal}")),
            score,
        };
        let (keyword, vector) = per_document(
            vec![hit("d1", 0, 5.0), hit("d1", 1, 4.0), hit("d2", 0, 3.0)],
            vec![hit("d1", 2, 0.9), hit("d3", 0, 0.8), hit("d1", 0, 0.7)],
        );
        let ids = |hits: &[ScoredChunk]| -> Vec<String> {
            hits.iter().map(|h| h.chunk.id.to_string()).collect()
        };
        assert_eq!(ids(&keyword), ["d1#2", "d2#0"]);
        assert_eq!(ids(&vector), ["d1#2", "d3#0"]);
        // The keyword leg keeps its score, the chunk (and its text) is the vector leg's.
        assert_eq!(keyword[0].score, 5.0);
        assert_eq!(keyword[0].chunk.text, "d1 2");
        assert_eq!(vector[0].score, 0.9);
    }
}
