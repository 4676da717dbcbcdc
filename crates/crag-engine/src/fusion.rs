use std::collections::HashMap;

use crag_core::{Chunk, FusedHit, LegHit, ScoredChunk};

/// The usual reciprocal-rank-fusion constant (Cormack et al. 2009).
pub const RRF_K: f32 = 60.0;

/// Fuses a keyword ranking and a vector ranking by reciprocal rank fusion.
///
/// Each chunk scores `sum over legs of 1 / (k + rank)` (ranks 1-based); a chunk missing from a
/// leg gets nothing from it. `normalized_score` divides by `2 / (k + 1)`, the score of a chunk
/// ranked first by both legs, so it lies in [0, 1] whatever `k` is. Ties keep the better keyword
/// rank, then the better vector rank, then chunk id order, so the output is deterministic.
/// Duplicate chunk ids within one leg keep their best rank.
pub fn reciprocal_rank_fusion(
    keyword: &[ScoredChunk],
    vector: &[ScoredChunk],
    k: f32,
    top_k: usize,
) -> Vec<FusedHit> {
    // Rank on borrowed chunks; clone only the `top_k` that are returned.
    let mut fused: HashMap<&str, Entry<'_>> = HashMap::new();
    for (leg, hits) in [(Leg::Keyword, keyword), (Leg::Vector, vector)] {
        for (i, hit) in hits.iter().enumerate() {
            let entry = fused.entry(hit.chunk.id.as_str()).or_insert(Entry {
                chunk: &hit.chunk,
                fused_score: 0.0,
                keyword: None,
                vector: None,
            });
            let slot = match leg {
                Leg::Keyword => &mut entry.keyword,
                Leg::Vector => &mut entry.vector,
            };
            if slot.is_none() {
                *slot = Some(LegHit {
                    rank: i + 1,
                    score: hit.score,
                });
            }
        }
    }
    let contribution = |leg: Option<LegHit>| leg.map_or(0.0, |l| 1.0 / (k + l.rank as f32));
    let mut out: Vec<Entry<'_>> = fused
        .into_values()
        .map(|mut e| {
            e.fused_score = contribution(e.keyword) + contribution(e.vector);
            e
        })
        .collect();
    let rank = |leg: Option<LegHit>| leg.map_or(usize::MAX, |l| l.rank);
    out.sort_by(|a, b| {
        b.fused_score
            .total_cmp(&a.fused_score)
            .then(rank(a.keyword).cmp(&rank(b.keyword)))
            .then(rank(a.vector).cmp(&rank(b.vector)))
            .then(a.chunk.id.cmp(&b.chunk.id))
    });
    out.truncate(top_k);
    let best = 2.0 / (k + 1.0);
    out.into_iter()
        .map(|e| FusedHit {
            chunk: e.chunk.clone(),
            fused_score: e.fused_score,
            normalized_score: (e.fused_score / best).clamp(0.0, 1.0),
            keyword: e.keyword,
            vector: e.vector,
        })
        .collect()
}

/// A candidate while ranking: the chunk borrowed from its leg.
struct Entry<'a> {
    chunk: &'a Chunk,
    fused_score: f32,
    keyword: Option<LegHit>,
    vector: Option<LegHit>,
}

#[derive(Clone, Copy)]
enum Leg {
    Keyword,
    Vector,
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use crag_ports::testsuite::chunk;
    use proptest::prelude::*;

    use super::*;

    fn scored(ids: &[&str]) -> Vec<ScoredChunk> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| ScoredChunk {
                chunk: chunk(id, 0, "t", "text"),
                score: 10.0 - i as f32,
            })
            .collect()
    }

    #[test]
    fn chunk_in_both_legs_wins() {
        let hits =
            reciprocal_rank_fusion(&scored(&["a", "b", "c"]), &scored(&["c", "d"]), RRF_K, 10);
        let ids: Vec<_> = hits.iter().map(|h| h.chunk.document_id.as_str()).collect();
        assert_eq!(ids, vec!["c", "a", "b", "d"]);
        let c = &hits[0];
        assert_eq!(c.keyword.map(|l| l.rank), Some(3));
        assert_eq!(c.vector.map(|l| l.rank), Some(1));
        assert!((c.fused_score - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-6);
        assert_eq!(hits[3].keyword, None);
        assert_eq!(hits[3].vector.map(|l| l.score), Some(9.0));
    }

    #[test]
    fn first_in_both_normalises_to_one() {
        let hits = reciprocal_rank_fusion(&scored(&["a"]), &scored(&["a"]), RRF_K, 10);
        assert!((hits[0].normalized_score - 1.0).abs() < 1e-6);
        let hits = reciprocal_rank_fusion(&scored(&["a"]), &[], RRF_K, 10);
        assert!((hits[0].normalized_score - 0.5).abs() < 1e-6);
    }

    #[test]
    fn empty_legs_give_nothing() {
        assert!(reciprocal_rank_fusion(&[], &[], RRF_K, 10).is_empty());
    }

    proptest! {
        #[test]
        fn fusion_invariants(
            a in proptest::collection::vec(0u8..30, 0..40),
            b in proptest::collection::vec(0u8..30, 0..40),
            top_k in 1usize..50,
        ) {
            let names_a: Vec<String> = a.iter().map(|x| format!("d{x}")).collect();
            let names_b: Vec<String> = b.iter().map(|x| format!("d{x}")).collect();
            let la = scored(&names_a.iter().map(String::as_str).collect::<Vec<_>>());
            let lb = scored(&names_b.iter().map(String::as_str).collect::<Vec<_>>());
            let hits = reciprocal_rank_fusion(&la, &lb, RRF_K, top_k);
            let unique: HashSet<_> = names_a.iter().chain(&names_b).collect();
            prop_assert_eq!(hits.len(), unique.len().min(top_k));
            let ids: HashSet<_> = hits.iter().map(|h| h.chunk.id.clone()).collect();
            prop_assert_eq!(ids.len(), hits.len(), "no duplicates");
            prop_assert!(hits.windows(2).all(|w| w[0].fused_score >= w[1].fused_score));
            prop_assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.normalized_score)));
            prop_assert!(hits.iter().all(|h| h.keyword.is_some() || h.vector.is_some()));
            // Deterministic: the same input gives the same order.
            let again = reciprocal_rank_fusion(&la, &lb, RRF_K, top_k);
            prop_assert_eq!(hits, again);
        }
    }
}
