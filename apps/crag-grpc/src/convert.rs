//! Protobuf messages to and from domain types; nowhere else.

use std::collections::HashMap;

use crag_app::{DocumentParams, EvaluateDocumentParams, EvaluateParams, QueryParams};
use crag_core::LegHit;
use crag_engine::{Artifact, ArtifactOrigin, EvaluationReport, IngestReport, QueryOutcome};

use crate::pb;

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// A JSON field sent as text: `None` when empty, refused when it is not JSON.
fn json_text(field: &str, raw: &str) -> Result<Option<serde_json::Value>, tonic::Status> {
    if raw.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(raw)
        .map(Some)
        .map_err(|e| tonic::Status::invalid_argument(format!("{field} is not JSON: {e}")))
}

pub(crate) fn query_params(m: pb::QueryRequest) -> Result<QueryParams, tonic::Status> {
    let filters = m.filters.unwrap_or_default();
    let metadata = json_text("filters.metadataJson", &filters.metadata_json)?;
    Ok(QueryParams {
        query: m.query,
        // proto3 has no "absent" for plain scalars; 0 means "the default" as documented.
        top_k: m.top_k.filter(|&k| k != 0),
        token_budget: m.token_budget,
        use_crag: m.use_crag,
        use_web_search: m.use_web_search,
        use_rerank: m.use_rerank,
        source_prefix: non_empty(filters.source_prefix),
        kinds: filters.kinds,
        languages: filters.languages,
        symbol_kinds: filters.symbol_kinds,
        metadata,
        scope: None,
        session_id: non_empty(m.session_id),
        fusion: crag_app::FusionParams {
            method: non_empty(m.fusion),
            keyword_weight: m.keyword_weight,
            rrf_k: m.rrf_k,
        },
    })
}

pub(crate) fn document(d: pb::Document) -> Result<DocumentParams, tonic::Status> {
    let metadata = json_text("metadataJson", &d.metadata_json)?;
    Ok(DocumentParams {
        id: d.id,
        text: d.text,
        title: non_empty(d.title),
        source: non_empty(d.source),
        kind: non_empty(d.kind),
        metadata,
    })
}

fn leg(l: Option<LegHit>) -> Option<pb::LegScore> {
    l.map(|l| pb::LegScore {
        rank: l.rank as u32,
        score: l.score,
    })
}

fn artifact(a: &Artifact) -> pb::Artifact {
    let c = &a.chunk;
    pb::Artifact {
        id: c.id.as_str().to_owned(),
        document_id: c.document_id.as_str().to_owned(),
        source: c.source.clone(),
        title: c.title.clone(),
        text: c.text.clone(),
        span: Some(pb::Span {
            byte_start: c.span.byte_start,
            byte_end: c.span.byte_end,
            line_start: c.span.line_start,
            line_end: c.span.line_end,
        }),
        kind: c.kind.as_str().to_owned(),
        origin: match a.origin {
            ArtifactOrigin::Index => "index",
            ArtifactOrigin::Web => "web",
            ArtifactOrigin::Gap => "gap",
            ArtifactOrigin::Session => "session",
            ArtifactOrigin::Graph => "graph",
            ArtifactOrigin::History => "history",
        }
        .to_owned(),
        keyword: leg(a.keyword),
        vector: leg(a.vector),
        fused_score: a.fused_score,
        normalized_score: a.normalized_score,
        relevance: a.relevance,
        rerank_probability: a.rerank.map(|r| r.probability),
        rerank_logit: a.rerank.map(|r| r.logit),
        web_rank: a.web_rank.map(|r| r as u32),
        refined: a.refined,
        tokens: a.tokens as u32,
        code: c.code.as_ref().map(|m| pb::CodeMeta {
            language: m.language.clone(),
            symbol: m.symbol.clone(),
            symbol_kind: m.symbol_kind.as_str().to_owned(),
            qualified: m.qualified.clone(),
            signature: m.signature.clone(),
            part: m.part,
            parts: m.parts,
        }),
        metadata_json: serde_json::Value::Object(c.metadata.clone()).to_string(),
    }
}

pub(crate) fn crag_metadata(o: &QueryOutcome) -> pb::CragMetadata {
    let t = &o.timings;
    let stages_ms: HashMap<String, f64> = t
        .named()
        .into_iter()
        .map(|(k, d)| (k.to_owned(), ms(d)))
        .collect();
    let evaluation = o.evaluation.as_ref();
    pb::CragMetadata {
        verdict: o
            .verdict()
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default(),
        score: evaluation.map(|e| e.score),
        criteria: evaluation
            .map(|e| e.criteria.iter().map(criterion).collect())
            .unwrap_or_default(),
        corrections: o
            .corrections
            .iter()
            .map(|c| pb::Correction {
                kind: c.kind.as_str().to_owned(),
                reason: c.reason.clone(),
                queries: c.queries.clone(),
            })
            .collect(),
        correction_strategy: o.correction_strategy().to_owned(),
        web_search_used: o.web_search_used,
        evaluator: o.evaluator.clone().unwrap_or_default(),
        route: o.route.route.as_str().to_owned(),
        original_count: o.original_count as u32,
        timings: Some(pb::Timings { stages_ms }),
        route_reason: o.route.reason.clone(),
        reasoning: evaluation.map(|e| e.reasoning.clone()).unwrap_or_default(),
        document_scores: evaluation
            .map(|e| {
                e.document_scores
                    .iter()
                    .enumerate()
                    .map(|(i, &score)| pb::DocumentScore {
                        score,
                        reason: e.document_reason(i).map(str::to_owned),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        issues: evaluation.map(|e| e.issues.clone()).unwrap_or_default(),
        sub_queries: o.route.sub_queries.clone(),
    }
}

/// The gRPC answer of a query: everything the HTTP answer (`crag query --json`) holds.
pub(crate) fn query_response(
    session_id: String,
    top_k: usize,
    o: &QueryOutcome,
) -> pb::QueryResponse {
    pb::QueryResponse {
        session_id,
        query: o.query.as_str().to_owned(),
        top_k: top_k as u32,
        rerank: o.rerank.as_ref().map(|r| pb::RerankReport {
            model_id: r.model_id.clone(),
            candidates: r.candidates as u32,
            kept: r.kept as u32,
            skipped: r.skipped.clone().unwrap_or_default(),
            cache_hit: r.cache_hit,
        }),
        artifacts: o.artifacts.iter().map(artifact).collect(),
        crag: Some(crag_metadata(o)),
        tokens_used: o.tokens_used as u32,
        token_budget: o.token_budget as u32,
        warnings: o.warnings.clone(),
    }
}

pub(crate) fn ingest_response(outcome: crag_app::IngestOutcome) -> pb::IngestResponse {
    let report = outcome.report.as_ref();
    let count = |f: fn(&IngestReport) -> usize| report.map_or(0, f) as u32;
    pb::IngestResponse {
        documents_received: outcome.received as u32,
        documents_added: count(|r| r.documents_added),
        documents_updated: count(|r| r.documents_updated),
        documents_unchanged: count(|r| r.documents_unchanged),
        chunks_written: count(|r| r.chunks_written),
        errors: outcome
            .errors
            .into_iter()
            .map(|e| pb::DocumentError {
                index: e.index as u32,
                id: e.id,
                message: e.message,
            })
            .collect(),
    }
}

pub(crate) fn ask_params(m: pb::AskRequest) -> Result<crag_app::AskParams, tonic::Status> {
    let filters = m.filters.unwrap_or_default();
    let metadata = json_text("filters.metadataJson", &filters.metadata_json)?;
    Ok(crag_app::AskParams {
        query: QueryParams {
            query: m.query,
            top_k: m.top_k.filter(|&k| k != 0),
            token_budget: None,
            use_crag: m.use_crag,
            use_web_search: m.use_web_search,
            use_rerank: None,
            source_prefix: non_empty(filters.source_prefix),
            kinds: filters.kinds,
            languages: filters.languages,
            symbol_kinds: filters.symbol_kinds,
            metadata,
            scope: None,
            session_id: non_empty(m.session_id),
            fusion: Default::default(),
        },
        new_session: m.new_session,
    })
}

pub(crate) fn ask_response(o: &crag_engine::AskOutcome) -> pb::AskResponse {
    let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    pb::AskResponse {
        session_id: o.session_id.map(|id| id.to_string()).unwrap_or_default(),
        answer: o.answer.clone(),
        detector: o.detector.clone(),
        stop: o.stop.as_str().to_owned(),
        passes_used: n(o.passes_used()),
        gaps_identified: n(o.gaps_identified),
        gaps_resolved: n(o.gaps_resolved),
        gaps_unresolved: n(o.gaps_unresolved),
        context_from_cache: n(o.context_from_cache),
        context_from_cache_used: o.context_from_cache > 0,
        identified_gaps: o.identified_gaps.clone(),
        resolved_gaps: o.resolved_gaps.clone(),
        unresolved_gaps: o.unresolved_gaps.clone(),
        citations_removed: n(o.citations_removed),
        tokens_used: n(o.tokens_used),
        model_tokens: o.model_tokens,
        passes: o.passes.iter().map(pass).collect(),
        artifacts: o.artifacts.iter().map(artifact).collect(),
        crag: Some(crag_metadata(&o.first)),
        warnings: o.warnings.clone(),
        total_ms: ms(o.total),
    }
}

pub(crate) fn session_response(s: &crag_core::Session) -> pb::SessionResponse {
    pb::SessionResponse {
        session_id: s.id.to_string(),
        created_ms: s.created_ms,
        last_used_ms: s.last_used_ms,
        nodes: s
            .nodes
            .iter()
            .map(|c| pb::CachedNode {
                chunk_id: c.chunk_id.clone(),
                source: c.source.clone(),
                text: c.text.clone(),
            })
            .collect(),
        not_found: s.not_found.clone(),
        turns: s
            .turns
            .iter()
            .map(|t| pb::ChatTurn {
                question: t.question.clone(),
                answer: t.answer.clone(),
                model: t.model.clone(),
                tokens: t.tokens,
                at_ms: t.at_ms,
            })
            .collect(),
    }
}

pub(crate) fn session_summary(s: &crag_core::SessionSummary) -> pb::SessionSummary {
    pb::SessionSummary {
        session_id: s.id.to_string(),
        nodes: u32::try_from(s.nodes).unwrap_or(u32::MAX),
        turns: u32::try_from(s.turns).unwrap_or(u32::MAX),
        created_ms: s.created_ms,
        last_used_ms: s.last_used_ms,
    }
}

pub(crate) fn pass(p: &crag_engine::PassReport) -> pb::Pass {
    let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    pb::Pass {
        pass: n(p.pass),
        retrieved: p
            .retrieved
            .iter()
            .map(|g| pb::GapRetrieval {
                gap: g.gap.clone(),
                lookup: g.lookup.to_owned(),
                chunk_ids: g.chunk_ids.clone(),
                neighbour_ids: g.neighbour_ids.clone(),
            })
            .collect(),
        context_chunks: n(p.context_chunks),
        neighbour_chunks: n(p.neighbour_chunks()),
        gaps: p.gaps.clone(),
        skipped: p.skipped.clone(),
        parsed: p.parsed,
        warnings: p.warnings.clone(),
        retrieve_ms: ms(p.retrieve),
        detect_ms: ms(p.detect),
    }
}

fn criterion(c: &crag_core::CriterionScore) -> pb::Criterion {
    pb::Criterion {
        name: c.name.clone(),
        score: c.score,
        weight: c.weight,
    }
}

pub(crate) fn evaluate_params(m: pb::EvaluateRequest) -> EvaluateParams {
    EvaluateParams {
        query: m.query,
        documents: m
            .documents
            .into_iter()
            .map(|d| EvaluateDocumentParams {
                id: non_empty(d.id),
                source: non_empty(d.source),
                text: d.text,
            })
            .collect(),
        context: m.context,
    }
}

pub(crate) fn evaluate_response(r: &EvaluationReport) -> pb::EvaluateResponse {
    let e = &r.evaluation;
    pb::EvaluateResponse {
        evaluator: r.evaluator.clone(),
        verdict: e.verdict.as_str().to_owned(),
        score: e.score,
        reasoning: e.reasoning.clone(),
        criteria: e.criteria.iter().map(criterion).collect(),
        documents: r
            .ids
            .iter()
            .enumerate()
            .map(|(i, id)| pb::JudgedDocument {
                id: id.clone(),
                score: e.document_scores.get(i).copied().flatten(),
                reason: e.document_reason(i).map(str::to_owned),
                similarity: r.similarities.get(i).copied().unwrap_or(0.0),
            })
            .collect(),
        issues: e.issues.clone(),
        elapsed_ms: ms(r.elapsed),
    }
}
