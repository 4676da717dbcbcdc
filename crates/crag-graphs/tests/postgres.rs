//! The Postgres symbol index and term graph against a real server: `CRAG_TEST_POSTGRES_URL`
//! or, when it is unset, a throwaway cluster started by `scripts/pg-cluster.sh` (the tests
//! fail, never pass, when no Postgres can be had). Each test works in schemas of its own.

use crag_ports::testsuite::postgres_url;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crag_core::{
    ChunkId, ChunkTerms, CodeMeta, DocumentId, FileSymbols, StoredSymbol, SymbolDef, SymbolKind,
};
use crag_graphs::{drop_schema, PostgresGraphs, PostgresGraphsConfig};
use crag_ports::testsuite::{symbol_index_suite, term_graph_suite};
use crag_ports::{ErrorKind, SymbolIndex, SymbolLookup, TermGraph};

/// A schema name no other test (of this run or an earlier one) uses.
fn fresh_schema(test: &str) -> String {
    static MADE: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "test/{test}/{nanos:x}-{}-{}",
        std::process::id(),
        MADE.fetch_add(1, Ordering::SeqCst)
    )
}

async fn graphs(url: &str, schema: &str) -> PostgresGraphs {
    let config = PostgresGraphsConfig {
        schema: schema.to_owned(),
        max_connections: 4,
        ..PostgresGraphsConfig::default()
    };
    PostgresGraphs::connect(url, &config)
        .await
        .unwrap_or_else(|e| panic!("cannot open schema {schema} at {url}: {e}"))
}

#[tokio::test]
async fn postgres_passes_the_symbol_suite() {
    let url = postgres_url();
    let mut schemas = Vec::new();
    symbol_index_suite(|| {
        let schema = fresh_schema("symbols");
        schemas.push(schema.clone());
        let url = url.clone();
        async move { Box::new(graphs(&url, &schema).await.symbol_index()) as Box<dyn SymbolIndex> }
    })
    .await;
    for schema in schemas {
        assert!(drop_schema(&url, &schema).await.unwrap(), "{schema}");
    }
}

#[tokio::test]
async fn postgres_passes_the_term_graph_suite() {
    let url = postgres_url();
    let schema = fresh_schema("terms");
    term_graph_suite(&graphs(&url, &schema).await.term_graph()).await;
    assert!(drop_schema(&url, &schema).await.unwrap());
}

fn file(document: &DocumentId, version: u32) -> FileSymbols {
    let definitions: Vec<StoredSymbol> = (0..3)
        .map(|i| {
            let chunk = ChunkId::for_document(document, i);
            StoredSymbol {
                document_id: document.clone(),
                path: document.as_str().into(),
                chunk_id: chunk,
                def: SymbolDef {
                    name: format!("f{i}"),
                    qualified: format!("auth::v{version}::f{i}"),
                    kind: SymbolKind::Function,
                    language: "rust".into(),
                    line_start: version * 10 + 1,
                    line_end: version * 10 + 2,
                    signature: format!("fn f{i}()"),
                },
            }
        })
        .collect();
    let chunks = definitions
        .iter()
        .map(|s| {
            let meta = CodeMeta {
                language: "rust".into(),
                symbol: s.def.name.clone(),
                symbol_kind: s.def.kind,
                qualified: s.def.qualified.clone(),
                signature: s.def.signature.clone(),
                part: 0,
                parts: 1,
            };
            (s.chunk_id.clone(), meta)
        })
        .collect();
    FileSymbols {
        definitions,
        references: Vec::new(),
        chunks,
    }
}

/// Two handles with pools of their own, as two processes would have, write one document
/// and different ones at once: every write lands whole, none is mixed with another.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writers_on_two_connections_never_mix_a_document() {
    let url = postgres_url();
    let schema = fresh_schema("writers");
    let (a, b) = (graphs(&url, &schema).await, graphs(&url, &schema).await);
    let shared = DocumentId::new("src/auth.rs").unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for version in 0..16u32 {
        let index = if version % 2 == 0 {
            a.symbol_index()
        } else {
            b.symbol_index()
        };
        let terms = if version % 2 == 0 {
            a.term_graph()
        } else {
            b.term_graph()
        };
        let shared = shared.clone();
        tasks.spawn(async move {
            index
                .replace_document(&shared, &file(&shared, version))
                .await
                .expect("replace the shared document");
            let own = DocumentId::new(format!("src/own{version}.rs")).unwrap();
            index
                .replace_document(&own, &file(&own, version))
                .await
                .expect("replace an own document");
            let chunks: Vec<ChunkTerms> = (0..2)
                .map(|i| ChunkTerms {
                    chunk: ChunkId::for_document(&shared, i),
                    document: shared.clone(),
                    terms: vec![format!("v{version}"), "auth".into()],
                })
                .collect();
            terms
                .replace_documents(std::slice::from_ref(&shared), &chunks)
                .await
                .expect("replace the shared terms");
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("writer task");
    }
    let index = a.symbol_index();
    assert_eq!(
        index.count().await.unwrap(),
        3 * 17,
        "one version of each document"
    );
    let found = index
        .lookup(
            &SymbolLookup::NameInPath {
                name: "f0".into(),
                path: "auth.rs".into(),
            },
            50,
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let version = found[0].def.line_start / 10;
    let whole: Vec<u32> = index
        .definitions_in(
            &(0..3)
                .map(|i| ChunkId::for_document(&shared, i))
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap()
        .iter()
        .map(|s| s.def.line_start / 10)
        .collect();
    assert_eq!(
        whole,
        vec![version; 3],
        "the shared document is one version, whole"
    );

    let graph = b.term_graph();
    assert_eq!(
        graph.chunk_count().await.unwrap(),
        2,
        "the last replace's chunks only"
    );
    let auth = graph.neighbours("auth", 1, 10).await.unwrap();
    assert_eq!(auth.len(), 1, "one version's term: {auth:?}");
    assert_eq!((auth[0].together, auth[0].frequency), (2, 2));
    assert!(drop_schema(&url, &schema).await.unwrap());
}

#[tokio::test]
async fn the_graphs_survive_a_reconnect_and_a_dropped_schema_is_gone() {
    let url = postgres_url();
    let schema = fresh_schema("reconnect");
    let document = DocumentId::new("src/auth.rs").unwrap();
    {
        let g = graphs(&url, &schema).await;
        g.symbol_index()
            .replace_document(&document, &file(&document, 1))
            .await
            .unwrap();
        let chunk = ChunkTerms {
            chunk: ChunkId::for_document(&document, 0),
            document: document.clone(),
            terms: vec!["p53".into(), "mdm2".into()],
        };
        g.term_graph()
            .replace_documents(&[], &[chunk])
            .await
            .unwrap();
    }
    let again = graphs(&url, &schema).await;
    assert_eq!(again.schema(), schema);
    assert_eq!(again.symbol_index().count().await.unwrap(), 3, "kept");
    assert_eq!(
        again.term_graph().documents().await.unwrap(),
        vec![document.clone()]
    );

    // Another schema of the same database is another index.
    let other = fresh_schema("reconnect");
    assert_eq!(
        graphs(&url, &other)
            .await
            .symbol_index()
            .count()
            .await
            .unwrap(),
        0
    );

    assert!(drop_schema(&url, &schema).await.unwrap(), "dropped");
    assert!(!drop_schema(&url, &schema).await.unwrap(), "gone already");
    assert!(drop_schema(&url, &other).await.unwrap());
    let fresh = graphs(&url, &schema).await;
    assert_eq!(
        fresh.symbol_index().count().await.unwrap(),
        0,
        "recreated empty"
    );
    assert!(drop_schema(&url, &schema).await.unwrap());
}

#[tokio::test]
async fn bad_urls_schemas_and_text_are_refused() {
    let err = PostgresGraphs::connect("not a url", &PostgresGraphsConfig::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    let url = postgres_url();
    for schema in ["", "pg_crag"] {
        let config = PostgresGraphsConfig {
            schema: schema.into(),
            ..PostgresGraphsConfig::default()
        };
        let err = PostgresGraphs::connect(&url, &config).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{schema}: {err}");
    }

    let schema = fresh_schema("nul");
    let g = graphs(&url, &schema).await;
    let document = DocumentId::new("src/auth.rs").unwrap();
    let mut symbols = file(&document, 1);
    symbols.definitions[0].def.signature = "fn f\0()".into();
    let err = g
        .symbol_index()
        .replace_document(&document, &symbols)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(
        g.symbol_index().count().await.unwrap(),
        0,
        "nothing written"
    );
    let index = g.symbol_index();
    assert!(index
        .lookup(&SymbolLookup::Name("f\0".into()), 5)
        .await
        .unwrap()
        .is_empty());
    let terms = g.term_graph();
    assert_eq!(terms.frequencies(&["a\0b".into()]).await.unwrap(), vec![0]);
    assert!(terms.neighbours("a\0b", 1, 5).await.unwrap().is_empty());
    assert!(drop_schema(&url, &schema).await.unwrap());
}
