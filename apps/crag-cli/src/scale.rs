//! `crag ingest --synthetic-vectors N`: the scale benchmarks' ingestion, with cheap stand-in
//! vectors (`crag_eval::synthetic`) and a line of throughput per tenth of the documents.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context as _, Result};
use crag_app::compose::{open_indexes_sharing, SYNTHETIC_VECTORS_FILE};
use crag_app::Config;
use crag_engine::{Engine, EngineConfig, IngestProgress};
use crag_eval::synthetic::{SampledVectors, NEAR};

/// The engine on `config`'s data directory, embedding the first `sample` chunks with `real`
/// (the model the index needs, from an engine opened on it) and giving the rest perturbed
/// copies of them. Marks the data directory (every later open warns that its vectors are
/// synthetic).
pub(crate) async fn engine(
    config: &Config,
    engine: EngineConfig,
    real: Arc<dyn crag_ports::Embedder>,
    sample: usize,
) -> Result<Engine> {
    let marker = config.data_dir.join(SYNTHETIC_VECTORS_FILE);
    std::fs::write(
        &marker,
        format!(
            "vectors of this index are synthetic beyond the first {sample} chunks (each a \
             real vector of that sample plus seeded noise, cosine ~{NEAR} to it): for cost \
             benchmarks, never for quality\n"
        ),
    )
    .with_context(|| format!("cannot write {}", marker.display()))?;
    let sampled: Arc<dyn crag_ports::Embedder> = Arc::new(SampledVectors::new(real, sample));
    Ok(open_indexes_sharing(
        config,
        &config.data_dir,
        &config.vectors_uri(),
        engine,
        Some(sampled),
    )
    .await?)
}

/// Prints, on stderr, the documents, chunks and throughput of each tenth of the run (the
/// scale benchmark reads whether ingestion slows down as the tables grow).
pub(crate) struct Tenths {
    total: AtomicUsize,
    state: Mutex<TenthState>,
}

struct TenthState {
    documents: usize,
    chunks: usize,
    tenth: usize,
    since: Instant,
    started: Instant,
    chunks_at_tenth: usize,
}

impl Tenths {
    pub(crate) fn new() -> Self {
        let now = Instant::now();
        Self {
            total: AtomicUsize::new(0),
            state: Mutex::new(TenthState {
                documents: 0,
                chunks: 0,
                tenth: 0,
                since: now,
                started: now,
                chunks_at_tenth: 0,
            }),
        }
    }
}

impl IngestProgress for Tenths {
    fn start(&self, documents: usize) {
        self.total.store(documents, Ordering::Relaxed);
        eprintln!("ingest: {documents} documents to index");
    }

    fn advance(&self, documents: usize, chunks: usize) {
        let total = self.total.load(Ordering::Relaxed).max(1);
        let Ok(mut s) = self.state.lock() else { return };
        s.documents += documents;
        s.chunks += chunks;
        while s.tenth < 10 && s.documents * 10 >= total * (s.tenth + 1) {
            s.tenth += 1;
            let seconds = s.since.elapsed().as_secs_f64();
            let chunks = s.chunks - s.chunks_at_tenth;
            eprintln!(
                "ingest tenth {}/10: {} documents, {} chunks, {chunks} chunks in {seconds:.1} s \
                 ({:.1} chunks/s), {:.1} s in all",
                s.tenth,
                s.documents,
                s.chunks,
                chunks as f64 / seconds.max(1e-9),
                s.started.elapsed().as_secs_f64()
            );
            s.since = Instant::now();
            s.chunks_at_tenth = s.chunks;
        }
    }

    fn finish(&self) {}
}
