//! Slow clients over a real socket: a trickled body meets the request deadline, trickled
//! headers meet the header timeout, and the server serves on.

use std::time::{Duration, Instant};

use serde_json::json;

mod support;
use support::{post, start, TOKEN};

/// A client that sends its headers and then trickles its body (slow loris on the body) gets
/// the deadline's 504 once `server.request_timeout_ms` has passed; the slot it held is free
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_body_is_cut_off_by_the_request_deadline() {
    let running = start(|c| {
        c.server.request_timeout_ms = 1_000;
        c.server.max_concurrent_requests = 1;
    })
    .await;
    let addr = running.addr;

    // A blocking client on its own thread: headers, then a byte now and then, never the
    // whole body; then it waits for the answer.
    let answer = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut socket = std::net::TcpStream::connect(addr).unwrap();
        let head = format!(
            "POST /v1/query HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {TOKEN}\r\n\
             content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"query\": \"sou"
        );
        socket.write_all(head.as_bytes()).unwrap();
        for _ in 0..5 {
            std::thread::sleep(Duration::from_millis(500));
            if socket.write_all(b"r").is_err() {
                break;
            }
        }
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut answer = vec![0u8; 4096];
        let n = socket
            .read(&mut answer)
            .expect("the server answers within the deadline and some slack");
        String::from_utf8_lossy(&answer[..n]).into_owned()
    })
    .await
    .unwrap();
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
    assert!(answer.contains("deadline_exceeded"), "{answer}");

    // The one slot is free again: a normal request is served.
    let http = reqwest::Client::new();
    let (status, body) = post(
        &http,
        &format!("http://{addr}"),
        "/v1/query",
        json!({"query": "sourdough", "topK": 1, "useCrag": false}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    running.server.abort();
}

/// A client that trickles its request headers (slow loris) is disconnected once
/// `server.header_read_timeout_ms` has passed, and the server goes on serving others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trickled_headers_are_cut_off_by_the_header_timeout() {
    let running = start(|c| c.server.header_read_timeout_ms = 1_000).await;
    let addr = running.addr;

    // A header byte every 250 ms, for at most 20 s, until the server hangs up.
    let outcome = tokio::task::spawn_blocking(move || {
        use std::io::{ErrorKind, Read, Write};
        let mut socket = std::net::TcpStream::connect(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(250)))
            .unwrap();
        let started = Instant::now();
        let _ = socket
            .write_all(format!("POST /v1/query HTTP/1.1\r\nhost: {addr}\r\nx-slow: ").as_bytes());
        let mut buffer = [0u8; 1024];
        while started.elapsed() < Duration::from_secs(20) {
            match socket.read(&mut buffer) {
                Ok(n) => {
                    return Some((
                        started.elapsed(),
                        String::from_utf8_lossy(&buffer[..n]).into_owned(),
                    ));
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => return Some((started.elapsed(), e.to_string())),
            }
            if socket.write_all(b"a").is_err() {
                return Some((started.elapsed(), "write refused".to_owned()));
            }
        }
        None
    })
    .await
    .unwrap();
    let (after, answer) =
        outcome.expect("the server never hung up on a client trickling its headers");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408") || !answer.starts_with("HTTP"),
        "{answer}"
    );
    assert!(
        after >= Duration::from_millis(900),
        "hung up after {after:?}, before the timeout"
    );
    println!("slow headers: disconnected after {after:?} ({answer:?})");

    let http = reqwest::Client::new();
    let (status, body) = post(
        &http,
        &format!("http://{addr}"),
        "/v1/query",
        json!({"query": "sourdough", "topK": 1, "useCrag": false}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    running.server.abort();
}
