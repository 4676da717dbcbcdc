//! Evaluators scored beside the configured one, on the same documents and labels, for the
//! evaluator report: the seed heuristic (when another evaluator is configured), and the
//! calibrated evaluator fitted without labels on N pseudo-queries of the indexed corpus (a
//! document's title or first sentence, retrieved as it is and with its document left out;
//! [`Engine::self_calibration_samples`]; `crag eval --self-calibrate N`).

use crate::error::{Context as _, Result};
use crag_app::Config;
use crag_core::{EvalDocument, Evaluation, Query, TopK};
use crag_engine::readers::read_beir_corpus;
use crag_engine::Engine;
use crag_judge::{
    calibrate, CalibratedEvaluator, CalibrationOptions, HeuristicConfig, HeuristicEvaluator,
};

use crate::collection::{CollectionSpec, PreparedIndex};
use crate::stage::judged_request;

/// The seed heuristic's score of the documents the Corrective RAG stage judges, per query:
/// the baseline printed beside another evaluator's AUROC.
pub(crate) async fn heuristic_scores(
    engine: &Engine,
    queries: &[(String, Query)],
    top_k: TopK,
) -> Result<Vec<f64>> {
    let heuristic = HeuristicEvaluator::new(HeuristicConfig::default())?;
    judged_scores(engine, queries, top_k, |q, docs| {
        heuristic.evaluate(q, docs)
    })
    .await
}

/// `evaluate`'s score of each query's judged documents (what the Corrective RAG stage's
/// evaluator is shown), in `queries`' order.
async fn judged_scores(
    engine: &Engine,
    queries: &[(String, Query)],
    top_k: TopK,
    evaluate: impl Fn(&str, &[EvalDocument]) -> Evaluation,
) -> Result<Vec<f64>> {
    let mut scores = Vec::with_capacity(queries.len());
    for (_, q) in queries {
        let input = engine.evaluation_input(&judged_request(q, top_k)).await?;
        scores.push(f64::from(evaluate(q.as_str(), &input.documents).score));
    }
    Ok(scores)
}

/// What [`self_calibrated_scores`] fits on: pseudo-queries drawn, and the seed of the draw.
pub(crate) struct SelfCalibration {
    /// Pseudo-queries asked for (each gives two samples).
    pub(crate) queries: usize,
    /// Seed of the draw (the collection's `--seed`).
    pub(crate) seed: u64,
}

/// Fits the calibrated evaluator on pseudo-queries of the documents in the index (those an
/// ablation removed are left out) and returns its score of each real query's judged
/// documents, in `queries`' order.
pub(crate) async fn self_calibrated_scores(
    config: &Config,
    spec: &CollectionSpec,
    index: &PreparedIndex,
    queries: &[(String, Query)],
    top_k: TopK,
    fit: &SelfCalibration,
) -> Result<Vec<f64>> {
    let engine: &Engine = &index.engine;
    let corpus = spec.dataset.join("corpus.jsonl");
    let mut loaded = tokio::task::spawn_blocking(move || read_beir_corpus(&corpus))
        .await
        .context("reading task failed")??;
    loaded
        .documents
        .retain(|d| !index.ablated_ids.contains(index.corpus_id(d.id.as_str())));
    let judged = TopK::new(config.crag.judge_depth)?;
    let samples = engine
        .self_calibration_samples(&loaded.documents, fit.queries, fit.seed, judged)
        .await?;
    let options = CalibrationOptions {
        fitted_on: format!(
            "{} without labels: {} pseudo-queries (seed {})",
            index.name, fit.queries, fit.seed
        ),
        fusion: config.retrieval.fusion().name().to_owned(),
        ..CalibrationOptions::default()
    };
    let evaluator = CalibratedEvaluator::new(calibrate(&samples, &options)?)?;
    judged_scores(engine, queries, top_k, |q, docs| {
        evaluator.evaluate(q, docs)
    })
    .await
}
