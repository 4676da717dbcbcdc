//! The errors of loading, checking and writing a configuration: typed, each naming the file,
//! the key and, for overrides, the environment variable. Their [`Display`](std::fmt::Display)
//! is their own message; what caused them is their [`source`](std::error::Error::source)
//! (print the chain with [`error_chain`], or `{:#}` once converted to `anyhow::Error`).

use std::path::{Path, PathBuf};

/// A configuration or calibration file that cannot be read, parsed, validated or written.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read (`what`: `configuration`, `calibration_file`).
    #[error("failed to read {what} {}", .path.display())]
    Read {
        /// What the file is, as its key names it.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// What a file (or, without one, the environment) holds is not valid; `source` says why.
    #[error("invalid {what}{}", .path.as_deref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    In {
        /// What the file is: `configuration`, `calibration_file`.
        what: &'static str,
        /// The file, if any.
        path: Option<PathBuf>,
        /// Why.
        #[source]
        source: Box<ConfigError>,
    },
    /// Text that is not TOML.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    /// A value that cannot be shown as TOML (`what`: `configuration`, `calibration`).
    #[error("failed to render the {what}")]
    Render {
        /// What was rendered.
        what: &'static str,
        /// Why.
        #[source]
        source: toml::ser::Error,
    },
    /// A value the engine refuses (its own checks of `[chunking]`, `[crag]`, ...).
    #[error(transparent)]
    Engine(#[from] crag_engine::EngineError),
    /// A calibration the evaluator refuses.
    #[error(transparent)]
    Calibration(#[from] crag_judge::EvaluationError),
    /// A key, a value or a relation between keys that is not valid: the message names it.
    #[error("{0}")]
    Invalid(String),
}

impl ConfigError {
    /// An [`Invalid`](Self::Invalid) error showing `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// This error as the cause of `what` at `path` being invalid.
    pub(crate) fn within(self, what: &'static str, path: Option<&Path>) -> Self {
        Self::In {
            what,
            path: path.map(Path::to_path_buf),
            source: Box::new(self),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;

/// `error` and its causes, outermost first, joined by `: ` (as `anyhow` prints `{:#}`).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

/// Returns early with a [`ConfigError::Invalid`] formatted like `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::ConfigError::Invalid(format!($($arg)*)))
    };
}
pub(crate) use bail;
