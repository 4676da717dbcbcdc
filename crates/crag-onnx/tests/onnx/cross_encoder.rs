//! The cross-encoder reranker with the project's tiny random-weight model, checked against the
//! numpy computation of the same model (`scripts/verify_cross_encoder_onnx.py`).

use crag_onnx::{
    default_assets_dir, CrossEncoderAssets, OnnxCrossEncoder, OnnxCrossEncoderConfig, SETUP_COMMAND,
};
use crag_ports::testsuite::{reranker_suite, RerankerModel};
use crag_ports::{ErrorKind, PortError, Reranker};
use serde::Deserialize;

/// `reference.json` beside the tiny model: fixed pairs, their tokens and numpy logits.
#[derive(Debug, Deserialize)]
struct Reference {
    max_length: usize,
    pairs: Vec<ReferencePair>,
}

#[derive(Debug, Deserialize)]
struct ReferencePair {
    query: String,
    passage: String,
    input_ids: Vec<u32>,
    token_type_ids: Vec<u32>,
    logit: f64,
}

/// The tiny model's assets. A missing model fails the test with the command that builds it:
/// the test script always builds it, so a skip would only hide a broken set-up.
fn tiny_assets() -> CrossEncoderAssets {
    let dir = default_assets_dir();
    match CrossEncoderAssets::tiny_from_manifest(&dir) {
        Ok(Some(assets)) => assets,
        Ok(None) => panic!(
            "{} has no tiny cross-encoder; run `{SETUP_COMMAND}` to build it",
            dir.display()
        ),
        Err(e) => panic!("tiny cross-encoder assets are broken: {e}"),
    }
}

fn load(config: OnnxCrossEncoderConfig) -> OnnxCrossEncoder {
    OnnxCrossEncoder::new(config).unwrap_or_else(|e| panic!("load the tiny cross-encoder: {e}"))
}

fn config(assets: CrossEncoderAssets) -> OnnxCrossEncoderConfig {
    OnnxCrossEncoderConfig::new("tiny-cross-encoder", assets)
}

fn reference(assets: &CrossEncoderAssets) -> Reference {
    let path = assets.model.with_file_name("reference.json");
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_slice(&raw).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread")]
async fn passes_the_reranker_suite() {
    let assets = tiny_assets();
    reranker_suite(&load(config(assets.clone())), RerankerModel::Random).await;
    // Batches of 3 cut the suite's inputs differently; scores must not change.
    let small_batches = OnnxCrossEncoderConfig {
        batch_size: 3,
        ..config(assets)
    };
    reranker_suite(&load(small_batches), RerankerModel::Random).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn logits_match_the_numpy_reference() {
    let assets = tiny_assets();
    let reference = reference(&assets);
    let reranker = load(OnnxCrossEncoderConfig {
        max_length: reference.max_length,
        ..config(assets)
    });
    assert!(reference.pairs.len() >= 5, "too few reference pairs");
    let (lowest, highest) = reference
        .pairs
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), p| {
            (lo.min(p.logit), hi.max(p.logit))
        });
    assert!(
        highest - lowest > 0.1,
        "reference logits barely differ ({lowest}..{highest}): the comparison would prove little"
    );

    for pair in &reference.pairs {
        let tokens = reranker
            .encode_pair(&pair.query, &pair.passage)
            .expect("encode pair");
        assert_eq!(tokens.ids, pair.input_ids, "token ids of {:?}", pair.query);
        assert_eq!(
            tokens.type_ids, pair.token_type_ids,
            "token types of {:?}",
            pair.query
        );
    }

    // Each query with all its reference passages in one call: single pairs and padded batches.
    let mut max_diff = 0.0f64;
    let mut compared = 0;
    let mut queries: Vec<&str> = reference.pairs.iter().map(|p| p.query.as_str()).collect();
    queries.dedup();
    for query in queries {
        let pairs: Vec<&ReferencePair> = reference
            .pairs
            .iter()
            .filter(|p| p.query == query)
            .collect();
        let passages: Vec<String> = pairs.iter().map(|p| p.passage.clone()).collect();
        let scores = reranker.rerank(query, &passages).await.expect("rerank");
        for (score, pair) in scores.iter().zip(&pairs) {
            max_diff = max_diff.max((f64::from(score.logit) - pair.logit).abs());
            compared += 1;
        }
    }
    // All pairs at once too, query by query, in batches mixing short and truncated inputs.
    for pair in &reference.pairs {
        let scores = reranker
            .rerank(
                &pair.query,
                &[pair.passage.clone(), "Some other passage.".to_owned()],
            )
            .await
            .expect("rerank");
        max_diff = max_diff.max((f64::from(scores[0].logit) - pair.logit).abs());
    }
    eprintln!(
        "max |adapter - numpy| logit over {compared} reference pairs: {max_diff:.3e} (range {lowest:.4}..{highest:.4})"
    );
    assert_eq!(compared, reference.pairs.len());
    assert!(max_diff < 1e-4, "adapter and numpy differ by {max_diff}");
}

#[tokio::test(flavor = "multi_thread")]
async fn long_passages_are_cut_and_the_query_is_kept() {
    let assets = tiny_assets();
    let reranker = load(config(assets));
    let max_length = reranker.max_length();
    let query = "which passage talks about ranking and retrieval evaluation";
    let passage: String = (0..2000)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ");

    // [CLS] query [SEP] [SEP]: the query segment is all but the last token.
    let alone = reranker.encode_pair(query, "").expect("encode").ids;
    let query_segment = alone.len() - 1;
    let long = reranker.encode_pair(query, &passage).expect("encode");
    assert_eq!(long.ids.len(), max_length, "the pair fills max_length");
    assert_eq!(
        long.ids[..query_segment],
        alone[..query_segment],
        "the query is kept whole"
    );
    assert_eq!(
        long.type_ids.iter().filter(|&&t| t == 0).count(),
        query_segment,
        "only the query segment has token type 0"
    );
    assert_eq!(long.ids.last(), alone.last(), "the pair ends with [SEP]");

    let scores = reranker
        .rerank(query, &[passage.clone(), "short".to_owned()])
        .await
        .expect("rerank");
    assert!(scores.iter().all(|s| s.logit.is_finite()), "{scores:?}");

    // An enormous query is cut to half the room and leaves the rest to the passage.
    let huge_query = "enormous question ".repeat(1000);
    let both = reranker.encode_pair(&huge_query, &passage).expect("encode");
    assert_eq!(both.ids.len(), max_length);
    let query_tokens = both.type_ids.iter().filter(|&&t| t == 0).count() - 2; // [CLS], [SEP]
    let passage_tokens = both.type_ids.iter().filter(|&&t| t == 1).count() - 1; // [SEP]
    let room = max_length - 3;
    assert_eq!(
        (query_tokens, passage_tokens),
        (room / 2, room - room / 2),
        "query and passage share the room"
    );
    let scores = reranker
        .rerank(&huge_query, &[passage])
        .await
        .expect("rerank");
    assert!(scores[0].logit.is_finite());
}

#[test]
fn max_length_is_configurable_and_must_leave_room() {
    let assets = tiny_assets();
    let short = load(OnnxCrossEncoderConfig {
        max_length: 32,
        ..config(assets.clone())
    });
    let pair = short
        .encode_pair("what is ownership", &"borrowing ".repeat(100))
        .expect("encode");
    assert_eq!(pair.ids.len(), 32);

    let err = OnnxCrossEncoder::new(OnnxCrossEncoderConfig {
        max_length: 4,
        ..config(assets)
    })
    .expect_err("4 tokens cannot hold a pair beside 3 special tokens");
    assert_eq!(PortError::from(err).kind(), ErrorKind::InvalidInput);
}
