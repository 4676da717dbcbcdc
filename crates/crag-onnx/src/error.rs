use std::path::PathBuf;

use crag_ports::{ErrorKind, PortError};

/// Errors of the ONNX adapters.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// An asset file is not where the manifest or configuration says.
    #[error("missing {what} at {path}: run `{command}` to fetch it")]
    MissingAsset {
        /// What the file is, e.g. "onnx runtime library".
        what: &'static str,
        /// Where it was looked for.
        path: PathBuf,
        /// The command that fetches it.
        command: &'static str,
    },
    /// An asset's SHA-256 does not match the manifest.
    #[error(
        "checksum mismatch for {path}: expected {expected}, found {found}; run `{command}` again"
    )]
    Checksum {
        /// The file.
        path: PathBuf,
        /// SHA-256 from the manifest.
        expected: String,
        /// SHA-256 of the file on disk.
        found: String,
        /// The command that fetches it again.
        command: &'static str,
    },
    /// The manifest or a model file cannot be parsed.
    #[error("invalid asset {path}: {reason}")]
    InvalidAsset {
        /// The file.
        path: PathBuf,
        /// Why it was rejected.
        reason: String,
    },
    /// The adapter's configuration cannot work, e.g. a batch size of 0.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// ONNX Runtime failed to load or run.
    #[error("onnx runtime: {0}")]
    Runtime(String),
    /// The tokenizer failed.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// Reading an asset failed.
    #[error("failed to read {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl From<OnnxError> for PortError {
    fn from(err: OnnxError) -> Self {
        let kind = match &err {
            OnnxError::MissingAsset { .. }
            | OnnxError::Checksum { .. }
            | OnnxError::InvalidAsset { .. }
            | OnnxError::Io { .. } => ErrorKind::Unavailable,
            OnnxError::InvalidConfig(_) => ErrorKind::InvalidInput,
            OnnxError::Runtime(_) | OnnxError::Tokenizer(_) => ErrorKind::Internal,
        };
        PortError::with_source(kind, err.to_string(), err)
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, OnnxError>;
