use std::path::PathBuf;

use crag_ports::{ErrorKind, PortError};

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// A port failed.
    #[error(transparent)]
    Port(#[from] PortError),
    /// The caller's input was rejected.
    #[error("{0}")]
    InvalidInput(String),
    /// A bug or a broken invariant (metrics registry, task join).
    #[error("internal error: {0}")]
    Internal(String),
    /// Reading a source failed.
    #[error("failed to read {path}")]
    Io {
        /// What was read.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl EngineError {
    /// Returns the port error kind this error maps to.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::Port(e) => e.kind(),
            Self::InvalidInput(_) => ErrorKind::InvalidInput,
            Self::Internal(_) => ErrorKind::Internal,
            Self::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                ErrorKind::NotFound
            }
            Self::Io { .. } => ErrorKind::Unavailable,
        }
    }
}

impl From<crag_core::CoreError> for EngineError {
    fn from(err: crag_core::CoreError) -> Self {
        Self::InvalidInput(err.to_string())
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, EngineError>;
