//! Integration tests of the ONNX adapters with real models.
//!
//! They need the assets fetched and built by `bash scripts/setup-assets.sh` (the README's test
//! command runs it first).

mod cross_encoder;
mod embedder;
