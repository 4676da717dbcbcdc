//! crag's configuration and its composition root.
//!
//! One TOML file plus environment overrides (`CRAG_<SECTION>__<KEY>`), unknown keys rejected,
//! validated at start with messages that name the key; then the adapters it names are built and
//! wired into an [`Engine`]. Every key is documented in `docs/configuration.md`.

mod env;
mod requests;
mod runtime;
mod sections;
mod server;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _, Result};
use crag_engine::{
    CalibratedRelevance, CragComponents, CragConfig, Engine, EngineConfig, Fusion,
    HeuristicRelevance, LlmRelevance, DEFAULT_KEYWORD_WEIGHT,
};
use crag_expansion::SynonymTable;
use crag_lancedb::{AnnPolicy, LanceVectorIndex, DEFAULT_ANN_MIN_ROWS};
use crag_onnx::{default_assets_dir, EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig};
use crag_ports::RelevanceEvaluator;
use crag_tantivy::TantivyKeywordIndex;
use serde::{Deserialize, Serialize};

pub use env::{env_overrides, ENV_PREFIX};
pub use requests::{DocumentParams, Invalid, QueryParams, DEFAULT_TOP_K};
pub use runtime::{
    bind, config_from_args, exit_code, init_tracing, serve_gracefully, server_main,
    shutdown_signal, ShutdownFuture, SERVER_LOG_FILTER,
};
pub use sections::{
    read_calibration, write_calibration, EvaluatorKind, EvaluatorSection, HttpEvaluatorSection,
    LlmSection, RerankerKind, RerankerSection, WebProvider, WebSearchSection,
};
pub use server::{AuthSection, LimitsSection, ServerSection, TokenSet, MIN_TOKEN_LEN};

use sections::{build_http_evaluator, build_llm, build_reranker, build_web};

/// Name of the LanceDB table holding chunk vectors.
pub const VECTOR_TABLE: &str = "chunks";

/// The whole configuration: defaults, then the file, then `CRAG_` environment overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Directory holding the indexes (`keyword/`, and `vectors/` unless `vectors_uri` is set).
    pub data_dir: PathBuf,
    /// Vector store URI: a directory or an object-store URI (`s3://...`); default
    /// `<data_dir>/vectors`.
    pub vectors_uri: Option<String>,
    /// Model and runtime assets; default `$CRAG_ASSETS_DIR` or `~/.cache/crag/assets`.
    pub assets_dir: Option<PathBuf>,
    /// JSON synonym table `{"term": ["synonym", ...]}`; default: the seed's table.
    pub synonyms_file: Option<PathBuf>,
    /// Hybrid retrieval tunables.
    pub retrieval: RetrievalSection,
    /// The vector store's approximate (ANN) index.
    pub vector_index: VectorIndexSection,
    /// Corrective RAG tunables.
    pub crag: CragConfig,
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
            retrieval: RetrievalSection::default(),
            vector_index: VectorIndexSection::default(),
            crag: CragConfig::default(),
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
        self.retrieval.validate()?;
        self.vector_index.validate()?;
        self.crag.validate()?;
        self.server.validate()?;
        self.limits.validate()?;
        self.auth.validate()?;
        Ok(())
    }

    /// The bearer tokens the APIs accept: `auth.tokens` plus those in `$auth.tokens_env`.
    pub fn token_set(&self) -> Result<TokenSet> {
        let var = std::env::var(&self.auth.tokens_env).ok();
        Ok(TokenSet::new(&self.auth.resolve(var.as_deref())?))
    }

    /// The engine tunables of `[retrieval]` (chunking stays the ingest command's).
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            leg_depth: self.retrieval.leg_depth,
            fusion: self.retrieval.fusion(),
            rrf_k: self.retrieval.rrf_k,
            ..EngineConfig::default()
        }
    }

    /// The model and runtime assets directory.
    pub fn assets_dir(&self) -> PathBuf {
        self.assets_dir.clone().unwrap_or_else(default_assets_dir)
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

    /// Builds the Corrective RAG adapters this configuration names; ONNX models find ONNX
    /// Runtime through the assets directory.
    pub fn components(&self) -> Result<CragComponents> {
        let mut parts = CragComponents::heuristic(self.crag.clone())?;
        if let Some(path) = &self.synonyms_file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("failed to read synonyms_file {}", path.display()))?;
            parts.synonyms = SynonymTable::from_json(&text)
                .with_context(|| format!("invalid synonyms_file {}", path.display()))?;
        }
        let llm = self.llm.as_ref().map(build_llm).transpose()?;
        parts.evaluator = match self.evaluator.kind {
            EvaluatorKind::Heuristic => {
                Arc::new(HeuristicRelevance::new(self.evaluator.heuristic.clone())?)
                    as Arc<dyn RelevanceEvaluator>
            }
            EvaluatorKind::Llm => {
                let Some(model) = llm.clone() else {
                    bail!("evaluator.kind = \"llm\" needs an [llm] section (base_url, model)");
                };
                Arc::new(LlmRelevance::new(model, self.evaluator.llm.clone())?)
            }
            EvaluatorKind::Http => {
                let Some(http) = &self.evaluator.http else {
                    bail!("evaluator.kind = \"http\" needs [evaluator.http] with a url");
                };
                Arc::new(build_http_evaluator(http)?)
            }
            EvaluatorKind::Calibrated => {
                let Some(path) = &self.evaluator.calibration_file else {
                    bail!(
                        "evaluator.kind = \"calibrated\" needs evaluator.calibration_file (written by `crag calibrate`)"
                    );
                };
                let calibration = read_calibration(path)?;
                let fusion = self.retrieval.fusion().name();
                if calibration.fusion != fusion {
                    bail!(
                        "calibration_file {} was fitted under retrieval.fusion = \"{}\" but the engine uses \"{fusion}\": its fused-score features would mean something else; refit it with `crag calibrate` or set retrieval.fusion",
                        path.display(),
                        calibration.fusion
                    );
                }
                Arc::new(
                    CalibratedRelevance::new(calibration)
                        .with_context(|| format!("invalid calibration_file {}", path.display()))?,
                )
            }
        };
        if self.llm.as_ref().is_some_and(|l| l.rewrite) {
            parts.rewriter = llm;
        }
        parts.web_search = build_web(&self.web_search)?;
        parts.reranker = build_reranker(&self.reranker, &self.assets_dir())?;
        Ok(parts)
    }

    /// Opens the embedded stack (ONNX embedder, Tantivy, LanceDB) on `data_dir` / `vectors_uri`
    /// without the Corrective RAG adapters (the engine's defaults).
    pub async fn open_indexes(
        &self,
        data_dir: &Path,
        vectors_uri: &str,
        engine: EngineConfig,
    ) -> Result<Engine> {
        let assets = EmbedderAssets::from_manifest(&self.assets_dir())?;
        let embedder =
            tokio::task::spawn_blocking(move || OnnxEmbedder::new(OnnxEmbedderConfig::new(assets)))
                .await
                .context("embedder loading task failed")??;
        let dimension = crag_ports::Embedder::dimension(&embedder);
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("failed to create data directory {}", data_dir.display()))?;
        let keywords = TantivyKeywordIndex::open(&data_dir.join("keyword"))?;
        let vectors = LanceVectorIndex::open(vectors_uri, VECTOR_TABLE, dimension)
            .await?
            .with_ann(self.vector_index.policy());
        Ok(Engine::new(
            Arc::new(embedder),
            Arc::new(vectors),
            Arc::new(keywords),
            engine,
        )?)
    }

    /// The engine this configuration describes: the embedded stack on `data_dir` with every
    /// configured adapter wired in.
    pub async fn engine(&self) -> Result<Engine> {
        let parts = self.components()?;
        let engine = self
            .open_indexes(&self.data_dir, &self.vectors_uri(), self.engine_config())
            .await?;
        Ok(engine.with_crag(parts)?)
    }
}

/// `[vector_index]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VectorIndexSection {
    /// Whether an ANN index (LanceDB IVF-HNSW-SQ) is built once the table holds
    /// `ann_min_rows` chunks; `false`: every search scans all vectors, exactly.
    pub ann: bool,
    /// Chunks at which the ANN index is built (after an ingestion); at least
    /// [`MIN_ANN_ROWS`].
    pub ann_min_rows: usize,
}

/// Least `vector_index.ann_min_rows`: the index's clustering and quantiser are trained on
/// the rows, and a handful of rows trains nothing.
pub const MIN_ANN_ROWS: usize = 256;

impl Default for VectorIndexSection {
    fn default() -> Self {
        Self {
            ann: true,
            ann_min_rows: DEFAULT_ANN_MIN_ROWS,
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
        Ok(())
    }

    /// The LanceDB adapter's policy.
    pub fn policy(&self) -> AnnPolicy {
        if self.ann {
            AnnPolicy::FromRows(self.ann_min_rows)
        } else {
            AnnPolicy::Off
        }
    }
}

/// `[retrieval]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalSection {
    /// Candidates asked of each leg (BM25, vectors) before fusion.
    pub leg_depth: usize,
    /// How the legs are fused: `rrf` (ranks only) or `convex` (min-max-normalised scores,
    /// weighted by `keyword_weight`).
    pub fusion: FusionKind,
    /// Weight of the BM25 leg in the `convex` fusion, in [0, 1] (vectors get the rest).
    pub keyword_weight: f32,
    /// Reciprocal-rank-fusion constant: a document scores `1 / (rrf_k + rank)` per leg; also
    /// the constant of the merges of sub-query and expanded-query results.
    pub rrf_k: f32,
}

/// `retrieval.fusion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
        Ok(())
    }
}

#[cfg(test)]
mod tests;
