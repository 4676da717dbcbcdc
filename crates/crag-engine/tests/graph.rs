//! The knowledge graph of prose over the in-memory fakes: key terms written at ingest and kept
//! in step with deletes, an existing index filled in, two-hop query expansion, and the
//! `knowledge_graph` route.

use std::collections::BTreeSet;
use std::sync::Arc;

use crag_core::{ChunkFilter, ChunkKind, Document, DocumentId, Query, TopK};
use crag_engine::{
    CragComponents, CragConfig, Engine, EngineConfig, GraphConfig, NoProgress, QueryRequest, Scope,
};
use crag_ports::fakes::{
    HashEmbedder, InMemoryKeywordIndex, InMemoryTermGraph, InMemoryVectorIndex,
};
use crag_ports::TermGraph;
use crag_routing::{GraphRouting, Route, RouterConfig};

/// p53 and mdm2 share two chunks, mdm2 and nutlin two others: nutlin is two hops from p53.
const CORPUS: [(&str, &str, &str); 7] = [
    ("a.md", "alpha", "p53 regulates mdm2 tumour"),
    ("b.md", "beta", "p53 mdm2 feedback loop"),
    ("c.md", "gamma", "mdm2 inhibited nutlin compounds"),
    ("d.md", "delta", "nutlin mdm2 binding"),
    ("e.md", "epsilon", "nutlin leukemia trials"),
    ("f.md", "zeta", "sourdough bread starter"),
    ("g.md", "eta", "rocket orbit velocity"),
];

struct Fixture {
    engine: Engine,
    keywords: Arc<InMemoryKeywordIndex>,
    vectors: Arc<InMemoryVectorIndex>,
    graph: Arc<InMemoryTermGraph>,
}

fn graph_config(enabled: bool) -> GraphConfig {
    GraphConfig {
        enabled,
        // The corpus is tiny: every term is in more than 5 % of it.
        max_seed_share: 1.0,
        ..GraphConfig::default()
    }
}

fn engine_over(
    keywords: &Arc<InMemoryKeywordIndex>,
    vectors: &Arc<InMemoryVectorIndex>,
    graph: &Arc<InMemoryTermGraph>,
    config: GraphConfig,
) -> Engine {
    Engine::new(
        Arc::new(HashEmbedder::new(32)),
        vectors.clone(),
        keywords.clone(),
        EngineConfig {
            graph: config,
            ..EngineConfig::default()
        },
    )
    .unwrap()
    .with_term_graph(graph.clone())
}

fn fixture(config: GraphConfig) -> Fixture {
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let vectors = Arc::new(InMemoryVectorIndex::new(32));
    let graph = Arc::new(InMemoryTermGraph::default());
    Fixture {
        engine: engine_over(&keywords, &vectors, &graph, config),
        keywords,
        vectors,
        graph,
    }
}

fn corpus() -> Vec<Document> {
    CORPUS
        .iter()
        .map(|(id, title, text)| {
            Document::new(
                DocumentId::new(*id).unwrap(),
                *id,
                *title,
                *text,
                ChunkKind::Prose,
            )
            .unwrap()
        })
        .collect()
}

async fn ingest(engine: &Engine, docs: Vec<Document>) -> crag_engine::IngestReport {
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap()
}

fn query(text: &str) -> Query {
    Query::new(text).unwrap()
}

/// The documents the keyword leg found.
fn keyword_documents(hits: &[crag_core::FusedHit]) -> BTreeSet<String> {
    hits.iter()
        .filter(|h| h.keyword.is_some())
        .map(|h| h.chunk.document_id.as_str().to_owned())
        .collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn a_query_is_expanded_by_terms_one_and_two_hops_away() {
    let f = fixture(graph_config(true));
    ingest(&f.engine, corpus()).await;
    assert_eq!(f.graph.chunk_count().await.unwrap(), 7);

    let expansion = f.engine.graph_expansion(&query("p53")).await.unwrap();
    assert_eq!(expansion.seeds, vec!["p53"]);
    let terms: Vec<(&str, u8, &str)> = expansion
        .terms
        .iter()
        .map(|t| (t.term.as_str(), t.hops, t.via.as_str()))
        .collect();
    // Terms sharing one chunk only (regulates, feedback...) are chance, not neighbours.
    assert_eq!(terms, vec![("mdm2", 1, "p53"), ("nutlin", 2, "mdm2")]);
    // mdm2: 2 shared chunks / sqrt(2 × 4); nutlin: 2 / sqrt(4 × 3) × that × decay 0.5.
    assert!((expansion.terms[0].score - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-3);
    assert!((expansion.terms[1].score - 0.2041).abs() < 1e-3);
    assert!(expansion.describe().contains("nutlin (0.20 via mdm2)"));

    let top = TopK::new(10).unwrap();
    let plain = f.engine.retrieve(&query("p53"), top).await.unwrap();
    assert_eq!(keyword_documents(&plain.hits), set(&["a.md", "b.md"]));
    let (expanded, _) = f
        .engine
        .retrieve_graph(&query("p53"), top, &ChunkFilter::default(), None)
        .await
        .unwrap();
    assert_eq!(
        keyword_documents(&expanded.hits),
        set(&["a.md", "b.md", "c.md", "d.md", "e.md"]),
        "the related terms reach the documents without the query's own"
    );

    // One hop only: nutlin is not reached.
    let one_hop = fixture(GraphConfig {
        hops: 1,
        ..graph_config(true)
    });
    ingest(&one_hop.engine, corpus()).await;
    let e = one_hop.engine.graph_expansion(&query("p53")).await.unwrap();
    assert_eq!(e.terms.len(), 1);
    assert_eq!(e.terms[0].term, "mdm2");

    // A query of unknown or no terms is kept as it is.
    let none = f.engine.graph_expansion(&query("zzz ???")).await.unwrap();
    assert!(none.terms.is_empty() && none.seeds.is_empty());
    assert!(none.describe().contains("query kept"));
}

#[tokio::test]
async fn deletes_and_re_ingests_keep_the_graph_in_step() {
    let f = fixture(graph_config(true));
    ingest(&f.engine, corpus()).await;
    assert!(f
        .engine
        .delete_document(&DocumentId::new("c.md").unwrap())
        .await
        .unwrap());
    let e = f.engine.graph_expansion(&query("p53")).await.unwrap();
    assert_eq!(
        e.terms.len(),
        1,
        "nutlin and mdm2 share one chunk now: {e:?}"
    );

    // d.md changes: mdm2 leaves it.
    let mut docs = corpus();
    docs.retain(|d| d.id.as_str() != "c.md");
    docs[2] = Document::new(
        DocumentId::new("d.md").unwrap(),
        "d.md",
        "delta",
        "nutlin binding assays",
        ChunkKind::Prose,
    )
    .unwrap();
    let report = ingest(&f.engine, docs).await;
    assert_eq!(report.documents_updated, 1);
    let held: Vec<String> = f
        .graph
        .documents()
        .await
        .unwrap()
        .iter()
        .map(|d| d.as_str().to_owned())
        .collect();
    assert_eq!(held, vec!["a.md", "b.md", "d.md", "e.md", "f.md", "g.md"]);
    assert_eq!(
        f.graph.frequencies(&["mdm2".into()]).await.unwrap(),
        vec![2],
        "the replaced chunk's terms are gone"
    );
}

#[tokio::test]
async fn an_index_ingested_without_the_graph_is_filled_in() {
    let f = fixture(graph_config(false));
    ingest(&f.engine, corpus()).await;
    assert_eq!(
        f.graph.chunk_count().await.unwrap(),
        0,
        "switched off: nothing written"
    );
    assert!(!f.engine.has_term_graph());

    let on = engine_over(&f.keywords, &f.vectors, &f.graph, graph_config(true));
    let report = ingest(&on, corpus()).await;
    assert_eq!(report.documents_unchanged, 7);
    assert_eq!(report.graph_documents_filled, 7);
    let e = on.graph_expansion(&query("p53")).await.unwrap();
    assert_eq!(e.terms.len(), 2);
    let again = ingest(&on, corpus()).await;
    assert_eq!(again.graph_documents_filled, 0, "nothing left to fill in");
}

fn with_route(engine: Engine, knowledge_graph: GraphRouting) -> Engine {
    let config = CragConfig {
        router: RouterConfig {
            knowledge_graph,
            ..RouterConfig::default()
        },
        ..CragConfig::default()
    };
    engine
        .with_crag(CragComponents::heuristic(config).unwrap())
        .unwrap()
}

#[tokio::test]
async fn the_knowledge_graph_route_expands_the_query_and_says_how() {
    let f = fixture(graph_config(true));
    ingest(&f.engine, corpus()).await;
    let engine = with_route(f.engine, GraphRouting::Relational);
    let request = QueryRequest {
        use_crag: false,
        ..QueryRequest::new(
            query("how is p53 related to cancer?"),
            TopK::new(5).unwrap(),
        )
    };
    let o = engine.query(&request).await.unwrap();
    assert_eq!(o.route.route, Route::KnowledgeGraph);
    assert!(o.route.reason.contains("related to"), "{}", o.route.reason);
    assert!(o.route.reason.contains("mdm2"), "{}", o.route.reason);
    assert!(o.warnings.is_empty(), "{:?}", o.warnings);

    let plain = QueryRequest {
        use_crag: false,
        ..QueryRequest::new(query("what does p53 do?"), TopK::new(5).unwrap())
    };
    assert_eq!(
        engine.query(&plain).await.unwrap().route.route,
        Route::Single
    );
}

#[tokio::test]
async fn without_a_term_graph_the_route_retrieves_the_query_as_asked_with_a_warning() {
    let f = fixture(graph_config(false));
    ingest(&f.engine, corpus()).await;
    let engine = with_route(f.engine, GraphRouting::All);
    let request = QueryRequest {
        use_crag: false,
        ..QueryRequest::new(query("p53"), TopK::new(5).unwrap())
    };
    let o = engine.query(&request).await.unwrap();
    assert_eq!(o.route.route, Route::KnowledgeGraph);
    assert!(!o.artifacts.is_empty());
    assert!(
        o.warnings.iter().any(|w| w.contains("needs a term graph")),
        "{:?}",
        o.warnings
    );
}
