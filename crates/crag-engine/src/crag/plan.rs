//! The decision of Corrective RAG, pure: which corrective actions a verdict calls for.
//!
//! [`plan`] asks each action of `actions::ACTIONS`, in order, whether it runs for a verdict,
//! the configuration and what is available (web search); each answers in its own module,
//! where its conditions are unit-tested. Nothing here does IO; the tests below check the
//! sequences the verdicts produce.

use crag_core::Verdict;

use super::actions::{PlanState, Planned, ACTIONS};
use super::config::CragConfig;

/// The actions for `verdict`, in the order they run.
pub(crate) fn plan(verdict: Verdict, config: &CragConfig, state: PlanState) -> Vec<Planned> {
    ACTIONS
        .iter()
        .filter_map(|a| {
            (a.plan)(verdict, config, state).map(|action| Planned {
                name: a.name,
                action,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEB: PlanState = PlanState { web_search: true };
    const NO_WEB: PlanState = PlanState { web_search: false };

    fn names(verdict: Verdict, config: &CragConfig, state: PlanState) -> Vec<&'static str> {
        plan(verdict, config, state)
            .into_iter()
            .map(|p| p.name)
            .collect()
    }

    #[test]
    fn correct_keeps_and_refines_only_when_asked() {
        let c = CragConfig::default();
        assert_eq!(names(Verdict::Correct, &c, WEB), ["keep"]);
        let c = CragConfig {
            refine_correct: true,
            ..c
        };
        assert_eq!(names(Verdict::Correct, &c, WEB), ["keep", "refine"]);
    }

    #[test]
    fn ambiguous_filters_expands_then_searches_the_web_then_refines() {
        let c = CragConfig {
            ambiguous_filter_enabled: true,
            expansion_enabled: true,
            ..CragConfig::default()
        };
        assert_eq!(
            names(Verdict::Ambiguous, &c, WEB),
            ["filter", "expand", "web_search", "refine"]
        );
        assert_eq!(
            names(Verdict::Ambiguous, &c, NO_WEB),
            ["filter", "expand", "refine"]
        );
    }

    #[test]
    fn ambiguous_does_not_expand_by_default() {
        assert_eq!(
            names(Verdict::Ambiguous, &CragConfig::default(), NO_WEB),
            ["filter", "refine"]
        );
    }

    #[test]
    fn ambiguous_without_filter_or_expansion_only_refines() {
        let c = CragConfig {
            ambiguous_filter_enabled: false,
            expansion_enabled: false,
            ..CragConfig::default()
        };
        assert_eq!(names(Verdict::Ambiguous, &c, NO_WEB), ["refine"]);
    }

    #[test]
    fn incorrect_rewrites_searches_the_web_and_refines() {
        let c = CragConfig::default();
        assert_eq!(
            names(Verdict::Incorrect, &c, WEB),
            ["rewrite", "web_search", "refine"]
        );
        assert_eq!(names(Verdict::Incorrect, &c, NO_WEB), ["rewrite", "refine"]);
    }
}
