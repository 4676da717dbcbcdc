//! The calibrated evaluator: logistic models fitted on labelled queries ([`calibrate`]) over
//! the features of [`crate::features`], with verdict thresholds chosen for a target precision.

use crag_core::{CriterionScore, EvalDocument, Evaluation, Verdict};
use serde::{Deserialize, Serialize};

use crate::auroc::auroc;
use crate::error::{EvaluationError, Result};
use crate::features::{extract, Features, DOCUMENT_FEATURES, QUERY_FEATURES};
use crate::heuristic::{HeuristicConfig, HeuristicEvaluator};
use crate::logistic::{fit_logistic, sigmoid, FitOptions, LogisticModel};

/// Version of the calibration format this code reads and writes.
pub const CALIBRATION_VERSION: u32 = 1;

/// A query with the documents the evaluator was shown and, for each, whether the judgements
/// call it relevant: one training sample of [`calibrate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelledQuery {
    /// Query id in the collection.
    pub id: String,
    /// Query text.
    pub query: String,
    /// The documents as the evaluator sees them, best first.
    pub documents: Vec<EvalDocument>,
    /// Per document: relevant according to the judgements.
    pub relevant: Vec<bool>,
}

impl LabelledQuery {
    /// Whether the list holds a relevant document: the label the verdict is fitted to.
    pub fn answerable(&self) -> bool {
        self.relevant.iter().any(|&r| r)
    }
}

/// Verdict thresholds on the calibrated score: `Correct` at or above `correct`, `Incorrect` at
/// or below `incorrect` (and below `correct`), `Ambiguous` in between.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Lowest score judged correct.
    pub correct: f64,
    /// Highest score judged incorrect; never above `correct`.
    pub incorrect: f64,
    /// Share of answerable queries among the training queries scored at or above `correct`.
    pub correct_precision: f64,
    /// Share of unanswerable queries among the training queries scored at or below
    /// `incorrect`.
    pub incorrect_precision: f64,
    /// Whether `correct_precision` reaches the target (otherwise the best reachable was taken).
    pub correct_target_reached: bool,
    /// Whether `incorrect_precision` reaches the target.
    pub incorrect_target_reached: bool,
}

impl Thresholds {
    /// The verdict of `score`.
    pub fn verdict(&self, score: f64) -> Verdict {
        if score >= self.correct {
            Verdict::Correct
        } else if score <= self.incorrect {
            Verdict::Incorrect
        } else {
            Verdict::Ambiguous
        }
    }
}

/// Chooses the verdict thresholds on training `scores` (higher: more likely answerable) and
/// their `labels` (`true`: answerable) for `target` precision:
///
/// - `correct`: the lowest score `t` such that at least `target` of the queries scored `>= t`
///   are answerable (the most queries judged correct at that precision);
/// - `incorrect`: the highest score `t` such that at least `target` of the queries scored
///   `<= t` are unanswerable.
///
/// Cuts fall between distinct scores only. When the target cannot be reached, the cut with the
/// best precision is taken (among equals the most cautious one: the highest for `correct`, the
/// lowest for `incorrect`) and the `*_target_reached` flag says so. `incorrect` is finally capped at `correct`. Without
/// scores, or with NaN among them, every query is ambiguous: `correct = 1`, `incorrect = 0`.
pub fn choose_thresholds(scores: &[f64], labels: &[bool], target: f64) -> Thresholds {
    let n = scores.len().min(labels.len());
    let mut pairs: Vec<(f64, bool)> = scores[..n]
        .iter()
        .copied()
        .zip(labels[..n].iter().copied())
        .collect();
    if pairs.is_empty() || pairs.iter().any(|(s, _)| s.is_nan()) {
        return Thresholds {
            correct: 1.0,
            incorrect: 0.0,
            correct_precision: 0.0,
            incorrect_precision: 0.0,
            correct_target_reached: false,
            incorrect_target_reached: false,
        };
    }
    // Highest score first: every prefix ending at a distinct score is a candidate "correct" set.
    pairs.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let (correct, correct_precision, correct_reached) = best_cut(&pairs, true, target);
    pairs.reverse();
    let (incorrect, incorrect_precision, incorrect_reached) = best_cut(&pairs, false, target);
    Thresholds {
        correct,
        incorrect: incorrect.min(correct),
        correct_precision,
        incorrect_precision,
        correct_target_reached: correct_reached,
        incorrect_target_reached: incorrect_reached,
    }
}

/// Over the prefixes of `pairs` that end at a change of score, returns the score at the end of
/// the longest prefix whose share of `wanted` labels reaches `target`, else of the prefix with
/// the best share (the shortest among equals); with that share and whether it reached `target`.
fn best_cut(pairs: &[(f64, bool)], wanted: bool, target: f64) -> (f64, f64, bool) {
    let mut hits = 0usize;
    let mut reached: Option<(f64, f64)> = None;
    let mut best: Option<(f64, f64)> = None;
    for (i, &(score, label)) in pairs.iter().enumerate() {
        hits += usize::from(label == wanted);
        if pairs.get(i + 1).is_some_and(|next| next.0 == score) {
            continue;
        }
        let precision = hits as f64 / (i + 1) as f64;
        if precision >= target {
            reached = Some((score, precision));
        }
        if best.is_none_or(|(_, p)| precision > p) {
            best = Some((score, precision));
        }
    }
    match (reached, best) {
        (Some((score, precision)), _) => (score, precision, true),
        (None, Some((score, precision))) => (score, precision, false),
        (None, None) => (pairs[0].0, 0.0, false),
    }
}

/// Options of [`calibrate`].
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationOptions {
    /// Precision the verdict thresholds aim at (see [`choose_thresholds`]).
    pub target_precision: f64,
    /// Share of the relevant training documents the suggested document threshold keeps.
    pub document_recall: f64,
    /// The logistic fits' options (L2 strength, iterations).
    pub fit: FitOptions,
    /// What the samples are, for the record (collection, split, ablation, seed).
    pub fitted_on: String,
    /// The fusion of the retrieval legs the samples were retrieved with (`rrf`, `convex`): the
    /// fused-score features mean different things under each.
    pub fusion: String,
}

impl Default for CalibrationOptions {
    fn default() -> Self {
        Self {
            target_precision: 0.9,
            document_recall: 0.9,
            fit: FitOptions::default(),
            fitted_on: String::new(),
            fusion: DEFAULT_FUSION.to_owned(),
        }
    }
}

/// The leg fusion of calibrations that do not name one.
pub const DEFAULT_FUSION: &str = "rrf";

fn default_fusion() -> String {
    DEFAULT_FUSION.to_owned()
}

/// A fitted evaluator as written to and read from a calibration file (TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Format version ([`CALIBRATION_VERSION`]).
    pub version: u32,
    /// What the models were fitted on.
    pub fitted_on: String,
    /// The leg fusion (`retrieval.fusion`) the training results were retrieved with; its
    /// fused-score features are only meaningful under the same fusion. Files written before
    /// this field existed were fitted under `rrf`.
    #[serde(default = "default_fusion")]
    pub fusion: String,
    /// Training queries.
    pub queries: usize,
    /// Of which answerable.
    pub answerable: usize,
    /// Training documents (for the document model).
    pub documents: usize,
    /// Of which relevant.
    pub relevant_documents: usize,
    /// The target precision the thresholds were chosen for.
    pub target_precision: f64,
    /// L2 strength of the fits.
    pub l2: f64,
    /// AUROC of the query model on its own training queries (in-sample, optimistic).
    pub train_auroc: f64,
    /// AUROC of the document model on its training documents (in-sample).
    pub train_document_auroc: f64,
    /// AUROC of the seed heuristic's score on the same training queries, for comparison.
    pub heuristic_train_auroc: f64,
    /// The verdict thresholds on the query model's probability.
    pub thresholds: Thresholds,
    /// The highest document score that keeps `document_recall` of the relevant training
    /// documents: the value to give `crag.ambiguous_filter_threshold` with this evaluator
    /// (document scores are probabilities of relevance, mostly far below the default 0.4).
    pub document_threshold: f64,
    /// The share of relevant training documents scored at or above `document_threshold`.
    pub document_recall: f64,
    /// P(the list holds a relevant document) from the query features.
    pub query_model: LogisticModel,
    /// P(this document is relevant) from the document features.
    pub document_model: LogisticModel,
}

impl Calibration {
    /// Checks the version, the feature names (they must be exactly what this code computes),
    /// that every number is finite and that `0 <= incorrect <= correct <= 1`.
    pub fn validate(&self) -> Result<()> {
        if self.version != CALIBRATION_VERSION {
            return Err(EvaluationError::InvalidCalibration(format!(
                "version {} is not supported (this build reads version {CALIBRATION_VERSION})",
                self.version
            )));
        }
        self.query_model.check("query_model", QUERY_FEATURES)?;
        self.document_model
            .check("document_model", DOCUMENT_FEATURES)?;
        if !(0.0..=1.0).contains(&self.document_threshold) {
            return Err(EvaluationError::InvalidCalibration(format!(
                "document_threshold must lie in [0, 1], got {}",
                self.document_threshold
            )));
        }
        let t = &self.thresholds;
        if !(t.correct.is_finite()
            && t.incorrect.is_finite()
            && 0.0 <= t.incorrect
            && t.incorrect <= t.correct
            && t.correct <= 1.0)
        {
            return Err(EvaluationError::InvalidCalibration(format!(
                "thresholds must satisfy 0 <= incorrect <= correct <= 1, got incorrect {} and \
                 correct {}",
                t.incorrect, t.correct
            )));
        }
        Ok(())
    }
}

/// Fits the calibrated evaluator on `samples`: a logistic model of "the list holds a relevant
/// document" over [`QUERY_FEATURES`], one of "this document is relevant" over
/// [`DOCUMENT_FEATURES`], and the verdict thresholds for the target precision.
///
/// Fails when the samples hold only answerable or only unanswerable queries (or only relevant
/// or only irrelevant documents), when a sample's `relevant` does not match its documents, or
/// when the target precision is not in (0, 1].
pub fn calibrate(samples: &[LabelledQuery], options: &CalibrationOptions) -> Result<Calibration> {
    if !(options.target_precision > 0.0 && options.target_precision <= 1.0) {
        return Err(EvaluationError::Fit(format!(
            "target precision must lie in (0, 1], got {}",
            options.target_precision
        )));
    }
    if !(options.document_recall > 0.0 && options.document_recall <= 1.0) {
        return Err(EvaluationError::Fit(format!(
            "document recall must lie in (0, 1], got {}",
            options.document_recall
        )));
    }
    if let Some(s) = samples
        .iter()
        .find(|s| s.relevant.len() != s.documents.len())
    {
        return Err(EvaluationError::Fit(format!(
            "query {}: {} relevance labels for {} documents",
            s.id,
            s.relevant.len(),
            s.documents.len()
        )));
    }
    let heuristic = HeuristicEvaluator::new(HeuristicConfig::default())?;
    let features: Vec<Features> = samples
        .iter()
        .map(|s| extract(&heuristic, &s.query, &s.documents))
        .collect();
    let labels: Vec<bool> = samples.iter().map(LabelledQuery::answerable).collect();
    let query_rows: Vec<Vec<Option<f64>>> = features.iter().map(|f| f.query.clone()).collect();
    let query_model = fit_logistic(QUERY_FEATURES, &query_rows, &labels, &options.fit)?;

    let document_rows: Vec<Vec<Option<f64>>> = features
        .iter()
        .flat_map(|f| f.documents.iter().cloned())
        .collect();
    let document_labels: Vec<bool> = samples
        .iter()
        .flat_map(|s| s.relevant.iter().copied())
        .collect();
    let document_model = fit_logistic(
        DOCUMENT_FEATURES,
        &document_rows,
        &document_labels,
        &options.fit,
    )?;

    let scores: Vec<f64> = query_rows
        .iter()
        .map(|r| query_model.probability(r))
        .collect();
    let document_scores: Vec<f64> = document_rows
        .iter()
        .map(|r| document_model.probability(r))
        .collect();
    let heuristic_scores: Vec<f64> = features
        .iter()
        .map(|f| f64::from(f.assessment.score))
        .collect();
    let thresholds = choose_thresholds(&scores, &labels, options.target_precision);
    let document_threshold =
        recall_threshold(&document_scores, &document_labels, options.document_recall);
    Ok(Calibration {
        version: CALIBRATION_VERSION,
        fitted_on: options.fitted_on.clone(),
        fusion: options.fusion.clone(),
        queries: samples.len(),
        answerable: labels.iter().filter(|&&l| l).count(),
        documents: document_labels.len(),
        relevant_documents: document_labels.iter().filter(|&&l| l).count(),
        target_precision: options.target_precision,
        l2: options.fit.l2,
        train_auroc: auroc(&scores, &labels).unwrap_or(f64::NAN),
        train_document_auroc: auroc(&document_scores, &document_labels).unwrap_or(f64::NAN),
        heuristic_train_auroc: auroc(&heuristic_scores, &labels).unwrap_or(f64::NAN),
        thresholds,
        document_threshold,
        document_recall: options.document_recall,
        query_model,
        document_model,
    })
}

/// Returns the highest score `t` such that at least `recall` of the positives score `>= t`
/// (0 when there are no positives).
pub fn recall_threshold(scores: &[f64], labels: &[bool], recall: f64) -> f64 {
    let mut positives: Vec<f64> = scores
        .iter()
        .zip(labels)
        .filter(|(s, &l)| l && !s.is_nan())
        .map(|(&s, _)| s)
        .collect();
    if positives.is_empty() {
        return 0.0;
    }
    positives.sort_unstable_by(|a, b| b.total_cmp(a));
    let needed = (recall.clamp(0.0, 1.0) * positives.len() as f64 - 1e-9).ceil() as usize;
    positives[needed.clamp(1, positives.len()) - 1]
}

/// Judges a result list with the fitted models of a [`Calibration`].
///
/// The score is the query model's probability that the list holds a relevant document; the
/// verdict follows the calibration's thresholds; each document's score is the document model's
/// probability that it is relevant. The criteria are the query features, each with
/// `score = sigmoid(contribution)` (0.5: no influence; above: towards correct) and
/// `weight = |fitted weight|` of the standardised feature. Absent features (no retrieval
/// signals, no reranker) contribute nothing and are listed in `issues`.
#[derive(Debug, Clone)]
pub struct CalibratedEvaluator {
    calibration: Calibration,
    heuristic: HeuristicEvaluator,
}

impl CalibratedEvaluator {
    /// Builds the evaluator; fails when the calibration does not validate.
    pub fn new(calibration: Calibration) -> Result<Self> {
        calibration.validate()?;
        Ok(Self {
            calibration,
            heuristic: HeuristicEvaluator::new(HeuristicConfig::default())?,
        })
    }

    /// Returns the calibration.
    pub fn calibration(&self) -> &Calibration {
        &self.calibration
    }

    /// Judges `documents` (best first) for `query`. An empty list is `Incorrect` with score 0.
    pub fn evaluate(&self, query: &str, documents: &[EvalDocument]) -> Evaluation {
        if documents.is_empty() {
            return Evaluation::nothing_retrieved();
        }
        let features = extract(&self.heuristic, query, documents);
        let model = &self.calibration.query_model;
        let probability = model.probability(&features.query);
        let verdict = self.calibration.thresholds.verdict(probability);
        let contributions = model.contributions(&features.query);

        let mut issues = features.assessment.issues.clone();
        let absent: Vec<&str> = QUERY_FEATURES
            .iter()
            .zip(&features.query)
            .filter(|(name, v)| v.is_none() && **name != "rerank_max")
            .map(|(name, _)| *name)
            .collect();
        if !absent.is_empty() {
            issues.push(format!(
                "features without input, left at their training mean: {}",
                absent.join(", ")
            ));
        }
        let criteria: Vec<CriterionScore> = model
            .features
            .iter()
            .zip(&contributions)
            .map(|(f, &c)| CriterionScore {
                name: f.name.clone(),
                score: sigmoid(c) as f32,
                weight: f.weight.abs() as f32,
            })
            .collect();
        let document_scores = features
            .documents
            .iter()
            .map(|row| Some(self.calibration.document_model.probability(row) as f32))
            .collect();
        Evaluation {
            verdict,
            score: probability as f32,
            document_scores,
            document_reasons: Vec::new(),
            reasoning: reasoning(
                verdict,
                probability,
                &self.calibration,
                &criteria,
                &contributions,
            ),
            criteria,
            issues,
        }
    }
}

fn reasoning(
    verdict: Verdict,
    probability: f64,
    calibration: &Calibration,
    criteria: &[CriterionScore],
    contributions: &[f64],
) -> String {
    let t = &calibration.thresholds;
    let mut head = format!(
        "Verdict {verdict} with calibrated score {probability:.2} (correct >= {:.2}, incorrect \
         <= {:.2}).",
        t.correct, t.incorrect
    );
    let by = |pick: fn(f64) -> bool, best: fn(f64, f64) -> bool| {
        criteria
            .iter()
            .zip(contributions)
            .filter(|(_, c)| pick(**c))
            .fold(None::<(&str, f64)>, |acc, (cr, &c)| match acc {
                Some((_, a)) if !best(c, a) => acc,
                _ => Some((cr.name.as_str(), c)),
            })
    };
    if let Some((name, c)) = by(|c| c > 0.0, |c, a| c > a) {
        head.push_str(&format!(" Most for: {name} ({c:+.2})."));
    }
    if let Some((name, c)) = by(|c| c < 0.0, |c, a| c < a) {
        head.push_str(&format!(" Most against: {name} ({c:+.2})."));
    }
    head
}

#[cfg(test)]
mod tests;
