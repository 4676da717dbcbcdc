use std::fmt;

/// What went wrong, in terms the engine can branch on without knowing the backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The thing asked for does not exist.
    NotFound,
    /// The caller's input was rejected.
    InvalidInput,
    /// The backend or an asset it needs cannot be reached or loaded.
    Unavailable,
    /// The backend did not answer in time.
    Timeout,
    /// Anything else: a bug or a corrupted store.
    Internal,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotFound => "not found",
            Self::InvalidInput => "invalid input",
            Self::Unavailable => "unavailable",
            Self::Timeout => "timeout",
            Self::Internal => "internal",
        })
    }
}

/// Error returned by every port.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct PortError {
    kind: ErrorKind,
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl PortError {
    /// Builds an error of `kind` with a concise lowercase message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Builds an error of `kind` wrapping the backend error that caused it.
    pub fn with_source(
        kind: ErrorKind,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            kind,
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// Shorthand for an [`ErrorKind::InvalidInput`] error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    /// Shorthand for an [`ErrorKind::Internal`] error wrapping `source`.
    pub fn internal(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::with_source(ErrorKind::Internal, message, source)
    }

    /// Returns the kind of the error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
}

/// Result alias of the ports.
pub type PortResult<T> = Result<T, PortError>;
