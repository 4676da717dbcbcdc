//! Code intelligence end to end over the real adapters (Tantivy, LanceDB, MiniLM in ONNX
//! Runtime, the SQLite symbol index), on a copy of this project's own source: every language
//! present is ingested, source files along their syntax, and editing one function re-embeds
//! only that function's chunk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crag_core::DocumentId;
use crag_engine::readers::{read_path, DEFAULT_MAX_FILE_BYTES};
use crag_engine::{Engine, EngineConfig, NoProgress};
use crag_graphs::SqliteSymbolIndex;
use crag_lancedb::LanceVectorIndex;
use crag_onnx::{default_assets_dir, EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig};
use crag_ports::{KeywordIndex, SymbolIndex, SymbolLookup, VectorIndex};
use crag_tantivy::TantivyKeywordIndex;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

struct Stack {
    engine: Engine,
    keywords: Arc<TantivyKeywordIndex>,
    vectors: Arc<LanceVectorIndex>,
    symbols: Arc<SqliteSymbolIndex>,
}

async fn stack(data: &Path) -> Stack {
    let assets = EmbedderAssets::from_manifest(&default_assets_dir())
        .unwrap_or_else(|e| panic!("assets unavailable: {e}"));
    let embedder = OnnxEmbedder::new(OnnxEmbedderConfig::new(assets)).expect("embedder");
    let keywords = Arc::new(TantivyKeywordIndex::open(&data.join("keyword")).expect("tantivy"));
    let uri = data.join("vectors").to_string_lossy().into_owned();
    let vectors = Arc::new(
        LanceVectorIndex::open(&uri, "chunks", 384)
            .await
            .expect("lancedb"),
    );
    let symbols = Arc::new(
        SqliteSymbolIndex::open(&data.join("symbols.sqlite"))
            .await
            .expect("symbols"),
    );
    let engine = Engine::new(
        Arc::new(embedder),
        vectors.clone(),
        keywords.clone(),
        EngineConfig::default(),
    )
    .expect("engine")
    .with_symbols(symbols.clone());
    Stack {
        engine,
        keywords,
        vectors,
        symbols,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn this_repository_is_ingested_along_its_syntax() {
    let data = tempfile::tempdir().expect("tmp");
    let copy = tempfile::tempdir().expect("tmp");
    let root = copy.path();
    // Rust, Python and shell scripts, protobuf, TOML and Markdown of this project.
    copy_dir(
        &repo().join("crates/crag-syntax"),
        &root.join("crates/crag-syntax"),
    );
    copy_dir(&repo().join("scripts"), &root.join("scripts"));
    copy_dir(&repo().join("proto"), &root.join("proto"));
    std::fs::copy(repo().join("Cargo.toml"), root.join("Cargo.toml")).expect("copy");
    let s = stack(data.path()).await;
    let loaded = read_path(root, DEFAULT_MAX_FILE_BYTES).expect("read");
    let rust = loaded
        .documents
        .iter()
        .filter(|d| d.source.ends_with(".rs"))
        .count();
    let python = loaded
        .documents
        .iter()
        .filter(|d| d.source.ends_with(".py"))
        .count();
    assert!(
        rust >= 5 && python >= 2,
        "{rust} Rust and {python} Python files"
    );
    let report = s
        .engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
        .await
        .expect("ingest");
    // Only files that are neither text nor source are left out (`assets.sha256`).
    assert!(
        report
            .skipped
            .iter()
            .all(|(path, _)| path.ends_with(".sha256")),
        "{:?}",
        report.skipped
    );
    assert_eq!(
        report.syntax_files,
        rust + python,
        "every Rust and Python file cut along its syntax: {report:?}"
    );

    // The symbol index knows the definitions, with their chunks.
    let found = s
        .symbols
        .lookup(&SymbolLookup::Name("parse_file".into()), 5)
        .await
        .expect("lookup");
    let def = found
        .iter()
        .find(|d| d.path.ends_with("crates/crag-syntax/src/lib.rs"))
        .unwrap_or_else(|| panic!("parse_file is defined in lib.rs: {found:?}"));
    assert_eq!(def.def.qualified, "crag_syntax::parse_file");
    let chunk = s
        .keywords
        .get(std::slice::from_ref(&def.chunk_id))
        .await
        .expect("get");
    assert!(
        chunk[0].text.contains("pub fn parse_file("),
        "{:?}",
        chunk[0].text
    );

    // Edit one function: only its chunk is embedded again, the others keep id, text and vector.
    let path = root.join("crates/crag-syntax/src/module_path.rs");
    let document =
        DocumentId::new(path.canonicalize().expect("path").to_string_lossy()).expect("id");
    let before = s.keywords.document_chunks(&document).await.expect("chunks");
    let ids: Vec<_> = before.iter().map(|c| c.id.clone()).collect();
    let vectors_before = s.vectors.vectors(&ids).await.expect("vectors");
    let text = std::fs::read_to_string(&path).expect("read");
    let edited = text.replace(
        "    parts.join(\"::\")\n}",
        "    let joined = parts.join(\"::\");\n    joined\n}",
    );
    assert_ne!(edited, text, "the edit applies");
    std::fs::write(&path, edited).expect("write");
    let loaded = read_path(root, DEFAULT_MAX_FILE_BYTES).expect("read");
    let report = s
        .engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, &NoProgress)
        .await
        .expect("re-ingest");
    assert_eq!(report.documents_updated, 1, "{report:?}");
    let after = s.keywords.document_chunks(&document).await.expect("chunks");
    assert_eq!(
        ids,
        after.iter().map(|c| c.id.clone()).collect::<Vec<_>>(),
        "chunk ids are stable"
    );
    let changed: Vec<&str> = before
        .iter()
        .zip(&after)
        .filter(|(a, b)| a.text != b.text)
        .map(|(a, _)| a.id.as_str())
        .collect();
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert!(changed[0].contains("#module_path"), "{changed:?}");
    assert_eq!(
        report.chunks_embedded, 1,
        "only the changed chunk of module_path is embedded again: {report:?}"
    );
    let vectors_after = s.vectors.vectors(&ids).await.expect("vectors");
    for ((id, a), (_, b)) in vectors_before.iter().zip(&vectors_after) {
        if id.as_str() != changed[0] {
            assert_eq!(a, b, "{id} keeps its vector");
        }
    }
}
