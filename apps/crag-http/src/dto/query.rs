//! `POST /v1/query` answer (and `crag query --json`): the results with their provenance, the
//! Corrective RAG decision and the corrections made.

use crag_core::{CodeMeta, LegHit, TopK};
use crag_engine::{Artifact, ArtifactOrigin, QueryOutcome};
use serde::Serialize;
use utoipa::ToSchema;

use super::timings::TimingsOutput;

/// `POST /v1/query` answer, and `crag query --json`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryResponse<'a> {
    /// The query's id in a `crag query --batch` run.
    #[serde(skip_serializing_if = "Option::is_none")]
    query_id: Option<&'a str>,
    /// The caller's session, echoed back.
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    /// The query as retrieved with.
    query: &'a str,
    /// Results asked for.
    top_k: usize,
    /// The router's choice.
    route: RouteOutput<'a>,
    /// `correct`, `ambiguous` or `incorrect`; null when not judged.
    crag_decision: Option<&'static str>,
    /// The evaluator's overall score in [0, 1].
    crag_score: Option<f32>,
    /// The main correction applied: `web_search`, `expand`, `rewrite`, `refine`, `discard` or
    /// `none`.
    crag_correction_strategy: &'static str,
    /// Whether web results were used.
    crag_web_search_used: bool,
    /// The evaluation in full.
    crag: Option<CragOutput<'a>>,
    /// The corrections made, in order.
    corrections: Vec<CorrectionOutput<'a>>,
    /// Results of plain hybrid retrieval before corrections.
    original_count: usize,
    /// The reranker's report, when it ran.
    rerank: Option<RerankOutput<'a>>,
    /// Tokens of the returned context.
    tokens_used: usize,
    /// The token budget applied.
    token_budget: usize,
    /// The context, best first.
    results: Vec<ResultOutput<'a>>,
    /// Per-stage milliseconds.
    timings: TimingsOutput,
    /// What went wrong without failing the query (a fail-open dependency, a skipped stage).
    warnings: &'a [String],
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RerankOutput<'a> {
    model_id: &'a str,
    candidates: usize,
    kept: usize,
    skipped: Option<&'a str>,
    cache_hit: bool,
}

#[derive(Serialize, ToSchema)]
struct RerankScoreOutput {
    logit: f32,
    probability: f32,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RouteOutput<'a> {
    /// `no_retrieval`, `single`, `multi_step` or `knowledge_graph`.
    route: &'static str,
    /// The rule that fired; for `knowledge_graph`, the related terms added.
    reason: &'a str,
    sub_queries: &'a [String],
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CragOutput<'a> {
    evaluator: Option<&'a str>,
    verdict: &'static str,
    score: f32,
    reasoning: &'a str,
    criteria: Vec<CriterionOutput<'a>>,
    document_scores: &'a [Option<f32>],
    /// Beside each of `documentScores`, the evaluator's one-sentence reason for that score (the
    /// `llm` evaluator's, the `http` service's), null where it gave none.
    document_reasons: Vec<Option<&'a str>>,
    issues: &'a [String],
}

#[derive(Serialize, ToSchema)]
pub(crate) struct CriterionOutput<'a> {
    name: &'a str,
    score: f32,
    weight: f32,
}

impl<'a> From<&'a crag_core::CriterionScore> for CriterionOutput<'a> {
    fn from(c: &'a crag_core::CriterionScore) -> Self {
        Self {
            name: &c.name,
            score: c.score,
            weight: c.weight,
        }
    }
}

#[derive(Serialize, ToSchema)]
struct CorrectionOutput<'a> {
    kind: &'static str,
    reason: &'a str,
    queries: &'a [String],
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Result)]
pub(crate) struct ResultOutput<'a> {
    rank: usize,
    chunk_id: &'a str,
    document_id: &'a str,
    source: &'a str,
    title: &'a str,
    kind: &'a str,
    /// `index`, `web`, `gap`, `session`, `graph` or `history`.
    #[schema(value_type = String)]
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
    /// The document's metadata: its own fields and those crag derives (`source`, `kind`,
    /// `language`, `modified`); empty for web results.
    #[schema(value_type = Object)]
    metadata: &'a crag_core::Metadata,
    text: &'a str,
}

#[derive(Serialize, ToSchema)]
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

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SpanOutput {
    byte_start: u64,
    byte_end: u64,
    line_start: u32,
    line_end: u32,
}

#[derive(Serialize, ToSchema)]
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

/// The JSON shape of ranked results, numbered from 1.
pub(crate) fn results(artifacts: &[Artifact]) -> Vec<ResultOutput<'_>> {
    artifacts
        .iter()
        .enumerate()
        .map(|(i, a)| result(i + 1, a))
        .collect()
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
        metadata: &c.metadata,
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
            criteria: e.criteria.iter().map(CriterionOutput::from).collect(),
            document_scores: &e.document_scores,
            document_reasons: (0..e.document_scores.len())
                .map(|i| e.document_reason(i))
                .collect(),
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
        results: results(&o.artifacts),
        timings: TimingsOutput::from(&o.timings),
        warnings: &o.warnings,
    }
}
