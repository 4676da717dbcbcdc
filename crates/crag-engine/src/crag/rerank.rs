//! Two-stage retrieval: coarse candidates -> cross-encoder rerank -> keep the candidates above a
//! probability threshold -> final k; with an in-process score cache.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crag_core::FusedHit;
use crag_ports::{RerankScore, Reranker};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::guard::FailMode;
use crate::error::{EngineError, Result};

/// Tunables of the rerank stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RerankConfig {
    /// Rerank when a reranker is configured (per-collection switch: some corpora lose by it).
    pub enabled: bool,
    /// Candidates retrieved for reranking.
    pub coarse_k: usize,
    /// Candidates kept after reranking, at most (and at most the query's top k).
    pub final_k: usize,
    /// Probability at or above which a candidate is kept.
    pub threshold: f32,
    /// Queries with fewer words are not reranked.
    pub min_query_words: usize,
    /// Candidate lists this short or shorter are not reranked.
    pub max_skipped_candidates: usize,
    /// How long cached scores stay valid, in milliseconds (3 days).
    pub cache_ttl_ms: u64,
    /// Most cached (query, candidates, model) entries.
    pub cache_capacity: usize,
    /// Reranker failure: keep the fused order (open) or fail the query (closed).
    pub fail_mode: FailMode,
}

impl Default for RerankConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            coarse_k: 100,
            final_k: 20,
            threshold: 0.35,
            min_query_words: 5,
            max_skipped_candidates: 3,
            cache_ttl_ms: 3 * 24 * 3600 * 1000,
            cache_capacity: 10_000,
            fail_mode: FailMode::Open,
        }
    }
}

impl RerankConfig {
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |key: &str, why: &str| {
            Err(EngineError::InvalidInput(format!(
                "crag.rerank.{key}: {why}"
            )))
        };
        if self.coarse_k == 0 || self.coarse_k > crag_core::MAX_TOP_K {
            return bad("coarse_k", "must be within 1..=1000");
        }
        if self.final_k == 0 {
            return bad("final_k", "must be positive");
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            return bad("threshold", "must be within [0, 1]");
        }
        Ok(())
    }

    /// Why reranking is skipped for this query and candidate count: a short query gives the
    /// cross-encoder little to compare, and a few candidates are not worth its cost.
    pub(crate) fn skip_reason(&self, query: &str, candidates: usize) -> Option<String> {
        let words = query.split_whitespace().count();
        if words < self.min_query_words {
            return Some(format!(
                "query has {words} words (fewer than {})",
                self.min_query_words
            ));
        }
        if candidates <= self.max_skipped_candidates {
            return Some(format!(
                "only {candidates} candidates (at most {})",
                self.max_skipped_candidates
            ));
        }
        None
    }
}

/// What the rerank stage did for one query.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankOutcome {
    /// The reranker's model.
    pub model_id: String,
    /// Candidates given to it.
    pub candidates: usize,
    /// Candidates kept (at or above the threshold, within the final k).
    pub kept: usize,
    /// Why reranking was skipped, if it was.
    pub skipped: Option<String>,
    /// Scores came from the cache.
    pub cache_hit: bool,
}

type Key = [u8; 32];
/// Scores of one cached rerank, by chunk id.
type Scores = Arc<HashMap<String, RerankScore>>;

/// Bounded in-process cache of rerank scores with a time to live (`moka`: TinyLFU admission,
/// LRU eviction, expiry on read and in its maintenance).
#[derive(Debug, Clone)]
pub(crate) struct RerankCache {
    entries: moka::sync::Cache<Key, Scores>,
}

impl RerankCache {
    /// A cache of at most `capacity` reranks, each valid for `ttl`.
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        Self {
            entries: moka::sync::Cache::builder()
                .max_capacity(capacity.max(1) as u64)
                .time_to_live(ttl.max(Duration::from_millis(1)))
                .build(),
        }
    }

    /// The cache `config` asks for.
    pub(crate) fn for_config(config: &RerankConfig) -> Self {
        Self::new(
            config.cache_capacity,
            Duration::from_millis(config.cache_ttl_ms),
        )
    }

    fn key(query: &str, hits: &[FusedHit], model: &str) -> Key {
        let normalized = query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ");
        // Each candidate by id and text: a re-ingested chunk with new text is a new key, so
        // its stale scores are never served.
        let mut candidates: Vec<(&str, &str)> = hits
            .iter()
            .map(|h| (h.chunk.id.as_str(), h.chunk.text.as_str()))
            .collect();
        candidates.sort_unstable();
        let mut h = blake3::Hasher::new();
        for part in [model, &normalized] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        for (id, text) in candidates {
            for part in [id, text] {
                h.update(&(part.len() as u64).to_le_bytes());
                h.update(part.as_bytes());
            }
        }
        *h.finalize().as_bytes()
    }

    fn get(&self, key: &Key) -> Option<Scores> {
        self.entries.get(key)
    }

    fn put(&self, key: Key, scores: HashMap<String, RerankScore>) {
        self.entries.insert(key, Arc::new(scores));
    }
}

/// Reranks `hits`; returns the kept hits (best first) with their scores, and what happened.
pub(crate) async fn rerank(
    reranker: &dyn Reranker,
    cache: &RerankCache,
    config: &RerankConfig,
    query: &str,
    hits: Vec<FusedHit>,
    top_k: usize,
) -> Result<(Vec<(FusedHit, Option<RerankScore>)>, RerankOutcome)> {
    let final_k = config.final_k.min(top_k);
    let mut outcome = RerankOutcome {
        model_id: reranker.model_id().to_owned(),
        candidates: hits.len(),
        kept: 0,
        skipped: config.skip_reason(query, hits.len()),
        cache_hit: false,
    };
    if outcome.skipped.is_some() {
        let kept: Vec<_> = hits.into_iter().take(top_k).map(|h| (h, None)).collect();
        outcome.kept = kept.len();
        return Ok((kept, outcome));
    }
    let key = RerankCache::key(query, &hits, reranker.model_id());
    let scores = match cache.get(&key) {
        Some(scores) => {
            outcome.cache_hit = true;
            scores
        }
        None => {
            let passages: Vec<String> = hits
                .iter()
                .map(|h| {
                    if h.chunk.title.is_empty() {
                        h.chunk.text.clone()
                    } else {
                        format!("{}\n{}", h.chunk.title, h.chunk.text)
                    }
                })
                .collect();
            let scores = reranker.rerank(query, &passages).await?;
            if scores.len() != hits.len() {
                return Err(EngineError::Internal(format!(
                    "reranker returned {} scores for {} passages",
                    scores.len(),
                    hits.len()
                )));
            }
            let map: HashMap<String, RerankScore> = hits
                .iter()
                .zip(scores)
                .map(|(h, s)| (h.chunk.id.to_string(), s))
                .collect();
            cache.put(key, map.clone());
            Arc::new(map)
        }
    };
    let mut scored: Vec<(FusedHit, Option<RerankScore>)> = hits
        .into_iter()
        .filter_map(|h| {
            let s = scores.get(h.chunk.id.as_str()).copied()?;
            (s.probability >= config.threshold).then_some((h, Some(s)))
        })
        .collect();
    // Stable: ties keep the fused order.
    scored.sort_by(|a, b| {
        let p = |x: &(FusedHit, Option<RerankScore>)| x.1.map_or(0.0, |s| s.probability);
        p(b).total_cmp(&p(a))
    });
    scored.truncate(final_k);
    outcome.kept = scored.len();
    Ok((scored, outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_skip_rules() {
        let c = RerankConfig::default();
        assert!(c.skip_reason("short query here", 50).is_some());
        assert!(c
            .skip_reason("a query of exactly five words", 3)
            .unwrap()
            .contains("3 candidates"));
        assert!(c.skip_reason("a query of exactly five words", 4).is_none());
        c.validate().unwrap();
        let bad = RerankConfig {
            threshold: 2.0,
            ..RerankConfig::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .to_string()
            .contains("threshold"));
    }

    #[test]
    fn a_re_ingested_candidate_is_a_new_cache_key() {
        let hit = |text: &str| FusedHit {
            chunk: crag_ports::testsuite::chunk("d", 0, "", text),
            fused_score: 1.0,
            normalized_score: 1.0,
            keyword: None,
            vector: None,
        };
        let key = |text: &str| RerankCache::key("rust ownership", &[hit(text)], "m");
        assert_eq!(key("old text"), key("old text"));
        assert_ne!(key("old text"), key("new text"));
        assert_ne!(
            RerankCache::key("Rust  Ownership", &[hit("old text")], "other model"),
            key("old text")
        );
    }

    #[test]
    fn cache_expires_and_is_bounded() {
        let s = || HashMap::from([("a".to_owned(), RerankScore::from_logit(1.0))]);
        let cache = RerankCache::new(2, Duration::from_secs(60));
        cache.put([1; 32], s());
        assert!(cache.get(&[1; 32]).is_some());
        for key in 2..50u8 {
            cache.put([key; 32], s());
        }
        cache.entries.run_pending_tasks();
        assert!(cache.entries.entry_count() <= 2, "bounded");

        let brief = RerankCache::new(10, Duration::from_millis(1));
        brief.put([1; 32], s());
        std::thread::sleep(Duration::from_millis(20));
        assert!(brief.get(&[1; 32]).is_none(), "expired");
    }
}
