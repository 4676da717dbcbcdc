//! What the tests of the `crag` binary share.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Runs `crag --data-dir DATA ARGS...` to its end.
pub fn crag(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_crag"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CRAG_VECTORS_URI")
        .output()
        .expect("run crag")
}

pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn stdout_json(out: &Output) -> serde_json::Value {
    assert_success(out);
    serde_json::from_slice(&out.stdout).expect("json on stdout")
}

/// The S3-compatible server of the object-store tests: `CRAG_TEST_S3_URL`, or moto started by
/// `scripts/s3-server.sh` (the test script starts it once).
pub fn s3_endpoint() -> String {
    if let Ok(url) = std::env::var("CRAG_TEST_S3_URL") {
        return url;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/s3-server.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("start")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "no S3-compatible server: set CRAG_TEST_S3_URL or let {} start moto ({})",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("the script prints a URL")
        .to_owned()
}

/// `GET` or `POST` on the served API: the status and the body.
pub fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    http_as(addr, None, method, path, body)
}

/// [`http`] with `Authorization: Bearer <token>` when a token is given.
pub fn http_as(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect to crag serve");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         {}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n")),
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read answer");
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"));
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// A `crag serve` process, killed when dropped.
pub struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
}

/// Starts `crag serve` with `command` on free ports, and waits until it is ready.
pub fn serve(command: &mut Command) -> (Served, SocketAddr) {
    let (http_addr, grpc_addr) = (free_port(), free_port());
    let served = Served(
        command
            .args([
                "serve",
                "--http-addr",
                &http_addr.to_string(),
                "--grpc-addr",
                &grpc_addr.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn crag serve"),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while TcpStream::connect(http_addr).is_err() {
        assert!(Instant::now() < deadline, "crag serve did not listen");
        thread::sleep(Duration::from_millis(100));
    }
    wait_ready(http_addr, 200);
    (served, http_addr)
}

/// Polls `/readyz` until it answers `want` (or fails after a minute).
pub fn wait_ready(addr: SocketAddr, want: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = http(addr, "GET", "/readyz", "");
        if status == want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "/readyz stayed {status} ({body}), wanted {want}"
        );
        thread::sleep(Duration::from_millis(250));
    }
}
