//! Filter (ambiguous verdict): drop the documents the evaluator scored below the threshold.
//! A document the evaluator did not score is never dropped, and the list is never emptied.

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind, Verdict};

use super::{boxed, Action, CorrectiveAction, JudgedList};
use crate::crag::artifact::Artifact;
use crate::crag::config::CragConfig;
use crate::crag::run::QueryState;
use crate::error::Result;

pub(super) const ACTION: Action = Action {
    name: "filter",
    when: "ambiguous verdict, `crag.ambiguous_filter_enabled`",
    does: "drops the documents the evaluator scored below `crag.ambiguous_filter_threshold` \
           (`discard`); never one it did not score, never all of them",
    plan: |verdict, config, _| boxed(planned(verdict, config)),
};

#[derive(Debug, PartialEq)]
pub(crate) struct Filter {
    pub(crate) threshold: f32,
}

fn planned(verdict: Verdict, config: &CragConfig) -> Option<Filter> {
    (verdict == Verdict::Ambiguous && config.ambiguous_filter_enabled).then_some(Filter {
        threshold: config.ambiguous_filter_threshold,
    })
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
    async fn apply(&self, run: &mut QueryState<'_>, mut work: JudgedList) -> Result<JudgedList> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crag::testkit::{engine, judged, request};

    const DOCS: &[(&str, &str)] = &[
        ("a", "code review checks a change for defects"),
        ("b", "a code review looks at style"),
        ("c", "review the design of the code"),
        ("d", "vitamin D and bone density"),
    ];

    #[test]
    fn runs_on_an_ambiguous_verdict_when_enabled_with_the_configured_threshold() {
        let c = CragConfig {
            ambiguous_filter_threshold: 0.3,
            ..CragConfig::default()
        };
        assert_eq!(
            planned(Verdict::Ambiguous, &c),
            Some(Filter { threshold: 0.3 })
        );
        assert_eq!(planned(Verdict::Correct, &c), None);
        assert_eq!(planned(Verdict::Incorrect, &c), None);
        let off = CragConfig {
            ambiguous_filter_enabled: false,
            ..c
        };
        assert_eq!(planned(Verdict::Ambiguous, &off), None);
    }

    #[tokio::test]
    async fn drops_documents_scored_below_the_threshold_and_keeps_unscored_ones() {
        let e = engine(DOCS, CragConfig::default()).await;
        let req = request("code review", 4);
        let work = judged(&e, &req, Verdict::Ambiguous, &[0.9, 0.1]).await;
        let ids: Vec<_> = work.artifacts.iter().map(|a| a.chunk.id.clone()).collect();
        assert!(ids.len() >= 3, "{ids:?}");
        let mut run = QueryState::new(&e, &req);
        let work = Filter { threshold: 0.4 }
            .apply(&mut run, work)
            .await
            .unwrap();
        let kept: Vec<_> = work.artifacts.iter().map(|a| a.chunk.id.clone()).collect();
        let mut expected = ids.clone();
        expected.remove(1);
        assert_eq!(kept, expected, "the second (0.1) goes, the unscored stay");
        assert!(run.discarded.contains(&ids[1]));
        assert_eq!(run.corrections.len(), 1);
        assert_eq!(run.corrections[0].kind, CorrectionKind::Discard);
        assert!(run.corrections[0].reason.contains("0.10"));
    }

    #[tokio::test]
    async fn never_empties_the_list() {
        let e = engine(DOCS, CragConfig::default()).await;
        let req = request("code review", 2);
        let work = judged(&e, &req, Verdict::Ambiguous, &[0.1, 0.2]).await;
        let before: Vec<_> = work.artifacts.iter().map(|a| a.chunk.id.clone()).collect();
        let mut run = QueryState::new(&e, &req);
        let work = Filter { threshold: 0.4 }
            .apply(&mut run, work)
            .await
            .unwrap();
        let after: Vec<_> = work.artifacts.iter().map(|a| a.chunk.id.clone()).collect();
        assert_eq!(after, before);
        assert!(run.discarded.is_empty());
        assert_eq!(run.corrections[0].kind, CorrectionKind::Keep);
    }
}
