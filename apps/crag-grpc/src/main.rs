//! `crag-grpc`: the gRPC API alone. Configuration: `--config FILE` / `CRAG_CONFIG` plus
//! `CRAG_<SECTION>__<KEY>` overrides (docs/configuration.md).

use std::process::ExitCode;
use std::time::Duration;

#[tokio::main]
async fn main() -> ExitCode {
    crag_config::init_tracing(crag_config::SERVER_LOG_FILTER);
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    let Some(config) = crag_config::config_from_args(
        "crag-grpc",
        "Serves crag's gRPC API",
        std::env::args().skip(1),
    )?
    else {
        return Ok(());
    };
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
