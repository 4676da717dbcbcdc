//! In-memory fakes of the ports, for unit tests of the layers above them.
//!
//! They follow the ports' contracts (the conformance suites run on them) but are not search
//! engines: scoring is deliberately simple.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use crag_core::{Chunk, DocumentId, ScoredChunk};

use crate::{
    DocumentEntries, DocumentEntry, EmbeddedChunk, Embedder, KeywordIndex, PortError, PortResult,
    VectorIndex,
};

fn words(text: &str) -> impl Iterator<Item = (Range<usize>, String)> + '_ {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s..i, text[s..i].to_lowercase()));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s..text.len(), text[s..].to_lowercase()));
    }
    out.into_iter()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sorts hits best first, ties by chunk id, and keeps the first `k`.
fn best_first(hits: &mut Vec<ScoredChunk>, k: usize) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.chunk.id.cmp(&b.chunk.id))
    });
    hits.truncate(k);
}

/// Keyword index over a map; scores a chunk by the number of query-term occurrences.
#[derive(Debug, Default)]
pub struct InMemoryKeywordIndex {
    chunks: Mutex<BTreeMap<String, Chunk>>,
    /// When set, reading chunks by id (`get`, `contains`) fails as unavailable.
    fail_reads: AtomicBool,
    /// Searches made (of text or of weighted terms).
    searches: AtomicUsize,
}

impl InMemoryKeywordIndex {
    /// Makes reads of chunks by id (`get`, and `contains` through it) fail as unavailable,
    /// or work again: a keyword index down after its search answered.
    pub fn fail_reads(&self, on: bool) {
        self.fail_reads.store(on, Ordering::SeqCst);
    }

    /// The searches made so far, of text or of weighted terms (by chunk or by document).
    pub fn searches(&self) -> usize {
        self.searches.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl KeywordIndex for InMemoryKeywordIndex {
    async fn upsert(&self, chunks: &[Chunk]) -> PortResult<()> {
        let mut map = lock(&self.chunks);
        for chunk in chunks {
            map.insert(chunk.id.as_str().to_owned(), chunk.clone());
        }
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        lock(&self.chunks).retain(|_, c| !ids.contains(&c.document_id));
        Ok(())
    }

    async fn search(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.searches.fetch_add(1, Ordering::SeqCst);
        let terms: Vec<(String, f32)> = words(query).map(|(_, w)| (w, 1.0)).collect();
        Ok(self.scored(&terms, k))
    }

    fn analyze(&self, text: &str) -> Vec<String> {
        words(text).map(|(_, w)| w).collect()
    }

    async fn search_terms(
        &self,
        terms: &[crag_core::WeightedTerm],
        k: usize,
    ) -> PortResult<Vec<ScoredChunk>> {
        self.searches.fetch_add(1, Ordering::SeqCst);
        let terms: Vec<(String, f32)> = terms
            .iter()
            .filter(|t| t.weight.is_finite() && t.weight > 0.0)
            .map(|t| (t.term.to_lowercase(), t.weight))
            .collect();
        Ok(self.scored(&terms, k))
    }

    async fn count(&self) -> PortResult<usize> {
        Ok(lock(&self.chunks).len())
    }

    async fn document_frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        let map = lock(&self.chunks);
        Ok(terms
            .iter()
            .map(|t| {
                map.values()
                    .filter(|c| words(&format!("{} {}", c.title, c.text)).any(|(_, w)| &w == t))
                    .count() as u64
            })
            .collect())
    }

    async fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        let mut entries = DocumentEntries::default();
        for chunk in lock(&self.chunks).values() {
            entries.add(&chunk.document_id, &chunk.id, &chunk.content_hash);
        }
        Ok(entries.into_entries())
    }

    async fn get(&self, ids: &[crag_core::ChunkId]) -> PortResult<Vec<Chunk>> {
        if self.fail_reads.load(Ordering::SeqCst) {
            return Err(PortError::new(
                crate::ErrorKind::Unavailable,
                "keyword index reads are switched off",
            ));
        }
        let map = lock(&self.chunks);
        Ok(ids
            .iter()
            .filter_map(|id| map.get(id.as_str()).cloned())
            .collect())
    }

    async fn document_chunks(&self, document: &DocumentId) -> PortResult<Vec<Chunk>> {
        let mut chunks: Vec<Chunk> = lock(&self.chunks)
            .values()
            .filter(|c| &c.document_id == document)
            .cloned()
            .collect();
        chunks.sort_by(|a, b| {
            a.span
                .byte_start
                .cmp(&b.span.byte_start)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(chunks)
    }
}

impl InMemoryKeywordIndex {
    /// Scores every chunk by the weighted count of its words among `terms`; best `k` first.
    fn scored(&self, terms: &[(String, f32)], k: usize) -> Vec<ScoredChunk> {
        let map = lock(&self.chunks);
        let mut hits: Vec<ScoredChunk> = map
            .values()
            .filter_map(|chunk| {
                let text = format!("{} {}", chunk.title, chunk.text);
                let score: f32 = words(&text)
                    .filter_map(|(_, w)| terms.iter().find(|(t, _)| *t == w).map(|(_, x)| x))
                    .sum();
                (score > 0.0).then(|| ScoredChunk {
                    chunk: chunk.clone(),
                    score,
                })
            })
            .collect();
        best_first(&mut hits, k);
        hits
    }
}

/// Brute-force cosine vector index. It counts [`VectorIndex::optimize`] calls (which change
/// nothing here) and can be told to fail them.
#[derive(Debug)]
pub struct InMemoryVectorIndex {
    dimension: usize,
    records: Mutex<BTreeMap<String, EmbeddedChunk>>,
    optimizations: AtomicUsize,
    fail_optimize: AtomicBool,
    fail_vector_reads: AtomicBool,
    /// The `k` of every search, in order.
    asked: Mutex<Vec<usize>>,
}

impl InMemoryVectorIndex {
    /// Creates an empty index of vectors of `dimension`.
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension,
            records: Mutex::default(),
            optimizations: AtomicUsize::new(0),
            fail_optimize: AtomicBool::new(false),
            fail_vector_reads: AtomicBool::new(false),
            asked: Mutex::default(),
        }
    }

    /// The number of neighbours each search asked for, in order.
    pub fn asked(&self) -> Vec<usize> {
        lock(&self.asked).clone()
    }

    /// Makes later [`VectorIndex::vectors`] calls fail (`true`) or succeed; searches still
    /// work.
    pub fn fail_vector_reads(&self, fail: bool) {
        self.fail_vector_reads.store(fail, Ordering::SeqCst);
    }

    /// Returns how many times [`VectorIndex::optimize`] was called, failed calls included.
    pub fn optimizations(&self) -> usize {
        self.optimizations.load(Ordering::SeqCst)
    }

    /// Makes later [`VectorIndex::optimize`] calls fail (`true`) or succeed.
    pub fn fail_optimize(&self, fail: bool) {
        self.fail_optimize.store(fail, Ordering::SeqCst);
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

#[async_trait]
impl VectorIndex for InMemoryVectorIndex {
    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn upsert(&self, records: &[EmbeddedChunk]) -> PortResult<()> {
        if let Some(bad) = records.iter().find(|r| r.vector.len() != self.dimension) {
            return Err(PortError::invalid_input(format!(
                "vector of chunk {} has dimension {}, expected {}",
                bad.chunk.id,
                bad.vector.len(),
                self.dimension
            )));
        }
        let mut map = lock(&self.records);
        for r in records {
            map.insert(r.chunk.id.as_str().to_owned(), r.clone());
        }
        Ok(())
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        lock(&self.records).retain(|_, r| !ids.contains(&r.chunk.document_id));
        Ok(())
    }

    async fn nearest(&self, vector: &[f32], k: usize) -> PortResult<Vec<ScoredChunk>> {
        lock(&self.asked).push(k);
        if vector.len() != self.dimension {
            return Err(PortError::invalid_input(format!(
                "query vector has dimension {}, expected {}",
                vector.len(),
                self.dimension
            )));
        }
        let map = lock(&self.records);
        let mut hits: Vec<ScoredChunk> = map
            .values()
            .map(|r| ScoredChunk {
                chunk: r.chunk.clone(),
                score: ((1.0 + cosine(vector, &r.vector)) / 2.0).clamp(0.0, 1.0),
            })
            .collect();
        best_first(&mut hits, k);
        Ok(hits)
    }

    async fn vectors(
        &self,
        ids: &[crag_core::ChunkId],
    ) -> PortResult<Vec<(crag_core::ChunkId, Vec<f32>)>> {
        if self.fail_vector_reads.load(Ordering::SeqCst) {
            return Err(PortError::new(
                crate::ErrorKind::Unavailable,
                "vector reads fail on purpose",
            ));
        }
        let map = lock(&self.records);
        Ok(ids
            .iter()
            .filter_map(|id| map.get(id.as_str()).map(|r| (id.clone(), r.vector.clone())))
            .collect())
    }

    async fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        let mut entries = DocumentEntries::default();
        for r in lock(&self.records).values() {
            let c = &r.chunk;
            entries.add(&c.document_id, &c.id, &c.content_hash);
        }
        Ok(entries.into_entries())
    }

    async fn count(&self) -> PortResult<usize> {
        Ok(lock(&self.records).len())
    }

    async fn optimize(&self) -> PortResult<()> {
        self.optimizations.fetch_add(1, Ordering::SeqCst);
        if self.fail_optimize.load(Ordering::SeqCst) {
            return Err(PortError::new(
                crate::ErrorKind::Unavailable,
                "optimize failed on purpose",
            ));
        }
        Ok(())
    }
}

/// Deterministic embedder hashing lowercase words into a bag-of-words vector.
///
/// Texts sharing words are close; it knows nothing of meaning.
#[derive(Debug)]
pub struct HashEmbedder {
    dimension: usize,
    texts_embedded: AtomicUsize,
}

impl HashEmbedder {
    /// Creates an embedder producing vectors of `dimension`.
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension,
            texts_embedded: AtomicUsize::new(0),
        }
    }

    /// Returns how many texts were embedded so far.
    pub fn texts_embedded(&self) -> usize {
        self.texts_embedded.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        "hash-bag-of-words"
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn max_tokens(&self) -> usize {
        512
    }

    fn token_spans(&self, text: &str) -> PortResult<Vec<Range<usize>>> {
        Ok(words(text).map(|(r, _)| r).collect())
    }

    async fn embed(&self, texts: &[String]) -> PortResult<Vec<Vec<f32>>> {
        self.texts_embedded
            .fetch_add(texts.len(), Ordering::Relaxed);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; self.dimension];
                for (_, w) in words(t) {
                    let h = fnv1a(&w);
                    v[(h % self.dimension as u64) as usize] += 1.0;
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 0.0 {
                    v.iter_mut().for_each(|x| *x /= norm);
                } else {
                    v[0] = 1.0;
                }
                v
            })
            .collect())
    }
}

/// FNV-1a: stable across runs and platforms, unlike `DefaultHasher`.
fn fnv1a(word: &str) -> u64 {
    word.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

mod services;
mod session;
mod symbols;
mod terms;
pub use services::{
    EvaluateFn, FnEvaluator, ScriptedLanguageModel, StaticWebSearch, TermOverlapReranker,
};
pub use session::InMemorySessionStore;
pub use symbols::InMemorySymbolIndex;
pub use terms::InMemoryTermGraph;
