//! The corrective actions, one module each, behind [`CorrectiveAction`]. The plan
//! (`super::plan`) decides which run; each action reads and returns the [`Working`] state.

mod expand;
mod filter;
mod keep;
mod refine;
mod rewrite;
mod web;

use async_trait::async_trait;
use crag_core::{Evaluation, Verdict};

use super::artifact::Artifact;
use super::plan::Step;
use super::run::Run;
use crate::error::Result;

/// What the actions work on: the current list and its evaluation.
#[derive(Debug, Clone)]
pub(crate) struct Working {
    /// The current list, best first.
    pub(crate) artifacts: Vec<Artifact>,
    /// The evaluation of the current list (the first one, or a re-evaluation that won).
    pub(crate) evaluation: Evaluation,
    /// The vector leg's floor for artifacts it did not return.
    pub(crate) floor: Option<f32>,
    /// The filter threshold: documents scored at least this count as judged good.
    pub(crate) threshold: f32,
    /// The query web search uses (the rewritten one once a rewrite ran).
    pub(crate) search_query: String,
}

impl Working {
    pub(crate) fn new(
        artifacts: Vec<Artifact>,
        evaluation: Evaluation,
        floor: Option<f32>,
        threshold: f32,
        query: &str,
    ) -> Self {
        Self {
            artifacts,
            evaluation,
            floor,
            threshold,
            search_query: query.to_owned(),
        }
    }

    /// Documents the evaluator scored at or above the threshold. Documents it did not judge
    /// (an LLM judge reads only the top few) do not count: they are not evidence.
    pub(crate) fn judged_good(&self) -> usize {
        judged_good(&self.artifacts, self.threshold)
    }
}

pub(crate) fn judged_good(artifacts: &[Artifact], threshold: f32) -> usize {
    artifacts
        .iter()
        .filter(|a| a.relevance.is_some_and(|s| s >= threshold))
        .count()
}

/// One corrective action.
#[async_trait]
pub(crate) trait CorrectiveAction: Send + Sync {
    /// Carries the action out on `work`; records what it did in `run`'s corrections.
    async fn apply(&self, run: &mut Run<'_>, work: Working) -> Result<Working>;
}

/// The action of a planned step.
pub(crate) fn action(step: Step) -> Box<dyn CorrectiveAction> {
    match step {
        Step::Keep => Box::new(keep::Keep),
        Step::Filter { threshold } => Box::new(filter::Filter { threshold }),
        Step::Expand => Box::new(expand::Expand),
        Step::Rewrite { feeds_web_search } => Box::new(rewrite::Rewrite { feeds_web_search }),
        Step::WebSearch(trigger) => Box::new(web::WebSearch { trigger }),
        Step::Refine => Box::new(refine::Refine),
    }
}

/// Judges `candidate` (a list fused with a further retrieval) against the request's query
/// and keeps it only if the evaluator scores it above the current list (seed 003, 6C: keep
/// the better of the two). Returns the kept state, whether the candidate won, and the
/// candidate's score when it was judged.
pub(crate) async fn keep_better(
    run: &mut Run<'_>,
    work: Working,
    mut candidate: Vec<Artifact>,
) -> Result<(Working, bool, Option<f32>)> {
    if !run.rt.config().reevaluate_corrections {
        let mut work = work;
        work.artifacts = candidate;
        return Ok((work, true, None));
    }
    let Some(ev) = run.evaluate(&mut candidate, work.floor).await? else {
        return Ok((work, false, None));
    };
    let score = ev.score;
    let better = score > work.evaluation.score
        && !(ev.verdict == Verdict::Incorrect && work.evaluation.verdict != Verdict::Incorrect);
    if better {
        let mut work = work;
        work.artifacts = candidate;
        work.evaluation = ev;
        Ok((work, true, Some(score)))
    } else {
        Ok((work, false, Some(score)))
    }
}
