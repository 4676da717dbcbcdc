//! Human and JSON renderings of command results. The JSON shapes are documented in
//! docs/cli-json.md and kept stable.

use std::path::Path;

use anyhow::Result;
use crag_core::{LegHit, TopK};
use crag_engine::{ArtifactOrigin, EngineStats, IngestReport, QueryOutcome, ReconcileReport};
use crag_eval::percentile;
pub use crag_http::dto::ms;
use crag_http::dto::{query_response, QueryResponse};
use crag_routing::Route;
use serde::Serialize;

/// Prints a query outcome.
pub fn query(top_k: TopK, o: &QueryOutcome, json: bool) -> Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&query_response(None, None, top_k, o))?
        );
        return Ok(());
    }
    for w in &o.warnings {
        eprintln!("warning: {w}");
    }
    println!("route: {} ({})", o.route.route.as_str(), o.route.reason);
    if let Some(r) = &o.rerank {
        match &r.skipped {
            Some(why) => println!("rerank: skipped ({why})"),
            None => println!(
                "rerank: {} kept {} of {} candidates{}",
                r.model_id,
                r.kept,
                r.candidates,
                if r.cache_hit { " (cached)" } else { "" }
            ),
        }
    }
    match &o.evaluation {
        Some(e) => {
            println!(
                "verdict: {} (score {:.2}, {} evaluator): {}",
                e.verdict,
                e.score,
                o.evaluator.as_deref().unwrap_or("?"),
                e.reasoning
            );
            if !e.criteria.is_empty() {
                let parts: Vec<String> = e
                    .criteria
                    .iter()
                    .map(|c| format!("{} {:.2} (w {:.2})", c.name, c.score, c.weight))
                    .collect();
                println!("criteria: {}", parts.join(", "));
            }
            for issue in &e.issues {
                println!("evaluator issue: {issue}");
            }
        }
        None if o.route.route == Route::NoRetrieval => {}
        None => println!("verdict: none (results not judged)"),
    }
    for c in &o.corrections {
        if c.queries.is_empty() {
            println!("correction: {}: {}", c.kind, c.reason);
        } else {
            println!(
                "correction: {}: {} [{}]",
                c.kind,
                c.reason,
                c.queries.join(" | ")
            );
        }
    }
    if o.artifacts.is_empty() && o.route.route != Route::NoRetrieval {
        println!("no results for {:?}", o.query.as_str());
    }
    let rank = |l: Option<LegHit>| l.map_or_else(|| "-".to_owned(), |l| l.rank.to_string());
    let relevance = |r: Option<f32>| r.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}"));
    for (i, a) in o.artifacts.iter().enumerate() {
        let c = &a.chunk;
        match a.origin {
            ArtifactOrigin::Index => println!(
                "{:>2}. score {:.3} (fused {:.4}; bm25 #{}, vector #{}; relevance {})  {}:{}-{}",
                i + 1,
                a.normalized_score.unwrap_or(0.0),
                a.fused_score.unwrap_or(0.0),
                rank(a.keyword),
                rank(a.vector),
                relevance(a.relevance),
                c.source,
                c.span.line_start,
                c.span.line_end,
            ),
            ArtifactOrigin::Web => println!(
                "{:>2}. web #{}  {}",
                i + 1,
                a.web_rank.unwrap_or(0),
                c.source
            ),
            ArtifactOrigin::Gap
            | ArtifactOrigin::Session
            | ArtifactOrigin::Graph
            | ArtifactOrigin::History => println!(
                "{:>2}. {}  {}:{}-{}",
                i + 1,
                match a.origin {
                    ArtifactOrigin::Gap => "gap",
                    ArtifactOrigin::Graph => "graph",
                    ArtifactOrigin::History => "history",
                    _ => "session",
                },
                c.source,
                c.span.line_start,
                c.span.line_end,
            ),
        }
        if !c.title.is_empty() {
            println!("    {}", c.title);
        }
        let refined = if a.refined { " (refined)" } else { "" };
        println!("    {}{refined}", snippet(&c.text, 200));
    }
    let t = &o.timings;
    println!(
        "{} results ({} retrieved), {} of {} tokens; web search {}; {:.1} ms (retrieve {:.1}, evaluate {:.1}, expand {:.1}, rewrite {:.1}, web {:.1}, refine {:.1})",
        o.artifacts.len(),
        o.original_count,
        o.tokens_used,
        o.token_budget,
        if o.web_search_used { "used" } else { "not used" },
        ms(t.total),
        ms(t.retrieve),
        ms(t.evaluate),
        ms(t.expand),
        ms(t.rewrite),
        ms(t.web_search),
        ms(t.refine),
    );
    Ok(())
}

/// Collapses whitespace and cuts `text` to about `max` characters.
fn snippet(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IngestOutput<'a> {
    documents_seen: usize,
    documents_added: usize,
    documents_updated: usize,
    documents_unchanged: usize,
    documents_deleted: usize,
    chunks_written: usize,
    chunks_embedded: usize,
    syntax_files: usize,
    graph_documents_filled: usize,
    chunks_per_second: f64,
    elapsed_seconds: f64,
    skipped: Vec<SkippedOutput<'a>>,
}

#[derive(Serialize)]
struct SkippedOutput<'a> {
    path: &'a str,
    reason: &'a str,
}

/// Prints an ingestion report.
pub fn ingest_report(report: &IngestReport, json: bool) -> Result<()> {
    if json {
        let out = IngestOutput {
            documents_seen: report.documents_seen,
            documents_added: report.documents_added,
            documents_updated: report.documents_updated,
            documents_unchanged: report.documents_unchanged,
            documents_deleted: report.documents_deleted,
            chunks_written: report.chunks_written,
            chunks_embedded: report.chunks_embedded,
            syntax_files: report.syntax_files,
            graph_documents_filled: report.graph_documents_filled,
            chunks_per_second: report.chunks_per_second(),
            elapsed_seconds: report.elapsed.as_secs_f64(),
            skipped: report
                .skipped
                .iter()
                .map(|(path, reason)| SkippedOutput { path, reason })
                .collect(),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for (path, reason) in &report.skipped {
        eprintln!("skipped {path}: {reason}");
    }
    println!(
        "{} documents: {} added, {} updated, {} unchanged, {} deleted; {} chunks written ({} embedded, {} source files cut along their syntax) in {:.1} s ({:.1} chunks/s)",
        report.documents_seen,
        report.documents_added,
        report.documents_updated,
        report.documents_unchanged,
        report.documents_deleted,
        report.chunks_written,
        report.chunks_embedded,
        report.syntax_files,
        report.elapsed.as_secs_f64(),
        report.chunks_per_second(),
    );
    if report.graph_documents_filled > 0 {
        println!(
            "knowledge graph: key terms of {} stored documents filled in",
            report.graph_documents_filled
        );
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatsOutput<'a> {
    data_dir: String,
    documents: usize,
    keyword_chunks: usize,
    vector_chunks: usize,
    embedding_model: &'a str,
    dimension: usize,
    bytes_on_disk: u64,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReconcileOutput<'a> {
    documents_checked: usize,
    orphans_removed: Vec<&'a str>,
    documents_repaired: Vec<&'a str>,
    chunks_embedded: usize,
    /// Chunks of a keyword index from before token counts were stored, counted and
    /// stored now (0 when it stored them already).
    token_counts_stored: usize,
    elapsed_ms: f64,
}

/// Prints what a reconciliation repaired; `counted`: chunks whose token counts it stored.
pub fn reconcile(r: &ReconcileReport, counted: Option<usize>, json: bool) -> Result<()> {
    let out = ReconcileOutput {
        documents_checked: r.documents_checked,
        orphans_removed: r.orphans_removed.iter().map(|d| d.as_str()).collect(),
        documents_repaired: r.documents_repaired.iter().map(|d| d.as_str()).collect(),
        chunks_embedded: r.chunks_embedded,
        token_counts_stored: counted.unwrap_or(0),
        elapsed_ms: r.elapsed.as_secs_f64() * 1000.0,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    println!("documents checked   {}", out.documents_checked);
    println!("orphans removed     {}", out.orphans_removed.len());
    for id in &out.orphans_removed {
        println!("  {id}");
    }
    println!(
        "documents repaired  {} ({} chunks embedded)",
        out.documents_repaired.len(),
        out.chunks_embedded
    );
    for id in &out.documents_repaired {
        println!("  {id}");
    }
    if let Some(chunks) = counted {
        println!("token counts stored {chunks} chunks (the keyword index predates them)");
    }
    if !r.repaired() && counted.is_none() {
        println!("the indexes agree");
    }
    Ok(())
}

/// Prints index statistics.
pub fn stats(data_dir: &Path, s: &EngineStats, bytes: u64, json: bool) -> Result<()> {
    let out = StatsOutput {
        data_dir: data_dir.display().to_string(),
        documents: s.documents,
        keyword_chunks: s.keyword_chunks,
        vector_chunks: s.vector_chunks,
        embedding_model: &s.embedding_model,
        dimension: s.dimension,
        bytes_on_disk: bytes,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("data directory   {}", out.data_dir);
        println!("documents        {}", out.documents);
        println!(
            "chunks           {} keyword, {} vector",
            out.keyword_chunks, out.vector_chunks
        );
        println!(
            "embedding model  {} ({} dimensions)",
            out.embedding_model, out.dimension
        );
        println!(
            "size on disk     {:.1} MiB",
            out.bytes_on_disk as f64 / (1024.0 * 1024.0)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn snippet_collapses_and_cuts_on_char_boundaries() {
        assert_eq!(snippet("a\n\n b  c", 10), "a b c");
        assert_eq!(snippet("ééééé", 3), "ééé…");
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BatchOutput<'a> {
    summary: BatchSummary,
    queries: Vec<QueryResponse<'a>>,
}

/// Verdicts, corrections and latencies over a batch of queries.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct BatchSummary {
    queries: usize,
    verdicts: std::collections::BTreeMap<String, usize>,
    correction_strategies: std::collections::BTreeMap<String, usize>,
    web_search_used: usize,
    latency_ms: LatencySummary,
    fast_path_latency_ms: LatencySummary,
    corrected_path_latency_ms: LatencySummary,
}

#[derive(Serialize, Default)]
struct LatencySummary {
    count: usize,
    p50: Option<f64>,
    p95: Option<f64>,
    max: Option<f64>,
}

impl LatencySummary {
    fn of(values: &[f64]) -> Self {
        Self {
            count: values.len(),
            p50: percentile(values, 0.50),
            p95: percentile(values, 0.95),
            max: percentile(values, 1.0),
        }
    }

    fn human(&self) -> String {
        match (self.p50, self.p95) {
            (Some(p50), Some(p95)) => {
                format!("p50 {p50:.1} ms, p95 {p95:.1} ms over {}", self.count)
            }
            _ => "none".to_owned(),
        }
    }
}

fn summarize(outcomes: &[(String, QueryOutcome)]) -> BatchSummary {
    let mut s = BatchSummary {
        queries: outcomes.len(),
        ..BatchSummary::default()
    };
    let (mut all, mut fast, mut corrected) = (Vec::new(), Vec::new(), Vec::new());
    for (_, o) in outcomes {
        *s.verdicts.entry(o.decision().to_owned()).or_default() += 1;
        let strategy = o.correction_strategy();
        *s.correction_strategies
            .entry(strategy.to_owned())
            .or_default() += 1;
        s.web_search_used += usize::from(o.web_search_used);
        let t = ms(o.timings.total);
        all.push(t);
        if strategy == "none" {
            fast.push(t);
        } else {
            corrected.push(t);
        }
    }
    s.latency_ms = LatencySummary::of(&all);
    s.fast_path_latency_ms = LatencySummary::of(&fast);
    s.corrected_path_latency_ms = LatencySummary::of(&corrected);
    s
}

/// Prints the outcomes of a batch of queries and their summary.
pub fn batch(top_k: TopK, outcomes: &[(String, QueryOutcome)], json: bool) -> Result<()> {
    let summary = summarize(outcomes);
    if json {
        let out = BatchOutput {
            summary,
            queries: outcomes
                .iter()
                .map(|(id, o)| query_response(Some(id), None, top_k, o))
                .collect(),
        };
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    }
    for (id, o) in outcomes {
        println!(
            "{id}\t{}\t{}\t{}\t{:.1} ms\t{}",
            o.verdict().map_or("-", |v| v.as_str()),
            o.evaluation
                .as_ref()
                .map_or_else(|| "-".to_owned(), |e| format!("{:.2}", e.score)),
            o.correction_strategy(),
            ms(o.timings.total),
            o.query.as_str()
        );
    }
    let counts = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("{} queries", summary.queries);
    println!("verdicts: {}", counts(&summary.verdicts));
    println!("corrections: {}", counts(&summary.correction_strategies));
    println!("web search used: {}", summary.web_search_used);
    println!("latency: {}", summary.latency_ms.human());
    println!(
        "fast path (no correction): {}",
        summary.fast_path_latency_ms.human()
    );
    println!(
        "corrected path: {}",
        summary.corrected_path_latency_ms.human()
    );
    Ok(())
}
