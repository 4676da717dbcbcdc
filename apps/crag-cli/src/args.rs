//! The command line: arguments, subcommands and the configuration they load.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use crag_app::Config;

use crate::{ask, calibrate, collections, commands, eval, eval_code, serve, tokens};

/// Self-correcting hybrid retrieval over your documents and code.
#[derive(Debug, Parser)]
#[command(name = "crag", version, about)]
pub(crate) struct Cli {
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
    /// The collection to act on (see `crag collections`; `crag serve` serves them all).
    #[arg(long, global = true, env = "CRAG_COLLECTION", default_value = crag_config::DEFAULT_COLLECTION)]
    pub(crate) collection: String,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Ingest a directory, a file, or a BEIR corpus.jsonl.
    Ingest(commands::IngestArgs),
    /// Retrieve, judge and correct the context for a query (Corrective RAG).
    Query(commands::QueryArgs),
    /// Answer a question with CGRAG: retrieve, name what is missing, fetch it (at most three
    /// passes), per session; an answer when [llm] is configured.
    Ask(ask::AskArgs),
    /// Show what the indexes hold.
    Stats(commands::StatsArgs),
    /// Repair what an interrupted write left between the indexes: vectors of documents the
    /// keyword catalogue does not list are deleted, vectors that do not match a catalogued
    /// document are rebuilt from its chunks.
    Reconcile(commands::ReconcileArgs),
    /// Measure retrieval quality, latency and the evaluator on a BEIR collection.
    Eval(eval::EvalArgs),
    /// Measure context completeness on a repository: callee definitions found with
    /// syntax-aware chunks and token windows, one pass and up to three gap passes.
    EvalCode(eval_code::EvalCodeArgs),
    /// Serve the HTTP and gRPC APIs over one engine (see docs/configuration.md).
    Serve(serve::ServeArgs),
    /// Serve the Model Context Protocol over stdin / stdout, for an agent that starts crag
    /// (tools: search, ask, get_chunk, get_document, find_symbol, collections, stats).
    Mcp(crate::mcp::McpArgs),
    /// Fit the calibrated relevance evaluator on a judged split and write its calibration file.
    Calibrate(calibrate::CalibrateArgs),
    /// Show the effective configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// List, create, describe and delete collections (each its own indexes and sessions).
    #[command(subcommand)]
    Collections(collections::CollectionsCommand),
    /// Make, list and revoke the scoped tokens kept in the shared Postgres database
    /// (`[auth] shared = true`; docs/deploying.md).
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
    /// Print the HTTP API's OpenAPI 3.1 document (what `GET /openapi.json` serves), for
    /// generating clients without a running server.
    Openapi,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Print the effective configuration (defaults, file, environment, flags) as TOML;
    /// auth tokens are redacted.
    Print,
    /// Print the JSON Schema of the configuration file (every key, its type, default and
    /// documentation), for editors and validators; `crag.example.toml` is made from it.
    Schema,
}

/// The context of a command: the configuration ([`load_config`]) and, with `--collection`,
/// the named collection's.
pub(crate) async fn context(cli: &Cli) -> anyhow::Result<commands::Context> {
    let base = load_config(cli)?;
    let config = crag_app::collections::collection_config(&base, &cli.collection)
        .await
        .map_err(anyhow::Error::msg)?;
    Ok(commands::Context {
        config,
        base,
        collection: cli.collection.clone(),
        config_path: cli.config.clone(),
    })
}

/// Defaults, then the file, then `CRAG_` variables, then the global flags.
pub(crate) fn load_config(cli: &Cli) -> anyhow::Result<Config> {
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
