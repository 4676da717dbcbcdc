//! Benchmarks of the hot parts over the real adapters on an existing index (e.g. SciFact):
//! query embedding (ONNX MiniLM), a BM25 query (Tantivy), a vector query (LanceDB, brute
//! force), the hybrid retrieval and the whole fast path of `Engine::query` (retrieve + judge,
//! no correction, no web).
//!
//! ```sh
//! crag --data-dir /tmp/scifact-idx ingest ../shared/data/scifact/corpus.jsonl
//! CRAG_BENCH_INDEX=/tmp/scifact-idx cargo bench --locked -p crag-tests --bench retrieval
//! ```
//!
//! Without `CRAG_BENCH_INDEX` (or when it holds no index) the benchmarks are skipped with a
//! message.

use std::hint::black_box;
use std::path::PathBuf;

use crag_app::Config;
use crag_core::{Query, TopK};
use crag_engine::{EngineConfig, QueryRequest};
use crag_onnx::{EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig};
use crag_ports::{Embedder, VectorIndex};
use criterion::{criterion_main, Criterion};

const QUERIES: &[&str] = &[
    "vitamin D deficiency increases the risk of bone fractures in older adults",
    "statins lower cardiovascular mortality",
    "gene expression changes in tumour cells under hypoxia",
    "antibiotic resistance spreads through horizontal gene transfer",
];

fn retrieval(c: &mut Criterion) {
    let Some(index) = std::env::var_os("CRAG_BENCH_INDEX").map(PathBuf::from) else {
        eprintln!("retrieval benches skipped: set CRAG_BENCH_INDEX to an index directory");
        return;
    };
    if !index.join("keyword").is_dir() {
        eprintln!("retrieval benches skipped: no index in {}", index.display());
        return;
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let config = Config {
        data_dir: index.clone(),
        ..Config::default()
    };
    let vectors_uri = config.vectors_uri();
    let engine = runtime
        .block_on(crag_app::compose::open_indexes(
            &config,
            &index,
            &vectors_uri,
            EngineConfig::default(),
        ))
        .expect("engine")
        .with_crag(crag_app::compose::components(&config).expect("components"))
        .expect("crag");
    let assets =
        EmbedderAssets::from_manifest(&crag_app::compose::assets_dir(&config)).expect("assets");
    let embedder = OnnxEmbedder::new(OnnxEmbedderConfig::new(assets)).expect("embedder");
    let dimension = embedder.dimension();
    let vectors = runtime
        .block_on(crag_lancedb::LanceVectorIndex::open(
            &vectors_uri,
            crag_app::compose::VECTOR_TABLE,
            dimension,
        ))
        .expect("vectors");
    let queries: Vec<Query> = QUERIES.iter().map(|q| Query::new(q).unwrap()).collect();
    let embedded = runtime
        .block_on(embedder.embed(&QUERIES.iter().map(|q| q.to_string()).collect::<Vec<_>>()))
        .expect("embed");
    let top100 = TopK::new(100).unwrap();
    let top10 = TopK::new(10).unwrap();

    let fast = |q: &Query| {
        let mut request = QueryRequest::new(q.clone(), top10);
        request.use_web_search = false;
        request.use_rerank = false;
        request
    };
    for q in &queries {
        let outcome = runtime.block_on(engine.query(&fast(q))).expect("query");
        eprintln!(
            "fast_path_query: {:?} -> {} ({} corrections)",
            q.as_str(),
            outcome.decision(),
            outcome.corrections.len()
        );
    }

    let mut g = c.benchmark_group("scifact");
    let mut i = 0;
    let mut next = || {
        i = (i + 1) % QUERIES.len();
        i
    };
    g.bench_function("embed_query", |b| {
        b.iter(|| {
            let q = QUERIES[next()].to_string();
            black_box(runtime.block_on(embedder.embed(&[q])).unwrap())
        })
    });
    g.bench_function("bm25_top100", |b| {
        b.iter(|| {
            black_box(
                runtime
                    .block_on(engine.retrieve_keyword(&queries[next()], top100))
                    .unwrap(),
            )
        })
    });
    g.bench_function("vector_top100_prembedded", |b| {
        b.iter(|| {
            black_box(
                runtime
                    .block_on(vectors.nearest(&embedded[next()], 100))
                    .unwrap(),
            )
        })
    });
    g.bench_function("hybrid_top10", |b| {
        b.iter(|| {
            black_box(
                runtime
                    .block_on(engine.retrieve(&queries[next()], top10))
                    .unwrap(),
            )
        })
    });
    g.bench_function("fast_path_query", |b| {
        b.iter(|| {
            black_box(
                runtime
                    .block_on(engine.query(&fast(&queries[next()])))
                    .unwrap(),
            )
        })
    });
    g.finish();
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group! {
        name = benches;
        config = criterion::Criterion::default().sample_size(20);
        targets = super::retrieval
    }
}
criterion_main!(group::benches);
