//! A BEIR collection on disk, shared by `crag eval`, `crag calibrate`, benches and tests: judged
//! queries and qrels, and its index, ingested (or brought up to date) with the seeded ablation
//! applied.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{bail, Context as _, Result};
use crag_app::Config;
use crag_core::Query;
use crag_engine::readers::{read_beir_corpus, BEIR_ID_SEPARATOR};
use crag_engine::{Engine, IngestProgress, IngestReport};

use crate::metrics::Judgements;

/// Where a collection is and how its index is prepared.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionSpec {
    /// A BEIR collection directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv or qrels.tsv.
    pub dataset: PathBuf,
    /// Queries file (default: <dataset>/queries.jsonl; e.g. queries_all.jsonl for a train split).
    pub queries: Option<PathBuf>,
    /// Index directory of the collection (default: <data_dir>/eval/<dataset name>); reused
    /// when the corpus is unchanged.
    pub index_dir: Option<PathBuf>,
    /// Remove, for this fraction of the queries, all their relevant documents from the index
    /// first, so those queries become unanswerable (the next run without it restores them).
    pub ablate: f64,
    /// Seed of the ablation's choice of queries.
    pub seed: u64,
    /// Use only the first N judged queries.
    pub limit: Option<usize>,
}

impl CollectionSpec {
    /// The whole collection at `dataset`, no ablation.
    pub fn new(dataset: impl Into<PathBuf>) -> Self {
        Self {
            dataset: dataset.into(),
            queries: None,
            index_dir: None,
            ablate: 0.0,
            seed: 42,
            limit: None,
        }
    }
}

/// The judged queries of a split and their judgements.
pub struct Collection {
    /// `(query id, query)` of every judged query, in file order.
    pub queries: Vec<(String, Query)>,
    /// Judgements per query id.
    pub qrels: HashMap<String, Judgements>,
}

impl Collection {
    /// Reads `<dataset>/qrels/<split>.tsv` (or `qrels.tsv`) and the queries judged there.
    pub fn read(args: &CollectionSpec, split: &str) -> Result<Self> {
        let split_path = args.dataset.join("qrels").join(format!("{split}.tsv"));
        let qrels_path = if split_path.is_file() {
            split_path
        } else {
            args.dataset.join("qrels.tsv")
        };
        let qrels = read_qrels(&qrels_path)?;
        let queries_path = args
            .queries
            .clone()
            .unwrap_or_else(|| args.dataset.join("queries.jsonl"));
        let text = std::fs::read_to_string(&queries_path)
            .with_context(|| format!("failed to read {}", queries_path.display()))?;
        let mut queries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line)
                .with_context(|| format!("{}:{}: invalid JSON", queries_path.display(), n + 1))?;
            let id = match &v["_id"] {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(x) => x.to_string(),
                _ => bail!("{}:{}: no `_id`", queries_path.display(), n + 1),
            };
            // Only judged queries are evaluated.
            if !qrels.contains_key(&id) {
                continue;
            }
            let Some(text) = v["text"].as_str() else {
                bail!("{}:{}: no `text`", queries_path.display(), n + 1);
            };
            let q = Query::new(text).with_context(|| format!("query {id}"))?;
            queries.push((id, q));
        }
        if let Some(limit) = args.limit {
            queries.truncate(limit);
        }
        if queries.is_empty() {
            bail!(
                "no query of {} has judgements in {}",
                queries_path.display(),
                qrels_path.display()
            );
        }
        Ok(Self { queries, qrels })
    }

    /// Whether corpus document `id` is relevant (grade > 0) to query `query_id`.
    pub fn is_relevant(&self, query_id: &str, id: &str) -> bool {
        self.qrels
            .get(query_id)
            .and_then(|j| j.get(id))
            .is_some_and(|g| *g > 0)
    }
}

/// A collection's index, ingested with the ablation applied.
pub struct PreparedIndex {
    /// The engine over the index, with the configured Corrective RAG parts.
    pub engine: Engine,
    /// Collection name (the dataset directory's name).
    pub name: String,
    /// Where the index is.
    pub index_dir: PathBuf,
    /// Prefix of the collection's document ids in the index (strip it to get corpus ids).
    pub prefix: String,
    /// Indices (into the collection's queries) of the ablated queries.
    pub ablated_queries: Vec<usize>,
    /// Corpus ids of the documents the ablation removed.
    pub ablated_ids: HashSet<String>,
    /// What the ingestion wrote or deleted.
    pub ingest: IngestReport,
}

impl PreparedIndex {
    /// The corpus id of an indexed document id.
    pub fn corpus_id<'a>(&self, id: &'a str) -> &'a str {
        id.strip_prefix(&self.prefix).unwrap_or(id)
    }
}

/// Ingests the collection's corpus into its index directory, leaving out the relevant
/// documents of a seeded fraction `args.ablate` of the queries (documents of an earlier
/// ablation come back), and opens the engine with the configured components.
pub async fn prepare_index(
    config: &Config,
    args: &CollectionSpec,
    collection: &Collection,
    progress: &dyn IngestProgress,
) -> Result<PreparedIndex> {
    if !(0.0..1.0).contains(&args.ablate) {
        bail!("--ablate must be within [0, 1)");
    }
    let corpus_path = args.dataset.join("corpus.jsonl");
    if !corpus_path.is_file() {
        bail!("{} has no corpus.jsonl", args.dataset.display());
    }
    let name = args
        .dataset
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "dataset".into());
    let index_dir = args
        .index_dir
        .clone()
        .unwrap_or_else(|| config.data_dir.join("eval").join(&name));

    // Ablation: the relevant documents of a seeded choice of queries leave the index.
    let ablated_queries = choose(collection.queries.len(), args.ablate, args.seed);
    let mut ablated_ids: HashSet<&str> = HashSet::new();
    for &i in &ablated_queries {
        if let Some(j) = collection.qrels.get(&collection.queries[i].0) {
            ablated_ids.extend(j.iter().filter(|(_, g)| **g > 0).map(|(d, _)| d.as_str()));
        }
    }

    let corpus = corpus_path.clone();
    let mut loaded = tokio::task::spawn_blocking(move || read_beir_corpus(&corpus))
        .await
        .context("reading task failed")??;
    let prefix = format!(
        "{}{BEIR_ID_SEPARATOR}",
        corpus_path
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", corpus_path.display()))?
            .display()
    );
    loaded.documents.retain(|d| {
        let id = d.id.as_str().strip_prefix(&prefix).unwrap_or(d.id.as_str());
        !ablated_ids.contains(id)
    });

    std::fs::create_dir_all(&index_dir)
        .with_context(|| format!("cannot create {}", index_dir.display()))?;
    let vectors_uri = index_dir.join("vectors").to_string_lossy().into_owned();
    // The dataset's own index: its graphs in its directory, never in a shared database.
    let mut own = config.clone();
    own.adapters.storage.graphs = crag_app::compose::GraphStore::Sqlite;
    let engine =
        crag_app::compose::open_indexes(&own, &index_dir, &vectors_uri, config.engine_config())
            .await?
            .with_crag(crag_app::compose::components(config)?)?;
    eprintln!(
        "indexing {} documents of {} into {}",
        loaded.documents.len(),
        name,
        index_dir.display()
    );
    let ingest = engine
        .ingest(loaded.documents, loaded.skipped, &loaded.scope, progress)
        .await?;
    // Every judged query through the same vector search (a large table's in-memory copy
    // loads in the background; searches meanwhile go to LanceDB).
    engine.warm_up().await?;
    Ok(PreparedIndex {
        engine,
        name,
        index_dir,
        prefix,
        ablated_ids: ablated_ids.into_iter().map(str::to_owned).collect(),
        ablated_queries,
        ingest,
    })
}

/// Reads a BEIR qrels TSV (`query-id corpus-id score`, header optional).
pub fn read_qrels(path: &Path) -> Result<HashMap<String, Judgements>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read {}", path.display()))?;
    let mut qrels: HashMap<String, Judgements> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        if fields.len() < 3 || (n == 0 && fields[2].parse::<i64>().is_err()) {
            continue;
        }
        let grade: i64 = fields[2]
            .parse()
            .with_context(|| format!("{}:{}: score is not an integer", path.display(), n + 1))?;
        qrels.entry(fields[0].to_owned()).or_default().insert(
            fields[1].to_owned(),
            u32::try_from(grade.max(0)).unwrap_or(0),
        );
    }
    if qrels.is_empty() {
        bail!("no judgements in {}", path.display());
    }
    Ok(qrels)
}

/// Picks `fraction` of `n` indices with a seeded shuffle (SplitMix64), sorted.
pub fn choose(n: usize, fraction: f64, seed: u64) -> Vec<usize> {
    let take = ((n as f64) * fraction).round() as usize;
    let mut idx: Vec<usize> = (0..n).collect();
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        idx.swap(i, j);
    }
    let mut chosen: Vec<usize> = idx.into_iter().take(take).collect();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choose_is_seeded_and_sized() {
        let a = choose(300, 0.5, 42);
        assert_eq!(a.len(), 150);
        assert_eq!(a, choose(300, 0.5, 42));
        assert_ne!(a, choose(300, 0.5, 43));
        assert!(choose(300, 0.0, 42).is_empty());
        let mut d = a.clone();
        d.dedup();
        assert_eq!(d.len(), a.len());
    }

    #[test]
    fn qrels_read_graded_and_binary_with_header() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.tsv");
        std::fs::write(
            &p,
            "query-id\tcorpus-id\tscore\n1\t10\t2\n1\t11\t0\n2\t20\t-1\n",
        )
        .unwrap();
        let q = read_qrels(&p).unwrap();
        assert_eq!(q["1"]["10"], 2);
        assert_eq!(q["1"]["11"], 0);
        assert_eq!(q["2"]["20"], 0);
        std::fs::write(&p, "1\t10\tx\n2\t3\t1\n").unwrap();
        // A non-numeric first line is taken as a header.
        assert_eq!(read_qrels(&p).unwrap().len(), 1);
        std::fs::write(&p, "1\t10\t1\n2\t3\tx\n").unwrap();
        assert!(read_qrels(&p).is_err());
    }
}
