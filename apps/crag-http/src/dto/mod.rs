//! The JSON wire shapes of the HTTP API (camelCase, seed-000 names such as `cragDecision`),
//! also used by `crag query --json` (docs/cli-json.md). They convert from and to domain types
//! here and nowhere else.

mod ask;

pub use ask::{
    ask_response, pass, AskBody, AskResponse, PassOutput, SessionOutput, SessionSummaryOutput,
    SessionsResponse,
};

use crag_app::{DocumentParams, QueryParams};
use crag_core::{CodeMeta, LegHit, TopK};
use crag_engine::{Artifact, ArtifactOrigin, EngineStats, QueryOutcome, QueryTimings};
use serde::{Deserialize, Serialize};

/// Milliseconds of a duration, as reported in JSON.
pub fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `POST /v1/query` body.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueryBody {
    /// The question or keywords.
    pub query: String,
    /// Results wanted (1..=limits.max_top_k, default 10).
    pub top_k: Option<i64>,
    /// Token budget of the returned context.
    pub token_budget: Option<i64>,
    /// Judge and correct (default true).
    pub use_crag: Option<bool>,
    /// Allow web search (default true).
    pub use_web_search: Option<bool>,
    /// Rerank (default true).
    pub use_rerank: Option<bool>,
    /// Caller's session, echoed back.
    pub session_id: Option<String>,
    /// Restricts retrieval.
    #[serde(default)]
    pub filters: Filters,
}

/// Retrieval filters.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Filters {
    /// Keep sources starting with this prefix.
    pub source_prefix: Option<String>,
    /// Keep these kinds (`prose`, `code`, `web`).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Keep code chunks in these languages (`rust`, `python`, `typescript`, `tsx`,
    /// `javascript`, `go`).
    #[serde(default)]
    pub languages: Vec<String>,
    /// Keep code chunks defining these kinds of symbol (`function`, `method`, `struct`...).
    #[serde(default)]
    pub symbol_kinds: Vec<String>,
}

impl From<QueryBody> for QueryParams {
    fn from(b: QueryBody) -> Self {
        Self {
            query: b.query,
            top_k: b.top_k,
            token_budget: b.token_budget,
            use_crag: b.use_crag,
            use_web_search: b.use_web_search,
            use_rerank: b.use_rerank,
            source_prefix: b.filters.source_prefix,
            kinds: b.filters.kinds,
            languages: b.filters.languages,
            symbol_kinds: b.filters.symbol_kinds,
            session_id: b.session_id,
        }
    }
}

/// `POST /v1/documents` body.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentsBody {
    /// The documents (1..=limits.max_ingest_batch).
    pub documents: Vec<DocumentBody>,
}

/// One document to ingest.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentBody {
    /// Stable id (re-sending it replaces the document).
    pub id: String,
    /// Full text.
    pub text: String,
    /// Title.
    pub title: Option<String>,
    /// Path or URL shown to users (default: the id).
    pub source: Option<String>,
    /// `prose` (default) or `code`.
    pub kind: Option<String>,
}

impl From<DocumentBody> for DocumentParams {
    fn from(d: DocumentBody) -> Self {
        Self {
            id: d.id,
            text: d.text,
            title: d.title,
            source: d.source,
            kind: d.kind,
        }
    }
}

/// A document the ingest request rejected.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentError {
    /// Position in the request.
    pub index: usize,
    /// The id as sent.
    pub id: String,
    /// Why.
    pub message: String,
}

/// `POST /v1/documents` answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestResponse {
    /// Documents received.
    pub documents_received: usize,
    /// Indexed for the first time.
    pub documents_added: usize,
    /// Re-indexed because their content changed.
    pub documents_updated: usize,
    /// Unchanged (same content hash).
    pub documents_unchanged: usize,
    /// Chunks written.
    pub chunks_written: usize,
    /// Documents rejected, with the reason (the others were ingested).
    pub errors: Vec<DocumentError>,
}

impl From<crag_app::IngestOutcome> for IngestResponse {
    fn from(outcome: crag_app::IngestOutcome) -> Self {
        let report = outcome.report.as_ref();
        Self {
            documents_received: outcome.received,
            documents_added: report.map_or(0, |r| r.documents_added),
            documents_updated: report.map_or(0, |r| r.documents_updated),
            documents_unchanged: report.map_or(0, |r| r.documents_unchanged),
            chunks_written: report.map_or(0, |r| r.chunks_written),
            errors: outcome
                .errors
                .into_iter()
                .map(|e| DocumentError {
                    index: e.index,
                    id: e.id,
                    message: e.message,
                })
                .collect(),
        }
    }
}

/// `GET /v1/stats` answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsResponse {
    /// Distinct documents.
    pub documents: usize,
    /// Chunks in the keyword index.
    pub keyword_chunks: usize,
    /// Chunks in the vector index.
    pub vector_chunks: usize,
    /// Embedding model.
    pub embedding_model: String,
    /// Embedding dimension.
    pub dimension: usize,
}

impl From<EngineStats> for StatsResponse {
    fn from(s: EngineStats) -> Self {
        Self {
            documents: s.documents,
            keyword_chunks: s.keyword_chunks,
            vector_chunks: s.vector_chunks,
            embedding_model: s.embedding_model,
            dimension: s.dimension,
        }
    }
}

/// `DELETE /v1/documents/{id}` answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteResponse {
    /// The deleted document.
    pub id: String,
    /// Always true (a missing document is a 404).
    pub deleted: bool,
}

/// `POST /v1/query` answer, and `crag query --json`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    query_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    query: &'a str,
    top_k: usize,
    route: RouteOutput<'a>,
    crag_decision: Option<&'static str>,
    crag_score: Option<f32>,
    crag_correction_strategy: &'static str,
    crag_web_search_used: bool,
    crag: Option<CragOutput<'a>>,
    corrections: Vec<CorrectionOutput<'a>>,
    original_count: usize,
    rerank: Option<RerankOutput<'a>>,
    tokens_used: usize,
    token_budget: usize,
    results: Vec<ResultOutput<'a>>,
    timings: TimingsOutput,
    warnings: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RerankOutput<'a> {
    model_id: &'a str,
    candidates: usize,
    kept: usize,
    skipped: Option<&'a str>,
    cache_hit: bool,
}

#[derive(Serialize)]
struct RerankScoreOutput {
    logit: f32,
    probability: f32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RouteOutput<'a> {
    route: &'static str,
    reason: &'a str,
    sub_queries: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CragOutput<'a> {
    evaluator: Option<&'a str>,
    verdict: &'static str,
    score: f32,
    reasoning: &'a str,
    criteria: Vec<CriterionOutput<'a>>,
    document_scores: &'a [Option<f32>],
    issues: &'a [String],
}

#[derive(Serialize)]
struct CriterionOutput<'a> {
    name: &'a str,
    score: f32,
    weight: f32,
}

#[derive(Serialize)]
struct CorrectionOutput<'a> {
    kind: &'static str,
    reason: &'a str,
    queries: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultOutput<'a> {
    rank: usize,
    chunk_id: &'a str,
    document_id: &'a str,
    source: &'a str,
    title: &'a str,
    kind: &'a str,
    origin: ArtifactOrigin,
    span: SpanOutput,
    score: Option<f32>,
    fused_score: Option<f32>,
    keyword: Option<LegOutput>,
    vector: Option<LegOutput>,
    relevance: Option<f32>,
    rerank: Option<RerankScoreOutput>,
    web_rank: Option<usize>,
    refined: bool,
    tokens: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<CodeOutput<'a>>,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CodeOutput<'a> {
    language: &'a str,
    symbol: &'a str,
    symbol_kind: &'a str,
    qualified: &'a str,
    signature: &'a str,
    part: u32,
    parts: u32,
}

impl<'a> From<&'a CodeMeta> for CodeOutput<'a> {
    fn from(m: &'a CodeMeta) -> Self {
        Self {
            language: &m.language,
            symbol: &m.symbol,
            symbol_kind: m.symbol_kind.as_str(),
            qualified: &m.qualified,
            signature: &m.signature,
            part: m.part,
            parts: m.parts,
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpanOutput {
    byte_start: u64,
    byte_end: u64,
    line_start: u32,
    line_end: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TimingsOutput {
    route_ms: f64,
    retrieve_ms: f64,
    keyword_ms: f64,
    embed_ms: f64,
    vector_ms: f64,
    fusion_ms: f64,
    rerank_ms: f64,
    evaluate_ms: f64,
    expand_ms: f64,
    rewrite_ms: f64,
    web_search_ms: f64,
    refine_ms: f64,
    pack_ms: f64,
    total_ms: f64,
}

impl From<&QueryTimings> for TimingsOutput {
    fn from(t: &QueryTimings) -> Self {
        Self {
            route_ms: ms(t.route),
            retrieve_ms: ms(t.retrieve),
            keyword_ms: ms(t.retrieval.keyword),
            embed_ms: ms(t.retrieval.embed),
            vector_ms: ms(t.retrieval.vector),
            fusion_ms: ms(t.retrieval.fusion),
            rerank_ms: ms(t.rerank),
            evaluate_ms: ms(t.evaluate),
            expand_ms: ms(t.expand),
            rewrite_ms: ms(t.rewrite),
            web_search_ms: ms(t.web_search),
            refine_ms: ms(t.refine),
            pack_ms: ms(t.pack),
            total_ms: ms(t.total),
        }
    }
}

#[derive(Serialize)]
struct LegOutput {
    rank: usize,
    score: f32,
}

fn leg(l: Option<LegHit>) -> Option<LegOutput> {
    l.map(|l| LegOutput {
        rank: l.rank,
        score: l.score,
    })
}

fn result(rank: usize, a: &Artifact) -> ResultOutput<'_> {
    let c = &a.chunk;
    ResultOutput {
        rank,
        chunk_id: c.id.as_str(),
        document_id: c.document_id.as_str(),
        source: &c.source,
        title: &c.title,
        kind: c.kind.as_str(),
        origin: a.origin,
        span: SpanOutput {
            byte_start: c.span.byte_start,
            byte_end: c.span.byte_end,
            line_start: c.span.line_start,
            line_end: c.span.line_end,
        },
        score: a.normalized_score,
        fused_score: a.fused_score,
        keyword: leg(a.keyword),
        vector: leg(a.vector),
        relevance: a.relevance,
        rerank: a.rerank.map(|r| RerankScoreOutput {
            logit: r.logit,
            probability: r.probability,
        }),
        web_rank: a.web_rank,
        refined: a.refined,
        tokens: a.tokens,
        code: c.code.as_ref().map(CodeOutput::from),
        text: &c.text,
    }
}

/// The JSON shape of a query outcome (see docs/cli-json.md).
pub fn query_response<'a>(
    id: Option<&'a str>,
    session_id: Option<&'a str>,
    top_k: TopK,
    o: &'a QueryOutcome,
) -> QueryResponse<'a> {
    QueryResponse {
        query_id: id,
        session_id,
        query: o.query.as_str(),
        top_k: top_k.get(),
        route: RouteOutput {
            route: o.route.route.as_str(),
            reason: &o.route.reason,
            sub_queries: &o.route.sub_queries,
        },
        crag_decision: o.verdict().map(|v| v.as_str()),
        crag_score: o.evaluation.as_ref().map(|e| e.score),
        crag_correction_strategy: o.correction_strategy(),
        crag_web_search_used: o.web_search_used,
        crag: o.evaluation.as_ref().map(|e| CragOutput {
            evaluator: o.evaluator.as_deref(),
            verdict: e.verdict.as_str(),
            score: e.score,
            reasoning: &e.reasoning,
            criteria: e
                .criteria
                .iter()
                .map(|c| CriterionOutput {
                    name: &c.name,
                    score: c.score,
                    weight: c.weight,
                })
                .collect(),
            document_scores: &e.document_scores,
            issues: &e.issues,
        }),
        corrections: o
            .corrections
            .iter()
            .map(|c| CorrectionOutput {
                kind: c.kind.as_str(),
                reason: &c.reason,
                queries: &c.queries,
            })
            .collect(),
        original_count: o.original_count,
        rerank: o.rerank.as_ref().map(|r| RerankOutput {
            model_id: &r.model_id,
            candidates: r.candidates,
            kept: r.kept,
            skipped: r.skipped.as_deref(),
            cache_hit: r.cache_hit,
        }),
        tokens_used: o.tokens_used,
        token_budget: o.token_budget,
        results: o
            .artifacts
            .iter()
            .enumerate()
            .map(|(i, a)| result(i + 1, a))
            .collect(),
        timings: TimingsOutput::from(&o.timings),
        warnings: &o.warnings,
    }
}
