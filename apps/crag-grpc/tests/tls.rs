//! TLS on the gRPC API (`server.tls_cert_path`, `server.tls_key_path`) with a certificate
//! generated for the test: calls succeed over TLS with the configured certificate, a plaintext
//! (h2c) client gets nothing, and a client that connects and never completes the handshake is
//! disconnected after `server.header_read_timeout_ms`.

mod support;
#[path = "../../../tests/support/tls.rs"]
mod tls;

use std::time::Duration;

use crag_grpc::pb::crag_client::CragClient;
use crag_grpc::pb::{Document, StatsRequest};
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

#[tokio::test]
async fn calls_succeed_over_tls_and_plaintext_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (pem, cert, key) = tls::certificate(dir.path());
    let s = support::server(|c| tls::configure(c, &cert, &key), &[]).await;
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(&pem))
        .domain_name("localhost");
    let channel = Channel::from_shared(format!("https://{}", s.addr))
        .unwrap()
        .tls_config(tls)
        .unwrap()
        .connect()
        .await
        .expect("a TLS connection with the configured certificate");
    let mut client = CragClient::new(channel);
    let document = Document {
        id: "a.md".into(),
        text: "Transport layer security wraps the API.".into(),
        ..Document::default()
    };
    let ingested = client
        .ingest(tokio_stream::iter([document]))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(ingested.documents_added, 1, "{ingested:?}");
    let stats = client.stats(StatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.documents, 1);

    // A plaintext HTTP/2 client on the TLS port gets no connection.
    let plain = tokio::time::timeout(
        Duration::from_secs(10),
        Channel::from_shared(format!("http://{}", s.addr))
            .unwrap()
            .connect(),
    )
    .await
    .expect("the plaintext attempt must end");
    match plain {
        Err(_) => {}
        Ok(channel) => {
            let answer = CragClient::new(channel).stats(StatsRequest {}).await;
            assert!(
                answer.is_err(),
                "plaintext answered on the TLS port: {answer:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_client_that_never_completes_the_handshake_is_disconnected() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = tls::certificate(dir.path());
    let s = support::server(|c| tls::configure(c, &cert, &key), &[]).await;
    tls::stalled_handshakes_are_closed(s.addr, Duration::from_millis(1000)).await;
}
