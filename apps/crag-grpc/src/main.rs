//! `crag-grpc`: the gRPC API alone. Configuration: `--config FILE` / `CRAG_CONFIG` plus
//! `CRAG_<SECTION>__<KEY>` overrides (docs/configuration.md).

use std::process::ExitCode;
use std::time::Duration;

#[tokio::main]
async fn main() -> ExitCode {
    crag_config::server_main("crag-grpc", "Serves crag's gRPC API", |config| async move {
        let tokens = config.token_set()?;
        let service = crag_grpc::CragService::new(config.engine().await?, &config)?;
        let grace = Duration::from_millis(config.server.shutdown_grace_ms);
        let signal = crag_config::shutdown_signal();
        crag_grpc::run(service, tokens, config.server.grpc_addr, signal, grace).await
    })
    .await
}
