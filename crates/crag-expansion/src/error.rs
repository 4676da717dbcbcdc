/// Errors of the expansion crate: only loading a synonym table can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpansionError {
    /// The synonym table is not valid JSON.
    #[error("invalid synonym table json: {0}")]
    Json(String),
    /// The synonym table is valid JSON but not an object.
    #[error("synonym table must be a json object mapping terms to lists of synonyms")]
    NotAnObject,
    /// One entry of the synonym table is unusable; `term` is the key as written.
    #[error("synonym table entry {term:?}: {reason}")]
    InvalidEntry {
        /// The offending key, as written in the table.
        term: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Result of this crate.
pub type Result<T> = std::result::Result<T, ExpansionError>;
