//! Web search: on an incorrect verdict always, on an ambiguous one when too few documents
//! were judged good. Web results go before the local ones on an incorrect verdict and after
//! them on an ambiguous one; the local results are never removed. Honours the fail mode.

use std::time::Instant;

use async_trait::async_trait;
use crag_core::{Correction, CorrectionKind};

use super::{CorrectiveAction, Working};
use crate::crag::artifact::{Artifact, Stage};
use crate::crag::guard::{guarded, Guarded};
use crate::crag::plan::WebTrigger;
use crate::crag::run::Run;
use crate::error::Result;

pub(crate) struct WebSearch {
    pub(crate) trigger: WebTrigger,
}

#[async_trait]
impl CorrectiveAction for WebSearch {
    async fn apply(&self, run: &mut Run<'_>, mut work: Working) -> Result<Working> {
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
        let Some(provider) = run.rt.parts.web_search.clone() else {
            return Ok(work);
        };
        let config = run.rt.config();
        let limit = config.web_search_limit;
        let query = work.search_query.clone();
        let t = Instant::now();
        let result = guarded(
            "web search",
            config.web_search_timeout,
            config.web_search_fail_mode,
            provider.search(&query, limit),
        )
        .await;
        run.timings.add(Stage::WebSearch, t.elapsed());
        let results = match result {
            Ok(Guarded::Done(results)) => results,
            Ok(Guarded::FailedOpen(failure)) => {
                run.rt.metrics().web_failure(provider.name());
                tracing::warn!(provider = provider.name(), error = %failure, "web search failed");
                run.warnings.push(format!(
                    "web search ({}) failed: {failure}",
                    provider.name()
                ));
                return Ok(work);
            }
            Err(e) => {
                run.rt.metrics().web_failure(provider.name());
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
