//! Translation of LanceDB errors into port errors.

use crag_ports::{ErrorKind, PortError};

/// Returns the port error kind a LanceDB error amounts to.
fn kind_of(error: &lancedb::Error) -> ErrorKind {
    use lancedb::Error as E;
    match error {
        E::InvalidTableName { .. }
        | E::InvalidInput { .. }
        | E::InvalidExpression { .. }
        | E::Schema { .. }
        | E::ColumnNotFound { .. }
        | E::ColumnAlreadyExists { .. }
        | E::TableAlreadyExists { .. }
        | E::NotSupported { .. } => ErrorKind::InvalidInput,
        E::TableNotFound { .. }
        | E::DatabaseNotFound { .. }
        | E::IndexNotFound { .. }
        | E::JobNotFound { .. } => ErrorKind::NotFound,
        E::Timeout { .. } => ErrorKind::Timeout,
        E::ObjectStore { .. } | E::CreateDir { .. } => ErrorKind::Unavailable,
        E::Lance {
            source: lance::Error::IO { .. },
        } => ErrorKind::Unavailable,
        _ => ErrorKind::Internal,
    }
}

/// Markers of an object store's I/O failure in the text of an error LanceDB reports under
/// another variant (connecting wraps it in `InvalidInput`'s message).
const IO_MARKERS: [&str; 3] = ["IO { source:", "Generic { store:", "tcp connect error"];

/// [`kind_of`], with an I/O failure LanceDB reports as text taken as `Unavailable`: the
/// store could not be reached, whatever variant carries it.
pub(crate) fn kind(error: &lancedb::Error) -> ErrorKind {
    let kind = kind_of(error);
    if matches!(kind, ErrorKind::InvalidInput | ErrorKind::Internal) {
        let text = format!("{error:?}");
        if IO_MARKERS.iter().any(|m| text.contains(m)) {
            return ErrorKind::Unavailable;
        }
    }
    kind
}

/// Returns a closure wrapping a LanceDB error into a port error with `message`.
pub(crate) fn map_lance_error(message: &'static str) -> impl FnOnce(lancedb::Error) -> PortError {
    move |error| PortError::with_source(kind(&error), message, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_lancedb_variant() {
        let err = map_lance_error("failed to open vector table")(lancedb::Error::TableNotFound {
            name: "chunks".into(),
            source: "missing".into(),
        });
        assert_eq!(err.kind(), ErrorKind::NotFound);
        assert_eq!(err.to_string(), "failed to open vector table");
        let err = map_lance_error("x")(lancedb::Error::Timeout {
            message: "slow".into(),
        });
        assert_eq!(err.kind(), ErrorKind::Timeout);
        let err = map_lance_error("x")(lancedb::Error::Runtime {
            message: "boom".into(),
        });
        assert_eq!(err.kind(), ErrorKind::Internal);
    }
}
