//! Support for the corrective actions' unit tests: an engine over the in-memory fakes, a
//! query's run on it and a judged list to correct.

use std::sync::Arc;

use crag_core::{ChunkKind, Document, DocumentId, Evaluation, Query, TopK, Verdict};
use crag_ports::fakes::{HashEmbedder, InMemoryKeywordIndex, InMemoryVectorIndex};

use super::actions::JudgedList;
use super::artifact::Artifact;
use super::components::CragComponents;
use super::config::CragConfig;
use super::outcome::QueryRequest;
use crate::{ChunkingConfig, Engine, EngineConfig, NoProgress, Scope};

/// An engine over the fakes holding `documents` (id, text), with the heuristic evaluator
/// and `config`.
pub(crate) async fn engine(documents: &[(&str, &str)], config: CragConfig) -> Engine {
    engine_with(documents, CragComponents::heuristic(config).unwrap()).await
}

/// An engine over the fakes holding `documents` (id, text), with Corrective RAG's `parts`.
pub(crate) async fn engine_with(documents: &[(&str, &str)], parts: CragComponents) -> Engine {
    let engine = Engine::new(
        Arc::new(HashEmbedder::new(64)),
        Arc::new(InMemoryVectorIndex::new(64)),
        Arc::new(InMemoryKeywordIndex::default()),
        EngineConfig {
            chunking: ChunkingConfig {
                chunk_tokens: 64,
                overlap_tokens: 8,
            },
            ..EngineConfig::default()
        },
    )
    .unwrap();
    let docs = documents
        .iter()
        .map(|(id, text)| {
            let id = DocumentId::new(*id).unwrap();
            Document::new(id, "test", "", *text, ChunkKind::Prose).unwrap()
        })
        .collect();
    engine
        .ingest(docs, Vec::new(), &Scope::None, &NoProgress)
        .await
        .unwrap();
    engine.with_crag(parts).unwrap()
}

/// A request for `query`'s top `k`.
pub(crate) fn request(query: &str, k: usize) -> QueryRequest {
    QueryRequest::new(Query::new(query).unwrap(), TopK::new(k).unwrap())
}

/// The retrieval of `request` on `engine`, judged `verdict` with `scores` in rank order
/// (documents beyond them unscored), as the actions receive it.
pub(crate) async fn judged(
    engine: &Engine,
    request: &QueryRequest,
    verdict: Verdict,
    scores: &[f32],
) -> JudgedList {
    let retrieval = engine
        .retrieve_with(&request.query, request.top_k, &request.filter)
        .await
        .unwrap();
    let mut artifacts: Vec<Artifact> = retrieval.hits.into_iter().map(Artifact::from_hit).collect();
    for (a, s) in artifacts.iter_mut().zip(scores) {
        a.relevance = Some(*s);
    }
    let evaluation = Evaluation {
        verdict,
        score: 0.5,
        document_scores: artifacts.iter().map(|a| a.relevance).collect(),
        document_reasons: Vec::new(),
        criteria: Vec::new(),
        reasoning: format!("judged {verdict}"),
        issues: Vec::new(),
    };
    let threshold = engine.crag_runtime().config().ambiguous_filter_threshold;
    JudgedList::new(
        artifacts,
        evaluation,
        retrieval.vector_floor,
        threshold,
        request.query.as_str(),
    )
}
