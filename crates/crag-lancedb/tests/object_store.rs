//! The LanceDB vector index on an S3-compatible object store: moto's server
//! (`scripts/s3-server.sh`, started by the test script; `CRAG_TEST_S3_URL` names a running
//! one). Every test works under a prefix of its own in the bucket `crag`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crag_lancedb::{LanceKeywordIndex, LanceVectorIndex, StoreOptions};
use crag_ports::fakes::HashEmbedder;
use crag_ports::testsuite::{chunk, keyword_index_suite, vector_index_suite};
use crag_ports::{EmbeddedChunk, Embedder, ErrorKind, KeywordIndex, VectorIndex};

const DIM: usize = 64;
const TABLE: &str = "chunks";

/// The S3 endpoint: the environment's, or the script's server (started if needed).
fn endpoint() -> String {
    if let Ok(url) = std::env::var("CRAG_TEST_S3_URL") {
        return url;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/s3-server.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg("start")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "no S3-compatible server for the object-store tests: set CRAG_TEST_S3_URL or let {} start moto ({})",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("the script prints a URL")
        .to_owned()
}

/// A prefix no other test (or earlier run) has used.
fn fresh_uri(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("s3://crag/tests/{name}-{nanos}-{n}")
}

fn options(endpoint: &str, read_consistency: Option<Duration>) -> StoreOptions {
    StoreOptions {
        storage_options: BTreeMap::from([
            ("aws_endpoint".into(), endpoint.into()),
            ("aws_region".into(), "us-east-1".into()),
            ("allow_http".into(), "true".into()),
            ("aws_access_key_id".into(), "crag-test".into()),
            ("aws_secret_access_key".into(), "crag-test".into()),
        ]),
        read_consistency,
        ..StoreOptions::default()
    }
}

async fn embedded(document: &str, texts: &[&str]) -> Vec<EmbeddedChunk> {
    let owned: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
    let vectors = HashEmbedder::new(DIM).embed(&owned).await.expect("embed");
    texts
        .iter()
        .zip(vectors)
        .enumerate()
        .map(|(i, (text, vector))| EmbeddedChunk {
            chunk: chunk(document, i, document, text),
            vector,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_table_passes_the_vector_suite() {
    let endpoint = endpoint();
    let index =
        LanceVectorIndex::open_with(&fresh_uri("suite"), TABLE, DIM, &options(&endpoint, None))
            .await
            .expect("open on s3");
    vector_index_suite(&index, &HashEmbedder::new(DIM)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_s3_keyword_table_passes_the_keyword_suite() {
    let endpoint = endpoint();
    let index =
        LanceKeywordIndex::open(&fresh_uri("keyword"), "keyword", &options(&endpoint, None))
            .await
            .expect("open on s3");
    keyword_index_suite(&index).await;
}

/// A keyword write through one handle is found through another (as a second replica
/// would) once the read-consistency interval has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyword_write_is_found_through_another_handle() {
    let endpoint = endpoint();
    let uri = fresh_uri("keyword-replicas");
    let store = options(&endpoint, Some(Duration::from_millis(200)));
    let a = LanceKeywordIndex::open(&uri, "keyword", &store)
        .await
        .expect("open a");
    let b = LanceKeywordIndex::open(&uri, "keyword", &store)
        .await
        .expect("open b");
    a.upsert(&[chunk("kiln.md", 0, "Kilns", "A kiln fires clay pots.")])
        .await
        .expect("write through a");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let hits = b.search("kiln", 5).await.expect("search through b");
    assert_eq!(hits.first().map(|h| h.chunk.id.as_str()), Some("kiln.md#0"));
    assert_eq!(b.count().await.expect("count"), 1);
}

/// Two processes' handles on one table: a write through either is seen through the other
/// within the read-consistency interval (0 here: at the next read), and writes from both at
/// once all land (Lance commits with a conditional PUT and retries a conflict).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_handles_see_each_others_writes_and_write_at_once() {
    let endpoint = endpoint();
    let uri = fresh_uri("replicas");
    let store = options(&endpoint, Some(Duration::ZERO));
    let a = LanceVectorIndex::open_with(&uri, TABLE, DIM, &store)
        .await
        .expect("open a");
    let b = LanceVectorIndex::open_with(&uri, TABLE, DIM, &store)
        .await
        .expect("open b");
    a.upsert(&embedded("first.md", &["one", "two"]).await)
        .await
        .expect("write through a");
    assert_eq!(b.count().await.expect("count through b"), 2);

    let mut writes = Vec::new();
    for (i, index) in [a.clone(), b.clone()]
        .into_iter()
        .cycle()
        .take(8)
        .enumerate()
    {
        let records = embedded(&format!("doc-{i}.md"), &["alpha text", "beta text"]).await;
        writes.push(tokio::spawn(async move { index.upsert(&records).await }));
    }
    for write in writes {
        write.await.expect("join").expect("concurrent write");
    }
    for index in [&a, &b] {
        assert_eq!(index.count().await.expect("count"), 2 + 8 * 2);
        let documents = index.documents().await.expect("documents");
        assert_eq!(documents.len(), 9, "{documents:?}");
        assert!(documents.iter().all(|d| d.chunks == 2), "{documents:?}");
    }
    // The same document written again through the other handle replaces, never duplicates.
    b.upsert(&embedded("first.md", &["one", "two"]).await)
        .await
        .expect("rewrite through b");
    assert_eq!(a.count().await.expect("count"), 18);
}

/// Without a consistency interval a handle keeps the version it read: one process owning
/// the database pays no check per read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_interval_a_handle_keeps_its_version() {
    let endpoint = endpoint();
    let uri = fresh_uri("no-interval");
    let a = LanceVectorIndex::open_with(&uri, TABLE, DIM, &options(&endpoint, None))
        .await
        .expect("open a");
    let b = LanceVectorIndex::open_with(&uri, TABLE, DIM, &options(&endpoint, None))
        .await
        .expect("open b");
    assert_eq!(b.count().await.expect("count"), 0);
    a.upsert(&embedded("first.md", &["one"]).await)
        .await
        .expect("write");
    assert_eq!(a.count().await.expect("count"), 1);
    assert_eq!(b.count().await.expect("stale by design"), 0);
}

/// An object store that does not answer is an `Unavailable` error with a message, not a
/// hang or a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_store_is_unavailable() {
    // A port nothing listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://{}", listener.local_addr().expect("addr"));
    drop(listener);
    let mut store = options(&dead, None);
    store
        .storage_options
        .insert("client_max_retries".into(), "0".into());
    store
        .storage_options
        .insert("connect_timeout".into(), "2s".into());
    let err = LanceVectorIndex::open_with(&fresh_uri("down"), TABLE, DIM, &store)
        .await
        .expect_err("nothing listens there");
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err:?}");
}
