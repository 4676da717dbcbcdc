//! The ONNX embedder with the real all-MiniLM-L6-v2 model.

use crag_onnx::{default_assets_dir, EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig, Precision};
use crag_ports::Embedder;

fn embedder() -> OnnxEmbedder {
    embedder_of(Precision::Float32)
}

fn embedder_of(precision: Precision) -> OnnxEmbedder {
    let assets = EmbedderAssets::from_manifest_with(&default_assets_dir(), precision)
        .unwrap_or_else(|e| panic!("assets unavailable: {e}"));
    OnnxEmbedder::new(OnnxEmbedderConfig::of(assets, precision)).expect("load embedder")
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn passes_the_embedder_suite() {
    crag_ports::testsuite::embedder_suite(&embedder()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn weather_sentences_are_closer_than_the_stadium() {
    let e = embedder();
    let texts = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ]
    .map(String::from);
    let v = e.embed(&texts).await.expect("embed");
    let sunny = cosine(&v[0], &v[1]);
    let stadium = cosine(&v[0], &v[2]);
    let between = cosine(&v[1], &v[2]);
    assert!(sunny > stadium, "sunny {sunny} must beat stadium {stadium}");
    // Published sentence-transformers values: 0.6660, 0.1046, 0.1411.
    assert!((sunny - 0.6660).abs() < 0.01, "weather/sunny {sunny}");
    assert!((stadium - 0.1046).abs() < 0.01, "weather/stadium {stadium}");
    assert!((between - 0.1411).abs() < 0.01, "sunny/stadium {between}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_int8_model_passes_the_suite_and_stays_near_float32() {
    let int8 = embedder_of(Precision::Int8);
    crag_ports::testsuite::embedder_suite(&int8).await;
    assert_eq!(int8.model_id(), "all-MiniLM-L6-v2-int8");
    let texts = [
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
        "What is the boundary layer thickness on a flat plate at supersonic speed?",
        "Vitamin D supplementation lowers the risk of fractures in older adults.",
    ]
    .map(String::from);
    let exact = embedder().embed(&texts).await.expect("embed float32");
    let quantised = int8.embed(&texts).await.expect("embed int8");
    for ((text, a), b) in texts.iter().zip(&exact).zip(&quantised) {
        let c = cosine(a, b);
        assert!(c > 0.97, "int8 vs float32 cosine {c} for {text:?}");
        assert!(
            c < 0.99999,
            "the int8 model must be another model, cosine {c}"
        );
    }
    let sunny = cosine(&quantised[0], &quantised[1]);
    let stadium = cosine(&quantised[0], &quantised[2]);
    assert!(sunny > stadium + 0.3, "sunny {sunny}, stadium {stadium}");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_inputs_are_truncated_not_rejected() {
    let e = embedder();
    let long = "retrieval ".repeat(2000);
    let v = e
        .embed(&[long.clone(), "short".into()])
        .await
        .expect("embed");
    assert_eq!(v.len(), 2);
    let spans = e.token_spans(&long).expect("spans");
    assert!(
        spans.len() > e.max_tokens(),
        "span tokenizer must not truncate"
    );
}

#[test]
fn token_spans_are_byte_offsets_on_char_boundaries() {
    let e = embedder();
    let text = "Müller's naïve café — 東京 rocks";
    let spans = e.token_spans(text).expect("spans");
    assert!(!spans.is_empty());
    for r in &spans {
        assert!(
            text.is_char_boundary(r.start) && text.is_char_boundary(r.end),
            "{r:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn several_sessions_embed_the_same_vectors_in_parallel() {
    let precision = Precision::Int8;
    let assets = EmbedderAssets::from_manifest_with(&default_assets_dir(), precision)
        .unwrap_or_else(|e| panic!("assets unavailable: {e}"));
    let mut config = OnnxEmbedderConfig::of(assets, precision);
    config.sessions = 3;
    let pooled = OnnxEmbedder::new(config).expect("load three sessions");
    crag_ports::testsuite::embedder_suite(&pooled).await;
    let one = embedder_of(precision);
    // One text per call with int8: 40 calls spread over the three sessions, in any order.
    let texts: Vec<String> = (0..40)
        .map(|i| format!("note {i}: {}", "boundary layer ".repeat(i % 7 + 1)))
        .collect();
    let spread = pooled.embed(&texts).await.expect("embed over sessions");
    let alone = one.embed(&texts).await.expect("embed with one session");
    assert_eq!(spread.len(), texts.len());
    for (i, (a, b)) in spread.iter().zip(&alone).enumerate() {
        assert!(cosine(a, b) > 0.99999, "text {i}: {}", cosine(a, b));
    }
    // Concurrent callers share the sessions and each gets its own texts' vectors.
    let calls = texts.iter().take(6).map(|t| {
        let e = pooled.clone();
        let t = t.clone();
        tokio::spawn(async move { e.embed(&[t]).await.expect("concurrent embed") })
    });
    for (i, call) in calls.enumerate() {
        let v = call.await.expect("task");
        assert!(cosine(&v[0], &alone[i]) > 0.99999, "concurrent text {i}");
    }
}
