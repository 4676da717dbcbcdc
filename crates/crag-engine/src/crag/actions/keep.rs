//! Keep: the retrieval was judged correct and stays as it is.

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind};

use super::{CorrectiveAction, Working};
use crate::crag::run::Run;
use crate::error::Result;

pub(crate) struct Keep;

#[async_trait]
impl CorrectiveAction for Keep {
    async fn apply(&self, run: &mut Run<'_>, work: Working) -> Result<Working> {
        run.corrections.push(Correction::new(
            CorrectionKind::Keep,
            work.evaluation.reasoning.clone(),
        ));
        Ok(work)
    }
}
