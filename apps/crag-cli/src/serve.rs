//! `crag serve`: the HTTP and gRPC APIs over one engine, until SIGTERM / Ctrl-C.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use tokio::sync::watch;

use crate::commands::Context;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// HTTP listening address (overrides server.http_addr).
    #[arg(long)]
    http_addr: Option<SocketAddr>,
    /// gRPC listening address (overrides server.grpc_addr).
    #[arg(long)]
    grpc_addr: Option<SocketAddr>,
}

pub async fn serve(ctx: &Context, args: ServeArgs) -> Result<()> {
    let mut config = ctx.base.clone();
    if let Some(addr) = args.http_addr {
        config.server.http_addr = addr;
    }
    if let Some(addr) = args.grpc_addr {
        config.server.grpc_addr = addr;
    }
    config.validate()?;
    let reload = crag_app::TokenReload::start(&config, ctx.config_path.clone()).await?;
    let tokens = reload.tokens();
    if !tokens.is_enabled() {
        tracing::warn!(
            "no [auth] tokens configured: the APIs are open to anyone who can reach them"
        );
    }
    let engine = crag_app::compose::engine(&config).await?;
    let _sweeper = crag_app::compose::spawn_session_sweeper(&config, &engine);
    let grace = Duration::from_millis(config.server.shutdown_grace_ms);
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(async move {
        crag_app::shutdown_signal().await;
        let _ = stop.send(true);
    });
    let signal = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    // One API for both transports: one registry of collections (a collection's indexes are
    // opened once), one concurrency limit, one set of tokens.
    let api = crag_app::Api::new(engine, &config, tokens);
    let _reload = reload.spawn(api.clone());
    let http = crag_http::run(
        crag_http::AppState::with_api(api.clone(), &config)?,
        config.server.http_addr,
        signal(stopped.clone()),
        grace,
    );
    let grpc = crag_grpc::run(
        crag_grpc::CragService::with_api(api, &config)?,
        config.server.grpc_addr,
        signal(stopped),
        grace,
    );
    eprintln!(
        "crag serving HTTP on {} and gRPC on {} (Ctrl-C or SIGTERM to stop)",
        config.server.http_addr, config.server.grpc_addr
    );
    tokio::try_join!(http, grpc)?;
    eprintln!("crag stopped: in-flight requests finished, every write was committed");
    Ok(())
}
