//! CGRAG: answer, name the context that is missing, fetch exactly that, at most three passes,
//! remembering per session what was found and what does not exist.
//!
//! Pass 1 is the full retrieval ([`Engine::query`]: hybrid + Corrective RAG), merged with the
//! session's cached context. Each pass asks the [`GapDetector`] for the answer and the gaps;
//! the next pass retrieves each gap (symbols and paths by exact lookups first, a symbol's
//! definitions with their one-hop neighbourhood in the symbol graph, fuzzy gaps by the vector
//! top k). The loop stops when there are no gaps, when every gap is already known
//! not to exist, or after `max_passes`.

mod ask;
pub mod citations;
mod code_gaps;
mod config;
mod llm;
mod neighbourhood;
mod pass;
mod plan;
mod sources;
mod symbol_gaps;
mod targeted;

use std::sync::Arc;
use std::time::Duration;

use crag_core::{ChunkFilter, Query, SessionId, TopK};
use crag_ports::{GapDetector, SessionStore};
use serde::Serialize;

pub use ask::SESSIONS_OFF;
pub use code_gaps::CodeGapDetector;
pub use config::{CgragConfig, DetectorKind};
pub use llm::LlmGapDetector;
pub use sources::{HistoryConfig, SessionSourceConfig, SourceConfig, SourcesConfig};

use crate::crag::{Artifact, QueryOutcome};

/// What CGRAG runs with.
#[derive(Debug, Clone)]
pub struct CgragComponents {
    /// Names what is missing (and answers, when a model is behind it).
    pub detector: Arc<dyn GapDetector>,
    /// Where sessions live; `None`: every request is ephemeral and a session id is refused.
    pub sessions: Option<Arc<dyn SessionStore>>,
    /// Tunables.
    pub config: CgragConfig,
}

impl Default for CgragComponents {
    fn default() -> Self {
        Self {
            detector: Arc::new(CodeGapDetector::lexical()),
            sessions: None,
            config: CgragConfig::default(),
        }
    }
}

/// A question for [`crate::Engine::ask`].
#[derive(Debug, Clone, PartialEq)]
pub struct AskRequest {
    /// The question.
    pub question: Query,
    /// The session to continue; `None`: an ephemeral session, nothing kept.
    pub session: Option<SessionId>,
    /// Results of the first retrieval.
    pub top_k: TopK,
    /// Judge and correct the first retrieval.
    pub use_crag: bool,
    /// Allow web search in the first retrieval.
    pub use_web_search: bool,
    /// Only indexed chunks passing this filter are retrieved.
    pub filter: ChunkFilter,
}

impl AskRequest {
    /// An ephemeral question with Corrective RAG and web search on.
    pub fn new(question: Query, top_k: TopK) -> Self {
        Self {
            question,
            session: None,
            top_k,
            use_crag: true,
            use_web_search: true,
            filter: ChunkFilter::default(),
        }
    }
}

/// Why the loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The detector named no gap.
    NoGaps,
    /// Every gap named was already known not to exist.
    AllNotFound,
    /// `max_passes` were used.
    MaxPasses,
    /// The detector failed (fail-open): the context so far is returned.
    DetectorFailed,
}

impl StopReason {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoGaps => "no_gaps",
            Self::AllNotFound => "all_not_found",
            Self::MaxPasses => "max_passes",
            Self::DetectorFailed => "detector_failed",
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassReport {
    /// 1-based.
    pub pass: usize,
    /// Gaps retrieved in this pass (pass 1: none, it is the full retrieval).
    pub retrieved: Vec<GapResolution>,
    /// Chunks the context held when the detector read it.
    pub context_chunks: usize,
    /// Gaps the detector named after reading it (before skipping known ones).
    pub gaps: Vec<String>,
    /// Named gaps skipped because they are in the not-found set.
    pub skipped: Vec<String>,
    /// Whether the detector's output could be read.
    pub parsed: bool,
    /// What went wrong reading it.
    pub warnings: Vec<String>,
    /// Time retrieving this pass's context.
    pub retrieve: Duration,
    /// Time the detector took.
    pub detect: Duration,
}

impl PassReport {
    /// Neighbour chunks the pass's gap retrievals added.
    pub fn neighbour_chunks(&self) -> usize {
        self.retrieved.iter().map(|g| g.neighbour_ids.len()).sum()
    }
}

/// The retrieval of one gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GapResolution {
    /// The gap as named.
    pub gap: String,
    /// How it was looked up (`symbol`, `path`, `vector`...).
    pub lookup: &'static str,
    /// Chunks it added to the context (none: not found, it joins the not-found set).
    pub chunk_ids: Vec<String>,
    /// Chunks of its definitions' one-hop neighbourhood added after them (the symbol graph's
    /// callees, owning type, members and callers, within the pass's room).
    pub neighbour_ids: Vec<String>,
}

/// The answer to an [`AskRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct AskOutcome {
    /// The session continued or created; `None` for an ephemeral request.
    pub session_id: Option<SessionId>,
    /// The answer citing `[n]` = `artifacts[n - 1]`; `None` when no model wrote one.
    pub answer: Option<String>,
    /// The detector that ran (`llm:<model>`, `code`).
    pub detector: String,
    /// The final context, in the order the detector last saw it.
    pub artifacts: Vec<Artifact>,
    /// The first retrieval, with its Corrective RAG metadata.
    pub first: QueryOutcome,
    /// One report per pass.
    pub passes: Vec<PassReport>,
    /// Why the loop stopped.
    pub stop: StopReason,
    /// Distinct gaps named over all passes.
    pub gaps_identified: usize,
    /// Gaps whose retrieval added context.
    pub gaps_resolved: usize,
    /// Gaps that found nothing, or were already known not to exist.
    pub gaps_unresolved: usize,
    /// The gaps named over all passes, each as first named (`gaps_identified` of them).
    pub identified_gaps: Vec<String>,
    /// The gaps whose retrieval added context (`gaps_resolved`).
    pub resolved_gaps: Vec<String>,
    /// The gaps that found nothing, were known missing or external, or were left over when
    /// the passes ran out (`gaps_unresolved`).
    pub unresolved_gaps: Vec<String>,
    /// Chunks of the final context the session's cache held (found again or taken from it).
    pub context_from_cache: usize,
    /// Citations of the answer that pointed at no artifact and were removed.
    pub citations_removed: usize,
    /// Tokens of the final context.
    pub tokens_used: usize,
    /// Tokens of the model calls (estimated).
    pub model_tokens: u32,
    /// Things that went wrong without failing the request.
    pub warnings: Vec<String>,
    /// The whole request.
    pub total: Duration,
}

impl AskOutcome {
    /// Passes run.
    pub fn passes_used(&self) -> usize {
        self.passes.len()
    }
}
