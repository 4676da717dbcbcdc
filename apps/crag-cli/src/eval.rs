//! `crag eval`: the flags, a progress bar and the output of `crag_eval`'s evaluation harness.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use crag_eval::{evaluate, parse_stage, print_report, EvalOptions, EvalProgress, Stage, DEPTH};
use indicatif::{ProgressBar, ProgressStyle};

use crate::collection::CollectionArgs;
use crate::commands::{Bar, Context};

#[derive(Debug, Args)]
pub struct EvalArgs {
    #[command(flatten)]
    collection: CollectionArgs,
    /// Qrels split (qrels/<split>.tsv); falls back to qrels.tsv when that file does not exist.
    #[arg(long, default_value = "test")]
    split: String,
    /// Concurrent clients of the throughput run (0: skip it).
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Results retrieved by the Corrective RAG stage; the evaluator judges and corrects the
    /// first `[crag] judge_depth` (10) of them, the rest follow unchanged. The default, the
    /// depth of the other stages, compares like with like (the same distinct documents in
    /// the top 10 when nothing is corrected, Recall@100 over the same depth).
    #[arg(long, default_value_t = DEPTH)]
    crag_top_k: usize,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write each stage's ranking as a TREC run file (`<stage>.run`) into this directory, for
    /// trec_eval or offline analysis, and each query's judgement of the hybrid+crag stage
    /// (`judgements.jsonl`).
    #[arg(long)]
    runs: Option<PathBuf>,
    /// Run only these stages (comma-separated: bm25, vector, hybrid, hybrid+rerank,
    /// hybrid+crag); the evaluator report needs hybrid and hybrid+crag.
    #[arg(long, value_delimiter = ',', value_parser = parse_stage)]
    stages: Vec<Stage>,
    /// Also fit the calibrated evaluator without labels on N pseudo-queries of the indexed
    /// corpus (as `crag calibrate --self` does) and report its AUROC beside the configured
    /// evaluator's, on the same documents and labels (with `--ablate`). 0: not.
    #[arg(long, default_value_t = 0, value_name = "N")]
    self_calibrate: usize,
}

/// The stage runs as a progress bar on stderr.
struct StageBar(ProgressBar);

impl EvalProgress for StageBar {
    fn start(&self, total: usize) {
        self.0.set_length(total as u64);
    }
    fn stage(&self, name: &str) {
        self.0.set_message(name.to_owned());
    }
    fn advance(&self) {
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
    fn note(&self, message: &str) {
        self.0.suspend(|| eprintln!("{message}"));
    }
}

pub async fn eval(ctx: &Context, args: EvalArgs) -> Result<()> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {wide_bar} {pos}/{len} stage runs ({eta}) {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let options = EvalOptions {
        split: args.split,
        clients: args.clients,
        crag_top_k: args.crag_top_k,
        runs: args.runs,
        stages: args.stages,
        self_calibrate: args.self_calibrate,
    };
    let report = evaluate(
        &ctx.config,
        &args.collection.spec(),
        &options,
        &Bar::new(false),
        &StageBar(bar),
    )
    .await?;
    print_report(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("report written to {}", path.display());
    }
    Ok(())
}
