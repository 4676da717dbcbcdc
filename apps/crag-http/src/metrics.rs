//! HTTP request metrics, registered next to the engine's Corrective RAG metrics.

use std::time::Duration;

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

/// Request counts and latencies by route, method and status.
#[derive(Debug, Clone)]
pub struct HttpMetrics {
    requests: IntCounterVec,
    latency: HistogramVec,
    rejected: IntCounterVec,
}

impl HttpMetrics {
    /// Registers the HTTP metrics in `registry`.
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        let requests = IntCounterVec::new(
            Opts::new(
                "crag_http_requests_total",
                "HTTP requests by route, method and status",
            ),
            &["route", "method", "status"],
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "crag_http_request_duration_seconds",
                "HTTP request latency by route",
            )
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["route"],
        )?;
        let rejected = IntCounterVec::new(
            Opts::new(
                "crag_http_rejected_total",
                "HTTP requests refused by the concurrency limit or cut by the timeout",
            ),
            &["reason"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(rejected.clone()))?;
        Ok(Self {
            requests,
            latency,
            rejected,
        })
    }

    pub(crate) fn observe(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        self.requests
            .with_label_values(&[route, method, &status.to_string()])
            .inc();
        self.latency
            .with_label_values(&[route])
            .observe(elapsed.as_secs_f64());
    }

    pub(crate) fn rejected(&self, reason: &str) {
        self.rejected.with_label_values(&[reason]).inc();
    }
}
