//! ONNX Runtime adapters of crag: the sentence embedder (all-MiniLM-L6-v2 by default) and the
//! cross-encoder reranker (BERT sequence classifiers such as ms-marco-MiniLM-L-6-v2).
//!
//! ONNX Runtime is loaded dynamically (`ort` with `load-dynamic`) from the shared library
//! fetched by `scripts/setup-assets.sh`; model files are located through the asset manifest that
//! script writes, and verified by SHA-256 before use.

mod assets;
mod bert;
mod counting;
mod cross_encoder;
mod embedder;
mod error;
mod runtime;

pub use assets::{
    default_assets_dir, CrossEncoderAssets, EmbedderAssets, Precision, SETUP_COMMAND,
};
pub use cross_encoder::{OnnxCrossEncoder, OnnxCrossEncoderConfig, PairTokens};
pub use embedder::{OnnxEmbedder, OnnxEmbedderConfig, PER_CORE_SESSIONS};
pub use error::{OnnxError, Result};
