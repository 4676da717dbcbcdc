//! Benchmarks of result fusion, packing and refinement: hybrid reciprocal rank fusion of two
//! 100-long legs sharing half their chunks, fusion of two ranked lists of strings, packing 100
//! items into the default 8000-token budget, and knowledge refinement of a judged head of ten
//! documents of nine sentences each.

use std::hint::black_box;

use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, ScoredChunk, Span};
use crag_engine::{fuse, reciprocal_rank_fusion, Fusion};
use crag_expansion::fuse_ranked;
use crag_refine::{estimate_tokens, pack_to_budget, refine, LexicalScorer, RefineConfig};
use criterion::{criterion_main, Criterion};

/// Builds the `ordinal`-th chunk of one of ten documents, with about 60 words of text.
fn chunk(ordinal: usize) -> Chunk {
    let document_id = DocumentId::new(format!("docs/doc-{}.md", ordinal % 10)).expect("valid id");
    let id = ChunkId::for_document(&document_id, ordinal);
    let text = format!("chunk {ordinal} about hybrid retrieval and rank fusion. ").repeat(8);
    let span = Span::new(0, text.len() as u64, 1, 8).expect("valid span");
    Chunk::new(
        id,
        document_id.clone(),
        document_id.as_str(),
        format!("Document {}", ordinal % 10),
        text,
        span,
        ChunkKind::Prose,
        format!("hash-{}", ordinal % 10),
    )
    .expect("valid chunk")
}

/// Returns a keyword leg of chunks 0..100 and a vector leg of chunks 50..150 (50% overlap),
/// each best first.
fn legs() -> (Vec<ScoredChunk>, Vec<ScoredChunk>) {
    let scored = |ordinals: std::ops::Range<usize>, base: f32| {
        ordinals
            .enumerate()
            .map(|(rank, ordinal)| ScoredChunk {
                chunk: chunk(ordinal),
                score: base - rank as f32 * base / 100.0,
            })
            .collect::<Vec<_>>()
    };
    // The vector leg lists its shared chunks in reverse so the fused order is non-trivial.
    let mut vector = scored(50..150, 1.0);
    vector[..50].reverse();
    (scored(0..100, 20.0), vector)
}

fn hybrid_rrf(c: &mut Criterion) {
    let (keyword, vector) = legs();
    c.bench_function("reciprocal_rank_fusion_100x100_top10", |b| {
        b.iter(|| reciprocal_rank_fusion(black_box(&keyword), black_box(&vector), 60.0, 10))
    });
    let convex = Fusion::Convex {
        keyword_weight: 0.5,
    };
    c.bench_function("convex_fusion_100x100_top10", |b| {
        b.iter(|| fuse(black_box(&keyword), black_box(&vector), convex, 10))
    });
}

fn fuse_strings(c: &mut Criterion) {
    let original: Vec<String> = (0..100).map(|i| format!("docs/doc-{i}.md#0")).collect();
    let expanded: Vec<String> = (50..150)
        .rev()
        .map(|i| format!("docs/doc-{i}.md#0"))
        .collect();
    let lists = vec![original, expanded];
    c.bench_function("fuse_ranked_strings_100x100", |b| {
        b.iter(|| fuse_ranked(black_box(&lists), |s: &String| s.clone(), 60.0))
    });
}

fn pack(c: &mut Criterion) {
    // 100 texts of 40 to 139 words: about 11,500 estimated tokens, so some do not fit.
    let items: Vec<String> = (0..100)
        .map(|i| "word ".repeat(40 + (i * 37) % 100))
        .collect();
    c.bench_function("pack_to_budget_100_items_8000_tokens", |b| {
        b.iter_batched(
            || items.clone(),
            |items| pack_to_budget(items, 8000, |text| estimate_tokens(text)),
            criterion::BatchSize::SmallInput,
        )
    });
}

fn refinement(c: &mut Criterion) {
    // Ten documents of nine sentences drawn from a 24-word vocabulary of inflected forms, so
    // that stemming does real work; the query's terms occur in some sentences only.
    const WORDS: [&str; 24] = [
        "vitamin",
        "supplements",
        "reduced",
        "fractures",
        "among",
        "older",
        "adults",
        "studies",
        "measured",
        "bone",
        "densities",
        "patients",
        "received",
        "weekly",
        "doses",
        "trials",
        "showed",
        "effects",
        "calcium",
        "levels",
        "increasing",
        "risk",
        "healthy",
        "cohorts",
    ];
    let texts: Vec<String> = (0..10)
        .map(|d| {
            (0..9)
                .map(|s| {
                    let words: Vec<&str> = (0..18)
                        .map(|w| WORDS[(d * 7 + s * 5 + w * 3) % 24])
                        .collect();
                    format!("{}.", words.join(" "))
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let query = "Do vitamin D supplements reduce fracture risk in older adults?";
    let config = RefineConfig::default();
    c.bench_function("refine_10_documents_9_sentences", |b| {
        b.iter(|| {
            let mut scorer = LexicalScorer::new(query);
            refine(
                black_box(&texts),
                &config,
                8000,
                |s| scorer.score(s),
                estimate_tokens,
            )
        })
    });
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(
        benches,
        super::hybrid_rrf,
        super::fuse_strings,
        super::pack,
        super::refinement
    );
}

criterion_main!(group::benches);
