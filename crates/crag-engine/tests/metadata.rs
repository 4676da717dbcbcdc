//! Metadata through the engine (over the in-memory fakes): what ingestion derives and keeps,
//! filters inside both legs (a selective filter still fills `top_k`), refused filters, and
//! Corrective RAG's further retrievals honouring the request's filter.

use std::sync::Arc;

use crag_core::{ChunkFilter, ChunkKind, Document, DocumentId, MetadataFilter, Query, TopK};
use crag_engine::readers::Scope;
use crag_engine::{Engine, EngineConfig, NoProgress, QueryRequest};
use crag_ports::fakes::{HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex};
use crag_ports::ErrorKind;
use serde_json::json;

/// Forty documents about bread, each in one of ten buckets (`bucket`: a number, `team`: a
/// text), the words of bucket 3 deliberately the rarest in the query's terms.
async fn engine() -> Engine {
    let embedder = Arc::new(HashEmbedder::new(64));
    let keywords = Arc::new(InMemoryKeywordIndex::default());
    let vectors = Arc::new(InMemoryVectorIndex::new(64));
    let engine = Engine::new(embedder, vectors, keywords, EngineConfig::default()).unwrap();
    let documents: Vec<Document> = (0..40)
        .map(|i| {
            let bucket = i % 10;
            let text = if bucket == 3 {
                format!("A note {i} on rye flour.")
            } else {
                format!("Bread {i} bakes in a hot oven; oven bread {i} has a crust.")
            };
            let metadata = json!({"bucket": bucket, "team": format!("t{bucket}")});
            Document::new(
                DocumentId::new(format!("doc{i}.md")).unwrap(),
                format!("docs/doc{i}.md"),
                format!("Doc {i}"),
                text,
                ChunkKind::Prose,
            )
            .unwrap()
            .with_metadata(metadata.as_object().unwrap().clone())
        })
        .collect();
    engine
        .ingest(documents, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    engine
}

fn filter(value: serde_json::Value) -> ChunkFilter {
    ChunkFilter {
        metadata: Some(MetadataFilter::from_json(&value).unwrap()),
        ..ChunkFilter::default()
    }
}

#[tokio::test]
async fn a_selective_filter_fills_top_k_inside_both_legs() {
    let engine = engine().await;
    let query = Query::new("bread oven rye").unwrap();
    let top_k = TopK::new(4).unwrap();
    let unfiltered = engine.retrieve(&query, top_k).await.unwrap();
    assert!(
        unfiltered
            .hits
            .iter()
            .all(|h| h.chunk.metadata["bucket"] != json!(3)),
        "bucket 3 is not in the unfiltered top 4"
    );
    let retrieval = engine
        .retrieve_with(&query, top_k, &filter(json!({"bucket": 3})))
        .await
        .unwrap();
    let mut documents: Vec<&str> = retrieval
        .hits
        .iter()
        .map(|h| h.chunk.document_id.as_str())
        .collect();
    documents.sort_unstable();
    assert_eq!(documents, ["doc13.md", "doc23.md", "doc3.md", "doc33.md"]);
    for hit in &retrieval.hits {
        let metadata = &hit.chunk.metadata;
        assert_eq!(metadata["team"], json!("t3"));
        assert_eq!(metadata["kind"], json!("prose"), "derived fields are kept");
        assert_eq!(metadata["source"], json!(hit.chunk.source));
    }
    let none = engine
        .retrieve_with(&query, top_k, &filter(json!({"bucket": 99})))
        .await
        .unwrap();
    assert!(
        none.hits.is_empty(),
        "a filter matching nothing returns nothing"
    );
    let derived = engine
        .retrieve_with(&query, top_k, &filter(json!({"source": "docs/doc7.md"})))
        .await
        .unwrap();
    assert_eq!(derived.hits.len(), 1);
    assert_eq!(derived.hits[0].chunk.document_id.as_str(), "doc7.md");
}

#[tokio::test]
async fn filters_on_unknown_fields_or_kinds_are_refused() {
    let engine = engine().await;
    let query = Query::new("bread").unwrap();
    let top_k = TopK::new(3).unwrap();
    for (bad, expected) in [
        (json!({"colour": "red"}), "unknown metadata field `colour`"),
        (
            json!({"bucket": "three"}),
            "holds number, compared with a string",
        ),
        (
            json!({"team": {"$gt": 2}}),
            "holds string, compared with a number",
        ),
    ] {
        let err = engine
            .retrieve_with(&query, top_k, &filter(bad))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains(expected), "{err}");
    }
}

#[tokio::test]
async fn corrective_rag_and_its_further_retrievals_honour_the_filter() {
    let engine = engine().await;
    let mut request = QueryRequest::new(
        Query::new("bread oven crust rye flour").unwrap(),
        TopK::new(5).unwrap(),
    );
    request.filter = filter(json!({"$or": [{"team": "t3"}, {"bucket": {"$gte": 8}}]}));
    let outcome = engine.query(&request).await.unwrap();
    assert!(!outcome.artifacts.is_empty());
    for artifact in &outcome.artifacts {
        let bucket = artifact.chunk.metadata["bucket"].as_i64().unwrap();
        assert!(
            bucket == 3 || bucket >= 8,
            "{} in bucket {bucket}",
            artifact.chunk.id
        );
    }
}
