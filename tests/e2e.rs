//! End to end over the real adapters: Tantivy, LanceDB and all-MiniLM-L6-v2 in ONNX Runtime,
//! on the project's own fixtures (`tests/fixtures`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crag_core::{Query, TopK};
use crag_engine::readers::{read_beir_corpus, read_path, DEFAULT_MAX_FILE_BYTES};
use crag_engine::{Engine, EngineConfig, NoProgress};
use crag_lancedb::LanceVectorIndex;
use crag_onnx::{default_assets_dir, EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig};
use crag_tantivy::TantivyKeywordIndex;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

async fn engine(data: &Path) -> Engine {
    let assets = EmbedderAssets::from_manifest(&default_assets_dir())
        .unwrap_or_else(|e| panic!("assets unavailable: {e}"));
    let embedder = OnnxEmbedder::new(OnnxEmbedderConfig::new(assets)).expect("embedder");
    let keywords = TantivyKeywordIndex::open(&data.join("keyword")).expect("tantivy");
    let uri = data.join("vectors").to_string_lossy().into_owned();
    let vectors = LanceVectorIndex::open(&uri, "chunks", 384)
        .await
        .expect("lancedb");
    Engine::new(
        Arc::new(embedder),
        Arc::new(vectors),
        Arc::new(keywords),
        EngineConfig::default(),
    )
    .expect("engine")
}

async fn top_source(engine: &Engine, query: &str) -> String {
    let r = engine
        .retrieve(&Query::new(query).expect("query"), TopK::new(3).expect("k"))
        .await
        .expect("retrieve");
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    r.hits
        .first()
        .map(|h| h.chunk.source.clone())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn directory_ingest_query_reopen_and_change() {
    let data = tempfile::tempdir().expect("tmp");
    let corpus_copy = tempfile::tempdir().expect("tmp");
    for entry in [
        "photosynthesis.md",
        "volcanoes.md",
        "sourdough.md",
        "fibonacci.py",
    ] {
        std::fs::copy(
            fixtures().join("corpus").join(entry),
            corpus_copy.path().join(entry),
        )
        .expect("copy");
    }
    let root = corpus_copy.path();
    {
        let engine = engine(data.path()).await;
        let loaded = read_path(root, DEFAULT_MAX_FILE_BYTES).expect("read");
        let report = engine
            .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
            .await
            .expect("ingest");
        assert_eq!(report.documents_added, 4);
        assert!(report.chunks_written >= 4);

        // Paraphrases with little word overlap: the vector leg must carry them.
        assert!(top_source(&engine, "why are leaves green")
            .await
            .ends_with("photosynthesis.md"));
        assert!(top_source(&engine, "molten rock erupting from a mountain")
            .await
            .ends_with("volcanoes.md"));
        assert!(top_source(&engine, "how to make bread with wild yeast")
            .await
            .ends_with("sourdough.md"));
        assert!(
            top_source(&engine, "function computing the fibonacci sequence")
                .await
                .ends_with("fibonacci.py")
        );
    }
    // Reopen: the same data directory serves queries; unchanged content is not re-indexed.
    let engine = engine(data.path()).await;
    let stats = engine.stats().await.expect("stats");
    assert_eq!(stats.documents, 4);
    assert_eq!(stats.keyword_chunks, stats.vector_chunks);
    let loaded = read_path(root, DEFAULT_MAX_FILE_BYTES).expect("read");
    let report = engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
        .await
        .expect("reingest");
    assert_eq!((report.documents_unchanged, report.chunks_written), (4, 0));

    // A changed file replaces its chunks in both indexes; a deleted one disappears.
    std::fs::write(
        root.join("volcanoes.md"),
        "# Glaciers\nGlaciers are rivers of ice that carve valleys.",
    )
    .expect("write");
    std::fs::remove_file(root.join("sourdough.md")).expect("rm");
    let loaded = read_path(root, DEFAULT_MAX_FILE_BYTES).expect("read");
    let report = engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
        .await
        .expect("reingest");
    assert_eq!((report.documents_updated, report.documents_deleted), (1, 1));
    let stats = engine.stats().await.expect("stats");
    assert_eq!(stats.documents, 3);
    assert_eq!(stats.keyword_chunks, stats.vector_chunks);
    assert!(top_source(&engine, "ice carving valleys")
        .await
        .ends_with("volcanoes.md"));
    let r = engine
        .retrieve(
            &Query::new("sourdough starter").expect("q"),
            TopK::new(10).expect("k"),
        )
        .await
        .expect("retrieve");
    assert!(r
        .hits
        .iter()
        .all(|h| !h.chunk.source.ends_with("sourdough.md")));
}

#[tokio::test(flavor = "multi_thread")]
async fn beir_fixture_ranks_the_relevant_document_first() {
    let data = tempfile::tempdir().expect("tmp");
    let engine = engine(data.path()).await;
    let loaded = read_beir_corpus(&fixtures().join("beir/corpus.jsonl")).expect("corpus");
    engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
        .await
        .expect("ingest");
    for (query, doc) in [
        ("Does aspirin prevent heart attacks?", "#d1"),
        ("What happens to bones without enough vitamin D?", "#d2"),
        ("How does sleep help memory?", "#d3"),
        ("Why do bacteria become resistant to antibiotics?", "#d4"),
    ] {
        let r = engine
            .retrieve(&Query::new(query).expect("q"), TopK::new(3).expect("k"))
            .await
            .expect("retrieve");
        let first = &r.hits[0];
        assert!(
            first.chunk.document_id.as_str().ends_with(doc),
            "{query}: {}",
            first.chunk.document_id
        );
        assert!(
            first.keyword.is_some() && first.vector.is_some(),
            "both legs found it"
        );
        assert!(first.normalized_score > 0.9);
    }
}
