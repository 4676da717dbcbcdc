//! Human and JSON renderings of command results. The JSON shapes are documented in
//! docs/cli-json.md and kept stable.

use std::path::Path;

use anyhow::Result;
use crag_core::{FusedHit, LegHit, Query, TopK};
use crag_engine::{EngineStats, IngestReport, Retrieval, RetrievalTimings};
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct QueryOutput<'a> {
    query: &'a str,
    top_k: usize,
    results: Vec<ResultOutput<'a>>,
    timings: TimingsOutput,
    warnings: &'a [String],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResultOutput<'a> {
    rank: usize,
    chunk_id: &'a str,
    document_id: &'a str,
    source: &'a str,
    title: &'a str,
    kind: &'a str,
    span: SpanOutput,
    score: f32,
    fused_score: f32,
    keyword: Option<LegOutput>,
    vector: Option<LegOutput>,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SpanOutput {
    byte_start: u64,
    byte_end: u64,
    line_start: u32,
    line_end: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TimingsOutput {
    keyword_ms: f64,
    embed_ms: f64,
    vector_ms: f64,
    fusion_ms: f64,
    total_ms: f64,
}

impl From<&RetrievalTimings> for TimingsOutput {
    fn from(t: &RetrievalTimings) -> Self {
        Self {
            keyword_ms: ms(t.keyword),
            embed_ms: ms(t.embed),
            vector_ms: ms(t.vector),
            fusion_ms: ms(t.fusion),
            total_ms: ms(t.total),
        }
    }
}

#[derive(Serialize)]
struct LegOutput {
    rank: usize,
    score: f32,
}

fn leg(l: Option<LegHit>) -> Option<LegOutput> {
    l.map(|l| LegOutput {
        rank: l.rank,
        score: l.score,
    })
}

fn result(rank: usize, hit: &FusedHit) -> ResultOutput<'_> {
    let c = &hit.chunk;
    ResultOutput {
        rank,
        chunk_id: c.id.as_str(),
        document_id: c.document_id.as_str(),
        source: &c.source,
        title: &c.title,
        kind: c.kind.as_str(),
        span: SpanOutput {
            byte_start: c.span.byte_start,
            byte_end: c.span.byte_end,
            line_start: c.span.line_start,
            line_end: c.span.line_end,
        },
        score: hit.normalized_score,
        fused_score: hit.fused_score,
        keyword: leg(hit.keyword),
        vector: leg(hit.vector),
        text: &c.text,
    }
}

/// Prints a retrieval.
pub fn retrieval(query: &Query, top_k: TopK, r: &Retrieval, json: bool) -> Result<()> {
    if json {
        let out = QueryOutput {
            query: query.as_str(),
            top_k: top_k.get(),
            results: r
                .hits
                .iter()
                .enumerate()
                .map(|(i, h)| result(i + 1, h))
                .collect(),
            timings: TimingsOutput::from(&r.timings),
            warnings: &r.warnings,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    if r.hits.is_empty() {
        println!("no results for {:?}", query.as_str());
    }
    let rank = |l: Option<LegHit>| l.map_or_else(|| "-".to_owned(), |l| l.rank.to_string());
    for (i, hit) in r.hits.iter().enumerate() {
        let c = &hit.chunk;
        println!(
            "{:>2}. score {:.3} (rrf {:.4}; bm25 #{}, vector #{})  {}:{}-{}",
            i + 1,
            hit.normalized_score,
            hit.fused_score,
            rank(hit.keyword),
            rank(hit.vector),
            c.source,
            c.span.line_start,
            c.span.line_end,
        );
        if !c.title.is_empty() {
            println!("    {}", c.title);
        }
        println!("    {}", snippet(&c.text, 200));
    }
    println!(
        "{} results in {:.1} ms (bm25 {:.1} ms, embed {:.1} ms, vector {:.1} ms)",
        r.hits.len(),
        ms(r.timings.total),
        ms(r.timings.keyword),
        ms(r.timings.embed),
        ms(r.timings.vector),
    );
    Ok(())
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
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
        "{} documents: {} added, {} updated, {} unchanged, {} deleted; {} chunks written in {:.1} s ({:.1} chunks/s)",
        report.documents_seen,
        report.documents_added,
        report.documents_updated,
        report.documents_unchanged,
        report.documents_deleted,
        report.chunks_written,
        report.elapsed.as_secs_f64(),
        report.chunks_per_second(),
    );
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
