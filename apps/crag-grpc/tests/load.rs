//! Sustained mixed load over gRPC (a real server on 127.0.0.1, the generated client, the real
//! embedded stack: ONNX MiniLM, Tantivy, LanceDB): 8 clients query and ingest at once for
//! `CRAG_LOAD_SECS` seconds (default 15; `scripts/soak.sh` runs it for 5 minutes), as the
//! HTTP load test does over HTTP.
//!
//! Checked: every call is OK or the documented shedding (RESOURCE_EXHAUSTED); a document is
//! found by its own word as soon as its ingest has answered; a query never returns a document
//! whose ingestion has not answered (never half-ingested); afterwards both indexes agree
//! (`reconcile` finds nothing) and hold every ingested document. Printed, not asserted:
//! latency p50/p99 per kind, calls shed, resident memory after warm-up and at the end.

use std::time::Instant;

use crag_grpc::pb::crag_client::CragClient;
use crag_grpc::pb::{Document, QueryRequest, QueryResponse};
use tonic::transport::Channel;
use tonic::Code;

mod support;
use support::server;

#[path = "../../../tests/support/load.rs"]
mod load;
use load::{drive, load_query, load_text, marker, Shared, SHED_BACKOFF};

fn document(id: &str, title: &str, text: &str) -> Document {
    Document {
        id: id.into(),
        title: title.into(),
        text: text.into(),
        ..Document::default()
    }
}

fn load_documents_in(response: &QueryResponse) -> Vec<String> {
    response
        .artifacts
        .iter()
        .map(|a| a.document_id.clone())
        .filter(|id| id.starts_with("load/"))
        .collect()
}

fn query(text: String, use_crag: bool) -> QueryRequest {
    QueryRequest {
        query: text,
        top_k: Some(5),
        use_crag: Some(use_crag),
        ..QueryRequest::default()
    }
}

async fn client_loop(id: usize, mut client: CragClient<Channel>, deadline: Instant, tally: Shared) {
    let mut n = 0;
    let mut step = 0usize;
    while Instant::now() < deadline {
        step += 1;
        if step.is_multiple_of(4) {
            // Ingest a new document, then find it by its own word at once.
            let doc_id = format!("load/{id}-{n}.md");
            let word = marker(id, n);
            n += 1;
            let started = Instant::now();
            let sent = document(&doc_id, &format!("Note {word}"), &load_text(&word));
            let answer = client.ingest(tokio_stream::iter([sent])).await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            match answer {
                Ok(r) if r.get_ref().errors.is_empty() => {
                    tally.lock().unwrap().ingest_ms.push(ms);
                    tally.lock().unwrap().ingested.insert(doc_id.clone());
                    let found = client.query(query(word, false)).await;
                    let mut t = tally.lock().unwrap();
                    match found {
                        Ok(r) => {
                            let found = load_documents_in(r.get_ref());
                            if !found.contains(&doc_id) {
                                t.errors
                                    .push(format!("{doc_id} not found right after its ingest"));
                            }
                            t.seen.extend(found);
                        }
                        Err(s) if s.code() == Code::ResourceExhausted => t.shed += 1,
                        Err(s) => t.errors.push(format!("read-back: {s:?}")),
                    }
                }
                Ok(r) => tally.lock().unwrap().errors.push(format!(
                    "ingest refused a document: {:?}",
                    r.get_ref().errors
                )),
                Err(s) if s.code() == Code::ResourceExhausted => {
                    tally.lock().unwrap().shed += 1;
                    tokio::time::sleep(SHED_BACKOFF).await;
                }
                Err(s) => tally.lock().unwrap().errors.push(format!("ingest: {s:?}")),
            }
        } else {
            let started = Instant::now();
            let answer = client.query(query(load_query(id, step, n), true)).await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let shed = {
                let mut t = tally.lock().unwrap();
                match answer {
                    Ok(r) => {
                        t.query_ms.push(ms);
                        t.seen.extend(load_documents_in(r.get_ref()));
                        false
                    }
                    Err(s) if s.code() == Code::ResourceExhausted => {
                        t.shed += 1;
                        true
                    }
                    Err(s) => {
                        t.errors.push(format!("query: {s:?}"));
                        false
                    }
                }
            };
            if shed {
                tokio::time::sleep(SHED_BACKOFF).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_grpc_clients_of_mixed_load_see_no_error_and_no_half_document() {
    // Fewer slots than clients, so shedding happens and is checked to be clean.
    let s = server(|c| c.server.max_concurrent_requests = 6, &[]).await;
    let mut client = s.client().await;
    client
        .ingest(tokio_stream::iter([
            document(
                "fixed/bread.md",
                "Bread",
                "Sourdough bread needs a starter, flour, water and salt.",
            ),
            document(
                "fixed/valves.md",
                "Valves",
                "A gate valve is sealed by turning the spindle until the wedge seats.",
            ),
        ]))
        .await
        .unwrap();

    // One connection per client, as separate processes would have.
    let mut clients = Vec::new();
    for _ in 0..load::CLIENTS {
        clients.push(s.client().await);
    }
    let mut run =
        drive(|id, deadline, tally| client_loop(id, clients[id].clone(), deadline, tally)).await;
    run.report("grpc load", &s.data_dir());
    let t = &run.tally;

    let report = s.engine.reconcile().await.unwrap();
    assert!(!report.repaired(), "the indexes drifted apart: {report:?}");
    let stats = s.engine.stats().await.unwrap();
    assert_eq!(stats.documents, t.ingested.len() + 2);
    assert_eq!(stats.keyword_chunks, stats.vector_chunks);
    s.shutdown().await;
}
