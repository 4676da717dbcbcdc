//! What the server binaries share: logging, the configuration of a thin binary, the shutdown
//! signal and draining with a grace period.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::time::Duration;

use crag_config::error_chain;

use crate::compose::error::bail;
use crate::compose::{BoxError, ComposeError, Context as _, Result};
use crate::Config;

/// Default log filter of the servers: requests at info, LanceDB's per-query plans hidden.
pub const SERVER_LOG_FILTER: &str = "info,lance=warn,lancedb=warn";

/// Logs to stderr, filtered by `CRAG_LOG` (tracing `EnvFilter` syntax) or `default`.
pub fn init_tracing(default: &str) {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CRAG_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default)),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// The configuration of a thin server binary: `--config FILE` (or `CRAG_CONFIG`) plus the
/// environment; `None` after printing `--help`.
pub fn config_from_args(
    binary: &str,
    about: &str,
    args: impl IntoIterator<Item = String>,
) -> Result<Option<Config>> {
    let usage = format!("usage: {binary} [--config FILE]");
    let mut args = args.into_iter();
    let mut path = std::env::var_os("CRAG_CONFIG").map(PathBuf::from);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--config" => path = Some(args.next().context("--config needs a file")?.into()),
            "-h" | "--help" => {
                println!("{usage}\n\n{about}; see docs/configuration.md.");
                return Ok(None);
            }
            other => bail!("unknown argument `{other}` ({usage})"),
        }
    }
    Ok(Config::load(path.as_deref(), std::env::vars()).map(Some)?)
}

/// The whole `main` of a thin server binary: logging, the configuration from the command line
/// ([`config_from_args`]), then `serve`; any error is printed and turns into a failure exit code.
pub async fn server_main<F, Fut, E>(binary: &str, about: &str, serve: F) -> ExitCode
where
    F: FnOnce(Config) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Into<BoxError>,
{
    init_tracing(SERVER_LOG_FILTER);
    crate::tls::install_crypto_provider();
    let result = match config_from_args(binary, about, std::env::args().skip(1)) {
        Ok(Some(config)) => serve(config).await.map_err(Into::into),
        Ok(None) => Ok(()),
        Err(err) => Err(err.into()),
    };
    exit_code(result)
}

/// The exit code of a binary's outcome; an error is printed to stderr followed by its causes
/// ([`error_chain`]).
pub fn exit_code<E: Into<BoxError>>(result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let err: BoxError = err.into();
            eprintln!("error: {}", error_chain(&*err));
            ExitCode::FAILURE
        }
    }
}

/// Binds `addr`, the value of the configuration key `key`, for the server named `what`; the
/// error names the key.
pub async fn bind(addr: SocketAddr, key: &str, what: &str) -> Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} ({key})"))?;
    tracing::info!(%addr, "{what} API listening");
    Ok(listener)
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}

/// A shutdown future handed to a server.
pub type ShutdownFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs the server that `start` builds around its shutdown future: that future resolves when
/// `shutdown` does, the server then stops accepting and drains; in-flight work gets at most
/// `grace`, after which the server is dropped. `what` names the server in the log.
pub async fn serve_gracefully<F, E>(
    start: impl FnOnce(ShutdownFuture) -> F,
    shutdown: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    what: &str,
) -> Result<()>
where
    F: Future<Output = std::result::Result<(), E>>,
    E: Into<BoxError>,
{
    let (began_tx, began_rx) = tokio::sync::oneshot::channel::<()>();
    let server = start(Box::pin(async move {
        shutdown.await;
        let _ = began_tx.send(());
    }));
    let deadline = async move {
        if began_rx.await.is_ok() {
            tokio::time::sleep(grace).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        r = server => r.map_err(ComposeError::other),
        () = deadline => {
            tracing::warn!(grace_ms = grace.as_millis() as u64, "{what}: requests still running after the grace period; stopping");
            Ok(())
        }
    }
}
