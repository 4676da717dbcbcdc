//! Engine tests over the in-memory fakes: ingestion change detection, sources, hybrid retrieval.

use std::sync::Arc;

use crag_core::{Query, TopK};
use crag_engine::readers::{read_beir_corpus, read_path, DEFAULT_MAX_FILE_BYTES};
use crag_engine::{ChunkingConfig, Engine, EngineConfig, Fusion, NoProgress, RRF_K};
use crag_ports::fakes::{HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex};
use crag_ports::{KeywordIndex, VectorIndex};

struct Fixture {
    engine: Engine,
    embedder: Arc<HashEmbedder>,
    keywords: Arc<InMemoryKeywordIndex>,
    vectors: Arc<InMemoryVectorIndex>,
}

fn fixture() -> Fixture {
    let embedder = Arc::new(HashEmbedder::new(64));
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let config = EngineConfig {
        chunking: ChunkingConfig {
            chunk_tokens: 8,
            overlap_tokens: 2,
        },
        ..EngineConfig::default()
    };
    let engine = Engine::new(embedder.clone(), vectors.clone(), keywords.clone(), config).unwrap();
    Fixture {
        engine,
        embedder,
        keywords,
        vectors,
    }
}

async fn ingest_dir(f: &Fixture, dir: &std::path::Path) -> crag_engine::IngestReport {
    let loaded = read_path(dir, DEFAULT_MAX_FILE_BYTES).unwrap();
    f.engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
        .await
        .unwrap()
}

#[tokio::test]
async fn reingesting_detects_unchanged_changed_and_deleted_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("a.md"),
        "# Alpha\nalpha bravo charlie delta echo foxtrot golf hotel india juliet",
    )
    .unwrap();
    std::fs::write(root.join("b.rs"), "fn main() { println!(\"bravo\"); }").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/c.txt"), "charlie only here").unwrap();

    let f = fixture();
    let first = ingest_dir(&f, root).await;
    assert_eq!(
        (
            first.documents_added,
            first.documents_updated,
            first.documents_deleted
        ),
        (3, 0, 0)
    );
    let chunks = f.keywords.count().await.unwrap();
    assert!(chunks >= 4, "a.md spans two chunks, got {chunks} chunks");
    assert_eq!(f.vectors.count().await.unwrap(), chunks);
    let embedded = f.embedder.texts_embedded();

    let second = ingest_dir(&f, root).await;
    assert_eq!(second.documents_unchanged, 3);
    assert_eq!(second.chunks_written, 0);
    assert_eq!(
        f.embedder.texts_embedded(),
        embedded,
        "unchanged content is not embedded again"
    );

    std::fs::write(root.join("a.md"), "# Alpha\nshorter now").unwrap();
    std::fs::remove_file(root.join("sub/c.txt")).unwrap();
    let third = ingest_dir(&f, root).await;
    assert_eq!(
        (
            third.documents_updated,
            third.documents_unchanged,
            third.documents_deleted
        ),
        (1, 1, 1)
    );
    assert_eq!(
        f.keywords.count().await.unwrap(),
        2,
        "a.md is one chunk now, c.txt is gone"
    );
    assert_eq!(f.vectors.count().await.unwrap(), 2);
    let hits = f
        .engine
        .retrieve(&Query::new("charlie").unwrap(), TopK::new(5).unwrap())
        .await
        .unwrap();
    assert!(hits.hits.iter().all(|h| !h.chunk.source.ends_with("c.txt")));
}

#[tokio::test]
async fn sources_skip_binaries_large_files_hidden_and_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("ok.md"), "fine text").unwrap();
    std::fs::write(root.join("bin.txt"), b"abc\0def").unwrap();
    std::fs::write(root.join("latin1.txt"), [0x63u8, 0x61, 0x66, 0xe9]).unwrap();
    std::fs::write(root.join("big.md"), "x".repeat(2048)).unwrap();
    std::fs::write(root.join("image.png"), "not really").unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config.md"), "hidden").unwrap();
    std::fs::write(outside.path().join("secret.md"), "outside the root").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.md"), root.join("link.md")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("linkdir")).unwrap();

    let loaded = read_path(root, 1024).unwrap();
    let names: Vec<_> = loaded.documents.iter().map(|d| d.title.as_str()).collect();
    assert_eq!(names, vec!["ok.md"]);
    let skipped: Vec<_> = loaded
        .skipped
        .iter()
        .map(|s| {
            (
                s.path.file_name().unwrap().to_string_lossy().into_owned(),
                s.reason.clone(),
            )
        })
        .collect();
    let reason = |name: &str| {
        skipped
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.as_str())
    };
    assert_eq!(reason("bin.txt"), Some("binary content"));
    assert_eq!(reason("latin1.txt"), Some("not valid UTF-8"));
    assert_eq!(reason("big.md"), Some("larger than 1024 bytes"));
    assert_eq!(reason("link.md"), Some("symbolic link not followed"));
    assert_eq!(reason("linkdir"), Some("symbolic link not followed"));
    assert!(
        reason("config.md").is_none(),
        "hidden folders are not walked"
    );
}

#[tokio::test]
async fn beir_corpus_is_read_and_reingested_idempotently() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus.jsonl");
    std::fs::write(
        &corpus,
        concat!(
            "{\"_id\": \"1\", \"title\": \"Aspirin\", \"text\": \"Aspirin reduces the risk of heart attack.\"}\n",
            "{\"_id\": 2, \"title\": \"Vitamin D\", \"text\": \"Vitamin D deficiency is linked to bone loss.\"}\n",
            "{\"_id\": \"3\", \"title\": \"\", \"text\": \"\"}\n",
        ),
    )
    .unwrap();
    let loaded = read_beir_corpus(&corpus).unwrap();
    assert_eq!(loaded.documents.len(), 2);
    assert_eq!(loaded.skipped.len(), 1);
    assert!(loaded.documents[1].id.as_str().ends_with("corpus.jsonl#2"));

    let f = fixture();
    let report = f
        .engine
        .ingest(loaded.documents.clone(), vec![], &loaded.scope, &NoProgress)
        .await
        .unwrap();
    assert_eq!(report.documents_added, 2);
    let hits = f
        .engine
        .retrieve(&Query::new("vitamin bone").unwrap(), TopK::new(3).unwrap())
        .await
        .unwrap();
    assert_eq!(hits.hits[0].chunk.title, "Vitamin D");
    assert!(hits.hits[0].keyword.is_some() && hits.hits[0].vector.is_some());
    let again = f
        .engine
        .ingest(loaded.documents, vec![], &loaded.scope, &NoProgress)
        .await
        .unwrap();
    assert_eq!(again.documents_unchanged, 2);

    std::fs::write(
        &corpus,
        "{\"_id\": \"1\", \"title\": \"x\", \"text\": oops}\n",
    )
    .unwrap();
    let err = read_beir_corpus(&corpus).unwrap_err();
    assert!(err.to_string().contains("corpus.jsonl:1"), "{err}");
}

#[tokio::test]
async fn retrieval_keeps_per_leg_ranks_and_normalised_scores() {
    let f = fixture();
    let docs = crag_ports::testsuite::sample_chunks();
    let vectors = {
        use crag_ports::Embedder;
        f.embedder
            .embed(
                &docs
                    .iter()
                    .map(|c| format!("{}\n{}", c.title, c.text))
                    .collect::<Vec<_>>(),
            )
            .await
            .unwrap()
    };
    let records: Vec<_> = docs
        .iter()
        .cloned()
        .zip(vectors)
        .map(|(chunk, vector)| crag_ports::EmbeddedChunk { chunk, vector })
        .collect();
    f.vectors.upsert(&records).await.unwrap();
    f.keywords.upsert(&docs).await.unwrap();

    // Top 3 of "bread oven crust", checked for what every fusion guarantees.
    let top3 = |engine: Engine| async move {
        let query = Query::new("bread oven crust").unwrap();
        let r = engine
            .retrieve(&query, TopK::new(3).unwrap())
            .await
            .unwrap();
        assert_eq!(r.hits.len(), 3);
        assert!(r.warnings.is_empty());
        for h in &r.hits {
            assert!((0.0..=1.0).contains(&h.normalized_score));
            assert!(h.keyword.is_some() || h.vector.is_some());
        }
        let order = r.hits.windows(2);
        assert!(order
            .into_iter()
            .all(|w| w[0].fused_score >= w[1].fused_score));
        r
    };
    // The default convex fusion: its score is already normalised.
    let r = top3(f.engine.clone()).await;
    // bread.md ranks first, shown as the chunk the vector leg ranks best of it (#0; BM25's
    // best chunk of it is #1).
    assert_eq!(r.hits[0].chunk.id.as_str(), "bread.md#0");
    assert!(r.hits.iter().all(|h| h.fused_score == h.normalized_score));

    // The same indexes under RRF: the fused score is the rank formula.
    let config = EngineConfig {
        fusion: Fusion::Rrf { k: RRF_K },
        ..EngineConfig::default()
    };
    let (embedder, vectors, keywords) = (f.embedder.clone(), f.vectors.clone(), f.keywords.clone());
    let r = top3(Engine::new(embedder, vectors, keywords, config).unwrap()).await;
    for h in &r.hits {
        let legs = [h.keyword, h.vector];
        let expected: f32 = legs
            .iter()
            .flatten()
            .map(|l| 1.0 / (60.0 + l.rank as f32))
            .sum();
        assert!((h.fused_score - expected).abs() < 1e-6);
    }

    let stats = f.engine.stats().await.unwrap();
    assert_eq!(
        (stats.documents, stats.keyword_chunks, stats.vector_chunks),
        (3, 5, 5)
    );
}

/// Writes `chunks` to both indexes and `orphans` to the vector index alone (a write that
/// stopped between the two), each embedded from its text.
async fn store(f: &Fixture, chunks: &[crag_core::Chunk], orphans: &[crag_core::Chunk]) {
    use crag_ports::Embedder;
    let all: Vec<_> = chunks.iter().chain(orphans).cloned().collect();
    let texts: Vec<String> = all.iter().map(|c| c.text.clone()).collect();
    let vectors = f.embedder.embed(&texts).await.unwrap();
    let records: Vec<_> = all
        .into_iter()
        .zip(vectors)
        .map(|(chunk, vector)| crag_ports::EmbeddedChunk { chunk, vector })
        .collect();
    f.vectors.upsert(&records).await.unwrap();
    f.keywords.upsert(chunks).await.unwrap();
}

#[tokio::test]
async fn vector_only_hits_are_read_from_the_catalogue_and_orphans_dropped() {
    use crag_ports::Embedder;
    let f = fixture();
    let docs = crag_ports::testsuite::sample_chunks();
    // An orphan: a vector whose keyword write never happened (an interrupted ingestion),
    // the nearest of all to the query.
    let orphan = crag_ports::testsuite::chunk("orphan.md", 0, "Bread", "bread oven crust");
    store(&f, &docs, std::slice::from_ref(&orphan)).await;

    let query = Query::new("bread oven crust").unwrap();
    let nearest = f
        .vectors
        .nearest_ids(
            &f.embedder
                .embed(&[query.as_str().to_owned()])
                .await
                .unwrap()[0],
            10,
        )
        .await
        .unwrap();
    assert_eq!(
        nearest[0].id.as_str(),
        "orphan.md#0",
        "the orphan is the vector leg's first"
    );

    let r = f
        .engine
        .retrieve(&query, TopK::new(10).unwrap())
        .await
        .unwrap();
    assert!(r
        .hits
        .iter()
        .all(|h| h.chunk.document_id.as_str() != "orphan.md"));
    let documents: std::collections::HashSet<_> = docs.iter().map(|c| &c.document_id).collect();
    assert_eq!(
        r.hits.len(),
        documents.len(),
        "every catalogued document once (whole documents are ranked), the orphan left out"
    );
    let vector_only: Vec<_> = r.hits.iter().filter(|h| h.keyword.is_none()).collect();
    assert!(
        !vector_only.is_empty(),
        "some hits come from the vector leg alone"
    );
    for h in &r.hits {
        let stored = f
            .keywords
            .get(std::slice::from_ref(&h.chunk.id))
            .await
            .unwrap();
        assert_eq!(
            stored,
            vec![h.chunk.clone()],
            "each hit carries its stored chunk"
        );
    }
    // The orphan leaves the vector leg's list before ranking, as if never found.
    let mut ranks: Vec<usize> = r
        .hits
        .iter()
        .filter_map(|h| h.vector.map(|l| l.rank))
        .collect();
    ranks.sort_unstable();
    assert_eq!(ranks, (1..=documents.len()).collect::<Vec<_>>());
}

#[tokio::test]
async fn vector_hits_are_read_from_the_vector_index_when_the_catalogue_cannot_be_read() {
    let f = fixture();
    let docs = crag_ports::testsuite::sample_chunks();
    store(&f, &docs, &[]).await;
    let query = Query::new("bread oven crust").unwrap();
    let top = TopK::new(10).unwrap();
    let healthy = f.engine.retrieve(&query, top).await.unwrap();

    f.keywords.fail_reads(true);
    let r = f.engine.retrieve(&query, top).await.unwrap();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("read from the vector index")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.hits.iter().any(|h| h.keyword.is_none()),
        "vector-only hits are kept"
    );
    let ids = |hits: &[crag_core::FusedHit]| -> Vec<String> {
        hits.iter()
            .map(|h| h.chunk.id.as_str().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&r.hits),
        ids(&healthy.hits),
        "the same ranking either way"
    );
    for h in &r.hits {
        assert!(docs.contains(&h.chunk), "each hit carries its chunk");
    }
}

#[tokio::test]
async fn the_vector_leg_alone_reads_the_catalogue_and_fills_in_for_orphans() {
    let f = fixture();
    let docs = crag_ports::testsuite::sample_chunks();
    let orphans = [
        crag_ports::testsuite::chunk("orphan.md", 0, "Bread", "bread oven crust"),
        crag_ports::testsuite::chunk("orphan.md", 1, "Bread", "bread oven crust crumb"),
    ];
    store(&f, &docs, &orphans).await;
    let query = Query::new("bread oven crust").unwrap();

    // Two results asked, the two orphans nearest of all: the search widens past them.
    let hits = f
        .engine
        .retrieve_vector(&query, TopK::new(2).unwrap())
        .await
        .unwrap();
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert!(hits
        .iter()
        .all(|h| h.chunk.document_id.as_str() != "orphan.md"));
    let all = f
        .engine
        .retrieve_vector(&query, TopK::new(50).unwrap())
        .await
        .unwrap();
    assert_eq!(all.len(), docs.len(), "every catalogued chunk, no orphan");
    assert_eq!(
        all[..2]
            .iter()
            .map(|h| (h.chunk.clone(), h.score))
            .collect::<Vec<_>>(),
        hits.iter()
            .map(|h| (h.chunk.clone(), h.score))
            .collect::<Vec<_>>(),
        "the same order and scores whatever k"
    );
    for h in &all {
        assert!(docs.contains(&h.chunk), "each hit carries its stored chunk");
    }
    assert!(
        all.windows(2).all(|w| w[0].score >= w[1].score),
        "best first"
    );

    // The catalogue cannot be read: the vector index's chunks answer (orphans included).
    f.keywords.fail_reads(true);
    let fallback = f
        .engine
        .retrieve_vector(&query, TopK::new(2).unwrap())
        .await
        .unwrap();
    assert_eq!(fallback[0].chunk.document_id.as_str(), "orphan.md");
}

/// Counts the documents and chunks the ingestion reports as written.
#[derive(Default)]
struct Counted {
    started: std::sync::atomic::AtomicUsize,
    documents: std::sync::atomic::AtomicUsize,
    chunks: std::sync::atomic::AtomicUsize,
}

impl crag_engine::IngestProgress for Counted {
    fn start(&self, documents: usize) {
        self.started
            .store(documents, std::sync::atomic::Ordering::SeqCst);
    }
    fn advance(&self, documents: usize, chunks: usize) {
        self.documents
            .fetch_add(documents, std::sync::atomic::Ordering::SeqCst);
        self.chunks
            .fetch_add(chunks, std::sync::atomic::Ordering::SeqCst);
    }
    fn finish(&self) {}
}

#[tokio::test]
async fn batches_embedded_while_the_previous_is_written_land_whole_and_a_repeated_id_once() {
    use crag_core::{ChunkKind, Document, DocumentId};
    let doc = |id: &str, text: &str| {
        Document::new(
            DocumentId::new(id).unwrap(),
            format!("fixtures/{id}"),
            "",
            text,
            ChunkKind::Prose,
        )
        .unwrap()
    };
    // 150 documents: three batches of up to 64, the first document of the second batch a
    // second version of the last of the first (same id), which must win and be the only one
    // written (the first reported as skipped).
    let mut docs: Vec<Document> = (0..150)
        .map(|i| doc(&format!("d{i}"), &format!("note {i} about topic{i}")))
        .collect();
    docs[63] = doc("twice", &"giraffe first version ".repeat(8));
    docs[64] = doc("twice", "zebra second version");
    let f = fixture();
    let progress = Counted::default();
    let report = f
        .engine
        .ingest(docs, vec![], &crag_engine::Scope::None, &progress)
        .await
        .unwrap();
    let load = |a: &std::sync::atomic::AtomicUsize| a.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(report.documents_seen, 150);
    assert_eq!(report.documents_added, 149);
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(
        report.skipped[0].1.contains("given again"),
        "{:?}",
        report.skipped
    );
    assert_eq!(load(&progress.started), 149);
    assert_eq!(load(&progress.documents), 149, "every batch reported once");
    assert_eq!(load(&progress.chunks), report.chunks_written);
    assert_eq!(report.chunks_embedded, report.chunks_written);

    let stored = f.keywords.count().await.unwrap();
    assert_eq!(
        f.vectors.count().await.unwrap(),
        stored,
        "both indexes hold the same chunks"
    );
    assert_eq!(f.keywords.documents().await.unwrap().len(), 149);
    let top = TopK::new(5).unwrap();
    let zebra = f
        .engine
        .retrieve(&Query::new("zebra").unwrap(), top)
        .await
        .unwrap();
    assert_eq!(zebra.hits[0].chunk.document_id.as_str(), "twice");
    let giraffe = f
        .engine
        .retrieve(&Query::new("giraffe").unwrap(), top)
        .await
        .unwrap();
    assert!(
        giraffe
            .hits
            .iter()
            .all(|h| !h.chunk.text.contains("giraffe")),
        "the first version is gone from both indexes: {:?}",
        giraffe.hits
    );
    for i in [0, 63 + 2, 149] {
        let q = Query::new(format!("topic{i}")).unwrap();
        let hits = f.engine.retrieve(&q, top).await.unwrap();
        assert_eq!(hits.hits[0].chunk.document_id.as_str(), format!("d{i}"));
    }
}

#[test]
fn mismatched_dimensions_are_rejected() {
    let embedder = Arc::new(HashEmbedder::new(64));
    let err = Engine::new(
        embedder,
        Arc::new(InMemoryVectorIndex::new(32)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("dimension"));
}

#[tokio::test]
async fn filters_restrict_retrieval_by_source_prefix_and_kind() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("docs")).unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(
        root.join("docs/oven.md"),
        "the oven bakes bread with a crust",
    )
    .unwrap();
    std::fs::write(
        root.join("src/oven.rs"),
        "fn oven() { bake(\"bread crust\"); }",
    )
    .unwrap();
    let f = fixture();
    ingest_dir(&f, root).await;
    let q = Query::new("oven bread crust").unwrap();
    let k = TopK::new(10).unwrap();
    let all = f.engine.retrieve(&q, k).await.unwrap();
    let sources: std::collections::HashSet<_> =
        all.hits.iter().map(|h| h.chunk.source.clone()).collect();
    assert_eq!(sources.len(), 2, "{sources:?}");
    let doc_source = sources.iter().find(|s| s.ends_with("oven.md")).unwrap();
    let docs_prefix = &doc_source[..doc_source.len() - "oven.md".len()];
    assert!(docs_prefix.ends_with("docs/"), "{docs_prefix}");

    let docs_only = crag_core::ChunkFilter {
        source_prefix: Some(docs_prefix.to_owned()),
        kinds: vec![],
        ..Default::default()
    };
    let r = f.engine.retrieve_with(&q, k, &docs_only).await.unwrap();
    assert!(!r.hits.is_empty());
    assert!(r
        .hits
        .iter()
        .all(|h| h.chunk.source.starts_with(docs_prefix)));

    let code_only = crag_core::ChunkFilter {
        source_prefix: None,
        kinds: vec![crag_core::ChunkKind::Code],
        ..Default::default()
    };
    let r = f.engine.retrieve_with(&q, k, &code_only).await.unwrap();
    assert!(!r.hits.is_empty());
    assert!(r
        .hits
        .iter()
        .all(|h| h.chunk.kind == crag_core::ChunkKind::Code));

    let none = crag_core::ChunkFilter {
        source_prefix: Some("nowhere/".into()),
        kinds: vec![],
        ..Default::default()
    };
    assert!(f
        .engine
        .retrieve_with(&q, k, &none)
        .await
        .unwrap()
        .hits
        .is_empty());
}

/// A fixture that has ingested a directory of two small documents, `a.md` and `b.md`.
async fn two_documents() -> (tempfile::TempDir, Fixture) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "alpha bravo charlie").unwrap();
    std::fs::write(dir.path().join("b.md"), "alpha delta echo").unwrap();
    let f = fixture();
    ingest_dir(&f, dir.path()).await;
    (dir, f)
}

#[tokio::test]
async fn deleting_a_document_removes_it_from_both_indexes_only() {
    let (_dir, f) = two_documents().await;
    let before = f.engine.stats().await.unwrap();
    assert_eq!(before.documents, 2);
    let docs = f.keywords.documents().await.unwrap();
    let a = docs
        .iter()
        .find(|d| d.id.as_str().ends_with("a.md"))
        .unwrap()
        .id
        .clone();
    assert!(f.engine.delete_document(&a).await.unwrap());
    assert!(
        !f.engine.delete_document(&a).await.unwrap(),
        "second delete: not found"
    );
    let after = f.engine.stats().await.unwrap();
    assert_eq!(after.documents, 1);
    assert_eq!(after.keyword_chunks, after.vector_chunks);
    assert!(after.keyword_chunks > 0);
    let r = f
        .engine
        .retrieve(&Query::new("alpha").unwrap(), TopK::new(5).unwrap())
        .await
        .unwrap();
    assert!(r.hits.iter().all(|h| h.chunk.document_id != a));
    assert!(!r.hits.is_empty());
}

#[tokio::test]
async fn the_vector_index_is_optimized_after_writes_and_its_failure_loses_nothing() {
    let (dir, f) = two_documents().await;
    let root = dir.path();
    assert_eq!(f.vectors.optimizations(), 1, "once per ingestion");

    // A failing optimization is logged; the ingestion's writes stand.
    f.vectors.fail_optimize(true);
    std::fs::write(root.join("c.md"), "alpha foxtrot golf").unwrap();
    let report = ingest_dir(&f, root).await;
    assert_eq!(report.documents_added, 1);
    assert_eq!(f.vectors.optimizations(), 2);
    let stats = f.engine.stats().await.unwrap();
    assert_eq!(stats.documents, 3);
    assert_eq!(stats.keyword_chunks, stats.vector_chunks);
    let r = f
        .engine
        .retrieve(&Query::new("foxtrot").unwrap(), TopK::new(5).unwrap())
        .await
        .unwrap();
    assert!(r.hits[0].chunk.document_id.as_str().ends_with("c.md"));

    // Deleting a document optimizes too, and succeeds even when that fails.
    let c = r.hits[0].chunk.document_id.clone();
    assert!(f.engine.delete_document(&c).await.unwrap());
    assert_eq!(f.vectors.optimizations(), 3);
    assert_eq!(f.engine.stats().await.unwrap().documents, 2);
}

#[tokio::test]
async fn a_repeated_query_is_embedded_once_and_answered_the_same() {
    let (_dir, f) = two_documents().await;
    let query = Query::new("alpha bravo").unwrap();
    let top_k = TopK::new(2).unwrap();
    let before = f.embedder.texts_embedded();
    let first = f.engine.retrieve(&query, top_k).await.unwrap();
    let again = f.engine.retrieve(&query, top_k).await.unwrap();
    f.engine.retrieve_vector(&query, top_k).await.unwrap();
    assert_eq!(f.embedder.texts_embedded() - before, 1);
    let ids = |r: &crag_engine::Retrieval| -> Vec<String> {
        r.hits.iter().map(|h| h.chunk.id.to_string()).collect()
    };
    assert_eq!(ids(&first), ids(&again));
    f.engine
        .retrieve(&Query::new("alpha delta").unwrap(), top_k)
        .await
        .unwrap();
    assert_eq!(
        f.embedder.texts_embedded() - before,
        2,
        "a new text is embedded"
    );
}
