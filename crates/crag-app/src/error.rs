//! The errors the APIs answer, by kind: each app maps a [`Code`] to its status (HTTP status,
//! gRPC code) in one table; the messages are shared.

use crag_engine::EngineError;
use crag_ports::ErrorKind;

use crate::requests::Invalid;

/// What went wrong, independent of the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The request is malformed or out of bounds.
    InvalidArgument,
    /// Missing or wrong bearer token.
    Unauthenticated,
    /// The token may not do this (a read-only scoped token writing).
    PermissionDenied,
    /// No such document, session or collection (or one the caller may not see).
    NotFound,
    /// The collection to create exists already.
    AlreadyExists,
    /// Too many requests in flight (`server.max_concurrent_requests`): shed, not queued.
    ResourceExhausted,
    /// Shutting down, or a dependency configured fail-closed failed.
    Unavailable,
    /// The request took longer than `server.request_timeout_ms`.
    DeadlineExceeded,
    /// A bug or a broken store: logged with its detail, answered without it.
    Internal,
}

/// An error answered to a caller: a [`Code`] and a message safe to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppError {
    /// The kind.
    pub code: Code,
    /// Shown to the caller; never holds internal detail or secrets.
    pub message: String,
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AppError {}

impl AppError {
    /// An error of `code` showing `message`.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The caller's token may not do this.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(Code::PermissionDenied, message)
    }

    /// The caller presented no valid bearer token.
    pub fn unauthenticated() -> Self {
        Self::new(Code::Unauthenticated, "missing or invalid bearer token")
    }

    /// The request was shed by the concurrency limit.
    pub fn resource_exhausted() -> Self {
        Self::new(
            Code::ResourceExhausted,
            "too many requests in flight; retry later",
        )
    }

    /// The request ran past the server's deadline.
    pub fn deadline_exceeded() -> Self {
        Self::new(
            Code::DeadlineExceeded,
            "the request took longer than the server's timeout",
        )
    }

    /// An internal failure: `detail` is logged, the caller sees a fixed message.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        Self::new(Code::Internal, "internal error; see the server log")
    }
}

impl From<Invalid> for AppError {
    fn from(e: Invalid) -> Self {
        Self::new(Code::InvalidArgument, e.0)
    }
}

impl From<EngineError> for AppError {
    fn from(e: EngineError) -> Self {
        match e.kind() {
            ErrorKind::InvalidInput => Self::new(Code::InvalidArgument, e.to_string()),
            ErrorKind::NotFound => Self::new(Code::NotFound, e.to_string()),
            ErrorKind::Timeout => Self::deadline_exceeded(),
            ErrorKind::Unavailable => {
                tracing::warn!(error = %e, "unavailable");
                Self::new(Code::Unavailable, format!("a dependency failed: {e}"))
            }
            ErrorKind::Internal => Self::internal(format!("{e:#}")),
        }
    }
}
