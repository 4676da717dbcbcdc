//! Embeddings of recent query texts, so a repeated query (a client retrying, the same
//! question in another session, CGRAG passes and corrections re-asking a text) skips the
//! embedder: about 5.5 ms of MiniLM on two cores in a release build (docs/benchmarks.md),
//! more under load. `crag eval` clears it before each stage's pass and throughput run, so
//! every stage's latency includes embedding its queries.
//!
//! Bounded by entries (`moka`: TinyLFU admission, LRU eviction); one engine embeds with one
//! model, so the text alone is the key. Ingestion never goes through it.

use std::sync::Arc;

use crag_ports::{Embedder, PortResult};

/// Default [`crate::EngineConfig::query_cache_entries`]: 1024 vectors of 384 floats, about
/// 1.6 MiB.
pub const DEFAULT_QUERY_CACHE_ENTRIES: u64 = 1024;

/// The cache; with no capacity it embeds every time.
#[derive(Debug)]
pub(crate) struct QueryVectors {
    entries: Option<moka::sync::Cache<String, Arc<[f32]>>>,
}

impl QueryVectors {
    /// A cache of at most `capacity` query vectors (0: none).
    pub(crate) fn new(capacity: u64) -> Self {
        Self {
            entries: (capacity > 0).then(|| moka::sync::Cache::new(capacity)),
        }
    }

    /// The embedding of `text`, from the cache or from `embedder` (then kept); `None` if the
    /// embedder returned no vector.
    pub(crate) async fn embed(
        &self,
        embedder: &dyn Embedder,
        text: &str,
    ) -> PortResult<Option<Vec<f32>>> {
        if let Some(hit) = self.entries.as_ref().and_then(|c| c.get(text)) {
            return Ok(Some(hit.to_vec()));
        }
        let vector = embedder.embed(&[text.to_owned()]).await?.pop();
        if let (Some(cache), Some(v)) = (&self.entries, &vector) {
            cache.insert(text.to_owned(), Arc::from(v.as_slice()));
        }
        Ok(vector)
    }

    /// Forgets every cached vector.
    pub(crate) fn clear(&self) {
        if let Some(cache) = &self.entries {
            cache.invalidate_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_ports::fakes::HashEmbedder;

    #[tokio::test]
    async fn a_repeated_text_is_embedded_once() {
        let embedder = HashEmbedder::new(8);
        let cache = QueryVectors::new(16);
        let first = cache.embed(&embedder, "tides").await.unwrap();
        let again = cache.embed(&embedder, "tides").await.unwrap();
        assert_eq!(first, again);
        assert!(first.is_some());
        assert_eq!(embedder.texts_embedded(), 1);
        cache.embed(&embedder, "Tides").await.unwrap();
        assert_eq!(embedder.texts_embedded(), 2, "the key is the exact text");
        cache.clear();
        let after = cache.embed(&embedder, "tides").await.unwrap();
        assert_eq!(after, first);
        assert_eq!(embedder.texts_embedded(), 3, "cleared: embedded again");
    }

    #[tokio::test]
    async fn without_capacity_every_call_embeds() {
        let embedder = HashEmbedder::new(8);
        let cache = QueryVectors::new(0);
        cache.embed(&embedder, "tides").await.unwrap();
        cache.embed(&embedder, "tides").await.unwrap();
        assert_eq!(embedder.texts_embedded(), 2);
    }
}
