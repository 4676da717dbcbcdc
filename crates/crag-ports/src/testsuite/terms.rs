//! The term-graph contract.

use crag_core::{ChunkId, ChunkTerms, DocumentId, TermNeighbour};

use crate::TermGraph;

fn doc(id: &str) -> DocumentId {
    DocumentId::new(id).expect("valid document id")
}

fn chunk(document: &str, ordinal: usize, terms: &[&str]) -> ChunkTerms {
    let document = doc(document);
    ChunkTerms {
        chunk: ChunkId::for_document(&document, ordinal),
        document,
        terms: terms.iter().map(|t| (*t).to_owned()).collect(),
    }
}

fn owned(terms: &[&str]) -> Vec<String> {
    terms.iter().map(|t| (*t).to_owned()).collect()
}

fn edge(term: &str, together: u64, frequency: u64) -> TermNeighbour {
    TermNeighbour {
        term: term.to_owned(),
        together,
        frequency,
    }
}

/// Runs the term-graph contract on `graph` (fresh and empty): frequencies and neighbours
/// (counts, order, `min_together`, `limit`, a term never its own neighbour, duplicate terms in
/// a chunk counted once), replacing and deleting documents, odd input, and 10 concurrent
/// replaces of different documents that all land.
pub async fn term_graph_suite(graph: &dyn TermGraph) {
    assert_eq!(graph.chunk_count().await.expect("count"), 0, "starts empty");
    assert!(graph.documents().await.expect("documents").is_empty());
    assert!(graph
        .neighbours("p53", 1, 10)
        .await
        .expect("neighbours")
        .is_empty());

    let chunks = vec![
        chunk("a.md", 0, &["p53", "tumour", "apoptosis", "p53"]),
        chunk("a.md", 1, &["p53", "tumour", "mdm2"]),
        chunk("b.md", 0, &["apoptosis", "caspas"]),
        chunk("c.md", 0, &[]),
    ];
    graph
        .replace_documents(&[], &chunks)
        .await
        .expect("replace_documents");
    assert_eq!(
        graph.chunk_count().await.expect("count"),
        4,
        "every chunk, even empty"
    );
    assert_eq!(
        graph.documents().await.expect("documents"),
        vec![doc("a.md"), doc("b.md"), doc("c.md")],
        "documents, ordered"
    );
    assert_eq!(
        graph
            .frequencies(&owned(&["p53", "apoptosis", "mdm2", "unknown", ""]))
            .await
            .expect("frequencies"),
        vec![2, 2, 1, 0, 0],
        "frequencies in the order asked, duplicates in a chunk once"
    );
    assert_eq!(
        graph.neighbours("p53", 1, 10).await.expect("neighbours"),
        vec![
            edge("tumour", 2, 2),
            edge("apoptosis", 1, 2),
            edge("mdm2", 1, 1)
        ],
        "most shared first, ties by term, never the term itself"
    );
    assert_eq!(
        graph.neighbours("p53", 2, 10).await.expect("neighbours"),
        vec![edge("tumour", 2, 2)],
        "min_together"
    );
    assert_eq!(
        graph.neighbours("p53", 1, 1).await.expect("neighbours"),
        vec![edge("tumour", 2, 2)],
        "limit"
    );
    assert!(graph
        .neighbours("p53", 1, 0)
        .await
        .expect("limit 0")
        .is_empty());
    assert!(graph
        .neighbours("", 1, 10)
        .await
        .expect("empty term")
        .is_empty());
    assert!(graph.frequencies(&[]).await.expect("no terms").is_empty());

    // Re-ingesting a.md: its old chunks go, the new ones count.
    graph
        .replace_documents(&[doc("a.md")], &[chunk("a.md", 0, &["p53", "caspas"])])
        .await
        .expect("replace");
    assert_eq!(graph.chunk_count().await.expect("count"), 3);
    assert_eq!(
        graph.neighbours("p53", 1, 10).await.expect("neighbours"),
        vec![edge("caspas", 1, 2)],
        "the replaced chunks are gone"
    );
    assert_eq!(
        graph.neighbours("caspas", 1, 10).await.expect("neighbours"),
        vec![edge("apoptosis", 1, 1), edge("p53", 1, 1)]
    );

    graph
        .delete_documents(&[doc("b.md"), doc("never-stored.md")])
        .await
        .expect("delete");
    assert_eq!(
        graph.documents().await.expect("documents"),
        vec![doc("a.md"), doc("c.md")]
    );
    assert_eq!(
        graph
            .frequencies(&owned(&["apoptosis", "caspas"]))
            .await
            .expect("frequencies"),
        vec![0, 1],
        "a deleted document's terms are gone"
    );
    graph
        .delete_documents(&[doc("a.md"), doc("c.md")])
        .await
        .expect("delete");
    assert_eq!(graph.chunk_count().await.expect("count"), 0, "empty again");

    // Concurrent replaces of different documents all land.
    let writes = (0..10).map(|i| {
        let document = format!("concurrent-{i}.md");
        async move {
            let c = chunk(&document, 0, &["shared", &format!("own{i}")]);
            let replaced = [c.document.clone()];
            graph.replace_documents(&replaced, &[c]).await
        }
    });
    for result in futures::future::join_all(writes).await {
        result.expect("concurrent replace");
    }
    assert_eq!(graph.chunk_count().await.expect("count"), 10);
    assert_eq!(
        graph
            .frequencies(&owned(&["shared"]))
            .await
            .expect("frequencies"),
        vec![10]
    );
    assert_eq!(
        graph.neighbours("shared", 1, 100).await.expect("n").len(),
        10
    );
}
