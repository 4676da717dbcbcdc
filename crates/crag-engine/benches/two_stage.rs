//! Benchmark of the two-stage path of `Engine::query` (coarse 100 -> rerank -> final 20) with a
//! rerank cache miss and a cache hit, over the in-memory fakes (hash embedder, in-memory
//! indexes, term-overlap reranker): it measures the engine's own overhead and what the cache
//! saves around a reranker, not a real model's latency.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crag_core::{ChunkKind, Document, DocumentId, Query, TopK};
use crag_engine::{
    CragComponents, CragConfig, Engine, EngineConfig, NoProgress, QueryRequest, Scope,
};
use crag_ports::fakes::{
    HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex, TermOverlapReranker,
};
use criterion::{criterion_main, Criterion};

const WORDS: &[&str] = &[
    "rank", "fusion", "vector", "keyword", "index", "query", "chunk", "score", "model", "cache",
    "token", "budget", "search", "engine", "result", "document",
];

fn engine(runtime: &tokio::runtime::Runtime) -> Engine {
    let engine = Engine::new(
        Arc::new(HashEmbedder::new(64)),
        Arc::new(InMemoryVectorIndex::new(64)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig::default(),
    )
    .expect("engine");
    let mut parts = CragComponents::heuristic(CragConfig::default()).expect("parts");
    parts.reranker = Some(Arc::new(TermOverlapReranker::default()));
    let engine = engine.with_crag(parts).expect("crag");
    let docs = (0..300)
        .map(|i| {
            let text: Vec<&str> = (0..60)
                .map(|w| WORDS[(i * 7 + w * 3) % WORDS.len()])
                .collect();
            Document::new(
                DocumentId::new(format!("doc{i}")).expect("id"),
                format!("doc{i}"),
                format!("Document {i}"),
                text.join(" "),
                ChunkKind::Prose,
            )
            .expect("document")
        })
        .collect();
    runtime
        .block_on(engine.ingest(docs, Vec::new(), &Scope::None, &NoProgress))
        .expect("ingest");
    engine
}

fn request(text: &str) -> QueryRequest {
    QueryRequest {
        use_crag: false,
        ..QueryRequest::new(Query::new(text).expect("query"), TopK::new(20).expect("k"))
    }
}

fn two_stage(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let engine = engine(&runtime);
    let hit = request("how does rank fusion combine keyword and vector search");
    let warm = runtime.block_on(engine.query(&hit)).expect("query");
    assert!(warm.rerank.is_some_and(|r| r.skipped.is_none()));
    c.bench_function("two_stage_query_cache_hit", |b| {
        b.iter(|| {
            runtime
                .block_on(engine.query(black_box(&hit)))
                .expect("query")
        })
    });
    let n = AtomicUsize::new(0);
    c.bench_function("two_stage_query_cache_miss", |b| {
        b.iter(|| {
            // A new word each time: a new cache key.
            let i = n.fetch_add(1, Ordering::Relaxed);
            let miss = request(&format!(
                "how does rank fusion combine keyword and vector w{i}"
            ));
            runtime
                .block_on(engine.query(black_box(&miss)))
                .expect("query")
        })
    });
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(benches, super::two_stage);
}

criterion_main!(group::benches);
