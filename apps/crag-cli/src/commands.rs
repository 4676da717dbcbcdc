use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context as _, Result};
use clap::Args;
use crag_core::{ChunkFilter, ChunkKind, MetadataFilter, Query, SymbolKind, TopK};
use crag_engine::readers::{is_beir_corpus, read_beir_corpus, read_path, DEFAULT_MAX_FILE_BYTES};
use crag_engine::{ChunkingConfig, Engine, EngineConfig, IngestProgress, QueryRequest};
use indicatif::{ProgressBar, ProgressStyle};

use crate::output;
use crag_app::compose::{EvaluatorKind, WebProvider};
use crag_app::Config;

/// The effective configuration (file, `CRAG_` environment, then global flags), for the
/// collection `--collection` names.
pub struct Context {
    /// The collection's configuration: [`Context::base`] with its overrides and directory.
    pub config: Config,
    /// The configuration of the data directory (its `default` collection).
    pub base: Config,
    /// The collection (`default` unless `--collection` names another).
    pub collection: String,
    /// The configuration file, if any (`crag serve` reloads its tokens on SIGHUP).
    pub config_path: Option<PathBuf>,
}

impl Context {
    pub(crate) fn data_dir(&self) -> &Path {
        &self.config.data_dir
    }

    /// The embedded stack on the configured data directory, without the Corrective RAG adapters.
    pub(crate) async fn engine(&self, engine: EngineConfig) -> Result<Engine> {
        Ok(crag_app::compose::open_indexes(
            &self.config,
            self.data_dir(),
            &self.config.vectors_uri(),
            engine,
        )
        .await?)
    }
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// A directory, a single file, or a BEIR corpus.jsonl.
    path: PathBuf,
    /// Files larger than this many bytes are skipped.
    #[arg(long, default_value_t = DEFAULT_MAX_FILE_BYTES)]
    max_file_bytes: u64,
    /// Tokens per chunk (default: `[chunking] chunk_tokens`, 224).
    #[arg(long)]
    chunk_tokens: Option<usize>,
    /// Tokens shared by consecutive chunks (default: `[chunking] overlap_tokens`, 32).
    #[arg(long)]
    overlap_tokens: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Scale benchmarks only: embed the first N chunks for real and give the others
    /// perturbed copies of those vectors (cheap, deterministic, useless for quality; the data
    /// directory is marked), printing the throughput of each tenth of the documents.
    #[arg(long, value_name = "N", hide = true)]
    synthetic_vectors: Option<usize>,
}

pub async fn ingest(ctx: &Context, args: IngestArgs) -> Result<()> {
    let configured = ctx.config.chunking;
    let chunking = ChunkingConfig {
        chunk_tokens: args.chunk_tokens.unwrap_or(configured.chunk_tokens),
        overlap_tokens: args.overlap_tokens.unwrap_or(configured.overlap_tokens),
    };
    chunking.validate()?;
    let path = args.path.clone();
    if !path.exists() {
        bail!("{} does not exist", path.display());
    }
    let max = args.max_file_bytes;
    let loaded = tokio::task::spawn_blocking(move || {
        if is_beir_corpus(&path) {
            read_beir_corpus(&path)
        } else {
            read_path(&path, max)
        }
    })
    .await
    .context("reading task failed")??;
    let config = EngineConfig {
        chunking,
        ..ctx.config.engine_config()
    };
    let (engine, progress): (_, Box<dyn IngestProgress>) = match args.synthetic_vectors {
        None => (ctx.engine(config).await?, Box::new(Bar::new(args.json))),
        Some(sample) => (
            {
                // The real model, as the index needs it (the precision it records).
                let real = ctx.engine(config).await?.embedder().clone();
                crate::scale::engine(&ctx.config, config, real, sample).await?
            },
            Box::new(crate::scale::Tenths::new()),
        ),
    };
    let report = engine
        .ingest(
            loaded.documents,
            loaded.skipped,
            &loaded.scope,
            progress.as_ref(),
        )
        .await?;
    output::ingest_report(&report, args.json)
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The question or keywords.
    #[arg(required_unless_present = "batch")]
    text: Option<String>,
    /// Run every query of a file instead: BEIR queries.jsonl (`_id`, `text`) or one per line.
    #[arg(long, conflicts_with = "text")]
    batch: Option<PathBuf>,
    /// Number of results retrieved (before corrections).
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Tokens of context returned at most (default: crag.token_budget, 8000).
    #[arg(long)]
    token_budget: Option<usize>,
    /// Plain hybrid retrieval: no evaluation, no corrections.
    #[arg(long)]
    no_crag: bool,
    /// Never search the web for this query.
    #[arg(long)]
    no_web: bool,
    /// Do not rerank (when a reranker is configured).
    #[arg(long)]
    no_rerank: bool,
    /// Relevance evaluator (overrides evaluator.kind of the configuration).
    #[arg(long, value_enum)]
    evaluator: Option<EvaluatorKind>,
    /// Web search provider (overrides web_search.provider).
    #[arg(long, value_enum, env = "CRAG_WEB_SEARCH")]
    web_search: Option<WebProvider>,
    /// Web search base URL, e.g. a SearXNG instance (overrides web_search.url).
    #[arg(long, env = "CRAG_WEB_SEARCH_URL")]
    web_search_url: Option<String>,
    /// Keep only sources starting with this prefix.
    #[arg(long)]
    source_prefix: Option<String>,
    /// Keep only chunks of this kind (prose, code, web); repeatable.
    #[arg(long = "kind")]
    kinds: Vec<String>,
    /// Keep only code chunks in this language (rust, python, typescript, tsx, javascript, go);
    /// repeatable.
    #[arg(long = "language")]
    languages: Vec<String>,
    /// Keep only code chunks defining this kind of symbol (function, method, struct, class...);
    /// repeatable.
    #[arg(long = "symbol-kind")]
    symbol_kinds: Vec<String>,
    /// Keep only documents whose metadata passes this filter, applied inside both legs'
    /// searches: JSON such as '{"team": "billing", "year": {"$gte": 2020}}' (docs/filters.md).
    #[arg(long, value_parser = parse_json)]
    filter: Option<serde_json::Value>,
    /// Print the results as JSON (see docs/cli-json.md).
    #[arg(long)]
    json: bool,
}

/// Reads a flag's JSON value.
pub(crate) fn parse_json(raw: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(raw).map_err(|e| format!("not JSON: {e}"))
}

/// The retrieval filter of `crag query`'s flags.
fn query_filter(args: &QueryArgs) -> Result<ChunkFilter> {
    let languages = crag_app::requests::code_languages();
    if let Some(l) = args
        .languages
        .iter()
        .find(|l| !languages.contains(&l.as_str()))
    {
        bail!("--language {l}: expected one of {}", languages.join(", "));
    }
    Ok(ChunkFilter {
        source_prefix: args.source_prefix.clone().filter(|p| !p.is_empty()),
        kinds: args
            .kinds
            .iter()
            .map(|k| {
                k.parse::<ChunkKind>()
                    .with_context(|| format!("--kind {k}"))
            })
            .collect::<Result<_>>()?,
        languages: args.languages.clone(),
        symbol_kinds: args
            .symbol_kinds
            .iter()
            .map(|k| {
                k.parse::<SymbolKind>()
                    .with_context(|| format!("--symbol-kind {k}"))
            })
            .collect::<Result<_>>()?,
        metadata: args
            .filter
            .as_ref()
            .map(|f| MetadataFilter::from_json(f).context("--filter"))
            .transpose()?,
        ..ChunkFilter::default()
    })
}

pub async fn query(ctx: &Context, args: QueryArgs) -> Result<()> {
    let top_k = TopK::new(args.top_k)?;
    if args.token_budget == Some(0) {
        bail!("--token-budget must be positive");
    }
    let mut config = ctx.config.clone();
    if let Some(kind) = args.evaluator {
        config.adapters.evaluator.kind = kind;
    }
    if let Some(provider) = args.web_search {
        config.adapters.web_search.provider = provider;
    }
    if let Some(url) = &args.web_search_url {
        config.adapters.web_search.url = Some(url.clone());
    }
    let parts = crag_app::compose::components(&config)?;
    let filter = query_filter(&args)?;
    let request = |query: Query| QueryRequest {
        filter: filter.clone(),
        use_crag: !args.no_crag,
        use_web_search: !args.no_web,
        use_rerank: !args.no_rerank,
        token_budget: args.token_budget,
        ..QueryRequest::new(query, top_k)
    };
    let queries = match &args.batch {
        Some(path) => read_queries(path)?,
        None => vec![(
            String::new(),
            Query::new(args.text.as_deref().unwrap_or_default())?,
        )],
    };
    ensure_index(ctx)?;
    // One query searches a few times at most: LanceDB answers those sooner than the
    // in-memory copy loads (300k chunks: 0.67 s against 1.1 s in all), so a one-shot query
    // copies nothing.
    let mut indexes = ctx.config.clone();
    if args.batch.is_none() {
        indexes.vector_index.memory_scan_rows = 0;
    }
    let engine = crag_app::compose::open_indexes(
        &indexes,
        ctx.data_dir(),
        &indexes.vectors_uri(),
        indexes.engine_config(),
    )
    .await?
    .with_crag(parts)?;
    if args.batch.is_none() {
        let (_, q) = &queries[0];
        let outcome = engine.query(&request(q.clone())).await?;
        return output::query(top_k, &outcome, args.json);
    }
    // Every query of the batch through the same vector search (a large table's in-memory
    // copy loads in the background; a one-shot query does not wait for it).
    engine.warm_up().await?;
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(queries.len() as u64)
    };
    let mut outcomes = Vec::with_capacity(queries.len());
    for (id, q) in &queries {
        let outcome = engine.query(&request(q.clone())).await?;
        bar.inc(1);
        outcomes.push((id.clone(), outcome));
    }
    bar.finish_and_clear();
    output::batch(top_k, &outcomes, args.json)
}

/// Reads a BEIR queries.jsonl (`{"_id", "text"}` per line) or plain text, one query per line.
fn read_queries(path: &Path) -> Result<Vec<(String, Query)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read queries {}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (id, q) = if line.starts_with('{') {
            let v: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: invalid JSON", path.display(), n + 1))?;
            let id = match &v["_id"] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(x) => x.to_string(),
                _ => (n + 1).to_string(),
            };
            let Some(q) = v["text"].as_str() else {
                bail!("{}:{}: no `text` field", path.display(), n + 1);
            };
            (id, q.to_owned())
        } else {
            ((n + 1).to_string(), line.to_owned())
        };
        let query = Query::new(&q).with_context(|| format!("{}:{}", path.display(), n + 1))?;
        out.push((id, query));
    }
    if out.is_empty() {
        bail!("no queries in {}", path.display());
    }
    Ok(out)
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Print the statistics as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn stats(ctx: &Context, args: StatsArgs) -> Result<()> {
    ensure_index(ctx)?;
    let engine = ctx.engine(ctx.config.engine_config()).await?;
    let stats = engine.stats().await?;
    let bytes = crag_eval::dir_size(ctx.data_dir());
    output::stats(ctx.data_dir(), &stats, bytes, args.json)
}

#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn reconcile(ctx: &Context, args: ReconcileArgs) -> Result<()> {
    ensure_index(ctx)?;
    let counted = crag_app::compose::upgrade_keyword_index(&ctx.config, ctx.data_dir()).await?;
    let engine = ctx.engine(ctx.config.engine_config()).await?;
    let report = engine.reconcile().await?;
    output::reconcile(&report, counted, args.json)
}

/// Fails when the data directory holds no index. With the keyword leg in LanceDB the index
/// is in the database at `vectors_uri`, which another machine may have written: nothing local
/// to look for.
pub(crate) fn ensure_index(ctx: &Context) -> Result<()> {
    if ctx.config.adapters.storage.keyword != crag_app::compose::KeywordStore::Tantivy {
        return Ok(());
    }
    let data_dir = ctx.data_dir();
    if !data_dir.join("keyword").is_dir() {
        bail!(
            "no index in {}: run `crag ingest PATH` first (or pass --data-dir)",
            data_dir.display()
        );
    }
    Ok(())
}

/// Progress bar on stderr; hidden when stderr is not a terminal or JSON is asked for.
pub(crate) struct Bar {
    bar: ProgressBar,
    chunks: AtomicUsize,
}

impl Bar {
    pub(crate) fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(0)
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} {wide_bar} {pos}/{len} documents, {msg} ({eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self {
            bar,
            chunks: AtomicUsize::new(0),
        }
    }
}

impl IngestProgress for Bar {
    fn start(&self, documents: usize) {
        self.bar.set_length(documents as u64);
        self.bar.set_message("0 chunks");
    }

    fn advance(&self, documents: usize, chunks: usize) {
        let total = self.chunks.fetch_add(chunks, Ordering::Relaxed) + chunks;
        self.bar.set_message(format!("{total} chunks"));
        self.bar.inc(documents as u64);
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
