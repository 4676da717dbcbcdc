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
}
