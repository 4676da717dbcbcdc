//! crag's offline evaluation, shared by the CLI (`crag eval`, `crag calibrate`), benches and
//! tests:
//!
//! - [`metrics`]: nDCG, recall and MRR against graded judgements (as pytrec_eval / BEIR), and
//!   nearest-rank percentiles;
//! - [`collection`]: a BEIR collection on disk (judged queries, qrels) and its index, ingested
//!   with a seeded ablation that makes a share of the queries unanswerable;
//! - [`harness`]: runs the queries through each stage (BM25, vectors, hybrid, rerank, Corrective
//!   RAG) and measures quality, latency, throughput and the evaluator's AUROC;
//! - [`report`]: the report's JSON shape and printed form;
//! - [`synthetic`]: cheap stand-in vectors for the scale benchmarks (cost, never quality);
//! - [`seed`]: the key metrics of the Corrective RAG stage (decision, correction and web
//!   search rates, fast and corrected path latency).

mod baselines;
pub mod code_context;
pub mod collection;
mod error;
pub mod harness;
pub mod judgements;
pub mod metrics;
pub mod report;
pub mod seed;
mod stage;
pub mod synthetic;
mod system;

pub use collection::{prepare_index, Collection, CollectionSpec, PreparedIndex};
pub use crag_judge::auroc;
pub use error::{EvalError, Result};
pub use harness::{evaluate, EvalOptions, EvalProgress, QuietProgress, DEPTH};
pub use metrics::{mrr_at_k, ndcg_at_k, percentile, recall_at_k, Judgements};
pub use report::{print_report, EvalReport};
pub use stage::{judged_request, parse_stage, Stage};
pub use system::{dir_size, peak_rss};
