/// Errors of the relevance evaluators.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvaluationError {
    /// A configuration value is not acceptable.
    #[error("invalid evaluator configuration: {field}: {message}")]
    InvalidConfig {
        /// Name of the offending field (`weights` for the weights as a whole).
        field: &'static str,
        /// Why it is rejected, in a few lowercase words.
        message: String,
    },
    /// A language model's answer holds no score that can be read; no verdict is guessed.
    #[error("unparseable relevance judgement: {message} (answer begins {excerpt:?})")]
    Unparseable {
        /// What was missing.
        message: String,
        /// The beginning of the answer, for logs.
        excerpt: String,
    },
    /// A calibration (fitted evaluator) is not usable: wrong features, non-finite numbers.
    #[error("invalid calibration: {0}")]
    InvalidCalibration(String),
    /// The evaluator cannot be fitted on the given samples.
    #[error("cannot fit the evaluator: {0}")]
    Fit(String),
}

impl EvaluationError {
    pub(crate) fn config(field: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidConfig {
            field,
            message: message.into(),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = EvaluationError> = std::result::Result<T, E>;
