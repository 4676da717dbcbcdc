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
    sha256: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct ManifestEmbedder {
    model: PathBuf,
    tokenizer: PathBuf,
    dimension: usize,
    max_length: usize,
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
        let manifest: Manifest =
            serde_json::from_slice(&raw).map_err(|e| OnnxError::InvalidAsset {
                path: manifest_path.clone(),
                reason: e.to_string(),
            })?;
        let assets = Self {
            runtime_library: manifest.onnxruntime_lib,
            model: manifest.embedder.model,
            tokenizer: manifest.embedder.tokenizer,
            dimension: manifest.embedder.dimension,
            max_length: manifest.embedder.max_length,
        };
        for (what, path) in [
            ("onnx runtime library", &assets.runtime_library),
            ("embedding model", &assets.model),
            ("tokenizer", &assets.tokenizer),
        ] {
            if !path.is_file() {
                return Err(OnnxError::MissingAsset {
                    what,
                    path: path.clone(),
                    command: crate::SETUP_COMMAND,
                });
            }
            let expected = manifest
                .sha256
                .iter()
                .find(|(rel, _)| dir.join(rel) == *path)
                .map(|(_, sum)| sum.clone())
                .ok_or_else(|| OnnxError::InvalidAsset {
                    path: manifest_path.clone(),
                    reason: format!("no checksum for {}", path.display()),
                })?;
            verify_sha256(path, &expected)?;
        }
        Ok(assets)
    }
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
