//! The accept loop: `axum::serve`'s behaviour plus a bound on how long a client may take to
//! send its request headers.
//!
//! `axum::serve` gives hyper no timer, so hyper's `header_read_timeout` never takes effect and
//! a client trickling its headers (slow loris) keeps its connection for as long as it likes.
//! Here every connection is served by hyper-util's builder with a Tokio timer and
//! `server.header_read_timeout_ms`; past it hyper closes the connection. Request bodies are
//! bounded by the per-request deadline (`server.request_timeout_ms`) instead.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Pause after a failed `accept` (e.g. too many open files) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Serves `router` on `listener` until `signal` resolves, then stops accepting, asks every
/// open connection to finish its in-flight request and close, and returns once all have.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    signal: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    // Every connection holds a receiver; `closed()` resolves once all are dropped.
    let (close_tx, close_rx) = watch::channel(false);
    let mut signal = pin!(signal);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "failed to accept an HTTP connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let mut close_rx = close_rx.clone();
        tokio::spawn(async move {
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout);
            let mut connection =
                pin!(builder.serve_connection_with_upgrades(TokioIo::new(stream), service));
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "HTTP connection ended with an error");
                    }
                }
                _ = close_rx.changed() => {
                    connection.as_mut().graceful_shutdown();
                    if let Err(error) = connection.await {
                        tracing::debug!(%error, "HTTP connection ended with an error");
                    }
                }
            }
            drop(close_rx);
        });
    }
    drop(listener);
    drop(close_rx);
    let _ = close_tx.send(true);
    close_tx.closed().await;
    Ok(())
}
