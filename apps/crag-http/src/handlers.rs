//! The route handlers. Each one's `#[utoipa::path]` is its entry in the OpenAPI document and,
//! through `utoipa_axum::routes!`, its place in the router: a route cannot be served without
//! being documented.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use crag_app::{Api, AskEvent, AskParams, Caller, DocumentParams, EvaluateParams, QueryParams};

use crate::collection::InCollection;
use crate::openapi::{
    AuthErrors, BodyErrors, InvalidArgument, NotFound, ServiceUnavailable, WriteErrors,
};
use crate::{dto, ApiError, AppState};

/// The header `POST /v1/ask` also takes the session id from (the body's `sessionId` wins).
pub const SESSION_HEADER: &str = "x-session-id";

mod collections;
pub(crate) use collections::*;

/// Liveness.
#[utoipa::path(get, path = "/healthz", security(()), responses(
    (status = 200, description = "Alive", body = dto::Status),
))]
pub(crate) async fn healthz() -> Json<dto::Status> {
    Json(dto::Status { status: "ok" })
}

/// Readiness: 503 while shutting down.
#[utoipa::path(get, path = "/readyz", security(()), responses(
    (status = 200, description = "Ready", body = dto::Status),
    ServiceUnavailable,
))]
pub(crate) async fn readyz(State(state): State<AppState>) -> Result<Json<dto::Status>, ApiError> {
    state.inner.api.readiness().await?;
    Ok(Json(dto::Status { status: "ready" }))
}

/// This document (OpenAPI 3.1, derived from the handlers and wire types).
#[utoipa::path(get, path = "/openapi.json", responses(
    (status = 200, description = "OpenAPI 3.1", body = Object, content_type = "application/json"),
    AuthErrors,
))]
pub(crate) async fn openapi() -> impl IntoResponse {
    (
        [("content-type", "application/json")],
        crate::openapi::json(),
    )
}

/// Prometheus metrics (text format).
#[utoipa::path(get, path = "/metrics", responses(
    (status = 200, description = "Metrics", body = String, content_type = "text/plain"),
    AuthErrors,
))]
pub(crate) async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let text = state.inner.api.metrics_text().await?;
    Ok((
        [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response())
}

/// Retrieve, judge and correct the context for a query.
#[utoipa::path(post, path = "/v1/query", request_body = dto::QueryBody, responses(
    (status = 200, description = "Context and Corrective RAG metadata", body = dto::QueryResponse),
    InvalidArgument,
    BodyErrors,
    AuthErrors,
))]
pub(crate) async fn query(
    Extension(caller): Extension<Caller>,
    InCollection(api): InCollection,
    body: Result<Json<dto::QueryBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let params = QueryParams {
        scope: caller.scope,
        ..QueryParams::from(body)
    };
    let (request, outcome) = api.query(&params).await?;
    let response = dto::query_response(None, params.session_id.as_deref(), request.top_k, &outcome);
    Ok(Json(response).into_response())
}

/// Judge documents retrieved elsewhere with the configured evaluator (Corrective RAG's
/// judgement as a service): the verdict, score, criteria and each document's score.
#[utoipa::path(post, path = "/v1/evaluate", request_body = dto::EvaluateBody, responses(
    (status = 200, description = "The evaluator's judgement", body = dto::EvaluateResponse),
    InvalidArgument,
    BodyErrors,
    AuthErrors,
))]
pub(crate) async fn evaluate(
    State(state): State<AppState>,
    body: Result<Json<dto::EvaluateBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let params = EvaluateParams::from(body);
    let report = state.inner.api.evaluate(&params).await?;
    Ok(Json(dto::evaluate_response(&report)).into_response())
}

/// Ingest a batch of documents; invalid ones are reported, the others indexed.
#[utoipa::path(post, path = "/v1/documents", request_body = dto::DocumentsBody, responses(
    (status = 200, description = "Counts and per-document errors", body = dto::IngestResponse),
    InvalidArgument,
    BodyErrors,
    WriteErrors,
    AuthErrors,
))]
pub(crate) async fn ingest(
    Extension(caller): Extension<Caller>,
    InCollection(api): InCollection,
    body: Result<Json<dto::DocumentsBody>, JsonRejection>,
) -> Result<Json<dto::IngestResponse>, ApiError> {
    Api::may_write(&caller)?;
    let Json(body) = body?;
    let documents = body
        .documents
        .into_iter()
        .map(DocumentParams::from)
        .collect();
    let outcome = api.ingest(documents).await?;
    Ok(Json(dto::IngestResponse::from(outcome)))
}

/// Delete a document (its id may contain `/`: send it as path segments or percent-encoded).
#[utoipa::path(delete, path = "/v1/documents/{*id}",
    params(("id" = String, Path, description = "The document id")),
    responses(
        (status = 200, description = "Deleted", body = dto::DeleteResponse),
        NotFound,
        InvalidArgument,
        WriteErrors,
        AuthErrors,
    ))]
pub(crate) async fn delete_document(
    Extension(caller): Extension<Caller>,
    InCollection(api): InCollection,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<dto::DeleteResponse>, ApiError> {
    Api::may_write(&caller)?;
    let Path(raw) = id?;
    api.delete(&raw).await?;
    Ok(Json(dto::DeleteResponse {
        id: raw,
        deleted: true,
    }))
}

/// What the indexes hold.
#[utoipa::path(get, path = "/v1/stats", responses(
    (status = 200, description = "Index statistics", body = dto::StatsResponse),
    AuthErrors,
))]
pub(crate) async fn stats(
    InCollection(api): InCollection,
) -> Result<Json<dto::StatsResponse>, ApiError> {
    Ok(Json(api.stats().await?.into()))
}

/// Answer with CGRAG: retrieve, name what is missing, fetch it (at most three passes), per
/// session. With `Accept: text/event-stream` the passes are streamed as `pass` events, then
/// `answer` (or `error`).
#[utoipa::path(post, path = "/v1/ask", request_body = dto::AskBody, params(
    ("X-Session-Id" = Option<String>, Header, description = "The session to continue when the body names none (32 hexadecimal digits)"),
), responses(
    (status = 200, description = "The answer (when a model is configured), the final context and the passes", content(
        (dto::AskResponse = "application/json"),
        (String = "text/event-stream"),
    )),
    InvalidArgument,
    BodyErrors,
    AuthErrors,
))]
pub(crate) async fn ask(
    Extension(caller): Extension<Caller>,
    InCollection(api): InCollection,
    headers: HeaderMap,
    body: Result<Json<dto::AskBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let mut params = AskParams::from(body);
    params.query.scope = caller.scope;
    // The session may also come as a header (`X-Session-Id`); the body's wins.
    if params.query.session_id.is_none() {
        params.query.session_id = headers
            .get(SESSION_HEADER)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    }
    let streamed = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if !streamed {
        let outcome = api.ask(&params).await?;
        return Ok(Json(dto::ask_response(&outcome)).into_response());
    }
    // Server-sent events: a `pass` event per pass, then `answer` (or `error`).
    let request = api.ask_request(&params)?;
    let events = tokio_stream::wrappers::UnboundedReceiverStream::new(api.ask_streamed(request));
    let stream = tokio_stream::StreamExt::filter_map(events, |e| {
        let event = match e {
            AskEvent::Pass(p) => Event::default().event("pass").json_data(dto::pass(&p)),
            AskEvent::Answer(outcome) => Event::default()
                .event("answer")
                .json_data(dto::ask_response(&outcome)),
            AskEvent::Failed(e) => {
                let (status, code, message) = ApiError::from(e).parts_owned();
                Event::default().event("error").json_data(
                    serde_json::json!({"status": status, "code": code, "message": message}),
                )
            }
        };
        event.ok().map(Ok::<_, std::convert::Infallible>)
    });
    Ok(Sse::new(stream).into_response())
}

/// The sessions, most recently used first.
#[utoipa::path(get, path = "/v1/sessions", params(dto::ListQuery), responses(
    (status = 200, description = "Session summaries", body = dto::SessionsResponse),
    InvalidArgument,
    AuthErrors,
))]
pub(crate) async fn list_sessions(
    InCollection(api): InCollection,
    query: Result<Query<dto::ListQuery>, QueryRejection>,
) -> Result<Json<dto::SessionsResponse>, ApiError> {
    let Query(query) = query
        .map_err(|e| ApiError::InvalidArgument(format!("invalid query: {}", e.body_text())))?;
    let sessions = api.sessions(query.limit).await?;
    Ok(Json(dto::SessionsResponse {
        sessions: sessions.iter().map(Into::into).collect(),
    }))
}

/// A session: its cached context, what it looked for in vain, its turns.
#[utoipa::path(get, path = "/v1/sessions/{id}",
    params(("id" = String, Path, description = "32 hexadecimal digits")),
    responses(
        (status = 200, description = "The session", body = dto::SessionOutput),
        NotFound,
        InvalidArgument,
        AuthErrors,
    ))]
pub(crate) async fn get_session(
    InCollection(api): InCollection,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<dto::SessionOutput>, ApiError> {
    let Path(raw) = id?;
    Ok(Json((&api.session(&raw).await?).into()))
}

/// Forget a session.
#[utoipa::path(delete, path = "/v1/sessions/{id}",
    params(("id" = String, Path, description = "32 hexadecimal digits")),
    responses(
        (status = 200, description = "Deleted", body = dto::SessionDeleted),
        NotFound,
        InvalidArgument,
        AuthErrors,
    ))]
pub(crate) async fn delete_session(
    InCollection(api): InCollection,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<dto::SessionDeleted>, ApiError> {
    let Path(raw) = id?;
    api.delete_session(&raw).await?;
    Ok(Json(dto::SessionDeleted {
        session_id: raw.trim().to_lowercase(),
        deleted: true,
    }))
}
