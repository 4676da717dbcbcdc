//! The errors of building what the configuration describes (adapters, indexes, the engine,
//! TLS, a server's command line). Their [`Display`](std::fmt::Display) is their own message,
//! what caused them their [`source`](std::error::Error::source): print the chain with
//! [`error_chain`](crate::error_chain), or `{:#}` once converted to `anyhow::Error`.

use crag_config::ConfigError;
use crag_engine::EngineError;
use crag_ports::PortError;

/// Any error boxed as a cause.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What the composition root could not build.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// The configuration (or a file it names) is not valid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine refused its parts or failed to open them.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// An adapter failed.
    #[error(transparent)]
    Port(#[from] PortError),
    /// The ONNX embedder or cross-encoder (its assets, its runtime) failed.
    #[error(transparent)]
    Onnx(#[from] crag_onnx::OnnxError),
    /// Another failure of a library, shown as it is.
    #[error(transparent)]
    Other(BoxError),
    /// A step failed: `context` says which, `source` why.
    #[error("{context}")]
    Context {
        /// What was being done.
        context: String,
        /// Why it failed.
        #[source]
        source: BoxError,
    },
    /// The configuration or the command line asks for what cannot be built: the message
    /// names the key or the argument.
    #[error("{0}")]
    Invalid(String),
}

impl ComposeError {
    /// An [`Invalid`](Self::Invalid) error showing `message`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    /// Any error, shown as it is.
    pub fn other(error: impl Into<BoxError>) -> Self {
        Self::Other(error.into())
    }
}

/// Result alias of the composition root.
pub type Result<T, E = ComposeError> = std::result::Result<T, E>;

/// Adds what was being done to an error, as `anyhow::Context` does: the error becomes the
/// [`ComposeError::Context`]'s source.
pub trait Context<T> {
    /// The error under `context`.
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// The error under the context `f` makes (only on error).
    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<BoxError>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| ComposeError::Context {
            context: context.into(),
            source: e.into(),
        })
    }

    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| ComposeError::Context {
            context: f().into(),
            source: e.into(),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| ComposeError::Invalid(context.into()))
    }

    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| ComposeError::Invalid(f().into()))
    }
}

/// Returns early with a [`ComposeError::Invalid`] formatted like `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::compose::ComposeError::Invalid(format!($($arg)*)))
    };
}
pub(crate) use bail;
