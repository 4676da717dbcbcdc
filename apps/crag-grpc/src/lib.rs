//! crag's gRPC API: a thin tonic service over the engine (`proto/crag/v1/crag.proto`), with
//! the standard health service and server reflection.
//!
//! Every call but health checks needs the bearer token (`authorization: Bearer <token>`
//! metadata) when `[auth]` configures one; calls past `server.max_concurrent_requests` get
//! RESOURCE_EXHAUSTED instead of queueing; each call has the `server.request_timeout_ms`
//! deadline. Protobuf messages convert to domain types in [`convert`], errors to status codes
//! in one place ([`status`]).

pub mod codec;
mod convert;
mod metrics;

pub use metrics::GrpcMetrics;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crag_config::{Config, LimitsSection, TokenSet};
use crag_engine::{Engine, EngineError, NoProgress, Scope};
use crag_ports::ErrorKind;
use tokio::sync::Semaphore;
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

/// The one mapping from engine errors to gRPC status codes. Internal errors are logged with
/// their detail and answered without it.
pub fn status(e: EngineError) -> Status {
    match e.kind() {
        ErrorKind::InvalidInput => Status::invalid_argument(e.to_string()),
        ErrorKind::NotFound => Status::not_found(e.to_string()),
        ErrorKind::Timeout => Status::deadline_exceeded(e.to_string()),
        ErrorKind::Unavailable => {
            tracing::warn!(error = %e, "unavailable");
            Status::unavailable(format!("a dependency failed: {e}"))
        }
        ErrorKind::Internal => {
            tracing::error!(error = format!("{e:#}"), "internal error");
            Status::internal("internal error; see the server log")
        }
    }
}

fn invalid(e: crag_config::Invalid) -> Status {
    Status::invalid_argument(e.0)
}

/// The `crag.v1.Crag` service.
#[derive(Clone)]
pub struct CragService {
    engine: Engine,
    limits: LimitsSection,
    in_flight: Arc<Semaphore>,
    timeout: Duration,
    metrics: GrpcMetrics,
}

impl CragService {
    /// The service over `engine` with the configuration's limits and server settings; its
    /// metrics (`crag_grpc_*`) join the engine's registry, so one engine serves one gRPC service.
    pub fn new(engine: Engine, config: &Config) -> anyhow::Result<Self> {
        let metrics = GrpcMetrics::register(engine.metrics().registry())
            .map_err(|e| anyhow::anyhow!("cannot register the gRPC metrics: {e}"))?;
        Ok(Self {
            engine,
            limits: config.limits,
            in_flight: Arc::new(Semaphore::new(config.server.max_concurrent_requests)),
            timeout: Duration::from_millis(config.server.request_timeout_ms),
            metrics,
        })
    }

    /// Runs `work` under the concurrency limit (refuse, never queue) and the deadline, and
    /// counts the call of `method` with its outcome.
    async fn guarded<T>(
        &self,
        method: &str,
        work: impl Future<Output = Result<T, Status>>,
    ) -> Result<Response<T>, Status> {
        let started = std::time::Instant::now();
        let result = match Arc::clone(&self.in_flight).try_acquire_owned() {
            Err(_) => {
                self.metrics.rejected("concurrency");
                Err(Status::resource_exhausted(
                    "too many requests in flight; retry later",
                ))
            }
            Ok(_permit) => match tokio::time::timeout(self.timeout, work).await {
                Ok(result) => result.map(Response::new),
                Err(_) => {
                    self.metrics.rejected("timeout");
                    Err(Status::deadline_exceeded(
                        "the request took longer than the server's timeout",
                    ))
                }
            },
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
        let message = request.into_inner();
        self.guarded("Query", async {
            let params = convert::query_params(message);
            let request = self.limits.query_request(&params).map_err(invalid)?;
            let outcome = self.engine.query(&request).await.map_err(status)?;
            Ok(convert::query_response(
                params.session_id.unwrap_or_default(),
                &outcome,
            ))
        })
        .await
    }

    async fn ingest(
        &self,
        request: Request<Streaming<pb::Document>>,
    ) -> Result<Response<pb::IngestResponse>, Status> {
        let mut stream = request.into_inner();
        self.guarded("Ingest", async {
            let mut received = Vec::new();
            while let Some(document) = stream.message().await? {
                if received.len() == self.limits.max_ingest_batch {
                    return Err(Status::invalid_argument(format!(
                        "more than {} documents in one stream (limits.max_ingest_batch)",
                        self.limits.max_ingest_batch
                    )));
                }
                received.push(document);
            }
            self.limits.ingest_batch(received.len()).map_err(invalid)?;
            let total = received.len();
            let mut documents = Vec::with_capacity(total);
            let mut errors = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for (index, d) in received.into_iter().enumerate() {
                let id = d.id.clone();
                let error = |message: String| pb::DocumentError {
                    index: index as u32,
                    id: id.clone(),
                    message,
                };
                match self.limits.document(&convert::document(d)) {
                    Ok(doc) if !seen.insert(doc.id.clone()) => {
                        errors.push(error("duplicate id in this stream".into()))
                    }
                    Ok(doc) => documents.push(doc),
                    Err(e) => errors.push(error(e.0)),
                }
            }
            let report = if documents.is_empty() {
                None
            } else {
                Some(
                    self.engine
                        .ingest(documents, Vec::new(), &Scope::None, &NoProgress)
                        .await
                        .map_err(status)?,
                )
            };
            Ok(convert::ingest_response(total, report.as_ref(), errors))
        })
        .await
    }

    async fn delete_document(
        &self,
        request: Request<pb::DeleteDocumentRequest>,
    ) -> Result<Response<pb::DeleteDocumentResponse>, Status> {
        let raw = request.into_inner().id;
        self.guarded("DeleteDocument", async {
            let id = self.limits.document_id(&raw).map_err(invalid)?;
            if !self.engine.delete_document(&id).await.map_err(status)? {
                return Err(Status::not_found(format!(
                    "no document with id `{}`",
                    raw.escape_debug()
                )));
            }
            Ok(pb::DeleteDocumentResponse {
                id: raw.clone(),
                deleted: true,
            })
        })
        .await
    }

    async fn stats(
        &self,
        _: Request<pb::StatsRequest>,
    ) -> Result<Response<pb::StatsResponse>, Status> {
        self.guarded("Stats", async {
            let s = self.engine.stats().await.map_err(status)?;
            Ok(pb::StatsResponse {
                documents: s.documents as u64,
                keyword_chunks: s.keyword_chunks as u64,
                vector_chunks: s.vector_chunks as u64,
                embedding_model: s.embedding_model,
                dimension: s.dimension as u32,
            })
        })
        .await
    }
}

/// Health reporter of a running server: flip to NOT_SERVING while draining.
pub type HealthReporter = tonic_health::server::HealthReporter;

/// The routes of a server: `crag.v1.Crag` and reflection behind the bearer-token check,
/// health open; plus its health reporter (already SERVING).
pub async fn routes(
    service: CragService,
    tokens: TokenSet,
) -> anyhow::Result<(tonic::service::Routes, HealthReporter)> {
    let max = service.limits.max_body_bytes;
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter.set_serving::<CragServer<CragService>>().await;
    let auth = move |request: Request<()>| {
        let header = request
            .metadata()
            .get("authorization")
            .map(|v| v.as_bytes());
        if tokens.check_header(header) {
            Ok(request)
        } else {
            Err(Status::unauthenticated("missing or invalid bearer token"))
        }
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
    Ok((routes, reporter))
}

/// Serves `routes` on `listener` until `shutdown` resolves; in-flight calls then get at most
/// `grace` to finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    routes: tonic::service::Routes,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    crag_config::serve_gracefully(
        |signal| {
            tonic::transport::Server::builder()
                .add_routes(routes)
                .serve_with_incoming_shutdown(incoming, signal)
        },
        shutdown,
        grace,
        "gRPC",
    )
    .await
}

/// Binds `addr` and serves `service` until `shutdown` resolves; health turns NOT_SERVING
/// first.
pub async fn run(
    service: CragService,
    tokens: TokenSet,
    addr: SocketAddr,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> anyhow::Result<()> {
    let listener = crag_config::bind(addr, "server.grpc_addr", "gRPC").await?;
    let (routes, reporter) = routes(service, tokens).await?;
    let shutdown = async move {
        shutdown.await;
        reporter.set_not_serving::<CragServer<CragService>>().await;
        tracing::info!("shutting down gRPC: draining in-flight calls");
    };
    serve(listener, routes, shutdown, grace).await
}
