//! crag's configuration schema and its layering.
//!
//! One TOML file plus environment overrides (`CRAG_<SECTION>__<KEY>`), unknown keys rejected,
//! validated at start with messages that name the key. This crate only describes and checks:
//! it depends on no adapter; `crag-app`'s composition root builds what it names. Every key is
//! documented in `docs/configuration.md`.

mod calibration;
mod collection;
mod env;
mod error;
mod mcp;
pub mod reference;
mod retrieval;
mod server;
mod sessions;

use std::path::{Path, PathBuf};

use crag_engine::{CgragConfig, ChunkingConfig, CodeConfig, CragConfig, EngineConfig, GraphConfig};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use calibration::{read_calibration, write_calibration};
pub use collection::{check_name as check_collection_name, DEFAULT_COLLECTION, FIXED_KEYS};
pub use env::{env_overrides, ENV_PREFIX};
pub use error::{error_chain, ConfigError, Result};

use error::bail;
pub use mcp::McpSection;
pub use retrieval::{
    FusionKind, RetrievalSection, ScopeKind, DEFAULT_BM25_B, DEFAULT_BM25_DOCUMENT_TITLE_WEIGHT,
    DEFAULT_BM25_K1, DEFAULT_BM25_TITLE_WEIGHT,
};
pub use server::{
    AuthSection, LimitsSection, ResolvedScope, ScopedToken, ServerSection, MIN_TOKEN_LEN,
};
pub use sessions::{SessionBackend, SessionsSection};

/// The adapter sections of a configuration: the tables naming which adapter serves a port
/// and its settings (crag's `[evaluator]`, `[web_search]`, `[llm]`, `[reranker]`). Their types
/// live beside the builders that read them, in `crag-app`'s composition root, so that adding
/// an adapter touches one file there and this crate names no adapter. Each field of the
/// implementing struct is a top-level table of the file; implemented for every type with
/// these traits.
pub trait AdapterSections:
    Serialize + DeserializeOwned + JsonSchema + Default + Clone + std::fmt::Debug + PartialEq
{
}

impl<T> AdapterSections for T where
    T: Serialize + DeserializeOwned + JsonSchema + Default + Clone + std::fmt::Debug + PartialEq
{
}

/// The whole configuration: defaults, then the file, then `CRAG_` environment overrides.
/// `A` is the application's [`AdapterSections`] (`crag_app::Config` names crag's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
#[serde(bound(deserialize = "A: AdapterSections", serialize = "A: AdapterSections"))]
#[schemars(
    bound = "A: AdapterSections",
    description = "The whole configuration: defaults, then the file, then `CRAG_` environment overrides."
)]
pub struct Config<A> {
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
    /// The adapter sections, each a top-level table.
    #[serde(flatten)]
    pub adapters: A,
    /// Listening addresses, timeouts, concurrency.
    pub server: ServerSection,
    /// Request bounds of the HTTP and gRPC APIs.
    pub limits: LimitsSection,
    /// Bearer-token authentication of the HTTP and gRPC APIs.
    pub auth: AuthSection,
    /// The Model Context Protocol server: tools for agents.
    pub mcp: McpSection,
}

impl<A: Default> Default for Config<A> {
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
            adapters: A::default(),
            server: ServerSection::default(),
            limits: LimitsSection::default(),
            auth: AuthSection::default(),
            mcp: McpSection::default(),
        }
    }
}

impl<A: AdapterSections> Config<A> {
    /// Loads the file at `path` (if any), applies the `CRAG_` overrides among `vars`
    /// (usually `std::env::vars()`), and validates the result. Errors name the file, the key
    /// and, for overrides, the environment variable.
    pub fn load(
        path: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self> {
        let mut table = match path {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    what: "configuration",
                    path: path.to_path_buf(),
                    source,
                })?;
                text.parse::<toml::Table>()
                    .map_err(|e| ConfigError::from(e).within("configuration", Some(path)))?
            }
            None => toml::Table::new(),
        };
        env::apply::<A>(&mut table, vars)?;
        Self::from_table(table).map_err(|e| e.within("configuration", path))
    }

    /// Parses TOML text (no environment overrides) and validates it.
    pub fn parse(text: &str) -> Result<Self> {
        let table = text.parse::<toml::Table>()?;
        Self::from_table(table)
    }

    /// Deserialises the adapter sections on their own, so that an error inside one is named
    /// by its dotted path as for the other tables (serde loses the path inside a flattened
    /// field), then the rest.
    fn from_table(mut table: toml::Table) -> Result<Self> {
        let known = top_level_keys(&schemars::schema_for!(Self));
        if let Some(unknown) = table.keys().find(|k| !known.contains(k)) {
            bail!(
                "unknown key `{unknown}`, expected one of {}",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut own = toml::Table::new();
        for name in top_level_keys(&schemars::schema_for!(A)) {
            if let Some(value) = table.remove(&name) {
                own.insert(name, value);
            }
        }
        let adapters: A = deserialize(own)?;
        let mut config: Self = deserialize(table)?;
        config.adapters = adapters;
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
            .map_err(|e| ConfigError::invalid(format!("chunking: {e}")))?;
        self.retrieval.validate()?;
        self.embedder.validate()?;
        self.vector_index.validate()?;
        self.crag.validate()?;
        self.cgrag.validate()?;
        self.sessions.validate()?;
        self.code.validate()?;
        self.knowledge_graph
            .validate()
            .map_err(ConfigError::invalid)?;
        if self.crag.router.knowledge_graph != Default::default() && !self.knowledge_graph.enabled {
            bail!(
                "crag.router.knowledge_graph routes queries to the knowledge graph: set knowledge_graph.enabled = true"
            );
        }
        self.server.validate()?;
        self.limits.validate()?;
        self.auth.validate()?;
        self.mcp.validate()?;
        Ok(())
    }

    /// The bearer tokens the APIs accept: `auth.tokens` plus those in `$auth.tokens_env`.
    pub fn api_tokens(&self) -> Result<Vec<String>> {
        let var = std::env::var(&self.auth.tokens_env).ok();
        self.auth.resolve(var.as_deref())
    }

    /// The scoped tokens (`[[auth.scoped]]`), their `token_env` read from the environment.
    pub fn scoped_tokens(&self) -> Result<Vec<ResolvedScope>> {
        self.auth.resolve_scoped(&|name| std::env::var(name).ok())
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
            scope: self.retrieval.scope.engine(),
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
        for scoped in &mut shown.auth.scoped {
            if !scoped.token.is_empty() {
                scoped.token = "<redacted>".into();
            }
        }
        toml::to_string(&shown).map_err(|source| ConfigError::Render {
            what: "configuration",
            source,
        })
    }
}

/// `T` from a table; the error names the dotted path of the offending key.
fn deserialize<T: DeserializeOwned>(table: toml::Table) -> Result<T> {
    serde_path_to_error::deserialize(toml::Value::Table(table))
        .map_err(|e| ConfigError::invalid(format!("{}: {}", e.path(), e.inner())))
}

/// The properties of an object schema: the top-level keys of the file it describes.
fn top_level_keys(schema: &schemars::Schema) -> Vec<String> {
    schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
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
    /// 5 bytes, the `f32` values and an eight-bit code of each: 19 MiB for SciFact's 10k chunks,
    /// 187 MiB at 100k) and hybrid retrieval's vector leg scans that copy, reading ids and scores
    /// only (the codes of every row first, then again exactly the rows whose estimates' error
    /// bounds reach the k-th best); the copy is loaded when the index opens and again at the end
    /// of each ingestion or deletion (a copy of more than 100k rows in the background: a
    /// million take about 8 s); a stale copy (the version moved otherwise) is reloaded by the
    /// next search, one load at a time, the searches meanwhile going to LanceDB (its ANN index
    /// from `ann_min_rows`). `0`: every search goes to LanceDB. Same results as LanceDB's exact
    /// scan (cosine to float rounding, ties by chunk id), except for a copy partitioned under
    /// `memory_partition_from_rows`.
    pub memory_scan_rows: usize,
    /// A copy of at least this many chunks is split into partitions when it loads (spherical
    /// k-means, the square root of its rows: 1,000 for a million, trained on 32 rows each,
    /// about 10 s of both cores at a million, in the background), and a search scans only the `memory_probes` partitions
    /// whose centroids are nearest the query, not every row: an in-memory IVF index, faster
    /// and approximate (a neighbour in a partition not visited is missed; recall in
    /// docs/benchmarks.md). Searches among given documents (filters) scan every row. `0`:
    /// never; smaller copies are scanned whole, exactly.
    pub memory_partition_from_rows: usize,
    /// Partitions of a partitioned copy a search visits (>= 1; more: slower, finds more of the
    /// true nearest). Acts at query time.
    pub memory_probes: usize,
    /// Partitions of the ANN index a search visits (fewer: faster, lower recall); `0`: LanceDB's
    /// adaptive choice. Acts at query time.
    pub nprobes: usize,
}

/// Default `vector_index.ann_min_rows`: below this many chunks an exact scan is fast enough.
pub const DEFAULT_ANN_MIN_ROWS: usize = 100_000;

/// Least `vector_index.ann_min_rows`: the index's clustering and quantiser are trained on
/// the rows, and a handful of rows trains nothing.
pub const MIN_ANN_ROWS: usize = 256;

/// Default `vector_index.memory_scan_rows`: 1.5 million MiniLM vectors are about 2.7 GiB
/// with their codes. At a million chunks the copy's scan answers hybrid retrieval 2.9x faster
/// than LanceDB's ANN index for 1.5 GiB more memory (docs/benchmarks.md).
pub const DEFAULT_MEMORY_SCAN_ROWS: usize = 1_500_000;

/// Default `vector_index.memory_partition_from_rows`.
pub const DEFAULT_MEMORY_PARTITION_FROM_ROWS: usize = 500_000;

/// Default `vector_index.memory_probes`.
pub const DEFAULT_MEMORY_PROBES: usize = 128;

/// Default `vector_index.nprobes`: LanceDB's adaptive choice.
pub const DEFAULT_NPROBES: usize = 0;

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
            memory_partition_from_rows: DEFAULT_MEMORY_PARTITION_FROM_ROWS,
            memory_probes: DEFAULT_MEMORY_PROBES,
            nprobes: DEFAULT_NPROBES,
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
        if self.memory_probes == 0 {
            bail!("vector_index.memory_probes must be at least 1");
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

#[cfg(test)]
mod tests;
