//! `Engine::query`: route, retrieve, evaluate, carry out the plan, pack.

use std::time::Instant;

use crag_core::{Chunk, Correction, CorrectionKind};
use crag_refine::{estimate_tokens, pack_to_budget};
use crag_routing::Route;

use super::actions::{JudgedList, PlanState};
use super::artifact::Artifact;
use super::components::CragRuntime;
use super::outcome::{EvaluationInput, QueryOutcome, QueryRequest};
use super::plan::plan;
use super::retry::retry;
use super::run::{eval_documents, QueryState};
use super::timings::Stage;
use crate::config::RetrievalScope;
use crate::engine::Engine;
use crate::error::{EngineError, Result};

impl Engine {
    /// Answers a query with Corrective RAG: routes it, retrieves (hybrid), judges the results
    /// and corrects them (filter, expand, rewrite, web search, refine; see
    /// `docs/crag.md`), then packs them into the token budget.
    pub async fn query(&self, request: &QueryRequest) -> Result<QueryOutcome> {
        let started = Instant::now();
        let runtime = self.crag_runtime();
        // `[crag] enabled = false`: every query is a plain retrieval, whatever it asks.
        let plain;
        let request = if request.use_crag && !runtime.config().enabled {
            plain = QueryRequest {
                use_crag: false,
                ..request.clone()
            };
            &plain
        } else {
            request
        };
        let mut run = QueryState::new(self, request);
        let budget = request
            .token_budget
            .unwrap_or(runtime.config().token_budget);
        if budget == 0 {
            return Err(EngineError::InvalidInput(
                "token_budget must be positive".into(),
            ));
        }

        let t = Instant::now();
        let mut route = runtime.route(&request.query);
        run.timings.add(Stage::Route, t.elapsed());

        let mut evaluation = None;
        let mut original_count = 0;
        let mut artifacts = Vec::new();
        let mut rerank_outcome = None;
        if route.route != Route::NoRetrieval {
            let first = run.first_retrieval(&route).await?;
            if let Some(note) = run.graph_note.take() {
                route.reason = format!("{}; {note}", route.reason);
            }
            rerank_outcome = first.rerank;
            original_count = first.artifacts.len();
            artifacts = first.artifacts;
            if request.use_crag {
                let tail = artifacts.split_off(artifacts.len().min(run.head_k.get()));
                let judged = artifacts.clone();
                evaluation = run.evaluate(&mut artifacts, first.floor).await?;
                match &evaluation {
                    Some(ev) => artifacts = correct(&mut run, ev, artifacts, first.floor).await?,
                    None => run.corrections.push(Correction::new(
                        CorrectionKind::Keep,
                        "the evaluator failed; results kept unjudged (fail-open)",
                    )),
                }
                // What a fused retrieval pushed out of the judged head moves below it, not
                // lost. What the filter dropped on the evaluator's evidence stays out when
                // only the judged depth was asked for; under a deeper `top_k` it ranks after
                // the judged results, before the unjudged ones (reordered, not removed).
                let deeper = !tail.is_empty();
                let (discarded, displaced): (Vec<Artifact>, Vec<Artifact>) = judged
                    .into_iter()
                    .partition(|a| run.discarded.contains(&a.chunk.id));
                let discarded = discarded.into_iter().filter(|_| deeper);
                append_unseen(
                    self.config().scope,
                    &mut artifacts,
                    displaced.into_iter().chain(discarded).chain(tail),
                );
            }
        }

        let code = self.config().code;
        if let (Some(symbols), true) = (self.symbol_index(), code.expand_depth > 0) {
            let t = Instant::now();
            let added = crate::code::expand_with_definitions(
                self,
                symbols.as_ref(),
                &mut artifacts,
                code.expand_depth,
                code.expand_budget,
            )
            .await?;
            if added > 0 {
                run.corrections.push(Correction::new(
                    CorrectionKind::Keep,
                    format!(
                        "{added} definitions used by the code results added from the symbol graph"
                    ),
                ));
            }
            run.timings.add(Stage::Expand, t.elapsed());
        }

        let t = Instant::now();
        for a in &mut artifacts {
            a.tokens = self.chunk_tokens(&a.chunk);
        }
        let packed = pack_to_budget(artifacts, budget, |a: &Artifact| a.tokens);
        if !packed.dropped.is_empty() {
            run.warnings.push(format!(
                "{} artifacts left out to fit the token budget of {budget}",
                packed.dropped.len()
            ));
        }
        run.timings.add(Stage::Pack, t.elapsed());
        run.timings.total = started.elapsed();

        let outcome = QueryOutcome {
            query: request.query.clone(),
            route,
            artifacts: packed.kept,
            evaluator: evaluation
                .as_ref()
                .map(|_| runtime.components.evaluator.name().to_owned()),
            evaluation,
            corrections: run.corrections,
            web_search_used: run.web_search_used,
            original_count,
            rerank: rerank_outcome,
            tokens_used: packed.used_tokens,
            token_budget: budget,
            timings: run.timings,
            warnings: run.warnings,
        };
        record(runtime, &outcome);
        Ok(outcome)
    }

    /// Routes and retrieves `request` as [`Engine::query`] does (reranking included) and
    /// returns what the relevance evaluator would be shown (the first `crag.judge_depth`
    /// results), without judging or correcting it: the input `crag calibrate` fits an
    /// evaluator on. A query routed to no retrieval gives no documents.
    pub async fn evaluation_input(&self, request: &QueryRequest) -> Result<EvaluationInput> {
        let mut run = QueryState::new(self, request);
        let route = self.crag_runtime().route(&request.query);
        let (artifacts, documents) = if route.route == Route::NoRetrieval {
            (Vec::new(), Vec::new())
        } else {
            let mut first = run.first_retrieval(&route).await?;
            first.artifacts.truncate(run.head_k.get());
            let documents = eval_documents(&first.artifacts, first.floor);
            (first.artifacts, documents)
        };
        Ok(EvaluationInput {
            route,
            artifacts,
            documents,
            warnings: run.warnings,
        })
    }

    /// Tokens of `text` by the embedder's tokenizer (a word estimate if it fails).
    pub(crate) fn count_tokens(&self, text: &str) -> usize {
        self.embedder()
            .count_tokens(text)
            .unwrap_or_else(|_| estimate_tokens(text))
    }

    /// Tokens of `chunk`'s text: the count it was stored with, else counted now.
    pub(crate) fn chunk_tokens(&self, chunk: &Chunk) -> usize {
        match chunk.tokens {
            Some(tokens) => tokens as usize,
            None => self.count_tokens(&chunk.text),
        }
    }
}

/// Plans the corrections of a judged retrieval and carries them out in order.
async fn correct(
    run: &mut QueryState<'_>,
    ev: &crag_core::Evaluation,
    artifacts: Vec<Artifact>,
    floor: Option<f32>,
) -> Result<Vec<Artifact>> {
    let config = run.runtime.config();
    let web_search = run.runtime.components.web_search.is_some()
        && config.web_search_enabled
        && run.request.use_web_search;
    let steps = plan(ev.verdict, config, PlanState { web_search });
    let mut work = JudgedList::new(
        artifacts,
        ev.clone(),
        floor,
        config.ambiguous_filter_threshold,
        run.request.query.as_str(),
    );
    let mut tried = Vec::new();
    for step in steps {
        tracing::debug!(action = step.name, "corrective action");
        let before = work.evaluation.score;
        work = step.action.apply(run, work).await?;
        if let Some(attempt) = step.action.attempt() {
            tried.push(attempt);
            if work.evaluation.score <= before {
                work = retry(run, work, &mut tried).await?;
            }
        }
    }
    Ok(work.artifacts)
}

/// Appends the results of `tail` that the corrected head does not hold (as chunks, or as
/// documents when retrieval ranks documents), in order.
fn append_unseen(
    scope: RetrievalScope,
    head: &mut Vec<Artifact>,
    tail: impl IntoIterator<Item = Artifact>,
) {
    let mut seen: std::collections::HashSet<String> = head
        .iter()
        .map(|a| scope.result_key(&a.chunk).to_owned())
        .collect();
    head.extend(
        tail.into_iter()
            .filter(|a| seen.insert(scope.result_key(&a.chunk).to_owned())),
    );
}

fn record(runtime: &CragRuntime, outcome: &QueryOutcome) {
    let decision = outcome.decision();
    let strategy = outcome.correction_strategy();
    let kinds: Vec<&str> = outcome
        .corrections
        .iter()
        .filter(|c| c.kind != CorrectionKind::Keep)
        .map(|c| c.kind.as_str())
        .collect();
    let score = outcome.evaluation.as_ref().map(|e| e.score);
    runtime
        .metrics()
        .record(decision, strategy, &kinds, score, outcome.timings.total);
    tracing::info!(
        target: "crag::query",
        route = outcome.route.route.as_str(),
        verdict = decision,
        score = score.unwrap_or(f32::NAN),
        correction = strategy,
        web_search_used = outcome.web_search_used,
        original = outcome.original_count,
        artifacts = outcome.artifacts.len(),
        tokens = outcome.tokens_used,
        latency_ms = outcome.timings.total.as_secs_f64() * 1000.0,
        "query answered"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crag::artifact::ArtifactOrigin;
    use crag_ports::testsuite::chunk;

    fn artifact(document: &str, ordinal: usize) -> Artifact {
        Artifact::unscored(
            chunk(document, ordinal, "", "text"),
            ArtifactOrigin::Index,
            0,
        )
    }

    fn ids(list: &[Artifact]) -> Vec<&str> {
        list.iter().map(|a| a.chunk.id.as_str()).collect()
    }

    #[test]
    fn a_document_the_head_shows_is_not_appended_again_as_another_chunk() {
        let tail = || vec![artifact("a", 2), artifact("b", 0), artifact("a", 0)];
        let mut head = vec![artifact("a", 0)];
        append_unseen(RetrievalScope::Documents, &mut head, tail());
        assert_eq!(ids(&head), ["a#0", "b#0"]);
        let mut head = vec![artifact("a", 0)];
        append_unseen(RetrievalScope::Chunks, &mut head, tail());
        assert_eq!(ids(&head), ["a#0", "a#2", "b#0"]);
    }
}
