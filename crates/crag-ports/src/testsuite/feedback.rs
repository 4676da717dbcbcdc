//! Contracts of the pseudo-relevance-feedback methods of the index ports.

use super::ids;
use crate::{EmbeddedChunk, KeywordIndex, VectorIndex};

/// Weighted term queries over [`sample_chunks`]: the index's own analysis gives the terms, a
/// heavier term pulls its chunks up, unusable weights and unknown terms add nothing.
pub(super) async fn weighted_terms_contract(index: &dyn KeywordIndex) {
    use crag_core::WeightedTerm;
    let analyzed = index.analyze("Sourdough ROCKET");
    assert_eq!(analyzed.len(), 2, "two words, two terms: {analyzed:?}");
    let term = |i: usize, weight: f32| WeightedTerm {
        term: analyzed[i].clone(),
        weight,
    };
    let bread_heavy = index
        .search_terms(&[term(0, 3.0), term(1, 1.0)], 10)
        .await
        .expect("search_terms");
    assert_eq!(ids(&bread_heavy), ["bread.md#0", "space.md#0"]);
    let rocket_heavy = index
        .search_terms(&[term(0, 1.0), term(1, 3.0)], 10)
        .await
        .expect("search_terms");
    assert_eq!(ids(&rocket_heavy), ["space.md#0", "bread.md#0"]);
    assert!(
        (bread_heavy[0].score - 3.0 * rocket_heavy[1].score).abs() < 1e-3 * bread_heavy[0].score,
        "a term's score scales with its weight: {} vs 3 x {}",
        bread_heavy[0].score,
        rocket_heavy[1].score
    );
    let unusable = [
        term(0, 0.0),
        term(1, f32::NAN),
        WeightedTerm {
            term: "zzzunknownzzz".into(),
            weight: 1.0,
        },
    ];
    assert!(index
        .search_terms(&unusable, 10)
        .await
        .expect("search_terms")
        .is_empty());
    assert!(index
        .search_terms(&[], 10)
        .await
        .expect("no terms")
        .is_empty());
    assert_eq!(
        index
            .search_terms(&[term(0, 1.0)], 0)
            .await
            .expect("k = 0")
            .len(),
        0
    );
}

/// Stored vectors read back by chunk id, in the order asked, unknown ids left out.
pub(super) async fn stored_vectors_contract(index: &dyn VectorIndex, records: &[EmbeddedChunk]) {
    let unknown = crag_core::ChunkId::new("nowhere.md#0").expect("id");
    let asked = vec![
        records[2].chunk.id.clone(),
        unknown,
        records[0].chunk.id.clone(),
    ];
    let got = index.vectors(&asked).await.expect("vectors");
    assert_eq!(got.len(), 2, "the unknown id is left out");
    assert_eq!(got[0].0, records[2].chunk.id);
    assert_eq!(got[1].0, records[0].chunk.id);
    for ((_, v), r) in got.iter().zip([&records[2], &records[0]]) {
        assert_eq!(v.len(), r.vector.len());
        assert!(
            v.iter().zip(&r.vector).all(|(a, b)| (a - b).abs() < 1e-6),
            "the stored vector comes back as written"
        );
    }
    assert!(index.vectors(&[]).await.expect("no ids").is_empty());
}

/// `document_frequencies` over the sample chunks: chunks holding each term in their title or
/// text, in the order asked, 0 for a term never stored.
pub(super) async fn document_frequencies_contract(index: &dyn KeywordIndex) {
    let terms: Vec<String> = ["bread", "rocket", "sauerkraut"]
        .iter()
        .flat_map(|w| index.analyze(w))
        .collect();
    assert_eq!(terms.len(), 3, "one index term per word: {terms:?}");
    assert_eq!(
        index
            .document_frequencies(&terms)
            .await
            .expect("document_frequencies"),
        vec![2, 1, 0],
        "chunks holding each term (title or text), in the order asked"
    );
    assert!(index
        .document_frequencies(&[])
        .await
        .expect("no terms")
        .is_empty());
}
