//! A gRPC client of crag: ingests two documents, asks a question, prints the verdict and the
//! context, deletes a document.
//!
//! ```sh
//! crag serve &                                   # or: cargo run -p crag-grpc
//! cargo run -p crag-grpc --example grpc_client -- http://127.0.0.1:50051 "how is bread baked?"
//! CRAG_TOKEN=... cargo run -p crag-grpc --example grpc_client   # when [auth] has tokens
//! ```

use crag_grpc::pb::crag_client::CragClient;
use crag_grpc::pb::{DeleteDocumentRequest, Document, QueryRequest, StatsRequest};
use tonic::metadata::MetadataValue;
use tonic::Request;

/// Adds the bearer token from `CRAG_TOKEN`, if set.
fn authorized<T>(message: T) -> Result<Request<T>, Box<dyn std::error::Error>> {
    let mut request = Request::new(message);
    if let Ok(token) = std::env::var("CRAG_TOKEN") {
        request.metadata_mut().insert(
            "authorization",
            MetadataValue::try_from(format!("Bearer {token}"))?,
        );
    }
    Ok(request)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let endpoint = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:50051".into());
    let question = args
        .next()
        .unwrap_or_else(|| "how long should sourdough bread bake?".into());
    let mut client = CragClient::connect(endpoint).await?;

    let documents = vec![
        Document {
            id: "example/bread.md".into(),
            title: "Bread".into(),
            text: "Sourdough bread bakes for about 45 minutes in a hot oven, until the crust is dark.".into(),
            ..Document::default()
        },
        Document {
            id: "example/fusion.md".into(),
            title: "Fusion".into(),
            text: "Reciprocal rank fusion adds one over sixty plus the rank of a document in each list.".into(),
            ..Document::default()
        },
    ];
    let ingested = client
        .ingest(authorized(tokio_stream::iter(documents))?)
        .await?
        .into_inner();
    println!(
        "ingested: {} added, {} updated, {} unchanged, {} errors",
        ingested.documents_added,
        ingested.documents_updated,
        ingested.documents_unchanged,
        ingested.errors.len()
    );

    let answer = client
        .query(authorized(QueryRequest {
            query: question.clone(),
            top_k: Some(5),
            use_web_search: Some(false),
            session_id: "example".into(),
            ..QueryRequest::default()
        })?)
        .await?
        .into_inner();
    let crag = answer.crag.unwrap_or_default();
    println!(
        "{question:?}: verdict {} (score {:.2}), strategy {}",
        crag.verdict,
        crag.score.unwrap_or_default(),
        crag.correction_strategy
    );
    for a in &answer.artifacts {
        println!("  {} [{}] {}", a.source, a.kind, a.text);
    }

    client
        .delete_document(authorized(DeleteDocumentRequest {
            id: "example/fusion.md".into(),
        })?)
        .await?;
    let stats = client
        .stats(authorized(StatsRequest {})?)
        .await?
        .into_inner();
    println!(
        "index: {} documents, {} chunks",
        stats.documents, stats.keyword_chunks
    );
    Ok(())
}
