//! Benchmarks of the ONNX cross-encoder: reranking 20 and 100 passages of 256 tokens per pair
//! with the project's tiny test model and, when `CRAG_RERANK_MODEL` and
//! `CRAG_RERANK_TOKENIZER` point at a real exported model, with that model too.

use std::hint::black_box;
use std::path::PathBuf;

use crag_onnx::{
    default_assets_dir, CrossEncoderAssets, EmbedderAssets, OnnxCrossEncoder,
    OnnxCrossEncoderConfig,
};
use crag_ports::Reranker;
use criterion::{criterion_main, Criterion};

const QUERY: &str = "how does reciprocal rank fusion combine keyword and vector retrieval";

/// Passages long enough to be cut to the 256-token pair limit.
fn passages(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            (0..400)
                .map(|w| format!("word{} ", (i * 31 + w * 7) % 997))
                .collect::<String>()
        })
        .collect()
}

fn bench_model(c: &mut Criterion, name: &str, reranker: &OnnxCrossEncoder) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    for n in [20, 100] {
        let batch = passages(n);
        c.bench_function(&format!("rerank_{name}_{n}x256_tokens"), |b| {
            b.iter(|| {
                runtime
                    .block_on(reranker.rerank(black_box(QUERY), black_box(&batch)))
                    .expect("rerank")
            })
        });
    }
}

fn rerank(c: &mut Criterion) {
    let dir = std::env::var_os("CRAG_ASSETS_DIR").map_or_else(default_assets_dir, PathBuf::from);
    match CrossEncoderAssets::tiny_from_manifest(&dir) {
        Ok(Some(assets)) => {
            let reranker = OnnxCrossEncoder::new(OnnxCrossEncoderConfig::new("tiny", assets))
                .expect("tiny cross-encoder");
            bench_model(c, "tiny", &reranker);
        }
        _ => eprintln!("skipping the tiny model: run bash scripts/setup-assets.sh"),
    }
    let (Some(model), Some(tokenizer)) = (
        std::env::var_os("CRAG_RERANK_MODEL"),
        std::env::var_os("CRAG_RERANK_TOKENIZER"),
    ) else {
        eprintln!("no real model: set CRAG_RERANK_MODEL and CRAG_RERANK_TOKENIZER to bench one");
        return;
    };
    let runtime_library = EmbedderAssets::from_manifest(&dir)
        .expect("ONNX Runtime from the asset manifest")
        .runtime_library;
    let assets = CrossEncoderAssets {
        runtime_library,
        model: model.into(),
        tokenizer: tokenizer.into(),
    };
    let reranker =
        OnnxCrossEncoder::new(OnnxCrossEncoderConfig::new("real", assets)).expect("cross-encoder");
    bench_model(c, "real", &reranker);
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(benches, super::rerank);
}

criterion_main!(group::benches);
