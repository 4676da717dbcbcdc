//! Bounds on a gRPC connection that tonic does not set: the time a client may take to send the
//! HTTP/2 connection preface, and the age after which a connection is closed gracefully.
//!
//! hyper defers a graceful shutdown asked during the HTTP/2 handshake until the handshake
//! completes, so a client that connects and sends nothing (or half the preface) would hold its
//! connection for ever: [`PrefaceDeadline`] fails the connection's reads once the deadline
//! passes with the preface incomplete. After the handshake, hyper's HTTP/2 keep-alive pings
//! (see [`crate::serve`]) drop a peer that stops answering.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Bytes a client must send first: the HTTP/2 connection preface
/// (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, 24 bytes) and the 9-byte header of the SETTINGS
/// frame that must follow it (RFC 9113, section 3.4).
const PREFACE_LEN: usize = 24 + 9;

/// What bounds each connection of [`crate::serve`], and how it is secured.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// The HTTP/2 preface and the start of the client's SETTINGS must have arrived by then
    /// (`server.header_read_timeout_ms`); with TLS, the first bytes of the handshake, and the
    /// handshake must complete within as long again.
    pub preface_timeout: Duration,
    /// Connections are closed gracefully once this old (`server.grpc_max_connection_age_ms`).
    pub max_age: Duration,
    /// An idle connection is pinged after this long (`server.grpc_keepalive_interval_ms`).
    pub keepalive_interval: Duration,
    /// A ping not answered within this closes the connection
    /// (`server.grpc_keepalive_timeout_ms`).
    pub keepalive_timeout: Duration,
    /// TLS (`server.tls_cert_path`); `None` serves plain TCP (h2c).
    pub tls: Option<crag_app::TlsIdentity>,
}

/// A connection whose reads fail with [`io::ErrorKind::TimedOut`] if the first
/// [`PREFACE_LEN`] bytes have not all arrived by the deadline; afterwards a plain stream.
#[derive(Debug)]
pub struct PrefaceDeadline {
    io: TcpStream,
    awaited: usize,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl PrefaceDeadline {
    /// `io`, which must send its preface within `timeout` from now.
    pub fn new(io: TcpStream, timeout: Duration) -> Self {
        Self {
            io,
            awaited: PREFACE_LEN,
            deadline: Some(Box::pin(tokio::time::sleep(timeout))),
        }
    }
}

impl AsyncRead for PrefaceDeadline {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(deadline) = this.deadline.as_mut() {
            // Polled while waiting for the preface, so the expiry wakes the reader.
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the HTTP/2 connection preface did not arrive in time",
                )));
            }
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = read {
            this.awaited = this.awaited.saturating_sub(buf.filled().len() - before);
            if this.awaited == 0 {
                this.deadline = None;
            }
        }
        read
    }
}

impl AsyncWrite for PrefaceDeadline {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl Connected for PrefaceDeadline {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}
