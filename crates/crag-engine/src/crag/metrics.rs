use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus::{
    Encoder, Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec,
    Opts, Registry, TextEncoder,
};

use crag_ports::MemoryCopy;

use crate::error::{EngineError, Result};

/// Prometheus metrics of Corrective RAG and of CGRAG (`cgrag_*`), in a registry the apps
/// expose. Their names and labels are documented (docs/crag.md, docs/cgrag.md) for dashboards
/// to select on: keep them stable.
#[derive(Clone)]
pub struct CragMetrics {
    registry: Registry,
    decisions: IntCounterVec,
    corrections: IntCounterVec,
    latency: HistogramVec,
    relevance: Gauge,
    web_failures: IntCounterVec,
    evaluator_failures: IntCounterVec,
    rerank_cache: IntCounterVec,
    evaluation_cache: IntCounterVec,
    cgrag: CgragMetrics,
    vector_copy: VectorCopyMetrics,
}

/// One collection's reading of its vector index's in-memory copy, for
/// [`CragMetrics::set_vector_copies`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyReading {
    /// The copy's state (`None`: the index keeps no copy).
    Read(Option<MemoryCopy>),
    /// The reading failed: the collection's gauges keep their last values.
    Failed,
}

/// Each collection's vector index's in-memory copy, as its last reading found it
/// (`crag_vector_copy_*`, labelled by `collection`).
#[derive(Clone)]
struct VectorCopyMetrics {
    rows: IntGaugeVec,
    partitions: IntGaugeVec,
    loading: IntGaugeVec,
    loads: IntGaugeVec,
    /// The collections the gauges hold a reading of.
    shown: Arc<Mutex<BTreeSet<String>>>,
}

impl VectorCopyMetrics {
    fn register(registry: &Registry) -> Result<Self> {
        let gauge = |name: &str, help: &str| -> Result<IntGaugeVec> {
            let gauge =
                IntGaugeVec::new(Opts::new(name, help), &["collection"]).map_err(metric_error)?;
            registry
                .register(Box::new(gauge.clone()))
                .map_err(metric_error)?;
            Ok(gauge)
        };
        Ok(Self {
            rows: gauge(
                "crag_vector_copy_rows",
                "Rows of the in-memory vector copy of the current table version (0: none \
                 loaded, searches read LanceDB)",
            )?,
            partitions: gauge(
                "crag_vector_copy_partitions",
                "Partitions of the in-memory vector copy (0: scanned whole, or none)",
            )?,
            loading: gauge(
                "crag_vector_copy_loading",
                "1 while an in-memory vector copy is loading",
            )?,
            loads: gauge(
                "crag_vector_copy_loads",
                "In-memory vector copies loaded since the index was opened",
            )?,
            shown: Arc::default(),
        })
    }

    fn all(&self) -> [&IntGaugeVec; 4] {
        [&self.rows, &self.partitions, &self.loading, &self.loads]
    }
}

/// The CGRAG loop's metrics: passes per ask, gaps by outcome, asks by stop reason, neighbour
/// chunks added.
#[derive(Clone)]
struct CgragMetrics {
    passes: Histogram,
    gaps: IntCounterVec,
    asks: IntCounterVec,
    neighbours: IntCounter,
}

impl CgragMetrics {
    fn register(registry: &Registry) -> Result<Self> {
        let passes = Histogram::with_opts(
            HistogramOpts::new("cgrag_passes", "Passes per CGRAG ask")
                .buckets((1..=10).map(f64::from).collect()),
        )
        .map_err(metric_error)?;
        let gaps = IntCounterVec::new(
            Opts::new(
                "cgrag_gaps_total",
                "CGRAG gaps by outcome (identified, resolved, unresolved)",
            ),
            &["outcome"],
        )
        .map_err(metric_error)?;
        let asks = IntCounterVec::new(
            Opts::new("cgrag_asks_total", "CGRAG asks by why the loop stopped"),
            &["stop"],
        )
        .map_err(metric_error)?;
        let neighbours = IntCounter::new(
            "cgrag_neighbour_chunks_total",
            "Chunks of the gaps' one-hop neighbourhoods added to CGRAG contexts",
        )
        .map_err(metric_error)?;
        for c in [
            Box::new(passes.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(gaps.clone()),
            Box::new(asks.clone()),
            Box::new(neighbours.clone()),
        ] {
            registry.register(c).map_err(metric_error)?;
        }
        Ok(Self {
            passes,
            gaps,
            asks,
            neighbours,
        })
    }
}

impl fmt::Debug for CragMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CragMetrics").finish_non_exhaustive()
    }
}

impl CragMetrics {
    /// Registers the metrics in a fresh registry.
    pub fn new() -> Result<Self> {
        Self::register(Registry::new())
    }

    /// Registers the metrics in `registry` (fails if they are already registered there).
    pub fn register(registry: Registry) -> Result<Self> {
        let decisions = IntCounterVec::new(
            Opts::new("crag_decisions_total", "Total CRAG decisions by category"),
            &["category"],
        )
        .map_err(metric_error)?;
        let corrections = IntCounterVec::new(
            Opts::new("crag_corrections_total", "Total corrections by strategy"),
            &["strategy"],
        )
        .map_err(metric_error)?;
        let latency = HistogramVec::new(
            HistogramOpts::new("crag_retrieval_latency_seconds", "CRAG retrieval latency").buckets(
                vec![
                    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                ],
            ),
            &["decision", "correction_strategy"],
        )
        .map_err(metric_error)?;
        let relevance = Gauge::new("crag_relevance_score", "Last CRAG relevance score")
            .map_err(metric_error)?;
        let web_failures = IntCounterVec::new(
            Opts::new(
                "crag_web_search_failures_total",
                "Web searches that failed, by provider",
            ),
            &["provider"],
        )
        .map_err(metric_error)?;
        let evaluator_failures = IntCounterVec::new(
            Opts::new(
                "crag_evaluator_failures_total",
                "Evaluations that failed, by evaluator",
            ),
            &["evaluator"],
        )
        .map_err(metric_error)?;
        let rerank_cache = IntCounterVec::new(
            Opts::new(
                "crag_rerank_cache_total",
                "Rerank score cache lookups, by result (hit or miss)",
            ),
            &["result"],
        )
        .map_err(metric_error)?;
        let evaluation_cache = IntCounterVec::new(
            Opts::new(
                "crag_evaluation_cache_total",
                "Evaluation cache lookups, by result (hit or miss)",
            ),
            &["result"],
        )
        .map_err(metric_error)?;
        for c in [
            Box::new(decisions.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(corrections.clone()),
            Box::new(latency.clone()),
            Box::new(relevance.clone()),
            Box::new(web_failures.clone()),
            Box::new(evaluator_failures.clone()),
            Box::new(rerank_cache.clone()),
            Box::new(evaluation_cache.clone()),
        ] {
            registry.register(c).map_err(metric_error)?;
        }
        let cgrag = CgragMetrics::register(&registry)?;
        let vector_copy = VectorCopyMetrics::register(&registry)?;
        Ok(Self {
            cgrag,
            vector_copy,
            registry,
            decisions,
            corrections,
            latency,
            relevance,
            web_failures,
            evaluator_failures,
            rerank_cache,
            evaluation_cache,
        })
    }

    /// The registry holding the metrics, for apps to expose or extend.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Renders every metric of the registry in the Prometheus text format.
    pub fn render(&self) -> Result<String> {
        let mut buf = Vec::new();
        TextEncoder::new()
            .encode(&self.registry.gather(), &mut buf)
            .map_err(metric_error)?;
        String::from_utf8(buf).map_err(metric_error)
    }

    pub(crate) fn record(
        &self,
        decision: &str,
        strategy: &str,
        corrections: &[&str],
        score: Option<f32>,
        latency: Duration,
    ) {
        self.decisions.with_label_values(&[decision]).inc();
        for c in corrections {
            self.corrections.with_label_values(&[c]).inc();
        }
        self.latency
            .with_label_values(&[decision, strategy])
            .observe(latency.as_secs_f64());
        if let Some(s) = score {
            self.relevance.set(f64::from(s));
        }
    }

    pub(crate) fn web_failure(&self, provider: &str) {
        self.web_failures.with_label_values(&[provider]).inc();
    }

    pub(crate) fn rerank_cache(&self, hit: bool) {
        self.rerank_cache
            .with_label_values(&[if hit { "hit" } else { "miss" }])
            .inc();
    }

    pub(crate) fn evaluation_cache(&self, hit: bool) {
        self.evaluation_cache
            .with_label_values(&[if hit { "hit" } else { "miss" }])
            .inc();
    }

    /// Evaluations served from the evaluation cache and evaluations run, since the start
    /// (`crag_evaluation_cache_total`'s `hit` and `miss`).
    pub fn evaluation_cache_counts(&self) -> (u64, u64) {
        let count = |result: &str| self.evaluation_cache.with_label_values(&[result]).get();
        (count("hit"), count("miss"))
    }

    /// Records a CGRAG ask that ended with `outcome`.
    pub(crate) fn record_ask(&self, outcome: &crate::cgrag::AskOutcome) {
        let m = &self.cgrag;
        m.passes.observe(outcome.passes_used() as f64);
        for (label, n) in [
            ("identified", outcome.gaps_identified),
            ("resolved", outcome.gaps_resolved),
            ("unresolved", outcome.gaps_unresolved),
        ] {
            m.gaps.with_label_values(&[label]).inc_by(n as u64);
        }
        m.asks.with_label_values(&[outcome.stop.as_str()]).inc();
        let neighbours: usize = outcome.passes.iter().map(|p| p.neighbour_chunks()).sum();
        m.neighbours.inc_by(neighbours as u64);
    }

    /// Sets the `crag_vector_copy_*` gauges from each collection's reading of its vector
    /// index's in-memory copy (all 0 for an index that keeps none), labelled by collection;
    /// the gauges of collections not in `readings` (closed or deleted since) are removed.
    pub fn set_vector_copies(&self, readings: &[(String, CopyReading)]) {
        let m = &self.vector_copy;
        let mut shown = m.shown.lock().unwrap_or_else(|e| e.into_inner());
        let now: BTreeSet<String> = readings.iter().map(|(name, _)| name.clone()).collect();
        for gone in shown.difference(&now) {
            for gauge in m.all() {
                // Absent already is as good as removed.
                let _ = gauge.remove_label_values(&[gone]);
            }
        }
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        for (name, reading) in readings {
            let CopyReading::Read(copy) = reading else {
                continue;
            };
            let copy = copy.unwrap_or_default();
            let label = [name.as_str()];
            m.rows
                .with_label_values(&label)
                .set(count(copy.rows.unwrap_or(0)));
            m.partitions
                .with_label_values(&label)
                .set(count(copy.partitions.unwrap_or(0)));
            m.loading
                .with_label_values(&label)
                .set(i64::from(copy.loading));
            m.loads.with_label_values(&label).set(count(copy.loads));
        }
        *shown = now;
    }

    pub(crate) fn evaluator_failure(&self, evaluator: &str) {
        self.evaluator_failures
            .with_label_values(&[evaluator])
            .inc();
    }
}

fn metric_error(e: impl fmt::Display) -> EngineError {
    EngineError::Internal(format!("metrics: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_seed_names() {
        let m = CragMetrics::new().unwrap();
        m.record(
            "ambiguous",
            "expand",
            &["discard", "expand"],
            Some(0.6),
            Duration::from_millis(120),
        );
        let text = m.render().unwrap();
        assert!(text.contains("crag_decisions_total{category=\"ambiguous\"} 1"));
        assert!(text.contains("crag_corrections_total{strategy=\"expand\"} 1"));
        assert!(text.contains("crag_retrieval_latency_seconds_bucket{correction_strategy=\"expand\",decision=\"ambiguous\",le=\"0.25\"} 1"));
        assert!(text.contains("crag_relevance_score 0.6"));
    }

    #[test]
    fn the_vector_copy_gauges_show_each_collection_s_last_reading() {
        let m = CragMetrics::new().unwrap();
        let big = MemoryCopy {
            rows: Some(1_000_000),
            partitions: Some(1_000),
            loading: true,
            loads: 3,
        };
        m.set_vector_copies(&[
            ("default".into(), CopyReading::Read(None)),
            ("papers".into(), CopyReading::Read(Some(big))),
        ]);
        let text = m.render().unwrap();
        for line in [
            "crag_vector_copy_rows{collection=\"papers\"} 1000000",
            "crag_vector_copy_partitions{collection=\"papers\"} 1000",
            "crag_vector_copy_loading{collection=\"papers\"} 1",
            "crag_vector_copy_loads{collection=\"papers\"} 3",
            "crag_vector_copy_rows{collection=\"default\"} 0",
            "crag_vector_copy_loading{collection=\"default\"} 0",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        // A failed reading keeps the last values.
        m.set_vector_copies(&[
            ("default".into(), CopyReading::Read(None)),
            ("papers".into(), CopyReading::Failed),
        ]);
        let text = m.render().unwrap();
        assert!(
            text.contains("crag_vector_copy_rows{collection=\"papers\"} 1000000"),
            "{text}"
        );
        // The next reading no longer has `papers` (closed or deleted): its gauges go.
        let small = MemoryCopy {
            rows: Some(10),
            ..MemoryCopy::default()
        };
        m.set_vector_copies(&[("default".into(), CopyReading::Read(Some(small)))]);
        let text = m.render().unwrap();
        assert!(!text.contains("papers"), "{text}");
        assert!(
            text.contains("crag_vector_copy_rows{collection=\"default\"} 10"),
            "{text}"
        );
    }

    #[test]
    fn registering_twice_in_one_registry_fails() {
        let r = Registry::new();
        CragMetrics::register(r.clone()).unwrap();
        assert!(CragMetrics::register(r).is_err());
    }
}
