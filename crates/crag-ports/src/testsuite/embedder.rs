//! The embedder contract.

use super::sample_chunks;
use crate::Embedder;

/// Runs the embedder contract.
pub async fn embedder_suite(embedder: &dyn Embedder) {
    let dim = embedder.dimension();
    assert!(dim > 0);
    assert!(embedder.embed(&[]).await.expect("empty batch").is_empty());
    let texts: Vec<String> = sample_chunks().into_iter().map(|c| c.text).collect();
    let batch = embedder.embed(&texts).await.expect("embed");
    assert_eq!(batch.len(), texts.len());
    for v in &batch {
        assert_eq!(v.len(), dim);
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!(
            (norm - 1.0).abs() < 1e-3,
            "vectors are L2-normalised, norm {norm}"
        );
    }
    // Batching does not change results.
    let single = embedder.embed(&texts[1..2]).await.expect("embed one");
    let diff = single[0]
        .iter()
        .zip(&batch[1])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(
        diff < 1e-4,
        "batched and single embeddings differ by {diff}"
    );

    let text = "Ownership, borrowing: Rust's way.";
    let spans = embedder.token_spans(text).expect("token spans");
    assert!(!spans.is_empty());
    assert!(spans.iter().all(|r| r.start < r.end && r.end <= text.len()));
    assert!(
        spans.windows(2).all(|w| w[0].start <= w[1].start),
        "spans in order"
    );
    assert!(embedder.token_spans("").expect("empty text").is_empty());
    assert!(embedder.max_tokens() > 0);

    // A count is the number of spans, whatever the text holds; twice, for an adapter that
    // remembers what it counted.
    for _ in 0..2 {
        for text in COUNTED {
            assert_eq!(
                embedder.count_tokens(text).expect("count"),
                embedder.token_spans(text).expect("spans").len(),
                "count of {text:?}"
            );
        }
    }
}

/// Texts whose token count an adapter might get wrong by counting piece by piece.
const COUNTED: &[&str] = &[
    "",
    "   ",
    "Ownership, borrowing: Rust's way.",
    "Hello, world! It's 3.14 -- naïve café résumé; ÜBER straße.",
    "中文字符和English混合",
    "vertical\u{000B}tab form\u{000C}feed next\u{0085}line joined by the normalizer",
    "no\u{00A0}break thin\u{2009}space ideographic\u{3000}space line\u{2028}separator",
    "zero\u{200B}width\u{200D}joiner soft\u{00AD}hyphen control\u{0007}bell nul\u{0000}x",
    "[CLS] [SEP] [MASK]ed [UNK]x [PAD][PAD] <s> </s>",
    "tabs\tand\nnewlines\r\nand  double  spaces ",
    "https://example.org/a/very/long/path?with=query&and=more&parameters=that&go=on&and=on#frag",
    "supercalifragilisticexpialidocious-antidisestablishmentarianism-pneumonoultramicroscopic",
    "emoji 🦀🦀 and combining e\u{0301} marks",
];
