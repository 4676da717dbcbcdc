//! The state of one query while it runs, and the stages every path shares: the first
//! retrieval (routed, reranked), evaluation and fusion of a further retrieval.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use crag_core::{
    ChunkId, Correction, EvalDocument, Evaluation, FusedHit, Query, RetrievalSignals, ScoredChunk,
    TopK,
};
use crag_expansion::fuse_weighted;
use crag_ports::{ErrorKind, PortError, Reranker};
use crag_routing::{Route, RoutingDecision};

use super::artifact::Artifact;
use super::components::CragRuntime;
use super::config::FailMode;
use super::guard::Guarded;
use super::outcome::QueryRequest;
use super::rerank::{rerank, RerankOutcome};
use super::timings::{QueryTimings, Stage};
use crate::engine::{Engine, Retrieval, RetrievalTimings};
use crate::error::Result;

/// Mutable state of one query.
pub(crate) struct QueryState<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) runtime: &'a CragRuntime,
    pub(crate) request: &'a QueryRequest,
    /// When the query started (a correction retry starts only within its time limit).
    pub(crate) started: Instant,
    pub(crate) timings: QueryTimings,
    pub(crate) warnings: Vec<String>,
    pub(crate) corrections: Vec<Correction>,
    pub(crate) web_search_used: bool,
    /// The embedding of the query by the first retrieval's vector leg, when it ran.
    pub(crate) query_vector: Option<Vec<f32>>,
    /// Results judged and corrected: the request's `top_k`, at most `judge_depth`.
    pub(crate) head_k: TopK,
    /// Chunks a correction removed on the evaluator's evidence (the filter): they do not
    /// come back below the judged depth.
    pub(crate) discarded: HashSet<ChunkId>,
    /// What the knowledge-graph route added to the query, for the route's reason.
    pub(crate) graph_note: Option<String>,
    /// The first retrieval's keyword leg, for a further retrieval of the same index terms.
    first_keyword: Option<FirstKeyword>,
}

/// The keyword leg of the first retrieval of the query's own text.
struct FirstKeyword {
    /// The query's index terms, sorted (repeats kept).
    terms: Vec<String>,
    hits: Arc<Vec<ScoredChunk>>,
}

/// The first retrieval: artifacts (reranked when configured), the vector leg's floor and what
/// the rerank stage did.
pub(crate) struct FirstRetrieval {
    pub(crate) artifacts: Vec<Artifact>,
    pub(crate) floor: Option<f32>,
    pub(crate) rerank: Option<RerankOutcome>,
}

impl<'a> QueryState<'a> {
    pub(crate) fn new(engine: &'a Engine, request: &'a QueryRequest) -> Self {
        Self {
            engine,
            runtime: engine.crag_runtime(),
            request,
            started: Instant::now(),
            timings: QueryTimings::default(),
            warnings: Vec::new(),
            corrections: Vec::new(),
            web_search_used: false,
            query_vector: None,
            head_k: TopK::new(
                request
                    .top_k
                    .get()
                    .min(engine.crag_runtime().config().judge_depth),
            )
            .unwrap_or(request.top_k),
            discarded: HashSet::new(),
            graph_note: None,
            first_keyword: None,
        }
    }

    /// The first retrieval, reranked when a reranker is configured and allowed.
    pub(crate) async fn first_retrieval(
        &mut self,
        route: &RoutingDecision,
    ) -> Result<FirstRetrieval> {
        let runtime = self.runtime;
        let request = self.request;
        let reranker = runtime
            .components
            .reranker
            .as_ref()
            .filter(|_| request.use_rerank && runtime.config().rerank.enabled);
        let feedback = runtime.config().feedback_rerank;
        // Part of Corrective RAG: plain retrieval (`use_crag` off) keeps the fused order.
        let feedback = (request.use_crag
            && reranker.is_none()
            && feedback.enabled
            && route.route != Route::MultiStep)
            .then_some(feedback);
        let depth = match (reranker, feedback) {
            (Some(_), _) => TopK::new(runtime.config().rerank.coarse_k.max(request.top_k.get()))?,
            (None, Some(f)) => TopK::new(f.depth.max(request.top_k.get()))?,
            (None, None) => request.top_k,
        };
        let t = Instant::now();
        let (hits, floor, retrieval) = self.retrieve_routed(route, depth).await?;
        self.timings.add(Stage::Retrieve, t.elapsed());
        self.timings.retrieval = retrieval;
        let (scored, outcome) = match (reranker, feedback) {
            (Some(r), _) => {
                let (scored, outcome) = self.rerank(r.as_ref(), hits).await?;
                (scored, Some(outcome))
            }
            (None, Some(f)) => {
                let mut hits = self.feedback_rerank(hits, &f).await?;
                hits.truncate(request.top_k.get());
                (hits.into_iter().map(|h| (h, None)).collect(), None)
            }
            (None, None) => (hits.into_iter().map(|h| (h, None)).collect(), None),
        };
        let artifacts = scored
            .into_iter()
            .map(|(h, s)| {
                let mut a = Artifact::from_hit(h);
                a.rerank = s;
                a
            })
            .collect();
        Ok(FirstRetrieval {
            artifacts,
            floor,
            rerank: outcome,
        })
    }

    /// The query itself, plus its parts for multi-step questions, fused by RRF (the query
    /// weighing as much as its parts together) into the judged head; the query's own results
    /// follow.
    async fn retrieve_routed(
        &mut self,
        route: &RoutingDecision,
        top_k: TopK,
    ) -> Result<(Vec<FusedHit>, Option<f32>, RetrievalTimings)> {
        if route.route == Route::KnowledgeGraph {
            if let Some(found) = self.retrieve_graph(top_k).await? {
                return Ok(found);
            }
        }
        let main = self
            .engine
            .retrieve_fused(
                &self.request.query,
                top_k,
                &self.request.filter,
                self.request.fusion,
            )
            .await?;
        self.warnings.extend(main.warnings.iter().cloned());
        self.query_vector = main.query_vector.clone();
        self.first_keyword = Some(FirstKeyword {
            terms: self.index_terms(self.request.query.as_str()),
            hits: Arc::clone(&main.keyword_hits),
        });
        if route.route != Route::MultiStep || route.sub_queries.is_empty() {
            return Ok((main.hits, main.vector_floor, main.timings));
        }
        let subs: Vec<Query> = route
            .sub_queries
            .iter()
            .filter_map(|q| Query::new(q).ok())
            .collect();
        let results = futures::future::join_all(subs.iter().map(|q| {
            self.engine
                .retrieve_fused(q, top_k, &self.request.filter, self.request.fusion)
        }))
        .await;
        let mut lists = vec![main.hits];
        let mut floor = main.vector_floor;
        for (q, r) in subs.iter().zip(results) {
            match r {
                Ok(r) => {
                    floor = min_option(floor, r.vector_floor);
                    self.warnings.extend(r.warnings);
                    lists.push(r.hits);
                }
                Err(e) => self.fall_back(format!("sub-query `{}` failed: {e}", q.as_str()))?,
            }
        }
        let weights = multi_step_weights(lists.len() - 1);
        let scope = self.engine.config().scope;
        let fused = fuse_weighted(
            &lists,
            &weights,
            |h: &FusedHit| scope.result_key(&h.chunk).to_owned(),
            self.engine.rrf_k(),
        );
        // The parts shape the judged head only; below it the question's own ranking goes on,
        // so what the parts add can push the question's results down by the head's size at
        // most (fused to the full depth, they pushed its relevant ranks 65 and 76 out of a top
        // 100 on Cranfield).
        let mut hits: Vec<FusedHit> = fused
            .into_iter()
            .take(self.head_k.get().min(top_k.get()))
            .map(|f| f.item)
            .collect();
        let mut seen: HashSet<String> = hits
            .iter()
            .map(|h| scope.result_key(&h.chunk).to_owned())
            .collect();
        let own = lists.swap_remove(0);
        hits.extend(
            own.into_iter()
                .filter(|h| seen.insert(scope.result_key(&h.chunk).to_owned())),
        );
        hits.truncate(top_k.get());
        Ok((hits, floor, main.timings))
    }

    /// The knowledge-graph route: the query expanded by related terms. `None` (with a
    /// warning) when there is no term graph or reading it failed (an error under
    /// `crag.strict`): the caller retrieves the query as asked.
    async fn retrieve_graph(
        &mut self,
        top_k: TopK,
    ) -> Result<Option<(Vec<FusedHit>, Option<f32>, RetrievalTimings)>> {
        if !self.engine.has_term_graph() {
            self.warnings.push(
                "the knowledge_graph route needs a term graph ([knowledge_graph] enabled = true): single retrieval"
                    .into(),
            );
            return Ok(None);
        }
        let request = self.request;
        match self
            .engine
            .retrieve_graph(&request.query, top_k, &request.filter, request.fusion)
            .await
        {
            Ok((r, expansion)) => {
                self.graph_note = Some(expansion.describe());
                self.warnings.extend(r.warnings);
                self.query_vector = r.query_vector;
                Ok(Some((r.hits, r.vector_floor, r.timings)))
            }
            Err(e) => {
                tracing::warn!(error = %e, "knowledge-graph retrieval failed");
                self.fall_back(format!(
                    "knowledge-graph retrieval failed ({e}): single retrieval"
                ))?;
                Ok(None)
            }
        }
    }

    /// A step that could not be carried out: a warning, and the query goes on without it; under
    /// `crag.strict` the query fails (unavailable) with the same message.
    pub(crate) fn fall_back(&mut self, warning: String) -> Result<()> {
        if self.runtime.config().strict {
            return Err(
                PortError::new(ErrorKind::Unavailable, format!("{warning} (crag.strict)")).into(),
            );
        }
        self.warnings.push(warning);
        Ok(())
    }

    /// Second stage: cross-encoder scores, threshold, final k; honours the fail mode.
    #[allow(clippy::type_complexity)]
    async fn rerank(
        &mut self,
        reranker: &dyn Reranker,
        hits: Vec<FusedHit>,
    ) -> Result<(
        Vec<(FusedHit, Option<crag_ports::RerankScore>)>,
        RerankOutcome,
    )> {
        let config = &self.runtime.config().rerank;
        let top_k = self.request.top_k.get();
        let t = Instant::now();
        let fallback = hits.iter().take(top_k).cloned().collect::<Vec<_>>();
        let result = rerank(
            reranker,
            &self.runtime.rerank_cache,
            config,
            self.request.query.as_str(),
            hits,
            top_k,
        )
        .await;
        self.timings.add(Stage::Rerank, t.elapsed());
        match result {
            Ok((scored, outcome)) => {
                if outcome.skipped.is_none() {
                    self.runtime.metrics().rerank_cache(outcome.cache_hit);
                }
                Ok((scored, outcome))
            }
            Err(e) if self.runtime.config().fail_mode(config.fail_mode) == FailMode::Open => {
                tracing::warn!(error = %e, "reranking failed");
                self.warnings.push(format!("reranking failed: {e}"));
                let outcome = RerankOutcome {
                    model_id: reranker.model_id().to_owned(),
                    candidates: fallback.len(),
                    kept: fallback.len(),
                    skipped: Some(format!("the reranker failed: {e}")),
                    cache_hit: false,
                };
                Ok((fallback.into_iter().map(|h| (h, None)).collect(), outcome))
            }
            Err(e) => Err(e),
        }
    }

    /// Judges `artifacts` against the request's query and stores each one's score; `None`
    /// when the evaluator failed open.
    pub(crate) async fn evaluate(
        &mut self,
        artifacts: &mut [Artifact],
        floor: Option<f32>,
    ) -> Result<Option<Evaluation>> {
        let docs = eval_documents(artifacts, floor);
        let evaluator = &self.runtime.components.evaluator;
        let t = Instant::now();
        let result = self
            .runtime
            .judge(
                &self.request.query,
                &docs,
                self.runtime
                    .config()
                    .fail_mode(self.runtime.config().evaluator_fail_mode),
            )
            .await;
        self.timings.add(Stage::Evaluate, t.elapsed());
        match result {
            Ok(Guarded::Done(ev)) => {
                for (a, s) in artifacts.iter_mut().zip(&ev.document_scores) {
                    a.relevance = *s;
                }
                Ok(Some(ev))
            }
            Ok(Guarded::FailedOpen(failure)) => {
                self.warnings.push(format!(
                    "evaluator `{}` failed: {failure}",
                    evaluator.name()
                ));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Retrieves again with `query` (the judged depth, each leg `further_leg_depth` deep, the
    /// request's filter).
    pub(crate) async fn retrieve_again(&mut self, query: &Query) -> Result<Retrieval> {
        let depth = self.runtime.config().further_leg_depth;
        // A query of the same index terms, repeats included (a rewrite that drops only
        // words the index does not keep) gets the same BM25 hits: the first retrieval's,
        // which went at least as deep, instead of a second search.
        let reused = self
            .first_keyword
            .as_ref()
            .filter(|first| {
                depth <= self.engine.config().leg_depth
                    && !first.hits.is_empty()
                    && first.terms == self.index_terms(query.as_str())
            })
            .map(|first| Arc::clone(&first.hits));
        let r = self
            .engine
            .retrieve_at_depth(
                query,
                self.head_k,
                Some(depth),
                &self.request.filter,
                self.request.fusion,
                reused.as_deref().map(Vec::as_slice),
            )
            .await?;
        self.warnings.extend(r.warnings.iter().cloned());
        Ok(r)
    }

    /// `text`'s index terms as the keyword index analyses it, sorted.
    fn index_terms(&self, text: &str) -> Vec<String> {
        let mut terms = self.engine.keyword_index().analyze(text);
        terms.sort_unstable();
        terms
    }

    /// Fuses `current` (weight 1) with `new` (weight `weight` <= 1) by weighted RRF,
    /// de-duplicated by result (the chunk, or its document when retrieval ranks documents:
    /// a document `new` shows as another chunk adds to the one `current` shows), cut to the
    /// judged depth (or `current`'s length if longer); and how many documents are new.
    pub(crate) fn fuse_with(
        &self,
        current: &[Artifact],
        new: Vec<Artifact>,
        weight: f32,
    ) -> (Vec<Artifact>, usize) {
        let scope = self.engine.config().scope;
        let before: HashSet<&str> = current.iter().map(|a| scope.result_key(&a.chunk)).collect();
        let fused = fuse_weighted(
            &[current.to_vec(), new],
            &[1.0, weight],
            |a: &Artifact| scope.result_key(&a.chunk).to_owned(),
            self.engine.rrf_k(),
        );
        let merged: Vec<Artifact> = fused
            .into_iter()
            .take(self.head_k.get().max(current.len()))
            .map(|f| f.item)
            .collect();
        let added = merged
            .iter()
            .filter(|a| !before.contains(scope.result_key(&a.chunk)))
            .count();
        (merged, added)
    }
}

/// What the evaluator sees: similarity is the cosine from the vector leg, or the leg's floor
/// (an upper bound) for chunks the vector leg did not return; the retrieval signals are each
/// leg's rank and score, the fused scores and the rerank probability as the artifact holds them.
pub(crate) fn eval_documents(artifacts: &[Artifact], floor: Option<f32>) -> Vec<EvalDocument> {
    artifacts
        .iter()
        .map(|a| {
            // The vector leg scores 1 - d/2 with d the cosine distance, so cosine = 2s - 1.
            let leg = a.vector.map(|v| v.score).or(floor).unwrap_or(0.5);
            let text = if a.chunk.title.is_empty() {
                a.chunk.text.clone()
            } else {
                format!("{}\n{}", a.chunk.title, a.chunk.text)
            };
            EvalDocument::new(
                a.chunk.id.to_string(),
                a.chunk.source.clone(),
                text,
                (2.0 * leg - 1.0).clamp(0.0, 1.0),
            )
            .with_retrieval(RetrievalSignals {
                keyword: a.keyword,
                vector: a.vector,
                fused_score: a.fused_score,
                normalized_score: a.normalized_score,
                rerank_probability: a.rerank.map(|r| r.probability),
            })
        })
        .collect()
}

pub(crate) fn min_option(a: Option<f32>, b: Option<f32>) -> Option<f32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Weights of a multi-step question's lists, its own first: the question as asked weighs as
/// much as all its parts together (the rule of every expansion: the original list weighs at
/// least as much as what is added to it), each part 1.
fn multi_step_weights(parts: usize) -> Vec<f32> {
    std::iter::once(parts.max(1) as f32)
        .chain(std::iter::repeat_n(1.0, parts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_step_question_outweighs_each_of_its_parts() {
        assert_eq!(multi_step_weights(0), [1.0]);
        assert_eq!(multi_step_weights(3), [3.0, 1.0, 1.0, 1.0]);
        // "q" is first for the question and absent from the parts; "a" is first in one part
        // and second in another. Equal weights would put "a" first.
        let lists = [vec!["q", "b"], vec!["a", "c"], vec!["d", "a"]];
        let fused = fuse_weighted(&lists, &multi_step_weights(2), |s: &&str| *s, 60.0);
        assert_eq!(fused[0].item, "q");
        let equal = fuse_weighted(&lists, &[1.0; 3], |s: &&str| *s, 60.0);
        assert_eq!(equal[0].item, "a");
    }
}
