//! The SQLite symbol index against real database files.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crag_core::{ChunkId, CodeMeta, DocumentId, FileSymbols, StoredSymbol, SymbolDef, SymbolKind};
use crag_graphs::SqliteSymbolIndex;
use crag_ports::testsuite::symbol_index_suite;
use crag_ports::{SymbolIndex, SymbolLookup};

#[tokio::test]
async fn sqlite_files_pass_the_symbol_suite() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let made = AtomicUsize::new(0);
    symbol_index_suite(|| {
        let path = dir
            .path()
            .join(format!("nested/dir/symbols-{}.sqlite", made.fetch_add(1, Ordering::SeqCst)));
        async move { Box::new(SqliteSymbolIndex::open(&path).await.unwrap()) as Box<dyn SymbolIndex> }
    })
    .await;
}

#[tokio::test]
async fn in_memory_databases_pass_the_symbol_suite() {
    symbol_index_suite(|| async {
        Box::new(SqliteSymbolIndex::in_memory().await.unwrap()) as Box<dyn SymbolIndex>
    })
    .await;
}

fn file(document: &DocumentId) -> FileSymbols {
    let chunk = ChunkId::for_document(document, 0);
    let def = SymbolDef {
        name: "verify_user".into(),
        qualified: "auth::Session::verify_user".into(),
        kind: SymbolKind::Method,
        language: "rust".into(),
        line_start: 3,
        line_end: 9,
        signature: "pub fn verify_user(&self) -> bool".into(),
    };
    let meta = CodeMeta {
        language: "rust".into(),
        symbol: def.name.clone(),
        symbol_kind: def.kind,
        qualified: def.qualified.clone(),
        signature: def.signature.clone(),
        part: 0,
        parts: 2,
    };
    FileSymbols {
        definitions: vec![StoredSymbol {
            document_id: document.clone(),
            path: "src/auth.rs".into(),
            chunk_id: chunk.clone(),
            def,
        }],
        references: Vec::new(),
        chunks: vec![(chunk, meta)],
    }
}

#[tokio::test]
async fn symbols_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("symbols.sqlite");
    let document = DocumentId::new("src/auth.rs").unwrap();
    let symbols = file(&document);
    {
        let index = SqliteSymbolIndex::open(&path).await.unwrap();
        index.replace_document(&document, &symbols).await.unwrap();
    }
    let index = SqliteSymbolIndex::open(&path).await.unwrap();
    assert_eq!(index.count().await.unwrap(), 1);
    let found = index
        .lookup(&SymbolLookup::Qualified("Session::verify_user".into()), 10)
        .await
        .unwrap();
    assert_eq!(found, symbols.definitions, "kept across a reopen");
    let chunk = symbols.chunks[0].0.clone();
    let meta = index
        .chunk_meta(std::slice::from_ref(&chunk))
        .await
        .unwrap();
    assert_eq!(meta.get(&chunk), Some(&symbols.chunks[0].1));
}

#[tokio::test]
async fn an_unusable_path_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    let err = SqliteSymbolIndex::open(&blocker.join("symbols.sqlite"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), crag_ports::ErrorKind::Unavailable, "{err}");
}
