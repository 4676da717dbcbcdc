//! `crag calibrate`: fits the calibrated relevance evaluator on a judged split of a BEIR
//! collection and writes the calibration file the engine loads (`[evaluator] kind =
//! "calibrated"`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use crag_core::TopK;
use crag_engine::readers::read_beir_corpus;
use crag_engine::QueryRequest;
use crag_judge::{
    calibrate, extract_features, CalibrationOptions, FitOptions, HeuristicConfig,
    HeuristicEvaluator, LabelledQuery, DOCUMENT_FEATURES, QUERY_FEATURES,
};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crag_eval::{judged_request, prepare_index, Collection, PreparedIndex};

use crate::collection::CollectionArgs;
use crate::commands::{Bar, Context};

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    collection: CollectionArgs,
    /// Qrels split to fit on (qrels/<split>.tsv); never the split you report on.
    #[arg(long, default_value = "train")]
    split: String,
    /// Results retrieved per query, as judged by the evaluator (as `crag eval --crag-top-k`).
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Precision the verdict thresholds aim at: of the training queries judged correct, this
    /// share holds a relevant document; of those judged incorrect, this share holds none.
    #[arg(long, default_value_t = 0.9)]
    target_precision: f64,
    /// Share of the relevant training documents the suggested document threshold
    /// (`crag.ambiguous_filter_threshold`) keeps.
    #[arg(long, default_value_t = 0.9)]
    document_recall: f64,
    /// L2 penalty of the logistic fits (on standardised features).
    #[arg(long, default_value_t = FitOptions::default().l2)]
    l2: f64,
    /// Rerank the candidates when a reranker is configured, so that the rerank features are
    /// fitted (off by default, like the Corrective RAG stage of `crag eval`).
    #[arg(long)]
    rerank: bool,
    /// Also write the labelled samples (query, documents with their retrieval signals,
    /// relevance, and the features computed from them) as JSON lines, for offline analysis.
    /// They contain the collection's text.
    #[arg(long)]
    samples_out: Option<PathBuf>,
    /// Fit without labels: on pseudo-queries made from the corpus (a document's title or
    /// first sentence, answerable as retrieved, unanswerable with that document left out);
    /// the split's judgements are not used.
    #[arg(long = "self")]
    self_calibrate: bool,
    /// Documents drawn for `--self` (two samples each).
    #[arg(long, default_value_t = 400)]
    self_queries: usize,
    /// Where to write the calibration (TOML).
    #[arg(long)]
    out: PathBuf,
}

/// One line of `--samples-out`: the sample and the features computed from it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SampleRecord<'a> {
    #[serde(flatten)]
    sample: &'a LabelledQuery,
    query_features: BTreeMap<&'static str, Option<f64>>,
    document_features: Vec<BTreeMap<&'static str, Option<f64>>>,
}

pub async fn calibrate_command(ctx: &Context, args: CalibrateArgs) -> Result<()> {
    let top_k = TopK::new(args.top_k)?;
    let spec = args.collection.spec();
    let collection = Collection::read(&spec, &args.split)?;
    let index = prepare_index(&ctx.config, &spec, &collection, &Bar::new(false)).await?;
    if args.rerank && !index.engine.has_reranker() {
        eprintln!(
            "--rerank: no reranker configured ([reranker] in --config); the rerank features stay unfitted"
        );
    }

    let samples = if args.self_calibrate {
        let corpus = args.collection.dataset.join("corpus.jsonl");
        let loaded = tokio::task::spawn_blocking(move || read_beir_corpus(&corpus))
            .await
            .context("reading task failed")??;
        eprintln!(
            "self-calibration: {} pseudo-queries drawn from {} documents (seed {})",
            args.self_queries.min(loaded.documents.len()),
            loaded.documents.len(),
            args.collection.seed
        );
        index
            .engine
            .self_calibration_samples(
                &loaded.documents,
                args.self_queries,
                args.collection.seed,
                top_k,
            )
            .await?
    } else {
        judged_samples(&index, &collection, &args, top_k).await?
    };

    write_outputs(ctx, &index, &collection, &args, &samples)
}

async fn judged_samples(
    index: &PreparedIndex,
    collection: &Collection,
    args: &CalibrateArgs,
    top_k: TopK,
) -> Result<Vec<LabelledQuery>> {
    let progress = ProgressBar::new(collection.queries.len() as u64);
    progress.set_style(
        ProgressStyle::with_template("{spinner} {wide_bar} {pos}/{len} queries ({eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut samples = Vec::with_capacity(collection.queries.len());
    for (id, q) in &collection.queries {
        let request = QueryRequest {
            use_rerank: args.rerank,
            ..judged_request(q, top_k)
        };
        let input = index.engine.evaluation_input(&request).await?;
        let relevant = input
            .artifacts
            .iter()
            .map(|a| collection.is_relevant(id, index.corpus_id(a.chunk.document_id.as_str())))
            .collect();
        samples.push(LabelledQuery {
            id: id.clone(),
            query: q.as_str().to_owned(),
            documents: input.documents,
            relevant,
        });
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(samples)
}

/// Writes the samples (with `--samples-out`) and fits and writes the calibration.
fn write_outputs(
    ctx: &Context,
    index: &PreparedIndex,
    collection: &Collection,
    args: &CalibrateArgs,
    samples: &[LabelledQuery],
) -> Result<()> {
    if let Some(path) = &args.samples_out {
        let heuristic = HeuristicEvaluator::new(HeuristicConfig::default())?;
        let mut text = String::new();
        for s in samples {
            let features = extract_features(&heuristic, &s.query, &s.documents);
            let named = |names: &[&'static str], values: &[Option<f64>]| {
                names
                    .iter()
                    .copied()
                    .zip(values.iter().copied())
                    .collect::<BTreeMap<_, _>>()
            };
            let record = SampleRecord {
                sample: s,
                query_features: named(QUERY_FEATURES, &features.query),
                document_features: features
                    .documents
                    .iter()
                    .map(|row| named(DOCUMENT_FEATURES, row))
                    .collect(),
            };
            text.push_str(&serde_json::to_string(&record)?);
            text.push('\n');
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("samples written to {}", path.display());
    }

    let fitted_on = if args.self_calibrate {
        format!(
            "{} without labels: {} pseudo-queries from its corpus (seed {}), each as retrieved \
             and with its source document left out, top {} as judged",
            index.name,
            samples.len() / 2,
            args.collection.seed,
            args.top_k
        )
    } else {
        format!(
            "{} split `{}`: {} queries of {}, top {} as judged, ablation {} (seed {}: {} queries, \
         {} documents removed){}",
            index.name,
            args.split,
            collection.queries.len(),
            args.collection
                .queries
                .as_ref()
                .map_or_else(|| "queries.jsonl".into(), |p| p.display().to_string()),
            args.top_k,
            args.collection.ablate,
            args.collection.seed,
            index.ablated_queries.len(),
            index.ablated_ids.len(),
            if args.rerank && index.engine.has_reranker() {
                ", reranked"
            } else {
                ""
            },
        )
    };
    let options = CalibrationOptions {
        target_precision: args.target_precision,
        document_recall: args.document_recall,
        fit: FitOptions {
            l2: args.l2,
            ..FitOptions::default()
        },
        fitted_on,
        fusion: ctx.config.retrieval.fusion().name().to_owned(),
    };
    let calibration = calibrate(samples, &options)?;
    crag_config::write_calibration(&args.out, &calibration)?;

    let t = &calibration.thresholds;
    println!("fitted on {}", calibration.fitted_on);
    println!(
        "queries: {} answerable / {} unanswerable; documents: {} relevant of {}",
        calibration.answerable,
        calibration.queries - calibration.answerable,
        calibration.relevant_documents,
        calibration.documents
    );
    println!(
        "in-sample AUROC: calibrated {:.3} (seed heuristic {:.3}); document model {:.3}",
        calibration.train_auroc,
        calibration.heuristic_train_auroc,
        calibration.train_document_auroc
    );
    println!(
        "thresholds for precision {}: correct >= {:.3} (precision {:.3}{}), incorrect <= {:.3} \
         (precision {:.3}{})",
        calibration.target_precision,
        t.correct,
        t.correct_precision,
        if t.correct_target_reached {
            ""
        } else {
            ", target not reached"
        },
        t.incorrect,
        t.incorrect_precision,
        if t.incorrect_target_reached {
            ""
        } else {
            ", target not reached"
        },
    );
    println!(
        "document scores: {:.3} keeps {:.0}% of the relevant training documents; set \
         crag.ambiguous_filter_threshold = {:.3} with this evaluator (the default 0.4 would keep \
         far fewer)",
        calibration.document_threshold,
        calibration.document_recall * 100.0,
        calibration.document_threshold
    );
    println!(
        "calibration written to {}; use it with [evaluator] kind = \"calibrated\", \
         calibration_file = \"{}\"",
        args.out.display(),
        args.out.display()
    );
    Ok(())
}
