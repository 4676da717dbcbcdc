//! Benchmarks of the feedback rerank over 30 candidates of 250 words of English (windows of
//! the project's docs/crag.md, as a query's top 30 share a topic): their index terms, analysed
//! one token at a time as before, remembered per raw token ([`CandidateTerms`]), and taken
//! from a memo shared across queries (`TermMemo`, warm); and the whole reordering with
//! embeddings and words.

use std::hint::black_box;

use crag_expansion::{
    feedback_order_with_terms, term_counts_in, CandidateTerms, TermMemo, TokenTerms,
};
use criterion::{criterion_main, Criterion};

const TEXT: &str = include_str!("../../../docs/crag.md");
const CANDIDATES: usize = 30;
const WORDS: usize = 250;

/// Thirty overlapping 250-word windows of the text, each with its first words as a title.
fn candidates() -> Vec<(String, String)> {
    let words: Vec<&str> = TEXT.split_whitespace().collect();
    let step = (words.len().saturating_sub(WORDS) / CANDIDATES).max(1);
    (0..CANDIDATES)
        .map(|i| {
            let start = (i * step).min(words.len().saturating_sub(WORDS));
            let window = &words[start..(start + WORDS).min(words.len())];
            (window[..6.min(window.len())].join(" "), window.join(" "))
        })
        .collect()
}

/// A deterministic 384-dimensional embedding per candidate.
fn vectors() -> Vec<Vec<f32>> {
    (0..CANDIDATES)
        .map(|i| {
            (0..384)
                .map(|d| (((i * 31 + d * 17) % 97) as f32 / 97.0) - 0.5)
                .collect()
        })
        .collect()
}

fn terms(c: &mut Criterion) {
    let texts = candidates();
    c.bench_function("feedback_terms_30x250_analyse_each_token", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|(title, text)| {
                    let mut t = crag_text::analyze(black_box(title));
                    t.extend(crag_text::analyze(black_box(text)));
                    t
                })
                .collect::<Vec<_>>()
        })
    });
    c.bench_function("feedback_terms_30x250_remembered", |b| {
        b.iter(|| {
            let mut terms = CandidateTerms::new();
            for (title, text) in &texts {
                terms.push(black_box(title), black_box(text));
            }
            terms
        })
    });
    let memo = TermMemo::new(1 << 18);
    // The engine's way when no candidate's terms are kept yet: each candidate's terms counted
    // through the shared memo and the query's tokens, then numbered.
    c.bench_function("feedback_terms_30x250_counted_shared_memo", |b| {
        b.iter(|| {
            let mut terms = CandidateTerms::new();
            let mut seen = TokenTerms::default();
            for (title, text) in &texts {
                let counts =
                    term_counts_in(black_box(title), black_box(text), Some(&memo), &mut seen);
                terms.push_counts(&counts);
            }
            terms
        })
    });
}

fn order(c: &mut Criterion) {
    let texts = candidates();
    let vectors = vectors();
    let scores: Vec<f32> = (0..CANDIDATES).map(|i| 1.0 - i as f32 / 40.0).collect();
    c.bench_function("feedback_order_30_embeddings_and_words", |b| {
        b.iter(|| {
            let mut terms = CandidateTerms::new();
            for (title, text) in &texts {
                terms.push(title, text);
            }
            feedback_order_with_terms(black_box(&scores), black_box(&vectors), &terms, 2, 1.5, 2.0)
        })
    });
}

/// The benchmarks, in a private module: `criterion_group!` defines an undocumented `pub fn`.
mod group {
    criterion::criterion_group!(benches, super::terms, super::order);
}

criterion_main!(group::benches);
