//! What the BERT-style adapters share: loading the tokenizer and the session, padded batches of
//! encodings, running the model, and moving the work off the async runtime.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

use crag_ports::{PortError, PortResult};
use ndarray::{Array2, ArrayD};
use ort::session::builder::{GraphOptimizationLevel, SessionBuilder};
use ort::session::Session;
use ort::value::TensorRef;
use tokenizers::{Encoding, Tokenizer, TruncationParams};

use crate::error::{OnnxError, Result};
use crate::runtime::ensure_runtime;

/// Loads `tokenizer.json` with its built-in padding and truncation switched off.
///
/// The MiniLM tokenizer.json pads every input to 128 and truncates at 128; batches are padded
/// here instead, and each adapter sets the truncation it needs.
pub(crate) fn load_tokenizer(path: &Path) -> Result<Tokenizer> {
    let mut tokenizer = Tokenizer::from_file(path).map_err(|e| OnnxError::InvalidAsset {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    tokenizer.with_padding(None);
    tokenizer
        .with_truncation(None)
        .map_err(|e| OnnxError::Tokenizer(e.to_string()))?;
    Ok(tokenizer)
}

/// Returns a copy of `tokenizer` that truncates at `max_length` tokens, special tokens included;
/// pairs are cut "longest first" (the shorter text stays whole while it takes at most half).
pub(crate) fn truncating_at(tokenizer: &Tokenizer, max_length: usize) -> Result<Tokenizer> {
    let mut truncating = tokenizer.clone();
    truncating
        .with_truncation(Some(TruncationParams {
            max_length,
            ..TruncationParams::default()
        }))
        .map_err(|e| OnnxError::Tokenizer(e.to_string()))?;
    Ok(truncating)
}

/// Graph fusions ONNX Runtime would apply that make these models slower on a CPU.
///
/// `SkipLayerNormFusion` (a residual Add and its LayerNormalization as one op) costs the int8
/// MiniLM 22% of its time on a 226-token text (ONNX Runtime 1.31, one or two threads): the fused
/// kernel took 8x the time of the unfused pair. The float32 graph is not fused by it either way.
/// A test saves the graph the sessions run and checks the fusion is absent (and the GELU fused),
/// so a runtime that renames the optimiser fails it.
const SLOW_FUSIONS: &str = "SkipLayerNormFusion";

/// A session builder with crag's settings: every graph optimisation but [`SLOW_FUSIONS`],
/// `threads` intra-op threads (0: ONNX Runtime's choice), spinning or not.
fn session_builder(
    environment: &ort::environment::Environment,
    threads: usize,
    spinning: bool,
) -> Result<SessionBuilder> {
    fn runtime(e: impl std::fmt::Display) -> OnnxError {
        OnnxError::Runtime(e.to_string())
    }
    let mut builder = Session::builder(environment)
        .map_err(runtime)?
        .with_optimization_level(GraphOptimizationLevel::Level3)
        .map_err(runtime)?
        .with_disabled_optimizers(SLOW_FUSIONS)
        .map_err(runtime)?
        .with_intra_op_spinning(spinning)
        .map_err(runtime)?;
    if threads > 0 {
        builder = builder.with_intra_threads(threads).map_err(runtime)?;
    }
    Ok(builder)
}

/// Most sessions [`PER_CORE`] asks for (about 23 MiB each for the int8 MiniLM): beyond, the
/// sessions share the cores.
const MAX_PER_CORE_SESSIONS: usize = 8;

/// `sessions` meaning "one per core" ([`MAX_PER_CORE_SESSIONS`] at most; with `threads` set,
/// as many as fit the cores with that many threads each).
pub(crate) const PER_CORE: usize = 0;

/// The sessions to load and the intra-op threads of each on `cores` cores, from the
/// configured `sessions` ([`PER_CORE`] or a number) and `threads` (0: ONNX Runtime's choice,
/// a thread per core, with one session; an equal share of the cores with several).
fn sessions_and_threads(sessions: usize, threads: usize, cores: usize) -> (usize, usize) {
    let sessions = match sessions {
        PER_CORE => (cores / threads.max(1)).clamp(1, MAX_PER_CORE_SESSIONS),
        n => n,
    };
    let threads = match threads {
        0 if sessions > 1 => (cores / sessions).max(1),
        n => n,
    };
    (sessions, threads)
}

/// A batch's encoding indexes and what was made of its output.
type BatchResult<T> = Result<(Vec<usize>, T)>;

/// A loaded BERT-style ONNX model (inputs `input_ids`, `attention_mask`, `token_type_ids`) and
/// the number of inputs it is given per call.
///
/// It holds one or more sessions of the model: a session runs one call at a time, so with
/// several, concurrent callers (queries) run side by side, and the batches of one long call
/// (ingest) are spread over them.
pub(crate) struct BertModel {
    sessions: Vec<Mutex<Session>>,
    /// Where the next caller starts looking for a free session.
    next: AtomicUsize,
    batch_size: usize,
}

impl BertModel {
    /// Loads ONNX Runtime from `runtime_library` (once per process) and `sessions` sessions of
    /// the model at `model`.
    ///
    /// `sessions` and `threads` (intra-op threads of each session) as [`sessions_and_threads`]
    /// resolves them. `spinning`: the intra-op threads spin waiting for work after a call
    /// (ONNX Runtime's default) instead of sleeping at once.
    pub(crate) fn load(
        runtime_library: &Path,
        model: &Path,
        threads: usize,
        batch_size: usize,
        sessions: usize,
        spinning: bool,
    ) -> Result<Self> {
        let environment = ensure_runtime(runtime_library)?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (sessions, threads) = sessions_and_threads(sessions, threads, cores);
        let mut loaded = Vec::with_capacity(sessions);
        for _ in 0..sessions {
            let session = session_builder(environment, threads, spinning)?
                .commit_from_file(model)
                .map_err(|e| {
                    OnnxError::Runtime(format!("failed to load {}: {e}", model.display()))
                })?;
            loaded.push(Mutex::new(session));
        }
        Ok(Self {
            sessions: loaded,
            next: AtomicUsize::new(0),
            batch_size: batch_size.max(1),
        })
    }

    /// A free session, or when all are busy the one after the last caller's (waiting for it).
    fn session(&self) -> MutexGuard<'_, Session> {
        let n = self.sessions.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        for k in 0..n {
            match self.sessions[(start + k) % n].try_lock() {
                Ok(guard) => return guard,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {}
            }
        }
        self.sessions[start]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Returns the number of inputs per call.
    pub(crate) fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Runs the model over `encodings` in batches of similar length (so padding, wasted
    /// compute, stays small), hands `each` the indexes of a batch's encodings, its inputs and
    /// its output named `output`, and returns what `each` made of every batch with the
    /// batch's indexes. With several sessions the batches run on as many threads.
    pub(crate) fn run_batches<T: Send>(
        &self,
        encodings: &[Encoding],
        output: &str,
        each: impl Fn(&[usize], &BertInputs, ArrayD<f32>) -> Result<T> + Sync,
    ) -> Result<Vec<(Vec<usize>, T)>> {
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let batches: Vec<&[usize]> = order.chunks(self.batch_size).collect();
        let run = |rows: &[usize]| -> BatchResult<T> {
            let inputs = BertInputs::new(encodings, rows);
            let result = inputs.run(&mut self.session(), output)?;
            Ok((rows.to_vec(), each(rows, &inputs, result)?))
        };
        let workers = self.sessions.len().min(batches.len());
        if workers <= 1 {
            return batches.into_iter().map(run).collect();
        }
        // Each worker takes the next batch not yet taken; results keep the batch order.
        let taken = AtomicUsize::new(0);
        let mut results: Vec<(usize, BatchResult<T>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| {
                    scope.spawn(|| {
                        let mut mine = Vec::new();
                        loop {
                            let b = taken.fetch_add(1, Ordering::Relaxed);
                            let Some(rows) = batches.get(b) else { break };
                            let result = run(rows);
                            let failed = result.is_err();
                            mine.push((b, result));
                            if failed {
                                // Stop the other workers too: the call fails anyway.
                                taken.store(batches.len(), Ordering::Relaxed);
                                break;
                            }
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        results.sort_by_key(|(b, _)| *b);
        results.into_iter().map(|(_, r)| r).collect()
    }
}

/// The model inputs of one batch, right-padded to its longest encoding.
pub(crate) struct BertInputs {
    /// Token ids, 0 in padding.
    pub(crate) ids: Array2<i64>,
    /// 1 on real tokens, 0 on padding.
    pub(crate) mask: Array2<i64>,
    /// Segment of each token: 0 for the first text, 1 for the second of a pair.
    pub(crate) types: Array2<i64>,
}

impl BertInputs {
    /// Builds the inputs of the encodings at `rows`, in that order.
    fn new(encodings: &[Encoding], rows: &[usize]) -> Self {
        let seq = rows
            .iter()
            .map(|&i| encodings[i].get_ids().len())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut inputs = Self {
            ids: Array2::zeros((rows.len(), seq)),
            mask: Array2::zeros((rows.len(), seq)),
            types: Array2::zeros((rows.len(), seq)),
        };
        for (row, &i) in rows.iter().enumerate() {
            let encoding = &encodings[i];
            for (col, (&id, &type_id)) in encoding
                .get_ids()
                .iter()
                .zip(encoding.get_type_ids())
                .enumerate()
            {
                inputs.ids[[row, col]] = i64::from(id);
                inputs.mask[[row, col]] = 1;
                inputs.types[[row, col]] = i64::from(type_id);
            }
        }
        inputs
    }

    /// Runs `session` on these inputs and returns its output named `output`.
    fn run(&self, session: &mut Session, output: &str) -> Result<ArrayD<f32>> {
        let runtime = |e: ort::Error| OnnxError::Runtime(e.to_string());
        let inputs = ort::inputs![
            "input_ids" => TensorRef::from_array_view(self.ids.view()).map_err(runtime)?,
            "attention_mask" => TensorRef::from_array_view(self.mask.view()).map_err(runtime)?,
            "token_type_ids" => TensorRef::from_array_view(self.types.view()).map_err(runtime)?,
        ];
        let outputs = session.run(inputs).map_err(runtime)?;
        let value = outputs
            .get(output)
            .ok_or_else(|| OnnxError::Runtime(format!("model has no output {output}")))?;
        Ok(value
            .try_extract_array::<f32>()
            .map_err(runtime)?
            .to_owned())
    }
}

/// Runs `work` on the blocking thread pool, so inference never stalls the async runtime.
pub(crate) async fn off_runtime<T, F>(what: &'static str, work: F) -> PortResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| PortError::internal(format!("{what} task failed"), e))?
        .map_err(PortError::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assets::{default_assets_dir, EmbedderAssets, Precision};

    /// The graph ONNX Runtime runs for the model of `precision` with crag's settings, or with
    /// nothing disabled, as saved by it (ONNX protobuf bytes).
    fn optimised_graph(precision: Precision, crag_settings: bool) -> Vec<u8> {
        let assets = EmbedderAssets::from_manifest_with(&default_assets_dir(), precision)
            .unwrap_or_else(|e| panic!("assets unavailable: {e}"));
        let environment = ensure_runtime(&assets.runtime_library).expect("runtime");
        let builder = if crag_settings {
            session_builder(environment, 1, false).expect("builder")
        } else {
            Session::builder(environment)
                .unwrap()
                .with_optimization_level(GraphOptimizationLevel::Level3)
                .unwrap()
        };
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("optimised.onnx");
        builder
            .with_optimized_model_path(&saved)
            .unwrap()
            .commit_from_file(&assets.model)
            .expect("session");
        std::fs::read(&saved).expect("optimised graph saved")
    }

    #[test]
    fn sessions_and_threads_share_the_cores() {
        // One per core, a thread each; at most eight, sharing the cores beyond.
        assert_eq!(sessions_and_threads(PER_CORE, 0, 2), (2, 1));
        assert_eq!(sessions_and_threads(PER_CORE, 0, 1), (1, 0));
        assert_eq!(sessions_and_threads(PER_CORE, 0, 32), (8, 4));
        // With threads set: as many as fit, at least one.
        assert_eq!(sessions_and_threads(PER_CORE, 2, 2), (1, 2));
        assert_eq!(sessions_and_threads(PER_CORE, 2, 8), (4, 2));
        assert_eq!(sessions_and_threads(PER_CORE, 4, 2), (1, 4));
        assert_eq!(sessions_and_threads(PER_CORE, 2, 64), (8, 2));
        // A number of sessions is kept; threads 0 shares the cores among them.
        assert_eq!(sessions_and_threads(1, 0, 8), (1, 0));
        assert_eq!(sessions_and_threads(3, 0, 8), (3, 2));
        assert_eq!(sessions_and_threads(3, 0, 2), (3, 1));
        assert_eq!(sessions_and_threads(2, 3, 2), (2, 3));
    }

    /// Whether a node of `graph` has the op type `op`: a `NodeProto`'s `op_type` is its field
    /// 4, a length-delimited string (tag byte 0x22, one length byte for names under 128 bytes),
    /// so the tag and length before the name keep weight bytes from matching.
    fn has(graph: &[u8], op: &str) -> bool {
        let mut field = vec![0x22, u8::try_from(op.len()).expect("a short op name")];
        field.extend_from_slice(op.as_bytes());
        graph.windows(field.len()).any(|w| w == field.as_slice())
    }

    #[test]
    fn sessions_run_the_fused_gelu_and_not_the_slow_fusions() {
        for precision in [Precision::Int8, Precision::Float32] {
            let graph = optimised_graph(precision, true);
            assert!(
                !has(&graph, "SkipLayerNormalization"),
                "{precision:?}: SkipLayerNormFusion must stay off"
            );
            assert!(
                has(&graph, "Gelu") || has(&graph, "BiasGelu"),
                "{precision:?}: the GELU is fused"
            );
            assert!(!has(&graph, "Erf"), "{precision:?}: no unfused GELU left");
        }
        // The check sees the fusion when it is not disabled (so it can fail).
        let graph = optimised_graph(Precision::Int8, false);
        assert!(has(&graph, "SkipLayerNormalization"));
    }
}
