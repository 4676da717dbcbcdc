//! The `crag` command: ingest documents, query them, show index statistics, measure and
//! calibrate.

mod args;
mod ask;
mod calibrate;
mod collection;
mod collections;
mod commands;
mod eval;
mod eval_code;
mod mcp;
mod output;
mod scale;
mod serve;
mod tokens;

use std::process::ExitCode;

use args::{context, Cli, Command, ConfigCommand};
use clap::Parser;

/// jemalloc instead of glibc's malloc: under sustained mixed load glibc's per-thread arenas
/// (tokio's workers and blocking pool, ONNX Runtime's and LanceDB's threads) kept growing: 8
/// clients for 150 s grew the heap by 155 MiB with glibc, 266 MiB with mimalloc, 56 MiB with
/// jemalloc (docs/reliability.md, "Sustained load").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    crag_app::tls::install_crypto_provider();
    let cli = Cli::parse();
    // A server logs its requests; the one-shot commands only warnings; the MCP server does not
    // log each error answer it sends (the client has it).
    let default_level = match cli.command {
        Command::Serve(_) => crag_app::SERVER_LOG_FILTER,
        Command::Mcp(_) => "warn,rmcp::service=error",
        _ => "warn",
    };
    crag_app::init_tracing(default_level);
    let result = match context(&cli).await {
        Ok(ctx) => run(cli.command, ctx).await,
        Err(err) => Err(err),
    };
    crag_app::exit_code(result)
}

async fn run(command: Command, ctx: commands::Context) -> anyhow::Result<()> {
    match command {
        Command::Ingest(args) => commands::ingest(&ctx, args).await,
        Command::Query(args) => commands::query(&ctx, args).await,
        Command::Ask(args) => ask::ask(&ctx, args).await,
        Command::Stats(args) => commands::stats(&ctx, args).await,
        Command::Reconcile(args) => commands::reconcile(&ctx, args).await,
        Command::Eval(args) => eval::eval(&ctx, args).await,
        Command::EvalCode(args) => eval_code::eval_code(&ctx, args).await,
        Command::Serve(args) => serve::serve(&ctx, args).await,
        Command::Mcp(args) => mcp::mcp(&ctx, args).await,
        Command::Calibrate(args) => calibrate::calibrate_command(&ctx, args).await,
        Command::Collections(command) => collections::collections(&ctx, command).await,
        Command::Tokens(command) => tokens::tokens(&ctx, command).await,
        Command::Config(ConfigCommand::Print) => {
            print!("{}", ctx.config.to_toml()?);
            Ok(())
        }
        Command::Config(ConfigCommand::Schema) => {
            let schema = crag_config::reference::json_schema::<crag_app::Adapters>();
            println!("{}", serde_json::to_string_pretty(&schema)?);
            Ok(())
        }
        Command::Openapi => {
            println!("{}", crag_http::openapi::document().to_pretty_json()?);
            Ok(())
        }
    }
}
