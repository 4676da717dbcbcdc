//! The report of `crag eval`: its JSON shape and its printed form.

use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EvalReport {
    pub(super) dataset: String,
    pub(super) split: String,
    pub(super) queries: usize,
    pub(super) documents: usize,
    pub(super) chunks: usize,
    pub(super) ingest: IngestFigures,
    pub(super) index_bytes: u64,
    pub(super) peak_rss_bytes: Option<u64>,
    pub(super) stages: Vec<StageReport>,
    pub(super) evaluator: EvaluatorReport,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct IngestFigures {
    pub(super) documents_written: usize,
    pub(super) documents_deleted: usize,
    pub(super) chunks_written: usize,
    pub(super) chunks_per_second: Option<f64>,
    pub(super) elapsed_seconds: f64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StageReport {
    pub(super) stage: &'static str,
    pub(super) ndcg_at_10: f64,
    pub(super) recall_at_10: f64,
    pub(super) recall_at_100: f64,
    pub(super) mrr_at_10: f64,
    pub(super) latency_ms: Latency,
    pub(super) clients: usize,
    pub(super) queries_per_second: Option<f64>,
}

#[derive(Serialize)]
pub(super) struct Latency {
    pub(super) p50: f64,
    pub(super) p95: f64,
    pub(super) p99: f64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EvaluatorReport {
    pub(super) evaluator: String,
    pub(super) ablate: f64,
    pub(super) seed: u64,
    pub(super) ablated_queries: usize,
    pub(super) ablated_documents: usize,
    pub(super) answerable: usize,
    pub(super) unanswerable: usize,
    /// Evaluator score against "the hybrid top 10 holds a relevant document".
    pub(super) auroc: Option<f64>,
    /// The seed heuristic's score of the same documents against the same labels (when another
    /// evaluator is configured).
    pub(super) heuristic_auroc: Option<f64>,
    /// verdict -> [answerable, unanswerable].
    pub(super) verdicts: BTreeMap<String, [usize; 2]>,
    pub(super) corrections_raised_ndcg: usize,
    pub(super) corrections_lowered_ndcg: usize,
    pub(super) corrections_unchanged_ndcg: usize,
}

pub(super) fn print_report(r: &EvalReport) {
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
        "evaluator {}: AUROC {}{} over {} answerable / {} unanswerable queries (ablated {} queries, {} documents; seed {})",
        e.evaluator,
        e.auroc.map_or_else(|| "n/a".into(), |a| format!("{a:.3}")),
        e.heuristic_auroc.map_or_else(String::new, |a| format!(
            " (seed heuristic on the same documents: {a:.3})"
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
}
