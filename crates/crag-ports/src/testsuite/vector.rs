//! The vector-index contract.

use std::collections::{HashMap, HashSet};

use crag_core::{ChunkId, DocumentId, ScoredId};

use super::feedback::stored_vectors_contract;
use super::sample_chunks;
use crate::{DocumentEntry, EmbeddedChunk, Embedder, VectorIndex};

/// A search restricted to some documents is the unrestricted ranking with the other
/// documents' chunks taken away, `k` whenever `k` are stored.
async fn nearest_within_contract(index: &dyn VectorIndex, records: &[EmbeddedChunk]) {
    let document_of: HashMap<&ChunkId, &DocumentId> = records
        .iter()
        .map(|r| (&r.chunk.id, &r.chunk.document_id))
        .collect();
    let sets: [&[&str]; 4] = [
        &["bread.md"],
        &["rust.md", "space.md"],
        &["nowhere.md"],
        &[],
    ];
    for record in records {
        let all = index
            .nearest_ids(&record.vector, records.len())
            .await
            .expect("nearest");
        for set in sets {
            let within: HashSet<DocumentId> = set
                .iter()
                .map(|d| DocumentId::new(*d).expect("id"))
                .collect();
            let expected: Vec<&ScoredId> = all
                .iter()
                .filter(|h| within.contains(document_of[&h.id]))
                .collect();
            for k in [1, 2, records.len()] {
                let got = index
                    .nearest_ids_within(&record.vector, k, &within)
                    .await
                    .expect("nearest within");
                let want = &expected[..k.min(expected.len())];
                let ids: Vec<&str> = got.iter().map(|h| h.id.as_str()).collect();
                let wanted: Vec<&str> = want.iter().map(|h| h.id.as_str()).collect();
                assert_eq!(ids, wanted, "nearest {k} within {set:?}");
                for (g, w) in got.iter().zip(want) {
                    assert!((g.score - w.score).abs() < 1e-4, "score of {} moved", g.id);
                }
            }
        }
    }
}

/// Runs the vector-index contract against an empty `index`, embedding with `embedder`.
pub async fn vector_index_suite(index: &dyn VectorIndex, embedder: &dyn Embedder) {
    assert_eq!(index.dimension(), embedder.dimension());
    assert_eq!(
        index.count().await.expect("count"),
        0,
        "index must start empty"
    );
    let probe = embedder
        .embed(&["anything".to_owned()])
        .await
        .expect("embed");
    assert!(index
        .nearest(&probe[0], 5)
        .await
        .expect("nearest on empty")
        .is_empty());
    assert!(index.documents().await.expect("documents").is_empty());

    let chunks = sample_chunks();
    let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
    let vectors = embedder.embed(&texts).await.expect("embed");
    let records: Vec<EmbeddedChunk> = chunks
        .iter()
        .cloned()
        .zip(vectors.iter().cloned())
        .map(|(chunk, vector)| EmbeddedChunk { chunk, vector })
        .collect();
    index.upsert(&records).await.expect("upsert");
    assert_eq!(index.count().await.expect("count"), chunks.len());
    stored_vectors_contract(index, &records).await;
    nearest_within_contract(index, &records).await;
    let listed = |pairs: &[(&str, usize)]| -> Vec<DocumentEntry> {
        pairs
            .iter()
            .map(|(id, n)| DocumentEntry {
                id: DocumentId::new(*id).expect("id"),
                content_hash: format!("hash-of-{id}"),
                chunks: *n,
            })
            .collect()
    };
    assert_eq!(
        index.documents().await.expect("documents"),
        listed(&[("bread.md", 2), ("rust.md", 2), ("space.md", 1)]),
        "each document once, with its chunks, by id"
    );

    // A stored vector finds itself first, scored ~1.
    for (i, v) in vectors.iter().enumerate() {
        let hits = index.nearest(v, 3).await.expect("nearest");
        assert_eq!(hits.len(), 3);
        assert_eq!(
            hits[0].chunk, chunks[i],
            "a vector must find its own chunk first"
        );
        assert!(
            (hits[0].score - 1.0).abs() < 1e-3,
            "self score {}",
            hits[0].score
        );
        assert!(
            hits.iter().all(|h| (0.0..=1.0).contains(&h.score)),
            "scores in [0, 1]"
        );
        assert!(
            hits.windows(2).all(|w| w[0].score >= w[1].score),
            "scores must not increase"
        );
    }

    ids_match_chunks(index, &vectors, "after upsert").await;

    // The opposite direction scores ~0.
    let opposite: Vec<f32> = vectors[0].iter().map(|x| -x).collect();
    let hits = index.nearest(&opposite, 5).await.expect("nearest");
    let own = hits
        .iter()
        .find(|h| h.chunk.id == chunks[0].id)
        .expect("all five returned");
    assert!(own.score < 1e-3, "opposite score {}", own.score);

    // Upsert is idempotent by chunk id.
    index.upsert(&records[..2]).await.expect("re-upsert");
    assert_eq!(index.count().await.expect("count"), chunks.len());

    // Wrong dimensions are rejected as invalid input.
    let bad = vec![0.5f32; index.dimension() + 1];
    let err = index
        .nearest(&bad, 3)
        .await
        .expect_err("wrong dimension must fail");
    assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
    let err = index
        .nearest_ids(&bad, 3)
        .await
        .expect_err("wrong dimension must fail");
    assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
    let bad_record = EmbeddedChunk {
        chunk: chunks[0].clone(),
        vector: bad,
    };
    let err = index
        .upsert(&[bad_record])
        .await
        .expect_err("wrong dimension must fail");
    assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
    assert_eq!(
        index.count().await.expect("count"),
        chunks.len(),
        "a failed upsert loses nothing"
    );

    // Delete by document.
    let rust = DocumentId::new("rust.md").expect("id");
    index
        .delete_documents(std::slice::from_ref(&rust))
        .await
        .expect("delete");
    assert_eq!(index.count().await.expect("count"), 3);
    assert_eq!(
        index.documents().await.expect("documents"),
        listed(&[("bread.md", 2), ("space.md", 1)])
    );
    let hits = index.nearest(&vectors[0], 10).await.expect("nearest");
    assert!(hits.iter().all(|h| h.chunk.document_id != rust));
    assert_eq!(hits.len(), 3);
    ids_match_chunks(index, &vectors, "after a delete").await;

    // Optimizing keeps every record and every result, deletions included; twice is harmless.
    for _ in 0..2 {
        index.optimize().await.expect("optimize");
        assert_eq!(index.count().await.expect("count"), 3);
        let after = index.nearest(&vectors[0], 10).await.expect("nearest");
        assert_eq!(
            after.iter().map(|h| &h.chunk).collect::<Vec<_>>(),
            hits.iter().map(|h| &h.chunk).collect::<Vec<_>>(),
            "optimize must not change results"
        );
        ids_match_chunks(index, &vectors, "after optimize").await;
    }
}

/// [`VectorIndex::nearest_ids`] gives `nearest`'s ids, in its order, with its scores (to
/// float rounding), for every probe and several `k`.
async fn ids_match_chunks(index: &dyn VectorIndex, probes: &[Vec<f32>], when: &str) {
    for probe in probes {
        for k in [1, 3, 10] {
            let chunks = index.nearest(probe, k).await.expect("nearest");
            let ids = index.nearest_ids(probe, k).await.expect("nearest_ids");
            assert_eq!(
                ids.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
                chunks
                    .iter()
                    .map(|h| h.chunk.id.as_str())
                    .collect::<Vec<_>>(),
                "nearest_ids must give nearest's ids in its order ({when}, k {k})"
            );
            for (a, b) in ids.iter().zip(&chunks) {
                assert!(
                    (a.score - b.score).abs() < 1e-5,
                    "score of {}: {} by id, {} with the chunk ({when})",
                    a.id,
                    a.score,
                    b.score
                );
            }
        }
    }
}
