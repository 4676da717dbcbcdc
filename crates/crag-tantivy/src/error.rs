//! Translation of Tantivy errors into port errors.

use crag_ports::{ErrorKind, PortError};
use tantivy::TantivyError;

/// Returns a mapper wrapping a Tantivy error into a [`PortError`] with `message`.
pub(crate) fn port_error(message: &'static str) -> impl FnOnce(TantivyError) -> PortError {
    move |err| PortError::with_source(kind_of(&err), message, err)
}

/// Wraps an IO error of the index files: the store cannot be read.
pub(crate) fn io_error(message: &'static str) -> impl FnOnce(std::io::Error) -> PortError {
    move |err| PortError::with_source(ErrorKind::Unavailable, message, err)
}

/// Failures of the environment (files, locks, threads) are `Unavailable`; the rest
/// (corruption, incompatible or mismatched index, bugs) is `Internal`.
fn kind_of(err: &TantivyError) -> ErrorKind {
    match err {
        TantivyError::OpenDirectoryError(_)
        | TantivyError::OpenReadError(_)
        | TantivyError::OpenWriteError(_)
        | TantivyError::LockFailure(..)
        | TantivyError::IoError(_)
        | TantivyError::SystemError(_) => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}
