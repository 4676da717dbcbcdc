use std::sync::Arc;

use async_trait::async_trait;
use crag_ports::{PortError, PortResult, RerankScore, Reranker};
use tokenizers::{Encoding, PostProcessor, Tokenizer};

use crate::assets::CrossEncoderAssets;
use crate::bert::{load_tokenizer, off_runtime, truncating_at, BertModel};
use crate::error::{OnnxError, Result};

/// Settings of the ONNX cross-encoder reranker.
#[derive(Debug, Clone)]
pub struct OnnxCrossEncoderConfig {
    /// Model, tokenizer and runtime files.
    pub assets: CrossEncoderAssets,
    /// Model identifier reported to callers (and part of rerank cache keys).
    pub model_id: String,
    /// (query, passage) pairs per inference call.
    pub batch_size: usize,
    /// Most tokens per pair, special tokens included; longer pairs are truncated.
    pub max_length: usize,
    /// Intra-op threads of the ONNX session (0: ONNX Runtime decides).
    pub threads: usize,
}

impl OnnxCrossEncoderConfig {
    /// Pairs per inference call unless configured.
    pub const DEFAULT_BATCH_SIZE: usize = 16;
    /// Most tokens per pair unless configured.
    pub const DEFAULT_MAX_LENGTH: usize = 256;

    /// Defaults: batches of 16 pairs, 256 tokens per pair, one thread per core.
    pub fn new(model_id: impl Into<String>, assets: CrossEncoderAssets) -> Self {
        Self {
            assets,
            model_id: model_id.into(),
            batch_size: Self::DEFAULT_BATCH_SIZE,
            max_length: Self::DEFAULT_MAX_LENGTH,
            threads: 0,
        }
    }
}

/// The model input of one (query, passage) pair: `[CLS] query [SEP] passage [SEP]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairTokens {
    /// Token ids, special tokens included.
    pub ids: Vec<u32>,
    /// Segment of each token: 0 for the query part, 1 for the passage part.
    pub type_ids: Vec<u32>,
}

/// Cross-encoder reranker: a BERT sequence classifier in ONNX Runtime scoring (query, passage)
/// pairs, e.g. ms-marco-MiniLM-L-6-v2.
///
/// A pair longer than `max_length` tokens loses the end of its passage; the query is kept whole
/// unless it alone takes more than half the room, in which case both are cut to half (the
/// tokenizer's "longest first" truncation). Inference runs on the blocking thread pool.
#[derive(Clone)]
pub struct OnnxCrossEncoder {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    /// Pair truncation at `max_length`, no padding.
    tokenizer: Tokenizer,
    model_id: String,
    max_length: usize,
}

impl std::fmt::Debug for OnnxCrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxCrossEncoder")
            .field("model_id", &self.inner.model_id)
            .field("max_length", &self.inner.max_length)
            .field("batch_size", &self.inner.model.batch_size())
            .finish_non_exhaustive()
    }
}

impl OnnxCrossEncoder {
    /// Loads the runtime, the tokenizer and the model.
    pub fn new(config: OnnxCrossEncoderConfig) -> Result<Self> {
        if config.batch_size == 0 {
            return Err(OnnxError::InvalidConfig(
                "batch size must be at least 1".into(),
            ));
        }
        let assets = &config.assets;
        let tokenizer = load_tokenizer(&assets.tokenizer)?;
        let special = tokenizer
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(true));
        if config.max_length < special + 2 {
            return Err(OnnxError::InvalidConfig(format!(
                "max length {} leaves no room for a query and a passage beside {special} special tokens",
                config.max_length
            )));
        }
        let tokenizer = truncating_at(&tokenizer, config.max_length)?;
        let model = BertModel::load(
            &assets.runtime_library,
            &assets.model,
            config.threads,
            config.batch_size,
            1,
            true,
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                model_id: config.model_id,
                max_length: config.max_length,
            }),
        })
    }

    /// Returns the most tokens a pair is given, special tokens included.
    pub fn max_length(&self) -> usize {
        self.inner.max_length
    }

    /// Returns the tokens the model sees for (`query`, `passage`), truncation applied.
    pub fn encode_pair(&self, query: &str, passage: &str) -> Result<PairTokens> {
        let encoding = self.inner.encode(&[(query, passage)])?.pop();
        let encoding = encoding.ok_or_else(|| OnnxError::Tokenizer("no encoding".into()))?;
        Ok(PairTokens {
            ids: encoding.get_ids().to_vec(),
            type_ids: encoding.get_type_ids().to_vec(),
        })
    }
}

impl Inner {
    fn encode(&self, pairs: &[(&str, &str)]) -> Result<Vec<Encoding>> {
        self.tokenizer
            .encode_batch(pairs.to_vec(), true)
            .map_err(|e| OnnxError::Tokenizer(e.to_string()))
    }

    /// Scores the pairs synchronously, batching pairs of similar length together.
    fn score_blocking(&self, query: &str, passages: &[String]) -> Result<Vec<RerankScore>> {
        let pairs: Vec<(&str, &str)> = passages.iter().map(|p| (query, p.as_str())).collect();
        let encodings = self.encode(&pairs)?;
        let mut scores = vec![RerankScore::from_logit(0.0); passages.len()];
        let batches = self
            .model
            .run_batches(&encodings, "logits", |rows, _, logits| {
                if logits.shape() != [rows.len(), 1] {
                    return Err(OnnxError::Runtime(format!(
                        "unexpected logits shape {:?}, expected [{}, 1]",
                        logits.shape(),
                        rows.len()
                    )));
                }
                Ok(logits.iter().copied().collect::<Vec<f32>>())
            })?;
        for (rows, logits) in batches {
            for (logit, i) in logits.into_iter().zip(rows) {
                scores[i] = RerankScore::from_logit(logit);
            }
        }
        Ok(scores)
    }
}

#[async_trait]
impl Reranker for OnnxCrossEncoder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    async fn rerank(&self, query: &str, passages: &[String]) -> PortResult<Vec<RerankScore>> {
        if query.trim().is_empty() {
            return Err(PortError::invalid_input("query is empty"));
        }
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let query = query.to_owned();
        let passages = passages.to_vec();
        off_runtime("reranking", move || inner.score_blocking(&query, &passages)).await
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn config() -> OnnxCrossEncoderConfig {
        OnnxCrossEncoderConfig::new(
            "test",
            CrossEncoderAssets {
                runtime_library: PathBuf::from("/nonexistent/libonnxruntime.so"),
                model: PathBuf::from("/nonexistent/model.onnx"),
                tokenizer: PathBuf::from("/nonexistent/tokenizer.json"),
            },
        )
    }

    #[test]
    fn defaults_are_16_pairs_of_256_tokens() {
        let c = config();
        assert_eq!((c.batch_size, c.max_length, c.threads), (16, 256, 0));
        assert_eq!(c.model_id, "test");
    }

    #[test]
    fn a_zero_batch_size_is_invalid_input() {
        let err = OnnxCrossEncoder::new(OnnxCrossEncoderConfig {
            batch_size: 0,
            ..config()
        })
        .expect_err("must fail");
        assert!(err.to_string().contains("batch size"), "{err}");
        assert_eq!(
            PortError::from(err).kind(),
            crag_ports::ErrorKind::InvalidInput
        );
    }

    #[test]
    fn a_missing_tokenizer_is_reported() {
        let err = OnnxCrossEncoder::new(config()).expect_err("must fail");
        assert!(err.to_string().contains("tokenizer.json"), "{err}");
        assert_eq!(
            PortError::from(err).kind(),
            crag_ports::ErrorKind::Unavailable
        );
    }
}
