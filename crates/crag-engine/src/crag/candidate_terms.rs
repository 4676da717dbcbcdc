//! The feedback rerank's candidates' index terms, kept per chunk across queries.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crag_core::{Chunk, ChunkId};
use crag_expansion::{term_counts_in, TermMemo, TokenTerms};

/// Bytes of index terms [`CandidateTermsCache`] holds at most (an estimated 10,000 chunks of
/// SciFact's size: about 100 distinct terms of 30 bytes each a chunk).
const CANDIDATE_TERMS_BYTES: u64 = 32 << 20;

/// Chunks [`CandidateTermsCache`] remembers having met once, before it forgets them all and
/// starts again (512 KiB of keys).
const SIGHTED_CHUNKS: usize = 1 << 16;

/// A candidate's distinct index terms and their counts, in the order they first occur.
type TermCounts = Arc<[(Box<str>, u32)]>;

/// The feedback rerank's candidates' index terms and counts
/// ([`crag_expansion::term_counts`]), kept for a chunk met again by a later query instead of
/// analysing its text again (about 250 words a chunk, most of the rerank's time). Keyed by the
/// chunk's id and a hash of its title and text, so a chunk re-ingested with other words is
/// analysed anew; bounded by bytes, least recently used first out (`moka`).
///
/// A chunk is kept from its second meeting on: reading a candidate's words into an entry of
/// its own costs more than the query's shared reading ([`crag_expansion::CandidateTerms::push`]),
/// which a chunk met once (most of a first pass over a collection's queries) never repays.
/// The chunks met once are remembered by key (a bounded set, emptied when full, as a
/// doorkeeper in front of TinyLFU is).
#[derive(Debug, Clone)]
pub(crate) struct CandidateTermsCache {
    entries: moka::sync::Cache<(ChunkId, [u8; 16]), TermCounts>,
    /// Keys of the chunks met once and not kept yet (shared by clones, as `entries` is).
    sighted: Arc<Mutex<HashSet<u64, foldhash::fast::FixedState>>>,
    sighted_bound: usize,
}

impl CandidateTermsCache {
    pub(crate) fn new() -> Self {
        Self::with_bounds(CANDIDATE_TERMS_BYTES, SIGHTED_CHUNKS)
    }

    fn with_bounds(bytes: u64, sighted: usize) -> Self {
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
            sighted: Arc::new(Mutex::new(HashSet::default())),
            sighted_bound: sighted,
        }
    }

    /// `chunk`'s index terms and counts, from the cache or analysed now (through `seen`, the
    /// tokens this query's candidates met, then `memo`) when the chunk was met before;
    /// `None` the first time it is met (the caller reads its words the shared way).
    pub(crate) fn get(
        &self,
        chunk: &Chunk,
        memo: &TermMemo,
        seen: &mut TokenTerms,
    ) -> Option<TermCounts> {
        let mut h = blake3::Hasher::new();
        for part in [chunk.id.as_str(), &chunk.title, &chunk.text] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let hash = h.finalize();
        let (mut digest, mut sighting) = ([0u8; 16], [0u8; 8]);
        digest.copy_from_slice(&hash.as_bytes()[..16]);
        sighting.copy_from_slice(&hash.as_bytes()[16..24]);
        let key = (chunk.id.clone(), digest);
        if let Some(counts) = self.entries.get(&key) {
            return Some(counts);
        }
        if self.first_sighting(u64::from_le_bytes(sighting)) {
            return None;
        }
        let counts: TermCounts = term_counts_in(&chunk.title, &chunk.text, Some(memo), seen).into();
        self.entries.insert(key, Arc::clone(&counts));
        Some(counts)
    }

    /// Whether the chunk of `key` is met for the first time (it is remembered as met), or
    /// was met before (it is forgotten: the cache holds it from now on).
    fn first_sighting(&self, key: u64) -> bool {
        let mut sighted = self.sighted.lock().unwrap_or_else(|e| e.into_inner());
        if sighted.remove(&key) {
            return false;
        }
        if sighted.len() >= self.sighted_bound {
            sighted.clear();
        }
        sighted.insert(key);
        true
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
        let get = |c: &Chunk| cache.get(c, &memo, &mut TokenTerms::default());
        assert!(get(&c).is_none(), "met once: read the shared way");
        let second = get(&c).expect("met twice: kept");
        assert_eq!(
            &*second,
            &*term_counts(&c.title, &c.text, None),
            "the terms the text analyses to"
        );
        assert!(Arc::ptr_eq(&second, &get(&c).unwrap()), "served again");
        c.text = "Graphene sheets.".into();
        assert!(get(&c).is_none(), "other words: a chunk met once");
        let changed = get(&c).unwrap();
        assert!(!Arc::ptr_eq(&second, &changed));
        assert_eq!(&*changed, &*term_counts(&c.title, &c.text, None));
        let other = chunk("e", 0, "Engines", "Graphene sheets.");
        assert!(get(&other).is_none(), "the same words under another id");
    }

    #[test]
    fn the_cache_stays_within_its_bytes_and_the_chunks_met_once_within_theirs() {
        let memo = TermMemo::new(10_000);
        let cache = CandidateTermsCache::with_bounds(4_096, 50);
        let chunks: Vec<Chunk> = (0..200)
            .map(|i| {
                chunk(
                    &format!("d{i}"),
                    0,
                    "",
                    &format!("word{i} other{i} third{i}"),
                )
            })
            .collect();
        for c in &chunks {
            assert!(cache.get(c, &memo, &mut TokenTerms::default()).is_none());
            assert!(cache.sighted.lock().unwrap().len() <= 50);
        }
        // The last 50 met are remembered (the set was emptied at the 151st): met again, kept.
        for c in &chunks[150..] {
            assert!(cache.get(c, &memo, &mut TokenTerms::default()).is_some());
        }
        assert!(cache
            .get(&chunks[0], &memo, &mut TokenTerms::default())
            .is_none());
        cache.entries.run_pending_tasks();
        assert!(cache.entries.weighted_size() <= 4_096);
        assert!(cache.entries.entry_count() < 50);
    }
}
