//! Sustained mixed load over a real TCP socket against the real embedded stack (ONNX MiniLM,
//! Tantivy, LanceDB): 8 clients query and ingest at once for `CRAG_LOAD_SECS` seconds
//! (default 15; `scripts/soak.sh` runs it for 5 minutes).
//!
//! Checked: every answer is 200 or the documented shedding (503 `resource_exhausted`); a
//! document is found by its own words as soon as its ingest has answered; a query never
//! returns a document whose ingestion has not answered (never half-ingested); afterwards both
//! indexes agree (`reconcile` finds nothing) and hold every ingested document. Printed, not
//! asserted (figures belong in benchmarks): latency p50/p99 per kind, requests shed, resident
//! memory after warm-up and at the end.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod support;
use support::{post, start};

const CLIENTS: usize = 8;
/// How long a client waits after a 503 before its next request (as a client honouring
/// shedding does).
const SHED_BACKOFF: Duration = Duration::from_millis(50);

/// Unique, embeddable, BM25-findable words for document `n` of `client`.
fn marker(client: usize, n: usize) -> String {
    const SYLLABLES: [&str; 16] = [
        "ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "we", "xo", "ya", "zi", "bo", "du",
        "fe",
    ];
    let mut x = client * 10_007 + n * 31 + 7;
    let mut word = String::from("q");
    for _ in 0..6 {
        word.push_str(SYLLABLES[x % 16]);
        x /= 16;
        x += client + 3;
    }
    word
}

#[derive(Default)]
struct Tally {
    query_ms: Vec<f64>,
    ingest_ms: Vec<f64>,
    shed: usize,
    errors: Vec<String>,
    /// Load documents whose ingest answered 200.
    ingested: HashSet<String>,
    /// Load documents some query returned.
    seen: HashSet<String>,
}

/// Resident memory, KiB: the whole (`VmRSS`), anonymous (`RssAnon`: heap, stacks) and
/// file-backed (`RssFile`: mapped index files, the binary).
#[derive(Debug, Clone, Copy)]
struct Resident {
    total: u64,
    anon: u64,
    file: u64,
}

fn resident_kib() -> Option<Resident> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some(Resident {
        total: field("VmRSS:")?,
        anon: field("RssAnon:")?,
        file: field("RssFile:")?,
    })
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * (values.len() - 1) as f64).round() as usize;
    values[rank]
}

fn load_documents_in(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["documentId"].as_str())
        .filter(|id| id.starts_with("load/"))
        .map(str::to_owned)
        .collect()
}

async fn client_loop(id: usize, base: String, deadline: Instant, tally: Arc<Mutex<Tally>>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
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
            let (status, body) = post(
                &http,
                &base,
                "/v1/documents",
                json!({"documents": [{"id": doc_id, "title": format!("Note {word}"),
                    "text": format!("The {word} procedure rotates the spindle twice before sealing the valve.")}]}),
            )
            .await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            match status {
                200 => {
                    tally.lock().unwrap().ingest_ms.push(ms);
                    tally.lock().unwrap().ingested.insert(doc_id.clone());
                    let (status, body) = post(
                        &http,
                        &base,
                        "/v1/query",
                        json!({"query": word, "topK": 5, "useCrag": false}),
                    )
                    .await;
                    let mut t = tally.lock().unwrap();
                    match status {
                        200 if load_documents_in(&body).contains(&doc_id) => {}
                        200 => t
                            .errors
                            .push(format!("{doc_id} not found right after its ingest: {body}")),
                        503 => t.shed += 1,
                        other => t.errors.push(format!("read-back {other}: {body}")),
                    }
                    t.seen.extend(load_documents_in(&body));
                }
                503 => {
                    tally.lock().unwrap().shed += 1;
                    tokio::time::sleep(SHED_BACKOFF).await;
                }
                other => tally
                    .lock()
                    .unwrap()
                    .errors
                    .push(format!("ingest {other}: {body}")),
            }
        } else {
            let query = match step % 3 {
                0 => "how does the procedure seal the valve?".to_owned(),
                1 => "sourdough bread starter".to_owned(),
                _ => format!(
                    "{} spindle",
                    marker((id + 1) % CLIENTS, n.saturating_sub(1))
                ),
            };
            let started = Instant::now();
            let (status, body) = post(
                &http,
                &base,
                "/v1/query",
                json!({"query": query, "topK": 5}),
            )
            .await;
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let shed = {
                let mut t = tally.lock().unwrap();
                match status {
                    200 => {
                        t.query_ms.push(ms);
                        t.seen.extend(load_documents_in(&body));
                    }
                    503 => t.shed += 1,
                    other => t.errors.push(format!("query {other}: {body}")),
                }
                status == 503
            };
            if shed {
                tokio::time::sleep(SHED_BACKOFF).await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_clients_of_mixed_load_see_no_error_and_no_half_document() {
    let secs: u64 = std::env::var("CRAG_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    // Fewer slots than clients, so shedding happens and is checked to be clean.
    let running = start(|c| c.server.max_concurrent_requests = 6).await;
    let base = running.base();
    let engine = &running.engine;

    let http = reqwest::Client::new();
    let (status, body) = post(
        &http,
        &base,
        "/v1/documents",
        json!({"documents": [
            {"id": "fixed/bread.md", "title": "Bread",
             "text": "Sourdough bread needs a starter, flour, water and salt."},
            {"id": "fixed/valves.md", "title": "Valves",
             "text": "A gate valve is sealed by turning the spindle until the wedge seats."}]}),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    let tally = Arc::new(Mutex::new(Tally::default()));
    // Warm-up: one client for a few seconds, then the resident size is the baseline.
    client_loop(
        0,
        base.clone(),
        Instant::now() + Duration::from_secs(3),
        tally.clone(),
    )
    .await;
    let warm_kib = resident_kib();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(client_loop(id, base.clone(), deadline, tally.clone())))
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let elapsed = started.elapsed();
    let end_kib = resident_kib();

    let mut t = std::mem::take(&mut *tally.lock().unwrap());
    let requests = t.query_ms.len() + t.ingest_ms.len() + t.shed;
    // In completion order (so before the percentiles below sort them): the first and last
    // fifth of the ingests show whether ingestion slows down as the run goes on.
    let fifth = t.ingest_ms.len() / 5;
    if fifth > 0 {
        let last = t.ingest_ms.len() - fifth;
        println!(
            "load: ingest p50 {:.0} ms in the first fifth, {:.0} ms in the last",
            percentile(&mut t.ingest_ms[..fifth].to_vec(), 50.0),
            percentile(&mut t.ingest_ms[last..].to_vec(), 50.0)
        );
    }
    println!(
        "load: {CLIENTS} clients, {:.0} s, {requests} requests ({} queries, {} ingests ok, {} shed), {} errors",
        elapsed.as_secs_f64(),
        t.query_ms.len(),
        t.ingest_ms.len(),
        t.shed,
        t.errors.len()
    );
    println!(
        "load: query p50 {:.0} ms p99 {:.0} ms; ingest p50 {:.0} ms p99 {:.0} ms",
        percentile(&mut t.query_ms, 50.0),
        percentile(&mut t.query_ms, 99.0),
        percentile(&mut t.ingest_ms, 50.0),
        percentile(&mut t.ingest_ms, 99.0)
    );
    let versions = std::fs::read_dir(running.data_dir().join("vectors/chunks.lance/_versions"))
        .map(|d| d.count())
        .unwrap_or(0);
    println!("load: {versions} vector table versions on disk at the end");
    if let (Some(warm), Some(end)) = (warm_kib, end_kib) {
        println!(
            "load: resident {} MiB after warm-up, {} MiB at the end ({:+.1} %); anonymous {} -> {} MiB, file-backed {} -> {} MiB",
            warm.total / 1024,
            end.total / 1024,
            (end.total as f64 - warm.total as f64) / warm.total as f64 * 100.0,
            warm.anon / 1024,
            end.anon / 1024,
            warm.file / 1024,
            end.file / 1024
        );
    }
    assert!(
        t.errors.is_empty(),
        "errors: {:#?}",
        &t.errors[..t.errors.len().min(10)]
    );
    assert!(!t.query_ms.is_empty() && !t.ingest_ms.is_empty());
    let unexplained: Vec<&String> = t.seen.difference(&t.ingested).collect();
    assert!(
        unexplained.is_empty(),
        "queries returned documents whose ingestion never answered: {unexplained:?}"
    );

    let report = engine.reconcile().await.unwrap();
    assert!(!report.repaired(), "the indexes drifted apart: {report:?}");
    let stats = engine.stats().await.unwrap();
    assert_eq!(stats.documents, t.ingested.len() + 2);
    assert_eq!(stats.keyword_chunks, stats.vector_chunks);
    running.server.abort();
}
