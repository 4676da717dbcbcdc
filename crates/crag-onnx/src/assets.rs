use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::error::{OnnxError, Result};

/// The command that fetches and verifies every asset.
pub const SETUP_COMMAND: &str = "bash scripts/setup-assets.sh";

/// Returns the asset directory: `$CRAG_ASSETS_DIR`, else `$HOME/.cache/crag/assets`.
pub fn default_assets_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CRAG_ASSETS_DIR") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("crag").join("assets")
}

#[derive(Debug, Deserialize)]
struct Manifest {
    onnxruntime_lib: PathBuf,
    embedder: ManifestEmbedder,
    /// Absent from manifests written before the reranker existed.
    #[serde(default)]
    tiny_cross_encoder: Option<ManifestCrossEncoder>,
    sha256: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct ManifestCrossEncoder {
    model: PathBuf,
    tokenizer: PathBuf,
}

#[derive(Debug, Deserialize)]
struct ManifestEmbedder {
    model: PathBuf,
    /// Absent from manifests written before the int8 model existed.
    #[serde(default)]
    model_int8: Option<PathBuf>,
    tokenizer: PathBuf,
    dimension: usize,
    max_length: usize,
}

/// Which of the manifest's embedding models: the float32 export or its int8 quantisation
/// (`scripts/quantize_minilm_onnx.py`: per-channel int8 weights, dynamic activations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Precision {
    /// `model.onnx`, the weights as published.
    #[default]
    Float32,
    /// `model-int8.onnx`: about 3x faster per query on a CPU, embeddings within about 0.99
    /// cosine of the float32 model's.
    Int8,
}

impl Precision {
    /// The model id an embedder of this precision reports and an index records: the base id,
    /// with `-int8` appended for [`Precision::Int8`] (the two models' vectors differ, so an
    /// index built with one is not searched with the other).
    pub fn model_id(self, base: &str) -> String {
        match self {
            Self::Float32 => base.to_owned(),
            Self::Int8 => format!("{base}-int8"),
        }
    }
}

/// Files the embedder needs, located and verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedderAssets {
    /// `libonnxruntime.so`.
    pub runtime_library: PathBuf,
    /// The ONNX model (inputs `input_ids`, `attention_mask`, `token_type_ids`; output
    /// `last_hidden_state`).
    pub model: PathBuf,
    /// `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// Embedding dimension.
    pub dimension: usize,
    /// Most tokens per input, special tokens included.
    pub max_length: usize,
}

impl EmbedderAssets {
    /// Reads `manifest.json` in `dir` and verifies every file it names against its SHA-256.
    pub fn from_manifest(dir: &Path) -> Result<Self> {
        Self::from_manifest_with(dir, Precision::Float32)
    }

    /// Like [`EmbedderAssets::from_manifest`], with the model of the given precision; a
    /// manifest written before the int8 model existed is an error naming the setup command.
    pub fn from_manifest_with(dir: &Path, precision: Precision) -> Result<Self> {
        let (manifest_path, manifest) = read_manifest(dir)?;
        let model = match precision {
            Precision::Float32 => manifest.embedder.model,
            Precision::Int8 => {
                manifest
                    .embedder
                    .model_int8
                    .ok_or_else(|| OnnxError::MissingAsset {
                        what: "int8 embedding model (not in the asset manifest)",
                        path: manifest_path.clone(),
                        command: crate::SETUP_COMMAND,
                    })?
            }
        };
        let assets = Self {
            runtime_library: manifest.onnxruntime_lib,
            model,
            tokenizer: manifest.embedder.tokenizer,
            dimension: manifest.embedder.dimension,
            max_length: manifest.embedder.max_length,
        };
        verify_listed(
            dir,
            &manifest_path,
            &manifest.sha256,
            &[
                ("onnx runtime library", &assets.runtime_library),
                ("embedding model", &assets.model),
                ("tokenizer", &assets.tokenizer),
            ],
        )?;
        Ok(assets)
    }
}

/// Files a cross-encoder reranker needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossEncoderAssets {
    /// `libonnxruntime.so`.
    pub runtime_library: PathBuf,
    /// The ONNX model (inputs `input_ids`, `attention_mask`, `token_type_ids`; output `logits`
    /// of shape `[batch, 1]`).
    pub model: PathBuf,
    /// `tokenizer.json` of the model.
    pub tokenizer: PathBuf,
}

impl CrossEncoderAssets {
    /// Locates the project's tiny random-weight test cross-encoder through `manifest.json` in
    /// `dir` and verifies its files against their SHA-256.
    ///
    /// Returns `None` when `dir` has no manifest or the manifest names no such model (assets set
    /// up before it existed); `bash scripts/setup-assets.sh` builds it.
    pub fn tiny_from_manifest(dir: &Path) -> Result<Option<Self>> {
        if !dir.join("manifest.json").is_file() {
            return Ok(None);
        }
        let (manifest_path, manifest) = read_manifest(dir)?;
        let Some(tiny) = manifest.tiny_cross_encoder else {
            return Ok(None);
        };
        let assets = Self {
            runtime_library: manifest.onnxruntime_lib,
            model: tiny.model,
            tokenizer: tiny.tokenizer,
        };
        verify_listed(
            dir,
            &manifest_path,
            &manifest.sha256,
            &[
                ("onnx runtime library", &assets.runtime_library),
                ("tiny cross-encoder model", &assets.model),
                ("tokenizer", &assets.tokenizer),
            ],
        )?;
        Ok(Some(assets))
    }
}

fn read_manifest(dir: &Path) -> Result<(PathBuf, Manifest)> {
    let manifest_path = dir.join("manifest.json");
    if !manifest_path.is_file() {
        return Err(OnnxError::MissingAsset {
            what: "asset manifest",
            path: manifest_path,
            command: crate::SETUP_COMMAND,
        });
    }
    let raw = std::fs::read(&manifest_path).map_err(|source| OnnxError::Io {
        path: manifest_path.clone(),
        source,
    })?;
    let manifest = serde_json::from_slice(&raw).map_err(|e| OnnxError::InvalidAsset {
        path: manifest_path.clone(),
        reason: e.to_string(),
    })?;
    Ok((manifest_path, manifest))
}

/// Checks that every file exists and matches the checksum `sums` holds for it (keyed by its
/// path relative to `dir`).
fn verify_listed(
    dir: &Path,
    manifest_path: &Path,
    sums: &BTreeMap<String, String>,
    files: &[(&'static str, &PathBuf)],
) -> Result<()> {
    for &(what, path) in files {
        if !path.is_file() {
            return Err(OnnxError::MissingAsset {
                what,
                path: path.clone(),
                command: crate::SETUP_COMMAND,
            });
        }
        let expected = sums
            .iter()
            .find(|(rel, _)| dir.join(rel) == *path)
            .map(|(_, sum)| sum.as_str())
            .ok_or_else(|| OnnxError::InvalidAsset {
                path: manifest_path.to_path_buf(),
                reason: format!("no checksum for {}", path.display()),
            })?;
        verify_sha256(path, expected)?;
    }
    Ok(())
}

fn verify_sha256(path: &Path, expected: &str) -> Result<()> {
    let io = |source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let found = format!("{:x}", hasher.finalize());
    if !found.eq_ignore_ascii_case(expected) {
        return Err(OnnxError::Checksum {
            path: path.to_path_buf(),
            expected: expected.to_owned(),
            found,
            command: crate::SETUP_COMMAND,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_manifest_names_the_setup_command() {
        let err = EmbedderAssets::from_manifest(Path::new("/nonexistent/crag-assets"))
            .expect_err("must fail");
        let msg = err.to_string();
        assert!(msg.contains("asset manifest"), "{msg}");
        assert!(msg.contains(SETUP_COMMAND), "{msg}");
    }

    #[test]
    fn checksum_mismatch_is_reported() {
        let dir = std::env::temp_dir().join(format!("crag-onnx-sum-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let file = dir.join("f.bin");
        std::fs::write(&file, b"hello").expect("write");
        let good = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";
        assert!(verify_sha256(&file, good).is_ok());
        let err = verify_sha256(&file, &"0".repeat(64)).expect_err("mismatch");
        assert!(err.to_string().contains("checksum mismatch"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
