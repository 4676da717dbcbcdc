//! The feedback rerank's candidates' index terms, kept per chunk across queries.

use std::sync::Arc;

use crag_core::{Chunk, ChunkId};
use crag_expansion::{term_counts_in, TermMemo, TokenTerms};

/// Bytes of index terms [`CandidateTermsCache`] holds at most (an estimated 10,000 chunks of
/// SciFact's size: about 100 distinct terms of 30 bytes each a chunk).
const CANDIDATE_TERMS_BYTES: u64 = 32 << 20;

/// A candidate's distinct index terms and their counts, in the order they first occur.
type TermCounts = Arc<[(Box<str>, u32)]>;

/// The feedback rerank's candidates' index terms and counts
/// ([`crag_expansion::term_counts`]), kept for a chunk met again by a later query instead of
/// analysing its text again (about 250 words a chunk, most of the rerank's time). Keyed by the
/// chunk's id and a hash of its title and text, so a chunk re-ingested with other words is
/// analysed anew; bounded by bytes, least recently used first out (`moka`).
#[derive(Debug, Clone)]
pub(crate) struct CandidateTermsCache {
    entries: moka::sync::Cache<(ChunkId, [u8; 16]), TermCounts>,
}

impl CandidateTermsCache {
    pub(crate) fn new() -> Self {
        Self::with_bytes(CANDIDATE_TERMS_BYTES)
    }

    fn with_bytes(bytes: u64) -> Self {
        Self {
            entries: moka::sync::Cache::builder()
                .max_capacity(bytes)
                .weigher(|(id, _): &(ChunkId, [u8; 16]), counts: &TermCounts| {
                    let terms: usize = counts
                        .iter()
                        .map(|(t, _)| t.len() + std::mem::size_of::<(Box<str>, u32)>())
                        .sum();
                    u32::try_from(terms + id.as_str().len() + 64).unwrap_or(u32::MAX)
                })
                .build(),
        }
    }

    /// `chunk`'s index terms and counts, from the cache or analysed now (through `seen`, the
    /// tokens this query's candidates met, then `memo`).
    pub(crate) fn get(&self, chunk: &Chunk, memo: &TermMemo, seen: &mut TokenTerms) -> TermCounts {
        let mut h = blake3::Hasher::new();
        for part in [&chunk.title, &chunk.text] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let mut digest = [0u8; 16];
        digest.copy_from_slice(&h.finalize().as_bytes()[..16]);
        self.entries.get_with((chunk.id.clone(), digest), || {
            term_counts_in(&chunk.title, &chunk.text, Some(memo), seen).into()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_expansion::term_counts;
    use crag_ports::testsuite::chunk;

    #[test]
    fn a_chunk_met_again_is_served_from_the_cache_until_its_words_change() {
        let memo = TermMemo::new(1_000);
        let cache = CandidateTermsCache::new();
        let mut c = chunk("d", 0, "Engines", "The engine heats the sheets.");
        let first = cache.get(&c, &memo, &mut TokenTerms::default());
        assert_eq!(
            &*first,
            &*term_counts(&c.title, &c.text, None),
            "the terms the text analyses to"
        );
        assert!(
            Arc::ptr_eq(&first, &cache.get(&c, &memo, &mut TokenTerms::default())),
            "served again"
        );
        c.text = "Graphene sheets.".into();
        let changed = cache.get(&c, &memo, &mut TokenTerms::default());
        assert!(!Arc::ptr_eq(&first, &changed));
        assert_eq!(&*changed, &*term_counts(&c.title, &c.text, None));
    }

    #[test]
    fn the_cache_stays_within_its_bytes() {
        let memo = TermMemo::new(10_000);
        let cache = CandidateTermsCache::with_bytes(4_096);
        for i in 0..200 {
            let c = chunk(
                &format!("d{i}"),
                0,
                "",
                &format!("word{i} other{i} third{i}"),
            );
            cache.get(&c, &memo, &mut TokenTerms::default());
        }
        cache.entries.run_pending_tasks();
        assert!(cache.entries.weighted_size() <= 4_096);
        assert!(cache.entries.entry_count() < 200);
    }
}
