//! crag's HTTP API: a thin axum router over the engine.
//!
//! `POST /v1/query`, `POST /v1/ask`, `GET /v1/sessions`, `GET|DELETE /v1/sessions/{id}`,
//! `POST /v1/documents`, `DELETE /v1/documents/{id}`, `GET /v1/stats` (the default
//! collection's; each also under `/v1/collections/{collection}/` for another's),
//! `GET|POST /v1/collections`, `GET|DELETE /v1/collections/{name}`,
//! `GET /healthz`, `GET /readyz`, `GET /metrics` and `GET /openapi.json` (derived from the
//! handlers, [`openapi`]); with `[mcp] http`, MCP's streamable HTTP transport at `/mcp`
//! ([`crag_mcp`], the same tokens); with `server.inspector`, the query inspector page at
//! `/inspect` ([`inspector`]). Wire shapes live in [`dto`]; errors become statuses in one place ([`ApiError`]). Every route but the health
//! checks requires the bearer token when `[auth]` configures one; requests past
//! `server.max_concurrent_requests` are refused with 503 instead of queued; each request has
//! the `server.request_timeout_ms` deadline.

mod collection;
mod conn;
pub mod dto;
mod error;
mod handlers;
pub mod inspector;
mod metrics;
pub mod openapi;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use crag_app::Config;
use crag_app::{Api, TokenSet};
use crag_engine::Engine;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use conn::ConnectionOptions;
pub use error::ApiError;
pub use metrics::HttpMetrics;

/// What the handlers share: the application layer and the HTTP metrics.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    api: Api,
    /// The MCP transport's options when `[mcp] http` mounts it at `/mcp`.
    mcp: Option<crag_mcp::McpOptions>,
    /// Closes the MCP transport's open streams at shutdown.
    mcp_cancel: crag_mcp::CancellationToken,
    /// Serve the query inspector page (`server.inspector`).
    inspector: bool,
    max_body_bytes: usize,
    connections: ConnectionOptions,
    metrics: HttpMetrics,
}

impl AppState {
    /// State over `engine` with the configuration's limits, tokens and server settings; fails
    /// when the configured TLS files cannot be read or do not hold a matching pair.
    pub fn new(engine: Engine, config: &Config, tokens: TokenSet) -> anyhow::Result<Self> {
        Self::with_api(Api::new(engine, config, tokens), config)
    }

    /// State over `api`, which another transport may share (one registry of collections, one
    /// concurrency limit); the configuration's body limit and server settings.
    pub fn with_api(api: Api, config: &Config) -> anyhow::Result<Self> {
        let metrics = HttpMetrics::register(api.engine().metrics().registry())?;
        let tls = match crag_app::TlsIdentity::load(&config.server)? {
            Some(identity) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(
                identity.server_config(&[b"h2", b"http/1.1"])?,
            ))),
            None => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                api,
                mcp: config
                    .mcp
                    .http
                    .then(|| crag_mcp::McpOptions::from_config(config)),
                mcp_cancel: crag_mcp::CancellationToken::new(),
                inspector: config.server.inspector,
                max_body_bytes: config.limits.max_body_bytes,
                connections: ConnectionOptions {
                    header_timeout: Duration::from_millis(config.server.header_read_timeout_ms),
                    tls,
                },
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

    /// How connections are served: the header timeout (`server.header_read_timeout_ms`) and
    /// TLS (`server.tls_cert_path`).
    pub fn connections(&self) -> ConnectionOptions {
        self.inner.connections.clone()
    }
}

/// Every route, as (public, authenticated), each registered with its OpenAPI entry. Add a
/// route here, with `routes!` only: [`router`] serves it and [`openapi::document`] lists it.
fn routes() -> (OpenApiRouter<AppState>, OpenApiRouter<AppState>) {
    use handlers::*;
    let public = OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz));
    let authenticated = OpenApiRouter::new()
        .routes(routes!(query))
        .routes(routes!(evaluate))
        .routes(routes!(ingest))
        .routes(routes!(delete_document))
        .routes(routes!(stats))
        .routes(routes!(ask))
        .routes(routes!(list_sessions))
        .routes(routes!(get_session, delete_session))
        .routes(routes!(list_collections, create_collection))
        .routes(routes!(describe_collection, delete_collection))
        .routes(routes!(metrics))
        .routes(routes!(openapi));
    (public, authenticated)
}

/// The router with every route and middleware; `/v1/collections/{collection}/...` is
/// served by the same routes as the default collection's ([`collection::select`]).
pub fn router(state: AppState) -> Router {
    let (public, authenticated) = routes();
    let authenticated = authenticated
        .route_layer(middleware::from_fn_with_state(state.clone(), guard))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    let (mut router, _) = public.merge(authenticated).split_for_parts();
    if let Some(options) = &state.inner.mcp {
        // MCP's streamable HTTP transport: the same tokens (the caller reaches the tools in
        // the request's extensions); its tools run under the API's concurrency limit and
        // deadline themselves, as its event streams outlive one request.
        let service = crag_mcp::http_service(
            state.inner.api.clone(),
            options,
            state.inner.mcp_cancel.clone(),
        );
        router = router.merge(
            Router::new()
                .nest_service(crag_mcp::HTTP_PATH, service)
                .layer(middleware::from_fn_with_state(state.clone(), authenticate)),
        );
    }
    if state.inner.inspector {
        router = router.merge(inspector::router());
    }
    let inner = router
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.inner.max_body_bytes))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .with_state(state);
    Router::new().fallback_service(tower::util::MapRequest::new(inner, collection::select))
}

/// Serves `router` on `listener` until `shutdown` resolves, then lets in-flight requests
/// finish (at most `grace`). A client that has not sent its request headers within
/// `connections.header_timeout` is disconnected.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    connections: ConnectionOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    Ok(crag_app::serve_gracefully(
        |signal| conn::serve_connections(listener, router, connections, signal),
        shutdown,
        grace,
        "HTTP",
    )
    .await?)
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
        ready.inner.mcp_cancel.cancel();
        tracing::info!("shutting down HTTP: draining in-flight requests");
    };
    let connections = state.connections();
    serve(listener, router(state), connections, shutdown, grace).await
}

/// Bearer-token check on every API route (health checks are outside it).
async fn authenticate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let header = request.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
    match state.inner.api.authorize(header) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(e) => ApiError::from(e).into_response(),
    }
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

async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}
