//! Gap detection (CGRAG): given a question and the context retrieved for it, say what is missing,
//! and, when a language model is behind it, answer.

use std::fmt::Debug;

use async_trait::async_trait;

use crate::PortResult;

/// One piece of context a detector reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextItem {
    /// The chunk id, so that a detector can name the useful ones.
    pub id: String,
    /// Path or URL, shown to the model.
    pub source: String,
    /// The text.
    pub text: String,
}

/// What a detector found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GapReport {
    /// The answer, when the detector writes one (LLM detectors); `None` for LLM-free ones.
    pub answer: Option<String>,
    /// What is missing, most important first, each a short request ("`verify_user` in
    /// auth.py", "class Session", "how errors are logged"); empty: the context suffices.
    pub gaps: Vec<String>,
    /// Ids of the context items the detector found useful, when it says.
    pub useful_ids: Vec<String>,
    /// Whether the detector's output could be read; an unreadable reply counts as no gaps.
    pub parsed: bool,
    /// What went wrong reading the output (kept in the answer's metadata).
    pub warnings: Vec<String>,
    /// Tokens of the prompt and of the reply, when a model was called (estimates).
    pub tokens: u32,
    /// Names the context uses that the corpus is known not to hold (standard library,
    /// external packages): not gaps to search for, they join the session's not-found set.
    pub external: Vec<String>,
}

/// Says what a question's context lacks.
#[async_trait]
pub trait GapDetector: Debug + Send + Sync + 'static {
    /// A short name for metadata (`llm`, `code`).
    fn name(&self) -> &str;

    /// Whether [`detect`](Self::detect) writes answers.
    fn answers(&self) -> bool;

    /// Reads `context` (best first) for `question`; `known_missing` are gaps already looked for
    /// in vain, which the detector should not ask for again.
    async fn detect(
        &self,
        question: &str,
        context: &[ContextItem],
        known_missing: &[String],
    ) -> PortResult<GapReport>;
}
