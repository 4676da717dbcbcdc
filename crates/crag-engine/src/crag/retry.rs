//! Corrections that retry: after an expansion or a rewrite whose list did not judge better,
//! up to `crag.max_retries` further attempts with the next strategy, while the query has run
//! for less than `crag.retry_time_limit_ms`, each kept only if it judges better than the
//! best list seen (the current one). Retries need `crag.reevaluate_corrections`: without a
//! second judgement nothing tells a failed attempt from a kept one.

use std::time::Duration;

use super::actions::{Attempt, JudgedList};
use super::config::{CragConfig, ExpansionStrategy};
use super::run::QueryState;
use crate::error::Result;

/// The attempts a retry may make after `tried`, in order: the strategies the configuration
/// allows that were not tried yet, the expansion the configuration names before the other.
/// Pure: the order is unit-tested below.
pub(crate) fn next_attempts(config: &CragConfig, tried: &[Attempt]) -> Vec<Attempt> {
    if config.max_retries == 0 || !config.reevaluate_corrections {
        return Vec::new();
    }
    let (first, second) = match config.expansion {
        ExpansionStrategy::Prf => (Attempt::Feedback, Attempt::Synonyms),
        ExpansionStrategy::Synonyms => (Attempt::Synonyms, Attempt::Feedback),
    };
    let mut order = Vec::new();
    if config.rewrite_enabled {
        order.push(Attempt::Rewrite);
    }
    if config.expansion_enabled {
        order.extend([first, second]);
    }
    order.retain(|a| !tried.contains(a));
    order.truncate(config.max_retries);
    order
}

/// Retries after `failed`, an attempt whose list did not judge better than the one it was
/// tried on; stops at the first attempt that judges better, or at the time limit.
pub(crate) async fn retry(
    run: &mut QueryState<'_>,
    mut work: JudgedList,
    tried: &mut Vec<Attempt>,
) -> Result<JudgedList> {
    let config = run.runtime.config();
    let limit = Duration::from_millis(config.retry_time_limit_ms);
    for (n, attempt) in next_attempts(config, tried).into_iter().enumerate() {
        if run.started.elapsed() >= limit {
            run.warnings.push(format!(
                "correction retry {} skipped: the query has run for {} ms (crag.retry_time_limit_ms \
                 {})",
                n + 1,
                run.started.elapsed().as_millis(),
                config.retry_time_limit_ms
            ));
            break;
        }
        tried.push(attempt);
        let before = work.evaluation.score;
        let recorded = run.corrections.len();
        work = attempt.action().apply(run, work).await?;
        for c in &mut run.corrections[recorded..] {
            c.reason = format!("retry {}: {}", n + 1, c.reason);
        }
        if work.evaluation.score > before {
            break;
        }
    }
    Ok(work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crag::testkit::{engine, judged, request};
    use crag_core::Verdict;

    const DOCS: &[(&str, &str)] = &[
        ("a", "code review checks a change for defects"),
        ("b", "a code review looks at style"),
        ("c", "review the design of the code"),
        ("d", "vitamin D and bone density"),
    ];

    fn config(max_retries: usize) -> CragConfig {
        CragConfig {
            max_retries,
            expansion_enabled: true,
            reevaluate_corrections: true,
            ..CragConfig::default()
        }
    }

    #[test]
    fn no_retry_unless_asked_and_judged_again() {
        assert!(next_attempts(&config(0), &[Attempt::Feedback]).is_empty());
        let unjudged = CragConfig {
            reevaluate_corrections: false,
            ..config(2)
        };
        assert!(next_attempts(&unjudged, &[Attempt::Feedback]).is_empty());
    }

    #[test]
    fn a_failed_expansion_is_followed_by_a_rewrite_then_the_other_expansion() {
        assert_eq!(
            next_attempts(&config(2), &[Attempt::Feedback]),
            [Attempt::Rewrite, Attempt::Synonyms]
        );
        assert_eq!(
            next_attempts(&config(1), &[Attempt::Feedback]),
            [Attempt::Rewrite]
        );
    }

    #[test]
    fn a_failed_rewrite_is_followed_by_the_configured_expansion_first() {
        assert_eq!(
            next_attempts(&config(2), &[Attempt::Rewrite]),
            [Attempt::Feedback, Attempt::Synonyms]
        );
        let synonyms = CragConfig {
            expansion: ExpansionStrategy::Synonyms,
            ..config(2)
        };
        assert_eq!(
            next_attempts(&synonyms, &[Attempt::Rewrite]),
            [Attempt::Synonyms, Attempt::Feedback]
        );
    }

    #[test]
    fn disabled_strategies_and_tried_ones_are_not_retried() {
        let no_rewrite = CragConfig {
            rewrite_enabled: false,
            ..config(2)
        };
        assert_eq!(
            next_attempts(&no_rewrite, &[Attempt::Feedback]),
            [Attempt::Synonyms]
        );
        let no_expansion = CragConfig {
            expansion_enabled: false,
            ..config(2)
        };
        assert!(next_attempts(&no_expansion, &[Attempt::Rewrite]).is_empty());
        assert!(next_attempts(
            &config(2),
            &[Attempt::Feedback, Attempt::Rewrite, Attempt::Synonyms]
        )
        .is_empty());
    }

    #[tokio::test]
    async fn a_retry_after_a_failed_expansion_rewrites_and_says_it_is_a_retry() {
        let e = engine(DOCS, config(2)).await;
        let req = request("how does a code review check the design?", 4);
        let work = judged(&e, &req, Verdict::Ambiguous, &[0.5, 0.3]).await;
        let mut run = QueryState::new(&e, &req);
        let mut tried = vec![Attempt::Feedback];
        let before = work.evaluation.score;
        let work = retry(&mut run, work, &mut tried).await.unwrap();
        assert_eq!(tried[..2], [Attempt::Feedback, Attempt::Rewrite]);
        assert!(work.evaluation.score >= before, "never a worse list");
        let rewrite = run
            .corrections
            .iter()
            .find(|c| c.reason.contains("rewritten to its keywords"))
            .expect("the rewrite was tried");
        assert!(
            rewrite.reason.starts_with("retry 1: "),
            "{}",
            rewrite.reason
        );
        assert_eq!(rewrite.queries, ["code review check design"]);
        assert!(run
            .corrections
            .iter()
            .all(|c| c.reason.starts_with("retry ")));
    }

    #[tokio::test]
    async fn no_retry_starts_after_the_time_limit() {
        let c = CragConfig {
            retry_time_limit_ms: 0,
            ..config(2)
        };
        let e = engine(DOCS, c).await;
        let req = request("how does a code review check the design?", 4);
        let work = judged(&e, &req, Verdict::Ambiguous, &[0.5, 0.3]).await;
        let mut run = QueryState::new(&e, &req);
        let mut tried = vec![Attempt::Feedback];
        retry(&mut run, work, &mut tried).await.unwrap();
        assert_eq!(tried, [Attempt::Feedback]);
        assert!(run.corrections.is_empty());
        assert!(
            run.warnings[0].contains("retry 1 skipped"),
            "{:?}",
            run.warnings
        );
    }
}
