//! The use cases both APIs serve, with what surrounds each call: authentication, load
//! shedding (refuse, never queue), the per-request deadline and readiness. The HTTP and gRPC
//! apps only decode their wire types into [`QueryParams`] / [`DocumentParams`], call these, and
//! encode the answer.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::Config;
use crag_engine::{
    CopyReading, Engine, EngineStats, IngestReport, NoProgress, QueryOutcome, QueryRequest, Scope,
};
use tokio::sync::Semaphore;

mod ask;
mod collections;
mod evaluate;
mod lookup;

pub use ask::{session_id, AskEvent, AskParams, MAX_SESSIONS_LISTED};
pub use evaluate::{EvaluateDocumentParams, EvaluateParams};
pub use lookup::{SymbolHit, SymbolReport, MAX_SYMBOL_DEFINITIONS, MAX_SYMBOL_NEIGHBOURS};

use crate::auth::{Caller, TokenSet};
use crate::collections::Collections;
use crate::error::{AppError, Code};
use crate::requests::{DocumentParams, Limits, QueryParams};

/// How long [`Api::readiness`] waits for the indexes to answer.
pub const READY_PROBE: Duration = Duration::from_secs(2);

/// Why a request was refused before it ran, for the apps' rejection metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// `server.max_concurrent_requests` were already running.
    Concurrency,
    /// It ran past `server.request_timeout_ms`.
    Timeout,
}

impl Shed {
    /// The metrics label.
    pub fn reason(self) -> &'static str {
        match self {
            Self::Concurrency => "concurrency",
            Self::Timeout => "timeout",
        }
    }
}

impl From<Shed> for AppError {
    fn from(shed: Shed) -> Self {
        match shed {
            Shed::Concurrency => Self::resource_exhausted(),
            Shed::Timeout => Self::deadline_exceeded(),
        }
    }
}

/// A document of an ingest request that was not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentError {
    /// Position in the request.
    pub index: usize,
    /// The id as sent.
    pub id: String,
    /// Why.
    pub message: String,
}

/// The answer to an ingest request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IngestOutcome {
    /// Documents received.
    pub received: usize,
    /// The engine's report on the accepted documents (none when every document was refused).
    pub report: Option<IngestReport>,
    /// Documents refused, with the reason (the others were ingested).
    pub errors: Vec<DocumentError>,
}

/// The engine with what the APIs put around it, bound to one collection (the default one
/// unless [`Api::in_collection`] chose another).
#[derive(Clone)]
pub struct Api {
    inner: Arc<Inner>,
    engine: Engine,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("collections", &self.inner.collections)
            .finish_non_exhaustive()
    }
}

struct Inner {
    collections: Collections,
    limits: Limits,
    /// Replaced whole when the configuration is reloaded ([`Api::set_tokens`]).
    tokens: std::sync::RwLock<TokenSet>,
    in_flight: Arc<Semaphore>,
    timeout: Duration,
    ready: AtomicBool,
}

impl Api {
    /// The use cases over `engine` with the configuration's limits and server settings.
    pub fn new(engine: Engine, config: &Config, tokens: TokenSet) -> Self {
        Self {
            engine: engine.clone(),
            inner: Arc::new(Inner {
                collections: Collections::new(engine, config),
                limits: config.limits.into(),
                tokens: std::sync::RwLock::new(tokens),
                in_flight: Arc::new(Semaphore::new(config.server.max_concurrent_requests)),
                timeout: Duration::from_millis(config.server.request_timeout_ms),
                ready: AtomicBool::new(true),
            }),
        }
    }

    /// The engine of the collection this handle is bound to.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The request bounds.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Checks an `Authorization` header value (`Bearer <token>`): the caller it makes (the
    /// default caller when no token is configured).
    pub fn authorize(&self, header: Option<&[u8]>) -> Result<Caller, AppError> {
        self.inner
            .tokens
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .caller(header)
            .ok_or_else(AppError::unauthenticated)
    }

    /// Replaces the accepted tokens and what each may do (a reloaded configuration); requests
    /// already authorised keep their caller.
    pub fn set_tokens(&self, tokens: TokenSet) {
        *self
            .inner
            .tokens
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tokens;
    }

    /// Refuses a write (ingest, delete) by a caller whose token may not write.
    pub fn may_write(caller: &Caller) -> Result<(), AppError> {
        if caller.read_only {
            Err(AppError::permission_denied(
                "this token may not ingest or delete documents ([[auth.scoped]] write = false)",
            ))
        } else {
            Ok(())
        }
    }

    /// Whether the service takes requests (false while draining).
    pub fn is_ready(&self) -> bool {
        self.inner.ready.load(Ordering::SeqCst)
    }

    /// Whether the service can take requests now: not while draining, nor while the default
    /// collection's indexes cannot be read within [`READY_PROBE`] (an object store or a disk
    /// gone), with the reason.
    pub async fn readiness(&self) -> Result<(), AppError> {
        if !self.is_ready() {
            return Err(AppError::new(Code::Unavailable, "shutting down"));
        }
        let engine = self.inner.collections.default_engine();
        match tokio::time::timeout(READY_PROBE, engine.probe()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(AppError::new(
                Code::Unavailable,
                format!("the indexes cannot be read: {e}"),
            )),
            Err(_) => Err(AppError::new(
                Code::Unavailable,
                format!(
                    "the indexes did not answer within {} s",
                    READY_PROBE.as_secs()
                ),
            )),
        }
    }

    /// Marks the service (not) ready, e.g. while draining.
    pub fn set_ready(&self, ready: bool) {
        self.inner.ready.store(ready, Ordering::SeqCst);
    }

    /// Runs `work` under the concurrency limit (refused at once when full, never queued) and
    /// the request deadline.
    pub async fn guarded<F: Future>(&self, work: F) -> Result<F::Output, Shed> {
        let Ok(_permit) = Arc::clone(&self.inner.in_flight).try_acquire_owned() else {
            return Err(Shed::Concurrency);
        };
        tokio::time::timeout(self.inner.timeout, work)
            .await
            .map_err(|_| Shed::Timeout)
    }

    /// Validates and runs a query; the validated request comes back with the outcome.
    pub async fn query(
        &self,
        params: &QueryParams,
    ) -> Result<(QueryRequest, QueryOutcome), AppError> {
        let request = self.inner.limits.query_request(params)?;
        let outcome = self.engine.query(&request).await?;
        Ok((request, outcome))
    }

    /// Validates each document and ingests the valid ones; invalid or repeated ones are
    /// reported by position, the others still ingested.
    pub async fn ingest(&self, documents: Vec<DocumentParams>) -> Result<IngestOutcome, AppError> {
        let limits = &self.inner.limits;
        limits.ingest_batch(documents.len())?;
        let received = documents.len();
        let mut accepted = Vec::with_capacity(received);
        let mut errors = Vec::new();
        let mut seen = HashSet::new();
        for (index, params) in documents.into_iter().enumerate() {
            let refuse = |message: String| DocumentError {
                index,
                id: params.id.clone(),
                message,
            };
            match limits.document(&params) {
                Ok(doc) if !seen.insert(doc.id.clone()) => {
                    errors.push(refuse("duplicate id in this request".into()))
                }
                Ok(doc) => accepted.push(doc),
                Err(e) => errors.push(refuse(e.0)),
            }
        }
        let report = if accepted.is_empty() {
            None
        } else {
            Some(
                self.engine
                    .ingest(accepted, Vec::new(), &Scope::None, &NoProgress)
                    .await?,
            )
        };
        Ok(IngestOutcome {
            received,
            report,
            errors,
        })
    }

    /// Deletes a document by the id the caller sent; not found is an error.
    pub async fn delete(&self, raw: &str) -> Result<(), AppError> {
        let id = self.inner.limits.document_id(raw)?;
        if self.engine.delete_document(&id).await? {
            Ok(())
        } else {
            Err(AppError::new(
                Code::NotFound,
                format!("no document with id `{}`", raw.escape_debug()),
            ))
        }
    }

    /// Index statistics.
    pub async fn stats(&self) -> Result<EngineStats, AppError> {
        Ok(self.engine.stats().await?)
    }

    /// The engine's metrics in the Prometheus text format (the default collection's
    /// registry, which the other collections' engines share).
    pub async fn metrics_text(&self) -> Result<String, AppError> {
        let collections = &self.inner.collections;
        // Each open collection's vector copy as of now (a collection not open has none in
        // memory); a failed reading keeps the last values, with a warning.
        let mut readings = Vec::new();
        for (name, engine) in collections.open_engines().await {
            let reading = match engine.vector_copy().await {
                Ok(copy) => CopyReading::Read(copy),
                Err(error) => {
                    tracing::warn!(collection = %name, %error, "reading the vector copy failed");
                    CopyReading::Failed
                }
            };
            readings.push((name, reading));
        }
        let engine = collections.default_engine();
        engine.metrics().set_vector_copies(&readings);
        engine
            .metrics()
            .render()
            .map_err(|e| AppError::internal(format!("metrics rendering failed: {e}")))
    }
}

#[cfg(test)]
mod tests;
