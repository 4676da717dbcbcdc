//! The report of an evaluation run (`crag eval`): its JSON shape and its printed form.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::seed::{describe, SeedMetrics};

/// The whole report of one run.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalReport {
    /// The collection directory.
    pub dataset: String,
    /// The qrels split.
    pub split: String,
    /// Judged queries run.
    pub queries: usize,
    /// Documents in the index.
    pub documents: usize,
    /// Chunks in the index.
    pub chunks: usize,
    /// What preparing the index wrote.
    pub ingest: IngestFigures,
    /// Bytes of the index on disk.
    pub index_bytes: u64,
    /// Peak resident memory of the process.
    pub peak_rss_bytes: Option<u64>,
    /// One entry per stage run.
    pub stages: Vec<StageReport>,
    /// How well the evaluator told answerable queries from unanswerable ones.
    pub evaluator: EvaluatorReport,
}

/// Ingestion figures of the index preparation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestFigures {
    /// Documents added or updated.
    pub documents_written: usize,
    /// Documents removed (ablation, vanished from the corpus).
    pub documents_deleted: usize,
    /// Chunks embedded and written.
    pub chunks_written: usize,
    /// Ingest throughput, when anything was written.
    pub chunks_per_second: Option<f64>,
    /// Wall time of the ingestion.
    pub elapsed_seconds: f64,
}

/// Quality and speed of one stage.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StageReport {
    /// The stage name.
    pub stage: &'static str,
    /// Mean nDCG@10.
    pub ndcg_at_10: f64,
    /// Mean Recall@10.
    pub recall_at_10: f64,
    /// Mean Recall@100.
    pub recall_at_100: f64,
    /// Mean MRR@10.
    pub mrr_at_10: f64,
    /// Per-query latency, one query at a time.
    pub latency_ms: Latency,
    /// Concurrent clients of the throughput run.
    pub clients: usize,
    /// Throughput with `clients` callers.
    pub queries_per_second: Option<f64>,
}

/// Latency percentiles in milliseconds.
#[derive(Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The relevance evaluator's report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluatorReport {
    /// The configured evaluator kind.
    pub evaluator: String,
    /// Share of queries made unanswerable.
    pub ablate: f64,
    /// Seed of the ablation.
    pub seed: u64,
    /// Queries made unanswerable.
    pub ablated_queries: usize,
    /// Documents removed to do so.
    pub ablated_documents: usize,
    /// Queries whose hybrid top 10 holds a relevant document.
    pub answerable: usize,
    /// The other judged queries.
    pub unanswerable: usize,
    /// Evaluator score against "the hybrid top 10 holds a relevant document".
    pub auroc: Option<f64>,
    /// The seed heuristic's score of the same documents against the same labels (when another
    /// evaluator is configured).
    pub heuristic_auroc: Option<f64>,
    /// The calibrated evaluator's, fitted without labels on pseudo-queries of the indexed
    /// corpus (`--self-calibrate N`), on the same documents and labels.
    pub self_calibrated_auroc: Option<f64>,
    /// verdict -> [answerable, unanswerable].
    pub verdicts: BTreeMap<String, [usize; 2]>,
    /// Corrected queries whose nDCG@10 rose.
    pub corrections_raised_ndcg: usize,
    /// Corrected queries whose nDCG@10 fell.
    pub corrections_lowered_ndcg: usize,
    /// Corrected queries whose nDCG@10 did not change.
    pub corrections_unchanged_ndcg: usize,
    /// The key metrics of the Corrective RAG stage (`None` when it did not run).
    pub seed_metrics: Option<SeedMetrics>,
}

/// Prints the report for people (stdout).
pub fn print_report(r: &EvalReport) {
    println!(
        "{} ({} split): {} queries, {} documents, {} chunks, index {:.1} MiB{}",
        r.dataset,
        r.split,
        r.queries,
        r.documents,
        r.chunks,
        r.index_bytes as f64 / (1024.0 * 1024.0),
        r.peak_rss_bytes.map_or_else(String::new, |b| format!(
            ", peak memory {:.0} MiB",
            b as f64 / (1024.0 * 1024.0)
        ))
    );
    match r.ingest.chunks_per_second {
        Some(cps) => println!(
            "ingest: {} chunks written in {:.1} s ({cps:.1} chunks/s)",
            r.ingest.chunks_written, r.ingest.elapsed_seconds
        ),
        None if r.ingest.documents_deleted > 0 => println!(
            "ingest: {} documents removed, nothing written",
            r.ingest.documents_deleted
        ),
        None => println!("ingest: index up to date (nothing written)"),
    }
    println!(
        "{:<12} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8} {:>10}",
        "stage", "nDCG@10", "R@10", "R@100", "MRR@10", "p50 ms", "p95 ms", "p99 ms", "q/s"
    );
    for s in &r.stages {
        println!(
            "{:<12} {:>8.4} {:>7.4} {:>7.4} {:>7.4} {:>8.1} {:>8.1} {:>8.1} {:>10}",
            s.stage,
            s.ndcg_at_10,
            s.recall_at_10,
            s.recall_at_100,
            s.mrr_at_10,
            s.latency_ms.p50,
            s.latency_ms.p95,
            s.latency_ms.p99,
            s.queries_per_second
                .map_or_else(|| "-".into(), |q| format!("{q:.1} ({}c)", s.clients)),
        );
    }
    let e = &r.evaluator;
    println!(
        "evaluator {}: AUROC {}{}{} over {} answerable / {} unanswerable queries (ablated {} queries, {} documents; seed {})",
        e.evaluator,
        e.auroc.map_or_else(|| "n/a".into(), |a| format!("{a:.3}")),
        e.heuristic_auroc.map_or_else(String::new, |a| format!(
            " (seed heuristic on the same documents: {a:.3})"
        )),
        e.self_calibrated_auroc.map_or_else(String::new, |a| format!(
            " (self-calibrated, no labels: {a:.3})"
        )),
        e.answerable,
        e.unanswerable,
        e.ablated_queries,
        e.ablated_documents,
        e.seed
    );
    println!(
        "{:<12} {:>11} {:>13}",
        "verdict", "answerable", "unanswerable"
    );
    for (v, [a, u]) in &e.verdicts {
        println!("{v:<12} {a:>11} {u:>13}");
    }
    println!(
        "corrections vs hybrid nDCG@10: raised {}, lowered {}, unchanged {}",
        e.corrections_raised_ndcg, e.corrections_lowered_ndcg, e.corrections_unchanged_ndcg
    );
    if let Some(m) = &e.seed_metrics {
        println!("{}", describe(m));
    }
}
