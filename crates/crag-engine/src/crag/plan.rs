//! The decision of Corrective RAG, pure: which corrective actions a verdict calls for.
//!
//! [`plan`] maps a verdict, the configuration and what is available (web search, a language
//! model) to an ordered list of [`Step`]s; the actions in `actions/` carry them out. Nothing
//! here does IO, so every branch of the decision is unit-tested below.

use crag_core::Verdict;

use super::config::CragConfig;

/// When a web search step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WebTrigger {
    /// Whatever the local results (incorrect verdict).
    Always,
    /// Only when fewer than this many documents were judged at or above the filter threshold
    /// (ambiguous verdict, seed 001's `min_results_before_web_search`).
    FewerJudgedThan(usize),
}

impl WebTrigger {
    /// Whether the search runs, given how many documents the evaluator judged good enough.
    pub(crate) fn fires(self, judged_good: usize) -> bool {
        match self {
            Self::Always => true,
            Self::FewerJudgedThan(n) => judged_good < n,
        }
    }
}

/// One corrective step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    /// Keep the retrieval as it is (correct verdict).
    Keep,
    /// Drop documents the evaluator scored below `threshold`, never all of them.
    Filter {
        /// Documents scored below this are dropped.
        threshold: f32,
    },
    /// Expand the query, retrieve again, fuse with the current list and keep whichever the
    /// evaluator scores higher.
    Expand,
    /// Rewrite the query (language model or keywords), retrieve it, fuse with the current
    /// list and keep whichever the evaluator scores higher.
    Rewrite {
        /// A web search follows and searches with the rewritten query.
        feeds_web_search: bool,
    },
    /// Search the web; its results go before the local ones.
    WebSearch(WebTrigger),
    /// Cut documents down to their strips that match the query.
    Refine,
}

/// What is available to a query, besides the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanState {
    /// A web search provider is configured, enabled and allowed by the request.
    pub web_search: bool,
}

/// The steps for `verdict`, in the order they run.
pub(crate) fn plan(verdict: Verdict, config: &CragConfig, state: PlanState) -> Vec<Step> {
    let mut steps = Vec::new();
    let refine = match verdict {
        Verdict::Correct => {
            steps.push(Step::Keep);
            config.refine_correct
        }
        Verdict::Ambiguous => {
            if config.ambiguous_filter_enabled {
                steps.push(Step::Filter {
                    threshold: config.ambiguous_filter_threshold,
                });
            }
            if config.expansion_enabled {
                steps.push(Step::Expand);
            }
            if state.web_search {
                steps.push(Step::WebSearch(WebTrigger::FewerJudgedThan(
                    config.min_results_before_web_search,
                )));
            }
            config.refine_ambiguous
        }
        Verdict::Incorrect => {
            if config.rewrite_enabled {
                steps.push(Step::Rewrite {
                    feeds_web_search: state.web_search,
                });
            }
            if state.web_search {
                steps.push(Step::WebSearch(WebTrigger::Always));
            }
            config.refine_incorrect
        }
    };
    if refine {
        steps.push(Step::Refine);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEB: PlanState = PlanState { web_search: true };
    const NO_WEB: PlanState = PlanState { web_search: false };

    #[test]
    fn correct_keeps_and_refines_only_when_asked() {
        let c = CragConfig::default();
        assert_eq!(plan(Verdict::Correct, &c, WEB), vec![Step::Keep]);
        let c = CragConfig {
            refine_correct: true,
            ..c
        };
        assert_eq!(
            plan(Verdict::Correct, &c, WEB),
            vec![Step::Keep, Step::Refine]
        );
    }

    #[test]
    fn ambiguous_filters_expands_then_searches_the_web_when_few_remain() {
        let c = CragConfig {
            ambiguous_filter_enabled: true,
            ..CragConfig::default()
        };
        let steps = plan(Verdict::Ambiguous, &c, WEB);
        assert_eq!(
            steps,
            vec![
                Step::Filter {
                    threshold: c.ambiguous_filter_threshold
                },
                Step::Expand,
                Step::WebSearch(WebTrigger::FewerJudgedThan(3)),
                Step::Refine,
            ]
        );
        let steps = plan(Verdict::Ambiguous, &c, NO_WEB);
        assert!(!steps.iter().any(|s| matches!(s, Step::WebSearch(_))));
    }

    #[test]
    fn ambiguous_without_filter_or_expansion_only_refines() {
        let c = CragConfig {
            ambiguous_filter_enabled: false,
            expansion_enabled: false,
            ..CragConfig::default()
        };
        assert_eq!(plan(Verdict::Ambiguous, &c, NO_WEB), vec![Step::Refine]);
    }

    #[test]
    fn incorrect_rewrites_and_always_searches_the_web() {
        let c = CragConfig::default();
        assert_eq!(
            plan(Verdict::Incorrect, &c, WEB),
            vec![
                Step::Rewrite {
                    feeds_web_search: true
                },
                Step::WebSearch(WebTrigger::Always),
                Step::Refine
            ]
        );
        assert_eq!(
            plan(Verdict::Incorrect, &c, NO_WEB),
            vec![
                Step::Rewrite {
                    feeds_web_search: false
                },
                Step::Refine
            ]
        );
    }

    #[test]
    fn web_trigger_fires_below_the_minimum() {
        assert!(WebTrigger::Always.fires(10));
        assert!(WebTrigger::FewerJudgedThan(3).fires(2));
        assert!(!WebTrigger::FewerJudgedThan(3).fires(3));
    }
}
