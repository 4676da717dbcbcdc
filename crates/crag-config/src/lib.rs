//! crag's configuration schema and its layering.
//!
//! One TOML file plus environment overrides (`CRAG_<SECTION>__<KEY>`), unknown keys rejected,
//! validated at start with messages that name the key. This crate only describes and checks:
//! it depends on no adapter; `crag-app`'s composition root builds what it names. Every key is
//! documented in `docs/configuration.md`.

mod env;
pub mod reference;
mod sections;
mod server;
mod sessions;

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _, Result};
use crag_engine::{
    CgragConfig, ChunkingConfig, CodeConfig, CragConfig, EngineConfig, Fusion, GraphConfig,
    DEFAULT_KEYWORD_WEIGHT,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use env::{env_overrides, ENV_PREFIX};
pub use sections::{
    read_calibration, write_calibration, EvaluatorKind, EvaluatorSection, HttpEvaluatorSection,
    LlmSection, RerankerKind, RerankerSection, WebProvider, WebSearchSection,
};
pub use server::{AuthSection, LimitsSection, ServerSection, MIN_TOKEN_LEN};
pub use sessions::{SessionBackend, SessionsSection};

/// The whole configuration: defaults, then the file, then `CRAG_` environment overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Indexes: `<data_dir>/keyword` (Tantivy), `<data_dir>/vectors` (LanceDB).
    pub data_dir: PathBuf,
    /// Vector store elsewhere: a directory or an object-store URI (`s3://...`, LanceDB's
    /// credentials from the environment).
    #[schemars(example = &"s3://bucket/crag/vectors")]
    pub vectors_uri: Option<String>,
    /// ONNX Runtime library, MiniLM model and tokenizer (`scripts/setup-assets.sh`) (default:
    /// `$CRAG_ASSETS_DIR` or `~/.cache/crag/assets`).
    #[schemars(example = &"/opt/crag/assets")]
    pub assets_dir: Option<PathBuf>,
    /// JSON `{"term": ["synonym", ...]}` for query expansion (default: the built-in table).
    #[schemars(example = &"synonyms.json")]
    pub synonyms_file: Option<PathBuf>,
    /// How ingested documents are cut into chunks.
    pub chunking: ChunkingConfig,
    /// Hybrid retrieval tunables.
    pub retrieval: RetrievalSection,
    /// The sentence embedder: model precision, threads.
    pub embedder: EmbedderSection,
    /// The vector store's approximate (ANN) index.
    pub vector_index: VectorIndexSection,
    /// Corrective RAG tunables.
    pub crag: CragConfig,
    /// CGRAG (`crag ask`): passes, gap detector, context shown to it.
    pub cgrag: CgragConfig,
    /// Where CGRAG sessions are kept.
    pub sessions: SessionsSection,
    /// Code intelligence: syntax-aware chunks of source files, graph expansion of code results.
    pub code: CodeConfig,
    /// The knowledge graph of prose: key terms kept at ingest, expansion of the queries the
    /// router sends to the `knowledge_graph` route (`[crag.router] knowledge_graph`).
    pub knowledge_graph: GraphConfig,
    /// Which evaluator judges retrievals, and its settings.
    pub evaluator: EvaluatorSection,
    /// Web search provider.
    pub web_search: WebSearchSection,
    /// OpenAI-compatible chat endpoint (LLM evaluator, query rewriting).
    pub llm: Option<LlmSection>,
    /// Cross-encoder reranker (two-stage retrieval); tunables are in `[crag.rerank]`.
    pub reranker: RerankerSection,
    /// Listening addresses, timeouts, concurrency.
    pub server: ServerSection,
    /// Request bounds of the HTTP and gRPC APIs.
    pub limits: LimitsSection,
    /// Bearer-token authentication of the HTTP and gRPC APIs.
    pub auth: AuthSection,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".crag"),
            vectors_uri: None,
            assets_dir: None,
            synonyms_file: None,
            chunking: ChunkingConfig::default(),
            retrieval: RetrievalSection::default(),
            embedder: EmbedderSection::default(),
            vector_index: VectorIndexSection::default(),
            crag: CragConfig::default(),
            cgrag: CgragConfig::default(),
            sessions: SessionsSection::default(),
            code: CodeConfig::default(),
            knowledge_graph: GraphConfig::default(),
            evaluator: EvaluatorSection::default(),
            web_search: WebSearchSection::default(),
            llm: None,
            reranker: RerankerSection::default(),
            server: ServerSection::default(),
            limits: LimitsSection::default(),
            auth: AuthSection::default(),
        }
    }
}

impl Config {
    /// Loads the file at `path` (if any), applies the `CRAG_` overrides among `vars`
    /// (usually `std::env::vars()`), and validates the result. Errors name the file, the key
    /// and, for overrides, the environment variable.
    pub fn load(
        path: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self> {
        let mut table = match path {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("failed to read configuration {}", path.display()))?;
                text.parse::<toml::Table>()
                    .map_err(|e| anyhow!("{e}"))
                    .with_context(|| format!("invalid configuration {}", path.display()))?
            }
            None => toml::Table::new(),
        };
        env::apply(&mut table, vars)?;
        let config = Self::from_table(table).with_context(|| match path {
            Some(path) => format!("invalid configuration {}", path.display()),
            None => "invalid configuration".to_string(),
        })?;
        Ok(config)
    }

    /// Parses TOML text (no environment overrides) and validates it.
    pub fn parse(text: &str) -> Result<Self> {
        let table = text.parse::<toml::Table>().map_err(|e| anyhow!("{e}"))?;
        Self::from_table(table)
    }

    fn from_table(table: toml::Table) -> Result<Self> {
        let config: Self = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| anyhow!("{}: {}", e.path(), e.inner()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks what serde cannot: ranges and relations between keys.
    pub fn validate(&self) -> Result<()> {
        if self.data_dir.as_os_str().is_empty() && self.vectors_uri.is_none() {
            bail!("data_dir must not be empty");
        }
        self.chunking
            .validate()
            .map_err(|e| anyhow!("chunking: {e}"))?;
        self.retrieval.validate()?;
        self.embedder.validate()?;
        self.vector_index.validate()?;
        self.crag.validate()?;
        self.cgrag.validate()?;
        self.sessions.validate()?;
        self.code.validate()?;
        self.knowledge_graph
            .validate()
            .map_err(|e| anyhow!("{e}"))?;
        if self.crag.router.knowledge_graph != Default::default() && !self.knowledge_graph.enabled {
            bail!(
                "crag.router.knowledge_graph routes queries to the knowledge graph: set knowledge_graph.enabled = true"
            );
        }
        self.server.validate()?;
        self.limits.validate()?;
        self.auth.validate()?;
        Ok(())
    }

    /// The bearer tokens the APIs accept: `auth.tokens` plus those in `$auth.tokens_env`.
    pub fn api_tokens(&self) -> Result<Vec<String>> {
        let var = std::env::var(&self.auth.tokens_env).ok();
        self.auth.resolve(var.as_deref())
    }

    /// The engine tunables of `[chunking]`, `[retrieval]`, `[code]` and `[knowledge_graph]`.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            chunking: self.chunking,
            leg_depth: self.retrieval.leg_depth,
            fusion: self.retrieval.fusion(),
            rrf_k: self.retrieval.rrf_k,
            code: self.code,
            query_cache_entries: self.retrieval.query_cache_entries,
            graph: self.knowledge_graph,
        }
    }

    /// The vector store URI.
    pub fn vectors_uri(&self) -> String {
        self.vectors_uri
            .clone()
            .unwrap_or_else(|| self.data_dir.join("vectors").to_string_lossy().into_owned())
    }

    /// The configuration as TOML, with secrets (auth tokens) redacted: `crag config print`.
    pub fn to_toml(&self) -> Result<String> {
        let mut shown = self.clone();
        shown.auth.tokens = shown
            .auth
            .tokens
            .iter()
            .map(|_| "<redacted>".into())
            .collect();
        toml::to_string(&shown).context("failed to render the configuration")
    }
}

/// `[embedder]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedderSection {
    /// Which embedding model of the assets embeds chunks and queries: `"float32"` (all-MiniLM-L6-v2
    /// as published, `model.onnx`), `"int8"` (`model-int8.onnx`, its dynamic int8 quantisation
    /// made by `scripts/setup-assets.sh`: about 3x faster per query and 2x faster to ingest,
    /// vectors within about 0.99 cosine of float32's, nDCG@10 within 0.004; figures in
    /// [benchmarks.md](benchmarks.md#int8-the-default-for-new-indexes-issue-18-release-build-2026-11-26))
    /// or `"auto"`: the model the index in `data_dir` records (float32 for an index from before
    /// the record), int8 for a new index. An index is searched only with the model that built it.
    pub precision: EmbedderPrecision,
    /// Intra-op threads of each ONNX session; `0`: ONNX Runtime's choice (one per core) with one
    /// session, the cores shared equally among several; at most 256.
    pub threads: usize,
    /// Sessions of the model (0..=64), each with its own copy of it (about 90 MiB float32, 23 MiB
    /// int8): a session embeds one call at a time, so with several, concurrent queries embed side
    /// by side and an ingestion spreads its batches over them. `0`: the model's own, one session
    /// per core (at most 8; one per `threads` cores when `threads` is set) for int8, which
    /// embeds one text per call (ingest about 1.5x faster on 2 cores; a lone query's embedding
    /// 0.2-0.5 ms slower on one thread, the whole query within its run-to-run spread), one for
    /// float32, whose batches of 32 already keep every core busy (a second costs a lone query
    /// about 0.9 ms). Figures in
    /// [benchmarks.md](benchmarks.md#embedder-fusions-and-a-session-per-core-issue-18-release-build-2026-11-26).
    pub sessions: usize,
    /// Whether ONNX Runtime's intra-op threads spin, waiting for the next inference call, when
    /// one is done (its default), or sleep and leave the cores to the rest of the query
    /// (BM25, fusion, the corrections).
    pub spinning: bool,
}

impl Default for EmbedderSection {
    fn default() -> Self {
        Self {
            precision: EmbedderPrecision::default(),
            threads: 0,
            sessions: 0,
            spinning: true,
        }
    }
}

/// Most `embedder.sessions`: each holds a copy of the model.
pub const MAX_EMBEDDER_SESSIONS: usize = 64;

/// `embedder.precision`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderPrecision {
    /// The model the index records; int8 for a new index.
    #[default]
    Auto,
    /// all-MiniLM-L6-v2 as published.
    Float32,
    /// Its int8 quantisation: faster, vectors within about 0.99 cosine; an index records
    /// which model built it and refuses the other.
    Int8,
}

/// Most `embedder.threads`: more intra-op threads than this is a typo, not a machine.
pub const MAX_EMBEDDER_THREADS: usize = 256;

impl EmbedderSection {
    fn validate(&self) -> Result<()> {
        if self.threads > MAX_EMBEDDER_THREADS {
            bail!(
                "embedder.threads must be at most {MAX_EMBEDDER_THREADS} (0: one per core), got {}",
                self.threads
            );
        }
        if self.sessions > MAX_EMBEDDER_SESSIONS {
            bail!(
                "embedder.sessions must be at most {MAX_EMBEDDER_SESSIONS} (0: the model's own), got {}",
                self.sessions
            );
        }
        Ok(())
    }
}

/// `[vector_index]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct VectorIndexSection {
    /// Build an approximate-nearest-neighbour index (LanceDB IVF-HNSW-SQ, cosine) once the table is
    /// large enough; `false`: every search scans all vectors, exactly (an index built earlier is
    /// bypassed).
    pub ann: bool,
    /// Chunks at which the ANN index is built (at least 256).
    pub ann_min_rows: usize,
    /// Budget of LanceDB's metadata cache (manifests, file footers, deletion files), MiB (>= 1);
    /// every write adds entries, so this bounds what ingestion makes the process hold (LanceDB's
    /// own default is 1 GiB).
    pub metadata_cache_mib: usize,
    /// Budget of LanceDB's cache of opened ANN index partitions, MiB (>= 1; LanceDB's default is 6
    /// GiB); about two million 384-dimension vectors' index.
    pub index_cache_mib: usize,
    /// Tables of at most this many chunks have their vectors copied into memory (rows x dimension x
    /// 4 bytes: 15 MiB for SciFact's 10k chunks, 150 MiB at 100k) and hybrid retrieval's vector leg
    /// scans that copy exactly, reading ids and scores only; the copy is loaded when the index
    /// opens and again at the end of each ingestion or deletion; a stale copy (the version moved
    /// otherwise) is reloaded by the next search. `0`: every search goes to LanceDB. Same results
    /// as LanceDB's exact scan (cosine to float rounding, ties by chunk id).
    pub memory_scan_rows: usize,
}

/// Default `vector_index.ann_min_rows`: below this many chunks an exact scan is fast enough.
pub const DEFAULT_ANN_MIN_ROWS: usize = 100_000;

/// Least `vector_index.ann_min_rows`: the index's clustering and quantiser are trained on
/// the rows, and a handful of rows trains nothing.
pub const MIN_ANN_ROWS: usize = 256;

/// Default `vector_index.memory_scan_rows`: 100k MiniLM vectors are about 150 MiB, and from
/// `ann_min_rows` (the same 100k by default) the ANN index takes over.
pub const DEFAULT_MEMORY_SCAN_ROWS: usize = 100_000;

/// Default `vector_index.metadata_cache_mib`.
pub const DEFAULT_METADATA_CACHE_MIB: usize = 16;

/// Default `vector_index.index_cache_mib`.
pub const DEFAULT_INDEX_CACHE_MIB: usize = 1024;

impl Default for VectorIndexSection {
    fn default() -> Self {
        Self {
            ann: true,
            ann_min_rows: DEFAULT_ANN_MIN_ROWS,
            metadata_cache_mib: DEFAULT_METADATA_CACHE_MIB,
            index_cache_mib: DEFAULT_INDEX_CACHE_MIB,
            memory_scan_rows: DEFAULT_MEMORY_SCAN_ROWS,
        }
    }
}

impl VectorIndexSection {
    fn validate(&self) -> Result<()> {
        if self.ann_min_rows < MIN_ANN_ROWS {
            bail!(
                "vector_index.ann_min_rows must be at least {MIN_ANN_ROWS}, got {}",
                self.ann_min_rows
            );
        }
        for (key, mib) in [
            ("metadata_cache_mib", self.metadata_cache_mib),
            ("index_cache_mib", self.index_cache_mib),
        ] {
            if mib == 0 {
                bail!("vector_index.{key} must be at least 1");
            }
        }
        Ok(())
    }
}

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
}

/// Default `retrieval.bm25_k1`.
pub const DEFAULT_BM25_K1: f32 = 1.2;
/// Default `retrieval.bm25_b`.
pub const DEFAULT_BM25_B: f32 = 0.75;
/// Default `retrieval.bm25_title_weight`.
pub const DEFAULT_BM25_TITLE_WEIGHT: f32 = 0.75;

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

    fn validate(&self) -> Result<()> {
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
        Ok(())
    }
}

#[cfg(test)]
mod tests;
