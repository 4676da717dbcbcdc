//! Benchmarks of the ONNX sentence embedder as crag configures it (`OnnxEmbedderConfig::of`):
//! one query, and 32 passages of about 224 tokens (an ingestion's chunks), with the int8 and
//! the float32 all-MiniLM-L6-v2 of the asset directory (`CRAG_ASSETS_DIR`, else the default).
//!
//! Comparing two asset directories (an exporter change) or two ONNX Runtime versions is
//! running this once per directory; docs/benchmarks.md, "Embedder fusions and a session per
//! core", has the figures of the graph fusions it was written for.

use std::hint::black_box;
use std::path::PathBuf;

use crag_onnx::{default_assets_dir, EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig, Precision};
use crag_ports::Embedder;
use criterion::{criterion_main, Criterion};

const QUERY: &str = "does vitamin d supplementation lower the risk of fractures in older adults";

/// Passages of about 224 word-piece tokens each: varied English words, no repeats in a row.
fn passages(n: usize) -> Vec<String> {
    const WORDS: [&str; 16] = [
        "protein",
        "expression",
        "increased",
        "cells",
        "patients",
        "treatment",
        "significant",
        "response",
        "mice",
        "clinical",
        "associated",
        "receptor",
        "levels",
        "human",
        "study",
        "tumour",
    ];
    (0..n)
        .map(|i| {
            (0..200)
                .map(|w| WORDS[(i * 7 + w * 5 + w / 16) % WORDS.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn embed(c: &mut Criterion) {
    let dir = std::env::var_os("CRAG_ASSETS_DIR").map_or_else(default_assets_dir, PathBuf::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let query = vec![QUERY.to_owned()];
    let batch = passages(32);
    for (name, precision) in [("int8", Precision::Int8), ("float32", Precision::Float32)] {
        let assets = match EmbedderAssets::from_manifest_with(&dir, precision) {
            Ok(assets) => assets,
            Err(e) => {
                eprintln!("skipping {name}: {e} (run bash scripts/setup-assets.sh)");
                continue;
            }
        };
        let embedder = OnnxEmbedder::new(OnnxEmbedderConfig::of(assets, precision))
            .expect("the embedder loads");
        c.bench_function(&format!("embed_{name}_query"), |b| {
            b.iter(|| {
                runtime
                    .block_on(embedder.embed(black_box(&query)))
                    .expect("embed")
            })
        });
        c.bench_function(&format!("embed_{name}_32x224_tokens"), |b| {
            b.iter(|| {
                runtime
                    .block_on(embedder.embed(black_box(&batch)))
                    .expect("embed")
            })
        });
    }
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(benches, super::embed);
}

criterion_main!(group::benches);
