//! Rewrite (incorrect verdict): rewrite the query (with the language model when configured,
//! else to its keywords), retrieve it, fuse with the current list (never substituted for it)
//! and keep the fused list only if the evaluator scores it higher. The rewritten query is
//! also what a later web search uses.

use std::time::Instant;

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind, Query, Verdict};
use crag_expansion::rewrite_keywords;
use crag_ports::{ChatMessage, CompletionRequest};

use super::{boxed, keep_better, Action, Attempt, CorrectiveAction, JudgedList, PlanState};
use crate::crag::artifact::Artifact;
use crate::crag::run::QueryState;
use crate::crag::timings::Stage;
use crate::error::Result;

pub(super) const ACTION: Action = Action {
    name: "rewrite",
    when: "incorrect verdict, `crag.rewrite_enabled`",
    does: "rewrites the query (the language model's `llm.rewrite`, else its keywords), \
           retrieves it, fuses with the current list and keeps the fusion (only if it judges \
           better under `crag.reevaluate_corrections`) (`rewrite`); a web search that follows \
           searches with the rewritten query",
    plan: |verdict, config, state| {
        boxed((verdict == Verdict::Incorrect && config.rewrite_enabled).then_some(planned(state)))
    },
};

fn planned(state: PlanState) -> Rewrite {
    Rewrite {
        feeds_web_search: state.web_search,
    }
}

#[derive(Debug, PartialEq)]
pub(crate) struct Rewrite {
    /// A web search follows with the rewritten query: the rewrite counts as a correction
    /// even when its own retrieval is not kept.
    pub(crate) feeds_web_search: bool,
}

#[async_trait]
impl CorrectiveAction for Rewrite {
    fn attempt(&self) -> Option<Attempt> {
        Some(Attempt::Rewrite)
    }

    async fn apply(&self, run: &mut QueryState<'_>, mut work: JudgedList) -> Result<JudgedList> {
        let t = Instant::now();
        let Some((rewritten, how)) = rewrite(run).await? else {
            run.timings.add(Stage::Rewrite, t.elapsed());
            return Ok(work);
        };
        work.search_query = rewritten.clone();
        let Ok(query) = Query::new(&rewritten) else {
            run.timings.add(Stage::Rewrite, t.elapsed());
            return Ok(work);
        };
        let r = run.retrieve_again(&query).await?;
        let new: Vec<Artifact> = r.hits.into_iter().map(Artifact::from_hit).collect();
        let (fused, added) = run.fuse_with(
            &work.artifacts,
            new,
            run.runtime.config().further_retrieval_weight,
        );
        run.timings.add(Stage::Rewrite, t.elapsed());
        let before = work.evaluation.score;
        let (work, won, after) = keep_better(run, work, fused).await?;
        let scores = after.map_or(String::new(), |a| {
            format!(" (judged {a:.3} against {before:.3})")
        });
        let reason = if won {
            format!("{how}; retrieved again and fused by rank: {added} new documents{scores}")
        } else {
            format!("{how}; its retrieval did not judge better{scores}; current list kept")
        };
        let kind = if won || self.feeds_web_search {
            CorrectionKind::Rewrite
        } else {
            CorrectionKind::Keep
        };
        run.corrections
            .push(Correction::new(kind, reason).with_queries(vec![rewritten]));
        Ok(work)
    }
}

/// The rewritten query and how it was made; `None` when the query has no keywords. A failed
/// or empty rewrite by the language model falls back to the keywords (an error under
/// `crag.strict`).
async fn rewrite(run: &mut QueryState<'_>) -> Result<Option<(String, &'static str)>> {
    let original = run.request.query.as_str();
    if let Some(model) = &run.runtime.components.rewriter {
        let request = CompletionRequest {
            messages: vec![
                ChatMessage::system(
                    "Rewrite the user's question into a short web search query. \
                     Answer with the query only, on one line, without quotes.",
                ),
                ChatMessage::user(original),
            ],
            max_tokens: run.runtime.config().rewrite_max_tokens,
            temperature: 0.0,
        };
        match model.complete(&request).await {
            Ok(text) => {
                let line = text
                    .lines()
                    .map(|l| l.trim().trim_matches('"').trim())
                    .find(|l| !l.is_empty());
                if let Some(q) = line.filter(|l| Query::new(l).is_ok()) {
                    return Ok(Some((q.to_owned(), "rewritten by the language model")));
                }
                run.fall_back("the language model's rewrite was empty; using keywords".into())?;
            }
            Err(e) => run.fall_back(format!(
                "query rewrite by the language model failed: {e}; using keywords"
            ))?,
        }
    }
    Ok(rewrite_keywords(original).map(|q| (q, "rewritten to its keywords")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crag::config::CragConfig;

    #[test]
    fn runs_on_an_incorrect_verdict_when_enabled_and_knows_whether_the_web_follows() {
        let on = CragConfig::default();
        let off = CragConfig {
            rewrite_enabled: false,
            ..CragConfig::default()
        };
        let web = PlanState { web_search: true };
        assert!((ACTION.plan)(Verdict::Incorrect, &on, web).is_some());
        assert!((ACTION.plan)(Verdict::Incorrect, &off, web).is_none());
        assert!((ACTION.plan)(Verdict::Ambiguous, &on, web).is_none());
        assert!(planned(web).feeds_web_search);
        assert!(!planned(PlanState { web_search: false }).feeds_web_search);
    }
}
