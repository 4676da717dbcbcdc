/// Errors raised when a domain value fails validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// The value given for `field` is not acceptable.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// Name of the field or type that failed validation.
        field: &'static str,
        /// Why it failed, in a few lowercase words.
        reason: String,
    },
}

impl CoreError {
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field,
            reason: reason.into(),
        }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, CoreError>;
