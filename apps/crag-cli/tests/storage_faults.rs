//! `crag serve` with both legs in an S3-compatible object store (moto, `scripts/s3-server.sh`;
//! `CRAG_TEST_S3_URL` names a running one) reached through a proxy the test switches off:
//! while the store is unreachable `/readyz` answers 503 with a reason and a query fails with
//! a clear error; once it is back both recover, with nothing lost and no restart. The same
//! with the sessions' Postgres behind the proxy: queries go on being served while it is
//! unreachable, requests naming a session fail with a clear error, and the sessions are
//! there again once it is back.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod support;
use support::{http, s3_endpoint, serve, wait_ready};

/// Where a proxy forwards to: a TCP address or a unix socket (the test Postgres cluster's).
#[derive(Clone)]
enum Upstream {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// A connection either side of the proxy.
trait Stream: Read + Write + Send + Sized + 'static {
    fn duplicate(&self) -> Self;
    fn read_timeout(&self, timeout: Duration);
    fn close(&self);
}

/// Both kinds of stream clone, time out and shut down the same way.
macro_rules! stream {
    ($($kind:ty),*) => {$(
        impl Stream for $kind {
            fn duplicate(&self) -> Self {
                self.try_clone().expect("clone")
            }
            fn read_timeout(&self, timeout: Duration) {
                self.set_read_timeout(Some(timeout)).ok();
            }
            fn close(&self) {
                let _ = self.shutdown(Shutdown::Both);
            }
        }
    )*};
}
stream!(TcpStream, UnixStream);

/// A TCP proxy to `upstream` that refuses connections while switched off.
struct Proxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
}

impl Proxy {
    fn start(upstream: Upstream) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let up = Arc::new(AtomicBool::new(true));
        let on = up.clone();
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !on.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                match &upstream {
                    Upstream::Tcp(addr) => {
                        let Ok(server) = TcpStream::connect(addr) else {
                            continue;
                        };
                        pipe(&client, &server, on.clone());
                        pipe(&server, &client, on.clone());
                    }
                    Upstream::Unix(path) => {
                        let Ok(server) = UnixStream::connect(path) else {
                            continue;
                        };
                        pipe(&client, &server, on.clone());
                        pipe(&server, &client, on.clone());
                    }
                }
            }
        });
        Self { addr, up }
    }
}

/// Copies `from` to `to` on a thread until either closes or the proxy is switched off.
fn pipe<A: Stream, B: Stream>(from: &A, to: &B, on: Arc<AtomicBool>) {
    let (mut from, mut to) = (from.duplicate(), to.duplicate());
    from.read_timeout(Duration::from_millis(200));
    thread::spawn(move || {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            if !on.load(Ordering::SeqCst) {
                break;
            }
            match from.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        from.close();
        to.close();
    });
}

fn crag(data: &Path, uri: &str, endpoint: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crag"));
    command
        .arg("--data-dir")
        .arg(data)
        .arg("--vectors-uri")
        .arg(uri)
        .env("CRAG_STORAGE__ENDPOINT", endpoint)
        .env("CRAG_STORAGE__ALLOW_HTTP", "true")
        .env("CRAG_STORAGE__REGION", "us-east-1")
        .env("CRAG_STORAGE__KEYWORD", "lancedb")
        .env("CRAG_STORAGE__READ_CONSISTENCY_MS", "0")
        .env("AWS_ACCESS_KEY_ID", "crag-test")
        .env("AWS_SECRET_ACCESS_KEY", "crag-test");
    command
}

#[test]
fn an_unreachable_object_store_makes_the_service_unready_until_it_returns() {
    let upstream: SocketAddr = s3_endpoint()
        .trim_start_matches("http://")
        .parse()
        .expect("the endpoint is http://host:port");
    let proxy = Proxy::start(Upstream::Tcp(upstream));
    let store = format!("http://{}", proxy.addr);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let uri = format!("s3://crag/faults-{nanos}/db");
    let data = tempfile::tempdir().expect("tmp");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus");
    let ingest = crag(data.path(), &uri, &store)
        .arg("ingest")
        .arg(&corpus)
        .output()
        .expect("ingest");
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );

    // A query that waits on the store gives up after 5 s (HTTP 504).
    let (_served, http_addr) =
        serve(crag(data.path(), &uri, &store).env("CRAG_SERVER__REQUEST_TIMEOUT_MS", "5000"));
    let query = r#"{"query": "what causes ocean tides?", "topK": 3, "useCrag": false}"#;
    let (status, body) = http(http_addr, "POST", "/v1/query", query);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("tides.txt"), "{body}");

    proxy.up.store(false, Ordering::SeqCst);
    let reason = wait_ready(http_addr, 503);
    assert!(reason.contains("indexes"), "{reason}");
    let (status, body) = http(http_addr, "POST", "/v1/query", query);
    assert!(
        status == 503 || status == 504,
        "a query without its store: {status} {body}"
    );
    assert!(body.contains("message"), "{body}");

    proxy.up.store(true, Ordering::SeqCst);
    wait_ready(http_addr, 200);
    let (status, body) = http(http_addr, "POST", "/v1/query", query);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("tides.txt"), "{body}");
}

/// The test Postgres server as the proxy reaches it, and the URL of the same database
/// through a proxy at `proxy`.
fn postgres_behind(url: &str, proxy: impl FnOnce(Upstream) -> SocketAddr) -> String {
    let (scheme_user, rest) = url.split_once('@').expect("postgres://user@host/db");
    let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let (database, query) = tail.split_once('?').unwrap_or((tail, ""));
    let port: u16 = authority
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(5432);
    let socket_dir = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("host="))
        .filter(|dir| dir.starts_with('/'));
    let upstream = match socket_dir {
        Some(dir) => Upstream::Unix(Path::new(dir).join(format!(".s.PGSQL.{port}"))),
        None => {
            let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
            let host = if host == "localhost" {
                "127.0.0.1"
            } else {
                host
            };
            Upstream::Tcp(format!("{host}:{port}").parse().expect("host:port"))
        }
    };
    let addr = proxy(upstream);
    format!("{scheme_user}@{addr}/{database}")
}

#[test]
fn an_unreachable_session_store_fails_sessions_only_and_loses_none() {
    let mut proxy = None;
    let url = postgres_behind(&crag_ports::testsuite::postgres_url(), |upstream| {
        let started = Proxy::start(upstream);
        let addr = started.addr;
        proxy = Some(started);
        addr
    });
    let proxy = proxy.expect("a proxy");
    let data = tempfile::tempdir().expect("tmp");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus");
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let session = format!("{nanos:032x}");
    let crag = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_crag"));
        command
            .arg("--data-dir")
            .arg(data.path())
            .env("CRAG_SESSIONS__BACKEND", "postgres")
            .env("CRAG_SESSIONS__URL", &url)
            .env("CRAG_SESSIONS__TIMEOUT_MS", "2000");
        command
    };
    let ingest = crag().arg("ingest").arg(&corpus).output().expect("ingest");
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    let (_served, http_addr) = serve(&mut crag());
    let query = r#"{"query": "what causes ocean tides?", "topK": 3, "useCrag": false}"#;
    let ask = format!(
        r#"{{"query": "what causes ocean tides?", "sessionId": "{session}", "useWebSearch": false}}"#
    );
    let (status, body) = http(http_addr, "POST", "/v1/ask", &ask);
    assert_eq!(status, 200, "{body}");

    proxy.up.store(false, Ordering::SeqCst);
    let (status, body) = http(http_addr, "POST", "/v1/query", query);
    assert_eq!(status, 200, "queries need no session store: {body}");
    assert!(body.contains("tides.txt"), "{body}");
    let (status, body) = http(http_addr, "POST", "/v1/ask", &ask);
    assert!(
        status == 503 || status == 504,
        "a session without its store: {status} {body}"
    );
    assert!(body.contains("message"), "{body}");

    proxy.up.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(60);
    let body = loop {
        let (status, body) = http(http_addr, "GET", &format!("/v1/sessions/{session}"), "");
        if status == 200 {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "the session store did not come back: {status} {body}"
        );
        thread::sleep(Duration::from_millis(250));
    };
    assert!(
        body.contains("ocean tides"),
        "the first turn is kept: {body}"
    );
    let (status, body) = http(http_addr, "POST", "/v1/ask", &ask);
    assert_eq!(status, 200, "{body}");
}
