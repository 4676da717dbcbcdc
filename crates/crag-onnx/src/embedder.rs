use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use crag_ports::{Embedder, PortError, PortResult};
use ndarray::Array2;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::TensorRef;
use tokenizers::{Tokenizer, TruncationParams};

use crate::assets::EmbedderAssets;
use crate::error::{OnnxError, Result};
use crate::runtime::ensure_runtime;

/// Settings of the ONNX sentence embedder.
#[derive(Debug, Clone)]
pub struct OnnxEmbedderConfig {
    /// Model and runtime files.
    pub assets: EmbedderAssets,
    /// Model identifier reported to callers and stored with indexes.
    pub model_id: String,
    /// Texts per inference call.
    pub batch_size: usize,
    /// Intra-op threads of the ONNX session (0: ONNX Runtime decides).
    pub threads: usize,
}

impl OnnxEmbedderConfig {
    /// Defaults for all-MiniLM-L6-v2: batches of 32, one thread per core.
    pub fn new(assets: EmbedderAssets) -> Self {
        Self {
            assets,
            model_id: "all-MiniLM-L6-v2".to_owned(),
            batch_size: 32,
            threads: 0,
        }
    }
}

/// Sentence embedder: BERT-style ONNX model, mean pooling over the attention mask, L2 norm.
///
/// Inference runs on the blocking thread pool, never on the async runtime's workers.
#[derive(Clone)]
pub struct OnnxEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    session: Mutex<Session>,
    /// Truncates at `max_length`, no padding: what the model sees.
    model_tokenizer: Tokenizer,
    /// No truncation, no padding: token spans over whole documents.
    span_tokenizer: Tokenizer,
    model_id: String,
    dimension: usize,
    max_length: usize,
    batch_size: usize,
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
        let environment = ensure_runtime(&assets.runtime_library)?;
        let mut span_tokenizer =
            Tokenizer::from_file(&assets.tokenizer).map_err(|e| OnnxError::InvalidAsset {
                path: assets.tokenizer.clone(),
                reason: e.to_string(),
            })?;
        // The shipped tokenizer.json pads to 128 and truncates at 128: undo both.
        span_tokenizer.with_padding(None);
        span_tokenizer
            .with_truncation(None)
            .map_err(|e| OnnxError::Tokenizer(e.to_string()))?;
        let mut model_tokenizer = span_tokenizer.clone();
        model_tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: assets.max_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| OnnxError::Tokenizer(e.to_string()))?;

        let runtime = |e: ort::Error| OnnxError::Runtime(e.to_string());
        let mut builder = Session::builder(environment)
            .map_err(runtime)?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(|e| OnnxError::Runtime(e.to_string()))?;
        if config.threads > 0 {
            builder = builder
                .with_intra_threads(config.threads)
                .map_err(|e| OnnxError::Runtime(e.to_string()))?;
        }
        let session = builder.commit_from_file(&assets.model).map_err(|e| {
            OnnxError::Runtime(format!("failed to load {}: {e}", assets.model.display()))
        })?;
        Ok(Self {
            inner: Arc::new(Inner {
                session: Mutex::new(session),
                model_tokenizer,
                span_tokenizer,
                model_id: config.model_id,
                dimension: assets.dimension,
                max_length: assets.max_length,
                batch_size: config.batch_size.max(1),
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
        // Sorting by length keeps padding, hence wasted compute, small.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut out = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let seq = batch
                .iter()
                .map(|&i| encodings[i].get_ids().len())
                .max()
                .unwrap_or(0)
                .max(1);
            let mut ids = Array2::<i64>::zeros((batch.len(), seq));
            let mut mask = Array2::<i64>::zeros((batch.len(), seq));
            let types = Array2::<i64>::zeros((batch.len(), seq));
            for (row, &i) in batch.iter().enumerate() {
                for (col, &id) in encodings[i].get_ids().iter().enumerate() {
                    ids[[row, col]] = i64::from(id);
                    mask[[row, col]] = 1;
                }
            }
            let pooled = self.run(&ids, &mask, &types)?;
            for (row, &i) in batch.iter().enumerate() {
                out[i] = pooled[row].clone();
            }
        }
        Ok(out)
    }

    fn run(
        &self,
        ids: &Array2<i64>,
        mask: &Array2<i64>,
        types: &Array2<i64>,
    ) -> Result<Vec<Vec<f32>>> {
        let runtime = |e: ort::Error| OnnxError::Runtime(e.to_string());
        let inputs = ort::inputs![
            "input_ids" => TensorRef::from_array_view(ids.view()).map_err(runtime)?,
            "attention_mask" => TensorRef::from_array_view(mask.view()).map_err(runtime)?,
            "token_type_ids" => TensorRef::from_array_view(types.view()).map_err(runtime)?,
        ];
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let outputs = session.run(inputs).map_err(runtime)?;
        let hidden = outputs
            .get("last_hidden_state")
            .ok_or_else(|| OnnxError::Runtime("model has no output last_hidden_state".into()))?
            .try_extract_array::<f32>()
            .map_err(runtime)?;
        let shape = hidden.shape();
        if shape.len() != 3 || shape[2] != self.dimension {
            return Err(OnnxError::Runtime(format!(
                "unexpected output shape {shape:?}, expected [batch, sequence, {}]",
                self.dimension
            )));
        }
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

    async fn embed(&self, texts: &[String]) -> PortResult<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed_blocking(&texts))
            .await
            .map_err(|e| PortError::internal("embedding task failed", e))?
            .map_err(PortError::from)
    }
}
