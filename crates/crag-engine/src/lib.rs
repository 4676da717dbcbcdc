//! Application services of crag, written against the ports only: ingestion (chunking, change
//! detection, embedding, writing both indexes), hybrid retrieval (BM25 and vectors run
//! concurrently, fused by reciprocal rank fusion or a convex combination of their scores), Corrective RAG ([`Engine::query`]: route,
//! retrieve, judge, correct, refine, pack) and CGRAG ([`Engine::ask`]: answer, name the gaps,
//! fetch them, at most three passes, per session).

pub mod cgrag;
mod chunker;
mod code;
mod config;
mod crag;
mod engine;
mod error;
mod fusion;
mod ingest;
mod knowledge_graph;
mod query_vectors;
pub mod readers;
mod reconcile;
mod retrieval;

pub use cgrag::{
    AskOutcome, AskRequest, CgragComponents, CgragConfig, CodeGapDetector, DetectorKind,
    GapResolution, HistoryConfig, LlmGapDetector, PassReport, SessionSourceConfig, SourceConfig,
    SourcesConfig, StopReason, SESSIONS_OFF,
};
pub use chunker::{chunk_document, ChunkingConfig};
pub use code::CodeConfig;
pub use config::RetrievalScope;
pub use crag::{
    pseudo_query, Artifact, ArtifactOrigin, CalibratedRelevance, CopyReading, CragComponents,
    CragConfig, CragMetrics, EvaluationInput, EvaluationReport, ExpansionStrategy, FailMode,
    HeuristicRelevance, JudgedDocument, LlmRelevance, QueryOutcome, QueryRequest, QueryTimings,
    RerankConfig, RerankOutcome, Stage, MAX_EVALUATED_DOCUMENTS,
};
pub use crag_expansion::{FeedbackRerankConfig, GraphConfig};
pub use engine::{
    Engine, EngineConfig, EngineStats, Retrieval, RetrievalTimings, FILTER_OVERFETCH,
};
pub use error::{EngineError, Result};
pub use fusion::{
    document_of, fuse, fuse_ids, per_document, per_document_ids, reciprocal_rank_fusion, FusedId,
    Fusion, DEFAULT_KEYWORD_WEIGHT, RRF_K,
};
pub use ingest::{IngestProgress, IngestReport, NoProgress};
pub use knowledge_graph::GraphExpansion;
pub use query_vectors::DEFAULT_QUERY_CACHE_ENTRIES;
pub use readers::Scope;
pub use reconcile::ReconcileReport;
