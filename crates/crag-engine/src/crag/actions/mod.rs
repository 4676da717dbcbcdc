//! The corrective actions, one module each. A module holds the whole action: when the plan
//! calls it and what the documentation says of it (its [`Action`] entry), what it does (its
//! [`CorrectiveAction`]) and its tests. [`ACTIONS`] lists them in the order they run; the
//! plan (`super::plan`) asks each in turn, and each reads and returns the [`JudgedList`] state.
//!
//! Adding an action is its module and its line in [`ACTIONS`]; docs/crag.md's table of
//! actions is generated from the entries (`CRAG_BLESS=1 cargo test -p crag-engine --lib
//! actions_table` rewrites it).

mod expand;
mod filter;
mod keep;
mod refine;
mod rewrite;
mod web;

use async_trait::async_trait;
use crag_core::{Evaluation, Verdict};

use super::artifact::Artifact;
use super::config::{CragConfig, ExpansionStrategy};
use super::run::QueryState;
use crate::error::Result;

/// Every corrective action, in the order they run (a verdict's actions are a subsequence).
pub(crate) const ACTIONS: &[Action] = &[
    keep::ACTION,
    filter::ACTION,
    expand::ACTION,
    rewrite::ACTION,
    web::ACTION,
    refine::ACTION,
];

/// What is available to a query, besides the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanState {
    /// A web search provider is configured, enabled and allowed by the request.
    pub web_search: bool,
}

/// An action's entry in the plan: its name, its documentation and when it runs.
pub(crate) struct Action {
    /// Its name in traces, tests and the documentation.
    pub(crate) name: &'static str,
    /// When the plan calls it (docs/crag.md's table).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the docs table's test"))]
    pub(crate) when: &'static str,
    /// What it does (docs/crag.md's table).
    #[cfg_attr(not(test), expect(dead_code, reason = "read by the docs table's test"))]
    pub(crate) does: &'static str,
    /// The action for a verdict, the configuration and what is available; `None` when it
    /// does not run. Pure: the decision of Corrective RAG is the sequence of these answers.
    pub(crate) plan: fn(Verdict, &CragConfig, PlanState) -> Option<Box<dyn CorrectiveAction>>,
}

/// An action planned to run, with its name.
pub(crate) struct Planned {
    pub(crate) name: &'static str,
    pub(crate) action: Box<dyn CorrectiveAction>,
}

/// `action` boxed, for an [`Action::plan`].
fn boxed<A: CorrectiveAction + 'static>(action: Option<A>) -> Option<Box<dyn CorrectiveAction>> {
    action.map(|a| Box::new(a) as Box<dyn CorrectiveAction>)
}

/// What the actions work on: the current list and its evaluation.
#[derive(Debug, Clone)]
pub(crate) struct JudgedList {
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

impl JudgedList {
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

/// A correction that retrieves again and keeps its list only if it judges better: what a
/// retry (`crag.max_retries`) tries next when one did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Pseudo-relevance feedback expansion.
    Feedback,
    /// Synonym expansion.
    Synonyms,
    /// The rewritten query.
    Rewrite,
}

impl Attempt {
    /// The action that makes this attempt. A retried rewrite does not count as feeding a web
    /// search: it is kept as a correction only if its own retrieval judged better.
    pub(crate) fn action(self) -> Box<dyn CorrectiveAction> {
        match self {
            Attempt::Feedback => Box::new(expand::Expand {
                strategy: ExpansionStrategy::Prf,
            }),
            Attempt::Synonyms => Box::new(expand::Expand {
                strategy: ExpansionStrategy::Synonyms,
            }),
            Attempt::Rewrite => Box::new(rewrite::Rewrite {
                feeds_web_search: false,
            }),
        }
    }
}

/// One corrective action.
#[async_trait]
pub(crate) trait CorrectiveAction: Send + Sync {
    /// The attempt this action is, when it is one a retry can follow.
    fn attempt(&self) -> Option<Attempt> {
        None
    }

    /// Carries the action out on `work`; records what it did in `run`'s corrections.
    async fn apply(&self, run: &mut QueryState<'_>, work: JudgedList) -> Result<JudgedList>;
}

/// Judges `candidate` (a list fused with a further retrieval) against the request's query
/// and keeps it only if the evaluator scores it above the current list, so a correction never
/// swaps a list for one judged worse. Returns the kept state, whether the candidate won, and
/// the candidate's score when it was judged.
pub(crate) async fn keep_better(
    run: &mut QueryState<'_>,
    work: JudgedList,
    mut candidate: Vec<Artifact>,
) -> Result<(JudgedList, bool, Option<f32>)> {
    if !run.runtime.config().reevaluate_corrections {
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

#[cfg(test)]
mod tests {
    use super::*;

    const BEGIN: &str = "<!-- actions: generated from ACTIONS in crates/crag-engine/src/crag/actions/mod.rs; \
                         CRAG_BLESS=1 cargo test -p crag-engine --lib actions_table rewrites it -->";
    const END: &str = "<!-- actions: end -->";

    fn table() -> String {
        // Indented as the list item it belongs to.
        let mut out = String::from("   | action | runs when | what it does |\n   |---|---|---|\n");
        for a in ACTIONS {
            out.push_str(&format!("   | `{}` | {} | {} |\n", a.name, a.when, a.does));
        }
        out
    }

    #[test]
    fn actions_table_in_docs_crag_md_is_generated_from_the_entries() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/crag.md");
        let text = std::fs::read_to_string(path).unwrap();
        let (before, rest) = text
            .split_once(BEGIN)
            .expect("docs/crag.md holds the actions table's first marker");
        let (_, after) = rest
            .split_once(END)
            .expect("docs/crag.md holds the actions table's last marker");
        let expected = format!("{before}{BEGIN}\n{}   {END}{after}", table());
        if std::env::var_os("CRAG_BLESS").is_some_and(|v| v == "1") {
            if text != expected {
                std::fs::write(path, &expected).unwrap();
            }
            return;
        }
        assert!(
            text == expected,
            "docs/crag.md's table of actions is out of date; run `CRAG_BLESS=1 cargo test -p \
             crag-engine --lib actions_table` and commit the result"
        );
    }

    #[test]
    fn action_names_are_unique() {
        let mut names: Vec<&str> = ACTIONS.iter().map(|a| a.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ACTIONS.len());
    }
}
