//! TLS on the HTTP API (`server.tls_cert_path`, `server.tls_key_path`) with a certificate
//! generated for the test: HTTPS answers with the configured certificate, plain HTTP on the
//! same port gets no answer, and a client that opens a connection and never starts the
//! handshake is disconnected after `server.header_read_timeout_ms`.

mod support;
#[path = "../../../tests/support/tls.rs"]
mod tls;

use std::time::Duration;

use serde_json::json;

#[tokio::test]
async fn https_serves_the_configured_certificate_and_refuses_plain_http() {
    let dir = tempfile::tempdir().unwrap();
    let (pem, cert, key) = tls::certificate(dir.path());
    let server = support::start(|c| tls::configure(c, &cert, &key)).await;
    let base = format!("https://localhost:{}", server.addr.port());
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(pem.as_bytes()).unwrap())
        .resolve("localhost", server.addr)
        .build()
        .unwrap();

    let health = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.json::<serde_json::Value>().await.unwrap()["status"],
        "ok"
    );
    let (status, body) = support::post(
        &client,
        &base,
        "/v1/documents",
        json!({"documents": [{"id": "a.md", "text": "Transport layer security wraps the API."}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["documentsAdded"], 1, "{body}");
    let (status, body) = support::post(
        &client,
        &base,
        "/v1/query",
        json!({"query": "transport layer security", "useWebSearch": false}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["documentId"], "a.md", "{body}");

    // A client that does not trust the certificate is refused by its own check.
    let untrusting = reqwest::Client::builder()
        .resolve("localhost", server.addr)
        .build()
        .unwrap();
    let refused = untrusting.get(format!("{base}/healthz")).send().await;
    assert!(
        refused.is_err(),
        "an unknown certificate must not be accepted"
    );

    // Plain HTTP on the TLS port gets no HTTP answer.
    let plain = reqwest::Client::new()
        .get(format!("http://{}/healthz", server.addr))
        .send()
        .await;
    assert!(
        plain.is_err(),
        "plain HTTP answered on the TLS port: {plain:?}"
    );
}

#[tokio::test]
async fn a_client_that_never_starts_the_handshake_is_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = tls::certificate(dir.path());
    let server = support::start(|c| tls::configure(c, &cert, &key)).await;
    tls::stalled_handshakes_are_closed(server.addr, Duration::from_millis(1000)).await;
}
