//! The `crag` command: ingest documents, query them, show index statistics.

mod commands;
mod config;
mod eval;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Self-correcting hybrid retrieval over your documents and code.
#[derive(Debug, Parser)]
#[command(name = "crag", version, about)]
struct Cli {
    /// Data directory holding the indexes.
    #[arg(long, global = true, env = "CRAG_DATA_DIR", default_value = ".crag")]
    data_dir: PathBuf,
    /// Vector store URI (a directory or an object-store URI); default: <data-dir>/vectors.
    #[arg(long, global = true, env = "CRAG_VECTORS_URI")]
    vectors_uri: Option<String>,
    /// Configuration file (TOML; see docs/crag.md); default: built-in defaults.
    #[arg(long, global = true, env = "CRAG_CONFIG")]
    config: Option<PathBuf>,
    /// Directory of the model and runtime assets; default: ~/.cache/crag/assets.
    #[arg(long, global = true, env = "CRAG_ASSETS_DIR")]
    assets_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ingest a directory, a file, or a BEIR corpus.jsonl.
    Ingest(commands::IngestArgs),
    /// Retrieve, judge and correct the context for a query (Corrective RAG).
    Query(commands::QueryArgs),
    /// Show what the indexes hold.
    Stats(commands::StatsArgs),
    /// Measure retrieval quality, latency and the evaluator on a BEIR collection.
    Eval(eval::EvalArgs),
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CRAG_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let ctx = commands::Context {
        data_dir: cli.data_dir,
        config: cli.config,
        vectors_uri: cli.vectors_uri,
        assets_dir: cli.assets_dir,
    };
    let result = match cli.command {
        Command::Ingest(args) => commands::ingest(&ctx, args).await,
        Command::Query(args) => commands::query(&ctx, args).await,
        Command::Stats(args) => commands::stats(&ctx, args).await,
        Command::Eval(args) => eval::eval(&ctx, args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
