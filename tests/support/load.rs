//! The load driver both APIs' load tests share (`apps/crag-http/tests/load.rs`,
//! `apps/crag-grpc/tests/load.rs`): 8 clients for `CRAG_LOAD_SECS` seconds (default 15;
//! `scripts/soak.sh` runs 300) after a 3-second warm-up by one client; a tally of latencies,
//! shedding and errors; the report (latency percentiles, ingest latency early and late,
//! LanceDB versions on disk, resident memory) and the checks on the tally.
//!
//! Each test writes its own client loop over its API; this module knows nothing of HTTP or
//! gRPC.
#![allow(dead_code)] // each test binary uses a part of it

use std::collections::HashSet;
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const CLIENTS: usize = 8;

/// How long a client waits after a refusal (503 / RESOURCE_EXHAUSTED) before its next request,
/// as a client honouring shedding does.
pub const SHED_BACKOFF: Duration = Duration::from_millis(50);

/// Unique, embeddable, BM25-findable words for document `n` of `client`.
pub fn marker(client: usize, n: usize) -> String {
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

/// The text of load document `word`: findable by its word and about the fixture's valves.
pub fn load_text(word: &str) -> String {
    format!("The {word} procedure rotates the spindle twice before sealing the valve.")
}

/// The query of step `step` of client `id` after `n` ingestions: a generic question, a
/// fixture's words, or another client's recent document.
pub fn load_query(id: usize, step: usize, n: usize) -> String {
    match step % 3 {
        0 => "how does the procedure seal the valve?".to_owned(),
        1 => "sourdough bread starter".to_owned(),
        _ => format!(
            "{} spindle",
            marker((id + 1) % CLIENTS, n.saturating_sub(1))
        ),
    }
}

#[derive(Default)]
pub struct Tally {
    pub query_ms: Vec<f64>,
    /// In completion order.
    pub ingest_ms: Vec<f64>,
    pub shed: usize,
    pub errors: Vec<String>,
    /// Load documents whose ingest succeeded.
    pub ingested: HashSet<String>,
    /// Load documents some query returned.
    pub seen: HashSet<String>,
}

pub type Shared = Arc<Mutex<Tally>>;

/// Resident memory, KiB: the whole (`VmRSS`), anonymous (`RssAnon`: heap, stacks) and
/// file-backed (`RssFile`: mapped index files, the binary).
#[derive(Debug, Clone, Copy)]
pub struct Resident {
    pub total: u64,
    pub anon: u64,
    pub file: u64,
}

pub fn resident_kib() -> Option<Resident> {
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

pub fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * (values.len() - 1) as f64).round() as usize;
    values[rank]
}

/// `CRAG_LOAD_SECS`, default 15.
pub fn load_secs() -> u64 {
    std::env::var("CRAG_LOAD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15)
}

/// What [`drive`] measured.
pub struct Run {
    pub tally: Tally,
    pub elapsed: Duration,
    pub warm: Option<Resident>,
    /// Resident memory once a fifth of the run has passed under the full load (the caches,
    /// bounded, have filled by then).
    pub loaded: Option<Resident>,
    /// The highest resident total sampled (once a second), KiB.
    pub peak_kib: u64,
    pub end: Option<Resident>,
}

/// Runs `client(id, deadline, tally)` alone for a 3-second warm-up, then [`CLIENTS`] of them
/// at once for [`load_secs`].
pub async fn drive<F, Fut>(client: F) -> Run
where
    F: Fn(usize, Instant, Shared) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let tally: Shared = Arc::default();
    client(0, Instant::now() + Duration::from_secs(3), tally.clone()).await;
    let warm = resident_kib();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(load_secs());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(client(id, deadline, tally.clone())))
        .collect();
    // Resident memory once a second: the sample at a fifth of the run, and the peak.
    let sampler = tokio::spawn(async move {
        let fifth = started + Duration::from_secs(load_secs()) / 5;
        let (mut loaded, mut peak) = (None, 0);
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let Some(now) = resident_kib() else { break };
            peak = peak.max(now.total);
            if loaded.is_none() && Instant::now() >= fifth {
                loaded = Some(now);
            }
        }
        (loaded, peak)
    });
    for c in clients {
        c.await.unwrap();
    }
    let elapsed = started.elapsed();
    let end = resident_kib();
    let (loaded, peak_kib) = sampler.await.unwrap();
    let tally = std::mem::take(&mut *tally.lock().unwrap());
    Run {
        tally,
        elapsed,
        warm,
        loaded,
        peak_kib,
        end,
    }
}

impl Run {
    /// Prints the figures (prefixed by `label`) and checks that there was no error, that
    /// both kinds of request succeeded, and that no query returned a document whose ingest
    /// had not succeeded.
    pub fn report(&mut self, label: &str, data_dir: &Path) {
        let t = &mut self.tally;
        let requests = t.query_ms.len() + t.ingest_ms.len() + t.shed;
        // In completion order (so before the percentiles below sort them): the first and
        // last fifth of the ingests show whether ingestion slows down as the run goes on.
        let fifth = t.ingest_ms.len() / 5;
        if fifth > 0 {
            let last = t.ingest_ms.len() - fifth;
            println!(
                "{label}: ingest p50 {:.0} ms in the first fifth, {:.0} ms in the last",
                percentile(&mut t.ingest_ms[..fifth].to_vec(), 50.0),
                percentile(&mut t.ingest_ms[last..].to_vec(), 50.0)
            );
        }
        println!(
            "{label}: {CLIENTS} clients, {:.0} s, {requests} requests ({} queries, {} ingests ok, {} shed), {} errors",
            self.elapsed.as_secs_f64(),
            t.query_ms.len(),
            t.ingest_ms.len(),
            t.shed,
            t.errors.len()
        );
        println!(
            "{label}: query p50 {:.0} ms p99 {:.0} ms; ingest p50 {:.0} ms p99 {:.0} ms",
            percentile(&mut t.query_ms, 50.0),
            percentile(&mut t.query_ms, 99.0),
            percentile(&mut t.ingest_ms, 50.0),
            percentile(&mut t.ingest_ms, 99.0)
        );
        let versions = std::fs::read_dir(data_dir.join("vectors/chunks.lance/_versions"))
            .map(|d| d.count())
            .unwrap_or(0);
        println!("{label}: {versions} vector table versions on disk at the end");
        if let (Some(warm), Some(end)) = (self.warm, self.end) {
            println!(
                "{label}: resident {} MiB after warm-up, {} MiB at the end ({:+.1} %); anonymous {} -> {} MiB, file-backed {} -> {} MiB",
                warm.total / 1024,
                end.total / 1024,
                (end.total as f64 - warm.total as f64) / warm.total as f64 * 100.0,
                warm.anon / 1024,
                end.anon / 1024,
                warm.file / 1024,
                end.file / 1024
            );
            if let Some(loaded) = self.loaded {
                println!(
                    "{label}: resident {} MiB after a fifth of the run under load, {} MiB at the end ({:+.1} % over the last four fifths), peak {} MiB",
                    loaded.total / 1024,
                    end.total / 1024,
                    (end.total as f64 - loaded.total as f64) / loaded.total as f64 * 100.0,
                    self.peak_kib / 1024
                );
            }
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
            "queries returned documents whose ingestion never succeeded: {unexplained:?}"
        );
    }
}
