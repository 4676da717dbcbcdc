//! The SQLite term graph against a real database file.

use crag_core::{ChunkId, ChunkTerms, DocumentId};
use crag_graphs::SqliteTermGraph;
use crag_ports::testsuite::term_graph_suite;
use crag_ports::TermGraph;

#[tokio::test]
async fn a_sqlite_file_passes_the_term_graph_suite() {
    let dir = tempfile::tempdir().unwrap();
    let graph = SqliteTermGraph::open(&dir.path().join("nested/terms.sqlite"))
        .await
        .unwrap();
    term_graph_suite(&graph).await;
}

#[tokio::test]
async fn an_in_memory_database_passes_the_term_graph_suite() {
    term_graph_suite(&SqliteTermGraph::in_memory().await.unwrap()).await;
}

#[tokio::test]
async fn the_terms_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("terms.sqlite");
    let document = DocumentId::new("a.md").unwrap();
    {
        let graph = SqliteTermGraph::open(&path).await.unwrap();
        graph
            .replace_documents(
                &[],
                &[ChunkTerms {
                    chunk: ChunkId::for_document(&document, 0),
                    document: document.clone(),
                    terms: vec!["p53".into(), "mdm2".into()],
                }],
            )
            .await
            .unwrap();
    }
    let graph = SqliteTermGraph::open(&path).await.unwrap();
    assert_eq!(graph.documents().await.unwrap(), vec![document]);
    let n = graph.neighbours("mdm2", 1, 5).await.unwrap();
    assert_eq!(n.len(), 1);
    assert_eq!(
        (n[0].term.as_str(), n[0].together, n[0].frequency),
        ("p53", 1, 1)
    );
}
