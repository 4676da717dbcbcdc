//! The composition root: the one place where the configuration becomes adapters wired into an
//! [`Engine`]. Adapters are registered by kind in [`adapters`], each port's table of the
//! configuration declared beside its builder; nothing else in the workspace
//! names an adapter crate to build it.

mod adapters;
pub(crate) mod error;
mod graphs;
mod keyword;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crag_config::{EmbedderPrecision, EmbedderSection, SessionBackend, VectorIndexSection};
use crag_engine::{
    CgragComponents, CodeGapDetector, CragComponents, DetectorKind, Engine, EngineConfig,
    LlmGapDetector,
};
use crag_expansion::SynonymTable;
use crag_lancedb::{
    AnnPolicy, CacheBudget, LanceVectorIndex, MemoryPartitioning, StoreOptions, Warming,
};
use crag_onnx::{default_assets_dir, EmbedderAssets, OnnxEmbedder, OnnxEmbedderConfig, Precision};
use crag_ports::{Embedder, GapDetector, SessionStore, SymbolIndex};
use crag_sessions::{PostgresSessionStore, SessionStoreConfig, SqliteSessionStore};

pub use error::{BoxError, ComposeError, Context, Result};

use error::bail;

pub use adapters::{
    evaluator, language_model, reranker, web_search, Adapters, EvaluatorKind, EvaluatorSection,
    GraphStore, HttpEvaluatorSection, KeywordStore, LlmSection, RerankerKind, RerankerSection,
    StorageSection, WebProvider, WebSearchSection, DEFAULT_POSTGRES_SCHEMA,
};
pub use graphs::drop_collection_graphs;
use keyword::keyword_index;
pub use keyword::KEYWORD_TABLE;

use crate::Config;

/// File of the symbol index, in the data directory (`[storage] graphs = "sqlite"`).
pub const SYMBOLS_FILE: &str = "symbols.sqlite";

/// The term graph (knowledge graph of prose) in the data directory, when switched on
/// (`[storage] graphs = "sqlite"`).
pub const TERMS_FILE: &str = "terms.sqlite";

/// Name of the LanceDB table holding chunk vectors.
pub const VECTOR_TABLE: &str = "chunks";

/// File in the data directory naming the embedding model that built the index.
pub const EMBEDDING_MODEL_FILE: &str = "embedding-model";

/// File in the data directory saying that its vectors are synthetic (`crag ingest
/// --synthetic-vectors`, for the scale benchmarks): every open warns.
pub const SYNTHETIC_VECTORS_FILE: &str = "synthetic-vectors";

/// The model an index without [`EMBEDDING_MODEL_FILE`] was built with: the only one there
/// was before the file existed.
const UNRECORDED_MODEL: &str = "all-MiniLM-L6-v2";

/// The model and runtime assets directory: `assets_dir`, else `$CRAG_ASSETS_DIR` or
/// `~/.cache/crag/assets`.
pub fn assets_dir(config: &Config) -> PathBuf {
    config.assets_dir.clone().unwrap_or_else(default_assets_dir)
}

/// The LanceDB adapter's ANN policy of `[vector_index]`.
pub fn ann_policy(section: &VectorIndexSection) -> AnnPolicy {
    if section.ann {
        AnnPolicy::FromRows(section.ann_min_rows)
    } else {
        AnnPolicy::Off
    }
}

/// LanceDB's cache budgets of `[vector_index]`.
pub fn cache_budget(section: &VectorIndexSection) -> CacheBudget {
    CacheBudget {
        metadata_bytes: section.metadata_cache_mib << 20,
        index_bytes: section.index_cache_mib << 20,
    }
}

/// The LanceDB adapter's options: `[storage]` with `[vector_index]`'s cache budgets.
pub fn store_options(config: &Config) -> Result<StoreOptions> {
    config
        .adapters
        .storage
        .store_options(cache_budget(&config.vector_index))
}

/// Builds the Corrective RAG adapters the configuration names; ONNX models find ONNX Runtime
/// through the assets directory.
pub fn components(config: &Config) -> Result<CragComponents> {
    let mut parts = CragComponents::heuristic(config.crag.clone())?;
    if let Some(path) = &config.synonyms_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("failed to read synonyms_file {}", path.display()))?;
        parts.synonyms = SynonymTable::from_json(&text)
            .with_context(|| format!("invalid synonyms_file {}", path.display()))?;
    }
    let llm = language_model(config)?;
    parts.evaluator = evaluator(config, llm.clone())?;
    if config.adapters.llm.as_ref().is_some_and(|l| l.rewrite) {
        parts.rewriter = llm.clone();
    }
    if config.adapters.llm.as_ref().is_some_and(|l| l.refine) {
        parts.refiner = llm;
    }
    parts.web_search = web_search(&config.adapters.web_search)?;
    parts.reranker = reranker(&config.adapters.reranker, &assets_dir(config))?;
    Ok(parts)
}

/// Opens the embedded stack (ONNX embedder, Tantivy, LanceDB, the symbol index and, with
/// `[knowledge_graph] enabled`, the term graph, both in SQLite or Postgres as `[storage]
/// graphs` says) on `data_dir` / `vectors_uri` without the Corrective RAG adapters (the
/// engine's defaults).
pub async fn open_indexes(
    config: &Config,
    data_dir: &Path,
    vectors_uri: &str,
    engine: EngineConfig,
) -> Result<Engine> {
    open_indexes_sharing(config, data_dir, vectors_uri, engine, None).await
}

/// [`open_indexes`], reusing `shared` as the embedder when it is the model the index needs
/// (collections of one server share one loaded model).
pub async fn open_indexes_sharing(
    config: &Config,
    data_dir: &Path,
    vectors_uri: &str,
    engine: EngineConfig,
    shared: Option<Arc<dyn Embedder>>,
) -> Result<Engine> {
    // The keyword index first: with `precision = "auto"` the embedder is the one the index
    // records, or int8 for an empty one.
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("failed to create data directory {}", data_dir.display()))?;
    let keywords = keyword_index(config, data_dir, vectors_uri).await?;
    if data_dir.join(SYNTHETIC_VECTORS_FILE).exists() {
        tracing::warn!(path = %data_dir.display(), "this index holds synthetic vectors (a scale benchmark's): its answers mean nothing");
    }
    let stored = keywords.count().await?;
    adopt_shared_model_record(config, data_dir, vectors_uri).await?;
    let precision = resolve_precision(config.embedder.precision, data_dir, stored)?;
    let embedder_config = embedder_config(&config.embedder, precision, &assets_dir(config))?;
    let model_id = embedder_config.model_id.clone();
    check_embedding_model(data_dir, &model_id, stored)?;
    share_model_record(config, vectors_uri, &model_id).await?;
    let embedder: Arc<dyn Embedder> = match shared.filter(|e| e.model_id() == model_id) {
        Some(embedder) => embedder,
        None => Arc::new(
            tokio::task::spawn_blocking(move || OnnxEmbedder::new(embedder_config))
                .await
                .context("embedder loading task failed")??,
        ),
    };
    let dimension = embedder.dimension();
    let vectors = LanceVectorIndex::open_with(
        vectors_uri,
        VECTOR_TABLE,
        dimension,
        &store_options(config)?,
    )
    .await?
    .with_ann(ann_policy(&config.vector_index))
    .with_memory_scan(config.vector_index.memory_scan_rows)
    .with_memory_partitions(MemoryPartitioning {
        from_rows: config.vector_index.memory_partition_from_rows,
        probes: config.vector_index.memory_probes,
    })
    .with_nprobes(config.vector_index.nprobes);
    match vectors.start_warm().await {
        Ok(Warming::Background) => tracing::info!(
            "vectors being copied into memory in the background; searches go to LanceDB meanwhile"
        ),
        Ok(Warming::Off | Warming::Loaded(_)) => {}
        Err(error) => {
            tracing::warn!(%error, "vectors not copied into memory at start; the first search will try");
        }
    }
    let (symbols, terms) = graphs::open(config, data_dir, engine.graph.enabled).await?;
    let mut engine =
        Engine::new(embedder, Arc::new(vectors), keywords, engine)?.with_symbols(symbols);
    if let Some(terms) = terms {
        engine = engine.with_term_graph(terms);
    }
    Ok(engine)
}

/// Upgrades a keyword index written by an earlier release to the current schema: token
/// counts (before 2026-11-26; counted by the embedder's tokenizer as a query would count
/// them) and metadata (before 2026-11-27); the chunks it rewrote, `None` when the index has
/// the current schema already (or there is none). Run before [`open_indexes`]: it takes
/// the index's writer lock, and fails while another process holds the index.
pub async fn upgrade_keyword_index(config: &Config, data_dir: &Path) -> Result<Option<usize>> {
    if config.adapters.storage.keyword != KeywordStore::Tantivy {
        return Ok(None);
    }
    let dir = data_dir.join("keyword");
    if crag_tantivy::remove_upgrade_leftovers(&dir)? {
        tracing::info!(path = %dir.display(), "removed what an interrupted upgrade left");
    }
    if crag_tantivy::is_upgraded(&dir)? {
        return Ok(None);
    }
    // The index holds chunks: the precision it records (both models share the tokenizer).
    let precision = resolve_precision(config.embedder.precision, data_dir, 1)?;
    let embedder_config = embedder_config(&config.embedder, precision, &assets_dir(config))?;
    tokio::task::spawn_blocking(move || -> Result<Option<usize>> {
        let embedder = OnnxEmbedder::new(embedder_config)?;
        let count = |text: &str| {
            crag_ports::Embedder::count_tokens(&embedder, text)
                .unwrap_or_else(|_| crag_refine::estimate_tokens(text))
        };
        Ok(crag_tantivy::upgrade(&dir, &count)?)
    })
    .await
    .context("token count task failed")?
    .context("failed to upgrade the keyword index")
}

/// The model precision `configured` means for the index in `data_dir` holding `stored` chunks:
/// the configured one, or for `"auto"` the one whose model the index records (float32 for an
/// index built before records existed), int8 for a new index.
pub fn resolve_precision(
    configured: EmbedderPrecision,
    data_dir: &Path,
    stored: usize,
) -> Result<Precision> {
    Ok(match configured {
        EmbedderPrecision::Float32 => Precision::Float32,
        EmbedderPrecision::Int8 => Precision::Int8,
        EmbedderPrecision::Auto => match (recorded_model(data_dir)?, stored) {
            (Some(id), _) if id == Precision::Int8.model_id(UNRECORDED_MODEL) => Precision::Int8,
            // Another recorded model: float32's id, or one check_embedding_model names.
            (Some(_), _) => Precision::Float32,
            (None, 0) => Precision::Int8,
            (None, _) => Precision::Float32,
        },
    })
}

/// The ONNX embedder's settings of `[embedder]` at `precision` (see [`resolve_precision`]),
/// its model located and verified in `assets`.
pub fn embedder_config(
    section: &EmbedderSection,
    precision: Precision,
    assets: &Path,
) -> Result<OnnxEmbedderConfig> {
    let assets = EmbedderAssets::from_manifest_with(assets, precision)?;
    let mut config = OnnxEmbedderConfig::of(assets, precision);
    config.threads = section.threads;
    if section.sessions > 0 {
        config.sessions = section.sessions;
    }
    config.spinning = section.spinning;
    Ok(config)
}

/// Checks that the index in `data_dir` was built by `model_id` (vectors of another model are
/// not comparable with this one's queries) and records it for an index that names none yet.
/// An index of `stored` chunks with no record was built before records existed, by the
/// float32 model.
pub fn check_embedding_model(data_dir: &Path, model_id: &str, stored: usize) -> Result<()> {
    let path = data_dir.join(EMBEDDING_MODEL_FILE);
    let built_with = match (recorded_model(data_dir)?, stored) {
        (Some(id), _) => id,
        (None, 0) => model_id.to_owned(),
        (None, _) => UNRECORDED_MODEL.to_owned(),
    };
    if built_with != model_id {
        bail!(
            "the index in {} was built with the embedding model {built_with}, but {model_id} is \
             configured ([embedder] precision): set it to \"auto\" or back, or ingest into another \
             data_dir",
            data_dir.display()
        );
    }
    if !path.is_file() {
        std::fs::write(&path, format!("{model_id}\n"))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Key of the embedding model's record beside a shared index's tables.
const MODEL_RECORD: &str = "embedding-model";

/// Whether the whole index lives in LanceDB at `vectors_uri` (`[storage] keyword =
/// "lancedb"`), where every replica opens it: then the embedding model is recorded there
/// too, and the data directory's file is only this machine's copy.
fn index_is_shared(config: &Config) -> bool {
    config.adapters.storage.keyword == KeywordStore::Lancedb
}

/// With a shared index, copies the model recorded beside its tables into `data_dir` (a
/// fresh replica's data directory records nothing; another's may be stale).
async fn adopt_shared_model_record(
    config: &Config,
    data_dir: &Path,
    vectors_uri: &str,
) -> Result<()> {
    if !index_is_shared(config) {
        return Ok(());
    }
    let options = store_options(config)?;
    let Some(shared) = crag_lancedb::read_record(vectors_uri, &options, MODEL_RECORD).await? else {
        return Ok(());
    };
    if recorded_model(data_dir)?.as_deref() != Some(shared.as_str()) {
        let path = data_dir.join(EMBEDDING_MODEL_FILE);
        std::fs::write(&path, format!("{shared}\n"))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// With a shared index, records `model_id` beside its tables unless a model is recorded
/// there already; fails when another replica recorded a different one meanwhile.
async fn share_model_record(config: &Config, vectors_uri: &str, model_id: &str) -> Result<()> {
    if !index_is_shared(config) {
        return Ok(());
    }
    let options = store_options(config)?;
    let kept = crag_lancedb::record_once(vectors_uri, &options, MODEL_RECORD, model_id).await?;
    if kept != model_id {
        bail!(
            "the index at {vectors_uri} was built with the embedding model {kept}, but {model_id} \
             is configured ([embedder] precision): set it to \"auto\" or to that model's"
        );
    }
    Ok(())
}

/// The embedding model the index in `data_dir` records, if it records one.
fn recorded_model(data_dir: &Path) -> Result<Option<String>> {
    let path = data_dir.join(EMBEDDING_MODEL_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim().to_owned()).filter(|id| !id.is_empty())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The session store of `[sessions]`, if any: with `backend = "postgres"`, at `[sessions]`'
/// URL, else at `[storage] postgres_url`.
pub async fn session_store(config: &Config) -> Result<Option<Arc<dyn SessionStore>>> {
    let section = &config.sessions;
    let store_config = SessionStoreConfig {
        max_connections: section.max_connections,
        acquire_timeout: std::time::Duration::from_millis(section.timeout_ms),
        statement_timeout: std::time::Duration::from_millis(section.timeout_ms),
    };
    Ok(match section.backend {
        SessionBackend::Off => None,
        SessionBackend::Sqlite => {
            let path = section.sqlite_path(&config.data_dir);
            let store = SqliteSessionStore::open(&path, store_config)
                .await
                .with_context(|| format!("cannot open the session store {}", path.display()))?;
            Some(Arc::new(store))
        }
        SessionBackend::Postgres => {
            // `[sessions]`' own URL wins; else the one every shared store uses.
            let url = if section.url.is_none() && section.url_env.is_none() {
                let why = "sessions.backend = \"postgres\"";
                match config.adapters.storage.postgres_url(why)? {
                    Some(url) => url,
                    None => {
                        bail!("{why} needs sessions.url, sessions.url_env or storage.postgres_url")
                    }
                }
            } else {
                section.postgres_url()?
            };
            let store = PostgresSessionStore::connect(&url, store_config)
                .await
                .context("cannot connect the Postgres session store (sessions.url, else storage.postgres_url)")?;
            Some(Arc::new(store))
        }
    })
}

/// The CGRAG parts: the gap detector `cgrag.detector` names (the LLM-free one reads
/// `symbols` when given) and the session store `sessions` (see [`session_store`]).
pub fn cgrag(
    config: &Config,
    symbols: Option<Arc<dyn SymbolIndex>>,
    sessions: Option<Arc<dyn SessionStore>>,
) -> Result<CgragComponents> {
    let llm = language_model(config)?;
    let section = &config.cgrag;
    let llm_detector = |model| -> Arc<dyn GapDetector> {
        Arc::new(LlmGapDetector::new(
            model,
            section.answer_max_tokens,
            section.json_prompt,
        ))
    };
    let detector: Arc<dyn GapDetector> = match (section.detector, llm) {
        (DetectorKind::Code, _) | (DetectorKind::Auto, None) => Arc::new(match symbols {
            Some(symbols) => CodeGapDetector::with_symbols(symbols),
            None => CodeGapDetector::lexical(),
        }),
        (DetectorKind::Auto | DetectorKind::Llm, Some(model)) => llm_detector(model),
        (DetectorKind::Llm, None) => {
            bail!("cgrag.detector = \"llm\" needs an [llm] section (base_url, model)")
        }
    };
    Ok(CgragComponents {
        detector,
        sessions,
        config: section.clone(),
    })
}

/// Expires idle sessions in the background while a server runs (none without a store).
pub fn spawn_session_sweeper(
    config: &Config,
    engine: &Engine,
) -> Option<tokio::task::JoinHandle<()>> {
    let store = engine.cgrag().sessions.clone()?;
    Some(crag_sessions::spawn_sweeper(
        store,
        std::time::Duration::from_secs(config.sessions.sweep_seconds),
        std::time::Duration::from_secs(config.sessions.idle_minutes * 60),
    ))
}

/// The engine the configuration describes: the embedded stack on `data_dir` with every
/// configured adapter wired in.
pub async fn engine(config: &Config) -> Result<Engine> {
    let sessions = session_store(config).await?;
    engine_with(config, sessions, None).await
}

/// [`engine`] with the session store `sessions` (e.g. a collection's namespace of the
/// server's store) and, given the engine of another collection, its metrics registry and,
/// when it is the model the index needs, its embedder.
pub async fn engine_with(
    config: &Config,
    sessions: Option<Arc<dyn SessionStore>>,
    sibling: Option<&Engine>,
) -> Result<Engine> {
    let mut parts = components(config)?;
    if let Some(sibling) = sibling {
        parts.metrics = sibling.metrics().clone();
    }
    let shared = sibling.map(|e| e.embedder().clone());
    if config.server.reconcile_on_start {
        if let Some(chunks) = upgrade_keyword_index(config, &config.data_dir).await? {
            tracing::info!(chunks, "keyword index upgraded to the current schema");
        }
    }
    let engine = open_indexes_sharing(
        config,
        &config.data_dir,
        &config.vectors_uri(),
        config.engine_config(),
        shared,
    )
    .await?;
    if config.server.reconcile_on_start {
        let report = engine
            .reconcile()
            .await
            .context("failed to reconcile the indexes at start")?;
        tracing::info!(
            documents = report.documents_checked,
            orphans_removed = report.orphans_removed.len(),
            documents_repaired = report.documents_repaired.len(),
            elapsed_ms = report.elapsed.as_millis() as u64,
            "indexes reconciled"
        );
    }
    let cgrag = cgrag(config, engine.symbol_index().cloned(), sessions)?;
    Ok(engine.with_crag(parts)?.with_cgrag(cgrag)?)
}

#[cfg(test)]
mod tests;
