//! Filter (ambiguous verdict): drop the documents the evaluator scored below the threshold.
//! A document the evaluator did not score is never dropped, and the list is never emptied.

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind};

use super::{CorrectiveAction, Working};
use crate::crag::artifact::Artifact;
use crate::crag::run::Run;
use crate::error::Result;

pub(crate) struct Filter {
    pub(crate) threshold: f32,
}

/// Splits `artifacts` into those kept and those dropped; gives them back whole when every
/// document would go.
pub(crate) fn split(
    artifacts: Vec<Artifact>,
    threshold: f32,
) -> std::result::Result<(Vec<Artifact>, Vec<Artifact>), Vec<Artifact>> {
    if artifacts
        .iter()
        .all(|a| a.relevance.is_some_and(|s| s < threshold))
    {
        return Err(artifacts);
    }
    Ok(artifacts
        .into_iter()
        .partition(|a| a.relevance.is_none_or(|s| s >= threshold)))
}

#[async_trait]
impl CorrectiveAction for Filter {
    async fn apply(&self, run: &mut Run<'_>, mut work: Working) -> Result<Working> {
        let threshold = self.threshold;
        match split(std::mem::take(&mut work.artifacts), threshold) {
            Err(all) => {
                if !all.is_empty() {
                    run.corrections.push(Correction::new(
                        CorrectionKind::Keep,
                        format!(
                            "every document scored below {threshold:.2}; none dropped, the list is never emptied"
                        ),
                    ));
                }
                work.artifacts = all;
            }
            Ok((kept, dropped)) => {
                run.discarded
                    .extend(dropped.iter().map(|a| a.chunk.id.clone()));
                if !dropped.is_empty() {
                    let list: Vec<String> = dropped
                        .iter()
                        .map(|a| format!("{} ({:.2})", a.chunk.id, a.relevance.unwrap_or(0.0)))
                        .collect();
                    run.corrections.push(Correction::new(
                        CorrectionKind::Discard,
                        format!(
                            "dropped {} documents scored below {threshold:.2}: {}",
                            dropped.len(),
                            list.join(", ")
                        ),
                    ));
                }
                work.artifacts = kept;
            }
        }
        Ok(work)
    }
}
