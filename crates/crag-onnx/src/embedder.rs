use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use crag_ports::{Embedder, PortError, PortResult};
use ndarray::ArrayD;
use tokenizers::Tokenizer;

use crate::assets::{EmbedderAssets, Precision};
use crate::bert::{load_tokenizer, off_runtime, truncating_at, BertInputs, BertModel};
use crate::counting::TokenCounter;
use crate::error::{OnnxError, Result};

/// Settings of the ONNX sentence embedder.
#[derive(Debug, Clone)]
pub struct OnnxEmbedderConfig {
    /// Model and runtime files.
    pub assets: EmbedderAssets,
    /// Model identifier reported to callers and stored with indexes.
    pub model_id: String,
    /// Texts per inference call.
    pub batch_size: usize,
    /// Intra-op threads of each ONNX session (0: ONNX Runtime decides with one session, the
    /// cores shared equally among several).
    pub threads: usize,
    /// Sessions of the model: concurrent embeddings run side by side on as many, and the
    /// batches of one call are spread over them. [`PER_CORE_SESSIONS`]: one per core (8 at
    /// most; with `threads` set, as many as fit the cores with that many threads each).
    pub sessions: usize,
    /// Whether the intra-op threads spin waiting for the next call (ONNX Runtime's default)
    /// or sleep when a call is done, leaving the cores to the rest of the query.
    pub spinning: bool,
}

impl OnnxEmbedderConfig {
    /// Defaults for all-MiniLM-L6-v2: batches of 32, one thread per core.
    pub fn new(assets: EmbedderAssets) -> Self {
        Self {
            assets,
            model_id: "all-MiniLM-L6-v2".to_owned(),
            batch_size: 32,
            threads: 0,
            sessions: 1,
            spinning: true,
        }
    }

    /// Defaults for the all-MiniLM-L6-v2 model of `precision` (assets located with the same
    /// precision): its model id, and for int8 one text per inference call. A dynamically
    /// quantised model scales its activations by the range of the whole input tensor, so in
    /// a batch a text's embedding would depend on the other texts (by up to 0.02 per
    /// coordinate); alone it is the same at ingest and at query time.
    ///
    /// The int8 model gets a session per core ([`PER_CORE_SESSIONS`]), each with its share of
    /// the cores: an ingestion embeds that many texts at once, one thread each, which beats
    /// one text at a time on every core (Cranfield 15.5 -> 10.5 s on 2 cores); a lone query
    /// embeds 0.2-0.5 ms slower on one thread, and is as fast as a whole (benchmarks.md,
    /// "Embedder fusions and a session per core").
    pub fn of(assets: EmbedderAssets, precision: Precision) -> Self {
        let mut config = Self::new(assets);
        config.model_id = precision.model_id(&config.model_id);
        if precision == Precision::Int8 {
            config.batch_size = 1;
            config.sessions = PER_CORE_SESSIONS;
        }
        config
    }
}

/// [`OnnxEmbedderConfig::sessions`] meaning one session per core.
pub const PER_CORE_SESSIONS: usize = crate::bert::PER_CORE;

/// Sentence embedder: BERT-style ONNX model, mean pooling over the attention mask, L2 norm.
///
/// Inference runs on the blocking thread pool, never on the async runtime's workers.
#[derive(Clone)]
pub struct OnnxEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    /// Truncates at `max_length`, no padding: what the model sees.
    model_tokenizer: Tokenizer,
    /// No truncation, no padding: token spans over whole documents.
    span_tokenizer: Arc<Tokenizer>,
    /// Counts with the span tokenizer, per remembered piece.
    counter: TokenCounter,
    model_id: String,
    dimension: usize,
    max_length: usize,
}

impl std::fmt::Debug for OnnxEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxEmbedder")
            .field("model_id", &self.inner.model_id)
            .field("dimension", &self.inner.dimension)
            .field("max_length", &self.inner.max_length)
            .finish_non_exhaustive()
    }
}

impl OnnxEmbedder {
    /// Loads the runtime, the tokenizer and the model.
    pub fn new(config: OnnxEmbedderConfig) -> Result<Self> {
        let assets = &config.assets;
        let span_tokenizer = Arc::new(load_tokenizer(&assets.tokenizer)?);
        let model_tokenizer = truncating_at(&span_tokenizer, assets.max_length)?;
        let model = BertModel::load(
            &assets.runtime_library,
            &assets.model,
            config.threads,
            config.batch_size,
            config.sessions,
            config.spinning,
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                model_tokenizer,
                counter: TokenCounter::new(Arc::clone(&span_tokenizer)),
                span_tokenizer,
                model_id: config.model_id,
                dimension: assets.dimension,
                max_length: assets.max_length,
            }),
        })
    }
}

impl Inner {
    /// Embeds texts synchronously, batching inputs of similar length together.
    fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .model_tokenizer
            .encode_batch(texts.iter().map(String::as_str).collect::<Vec<_>>(), true)
            .map_err(|e| OnnxError::Tokenizer(e.to_string()))?;
        let mut out = vec![Vec::new(); texts.len()];
        let batches =
            self.model
                .run_batches(&encodings, "last_hidden_state", |_, inputs, hidden| {
                    self.pool(&hidden, inputs)
                })?;
        for (rows, pooled) in batches {
            for (vector, i) in pooled.into_iter().zip(rows) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    /// Mean-pools `hidden` over the attention mask and L2-normalises each row.
    fn pool(&self, hidden: &ArrayD<f32>, inputs: &BertInputs) -> Result<Vec<Vec<f32>>> {
        let shape = hidden.shape();
        if shape.len() != 3 || shape[2] != self.dimension {
            return Err(OnnxError::Runtime(format!(
                "unexpected output shape {shape:?}, expected [batch, sequence, {}]",
                self.dimension
            )));
        }
        let mask = &inputs.mask;
        let (batch, seq) = (shape[0], shape[1]);
        let mut pooled = Vec::with_capacity(batch);
        for b in 0..batch {
            let mut sum = vec![0.0f32; self.dimension];
            let mut count = 0.0f32;
            for s in 0..seq {
                if mask[[b, s]] == 0 {
                    continue;
                }
                count += 1.0;
                for (d, acc) in sum.iter_mut().enumerate() {
                    *acc += hidden[[b, s, d]];
                }
            }
            let count = count.max(1.0);
            sum.iter_mut().for_each(|x| *x /= count);
            let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            sum.iter_mut().for_each(|x| *x /= norm);
            pooled.push(sum);
        }
        Ok(pooled)
    }
}

#[async_trait]
impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    fn max_tokens(&self) -> usize {
        self.inner.max_length
    }

    fn token_spans(&self, text: &str) -> PortResult<Vec<Range<usize>>> {
        let encoding = self
            .inner
            .span_tokenizer
            .encode(text, false)
            .map_err(|e| PortError::from(OnnxError::Tokenizer(e.to_string())))?;
        Ok(encoding
            .get_offsets()
            .iter()
            .filter(|(start, end)| start < end)
            .map(|&(start, end)| start..end)
            .collect())
    }

    fn count_tokens(&self, text: &str) -> PortResult<usize> {
        Ok(self.inner.counter.count(text)?)
    }

    async fn embed(&self, texts: &[String]) -> PortResult<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        off_runtime("embedding", move || inner.embed_blocking(&texts)).await
    }
}
