//! The JSON wire shapes of the HTTP API (camelCase: `cragDecision`, `cragScore`...),
//! also used by `crag query --json` (docs/cli-json.md). They convert from and to domain types
//! here and nowhere else.

mod ask;
mod collections;
mod evaluate;
mod query;
mod timings;

pub use ask::{
    ask_response, pass, AskBody, AskResponse, PassOutput, SessionDeleted, SessionOutput,
    SessionSummaryOutput, SessionsResponse,
};
pub use collections::{
    CollectionBody, CollectionDeleted, CollectionEntry, CollectionResponse, CollectionsResponse,
};
pub use evaluate::{evaluate_response, EvaluateBody, EvaluateDocumentBody, EvaluateResponse};
pub use query::{query_response, QueryResponse};
pub(crate) use query::{results, ResultOutput};

use crag_app::{DocumentParams, FusionParams, QueryParams};
use crag_engine::EngineStats;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Milliseconds of a duration, as reported in JSON.
pub fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `POST /v1/query` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = QueryRequest)]
pub struct QueryBody {
    /// The question or keywords.
    pub query: String,
    /// Results wanted (1..=limits.max_top_k, default 10).
    #[schema(minimum = 1)]
    pub top_k: Option<i64>,
    /// Token budget of the returned context (default crag.token_budget, at most
    /// limits.max_token_budget).
    #[schema(minimum = 1)]
    pub token_budget: Option<i64>,
    /// Judge and correct (default true).
    #[schema(default = true)]
    pub use_crag: Option<bool>,
    /// Allow web search (default true).
    #[schema(default = true)]
    pub use_web_search: Option<bool>,
    /// Rerank (default true).
    #[schema(default = true)]
    pub use_rerank: Option<bool>,
    /// Caller's session, echoed back.
    #[schema(pattern = "^[A-Za-z0-9._:-]{1,128}$")]
    pub session_id: Option<String>,
    /// Restricts retrieval.
    #[serde(default)]
    pub filters: Filters,
    /// How the BM25 and vector legs are fused for this query: `convex` or `rrf` (default:
    /// the configured `retrieval.fusion`; implied by `keywordWeight` or `rrfK` when only that
    /// one is given).
    #[schema(pattern = "^(convex|rrf)$")]
    pub fusion: Option<String>,
    /// The BM25 leg's weight in the convex fusion, in [0, 1] (default 0.5).
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub keyword_weight: Option<f64>,
    /// The RRF constant, above 0 (default 60).
    #[schema(exclusive_minimum = 0.0)]
    pub rrf_k: Option<f64>,
}

/// Retrieval filters.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
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
    /// Keep documents whose metadata passes this filter, applied inside both legs'
    /// searches: `{"team": "billing", "year": {"$gte": 2020}}`; operators `$eq`, `$ne`,
    /// `$in`, `$nin`, `$gt`, `$gte`, `$lt`, `$lte`, `$exists`, `$and`, `$or`, `$not`
    /// (docs/filters.md).
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
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
            metadata: b.filters.metadata,
            scope: None,
            session_id: b.session_id,
            fusion: FusionParams {
                method: b.fusion,
                keyword_weight: b.keyword_weight,
                rrf_k: b.rrf_k,
            },
        }
    }
}

/// `POST /v1/documents` body.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = DocumentsRequest)]
pub struct DocumentsBody {
    /// The documents (1..=limits.max_ingest_batch).
    pub documents: Vec<DocumentBody>,
}

/// One document to ingest.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(as = Document)]
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
    /// The document's metadata: a JSON object of at most `limits.max_metadata_bytes`, keys
    /// of letters, digits, `_` and `-`; not `source`, `kind`, `language` or `modified`,
    /// which crag derives.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
}

impl From<DocumentBody> for DocumentParams {
    fn from(d: DocumentBody) -> Self {
        Self {
            id: d.id,
            text: d.text,
            title: d.title,
            source: d.source,
            kind: d.kind,
            metadata: d.metadata,
        }
    }
}

/// A document the ingest request rejected.
#[derive(Debug, Clone, Serialize, ToSchema)]
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
#[derive(Debug, Clone, Serialize, ToSchema)]
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
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Stats)]
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

/// `GET /healthz` and `GET /readyz` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Status {
    /// `ok` (alive) or `ready`.
    pub status: &'static str,
}

/// The query string of `GET /v1/sessions`.
#[derive(Debug, Clone, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Sessions wanted, most recently used first (default 100, at most 1000).
    #[param(minimum = 1)]
    pub limit: Option<i64>,
}

/// `DELETE /v1/documents/{id}` answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteResponse {
    /// The deleted document.
    pub id: String,
    /// Always true (a missing document is a 404).
    pub deleted: bool,
}
