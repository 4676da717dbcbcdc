//! The `crag` command: ingest documents, query them, show index statistics, measure and
//! calibrate.

mod calibrate;
mod collection;
mod commands;
mod eval;
mod output;
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use crag_config::Config;

/// Self-correcting hybrid retrieval over your documents and code.
#[derive(Debug, Parser)]
#[command(name = "crag", version, about)]
struct Cli {
    /// Data directory holding the indexes (overrides `data_dir` / `CRAG_DATA_DIR`; default .crag).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// Vector store URI, a directory or an object-store URI (overrides `vectors_uri`);
    /// default: <data-dir>/vectors.
    #[arg(long, global = true)]
    vectors_uri: Option<String>,
    /// Configuration file (TOML; see docs/configuration.md); default: built-in defaults.
    /// `CRAG_<SECTION>__<KEY>` environment variables override it.
    #[arg(long, global = true, env = "CRAG_CONFIG")]
    config: Option<PathBuf>,
    /// Directory of the model and runtime assets (overrides `assets_dir`);
    /// default: ~/.cache/crag/assets.
    #[arg(long, global = true)]
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
    /// Serve the HTTP and gRPC APIs over one engine (see docs/configuration.md).
    Serve(serve::ServeArgs),
    /// Fit the calibrated relevance evaluator on a judged split and write its calibration file.
    Calibrate(calibrate::CalibrateArgs),
    /// Show the effective configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print the effective configuration (defaults, file, environment, flags) as TOML;
    /// auth tokens are redacted.
    Print,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server logs its requests; the one-shot commands only warnings.
    let default_level = if matches!(cli.command, Command::Serve(_)) {
        crag_config::SERVER_LOG_FILTER
    } else {
        "warn"
    };
    crag_config::init_tracing(default_level);
    let result = match load_config(&cli) {
        Ok(config) => run(cli.command, commands::Context { config }).await,
        Err(err) => Err(err),
    };
    crag_config::exit_code(result)
}

/// Defaults, then the file, then `CRAG_` variables, then the global flags.
fn load_config(cli: &Cli) -> anyhow::Result<Config> {
    let mut config = Config::load(cli.config.as_deref(), std::env::vars())?;
    if let Some(dir) = &cli.data_dir {
        config.data_dir = dir.clone();
    }
    if let Some(uri) = &cli.vectors_uri {
        config.vectors_uri = Some(uri.clone());
    }
    if let Some(dir) = &cli.assets_dir {
        config.assets_dir = Some(dir.clone());
    }
    config.validate()?;
    Ok(config)
}

async fn run(command: Command, ctx: commands::Context) -> anyhow::Result<()> {
    match command {
        Command::Ingest(args) => commands::ingest(&ctx, args).await,
        Command::Query(args) => commands::query(&ctx, args).await,
        Command::Stats(args) => commands::stats(&ctx, args).await,
        Command::Eval(args) => eval::eval(&ctx, args).await,
        Command::Serve(args) => serve::serve(&ctx, args).await,
        Command::Calibrate(args) => calibrate::calibrate_command(&ctx, args).await,
        Command::Config(ConfigCommand::Print) => {
            print!("{}", ctx.config.to_toml()?);
            Ok(())
        }
    }
}
