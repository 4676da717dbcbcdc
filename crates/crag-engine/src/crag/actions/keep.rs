//! Keep: the retrieval was judged correct and stays as it is.

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind, Verdict};

use super::{boxed, Action, CorrectiveAction, JudgedList};
use crate::crag::run::QueryState;
use crate::error::Result;

pub(super) const ACTION: Action = Action {
    name: "keep",
    when: "correct verdict",
    does: "keeps the retrieval as it is and records the evaluator's reasoning (`keep`)",
    plan: |verdict, _, _| boxed((verdict == Verdict::Correct).then_some(Keep)),
};

pub(crate) struct Keep;

#[async_trait]
impl CorrectiveAction for Keep {
    async fn apply(&self, run: &mut QueryState<'_>, work: JudgedList) -> Result<JudgedList> {
        run.corrections.push(Correction::new(
            CorrectionKind::Keep,
            work.evaluation.reasoning.clone(),
        ));
        Ok(work)
    }
}
