//! The evaluator as a service: judge documents a caller brings (retrieved elsewhere) against a
//! query with the configured evaluator, the same judgement `Engine::query` makes of its own
//! results, without retrieving or correcting anything.

use std::time::{Duration, Instant};

use crag_core::{EvalDocument, Evaluation, Query};

use super::guard::{FailMode, Guarded};
use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// Most documents one evaluation judges.
pub const MAX_EVALUATED_DOCUMENTS: usize = 100;

/// A document to judge: its text, and optionally an id and a source (the heuristic evaluator's
/// source diversity reads the sources; documents without one count as one source each).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedDocument {
    /// The caller's id, echoed back (default: the document's position, from 0).
    pub id: String,
    /// Where it came from.
    pub source: String,
    /// What is judged.
    pub text: String,
}

/// A judgement of caller-given documents.
#[derive(Debug, Clone)]
pub struct EvaluationReport {
    /// The evaluator that judged (`heuristic`, `calibrated`, `llm`, `http`).
    pub evaluator: String,
    /// The judged documents' ids, in the order given.
    pub ids: Vec<String>,
    /// Its verdict, score, criteria, per-document scores and reasoning.
    pub evaluation: Evaluation,
    /// The documents' cosine similarity to the query (what the evaluator was shown).
    pub similarities: Vec<f32>,
    /// Wall time: embedding and judging.
    pub elapsed: Duration,
}

impl Engine {
    /// Judges `documents` against `query` with the configured evaluator. Similarity is the
    /// cosine of the query's and each document's embedding (the embedder the index uses); no
    /// retrieval signals are given, so criteria that read them (leg agreement) are left out.
    /// An evaluator failure or timeout is an error here whatever `crag.evaluator_fail_mode`
    /// says: a caller asking for a judgement has no results to fall back on.
    pub async fn evaluate(
        &self,
        query: &Query,
        documents: &[JudgedDocument],
    ) -> Result<EvaluationReport> {
        if documents.is_empty() {
            return Err(EngineError::InvalidInput(
                "at least one document to judge is required".into(),
            ));
        }
        if documents.len() > MAX_EVALUATED_DOCUMENTS {
            return Err(EngineError::InvalidInput(format!(
                "at most {MAX_EVALUATED_DOCUMENTS} documents are judged at once, got {}",
                documents.len()
            )));
        }
        let started = Instant::now();
        let similarities = self.similarities(query, documents).await?;
        let judged: Vec<EvalDocument> = documents
            .iter()
            .zip(&similarities)
            .map(|(d, s)| EvalDocument::new(&d.id, &d.source, &d.text, *s))
            .collect();
        let runtime = self.crag_runtime();
        let name = runtime.components.evaluator.name();
        let outcome = runtime.judge(query, &judged, FailMode::Closed).await;
        let evaluation = match outcome? {
            Guarded::Done(evaluation) => evaluation,
            // Fail-closed: a failure came back as the error above.
            Guarded::FailedOpen(e) => return Err(e.into()),
        };
        Ok(EvaluationReport {
            evaluator: name.to_owned(),
            ids: documents.iter().map(|d| d.id.clone()).collect(),
            evaluation,
            similarities,
            elapsed: started.elapsed(),
        })
    }

    /// Each document's cosine similarity to the query, clamped to [0, 1] as the vector leg's
    /// similarity is.
    async fn similarities(&self, query: &Query, documents: &[JudgedDocument]) -> Result<Vec<f32>> {
        // One batch: the query first, then the documents.
        let texts: Vec<String> = std::iter::once(query.as_str().to_owned())
            .chain(documents.iter().map(|d| d.text.clone()))
            .collect();
        let vectors = self.embedder().embed(&texts).await?;
        let Some((query_vector, vectors)) = vectors.split_first() else {
            return Err(EngineError::Internal(
                "the embedder returned no vectors".into(),
            ));
        };
        if vectors.len() != documents.len() {
            return Err(EngineError::Internal(format!(
                "the embedder returned {} vectors for {} documents",
                vectors.len(),
                documents.len()
            )));
        }
        Ok(vectors
            .iter()
            .map(|v| cosine(query_vector, v).clamp(0.0, 1.0))
            .collect())
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator > 0.0 {
        dot / denominator
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::cosine;

    #[test]
    fn cosine_is_one_for_the_same_direction_and_zero_for_nothing() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
    }
}
