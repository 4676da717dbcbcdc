//! `[retrieval]`: hybrid retrieval's tunables.

use crate::error::{bail, Result};
use crag_engine::{EngineConfig, Fusion, RetrievalScope, DEFAULT_KEYWORD_WEIGHT};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[retrieval]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalSection {
    /// Candidates asked of each leg (BM25, vectors) before fusion (1..=10000).
    pub leg_depth: usize,
    /// How the two legs become one ranking: `"rrf"` (reciprocal rank fusion, ranks only) or
    /// `"convex"` (each leg's scores min-max normalised over its own candidates, then
    /// `keyword_weight * bm25 + (1 - keyword_weight) * vector`; a leg that missed the chunk adds
    /// 0). The convex default beat RRF on SciFact and Cranfield ([benchmarks.md](benchmarks.md)); a
    /// calibration file records the fusion it was fitted under and is refused under another.
    pub fusion: FusionKind,
    /// Weight of the BM25 leg in the `"convex"` fusion, within [0, 1].
    pub keyword_weight: f32,
    /// Reciprocal-rank-fusion constant: each leg adds `1 / (rrf_k + rank)`; also the constant of
    /// the merges of sub-query and expanded-query results, whatever `fusion` is.
    pub rrf_k: f32,
    /// Embeddings of recent query texts kept in memory (about 1.6 KiB each with MiniLM), so a
    /// repeated query skips the embedder; `0` turns the cache off.
    pub query_cache_entries: u64,
    /// BM25 term-frequency saturation of the keyword leg, >= 0 (Tantivy's own scorer is used at 1.2
    /// / 0.75, with its block-max pruning; other values score with crag's BM25 term query, the same
    /// formula and statistics).
    pub bm25_k1: f32,
    /// BM25 length normalisation of the keyword leg, within [0, 1].
    pub bm25_b: f32,
    /// Multiplies the BM25 score of a query term in a chunk's title (title and text are separate
    /// fields, each scored by BM25, the scores added; the text's weighs 1); `0` searches no title.
    /// `bm25_k1`, `bm25_b` and this key act at query time: an index needs no re-ingest when they
    /// change.
    pub bm25_title_weight: f32,
    /// What hybrid retrieval ranks: `"documents"` (the BM25 leg ranks whole documents by
    /// BM25F over their title and whole text; each leg keeps a document's best chunk and the
    /// fusion adds a document's two legs; each document is returned once, as the vector
    /// leg's best chunk of it (the keyword leg's when only that leg found it); the default; Corrective RAG's further retrievals are fused
    /// and de-duplicated by document too) or `"chunks"` (every chunk on its own; the BM25 leg
    /// scores chunks with `bm25_title_weight`; several chunks of one document may be
    /// returned). Documents beat chunks on SciFact and Cranfield for BM25, hybrid and
    /// hybrid + CRAG; chunks did better on long, many-topic documents (the project's docs)
    /// ([benchmarks.md](benchmarks.md), "Whole documents"). Acts at query time.
    pub scope: ScopeKind,
    /// With `scope = "documents"`: what a query term's occurrence in a document's title adds
    /// to its frequency in the document's text (which holds the title too) before BM25F's
    /// saturation, >= 0; `bm25_k1` and `bm25_b` apply to both fields. Acts at query time.
    pub bm25_document_title_weight: f32,
}

/// `retrieval.scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopeKind {
    /// Whole documents, each returned as its best chunk.
    #[default]
    Documents,
    /// Every chunk on its own.
    Chunks,
}

impl ScopeKind {
    /// The engine's scope.
    pub fn engine(self) -> RetrievalScope {
        match self {
            Self::Documents => RetrievalScope::Documents,
            Self::Chunks => RetrievalScope::Chunks,
        }
    }
}

/// Default `retrieval.bm25_k1`.
pub const DEFAULT_BM25_K1: f32 = 1.2;
/// Default `retrieval.bm25_b`.
pub const DEFAULT_BM25_B: f32 = 0.75;
/// Default `retrieval.bm25_title_weight`.
pub const DEFAULT_BM25_TITLE_WEIGHT: f32 = 0.75;

/// Default `retrieval.bm25_document_title_weight` (chosen on SciFact train and Cranfield).
pub const DEFAULT_BM25_DOCUMENT_TITLE_WEIGHT: f32 = 2.0;

/// `retrieval.fusion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FusionKind {
    /// Reciprocal rank fusion.
    Rrf,
    /// Convex combination of min-max-normalised scores.
    Convex,
}

impl Default for RetrievalSection {
    fn default() -> Self {
        let engine = EngineConfig::default();
        let (fusion, keyword_weight) = match engine.fusion {
            Fusion::Rrf { .. } => (FusionKind::Rrf, DEFAULT_KEYWORD_WEIGHT),
            Fusion::Convex { keyword_weight } => (FusionKind::Convex, keyword_weight),
        };
        Self {
            leg_depth: engine.leg_depth,
            fusion,
            keyword_weight,
            rrf_k: engine.rrf_k,
            query_cache_entries: engine.query_cache_entries,
            bm25_k1: DEFAULT_BM25_K1,
            bm25_b: DEFAULT_BM25_B,
            bm25_title_weight: DEFAULT_BM25_TITLE_WEIGHT,
            scope: ScopeKind::default(),
            bm25_document_title_weight: DEFAULT_BM25_DOCUMENT_TITLE_WEIGHT,
        }
    }
}

impl RetrievalSection {
    /// The engine's fusion of the two legs.
    pub fn fusion(&self) -> Fusion {
        match self.fusion {
            FusionKind::Rrf => Fusion::Rrf { k: self.rrf_k },
            FusionKind::Convex => Fusion::Convex {
                keyword_weight: self.keyword_weight,
            },
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.leg_depth == 0 || self.leg_depth > 10_000 {
            bail!("retrieval.leg_depth must be within 1..=10000");
        }
        if !self.rrf_k.is_finite() || self.rrf_k <= 0.0 {
            bail!("retrieval.rrf_k must be a positive number");
        }
        if !(0.0..=1.0).contains(&self.keyword_weight) {
            bail!("retrieval.keyword_weight must lie within [0, 1]");
        }
        if !self.bm25_k1.is_finite() || self.bm25_k1 < 0.0 {
            bail!("retrieval.bm25_k1 must be a finite number >= 0");
        }
        if !(0.0..=1.0).contains(&self.bm25_b) {
            bail!("retrieval.bm25_b must lie within [0, 1]");
        }
        if !self.bm25_title_weight.is_finite() || self.bm25_title_weight < 0.0 {
            bail!("retrieval.bm25_title_weight must be a finite number >= 0");
        }
        let weight = self.bm25_document_title_weight;
        if !weight.is_finite() || weight < 0.0 {
            bail!("retrieval.bm25_document_title_weight must be a finite number >= 0");
        }
        Ok(())
    }
}
