//! What the TLS tests of both APIs share: a generated certificate, and the check that a
//! client stalling in the handshake is disconnected.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A self-signed certificate for `localhost` (rcgen) written into `dir`: its PEM, and the
/// certificate and key files to configure.
pub fn certificate(dir: &Path) -> (String, PathBuf, PathBuf) {
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.signing_key.serialize_pem()).unwrap();
    (generated.cert.pem(), cert, key)
}

/// Connects to `addr` twice, sending nothing and then the first 3 bytes of a ClientHello,
/// and checks the server closes each connection without an answer once `timeout` has passed.
pub async fn stalled_handshakes_are_closed(addr: SocketAddr, timeout: Duration) {
    for sent in [&b""[..], &[0x16, 0x03, 0x01][..]] {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(sent).await.unwrap();
        let started = Instant::now();
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(timeout * 10, stream.read(&mut buf))
            .await
            .expect("the server must close a stalled handshake");
        let waited = started.elapsed();
        println!(
            "{} bytes of handshake sent: closed after {waited:.2?} ({read:?})",
            sent.len()
        );
        assert!(
            matches!(read, Ok(0) | Err(_)),
            "closed without an answer: {read:?}"
        );
        assert!(waited >= timeout * 9 / 10, "closed too early: {waited:?}");
    }
}

/// Configures TLS with `cert` and `key`, and a 1-second handshake timeout.
pub fn configure(config: &mut crag_app::Config, cert: &Path, key: &Path) {
    config.server.tls_cert_path = cert.to_owned();
    config.server.tls_key_path = key.to_owned();
    config.server.header_read_timeout_ms = 1000;
}
