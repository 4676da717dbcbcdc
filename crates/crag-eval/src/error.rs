//! The errors of an evaluation run: a collection that cannot be read, an index that cannot be
//! built, a stage that fails. Their [`Display`](std::fmt::Display) is their own message, what
//! caused them their [`source`](std::error::Error::source): print the chain with
//! [`crag_config::error_chain`], or `{:#}` once converted to `anyhow::Error`.

use crag_app::compose::{BoxError, ComposeError};
use crag_config::ConfigError;
use crag_core::CoreError;
use crag_engine::EngineError;
use crag_judge::EvaluationError;

/// What an evaluation could not do.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The configuration is not valid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine or its adapters could not be built.
    #[error(transparent)]
    Compose(#[from] ComposeError),
    /// The engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A query or a value of the collection is not valid.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// An evaluator could not be built or fitted.
    #[error(transparent)]
    Evaluation(#[from] EvaluationError),
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
    /// The collection or the options are not valid: the message names the file or option.
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of this crate.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;

/// Adds what was being done to an error, as `anyhow::Context` does: the error becomes the
/// [`EvalError::Context`]'s source.
pub(crate) trait Context<T> {
    /// The error under `context`.
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// The error under the context `f` makes (only on error).
    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<BoxError>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| EvalError::Context {
            context: context.into(),
            source: e.into(),
        })
    }

    fn with_context<S: Into<String>>(self, f: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| EvalError::Context {
            context: f().into(),
            source: e.into(),
        })
    }
}

/// Returns early with a [`EvalError::Invalid`] formatted like `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::EvalError::Invalid(format!($($arg)*)))
    };
}
pub(crate) use bail;
