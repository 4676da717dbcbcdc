//! Web search: on an incorrect verdict always, on an ambiguous one when too few documents
//! were judged good. Web results go before the local ones on an incorrect verdict and after
//! them on an ambiguous one; the local results are never removed. Honours the fail mode.

use std::time::Instant;

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind, Verdict};

use super::{boxed, Action, CorrectiveAction, JudgedList, PlanState};
use crate::crag::artifact::Artifact;
use crate::crag::config::CragConfig;
use crate::crag::guard::{guarded, Guarded};
use crate::crag::run::QueryState;
use crate::crag::timings::Stage;
use crate::error::Result;

pub(super) const ACTION: Action = Action {
    name: "web_search",
    when: "a web search provider is configured, enabled and allowed by the request; incorrect \
           verdict, or ambiguous with fewer than `crag.min_results_before_web_search` documents \
           scored at least the filter threshold",
    does: "searches the web (`web_search`): on an incorrect verdict its results go first, on an \
           ambiguous one after the local results; honours `crag.web_search_fail_mode`",
    plan: |verdict, config, state| boxed(planned(verdict, config, state)),
};

#[derive(Debug, PartialEq)]
pub(crate) struct WebSearch {
    pub(crate) trigger: WebTrigger,
}

/// When a web search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WebTrigger {
    /// Whatever the local results (incorrect verdict).
    Always,
    /// Only when fewer than this many documents were judged at or above the filter threshold
    /// (ambiguous verdict, `[crag] min_results_before_web_search`).
    FewerJudgedThan(usize),
}

impl WebTrigger {
    /// Whether the search runs, given how many documents the evaluator judged good enough.
    fn fires(self, judged_good: usize) -> bool {
        match self {
            Self::Always => true,
            Self::FewerJudgedThan(n) => judged_good < n,
        }
    }
}

fn planned(verdict: Verdict, config: &CragConfig, state: PlanState) -> Option<WebSearch> {
    if !state.web_search {
        return None;
    }
    let trigger = match verdict {
        Verdict::Correct => return None,
        Verdict::Ambiguous => WebTrigger::FewerJudgedThan(config.min_results_before_web_search),
        Verdict::Incorrect => WebTrigger::Always,
    };
    Some(WebSearch { trigger })
}

#[async_trait]
impl CorrectiveAction for WebSearch {
    async fn apply(&self, run: &mut QueryState<'_>, mut work: JudgedList) -> Result<JudgedList> {
        let good = work.judged_good();
        if !self.trigger.fires(good) {
            return Ok(work);
        }
        let reason = match self.trigger {
            WebTrigger::Always => "the retrieval was judged incorrect".to_owned(),
            WebTrigger::FewerJudgedThan(n) => format!(
                "only {good} documents scored at least {:.2} (fewer than {n})",
                work.threshold
            ),
        };
        let Some(provider) = run.runtime.components.web_search.clone() else {
            return Ok(work);
        };
        let config = run.runtime.config();
        let limit = config.web_search_limit;
        let query = work.search_query.clone();
        let t = Instant::now();
        let result = guarded(
            "web search",
            config.web_search_timeout,
            config.fail_mode(config.web_search_fail_mode),
            provider.search(&query, limit),
        )
        .await;
        run.timings.add(Stage::WebSearch, t.elapsed());
        let results = match result {
            Ok(Guarded::Done(results)) => results,
            Ok(Guarded::FailedOpen(failure)) => {
                run.runtime.metrics().web_failure(provider.name());
                tracing::warn!(provider = provider.name(), error = %failure, "web search failed");
                run.warnings.push(format!(
                    "web search ({}) failed: {failure}",
                    provider.name()
                ));
                return Ok(work);
            }
            Err(e) => {
                run.runtime.metrics().web_failure(provider.name());
                tracing::warn!(provider = provider.name(), error = %e, "web search failed");
                return Err(e);
            }
        };
        let web: Vec<Artifact> = results
            .iter()
            .take(limit)
            .enumerate()
            .filter_map(|(i, r)| Artifact::from_web(r, i + 1))
            .collect();
        if web.is_empty() {
            run.warnings.push(format!(
                "web search ({}) found nothing for `{query}`",
                provider.name()
            ));
            return Ok(work);
        }
        run.web_search_used = true;
        run.corrections.push(
            Correction::new(
                CorrectionKind::WebSearch,
                format!(
                    "{reason}: {} web results from {}",
                    web.len(),
                    provider.name()
                ),
            )
            .with_queries(vec![query]),
        );
        work.artifacts = match self.trigger {
            WebTrigger::Always => web.into_iter().chain(work.artifacts).collect(),
            WebTrigger::FewerJudgedThan(_) => work.artifacts.into_iter().chain(web).collect(),
        };
        Ok(work)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEB: PlanState = PlanState { web_search: true };

    #[test]
    fn runs_only_with_a_provider_and_not_on_a_correct_verdict() {
        let c = CragConfig::default();
        assert_eq!(planned(Verdict::Correct, &c, WEB), None);
        for v in [Verdict::Ambiguous, Verdict::Incorrect] {
            assert_eq!(planned(v, &c, PlanState { web_search: false }), None);
        }
    }

    #[test]
    fn incorrect_always_searches_ambiguous_only_below_the_minimum() {
        let c = CragConfig {
            min_results_before_web_search: 4,
            ..CragConfig::default()
        };
        let trigger = |v| planned(v, &c, WEB).map(|w| w.trigger);
        assert_eq!(trigger(Verdict::Incorrect), Some(WebTrigger::Always));
        assert_eq!(
            trigger(Verdict::Ambiguous),
            Some(WebTrigger::FewerJudgedThan(4))
        );
    }

    #[test]
    fn the_trigger_fires_below_the_minimum() {
        assert!(WebTrigger::Always.fires(10));
        assert!(WebTrigger::FewerJudgedThan(3).fires(2));
        assert!(!WebTrigger::FewerJudgedThan(3).fires(3));
    }
}
