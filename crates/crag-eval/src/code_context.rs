//! Context completeness on a real repository (`crag eval-code`): for sampled functions, ask
//! with their doc comment (or name) and count how many of their direct callees' definitions
//! the final context holds, after one pass and after up to three LLM-free gap passes, with
//! syntax-aware chunks and with token windows; with syntax chunks, the gap passes run with and
//! without the gaps' one-hop neighbourhood (`[cgrag] neighbourhood`).
//!
//! Ground truth comes from parsing the repository with `crag-syntax`: a callee is a function or
//! method the sampled function calls whose name the repository defines exactly once (ambiguous
//! names such as `new` are left out, as no reader could tell which is meant). A callee counts
//! as found when a context chunk of its file covers the first line of its definition, whatever
//! the chunking, which favours token windows (a window holding only a signature counts).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{bail, Context as _, Result};
use crag_app::Config;
use crag_core::{Query, ReferenceKind, SymbolDef, SymbolKind, TopK};
use crag_engine::readers::read_path;
use crag_engine::{
    Artifact, AskRequest, CgragComponents, CgragConfig, CodeGapDetector, Engine, NoProgress,
};
use crag_syntax::{parse_file, Language, SyntaxLimits};
use serde::Serialize;

use crate::collection::choose;
use crate::metrics::percentile;

/// What `crag eval-code` is asked.
#[derive(Debug, Clone)]
pub struct CodeContextOptions {
    /// The repository (a directory of source files).
    pub repo: PathBuf,
    /// Functions sampled.
    pub samples: usize,
    /// Seed of the sample.
    pub seed: u64,
    /// Results of the first retrieval.
    pub top_k: usize,
    /// Where the two indexes are built (emptied first).
    pub work_dir: PathBuf,
}

/// One way of chunking and asking, measured.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeReport {
    /// `syntax` or `windows`.
    pub chunking: String,
    /// Passes allowed (1, or up to 3 with gap passes).
    pub max_passes: usize,
    /// Neighbour chunks a symbol gap brings at most (`[cgrag] neighbourhood`; 0: none).
    pub neighbourhood: usize,
    /// Questions asked.
    pub questions: usize,
    /// Callee definitions over all questions.
    pub callees: usize,
    /// Callee definitions found in the final contexts.
    pub found: usize,
    /// found / callees.
    pub recall: f64,
    /// Questions whose own function is in the context.
    pub target_found: usize,
    /// Chunks in the final contexts.
    pub chunks: usize,
    /// Of those, chunks holding a callee definition.
    pub callee_chunks: usize,
    /// callee_chunks / chunks.
    pub precision: f64,
    /// Tokens of the final contexts.
    pub tokens: usize,
    /// tokens / found.
    pub tokens_per_found: f64,
    /// Passes used, mean.
    pub mean_passes: f64,
    /// Latency of one question, median (ms).
    pub p50_ms: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeContextReport {
    /// The repository.
    pub repo: String,
    /// Source files in a known language.
    pub source_files: usize,
    /// Functions and methods with at least one unambiguous callee.
    pub candidates: usize,
    /// Functions sampled.
    pub sampled: usize,
    /// Each mode.
    pub modes: Vec<ModeReport>,
}

/// A sampled function and what it calls.
#[derive(Debug, Clone)]
struct Case {
    question: String,
    path: String,
    def: SymbolDef,
    callees: Vec<(String, SymbolDef)>,
}

/// Runs the benchmark: ground truth, both indexes, four modes.
pub async fn run(config: &Config, options: &CodeContextOptions) -> Result<CodeContextReport> {
    let repo = options.repo.clone();
    let loaded = tokio::task::spawn_blocking(move || read_path(&repo, 1024 * 1024))
        .await
        .context("reading task failed")??;
    let (cases, source_files, candidates) = ground_truth(&loaded.documents, options)?;
    if cases.is_empty() {
        bail!(
            "no function with an unambiguous callee in {}",
            options.repo.display()
        );
    }
    if options.work_dir.exists() {
        std::fs::remove_dir_all(&options.work_dir)
            .with_context(|| format!("cannot empty {}", options.work_dir.display()))?;
    }
    let mut modes = Vec::new();
    for syntax in [true, false] {
        let name = if syntax { "syntax" } else { "windows" };
        let dir = options.work_dir.join(name);
        let mut config = config.clone();
        config.code.syntax_chunks = syntax;
        config.code.expand_depth = 0;
        // Throwaway indexes: their graphs in the work directory, never in a shared database.
        config.adapters.storage.graphs = crag_app::compose::GraphStore::Sqlite;
        let vectors = dir.join("vectors").to_string_lossy().into_owned();
        let engine =
            crag_app::compose::open_indexes(&config, &dir, &vectors, config.engine_config())
                .await?;
        let report = engine
            .ingest(
                loaded.documents.clone(),
                Vec::new(),
                &loaded.scope,
                &NoProgress,
            )
            .await?;
        eprintln!(
            "{name}: {} documents, {} chunks ({} files cut along their syntax)",
            report.documents_seen, report.chunks_written, report.syntax_files
        );
        // With symbols, the gap passes with the neighbourhood off and as configured.
        let neighbourhood = config.cgrag.neighbourhood;
        let mut runs = vec![(1, 0), (3, 0)];
        if syntax && neighbourhood > 0 {
            runs.push((3, neighbourhood));
        }
        for (max_passes, neighbourhood) in runs {
            let cgrag = CgragConfig {
                max_passes,
                neighbourhood,
                ..config.cgrag.clone()
            };
            let mode = measure(&engine, cgrag, &cases, name, options.top_k).await?;
            modes.push(mode);
        }
    }
    Ok(CodeContextReport {
        repo: options.repo.display().to_string(),
        source_files,
        candidates,
        sampled: cases.len(),
        modes,
    })
}

/// Parses the repository and samples the functions asked about.
fn ground_truth(
    documents: &[crag_core::Document],
    options: &CodeContextOptions,
) -> Result<(Vec<Case>, usize, usize)> {
    let words = |t: &str| t.split_whitespace().count() * 13 / 10 + 1;
    let limits = SyntaxLimits {
        max_tokens: 224,
        count_tokens: &words,
    };
    let mut defs: Vec<(String, SymbolDef, String)> = Vec::new();
    let mut calls: HashMap<(String, String), Vec<String>> = HashMap::new();
    let mut files = 0;
    for doc in documents {
        let Some(language) = Language::from_path(&doc.source) else {
            continue;
        };
        let Ok(parsed) = parse_file(&doc.source, &doc.text, language, &limits) else {
            continue;
        };
        files += 1;
        let texts: HashMap<&str, &str> = parsed
            .pieces
            .iter()
            .map(|p| (p.key.as_str(), p.text.as_str()))
            .collect();
        for (key, def) in &parsed.definitions {
            let text = texts.get(key.as_str()).copied().unwrap_or_default();
            defs.push((doc.source.clone(), def.clone(), doc_comment(text)));
        }
        for (_, r) in &parsed.references {
            if let (ReferenceKind::Call, Some(from)) = (r.kind, &r.from) {
                calls
                    .entry((doc.source.clone(), from.clone()))
                    .or_default()
                    .push(r.name.clone());
            }
        }
    }
    let callable = |k: SymbolKind| matches!(k, SymbolKind::Function | SymbolKind::Method);
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, (_, def, _)) in defs.iter().enumerate() {
        by_name.entry(def.name.as_str()).or_default().push(i);
    }
    let mut candidates: Vec<Case> = Vec::new();
    for (path, def, comment) in &defs {
        if !callable(def.kind) {
            continue;
        }
        let Some(names) = calls.get(&(path.clone(), def.qualified.clone())) else {
            continue;
        };
        let mut seen = HashSet::new();
        let callees: Vec<(String, SymbolDef)> = names
            .iter()
            .filter(|n| seen.insert(n.as_str()) && n.as_str() != def.name)
            .filter_map(|n| match by_name.get(n.as_str()).map(Vec::as_slice) {
                Some([only]) if callable(defs[*only].1.kind) => {
                    Some((defs[*only].0.clone(), defs[*only].1.clone()))
                }
                _ => None,
            })
            .collect();
        if callees.is_empty() {
            continue;
        }
        let question = if comment.split_whitespace().count() >= 3 {
            comment.clone()
        } else {
            def.name.clone()
        };
        candidates.push(Case {
            question,
            path: path.clone(),
            def: def.clone(),
            callees,
        });
    }
    candidates.sort_by(|a, b| (&a.path, &a.def.qualified).cmp(&(&b.path, &b.def.qualified)));
    let n = candidates.len();
    let fraction = (options.samples as f64 / n.max(1) as f64).min(1.0);
    let chosen: HashSet<usize> = if fraction >= 1.0 {
        (0..n).collect()
    } else {
        choose(n, fraction, options.seed).into_iter().collect()
    };
    let cases = candidates
        .into_iter()
        .enumerate()
        .filter(|(i, _)| chosen.contains(i))
        .map(|(_, c)| c)
        .collect();
    Ok((cases, files, n))
}

/// The first sentence of the doc comment or docstring at the start of a definition's text.
fn doc_comment(text: &str) -> String {
    let mut lines = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        let stripped = ["///", "//!", "//", "#", "/**", "*/", "*", "\"\"\"", "'''"]
            .iter()
            .find_map(|m| t.strip_prefix(m));
        match stripped {
            Some(rest) if !t.starts_with("#[") && !t.starts_with("#!") => {
                let rest = rest
                    .trim()
                    .trim_end_matches("*/")
                    .trim_end_matches("\"\"\"")
                    .trim();
                if !rest.is_empty() {
                    lines.push(rest.to_owned());
                }
            }
            _ if lines.is_empty() && (t.starts_with("#[") || t.starts_with('@')) => {}
            _ if lines.is_empty() && (t.ends_with(':') || t.ends_with('{')) => {}
            _ => break,
        }
    }
    let joined = lines.join(" ");
    let sentence = joined.split(". ").next().unwrap_or_default();
    sentence.chars().take(300).collect()
}

/// Whether `artifact` holds the definition `def` of `path` (covers its first line).
fn holds(artifact: &Artifact, path: &str, def: &SymbolDef) -> bool {
    let c = &artifact.chunk;
    c.source == path && c.span.line_start <= def.line_start && def.line_start <= c.span.line_end
}

async fn measure(
    engine: &Engine,
    cgrag: CgragConfig,
    cases: &[Case],
    chunking: &str,
    top_k: usize,
) -> Result<ModeReport> {
    let (max_passes, neighbourhood) = (cgrag.max_passes, cgrag.neighbourhood);
    let engine = engine.clone().with_cgrag(CgragComponents {
        detector: Arc::new(match engine.symbol_index() {
            Some(symbols) => CodeGapDetector::with_symbols(Arc::clone(symbols)),
            None => CodeGapDetector::lexical(),
        }),
        sessions: None,
        config: cgrag,
    })?;
    let mut report = ModeReport {
        chunking: chunking.to_owned(),
        max_passes,
        neighbourhood,
        questions: cases.len(),
        callees: 0,
        found: 0,
        recall: 0.0,
        target_found: 0,
        chunks: 0,
        callee_chunks: 0,
        precision: 0.0,
        tokens: 0,
        tokens_per_found: 0.0,
        mean_passes: 0.0,
        p50_ms: 0.0,
    };
    let mut latencies = Vec::with_capacity(cases.len());
    let mut passes = 0;
    for case in cases {
        let mut request = AskRequest::new(Query::new(&case.question)?, TopK::new(top_k)?);
        request.use_crag = false;
        request.use_web_search = false;
        let started = Instant::now();
        let outcome = engine.ask(&request).await?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        passes += outcome.passes.len();
        let context = &outcome.artifacts;
        report.callees += case.callees.len();
        report.found += case
            .callees
            .iter()
            .filter(|(path, def)| context.iter().any(|a| holds(a, path, def)))
            .count();
        if context.iter().any(|a| holds(a, &case.path, &case.def)) {
            report.target_found += 1;
        }
        report.chunks += context.len();
        report.callee_chunks += context
            .iter()
            .filter(|a| case.callees.iter().any(|(p, d)| holds(a, p, d)))
            .count();
        report.tokens += context.iter().map(|a| a.tokens).sum::<usize>();
    }
    report.recall = report.found as f64 / report.callees.max(1) as f64;
    report.precision = report.callee_chunks as f64 / report.chunks.max(1) as f64;
    report.tokens_per_found = report.tokens as f64 / report.found.max(1) as f64;
    report.mean_passes = passes as f64 / cases.len().max(1) as f64;
    report.p50_ms = percentile(&latencies, 50.0).unwrap_or(0.0);
    Ok(report)
}

/// Prints the report as a table.
pub fn print(report: &CodeContextReport) {
    println!(
        "{}: {} source files, {} functions with an unambiguous callee, {} sampled",
        report.repo, report.source_files, report.candidates, report.sampled
    );
    println!(
        "{:<8} {:>6} {:>5} {:>8} {:>8} {:>7} {:>9} {:>8} {:>9} {:>7} {:>8}",
        "chunks",
        "passes",
        "nbrs",
        "callees",
        "found",
        "recall",
        "precision",
        "tokens",
        "tok/found",
        "target",
        "p50 ms"
    );
    for m in &report.modes {
        println!(
            "{:<8} {:>6} {:>5} {:>8} {:>8} {:>7.3} {:>9.3} {:>8} {:>9.0} {:>7} {:>8.1}",
            m.chunking,
            if m.max_passes == 1 {
                "1".to_owned()
            } else {
                format!("<={}", m.max_passes)
            },
            m.neighbourhood,
            m.callees,
            m.found,
            m.recall,
            m.precision,
            m.tokens,
            m.tokens_per_found,
            m.target_found,
            m.p50_ms
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_comments_give_their_first_sentence() {
        assert_eq!(
            doc_comment("/// Looks a user up. Then checks.\npub fn f() {}"),
            "Looks a user up"
        );
        assert_eq!(
            doc_comment("#[inline]\n/// Adds two numbers\nfn add() {}"),
            "Adds two numbers"
        );
        assert_eq!(
            doc_comment("def f(x):\n    \"\"\"Returns x twice.\"\"\"\n    return 2 * x"),
            "Returns x twice."
        );
        assert_eq!(doc_comment("fn bare() {}"), "");
    }
}
