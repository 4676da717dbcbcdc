//! `crag eval-code`: context completeness on a repository (`crag_eval::code_context`).

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use crag_eval::code_context::{print, run, CodeContextOptions};

use crate::commands::Context;

#[derive(Debug, Args)]
pub struct EvalCodeArgs {
    /// The repository: a directory of source files.
    repo: PathBuf,
    /// Functions sampled (those with at least one callee defined once in the repository).
    #[arg(long, default_value_t = 40)]
    samples: usize,
    /// Seed of the sample.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Results of the first retrieval.
    #[arg(long, default_value_t = 5)]
    top_k: usize,
    /// Where the two indexes (syntax-aware chunks, token windows) are built; emptied first.
    /// Default: <data-dir>/eval-code.
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

pub async fn eval_code(ctx: &Context, args: EvalCodeArgs) -> Result<()> {
    let options = CodeContextOptions {
        repo: args.repo,
        samples: args.samples,
        seed: args.seed,
        top_k: args.top_k,
        work_dir: args
            .work_dir
            .unwrap_or_else(|| ctx.config.data_dir.join("eval-code")),
    };
    let report = run(&ctx.config, &options).await?;
    print(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
