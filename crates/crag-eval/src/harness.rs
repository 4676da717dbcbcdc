//! The evaluation harness of `crag eval`: runs a BEIR collection's queries through each stage
//! (BM25, vectors, hybrid, hybrid + knowledge graph, hybrid + rerank, hybrid + Corrective RAG) and reports retrieval
//! quality, latency, throughput and how well the relevance evaluator tells answerable queries
//! from unanswerable ones.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Context as _, EvalError, Result};
use crag_app::{compose::EvaluatorKind, Config};
use crag_core::{ChunkFilter, Query, TopK};
use crag_engine::{Engine, IngestProgress, QueryOutcome, QueryRequest};
use crag_judge::auroc;

use crate::baselines::{heuristic_scores, self_calibrated_scores, SelfCalibration};
use crate::collection::{prepare_index, Collection, CollectionSpec, PreparedIndex};
use crate::metrics::{mrr_at_k, ndcg_at_k, percentile, recall_at_k};
use crate::report::{EvalReport, EvaluatorReport, IngestFigures, Latency, StageReport};
use crate::stage::{judged_request, Stage};
use crate::system::{dir_size, peak_rss};

/// What an evaluation run measures, besides the collection.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// Qrels split (qrels/<split>.tsv); falls back to qrels.tsv when that file does not exist.
    pub split: String,
    /// Concurrent clients of the throughput run (0: skip it).
    pub clients: usize,
    /// Results retrieved by the Corrective RAG stage (default [`DEPTH`]).
    pub crag_top_k: usize,
    /// Write each stage's ranking as a TREC run file (`<stage>.run`) into this directory.
    pub runs: Option<PathBuf>,
    /// Run only these stages (empty: all); the evaluator report needs hybrid and hybrid+crag.
    pub stages: Vec<Stage>,
    /// Also fit the calibrated evaluator without labels on this many pseudo-queries of the
    /// indexed corpus and report its AUROC beside the configured evaluator's (0: not).
    pub self_calibrate: usize,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            split: "test".into(),
            clients: 4,
            crag_top_k: DEPTH,
            runs: None,
            stages: Vec::new(),
            self_calibrate: 0,
        }
    }
}

/// What an evaluation run tells its caller while it runs (a progress bar, a log).
pub trait EvalProgress: Sync {
    /// The run is about to make `total` stage runs of one query each.
    fn start(&self, _total: usize) {}
    /// A stage begins.
    fn stage(&self, _name: &str) {}
    /// One query went through the current stage.
    fn advance(&self) {}
    /// The run is over.
    fn finish(&self) {}
    /// Something the user should know (a stage skipped and why).
    fn note(&self, message: &str) {
        eprintln!("{message}");
    }
}

/// Progress that shows nothing but notes.
#[derive(Debug, Default, Clone, Copy)]
pub struct QuietProgress;

impl EvalProgress for QuietProgress {}

/// Depth of the retrieval stages (Recall@100).
pub const DEPTH: usize = 100;

/// One query's run through a stage.
struct QueryRun {
    /// Corpus ids, best first (each document once, at its best chunk).
    ids: Vec<String>,
    /// The stage's score of each id's chunk: BM25, vector similarity or fused RRF score; 1 / rank
    /// for the reranking and Corrective RAG stages, whose order is not one score's.
    scores: Vec<f64>,
    /// The Corrective RAG stage's outcome.
    outcome: Option<QueryOutcome>,
    /// The knowledge-graph stage's number of expansion terms.
    expanded: Option<usize>,
}

/// Evaluates the collection `spec` describes under `config`: prepares its index, runs every
/// judged query through each stage, and reports.
pub async fn evaluate(
    config: &Config,
    spec: &CollectionSpec,
    options: &EvalOptions,
    ingest_progress: &dyn IngestProgress,
    progress: &dyn EvalProgress,
) -> Result<EvalReport> {
    let crag_top_k = TopK::new(options.crag_top_k)?;
    let collection = Collection::read(spec, &options.split)?;
    let index = prepare_index(config, spec, &collection, ingest_progress).await?;
    let (engine, prefix) = (&index.engine, index.prefix.as_str());
    let stats = engine.stats().await?;

    let stage_list = stages_to_run(engine, options, progress);
    let judged = stage_list.contains(&Stage::Crag);
    progress.start(collection.queries.len() * stage_list.len());
    let mut stages = Vec::new();
    let mut per_query: HashMap<Stage, Vec<QueryRun>> = HashMap::new();
    for stage in stage_list {
        let (report, runs) = measure_stage(
            engine,
            stage,
            &collection,
            options,
            crag_top_k,
            prefix,
            progress,
        )
        .await?;
        stages.push(report);
        per_query.insert(stage, runs);
    }
    progress.finish();

    // The seed heuristic's comparison scores only matter beside a judged stage.
    let baseline = if config.adapters.evaluator.kind == EvaluatorKind::Heuristic || !judged {
        None
    } else {
        progress.note("scoring the same documents with the seed heuristic for comparison");
        Some(heuristic_scores(engine, &collection.queries, crag_top_k).await?)
    };
    let self_calibrated = if options.self_calibrate > 0 && judged {
        progress.note("fitting the calibrated evaluator on pseudo-queries of the corpus");
        let fit = SelfCalibration {
            queries: options.self_calibrate,
            seed: spec.seed,
        };
        let queries = &collection.queries;
        Some(self_calibrated_scores(config, spec, &index, queries, crag_top_k, &fit).await?)
    } else {
        None
    };
    let evaluator = evaluator_report(
        &collection,
        &per_query,
        config,
        spec,
        &index,
        [baseline.as_deref(), self_calibrated.as_deref()],
    );
    let report = &index.ingest;
    Ok(EvalReport {
        dataset: spec.dataset.display().to_string(),
        split: options.split.clone(),
        queries: collection.queries.len(),
        documents: stats.documents,
        chunks: stats.keyword_chunks,
        ingest: IngestFigures {
            documents_written: report.documents_added + report.documents_updated,
            documents_deleted: report.documents_deleted,
            chunks_written: report.chunks_written,
            chunks_per_second: (report.chunks_written > 0).then(|| report.chunks_per_second()),
            elapsed_seconds: report.elapsed.as_secs_f64(),
        },
        index_bytes: dir_size(&index.index_dir),
        peak_rss_bytes: peak_rss(),
        stages,
        evaluator,
    })
}

/// The stages asked for that this engine can run, with a note for each one it cannot.
fn stages_to_run(
    engine: &Engine,
    options: &EvalOptions,
    progress: &dyn EvalProgress,
) -> Vec<Stage> {
    let wanted = |s: &Stage| options.stages.is_empty() || options.stages.contains(s);
    if !engine.has_term_graph() && options.stages.contains(&Stage::Graph) {
        progress.note(
            "stage hybrid+kg skipped: no knowledge graph ([knowledge_graph] enabled = true in --config)",
        );
    }
    if !engine.has_reranker() && wanted(&Stage::Rerank) {
        progress.note(
            "stage hybrid+rerank skipped: no reranker configured ([reranker] in --config, see docs/rerank.md)",
        );
    }
    Stage::ALL
        .into_iter()
        .filter(wanted)
        .filter(|s| *s != Stage::Rerank || engine.has_reranker())
        .filter(|s| *s != Stage::Graph || engine.has_term_graph())
        .collect()
}

/// Runs every judged query through `stage`, then its throughput run, each with an empty query
/// cache (each pass embeds its queries, as a query arriving once is), and writes its TREC run
/// file when asked: the stage's report and each query's run.
async fn measure_stage(
    engine: &Engine,
    stage: Stage,
    collection: &Collection,
    options: &EvalOptions,
    crag_top_k: TopK,
    prefix: &str,
    progress: &dyn EvalProgress,
) -> Result<(StageReport, Vec<QueryRun>)> {
    progress.stage(stage.name());
    let mut latencies = Vec::with_capacity(collection.queries.len());
    let mut runs = Vec::with_capacity(collection.queries.len());
    engine.clear_query_cache();
    for (_, q) in &collection.queries {
        let t = Instant::now();
        let run = run_stage(engine, stage, q, crag_top_k, prefix).await?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        runs.push(run);
        progress.advance();
    }
    let queries = &collection.queries;
    let qps = if options.clients > 0 {
        engine.clear_query_cache();
        Some(throughput(engine, stage, queries, options.clients, crag_top_k, prefix).await?)
    } else {
        None
    };
    let report = stage_report(stage, collection, &runs, &latencies, options.clients, qps);
    if let Some(dir) = &options.runs {
        write_run(dir, stage, collection, &runs)?;
    }
    if stage == Stage::Graph {
        let expanded: Vec<usize> = runs.iter().filter_map(|r| r.expanded).collect();
        let terms: usize = expanded.iter().sum();
        progress.note(&format!(
            "hybrid+kg: {} of {} queries expanded, {:.1} terms each",
            expanded.iter().filter(|n| **n > 0).count(),
            runs.len(),
            terms as f64 / expanded.iter().filter(|n| **n > 0).count().max(1) as f64,
        ));
    }
    Ok((report, runs))
}

/// Writes one stage's rankings as a TREC run (`qid Q0 docid rank score tag`), and for the
/// Corrective RAG stage each query's judgement ([`crate::judgements`]).
fn write_run(dir: &Path, stage: Stage, collection: &Collection, runs: &[QueryRun]) -> Result<()> {
    use std::fmt::Write as _;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut text = String::new();
    for ((qid, _), run) in collection.queries.iter().zip(runs) {
        for (i, (doc, score)) in run.ids.iter().zip(&run.scores).enumerate() {
            let (rank, tag) = (i + 1, stage.name());
            let _ = writeln!(text, "{qid} Q0 {doc} {rank} {score:.6} crag-{tag}");
        }
    }
    let path = dir.join(format!("{}.run", stage.name()));
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    if stage == Stage::Crag {
        crate::judgements::write(dir, &collection.queries, runs.iter().map(|r| &r.outcome))?;
    }
    Ok(())
}

/// Runs one query through one stage; returns the ranked corpus ids (first occurrence of each
/// document) and, for the CRAG stage, the outcome.
async fn run_stage(
    engine: &Engine,
    stage: Stage,
    q: &Query,
    crag_top_k: TopK,
    prefix: &str,
) -> Result<QueryRun> {
    let depth = TopK::new(DEPTH)?;
    let doc = |id: &str| id.strip_prefix(prefix).unwrap_or(id).to_owned();
    let mut expanded = None;
    let (ranked, outcome): (Vec<(String, f64)>, _) = match stage {
        Stage::Bm25 | Stage::Vector => {
            let hits = if stage == Stage::Bm25 {
                engine.retrieve_keyword(q, depth).await?
            } else {
                engine.retrieve_vector(q, depth).await?
            };
            let ranked = hits
                .iter()
                .map(|h| (doc(h.chunk.document_id.as_str()), f64::from(h.score)))
                .collect();
            (ranked, None)
        }
        Stage::Hybrid | Stage::Graph => {
            let hits = if stage == Stage::Hybrid {
                engine.retrieve(q, depth).await?.hits
            } else {
                let (r, expansion) = engine
                    .retrieve_graph(q, depth, &ChunkFilter::default(), None)
                    .await?;
                expanded = Some(expansion.terms.len());
                r.hits
            };
            let ranked = hits
                .iter()
                .map(|h| (doc(h.chunk.document_id.as_str()), f64::from(h.fused_score)))
                .collect();
            (ranked, None)
        }
        Stage::Rerank | Stage::Crag => {
            let request = if stage == Stage::Rerank {
                QueryRequest {
                    use_crag: false,
                    use_web_search: false,
                    ..QueryRequest::new(q.clone(), depth)
                }
            } else {
                judged_request(q, crag_top_k)
            };
            let o = engine.query(&request).await?;
            // These stages' order is not one score's (filtering, refinement): 1 / rank.
            let ranked = o
                .artifacts
                .iter()
                .enumerate()
                .map(|(i, a)| (doc(a.chunk.document_id.as_str()), 1.0 / (i + 1) as f64))
                .collect();
            (ranked, (stage == Stage::Crag).then_some(o))
        }
    };
    let mut seen = HashSet::new();
    let (ids, scores) = ranked
        .into_iter()
        .filter(|(d, _)| seen.insert(d.clone()))
        .unzip();
    Ok(QueryRun {
        ids,
        scores,
        outcome,
        expanded,
    })
}

/// Queries per second with `clients` concurrent callers over the whole query list.
async fn throughput(
    engine: &Engine,
    stage: Stage,
    queries: &[(String, Query)],
    clients: usize,
    crag_top_k: TopK,
    prefix: &str,
) -> Result<f64> {
    let queries: Arc<Vec<Query>> = Arc::new(queries.iter().map(|(_, q)| q.clone()).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (engine, queries, next, prefix) = (
            engine.clone(),
            Arc::clone(&queries),
            Arc::clone(&next),
            prefix.to_owned(),
        );
        tasks.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(q) = queries.get(i) else {
                    return Ok::<(), EvalError>(());
                };
                run_stage(&engine, stage, q, crag_top_k, &prefix).await?;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.context("throughput task failed")??;
    }
    Ok(queries.len() as f64 / started.elapsed().as_secs_f64())
}

fn stage_report(
    stage: Stage,
    c: &Collection,
    runs: &[QueryRun],
    latencies: &[f64],
    clients: usize,
    qps: Option<f64>,
) -> StageReport {
    let n = runs.len().max(1) as f64;
    let mut sums = [0.0; 4];
    for ((id, _), run) in c.queries.iter().zip(runs) {
        let j = &c.qrels[id];
        let r = as_refs(&run.ids);
        sums[0] += ndcg_at_k(&r, j, 10);
        sums[1] += recall_at_k(&r, j, 10);
        sums[2] += recall_at_k(&r, j, 100);
        sums[3] += mrr_at_k(&r, j, 10);
    }
    let p = |x| percentile(latencies, x).unwrap_or(0.0);
    StageReport {
        stage: stage.name(),
        ndcg_at_10: sums[0] / n,
        recall_at_10: sums[1] / n,
        recall_at_100: sums[2] / n,
        mrr_at_10: sums[3] / n,
        latency_ms: Latency {
            p50: p(0.50),
            p95: p(0.95),
            p99: p(0.99),
        },
        clients,
        queries_per_second: qps,
    }
}

fn evaluator_report(
    c: &Collection,
    per_query: &HashMap<Stage, Vec<QueryRun>>,
    config: &Config,
    args: &CollectionSpec,
    index: &PreparedIndex,
    [baseline, self_calibrated]: [Option<&[f64]>; 2],
) -> EvaluatorReport {
    let empty = Vec::new();
    let crag = per_query.get(&Stage::Crag).unwrap_or(&empty);
    let hybrid = per_query.get(&Stage::Hybrid).unwrap_or(&empty);
    let (mut scores, mut labels) = (Vec::new(), Vec::new());
    let (mut baseline_scores, mut self_scores) = (Vec::new(), Vec::new());
    let mut verdicts: BTreeMap<String, [usize; 2]> = BTreeMap::new();
    let (mut raised, mut lowered, mut unchanged) = (0, 0, 0);
    let mut outcomes = Vec::new();
    for (i, (id, _)) in c.queries.iter().enumerate() {
        let j = &c.qrels[id];
        let (Some(crag_run), Some(hybrid_run)) = (crag.get(i), hybrid.get(i)) else {
            continue;
        };
        let Some(o) = &crag_run.outcome else {
            continue;
        };
        let (crag_ranked, hybrid_ranked) = (&crag_run.ids, &hybrid_run.ids);
        // Answerable: hybrid's top 10 holds a relevant document. The evaluator judges that
        // top 10 as the feedback rerank reorders it (candidates from ranks 11-30 can enter);
        // the labels stay hybrid's so that figures compare across configurations.
        let answerable = hybrid_ranked
            .iter()
            .take(10)
            .any(|d| j.get(d).is_some_and(|g| *g > 0));
        verdicts.entry(o.decision().to_owned()).or_default()[usize::from(!answerable)] += 1;
        if let Some(e) = &o.evaluation {
            scores.push(f64::from(e.score));
            labels.push(answerable);
            if let Some(b) = baseline.and_then(|b| b.get(i)) {
                baseline_scores.push(*b);
            }
            if let Some(s) = self_calibrated.and_then(|s| s.get(i)) {
                self_scores.push(*s);
            }
        }
        let after = ndcg_at_k(&as_refs(crag_ranked), j, 10);
        let against_hybrid = after.partial_cmp(&ndcg_at_k(&as_refs(hybrid_ranked), j, 10));
        if o.correction_strategy() != "none" {
            match against_hybrid {
                Some(std::cmp::Ordering::Greater) => raised += 1,
                Some(std::cmp::Ordering::Less) => lowered += 1,
                _ => unchanged += 1,
            }
        }
        outcomes.push((o, against_hybrid));
    }
    let cache = index.engine.metrics().evaluation_cache_counts();
    let seed_metrics = (!crag.is_empty()).then(|| crate::seed::seed_metrics(outcomes, cache));
    let answerable = labels.iter().filter(|l| **l).count();
    EvaluatorReport {
        evaluator: format!("{:?}", config.adapters.evaluator.kind).to_lowercase(),
        ablate: args.ablate,
        seed: args.seed,
        ablated_queries: index.ablated_queries.len(),
        ablated_documents: index.ablated_ids.len(),
        answerable,
        unanswerable: labels.len() - answerable,
        auroc: auroc(&scores, &labels),
        heuristic_auroc: baseline
            .filter(|_| baseline_scores.len() == labels.len())
            .and_then(|_| auroc(&baseline_scores, &labels)),
        self_calibrated_auroc: self_calibrated
            .filter(|_| self_scores.len() == labels.len())
            .and_then(|_| auroc(&self_scores, &labels)),
        verdicts,
        corrections_raised_ndcg: raised,
        corrections_lowered_ndcg: lowered,
        corrections_unchanged_ndcg: unchanged,
        seed_metrics,
    }
}

fn as_refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}
