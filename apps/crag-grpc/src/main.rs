//! `crag-grpc`: the gRPC API alone. Configuration: `--config FILE` / `CRAG_CONFIG` plus
//! `CRAG_<SECTION>__<KEY>` overrides (docs/configuration.md).

use std::process::ExitCode;
use std::time::Duration;

/// jemalloc, as every crag binary: see `apps/crag-cli/src/main.rs`.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    crag_app::server_main("crag-grpc", "Serves crag's gRPC API", |config| async move {
        // Tokens stored in Postgres (`[auth] shared`) are read again; the file is not, on
        // SIGHUP, as `crag serve` does: this binary does not keep its path.
        let reload = crag_app::TokenReload::start(&config, None).await?;
        let engine = crag_app::compose::engine(&config).await?;
        let _sweeper = crag_app::compose::spawn_session_sweeper(&config, &engine);
        let api = crag_app::Api::new(engine, &config, reload.tokens());
        let _reload = reload.without_hangups().spawn(api.clone());
        let service = crag_grpc::CragService::with_api(api, &config)?;
        let grace = Duration::from_millis(config.server.shutdown_grace_ms);
        let signal = crag_app::shutdown_signal();
        crag_grpc::run(service, config.server.grpc_addr, signal, grace).await
    })
    .await
}
