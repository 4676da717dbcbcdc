//! `POST /v1/ask` (and `crag ask --json`) and the session routes.

use crag_app::{AskParams, QueryParams};
use crag_core::{Session, SessionSummary};
use crag_engine::{AskOutcome, GapResolution, PassReport};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ms, results, Filters, ResultOutput};

/// `POST /v1/ask` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = AskRequest)]
pub struct AskBody {
    /// The question.
    pub query: String,
    /// Results of the first retrieval (default 10).
    pub top_k: Option<i64>,
    /// Judge and correct the first retrieval (default true).
    pub use_crag: Option<bool>,
    /// Allow web search in the first retrieval (default true).
    pub use_web_search: Option<bool>,
    /// The session to continue (32 hex digits; an unknown id starts it).
    pub session_id: Option<String>,
    /// Start a session with an id the server draws.
    #[serde(default)]
    pub new_session: bool,
    /// Restricts retrieval.
    #[serde(default)]
    pub filters: Filters,
}

impl From<AskBody> for AskParams {
    fn from(b: AskBody) -> Self {
        Self {
            query: QueryParams {
                query: b.query,
                top_k: b.top_k,
                token_budget: None,
                use_crag: b.use_crag,
                use_web_search: b.use_web_search,
                use_rerank: None,
                source_prefix: b.filters.source_prefix,
                kinds: b.filters.kinds,
                languages: b.filters.languages,
                symbol_kinds: b.filters.symbol_kinds,
                metadata: b.filters.metadata,
                scope: None,
                session_id: b.session_id,
                fusion: Default::default(),
            },
            new_session: b.new_session,
        }
    }
}

/// The answer of `POST /v1/ask` and `crag ask --json`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskResponse<'a> {
    session_id: Option<String>,
    question: &'a str,
    answer: Option<&'a str>,
    detector: &'a str,
    stop: &'static str,
    passes_used: usize,
    gaps_identified: usize,
    gaps_resolved: usize,
    gaps_unresolved: usize,
    /// The gaps named over all passes, each as first named.
    identified_gaps: &'a [String],
    /// The gaps whose retrieval added context.
    resolved_gaps: &'a [String],
    /// The gaps that found nothing, were known missing, or were left when the passes ran out.
    unresolved_gaps: &'a [String],
    /// Whether the session's cached context was used.
    context_from_cache: bool,
    /// Chunks of the context taken from the session's cache.
    context_from_cache_count: usize,
    citations_removed: usize,
    tokens_used: usize,
    model_tokens: u32,
    crag_decision: Option<&'static str>,
    crag_score: Option<f32>,
    passes: Vec<PassOutput<'a>>,
    results: Vec<ResultOutput<'a>>,
    warnings: &'a [String],
    total_ms: f64,
}

/// One pass, as `POST /v1/ask` reports it (and streams it as a `pass` event).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Pass)]
pub struct PassOutput<'a> {
    pass: usize,
    retrieved: Vec<GapOutput<'a>>,
    context_chunks: usize,
    /// Chunks of the gaps' one-hop neighbourhoods the pass added.
    neighbour_chunks: usize,
    gaps: &'a [String],
    skipped: &'a [String],
    parsed: bool,
    warnings: &'a [String],
    retrieve_ms: f64,
    detect_ms: f64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = GapRetrieval)]
struct GapOutput<'a> {
    gap: &'a str,
    lookup: &'static str,
    chunk_ids: &'a [String],
    /// Chunks of its definitions' one-hop neighbourhood added after them.
    neighbour_ids: &'a [String],
}

/// The JSON shape of a pass.
pub fn pass(p: &PassReport) -> PassOutput<'_> {
    PassOutput {
        pass: p.pass,
        retrieved: p
            .retrieved
            .iter()
            .map(|g: &GapResolution| GapOutput {
                gap: &g.gap,
                lookup: g.lookup,
                chunk_ids: &g.chunk_ids,
                neighbour_ids: &g.neighbour_ids,
            })
            .collect(),
        context_chunks: p.context_chunks,
        neighbour_chunks: p.neighbour_chunks(),
        gaps: &p.gaps,
        skipped: &p.skipped,
        parsed: p.parsed,
        warnings: &p.warnings,
        retrieve_ms: ms(p.retrieve),
        detect_ms: ms(p.detect),
    }
}

/// The JSON shape of an ask outcome.
pub fn ask_response(o: &AskOutcome) -> AskResponse<'_> {
    AskResponse {
        session_id: o.session_id.map(|id| id.to_string()),
        question: o.first.query.as_str(),
        answer: o.answer.as_deref(),
        detector: &o.detector,
        stop: o.stop.as_str(),
        passes_used: o.passes_used(),
        gaps_identified: o.gaps_identified,
        gaps_resolved: o.gaps_resolved,
        gaps_unresolved: o.gaps_unresolved,
        identified_gaps: &o.identified_gaps,
        resolved_gaps: &o.resolved_gaps,
        unresolved_gaps: &o.unresolved_gaps,
        context_from_cache: o.context_from_cache > 0,
        context_from_cache_count: o.context_from_cache,
        citations_removed: o.citations_removed,
        tokens_used: o.tokens_used,
        model_tokens: o.model_tokens,
        crag_decision: o.first.verdict().map(|v| v.as_str()),
        crag_score: o.first.evaluation.as_ref().map(|e| e.score),
        passes: o.passes.iter().map(pass).collect(),
        results: results(&o.artifacts),
        warnings: &o.warnings,
        total_ms: ms(o.total),
    }
}

/// A line of `GET /v1/sessions`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = SessionSummary)]
pub struct SessionSummaryOutput {
    /// The id.
    pub session_id: String,
    /// Cached nodes.
    pub nodes: usize,
    /// Turns.
    pub turns: usize,
    /// Created (ms since the epoch).
    pub created_ms: i64,
    /// Last used (ms since the epoch).
    pub last_used_ms: i64,
}

impl From<&SessionSummary> for SessionSummaryOutput {
    fn from(s: &SessionSummary) -> Self {
        Self {
            session_id: s.id.to_string(),
            nodes: s.nodes,
            turns: s.turns,
            created_ms: s.created_ms,
            last_used_ms: s.last_used_ms,
        }
    }
}

/// `GET /v1/sessions`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Sessions)]
pub struct SessionsResponse {
    /// Most recently used first.
    pub sessions: Vec<SessionSummaryOutput>,
}

/// `GET /v1/sessions/{id}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Session)]
pub struct SessionOutput {
    /// The id.
    pub session_id: String,
    /// Created (ms since the epoch).
    pub created_ms: i64,
    /// Last used (ms since the epoch).
    pub last_used_ms: i64,
    /// Cached context, most recently used first.
    pub nodes: Vec<NodeOutput>,
    /// Gaps looked for in vain.
    pub not_found: Vec<String>,
    /// Turns, oldest first.
    pub turns: Vec<TurnOutput>,
}

/// A piece of context a session keeps.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = SessionNode)]
pub struct NodeOutput {
    /// The chunk id.
    pub chunk_id: String,
    /// Path or URL.
    pub source: String,
    /// The text as it was returned.
    pub text: String,
}

/// One question and its answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Turn)]
pub struct TurnOutput {
    /// The question.
    pub question: String,
    /// The answer (null when no model wrote one).
    pub answer: Option<String>,
    /// The model that answered.
    pub model: Option<String>,
    /// Tokens of the model calls of the turn (estimated).
    pub tokens: u32,
    /// When (ms since the epoch).
    pub at_ms: i64,
}

impl From<&Session> for SessionOutput {
    fn from(s: &Session) -> Self {
        Self {
            session_id: s.id.to_string(),
            created_ms: s.created_ms,
            last_used_ms: s.last_used_ms,
            nodes: s
                .nodes
                .iter()
                .map(|n| NodeOutput {
                    chunk_id: n.chunk_id.clone(),
                    source: n.source.clone(),
                    text: n.text.clone(),
                })
                .collect(),
            not_found: s.not_found.clone(),
            turns: s
                .turns
                .iter()
                .map(|t| TurnOutput {
                    question: t.question.clone(),
                    answer: t.answer.clone(),
                    model: t.model.clone(),
                    tokens: t.tokens,
                    at_ms: t.at_ms,
                })
                .collect(),
        }
    }
}

/// `DELETE /v1/sessions/{id}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleted {
    /// The id, normalised (lower case).
    pub session_id: String,
    /// Always true (a missing session is a 404).
    pub deleted: bool,
}
