//! Benchmarks of the relevance evaluators: the heuristic and the calibrated evaluator over a
//! result list of 20 chunks of about 200 words, and the parsing of an LLM judge's fenced JSON
//! answer.

use std::hint::black_box;

use crag_core::{EvalDocument, LegHit, RetrievalSignals};
use crag_judge::{
    calibrate, parse_llm_scores, CalibratedEvaluator, CalibrationOptions, HeuristicConfig,
    HeuristicEvaluator, LabelledQuery,
};
use criterion::{criterion_main, Criterion};

const QUERY: &str = "how does reciprocal rank fusion combine keyword and vector retrieval";

const VOCABULARY: &[&str] = &[
    "the",
    "index",
    "stores",
    "chunks",
    "with",
    "their",
    "embeddings",
    "and",
    "a",
    "segment",
    "merge",
    "policy",
    "keeps",
    "latency",
    "low",
    "while",
    "queries",
    "scan",
    "posting",
    "lists",
    "of",
    "terms",
    "scored",
    "by",
    "bm25",
    "then",
    "results",
    "are",
    "returned",
    "to",
    "caller",
    "cache",
    "warm",
    "disk",
    "memory",
    "threads",
    "batch",
    "writer",
    "commit",
    "schema",
];

const QUERY_WORDS: &[&str] = &[
    "reciprocal",
    "rank",
    "fusion",
    "keyword",
    "vector",
    "retrieval",
];

/// Builds `count` documents of `words` words each from a fixed linear congruential sequence,
/// one word in eight taken from the query, spread over five sources.
fn documents(count: usize, words: usize) -> Vec<EvalDocument> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as usize
    };
    (0..count)
        .map(|i| {
            let text = (0..words)
                .map(|w| {
                    if w % 8 == 0 {
                        QUERY_WORDS[next() % QUERY_WORDS.len()]
                    } else {
                        VOCABULARY[next() % VOCABULARY.len()]
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
            let similarity = 0.9 - i as f32 * 0.02;
            let rank = i + 1;
            EvalDocument::new(
                format!("docs/{}.md#{i}", i % 5),
                format!("docs/{}.md", i % 5),
                text,
                similarity,
            )
            .with_retrieval(RetrievalSignals {
                keyword: (i % 3 != 2).then_some(LegHit {
                    rank,
                    score: 20.0 / rank as f32,
                }),
                vector: Some(LegHit {
                    rank,
                    score: (1.0 + similarity) / 2.0,
                }),
                fused_score: Some(2.0 / (60.0 + rank as f32)),
                normalized_score: Some(61.0 / (60.0 + rank as f32)),
                rerank_probability: None,
            })
        })
        .collect()
}

fn heuristic(c: &mut Criterion) {
    let evaluator = HeuristicEvaluator::new(HeuristicConfig::default()).expect("default config");
    let documents = documents(20, 200);
    c.bench_function("heuristic_evaluate_20x200_words", |b| {
        b.iter(|| evaluator.evaluate(black_box(QUERY), black_box(&documents)))
    });
}

fn calibrated(c: &mut Criterion) {
    // A calibration fitted on synthetic lists: answerable ones keep their documents' similarity,
    // unanswerable ones have it lowered; the first document of an answerable list is relevant.
    let base = documents(20, 200);
    let samples: Vec<LabelledQuery> = (0..40)
        .map(|i| {
            let answerable = i % 2 == 0;
            let shift = if answerable { 0.0 } else { 0.3 } + (i % 5) as f32 * 0.01;
            let documents = base
                .iter()
                .map(|d| {
                    let mut d = d.clone();
                    d.similarity -= shift;
                    d
                })
                .collect::<Vec<_>>();
            let relevant = (0..documents.len()).map(|r| answerable && r == 0).collect();
            LabelledQuery {
                id: i.to_string(),
                query: QUERY.into(),
                documents,
                relevant,
            }
        })
        .collect();
    let calibration = calibrate(&samples, &CalibrationOptions::default()).expect("fit");
    let evaluator = CalibratedEvaluator::new(calibration).expect("valid calibration");
    c.bench_function("calibrated_evaluate_20x200_words", |b| {
        b.iter(|| evaluator.evaluate(black_box(QUERY), black_box(&base)))
    });
}

fn parse(c: &mut Criterion) {
    let answer = r#"Here is my assessment of the documents.

```json
{
  "scores": [
    {"document": 1, "score": 9, "reason": "Explains reciprocal rank fusion directly."},
    {"document": 2, "score": 7, "reason": "Covers hybrid retrieval with some detail."},
    {"document": 3, "score": 4, "reason": "Mentions vector search only in passing."},
    {"document": 4, "score": 2, "reason": "About index merging, barely related."},
    {"document": 5, "score": 0, "reason": "Unrelated configuration notes."}
  ],
  "reasoning": "The first two documents answer the query; the rest do not."
}
```"#;
    assert!(parse_llm_scores(answer, 5).is_ok_and(|p| p.scores.iter().all(Option::is_some)));
    c.bench_function("parse_llm_scores_5_fenced", |b| {
        b.iter(|| parse_llm_scores(black_box(answer), black_box(5)))
    });
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(benches, super::heuristic, super::calibrated, super::parse);
}

criterion_main!(group::benches);
