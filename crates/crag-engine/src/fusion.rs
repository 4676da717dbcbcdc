use std::collections::HashMap;

use crag_core::{Chunk, FusedHit, LegHit, ScoredChunk};
use crag_expansion::rrf_term;
pub use crag_expansion::RRF_K;

mod documents;

pub use documents::{document_of, first_per_document, per_document, per_document_ids};

/// Keyword weight of [`Fusion::Convex`] by default: both legs count the same.
pub const DEFAULT_KEYWORD_WEIGHT: f32 = 0.5;

/// How the keyword and the vector leg's rankings become one ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: each leg adds `1 / (k + rank)`; scores are ignored.
    Rrf {
        /// The RRF constant (60 in Cormack et al. 2009).
        k: f32,
    },
    /// Convex combination of the legs' scores, each min-max normalised over its own list:
    /// `w * keyword + (1 - w) * vector`, a leg that missed the chunk adding 0 (Bruch et al.
    /// 2023, "An Analysis of Fusion Functions for Hybrid Retrieval").
    Convex {
        /// `w`, in [0, 1].
        keyword_weight: f32,
    },
}

impl Fusion {
    /// The configuration name: `rrf` or `convex`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rrf { .. } => "rrf",
            Self::Convex { .. } => "convex",
        }
    }

    /// Checks the parameter: a positive finite `k`, a weight within [0, 1].
    pub fn validate(self) -> Result<(), String> {
        match self {
            Self::Rrf { k } if !k.is_finite() || k <= 0.0 => Err(format!(
                "the RRF constant must be a positive number, not {k}"
            )),
            Self::Convex { keyword_weight: w } if !(0.0..=1.0).contains(&w) => Err(format!(
                "the convex keyword weight must lie within [0, 1], not {w}"
            )),
            _ => Ok(()),
        }
    }
}

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
    fuse(keyword, vector, Fusion::Rrf { k }, top_k)
}

/// Fuses a keyword ranking and a vector ranking with `fusion`, best first, at most `top_k`.
///
/// Both methods give a `normalized_score` in [0, 1]: RRF divides by `2 / (k + 1)`, the score
/// of a chunk ranked first by both legs; the convex combination already lies in [0, 1]. A leg
/// whose scores are all equal normalises them to 1; a non-finite score counts as the leg's
/// lowest. Ties keep the better keyword rank, then the better vector rank, then chunk id order,
/// so the output is deterministic. Duplicate chunk ids within one leg keep their best rank.
pub fn fuse(
    keyword: &[ScoredChunk],
    vector: &[ScoredChunk],
    fusion: Fusion,
    top_k: usize,
) -> Vec<FusedHit> {
    let mut chunks: HashMap<&str, &Chunk> = HashMap::new();
    for hit in keyword.iter().chain(vector) {
        chunks.entry(hit.chunk.id.as_str()).or_insert(&hit.chunk);
    }
    // Rank on ids; clone only the `top_k` chunks that are returned.
    fuse_ids(&scores(keyword), &scores(vector), fusion, top_k)
        .into_iter()
        .map(|f| f.with_chunk(chunks[f.id].clone()))
        .collect()
}

/// Each hit's chunk id and score.
fn scores(hits: &[ScoredChunk]) -> Vec<(&str, f32)> {
    hits.iter()
        .map(|h| (h.chunk.id.as_str(), h.score))
        .collect()
}

/// A fused candidate before its chunk is read: [`FusedHit`] with the chunk's id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FusedId<'a> {
    /// The chunk's id.
    pub id: &'a str,
    /// As [`FusedHit::fused_score`].
    pub fused_score: f32,
    /// As [`FusedHit::normalized_score`].
    pub normalized_score: f32,
    /// Keyword leg, when the chunk was in its list.
    pub keyword: Option<LegHit>,
    /// Vector leg, when the chunk was in its list.
    pub vector: Option<LegHit>,
}

impl FusedId<'_> {
    /// The hit, with its chunk.
    pub fn with_chunk(self, chunk: Chunk) -> FusedHit {
        FusedHit {
            chunk,
            fused_score: self.fused_score,
            normalized_score: self.normalized_score,
            keyword: self.keyword,
            vector: self.vector,
        }
    }
}

/// [`fuse`] over chunk ids and leg scores: the same ranking, without the chunks, so that only
/// the chunks returned need be read.
pub fn fuse_ids<'a>(
    keyword: &[(&'a str, f32)],
    vector: &[(&'a str, f32)],
    fusion: Fusion,
    top_k: usize,
) -> Vec<FusedId<'a>> {
    let mut fused: HashMap<&str, FusedId<'a>> = HashMap::new();
    for (leg, hits) in [(Leg::Keyword, keyword), (Leg::Vector, vector)] {
        for (i, &(id, score)) in hits.iter().enumerate() {
            let entry = fused.entry(id).or_insert(FusedId {
                id,
                fused_score: 0.0,
                normalized_score: 0.0,
                keyword: None,
                vector: None,
            });
            let slot = match leg {
                Leg::Keyword => &mut entry.keyword,
                Leg::Vector => &mut entry.vector,
            };
            if slot.is_none() {
                *slot = Some(LegHit { rank: i + 1, score });
            }
        }
    }
    let (keyword_scale, vector_scale) = (MinMax::of(keyword), MinMax::of(vector));
    let contribution = |leg: Leg, hit: Option<LegHit>| -> f32 {
        let Some(hit) = hit else { return 0.0 };
        match (fusion, leg) {
            (Fusion::Rrf { k }, _) => rrf_term(1.0, k, hit.rank),
            (Fusion::Convex { keyword_weight: w }, Leg::Keyword) => {
                w * keyword_scale.normalise(hit.score)
            }
            (Fusion::Convex { keyword_weight: w }, Leg::Vector) => {
                (1.0 - w) * vector_scale.normalise(hit.score)
            }
        }
    };
    // The score of a chunk first in both legs, which `normalized_score` maps to 1.
    let best = match fusion {
        Fusion::Rrf { k } => 2.0 / (k + 1.0),
        Fusion::Convex { .. } => 1.0,
    };
    let mut out: Vec<FusedId<'a>> = fused
        .into_values()
        .map(|mut e| {
            e.fused_score =
                contribution(Leg::Keyword, e.keyword) + contribution(Leg::Vector, e.vector);
            e.normalized_score = (e.fused_score / best).clamp(0.0, 1.0);
            e
        })
        .collect();
    let rank = |leg: Option<LegHit>| leg.map_or(usize::MAX, |l| l.rank);
    out.sort_by(|a, b| {
        b.fused_score
            .total_cmp(&a.fused_score)
            .then(rank(a.keyword).cmp(&rank(b.keyword)))
            .then(rank(a.vector).cmp(&rank(b.vector)))
            .then(a.id.cmp(b.id))
    });
    out.truncate(top_k);
    out
}

/// The range of one leg's finite scores, for min-max normalisation.
#[derive(Clone, Copy)]
struct MinMax {
    low: f32,
    high: f32,
}

impl MinMax {
    fn of(hits: &[(&str, f32)]) -> Self {
        let finite = hits.iter().map(|&(_, s)| s).filter(|s| s.is_finite());
        let (low, high) = finite.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(s), hi.max(s))
        });
        Self { low, high }
    }

    /// `score` mapped to [0, 1]; 1 when the leg's scores are all equal, 0 when not finite.
    fn normalise(self, score: f32) -> f32 {
        if !score.is_finite() {
            0.0
        } else if self.high > self.low {
            ((score - self.low) / (self.high - self.low)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
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

    fn with_scores(pairs: &[(&str, f32)]) -> Vec<ScoredChunk> {
        pairs
            .iter()
            .map(|(id, score)| ScoredChunk {
                chunk: chunk(id, 0, "t", "text"),
                score: *score,
            })
            .collect()
    }

    #[test]
    fn convex_combines_normalised_scores() {
        // Keyword scores 10..2 normalise to 1, 0.5, 0; vector 0.9..0.5 to 1, 0.
        let keyword = with_scores(&[("a", 10.0), ("b", 6.0), ("c", 2.0)]);
        let vector = with_scores(&[("c", 0.9), ("d", 0.5)]);
        let fusion = Fusion::Convex {
            keyword_weight: 0.25,
        };
        let hits = fuse(&keyword, &vector, fusion, 10);
        let got: Vec<(&str, f32)> = hits
            .iter()
            .map(|h| (h.chunk.document_id.as_str(), h.fused_score))
            .collect();
        // c: 0.25 * 0 + 0.75 * 1; a: 0.25; b: 0.125; d: 0.
        let want = [("c", 0.75), ("a", 0.25), ("b", 0.125), ("d", 0.0)];
        assert_eq!(got.len(), want.len());
        for ((g, gs), (w, ws)) in got.iter().zip(want) {
            assert_eq!(*g, w);
            assert!((gs - ws).abs() < 1e-6, "{g}: {gs} vs {ws}");
        }
        assert!(hits.iter().all(|h| h.normalized_score == h.fused_score));
    }

    #[test]
    fn convex_weight_moves_the_order_rrf_ignores_scores() {
        // The keyword leg is sure of `a` (far ahead); the vector leg barely prefers `b`.
        let keyword = with_scores(&[("a", 20.0), ("b", 1.0)]);
        let vector = with_scores(&[("b", 0.81), ("a", 0.80)]);
        let first = |f| {
            fuse(&keyword, &vector, f, 1)[0]
                .chunk
                .document_id
                .to_string()
        };
        assert_eq!(
            first(Fusion::Convex {
                keyword_weight: 0.5
            }),
            "a"
        );
        assert_eq!(
            first(Fusion::Convex {
                keyword_weight: 0.0
            }),
            "b"
        );
        // RRF sees two ties and keeps the better keyword rank.
        assert_eq!(first(Fusion::Rrf { k: RRF_K }), "a");
    }

    #[test]
    fn convex_handles_flat_and_non_finite_scores() {
        let keyword = with_scores(&[("a", 3.0), ("b", 3.0)]);
        let vector = with_scores(&[("b", f32::NAN), ("c", 0.4)]);
        let hits = fuse(
            &keyword,
            &vector,
            Fusion::Convex {
                keyword_weight: 0.5,
            },
            10,
        );
        let score = |id: &str| {
            hits.iter()
                .find(|h| h.chunk.document_id.as_str() == id)
                .map(|h| h.fused_score)
        };
        // Equal keyword scores normalise to 1; NaN counts as 0; `c` is alone in its leg.
        assert_eq!(score("a"), Some(0.5));
        assert_eq!(score("b"), Some(0.5));
        assert_eq!(score("c"), Some(0.5));
        assert!(hits.iter().all(|h| h.fused_score.is_finite()));
    }

    #[test]
    fn fusion_parameters_are_checked() {
        assert!(Fusion::Rrf { k: 60.0 }.validate().is_ok());
        assert!(Fusion::Rrf { k: 0.0 }.validate().is_err());
        assert!(Fusion::Rrf { k: f32::NAN }.validate().is_err());
        assert!(Fusion::Convex {
            keyword_weight: 1.0
        }
        .validate()
        .is_ok());
        assert!(Fusion::Convex {
            keyword_weight: 1.5
        }
        .validate()
        .is_err());
        assert!(Fusion::Convex {
            keyword_weight: f32::NAN
        }
        .validate()
        .is_err());
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
            // The convex combination keeps the same invariants.
            let convex = fuse(&la, &lb, Fusion::Convex { keyword_weight: 0.5 }, top_k);
            prop_assert_eq!(convex.len(), unique.len().min(top_k));
            prop_assert!(convex.windows(2).all(|w| w[0].fused_score >= w[1].fused_score));
            prop_assert!(convex.iter().all(|h| (0.0..=1.0).contains(&h.normalized_score)));
        }
    }
}
