//! Index consistency after an interrupted write, over the real embedded stack (ONNX MiniLM,
//! Tantivy, LanceDB). The keyword index is wrapped so that its writes can be made to fail on
//! demand, the stand-in for a full disk or a killed process between the vector write and the
//! keyword write; vectors written behind the engine's back stand in for a crash that left
//! them without their keyword side.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use crag_app::compose::{assets_dir, VECTOR_TABLE};
use crag_app::Config;
use crag_core::{
    Chunk, ChunkId, ChunkKind, Document, DocumentId, Query, ScoredChunk, Span, TopK, WeightedTerm,
};
use crag_engine::{Engine, EngineConfig, NoProgress, Scope};
use crag_lancedb::LanceVectorIndex;
use crag_onnx::{EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig};
use crag_ports::{
    DocumentEntry, EmbeddedChunk, Embedder, ErrorKind, KeywordIndex, PortError, PortResult,
    VectorIndex,
};
use crag_tantivy::TantivyKeywordIndex;

/// Tantivy whose writes fail while `failing` is set.
#[derive(Debug)]
struct FlakyKeywords {
    inner: TantivyKeywordIndex,
    failing: AtomicBool,
}

impl FlakyKeywords {
    fn write(&self) -> PortResult<()> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(PortError::new(
                ErrorKind::Unavailable,
                "injected keyword write failure (no space left on device)",
            ));
        }
        Ok(())
    }
}

#[async_trait]
impl KeywordIndex for FlakyKeywords {
    async fn upsert(&self, chunks: &[Chunk]) -> PortResult<()> {
        self.write()?;
        self.inner.upsert(chunks).await
    }
    async fn replace_documents(&self, replaced: &[DocumentId], chunks: &[Chunk]) -> PortResult<()> {
        self.write()?;
        self.inner.replace_documents(replaced, chunks).await
    }
    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        self.write()?;
        self.inner.delete_documents(ids).await
    }
    async fn search(&self, query: &str, k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.inner.search(query, k).await
    }
    fn analyze(&self, text: &str) -> Vec<String> {
        self.inner.analyze(text)
    }
    async fn search_terms(&self, terms: &[WeightedTerm], k: usize) -> PortResult<Vec<ScoredChunk>> {
        self.inner.search_terms(terms, k).await
    }
    async fn count(&self) -> PortResult<usize> {
        self.inner.count().await
    }
    async fn document_frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        self.inner.document_frequencies(terms).await
    }
    async fn documents(&self) -> PortResult<Vec<DocumentEntry>> {
        self.inner.documents().await
    }
    async fn get(&self, ids: &[ChunkId]) -> PortResult<Vec<Chunk>> {
        self.inner.get(ids).await
    }
    async fn contains(&self, ids: &[ChunkId]) -> PortResult<HashSet<ChunkId>> {
        self.inner.contains(ids).await
    }
    async fn document_chunks(&self, document: &DocumentId) -> PortResult<Vec<Chunk>> {
        self.inner.document_chunks(document).await
    }
}

struct Stack {
    engine: Engine,
    keywords: Arc<FlakyKeywords>,
    vectors: Arc<LanceVectorIndex>,
    embedder: Arc<OnnxEmbedder>,
}

/// The stack on `config.data_dir`, laid out as `crag_app::compose` lays it out.
async fn stack(config: &Config) -> Stack {
    let assets = EmbedderAssets::from_manifest(&assets_dir(config))
        .expect("model assets (scripts/setup-assets.sh)");
    let embedder = Arc::new(OnnxEmbedder::new(OnnxEmbedderConfig::new(assets)).expect("embedder"));
    std::fs::create_dir_all(&config.data_dir).unwrap();
    let keywords = Arc::new(FlakyKeywords {
        inner: TantivyKeywordIndex::open(&config.data_dir.join("keyword")).unwrap(),
        failing: AtomicBool::new(false),
    });
    let vectors = Arc::new(
        LanceVectorIndex::open(&config.vectors_uri(), VECTOR_TABLE, embedder.dimension())
            .await
            .unwrap(),
    );
    let engine = Engine::new(
        embedder.clone(),
        vectors.clone(),
        keywords.clone(),
        EngineConfig::default(),
    )
    .unwrap();
    Stack {
        engine,
        keywords,
        vectors,
        embedder,
    }
}

fn doc(id: &str, title: &str, text: &str) -> Document {
    Document::new(
        DocumentId::new(id).unwrap(),
        format!("fixtures/{id}"),
        title,
        text,
        ChunkKind::Prose,
    )
    .unwrap()
}

const BREAD_V1: &str = "Sourdough bread needs a starter, flour, water and salt.";
const BREAD_V2: &str = "Rye bread is dense and sour; proof it in a banneton overnight.";

/// A changed version of bread.md and a new document: the batch whose keyword write fails.
fn second_batch() -> Vec<Document> {
    vec![
        doc("bread.md", "Bread", BREAD_V2),
        doc(
            "tea.md",
            "Tea",
            "Green tea steeps for two minutes in water just below boiling.",
        ),
    ]
}

async fn ingest(engine: &Engine, docs: Vec<Document>) -> crag_engine::Result<()> {
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .map(|_| ())
}

async fn hit_documents(engine: &Engine, query: &str) -> Vec<String> {
    let retrieval = engine
        .retrieve(&Query::new(query).unwrap(), TopK::new(10).unwrap())
        .await
        .unwrap();
    retrieval
        .hits
        .iter()
        .map(|h| h.chunk.document_id.as_str().to_owned())
        .collect()
}

async fn catalogue(stack: &Stack) -> Vec<DocumentEntry> {
    stack.keywords.documents().await.unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_write_is_never_served_by_half_and_is_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        data_dir: dir.path().join("data"),
        ..Config::default()
    };
    let stack = stack(&config).await;
    let engine = &stack.engine;
    ingest(
        engine,
        vec![
            doc("bread.md", "Bread", BREAD_V1),
            doc(
                "fusion.md",
                "Fusion",
                "Reciprocal rank fusion merges the keyword list and the vector list.",
            ),
        ],
    )
    .await
    .unwrap();
    let before = catalogue(&stack).await;

    // The keyword write of a batch fails after its vectors were written.
    stack.keywords.failing.store(true, Ordering::SeqCst);
    let failed = ingest(engine, second_batch()).await;
    assert!(failed.is_err(), "the failed write is reported");
    stack.keywords.failing.store(false, Ordering::SeqCst);
    assert_eq!(
        catalogue(&stack).await,
        before,
        "the catalogue still lists the old versions, nothing was lost"
    );
    let vector_side = stack.vectors.documents().await.unwrap();
    assert!(
        vector_side.iter().all(|d| d.id.as_str() != "tea.md"),
        "the new document's vectors were taken back: {vector_side:?}"
    );
    assert!(!hit_documents(engine, "green tea steeping water")
        .await
        .contains(&"tea.md".to_owned()));
    let bm25 = engine
        .retrieve_keyword(&Query::new("sourdough").unwrap(), TopK::new(3).unwrap())
        .await
        .unwrap();
    assert_eq!(
        bm25[0].chunk.text, BREAD_V1,
        "the old version is still served"
    );

    // A crash between the two writes: vectors of a document the catalogue never got.
    let ghost_text = "The lighthouse keeper trims the lamp wick before dusk.";
    let ghost = Chunk::new(
        ChunkId::for_document(&DocumentId::new("ghost.md").unwrap(), 0),
        DocumentId::new("ghost.md").unwrap(),
        "fixtures/ghost.md",
        "Ghost",
        ghost_text,
        Span::new(0, ghost_text.len() as u64, 1, 1).unwrap(),
        ChunkKind::Prose,
        "ghost-hash",
    )
    .unwrap();
    let vector = stack
        .embedder
        .embed(&[format!("Ghost\n{ghost_text}")])
        .await
        .unwrap()
        .remove(0);
    stack
        .vectors
        .upsert(&[EmbeddedChunk {
            chunk: ghost,
            vector,
        }])
        .await
        .unwrap();
    assert!(
        !hit_documents(engine, "lighthouse keeper lamp wick")
            .await
            .contains(&"ghost.md".to_owned()),
        "a query never returns a document outside the catalogue"
    );

    let report = engine.reconcile().await.unwrap();
    assert_eq!(report.documents_checked, 2);
    assert_eq!(
        report.orphans_removed,
        vec![DocumentId::new("ghost.md").unwrap()]
    );
    assert_eq!(
        report.documents_repaired,
        vec![DocumentId::new("bread.md").unwrap()],
        "bread.md's vectors were of the version the catalogue does not hold"
    );
    assert_eq!(report.chunks_embedded, 1);
    assert_eq!(
        stack.vectors.documents().await.unwrap(),
        catalogue(&stack).await
    );
    let bread0 = ChunkId::for_document(&DocumentId::new("bread.md").unwrap(), 0);
    let stored = stack.vectors.vectors(&[bread0]).await.unwrap();
    let expected = stack
        .embedder
        .embed(&[format!("Bread\n{BREAD_V1}")])
        .await
        .unwrap()
        .remove(0);
    assert!(
        cosine(&stored[0].1, &expected) > 0.999,
        "the rebuilt vector embeds the catalogued text"
    );
    assert!(
        !engine.reconcile().await.unwrap().repaired(),
        "reconciling is idempotent"
    );

    // The failed ingestion, run again, completes.
    ingest(engine, second_batch()).await.unwrap();
    assert!(hit_documents(engine, "green tea steeping water")
        .await
        .contains(&"tea.md".to_owned()));
    assert_eq!(
        stack.vectors.documents().await.unwrap(),
        catalogue(&stack).await
    );

    // Vectors lost while the service was down are rebuilt when it starts.
    let fusion = DocumentId::new("fusion.md").unwrap();
    stack
        .vectors
        .delete_documents(std::slice::from_ref(&fusion))
        .await
        .unwrap();
    let listed = catalogue(&stack).await;
    drop(stack);
    let restarted = crag_app::compose::engine(&config).await.unwrap();
    assert!(
        hit_documents(&restarted, "reciprocal rank fusion vector list")
            .await
            .contains(&"fusion.md".to_owned())
    );
    assert!(!restarted.reconcile().await.unwrap().repaired());
    let stats = restarted.stats().await.unwrap();
    assert_eq!(stats.vector_chunks, stats.keyword_chunks);
    assert_eq!(stats.documents, listed.len());
}
