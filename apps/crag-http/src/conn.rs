//! The accept loop: `axum::serve`'s behaviour plus a bound on how long a client may take to
//! send its request headers.
//!
//! `axum::serve` gives hyper no timer, so hyper's `header_read_timeout` never takes effect and
//! a client trickling its headers (slow loris) keeps its connection for as long as it likes.
//! Here every connection is served by hyper-util's builder with a Tokio timer and
//! `server.header_read_timeout_ms`; past it hyper closes the connection. Request bodies are
//! bounded by the per-request deadline (`server.request_timeout_ms`) instead. With TLS
//! configured, each connection's handshake runs in its own task, bounded by the same timeout.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// Pause after a failed `accept` (e.g. too many open files) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How each connection is served.
#[derive(Clone)]
pub struct ConnectionOptions {
    /// How long a client may take to send its request headers (`server.header_read_timeout_ms`);
    /// with TLS, the handshake has as long again.
    pub header_timeout: Duration,
    /// TLS (`server.tls_cert_path`), offering HTTP/2 and HTTP/1.1 by ALPN; `None` serves
    /// plain TCP.
    pub tls: Option<TlsAcceptor>,
}

impl std::fmt::Debug for ConnectionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionOptions")
            .field("header_timeout", &self.header_timeout)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

/// Serves `router` on `listener` until `signal` resolves, then stops accepting, asks every
/// open connection to finish its in-flight request and close, and returns once all have.
pub(crate) async fn serve_connections(
    listener: TcpListener,
    router: Router,
    options: ConnectionOptions,
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
        let close_rx = close_rx.clone();
        let options = options.clone();
        tokio::spawn(async move {
            let Some(acceptor) = options.tls else {
                return serve_one(stream, service, options.header_timeout, close_rx).await;
            };
            match tokio::time::timeout(options.header_timeout, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    serve_one(stream, service, options.header_timeout, close_rx).await
                }
                Ok(Err(error)) => tracing::debug!(%error, "TLS handshake failed"),
                Err(_) => tracing::debug!("TLS handshake not completed in time"),
            }
        });
    }
    drop(listener);
    drop(close_rx);
    let _ = close_tx.send(true);
    close_tx.closed().await;
    Ok(())
}

/// Serves one connection until it ends, or until the server closes (then gracefully).
async fn serve_one<IO>(
    io: IO,
    service: TowerToHyperService<Router>,
    header_timeout: Duration,
    mut close_rx: watch::Receiver<bool>,
) where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout);
    let mut connection = pin!(builder.serve_connection_with_upgrades(TokioIo::new(io), service));
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
}
