//! `crag` with its vectors in an S3-compatible object store (moto's server,
//! `scripts/s3-server.sh`; `CRAG_TEST_S3_URL` names a running one), configured as a user
//! would: `--vectors-uri s3://...`, `[storage]` from `CRAG_STORAGE__*`, credentials from
//! the environment.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

mod support;
use support::{s3_endpoint, stdout_json};

struct S3Crag {
    data: tempfile::TempDir,
    uri: String,
    endpoint: String,
    /// `[storage] keyword`.
    keyword: &'static str,
}

impl S3Crag {
    fn new(endpoint: &str) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_nanos();
        Self {
            data: tempfile::tempdir().expect("tmp"),
            uri: format!("s3://crag/cli-{nanos}/vectors"),
            endpoint: endpoint.to_owned(),
            keyword: "tantivy",
        }
    }

    /// Both legs in LanceDB, so that another data directory can serve the same index.
    fn keyword_in_lancedb(mut self) -> Self {
        self.keyword = "lancedb";
        self
    }

    /// Another process on another machine: its own (empty) data directory, the same
    /// database.
    fn replica(&self) -> Self {
        Self {
            data: tempfile::tempdir().expect("tmp"),
            uri: self.uri.clone(),
            endpoint: self.endpoint.clone(),
            keyword: self.keyword,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run crag")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_crag"));
        command
            .arg("--data-dir")
            .arg(self.data.path())
            .arg("--vectors-uri")
            .arg(&self.uri)
            .args(args)
            .env("CRAG_STORAGE__ENDPOINT", &self.endpoint)
            .env("CRAG_STORAGE__ALLOW_HTTP", "true")
            .env("CRAG_STORAGE__REGION", "us-east-1")
            .env("CRAG_STORAGE__KEYWORD", self.keyword)
            .env("CRAG_STORAGE__READ_CONSISTENCY_MS", "0")
            .env("AWS_ACCESS_KEY_ID", "crag-test")
            .env("AWS_SECRET_ACCESS_KEY", "crag-test");
        command
    }
}

fn fixture_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/corpus")
}

#[test]
fn ingest_query_and_stats_with_vectors_in_an_object_store() {
    let crag = S3Crag::new(&s3_endpoint());
    let corpus = fixture_corpus();
    let corpus = corpus.to_str().expect("utf-8 path");
    let report = stdout_json(&crag.run(&["ingest", corpus, "--json"]));
    assert_eq!(report["documentsAdded"], 6, "{report}");

    let q = stdout_json(&crag.run(&[
        "query",
        "what causes ocean tides?",
        "--top-k",
        "3",
        "--no-crag",
        "--json",
    ]));
    let first = &q["results"][0];
    assert!(
        first["source"]
            .as_str()
            .expect("source")
            .ends_with("notes/tides.txt"),
        "{first}"
    );
    assert!(first["vector"]["rank"].is_u64(), "{first}");

    let stats = stdout_json(&crag.run(&["stats", "--json"]));
    assert_eq!(stats["documents"], 6);
    assert_eq!(stats["keywordChunks"], stats["vectorChunks"]);

    // Nothing of the vectors is on the local disk.
    assert!(!crag.data.path().join("vectors").exists());

    // A second process (a fresh data directory would have no keyword index: same one here)
    // reads what the first wrote: the ingest again changes nothing.
    let again = stdout_json(&crag.run(&["ingest", corpus, "--json"]));
    assert_eq!(again["documentsUnchanged"], 6, "{again}");
}

/// With both legs in the object store, a second data directory (another machine) answers
/// from what the first ingested, and its own ingest of the same files changes nothing.
#[test]
fn a_replica_with_its_own_data_directory_serves_the_shared_index() {
    let first = S3Crag::new(&s3_endpoint()).keyword_in_lancedb();
    let corpus = fixture_corpus();
    let corpus = corpus.to_str().expect("utf-8 path");
    let report = stdout_json(&first.run(&["ingest", corpus, "--json"]));
    assert_eq!(report["documentsAdded"], 6, "{report}");

    let second = first.replica();
    let q = stdout_json(&second.run(&[
        "query",
        "what causes ocean tides?",
        "--top-k",
        "3",
        "--no-crag",
        "--json",
    ]));
    let top = &q["results"][0];
    assert!(
        top["source"]
            .as_str()
            .expect("source")
            .ends_with("notes/tides.txt"),
        "{top}"
    );
    assert!(
        top["keyword"]["rank"].is_u64() && top["vector"]["rank"].is_u64(),
        "{top}"
    );
    let stats = stdout_json(&second.run(&["stats", "--json"]));
    assert_eq!(stats["documents"], 6, "{stats}");
    assert_eq!(stats["keywordChunks"], stats["vectorChunks"]);
    assert!(!second.data.path().join("keyword").exists());
    let again = stdout_json(&second.run(&["ingest", corpus, "--json"]));
    assert_eq!(again["documentsUnchanged"], 6, "{again}");
}

/// A collection's tables live under the collection's prefix of the database; deleting the
/// collection drops them, so a collection made again under the same name starts empty.
#[test]
fn deleting_a_collection_drops_its_tables_in_the_object_store() {
    let crag = S3Crag::new(&s3_endpoint()).keyword_in_lancedb();
    let corpus = fixture_corpus();
    let corpus = corpus.to_str().expect("utf-8 path");
    stdout_json(&crag.run(&["collections", "create", "notes", "--json"]));
    let report = stdout_json(&crag.run(&["--collection", "notes", "ingest", corpus, "--json"]));
    assert_eq!(report["documentsAdded"], 6, "{report}");
    let out = crag.run(&["collections", "delete", "notes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created = stdout_json(&crag.run(&["collections", "create", "notes", "--json"]));
    assert_eq!(created["stats"]["documents"], 0, "{created}");
    let stats = stdout_json(&crag.run(&["--collection", "notes", "stats", "--json"]));
    assert_eq!(stats["keywordChunks"], 0, "{stats}");
    assert_eq!(stats["vectorChunks"], 0, "{stats}");
}

#[test]
fn a_plain_http_endpoint_needs_allow_http() {
    let crag = S3Crag::new("http://127.0.0.1:9");
    let out = Command::new(env!("CARGO_BIN_EXE_crag"))
        .arg("--data-dir")
        .arg(crag.data.path())
        .arg("--vectors-uri")
        .arg(&crag.uri)
        .arg("ingest")
        .arg(fixture_corpus())
        .env("CRAG_STORAGE__ENDPOINT", &crag.endpoint)
        .output()
        .expect("run crag");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("storage.allow_http"), "{stderr}");
}

/// Writes `n` one-chunk notes about `topic` into a new directory.
fn notes(topic: &str, n: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    for i in 0..n {
        let text = format!(
            "Note {i} on {topic}: the tide gauge at station {i} recorded a surge of {} \
             centimetres during the storm, and the harbour master logged reading number {i}.",
            i * 7 % 97
        );
        std::fs::write(dir.path().join(format!("{topic}-{i:03}.txt")), text).expect("write");
    }
    dir
}

/// Three writers at once over one shared index, two of them ingesting the same files: each
/// document once in both legs, and everything found through every replica.
#[test]
#[ignore = "known bug: two ingests of the same documents at once can leave chunks twice \
            (LanceDB's merge insert retries, both legs; docs/deploying.md): fails about half \
            the runs on a 2-core machine; run with --ignored while fixing it"]
fn concurrent_writers_on_two_replicas_leave_every_document_once() {
    const FILES: u64 = 96;
    let first = S3Crag::new(&s3_endpoint()).keyword_in_lancedb();
    let second = first.replica();
    let third = first.replica();
    let (estuary, lagoon) = (notes("estuary", FILES), notes("lagoon", FILES));
    let estuary = estuary.path().to_str().expect("utf-8 path").to_owned();
    let lagoon = lagoon.path().to_str().expect("utf-8 path").to_owned();
    let writers =
        [(&first, &estuary), (&second, &lagoon), (&third, &estuary)].map(|(crag, dir)| {
            crag.command(&["ingest", dir, "--json"])
                .stderr(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start crag")
        });
    for writer in writers {
        let out = writer.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for replica in [&first, &second] {
        let stats = stdout_json(&replica.run(&["stats", "--json"]));
        assert_eq!(stats["documents"], 2 * FILES, "{stats}");
        assert_eq!(stats["keywordChunks"], 2 * FILES, "no duplicate: {stats}");
        assert_eq!(stats["vectorChunks"], 2 * FILES, "{stats}");
        for topic in ["estuary", "lagoon"] {
            let q = stdout_json(&replica.run(&[
                "query",
                &format!("note 17 on {topic}"),
                "--top-k",
                "1",
                "--no-crag",
                "--json",
            ]));
            let source = q["results"][0]["source"].as_str().unwrap_or_default();
            assert!(source.ends_with(&format!("{topic}-017.txt")), "{q}");
        }
    }
}

/// A writer killed with SIGKILL in the middle of an ingest into the object store leaves
/// nothing that the next ingest does not mend: no duplicate chunk, no chunk in one leg only,
/// no document lost.
#[test]
fn a_writer_killed_during_ingest_leaves_no_duplicate_or_orphan() {
    // Five write batches of 64 documents, one chunk each.
    const FILES: u64 = 320;
    let crag = S3Crag::new(&s3_endpoint()).keyword_in_lancedb();
    let corpus = notes("tide", FILES);
    let corpus = corpus.path().to_str().expect("utf-8 path");
    let mut child = crag
        .command(&["ingest", corpus, "--json"])
        .env("CRAG_LOG", "warn,crag_engine::ingest=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start crag");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut log = Vec::new();
    let mut killed = false;
    for line in stderr.lines() {
        let line = line.expect("stderr line");
        if line.contains("ingest batch written") {
            child.kill().expect("SIGKILL");
            killed = true;
            break;
        }
        log.push(line);
    }
    child.wait().expect("wait");
    assert!(
        killed,
        "killed after its first batch, before the end: {}",
        log.join("\n")
    );
    let partial = stdout_json(&crag.run(&["stats", "--json"]));
    let documents = partial["documents"].as_u64().expect("documents");
    assert!(documents < FILES, "killed mid-way: {partial}");

    let again = stdout_json(&crag.run(&["ingest", corpus, "--json"]));
    assert_eq!(
        again["documentsAdded"].as_u64().unwrap() + again["documentsUnchanged"].as_u64().unwrap(),
        FILES,
        "{again}"
    );
    let stats = stdout_json(&crag.run(&["stats", "--json"]));
    assert_eq!(stats["documents"], FILES, "{stats}");
    assert_eq!(stats["keywordChunks"], FILES, "no duplicate: {stats}");
    assert_eq!(stats["vectorChunks"], FILES, "no orphan: {stats}");
    let third = stdout_json(&crag.run(&["ingest", corpus, "--json"]));
    assert_eq!(third["documentsUnchanged"], FILES, "{third}");
}
