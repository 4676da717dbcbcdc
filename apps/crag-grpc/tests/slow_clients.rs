//! Clients that connect to the gRPC port and stall. tonic has no HTTP/2 handshake timeout
//! (and hyper defers a graceful close until the handshake is done), so crag fails a
//! connection whose preface has not arrived within `server.header_read_timeout_ms`, and
//! closes established connections gracefully at `server.grpc_max_connection_age_ms`. Both
//! are 1 s here: a stalled connection must be closed by the server well within 10 s
//! (without these bounds it stays open for ever), and real clients keep being served.

use std::time::{Duration, Instant};

use crag_grpc::pb::StatsRequest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod support;
use support::server;

/// The HTTP/2 connection preface a client must send first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[tokio::test]
async fn connections_that_stall_in_the_handshake_are_closed() {
    let s = server(
        |c| {
            c.server.header_read_timeout_ms = 1_000;
            c.server.grpc_max_connection_age_ms = 1_000;
        },
        &[],
    )
    .await;
    let stalls: [(&str, &[u8]); 3] = [
        ("nothing sent", b""),
        ("half the preface", &PREFACE[..12]),
        ("the preface without SETTINGS", PREFACE),
    ];
    for (what, sent) in stalls {
        let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
        tcp.write_all(sent).await.unwrap();
        let started = Instant::now();
        let mut buf = vec![0_u8; 4096];
        let closed = tokio::time::timeout(Duration::from_secs(10), async {
            // Whatever the server writes (SETTINGS, GOAWAY) is read until it closes.
            while let Ok(n) = tcp.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
        assert!(
            closed.is_ok(),
            "{what}: the connection is still open after 10 s"
        );
        println!(
            "{what}: closed by the server after {:.2} s",
            started.elapsed().as_secs_f64()
        );
    }

    // Real clients are served before and after the stalled ones were cut off.
    let mut client = s.client().await;
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.documents, 0);
    s.shutdown().await;
}

/// Reads whatever the server writes until it closes the connection; `None` if it is still
/// open after 10 s. Returns the time it took and the bytes read.
async fn until_closed(tcp: &mut tokio::net::TcpStream) -> Option<(Duration, usize)> {
    let started = Instant::now();
    let mut buf = vec![0_u8; 4096];
    let mut total = 0;
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(n) = tcp.read(&mut buf).await {
            if n == 0 {
                break;
            }
            total += n;
        }
    })
    .await
    .ok()
    .map(|()| (started.elapsed(), total))
}

#[tokio::test]
async fn a_client_silent_after_the_handshake_is_dropped_by_keepalive() {
    let s = server(
        |c| {
            c.server.grpc_keepalive_interval_ms = 500;
            c.server.grpc_keepalive_timeout_ms = 500;
        },
        &[],
    )
    .await;
    // The preface and an empty SETTINGS frame complete the client's side of the handshake;
    // then it never writes again (no SETTINGS ACK, no PING ACK).
    let mut tcp = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    tcp.write_all(PREFACE).await.unwrap();
    tcp.write_all(&[0, 0, 0, 0x4, 0, 0, 0, 0, 0]).await.unwrap();
    let (waited, read) = until_closed(&mut tcp)
        .await
        .expect("the silent connection is still open after 10 s");
    println!(
        "silent after the handshake: {read} bytes from the server, closed after {:.2} s",
        waited.as_secs_f64()
    );
    assert!(read > 0, "the server answered the handshake");
    assert!(
        waited >= Duration::from_millis(900),
        "closed before a ping could go unanswered: {waited:?}"
    );

    // A real client, which answers pings, outlives several keep-alive rounds.
    let mut client = s.client().await;
    for _ in 0..3 {
        client.stats(StatsRequest {}).await.unwrap();
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    client.stats(StatsRequest {}).await.unwrap();
    s.shutdown().await;
}
