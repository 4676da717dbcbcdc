//! The flags naming a BEIR collection, shared by `crag eval` and `crag calibrate`; the
//! collection itself is `crag_eval::collection`'s.

use std::path::PathBuf;

use clap::Args;
use crag_eval::CollectionSpec;

/// Where a collection is and how its index is prepared.
#[derive(Debug, Args)]
pub struct CollectionArgs {
    /// A BEIR collection directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv or qrels.tsv.
    #[arg(long)]
    pub dataset: PathBuf,
    /// Queries file (default: <dataset>/queries.jsonl; e.g. queries_all.jsonl for a train split).
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Index directory of the collection (default: <data-dir>/eval/<dataset name>); reused
    /// when the corpus is unchanged.
    #[arg(long)]
    pub index_dir: Option<PathBuf>,
    /// Remove, for this fraction of the queries, all their relevant documents from the index
    /// first, so those queries become unanswerable (the next run without it restores them).
    #[arg(long, default_value_t = 0.0)]
    pub ablate: f64,
    /// Seed of the ablation's choice of queries.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Use only the first N judged queries.
    #[arg(long)]
    pub limit: Option<usize>,
}

impl CollectionArgs {
    /// The collection these flags name.
    pub fn spec(&self) -> CollectionSpec {
        CollectionSpec {
            dataset: self.dataset.clone(),
            queries: self.queries.clone(),
            index_dir: self.index_dir.clone(),
            ablate: self.ablate,
            seed: self.seed,
            limit: self.limit,
        }
    }
}
