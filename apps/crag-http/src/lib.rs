//! crag's HTTP API: a thin axum router over the engine.
//!
//! `POST /v1/query`, `POST /v1/ask`, `GET /v1/sessions`, `GET|DELETE /v1/sessions/{id}`,
//! `POST /v1/documents`, `DELETE /v1/documents/{id}`, `GET /v1/stats`,
//! `GET /healthz`, `GET /readyz`, `GET /metrics` and `GET /openapi.json`. Wire shapes live in
//! [`dto`]; errors become statuses in one place ([`ApiError`]). Every route but the health
//! checks requires the bearer token when `[auth]` configures one; requests past
//! `server.max_concurrent_requests` are refused with 503 instead of queued; each request has
//! the `server.request_timeout_ms` deadline.

mod conn;
pub mod dto;
mod error;
mod metrics;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use crag_app::{Api, AskParams, DocumentParams, QueryParams, TokenSet};
use crag_config::Config;
use crag_engine::Engine;

pub use error::ApiError;
pub use metrics::HttpMetrics;

/// The OpenAPI 3.1 document served at `/openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// What the handlers share: the application layer and the HTTP metrics.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    api: Api,
    max_body_bytes: usize,
    header_timeout: Duration,
    metrics: HttpMetrics,
}

impl AppState {
    /// State over `engine` with the configuration's limits, tokens and server settings.
    pub fn new(engine: Engine, config: &Config, tokens: TokenSet) -> anyhow::Result<Self> {
        let metrics = HttpMetrics::register(engine.metrics().registry())?;
        Ok(Self {
            inner: Arc::new(Inner {
                api: Api::new(engine, config, tokens),
                max_body_bytes: config.limits.max_body_bytes,
                header_timeout: Duration::from_millis(config.server.header_read_timeout_ms),
                metrics,
            }),
        })
    }

    /// Marks the service not ready (`/readyz` answers 503), e.g. while draining.
    pub fn set_ready(&self, ready: bool) {
        self.inner.api.set_ready(ready);
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        self.inner.api.engine()
    }

    /// How long a client may take to send its request headers
    /// (`server.header_read_timeout_ms`).
    pub fn header_timeout(&self) -> Duration {
        self.inner.header_timeout
    }
}

/// The router with every route and middleware.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/v1/query", post(query))
        .route("/v1/documents", post(ingest))
        .route("/v1/documents/{*id}", delete(delete_document))
        .route("/v1/stats", get(stats))
        .route("/v1/ask", post(ask))
        .route("/v1/sessions", get(list_sessions))
        .route("/v1/sessions/{id}", get(get_session).delete(delete_session))
        .route("/metrics", get(metrics))
        .route("/openapi.json", get(openapi))
        .route_layer(middleware::from_fn_with_state(state.clone(), guard))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .merge(api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.inner.max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state)
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets in-flight requests
/// finish (at most `grace`). A client that has not sent its request headers within
/// `header_timeout` is disconnected.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    crag_app::serve_gracefully(
        |signal| conn::serve_connections(listener, router, header_timeout, signal),
        shutdown,
        grace,
        "HTTP",
    )
    .await
}

/// Binds `addr` and serves the engine until `shutdown` resolves; `/readyz` turns 503 first.
pub async fn run(
    state: AppState,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    let listener = crag_app::bind(addr, "server.http_addr", "HTTP").await?;
    let ready = state.clone();
    let shutdown = async move {
        shutdown.await;
        ready.set_ready(false);
        tracing::info!("shutting down HTTP: draining in-flight requests");
    };
    let header_timeout = state.header_timeout();
    serve(listener, router(state), header_timeout, shutdown, grace).await
}

/// Bearer-token check on every API route (health checks are outside it).
async fn authenticate(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    if let Err(e) = state.inner.api.authorize(header) {
        return ApiError::from(e).into_response();
    }
    next.run(request).await
}

/// Concurrency limit (refuse, never queue) and the per-request deadline.
async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match state.inner.api.guarded(next.run(request)).await {
        Ok(response) => response,
        Err(shed) => {
            state.inner.metrics.rejected(shed.reason());
            ApiError::from(crag_app::AppError::from(shed)).into_response()
        }
    }
}

/// Request metrics and one tracing event per request.
async fn observe(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status();
    state
        .inner
        .metrics
        .observe(&route, method.as_str(), status.as_u16(), elapsed);
    tracing::info!(target: "crag::http", %method, route, status = status.as_u16(), ms = dto::ms(elapsed), "request");
    response
}

async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn readyz(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    if !state.inner.api.is_ready() {
        return Err(ApiError::Unavailable("shutting down".into()));
    }
    Ok(Json(serde_json::json!({ "status": "ready" })))
}

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

async fn openapi() -> impl IntoResponse {
    ([("content-type", "application/json")], OPENAPI)
}

async fn metrics(State(state): State<AppState>) -> Result<Response, ApiError> {
    let text = state.inner.api.metrics_text()?;
    Ok((
        [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response())
}

async fn query(
    State(state): State<AppState>,
    body: Result<Json<dto::QueryBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let params = QueryParams::from(body);
    let (request, outcome) = state.inner.api.query(&params).await?;
    let response = dto::query_response(None, params.session_id.as_deref(), request.top_k, &outcome);
    Ok(Json(response).into_response())
}

async fn ingest(
    State(state): State<AppState>,
    body: Result<Json<dto::DocumentsBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Json<dto::IngestResponse>, ApiError> {
    let Json(body) = body?;
    let documents = body
        .documents
        .into_iter()
        .map(DocumentParams::from)
        .collect();
    let outcome = state.inner.api.ingest(documents).await?;
    Ok(Json(dto::IngestResponse::from(outcome)))
}

async fn delete_document(
    State(state): State<AppState>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Json<dto::DeleteResponse>, ApiError> {
    let Path(raw) = id?;
    state.inner.api.delete(&raw).await?;
    Ok(Json(dto::DeleteResponse {
        id: raw,
        deleted: true,
    }))
}

async fn stats(State(state): State<AppState>) -> Result<Json<dto::StatsResponse>, ApiError> {
    Ok(Json(state.inner.api.stats().await?.into()))
}

async fn ask(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    body: Result<Json<dto::AskBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body?;
    let params = AskParams::from(body);
    let streamed = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if !streamed {
        let outcome = state.inner.api.ask(&params).await?;
        return Ok(Json(dto::ask_response(&outcome)).into_response());
    }
    // Server-sent events: a `pass` event per pass, then `answer` (or `error`).
    let request = state.inner.api.ask_request(&params)?;
    let api = state.inner.api.clone();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<axum::response::sse::Event>();
    tokio::spawn(async move {
        let passes = tx.clone();
        let observer = move |p: &crag_engine::PassReport| {
            if let Ok(event) = axum::response::sse::Event::default()
                .event("pass")
                .json_data(dto::pass(p))
            {
                let _ = passes.send(event);
            }
        };
        let last = match api.run_ask(&request, &observer).await {
            Ok(outcome) => axum::response::sse::Event::default()
                .event("answer")
                .json_data(dto::ask_response(&outcome)),
            Err(e) => {
                let (status, code, message) = ApiError::from(e).parts_owned();
                axum::response::sse::Event::default()
                    .event("error")
                    .json_data(
                        serde_json::json!({"status": status, "code": code, "message": message}),
                    )
            }
        };
        if let Ok(event) = last {
            let _ = tx.send(event);
        }
    });
    let stream = tokio_stream::StreamExt::map(
        tokio_stream::wrappers::UnboundedReceiverStream::new(rx),
        Ok::<_, std::convert::Infallible>,
    );
    Ok(axum::response::sse::Sse::new(stream).into_response())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<i64>,
}

async fn list_sessions(
    State(state): State<AppState>,
    query: Result<axum::extract::Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<dto::SessionsResponse>, ApiError> {
    let axum::extract::Query(query) = query
        .map_err(|e| ApiError::InvalidArgument(format!("invalid query: {}", e.body_text())))?;
    let sessions = state.inner.api.sessions(query.limit).await?;
    Ok(Json(dto::SessionsResponse {
        sessions: sessions.iter().map(Into::into).collect(),
    }))
}

async fn get_session(
    State(state): State<AppState>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Json<dto::SessionOutput>, ApiError> {
    let Path(raw) = id?;
    Ok(Json((&state.inner.api.session(&raw).await?).into()))
}

async fn delete_session(
    State(state): State<AppState>,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Path(raw) = id?;
    state.inner.api.delete_session(&raw).await?;
    Ok(Json(
        serde_json::json!({ "sessionId": raw.trim().to_lowercase(), "deleted": true }),
    ))
}
