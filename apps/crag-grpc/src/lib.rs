//! crag's gRPC API: a thin tonic service over the engine (`proto/crag/v1/crag.proto`), with
//! the standard health service and server reflection.
//!
//! Every call but health checks needs the bearer token (`authorization: Bearer <token>`
//! metadata) when `[auth]` configures one; calls past `server.max_concurrent_requests` get
//! RESOURCE_EXHAUSTED instead of queueing; each call has the `server.request_timeout_ms`
//! deadline. Protobuf messages convert to domain types in [`convert`], errors to status codes
//! in one place ([`status`]).

pub mod codec;
mod collections;
mod conn;
mod convert;
mod health;
mod metrics;
#[cfg(test)]
mod prop_tests;

pub use collections::COLLECTION_METADATA;
pub use conn::{ConnectionLimits, PrefaceDeadline};
pub use health::ReadinessHealth;
pub use metrics::GrpcMetrics;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use crag_app::Config;
use crag_app::{Api, AppError, AskEvent, Caller, Code, TokenSet};
use crag_engine::Engine;
use tonic::{Request, Response, Status, Streaming};

/// Generated protobuf types, server and client of `crag.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("crag.v1");

    /// Encoded file descriptor set of `crag.v1`, served by reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("crag_v1_descriptor");
}

use pb::crag_server::{Crag, CragServer};

/// The one mapping from the application's error kinds to gRPC status codes.
pub fn status(e: AppError) -> Status {
    let code = match e.code {
        Code::InvalidArgument => tonic::Code::InvalidArgument,
        Code::Unauthenticated => tonic::Code::Unauthenticated,
        Code::PermissionDenied => tonic::Code::PermissionDenied,
        Code::NotFound => tonic::Code::NotFound,
        Code::AlreadyExists => tonic::Code::AlreadyExists,
        Code::ResourceExhausted => tonic::Code::ResourceExhausted,
        Code::Unavailable => tonic::Code::Unavailable,
        Code::DeadlineExceeded => tonic::Code::DeadlineExceeded,
        Code::Internal => tonic::Code::Internal,
    };
    Status::new(code, e.message)
}

/// What a call can fail with: an application error, or a status tonic already made (a broken
/// or oversized stream keeps its own code).
trait IntoStatus {
    fn into_status(self) -> Status;
}

impl IntoStatus for AppError {
    fn into_status(self) -> Status {
        status(self)
    }
}

impl IntoStatus for Status {
    fn into_status(self) -> Status {
        self
    }
}

/// The `crag.v1.Crag` service.
#[derive(Clone)]
pub struct CragService {
    api: Api,
    max_ingest_batch: usize,
    max_body_bytes: usize,
    connections: ConnectionLimits,
    metrics: GrpcMetrics,
}

impl CragService {
    /// The service over `engine` with the configuration's limits, tokens and server settings;
    /// its metrics (`crag_grpc_*`) join the engine's registry, so one engine serves one gRPC
    /// service. Fails when the configured TLS files cannot be read or do not hold a matching
    /// pair.
    pub fn new(engine: Engine, config: &Config, tokens: TokenSet) -> anyhow::Result<Self> {
        Self::with_api(Api::new(engine, config, tokens), config)
    }

    /// The service over `api`, which another transport may share (one registry of
    /// collections, one concurrency limit).
    pub fn with_api(api: Api, config: &Config) -> anyhow::Result<Self> {
        let metrics = GrpcMetrics::register(api.engine().metrics().registry())
            .map_err(|e| anyhow::anyhow!("cannot register the gRPC metrics: {e}"))?;
        Ok(Self {
            api,
            max_ingest_batch: config.limits.max_ingest_batch,
            max_body_bytes: config.limits.max_body_bytes,
            connections: ConnectionLimits {
                preface_timeout: Duration::from_millis(config.server.header_read_timeout_ms),
                max_age: Duration::from_millis(config.server.grpc_max_connection_age_ms),
                keepalive_interval: Duration::from_millis(config.server.grpc_keepalive_interval_ms),
                keepalive_timeout: Duration::from_millis(config.server.grpc_keepalive_timeout_ms),
                tls: crag_app::TlsIdentity::load(&config.server)?,
            },
            metrics,
        })
    }

    /// The application behind the service (its readiness, which health reports).
    pub fn api(&self) -> Api {
        self.api.clone()
    }

    /// The bounds on connections the configuration sets, which [`serve`] applies.
    pub fn connection_limits(&self) -> ConnectionLimits {
        self.connections.clone()
    }

    /// Runs `work` under the application's load shedding and deadline, and counts the call of
    /// `method` with its outcome.
    async fn guarded<T, E: IntoStatus>(
        &self,
        method: &str,
        work: impl Future<Output = Result<T, E>>,
    ) -> Result<Response<T>, Status> {
        let started = std::time::Instant::now();
        let result = match self.api.guarded(work).await {
            Ok(result) => result.map(Response::new).map_err(IntoStatus::into_status),
            Err(shed) => {
                self.metrics.rejected(shed.reason());
                Err(status(shed.into()))
            }
        };
        let code = result
            .as_ref()
            .map_or_else(Status::code, |_| tonic::Code::Ok);
        self.metrics.observe(method, code, started.elapsed());
        result
    }
}

#[tonic::async_trait]
impl Crag for CragService {
    async fn query(
        &self,
        request: Request<pb::QueryRequest>,
    ) -> Result<Response<pb::QueryResponse>, Status> {
        let caller = caller_of(&request)?;
        let api = self.in_collection(&request).await?;
        let mut params = convert::query_params(request.into_inner())?;
        params.scope = caller.scope;
        self.guarded("Query", async {
            let (request, outcome) = api.query(&params).await?;
            Ok::<_, AppError>(convert::query_response(
                params.session_id.unwrap_or_default(),
                request.top_k.get(),
                &outcome,
            ))
        })
        .await
    }

    async fn ingest(
        &self,
        request: Request<Streaming<pb::Document>>,
    ) -> Result<Response<pb::IngestResponse>, Status> {
        Api::may_write(&caller_of(&request)?).map_err(status)?;
        let api = self.in_collection(&request).await?;
        let mut stream = request.into_inner();
        self.guarded("Ingest", async {
            let mut received = Vec::new();
            while let Some(document) = stream.message().await? {
                if received.len() == self.max_ingest_batch {
                    return Err(Status::invalid_argument(format!(
                        "more than {} documents in one stream (limits.max_ingest_batch)",
                        self.max_ingest_batch
                    )));
                }
                received.push(convert::document(document)?);
            }
            let outcome = api.ingest(received).await.map_err(status)?;
            Ok(convert::ingest_response(outcome))
        })
        .await
    }

    async fn delete_document(
        &self,
        request: Request<pb::DeleteDocumentRequest>,
    ) -> Result<Response<pb::DeleteDocumentResponse>, Status> {
        Api::may_write(&caller_of(&request)?).map_err(status)?;
        let api = self.in_collection(&request).await?;
        let raw = request.into_inner().id;
        self.guarded("DeleteDocument", async {
            api.delete(&raw).await?;
            Ok::<_, AppError>(pb::DeleteDocumentResponse {
                id: raw.clone(),
                deleted: true,
            })
        })
        .await
    }

    async fn ask(
        &self,
        request: Request<pb::AskRequest>,
    ) -> Result<Response<pb::AskResponse>, Status> {
        let caller = caller_of(&request)?;
        let api = self.in_collection(&request).await?;
        let mut params = convert::ask_params(request.into_inner())?;
        params.query.scope = caller.scope;
        self.guarded("Ask", async {
            let outcome = api.ask(&params).await?;
            Ok::<_, AppError>(convert::ask_response(&outcome))
        })
        .await
    }

    type AskStreamStream = std::pin::Pin<
        Box<dyn tokio_stream::Stream<Item = Result<pb::AskEvent, Status>> + Send + 'static>,
    >;

    async fn ask_stream(
        &self,
        request: Request<pb::AskRequest>,
    ) -> Result<Response<Self::AskStreamStream>, Status> {
        let caller = caller_of(&request)?;
        let api = self.in_collection(&request).await?;
        let mut params = convert::ask_params(request.into_inner())?;
        params.query.scope = caller.scope;
        // Bad input is refused before the stream starts.
        let request = api.ask_request(&params).map_err(status)?;
        let events =
            tokio_stream::wrappers::UnboundedReceiverStream::new(api.ask_streamed(request));
        let stream = tokio_stream::StreamExt::map(events, |e| {
            let event = match e {
                AskEvent::Pass(p) => pb::ask_event::Event::Pass(convert::pass(&p)),
                AskEvent::Answer(o) => pb::ask_event::Event::Answer(convert::ask_response(&o)),
                AskEvent::Failed(e) => return Err(status(e)),
            };
            Ok(pb::AskEvent { event: Some(event) })
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn list_sessions(
        &self,
        request: Request<pb::ListSessionsRequest>,
    ) -> Result<Response<pb::ListSessionsResponse>, Status> {
        let api = self.in_collection(&request).await?;
        let limit = request.into_inner().limit.filter(|&n| n != 0);
        self.guarded("ListSessions", async {
            let sessions = api.sessions(limit).await?;
            Ok::<_, AppError>(pb::ListSessionsResponse {
                sessions: sessions.iter().map(convert::session_summary).collect(),
            })
        })
        .await
    }

    async fn get_session(
        &self,
        request: Request<pb::SessionRequest>,
    ) -> Result<Response<pb::SessionResponse>, Status> {
        let api = self.in_collection(&request).await?;
        let raw = request.into_inner().session_id;
        self.guarded("GetSession", async {
            let session = api.session(&raw).await?;
            Ok::<_, AppError>(convert::session_response(&session))
        })
        .await
    }

    async fn delete_session(
        &self,
        request: Request<pb::SessionRequest>,
    ) -> Result<Response<pb::DeleteSessionResponse>, Status> {
        let api = self.in_collection(&request).await?;
        let raw = request.into_inner().session_id;
        self.guarded("DeleteSession", async {
            api.delete_session(&raw).await?;
            Ok::<_, AppError>(pb::DeleteSessionResponse {
                session_id: raw.trim().to_lowercase(),
                deleted: true,
            })
        })
        .await
    }

    async fn evaluate(
        &self,
        request: Request<pb::EvaluateRequest>,
    ) -> Result<Response<pb::EvaluateResponse>, Status> {
        let params = convert::evaluate_params(request.into_inner());
        self.guarded("Evaluate", async {
            let report = self.api.evaluate(&params).await?;
            Ok::<_, AppError>(convert::evaluate_response(&report))
        })
        .await
    }

    async fn stats(
        &self,
        request: Request<pb::StatsRequest>,
    ) -> Result<Response<pb::StatsResponse>, Status> {
        let api = self.in_collection(&request).await?;
        self.guarded("Stats", async {
            Ok::<_, AppError>(collections::stats_response(api.stats().await?))
        })
        .await
    }

    async fn list_collections(
        &self,
        request: Request<pb::ListCollectionsRequest>,
    ) -> Result<Response<pb::ListCollectionsResponse>, Status> {
        self.list_collections_rpc(request).await
    }

    async fn create_collection(
        &self,
        request: Request<pb::CreateCollectionRequest>,
    ) -> Result<Response<pb::Collection>, Status> {
        self.create_collection_rpc(request).await
    }

    async fn describe_collection(
        &self,
        request: Request<pb::CollectionRequest>,
    ) -> Result<Response<pb::Collection>, Status> {
        self.describe_collection_rpc(request).await
    }

    async fn delete_collection(
        &self,
        request: Request<pb::CollectionRequest>,
    ) -> Result<Response<pb::DeleteCollectionResponse>, Status> {
        self.delete_collection_rpc(request).await
    }
}

/// The caller the authentication interceptor put on `request`; a request that did not pass
/// through it is refused.
fn caller_of<T>(request: &Request<T>) -> Result<Caller, Status> {
    request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| status(AppError::unauthenticated()))
}

/// The routes of a server: `crag.v1.Crag` and reflection behind the bearer-token check,
/// health open and answered from the application's readiness ([`ReadinessHealth`]).
pub async fn routes(service: CragService) -> anyhow::Result<tonic::service::Routes> {
    let max = service.max_body_bytes;
    let api = service.api.clone();
    let health = ReadinessHealth::server(api.clone());
    let auth = move |request: Request<()>| {
        let header = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        let caller = api.authorize(header).map_err(status)?;
        let mut request = request;
        request.extensions_mut().insert(caller);
        Ok(request)
    };
    let crag = CragServer::new(service)
        .max_decoding_message_size(max)
        .max_encoding_message_size(usize::MAX);
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let routes = tonic::service::Routes::new(health)
        .add_service(tonic::service::interceptor::InterceptedService::new(
            crag,
            auth.clone(),
        ))
        .add_service(tonic::service::interceptor::InterceptedService::new(
            reflection, auth,
        ));
    Ok(routes)
}

/// Serves `routes` on `listener` until `shutdown` resolves; in-flight calls then get at most
/// `grace` to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    routes: tonic::service::Routes,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    limits: ConnectionLimits,
) -> anyhow::Result<()> {
    let preface_timeout = limits.preface_timeout;
    let incoming = tokio_stream::StreamExt::map(
        tokio_stream::wrappers::TcpListenerStream::new(listener),
        move |accepted| accepted.map(|tcp| PrefaceDeadline::new(tcp, preface_timeout)),
    );
    let mut server = tonic::transport::Server::builder();
    if let Some(identity) = &limits.tls {
        // tonic builds its rustls configuration with the process's default provider.
        crag_app::tls::install_crypto_provider();
        // tonic runs each handshake in its own task, bounded by the timeout.
        let tls = tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(
                identity.cert_pem(),
                identity.key_pem(),
            ))
            .timeout(limits.preface_timeout);
        server = server
            .tls_config(tls)
            .map_err(|e| anyhow::anyhow!("gRPC TLS: {e}"))?;
    }
    let router = server
        // Graceful only (no forced close after a grace period), so calls in flight finish;
        // each is bounded by the request deadline.
        .max_connection_age(limits.max_age)
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        .add_routes(routes);
    Ok(crag_app::serve_gracefully(
        |signal| router.serve_with_incoming_shutdown(incoming, signal),
        shutdown,
        grace,
        "gRPC",
    )
    .await?)
}

/// Binds `addr` and serves `service` until `shutdown` resolves; health turns NOT_SERVING
/// first (the service is marked not ready).
pub async fn run(
    service: CragService,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    let listener = crag_app::bind(addr, "server.grpc_addr", "gRPC").await?;
    let limits = service.connection_limits();
    let api = service.api.clone();
    let routes = routes(service).await?;
    let shutdown = async move {
        shutdown.await;
        api.set_ready(false);
        tracing::info!("shutting down gRPC: draining in-flight calls");
    };
    serve(listener, routes, shutdown, grace, limits).await
}
