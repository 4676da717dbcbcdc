use std::sync::Arc;

use crag_core::{
    Chunk, ChunkFilter, ChunkId, Document, DocumentId, Query, ScoredChunk, TopK, WeightedTerm,
};
use crag_ports::{Embedder, KeywordIndex, SymbolIndex, TermGraph, VectorIndex};

use crate::cgrag::CgragComponents;
use crate::code;
use crate::crag::{CragComponents, CragConfig, CragMetrics, CragRuntime};
use crate::error::{EngineError, Result};
use crate::fusion::Fusion;
use crate::ingest::{IngestProgress, IngestReport, Ingestor};
use crate::query_vectors::QueryVectors;
use crate::readers::{Scope, Skipped};

pub use crate::config::EngineConfig;
use crate::config::RetrievalScope;

mod hybrid;

pub use crate::retrieval::{Retrieval, RetrievalTimings};

/// How many times the usual leg depth is fetched when a [`ChunkFilter`] is set.
pub const FILTER_OVERFETCH: usize = 5;

/// What the keyword leg searches with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeywordInput<'a> {
    /// User text, analysed by the index.
    Text(&'a str),
    /// Weighted index terms (pseudo-relevance feedback).
    Terms(&'a [WeightedTerm]),
    /// The hits of a keyword leg already run with the same query, filter and scope, at least
    /// as deep, best first: the first of them are the leg's (no search).
    Hits(&'a [ScoredChunk]),
}

/// What the vector leg searches with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum VectorInput<'a> {
    /// User text, embedded first.
    Text(&'a str),
    /// A vector already made (pseudo-relevance feedback).
    Vector(&'a [f32]),
}

/// What the indexes hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineStats {
    /// Distinct documents.
    pub documents: usize,
    /// Chunks in the keyword index.
    pub keyword_chunks: usize,
    /// Chunks in the vector index.
    pub vector_chunks: usize,
    /// Embedding model.
    pub embedding_model: String,
    /// Embedding dimension.
    pub dimension: usize,
}

/// The engine facade: owns the adapters and runs ingestion and retrieval over them.
#[derive(Debug, Clone)]
pub struct Engine {
    embedder: Arc<dyn Embedder>,
    vectors: Arc<dyn VectorIndex>,
    keywords: Arc<dyn KeywordIndex>,
    symbols: Option<Arc<dyn SymbolIndex>>,
    pub(crate) terms: Option<Arc<dyn TermGraph>>,
    config: EngineConfig,
    query_vectors: Arc<QueryVectors>,
    crag: Arc<CragRuntime>,
    pub(crate) cgrag: Arc<CgragComponents>,
    /// The index terms of raw tokens the feedback rerank met, shared by every query.
    pub(crate) term_memo: Arc<crag_expansion::TermMemo>,
    /// The feedback rerank's candidates' index terms and counts, kept for a chunk met again.
    pub(crate) candidate_terms: crate::crag::CandidateTermsCache,
}

/// Raw tokens the feedback rerank's [`crag_expansion::TermMemo`] holds at most (an estimated
/// 20 MiB when full, not measured): SciFact's 5,183 documents hold about 44,000 distinct raw
/// tokens.
const TERM_MEMO_TOKENS: usize = 1 << 18;

impl Engine {
    /// Wires the engine; fails when the vector index and the embedder disagree on dimension.
    pub fn new(
        embedder: Arc<dyn Embedder>,
        vectors: Arc<dyn VectorIndex>,
        keywords: Arc<dyn KeywordIndex>,
        config: EngineConfig,
    ) -> Result<Self> {
        config.chunking.validate()?;
        config.code.validate()?;
        config.graph.validate().map_err(EngineError::InvalidInput)?;
        if embedder.dimension() != vectors.dimension() {
            return Err(EngineError::InvalidInput(format!(
                "embedder dimension {} differs from vector index dimension {}",
                embedder.dimension(),
                vectors.dimension()
            )));
        }
        if config.leg_depth == 0 || config.rrf_k.is_nan() || config.rrf_k <= 0.0 {
            return Err(EngineError::InvalidInput(
                "leg_depth and rrf_k must be positive".into(),
            ));
        }
        config
            .fusion
            .validate()
            .map_err(EngineError::InvalidInput)?;
        Ok(Self {
            embedder,
            vectors,
            keywords,
            symbols: None,
            terms: None,
            query_vectors: Arc::new(QueryVectors::new(config.query_cache_entries)),
            config,
            crag: Arc::new(CragRuntime::new(CragComponents::heuristic(
                CragConfig::default(),
            )?)?),
            cgrag: Arc::new(CgragComponents::default()),
            term_memo: Arc::new(crag_expansion::TermMemo::new(TERM_MEMO_TOKENS)),
            candidate_terms: crate::crag::CandidateTermsCache::new(),
        })
    }

    /// Keeps the symbols of ingested source files in `symbols` (definitions, references, code
    /// metadata), which code lookups, gap detection and code filters read.
    pub fn with_symbols(mut self, symbols: Arc<dyn SymbolIndex>) -> Self {
        self.symbols = Some(symbols);
        self
    }

    /// The sentence embedder (shared by the collections of a server that use its model).
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The symbol index, when one is configured.
    pub fn symbol_index(&self) -> Option<&Arc<dyn SymbolIndex>> {
        self.symbols.as_ref()
    }

    /// Forgets the cached query embeddings, so the next query of each text is embedded again
    /// (a benchmark that runs one query set through several stages measures each stage with
    /// its embedding).
    pub fn clear_query_cache(&self) {
        self.query_vectors.clear();
    }

    /// Waits until the vector index has loaded what its searches read from memory (a large
    /// table's copy loads in the background after open and after each ingestion): a run that
    /// compares answers (an evaluation, a batch of queries) calls it first, so that every
    /// query takes the same path.
    pub async fn warm_up(&self) -> Result<()> {
        Ok(self.vectors.warm_up().await?)
    }

    /// The engine's tunables.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Replaces the CGRAG parts (gap detector, session store, config).
    pub fn with_cgrag(mut self, components: CgragComponents) -> Result<Self> {
        components.config.validate()?;
        self.cgrag = Arc::new(components);
        Ok(self)
    }

    /// Replaces the Corrective RAG parts (evaluator, web search, rewriter, synonyms, config).
    pub fn with_crag(mut self, components: CragComponents) -> Result<Self> {
        self.crag = Arc::new(CragRuntime::new(components)?);
        Ok(self)
    }

    /// The Corrective RAG metrics (Prometheus registry) of this engine.
    pub fn metrics(&self) -> &CragMetrics {
        self.crag.metrics()
    }

    /// The vector index's in-memory copy (`None` when it keeps none), for monitoring.
    pub async fn vector_copy(&self) -> Result<Option<crag_ports::MemoryCopy>> {
        Ok(self.vectors.memory_copy().await?)
    }

    /// Whether a reranker is configured and switched on.
    pub fn has_reranker(&self) -> bool {
        self.crag.has_reranker()
    }

    /// The Corrective RAG configuration in effect.
    pub fn crag_config(&self) -> &CragConfig {
        self.crag.config()
    }

    pub(crate) fn crag_runtime(&self) -> &CragRuntime {
        &self.crag
    }

    pub(crate) fn keyword_index(&self) -> &dyn KeywordIndex {
        self.keywords.as_ref()
    }

    pub(crate) fn vector_index(&self) -> &dyn VectorIndex {
        self.vectors.as_ref()
    }

    /// The ingestion service over this engine's adapters.
    pub(crate) fn ingestor(&self) -> Ingestor {
        Ingestor {
            embedder: Arc::clone(&self.embedder),
            vectors: Arc::clone(&self.vectors),
            keywords: Arc::clone(&self.keywords),
            symbols: self.symbols.clone(),
            terms: self.term_graph().cloned(),
            graph: self.config.graph,
            chunking: self.config.chunking,
            code: self.config.code,
        }
    }

    pub(crate) fn rrf_k(&self) -> f32 {
        self.config.rrf_k
    }

    /// Ingests documents read from a source; see [`Scope`] for deletions.
    pub async fn ingest(
        &self,
        documents: Vec<Document>,
        skipped: Vec<Skipped>,
        scope: &Scope,
        progress: &dyn IngestProgress,
    ) -> Result<IngestReport> {
        self.ingestor()
            .ingest(documents, skipped, scope, progress)
            .await
    }

    /// Retrieves the best `top_k` chunks: BM25 and vector legs run concurrently, then RRF.
    ///
    /// If one leg fails the other's results are returned with a warning; if both fail, the
    /// keyword leg's error is returned.
    pub async fn retrieve(&self, query: &Query, top_k: TopK) -> Result<Retrieval> {
        self.retrieve_with(query, top_k, &ChunkFilter::default())
            .await
    }

    /// Like [`Engine::retrieve`], keeping only chunks that pass `filter`. Its metadata filter
    /// is checked against the stored fields (an unknown field, or a comparison with a kind of
    /// value the field never holds, is [`EngineError::InvalidInput`]) and applied inside both
    /// legs' searches, so that it returns `top_k` whenever `top_k` pass. Its other conditions
    /// are applied to each leg's candidates before fusion, each leg asked for
    /// [`FILTER_OVERFETCH`] times its usual depth (a very selective one can return fewer).
    pub async fn retrieve_with(
        &self,
        query: &Query,
        top_k: TopK,
        filter: &ChunkFilter,
    ) -> Result<Retrieval> {
        self.retrieve_fused(query, top_k, filter, None).await
    }

    /// Like [`Engine::retrieve_with`], fusing the legs with `fusion` instead of the configured
    /// fusion when it is given (a caller comparing fusions on one query).
    pub async fn retrieve_fused(
        &self,
        query: &Query,
        top_k: TopK,
        filter: &ChunkFilter,
        fusion: Option<Fusion>,
    ) -> Result<Retrieval> {
        self.retrieve_at_depth(query, top_k, None, filter, fusion, None)
            .await
    }

    /// Like [`Engine::retrieve_fused`] with each leg `leg_depth` deep (at least `top_k`)
    /// instead of the configured `leg_depth` when it is given.
    /// `keyword_hits`, when given, are the hits of a keyword leg already run with a query
    /// analysed to the same terms (and the same filter), at least `leg_depth` deep: the
    /// keyword leg takes its hits from them instead of searching.
    pub(crate) async fn retrieve_at_depth(
        &self,
        query: &Query,
        top_k: TopK,
        leg_depth: Option<usize>,
        filter: &ChunkFilter,
        fusion: Option<Fusion>,
        keyword_hits: Option<&[ScoredChunk]>,
    ) -> Result<Retrieval> {
        let text = query.as_str();
        self.retrieve_legs(
            keyword_hits.map_or(KeywordInput::Text(text), KeywordInput::Hits),
            VectorInput::Text(text),
            top_k,
            leg_depth,
            filter,
            fusion,
        )
        .await
    }

    /// Like [`Engine::retrieve_at_depth`] with an expanded query: weighted index terms for the
    /// keyword leg and a ready vector for the vector leg (no embedding call).
    pub(crate) async fn retrieve_expanded(
        &self,
        terms: &[WeightedTerm],
        vector: &[f32],
        top_k: TopK,
        leg_depth: Option<usize>,
        filter: &ChunkFilter,
        fusion: Option<Fusion>,
    ) -> Result<Retrieval> {
        self.retrieve_legs(
            KeywordInput::Terms(terms),
            VectorInput::Vector(vector),
            top_k,
            leg_depth,
            filter,
            fusion,
        )
        .await
    }

    /// The stored embeddings of `ids` (those the vector index holds), in order.
    pub(crate) async fn stored_vectors(
        &self,
        ids: &[crag_core::ChunkId],
    ) -> Result<Vec<(crag_core::ChunkId, Vec<f32>)>> {
        Ok(self.vectors.vectors(ids).await?)
    }

    /// Puts code metadata on the code chunks of `hits` (when a symbol index is configured).
    pub(crate) async fn hydrate_code(&self, hits: &mut [ScoredChunk]) -> Result<()> {
        if let Some(symbols) = &self.symbols {
            code::hydrate(symbols.as_ref(), hits.iter_mut().map(|h| &mut h.chunk)).await?;
        }
        Ok(())
    }

    /// Returns the keyword leg alone (BM25), best first.
    pub async fn retrieve_keyword(&self, query: &Query, top_k: TopK) -> Result<Vec<ScoredChunk>> {
        let (query, k) = (query.as_str(), top_k.get());
        Ok(match self.config.scope {
            RetrievalScope::Documents => self.keywords.search_documents(query, k).await?,
            RetrievalScope::Chunks => self.keywords.search(query, k).await?,
        })
    }

    /// Returns the vector leg alone, best first: ids and scores from the vector index, the
    /// chunks from the keyword catalogue (orphans skipped, the search widened past them).
    pub async fn retrieve_vector(&self, query: &Query, top_k: TopK) -> Result<Vec<ScoredChunk>> {
        let vector = self
            .query_vectors
            .embed(self.embedder.as_ref(), query.as_str())
            .await?
            .ok_or_else(|| EngineError::InvalidInput("no query embedding".into()))?;
        Ok(self.nearest_catalogued(&vector, top_k.get(), None).await?)
    }

    /// The stored chunks with these ids, in the order asked (with their code metadata when
    /// the symbol index has some); ids not stored are left out.
    pub async fn chunks(&self, ids: &[ChunkId]) -> Result<Vec<Chunk>> {
        let mut chunks = self.keywords.get(ids).await?;
        if let Some(symbols) = &self.symbols {
            code::hydrate(symbols.as_ref(), chunks.iter_mut()).await?;
        }
        Ok(chunks)
    }

    /// Every stored chunk of a document, in their order in it; empty when it is not stored.
    pub async fn document_chunks(&self, id: &DocumentId) -> Result<Vec<Chunk>> {
        let mut chunks = self.keywords.document_chunks(id).await?;
        if let Some(symbols) = &self.symbols {
            code::hydrate(symbols.as_ref(), chunks.iter_mut()).await?;
        }
        Ok(chunks)
    }

    /// Deletes a document's chunks from both indexes; `false` when no such document is
    /// stored. The vector index goes first, so a failure leaves the document findable by BM25
    /// and listed, and the delete can be retried.
    pub async fn delete_document(&self, id: &DocumentId) -> Result<bool> {
        let stored = self.keywords.documents().await?;
        if !stored.iter().any(|d| &d.id == id) {
            return Ok(false);
        }
        let ids = std::slice::from_ref(id);
        self.vectors.delete_documents(ids).await?;
        if let Some(symbols) = &self.symbols {
            symbols.delete_documents(ids).await?;
        }
        if let Some(terms) = &self.terms {
            terms.delete_documents(ids).await?;
        }
        self.keywords.delete_documents(ids).await?;
        crate::ingest::tidy_indexes(self.vectors.as_ref(), self.keywords.as_ref()).await;
        Ok(true)
    }

    /// Reads both indexes' sizes, and nothing else: fails when either cannot be read (an
    /// object store down), for a readiness check.
    pub async fn probe(&self) -> Result<()> {
        tokio::try_join!(self.keywords.count(), self.vectors.count())?;
        Ok(())
    }

    /// Counts what the indexes hold.
    pub async fn stats(&self) -> Result<EngineStats> {
        let (docs, keyword_chunks, vector_chunks) = tokio::try_join!(
            self.keywords.documents(),
            self.keywords.count(),
            self.vectors.count()
        )?;
        Ok(EngineStats {
            documents: docs.len(),
            keyword_chunks,
            vector_chunks,
            embedding_model: self.embedder.model_id().to_owned(),
            dimension: self.embedder.dimension(),
        })
    }
}
