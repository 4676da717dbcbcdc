//! gRPC request metrics, registered next to the engine's Corrective RAG metrics (so `crag serve`
//! exposes them on the HTTP API's `/metrics`).

use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};
use tonic::Code;

/// Call counts by method and status code, latencies by method, refusals by reason.
#[derive(Debug, Clone)]
pub struct GrpcMetrics {
    calls: IntCounterVec,
    latency: HistogramVec,
    rejected: IntCounterVec,
}

impl GrpcMetrics {
    /// Registers the gRPC metrics in `registry`; fails when they are already registered there.
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        let calls = IntCounterVec::new(
            Opts::new(
                "crag_grpc_requests_total",
                "gRPC calls of crag.v1.Crag by method and status code",
            ),
            &["method", "code"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "crag_grpc_request_duration_seconds",
                "gRPC call latency by method",
            )
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["method"],
        )?;
        let rejected = IntCounterVec::new(
            Opts::new(
                "crag_grpc_rejected_total",
                "gRPC calls refused by the concurrency limit or cut by the deadline",
            ),
            &["reason"],
        )?;
        registry.register(Box::new(calls.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(rejected.clone()))?;
        Ok(Self {
            calls,
            latency,
            rejected,
        })
    }

    pub(crate) fn observe(&self, method: &str, code: Code, elapsed: Duration) {
        self.calls
            .with_label_values(&[method, code_name(code)])
            .inc();
        self.latency
            .with_label_values(&[method])
            .observe(elapsed.as_secs_f64());
    }

    pub(crate) fn rejected(&self, reason: &str) {
        self.rejected.with_label_values(&[reason]).inc();
    }
}

/// The canonical upper-snake name of a status code (`OK`, `INVALID_ARGUMENT`, ...).
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}
