//! `crag-grpc`: the gRPC API alone. Configuration: `--config FILE` / `CRAG_CONFIG` plus
//! `CRAG_<SECTION>__<KEY>` overrides (docs/configuration.md).

use std::process::ExitCode;
use std::time::Duration;

use crag_config::Config;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CRAG_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,lance=warn,lancedb=warn")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut path = std::env::var_os("CRAG_CONFIG").map(std::path::PathBuf::from);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => {
                path = Some(
                    args.next()
                        .ok_or_else(|| anyhow::anyhow!("--config needs a file"))?
                        .into(),
                )
            }
            "-h" | "--help" => {
                println!("usage: crag-grpc [--config FILE]\n\nServes crag's gRPC API; see docs/configuration.md.");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument `{other}` (usage: crag-grpc [--config FILE])"),
        }
    }
    let config = Config::load(path.as_deref(), std::env::vars())?;
    let tokens = config.token_set()?;
    let engine = config.engine().await?;
    crag_grpc::run(
        crag_grpc::CragService::new(engine, &config),
        tokens,
        config.server.grpc_addr,
        crag_config::shutdown_signal(),
        Duration::from_millis(config.server.shutdown_grace_ms),
    )
    .await
}
