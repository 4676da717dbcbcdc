//! A bounded, expiring cache of evaluations: a query judged again over the same documents is
//! not judged twice (what costs with the LLM or HTTP evaluator). The key is everything the
//! evaluator is shown: its name, the query, and each document's id, source, text, similarity
//! and retrieval signals. A re-ingested document changes its text, so it never meets a stale
//! entry; a different retrieval (other ranks or scores) is a different key.

use std::time::Duration;

use crag_core::{EvalDocument, Evaluation, LegHit, Query};

type Key = [u8; 32];

/// Cached evaluations (`moka`: TinyLFU admission, LRU eviction, time to live).
#[derive(Debug, Clone)]
pub(crate) struct EvaluationCache {
    entries: moka::sync::Cache<Key, Evaluation>,
}

impl EvaluationCache {
    /// A cache of at most `capacity` evaluations, each valid for `ttl`; `None` when
    /// `capacity` is 0 (no cache).
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Option<Self> {
        (capacity > 0).then(|| Self {
            entries: moka::sync::Cache::builder()
                .max_capacity(capacity as u64)
                .time_to_live(ttl.max(Duration::from_millis(1)))
                .build(),
        })
    }

    /// The key of `evaluator` judging `documents` for `query`.
    pub(crate) fn key(evaluator: &str, query: &Query, documents: &[EvalDocument]) -> Key {
        let mut h = blake3::Hasher::new();
        let mut text = |s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        text(evaluator);
        text(query.as_str());
        for d in documents {
            text(&d.id);
            text(&d.source);
            text(&d.text);
        }
        for d in documents {
            let r = &d.retrieval;
            let mut numbers = vec![d.similarity];
            numbers.extend(leg(r.keyword));
            numbers.extend(leg(r.vector));
            numbers.extend([r.fused_score, r.normalized_score, r.rerank_probability].map(opt));
            for n in numbers {
                h.update(&n.to_bits().to_le_bytes());
            }
        }
        *h.finalize().as_bytes()
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Evaluation> {
        self.entries.get(key)
    }

    pub(crate) fn insert(&self, key: Key, evaluation: Evaluation) {
        self.entries.insert(key, evaluation);
    }
}

/// A leg's rank and score as numbers; NaN marks "absent" (never a real rank or score).
fn leg(hit: Option<LegHit>) -> [f32; 2] {
    hit.map_or([f32::NAN; 2], |h| [h.rank as f32, h.score])
}

fn opt(x: Option<f32>) -> f32 {
    x.unwrap_or(f32::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_core::{RetrievalSignals, Verdict};

    fn doc(text: &str, similarity: f32) -> EvalDocument {
        EvalDocument::new("d#0", "d", text, similarity)
    }

    fn evaluation() -> Evaluation {
        Evaluation {
            verdict: Verdict::Correct,
            score: 0.9,
            document_scores: vec![Some(0.9)],
            document_reasons: Vec::new(),
            criteria: Vec::new(),
            reasoning: "r".into(),
            issues: Vec::new(),
        }
    }

    #[test]
    fn the_same_judgement_is_found_and_any_change_of_what_is_shown_misses() {
        let cache = EvaluationCache::new(10, Duration::from_secs(60)).unwrap();
        let q = Query::new("rust ownership").unwrap();
        let key = EvaluationCache::key("heuristic", &q, &[doc("text", 0.5)]);
        cache.insert(key, evaluation());
        assert_eq!(
            cache.get(&EvaluationCache::key("heuristic", &q, &[doc("text", 0.5)])),
            Some(evaluation())
        );
        let other = Query::new("rust borrowing").unwrap();
        let ranked = doc("text", 0.5).with_retrieval(RetrievalSignals {
            keyword: Some(LegHit {
                rank: 1,
                score: 3.0,
            }),
            ..RetrievalSignals::default()
        });
        for missed in [
            EvaluationCache::key("llm", &q, &[doc("text", 0.5)]),
            EvaluationCache::key("heuristic", &other, &[doc("text", 0.5)]),
            EvaluationCache::key("heuristic", &q, &[doc("text, re-ingested", 0.5)]),
            EvaluationCache::key("heuristic", &q, &[doc("text", 0.6)]),
            EvaluationCache::key("heuristic", &q, &[ranked]),
            EvaluationCache::key("heuristic", &q, &[]),
        ] {
            assert_ne!(missed, key);
            assert_eq!(cache.get(&missed), None);
        }
    }

    #[test]
    fn no_capacity_is_no_cache() {
        assert!(EvaluationCache::new(0, Duration::from_secs(60)).is_none());
    }
}
