//! [`Engine::ask`]: the CGRAG loop. Each pass detects the gaps of the context, reads them
//! into the state (`pass.rs`), asks the pure plan (`plan.rs`) whether to stop or fetch, and
//! fetches; the steps that do IO (the first retrieval, the detection, the gaps' retrieval, the
//! session's update) are the small methods below.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crag_core::{CachedNode, ChatTurn, ChunkFilter, Session, SessionUpdate};
use crag_gaps::gap_key;
use crag_ports::GapReport;

use super::citations::clean_citations;
use super::neighbourhood::fit;
use super::pass::{items, pack, AskState};
use super::plan::{next, Next};
use super::targeted::{retrieve_gap, Targeting};
use super::{AskOutcome, AskRequest, CgragComponents, PassReport, StopReason};
use crate::crag::guard::{guarded, Guarded};
use crate::crag::{Artifact, ArtifactOrigin, QueryOutcome, QueryRequest};
use crate::engine::Engine;
use crate::error::{EngineError, Result};

/// Why a request naming a session is refused by an engine with no session store.
pub const SESSIONS_OFF: &str =
    "sessions are not configured on this server ([sessions] backend = \"off\")";

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Pass 1's retrieval: the first query's outcome, the context it gives and the ids of the
/// session's cached chunks.
struct FirstPass {
    first: QueryOutcome,
    context: Vec<Artifact>,
    cached_ids: HashSet<String>,
    took: Duration,
}

impl Engine {
    /// The CGRAG parts of this engine.
    pub fn cgrag(&self) -> &CgragComponents {
        &self.cgrag
    }

    /// Answers `request` with CGRAG: the full retrieval, then up to `max_passes` rounds of
    /// "answer and name what is missing" and targeted retrieval of the gaps, within the
    /// session's memory. With an LLM-free detector the answer is `None` and the context is the
    /// result.
    pub async fn ask(&self, request: &AskRequest) -> Result<AskOutcome> {
        self.ask_observed(request, &|_| {}).await
    }

    /// [`Engine::ask`], calling `observer` with each pass's report as soon as the pass ends
    /// (server-sent events, streaming RPCs).
    pub async fn ask_observed(
        &self,
        request: &AskRequest,
        observer: &(dyn Fn(&PassReport) + Send + Sync),
    ) -> Result<AskOutcome> {
        let started = Instant::now();
        let config = &self.cgrag.config;
        let session = self.load_session(request).await?;
        let not_found = session
            .as_ref()
            .map(|s| s.not_found.iter().map(|k| gap_key(k)).collect())
            .unwrap_or_default();
        let pass1 = self.first_pass(request, session.as_ref()).await?;
        let mut state = AskState::new(pass1.context, pass1.took, not_found);
        state.subgraph = session
            .map(|s| {
                s.symbols
                    .into_iter()
                    .map(|t| (t.symbol.clone(), t))
                    .collect()
            })
            .unwrap_or_default();
        let stop = loop {
            let pass = state.passes.len() + 1;
            let (pending, view) = match self.detect(request, &state).await? {
                (Guarded::Done(report), took) => state.triage(pass, report, took),
                (Guarded::FailedOpen(e), took) => (
                    Vec::new(),
                    state.detector_failed(pass, &e.to_string(), took),
                ),
            };
            observer(state.last_pass());
            match next(view, config.max_passes) {
                Next::Stop(reason) => {
                    if reason == StopReason::MaxPasses {
                        state.unresolved.extend(pending.iter().cloned());
                    }
                    break reason;
                }
                Next::Fetch => {
                    self.fetch_gaps(&mut state, &pending, &request.filter)
                        .await?;
                }
            }
        };
        let outcome = self
            .finish(request, state, stop, pass1.first, &pass1.cached_ids)
            .await?;
        self.metrics().record_ask(&outcome);
        Ok(AskOutcome {
            total: started.elapsed(),
            ..outcome
        })
    }

    /// The request's session, if it names one (an error when sessions are not configured).
    async fn load_session(&self, request: &AskRequest) -> Result<Option<Session>> {
        match (request.session, &self.cgrag.sessions) {
            (None, _) => Ok(None),
            (Some(_), None) => Err(EngineError::InvalidInput(SESSIONS_OFF.into())),
            (Some(id), Some(store)) => Ok(store.load(id).await?),
        }
    }

    /// Pass 1's context: the session's cached context first (a follow-up starts from it, and
    /// its prompt from the last one's prefix), then the full retrieval merged with the turns by
    /// the registry of sources.
    async fn first_pass(
        &self,
        request: &AskRequest,
        session: Option<&Session>,
    ) -> Result<FirstPass> {
        let config = &self.cgrag.config;
        let started = Instant::now();
        let first = self
            .query(&QueryRequest {
                use_crag: request.use_crag,
                use_web_search: request.use_web_search,
                filter: request.filter.clone(),
                ..QueryRequest::new(request.question.clone(), request.top_k)
            })
            .await?;
        let turns = session.map_or(&[][..], |s| s.turns.as_slice());
        let history =
            super::sources::history(turns, &config.sources.history, |t| self.count_tokens(t));
        let nodes = session.map_or(&[][..], |s| s.nodes.as_slice());
        let mut candidates = super::sources::session_nodes(
            nodes,
            &config.sources.session,
            config.context_chunks,
            |t| self.count_tokens(t),
        );
        candidates.extend(super::sources::merge(
            &first.artifacts,
            history,
            &config.sources,
        ));
        let context = pack(candidates, config.context_chunks, config.context_tokens);
        Ok(FirstPass {
            first,
            context,
            cached_ids: nodes.iter().map(|n| n.chunk_id.clone()).collect(),
            took: started.elapsed(),
        })
    }

    /// The detector's reading of the state's context, within its time limit and fail mode,
    /// and how long it took.
    async fn detect(
        &self,
        request: &AskRequest,
        state: &AskState,
    ) -> Result<(Guarded<GapReport>, Duration)> {
        let config = &self.cgrag.config;
        let started = Instant::now();
        let report = guarded(
            "the gap detector",
            config.detector_timeout,
            config.detector_fail_mode,
            self.cgrag.detector.detect(
                request.question.as_str(),
                &items(&state.context),
                &state.known_missing(),
            ),
        )
        .await?;
        Ok((report, started.elapsed()))
    }

    /// Retrieves each of `pending` (up to the per-pass limit; the rest stay unresolved) and
    /// builds the next pass's context from the finds: every definition first, then the
    /// neighbours the room left holds, gap by gap.
    async fn fetch_gaps(
        &self,
        state: &mut AskState,
        pending: &[String],
        filter: &ChunkFilter,
    ) -> Result<()> {
        let config = &self.cgrag.config;
        let started = Instant::now();
        let known_ids = state.known_ids();
        let mut finds = Vec::new();
        for gap in pending.iter().take(config.max_gaps_per_pass) {
            let how = Targeting {
                top_k: config.targeted_top_k,
                neighbourhood: config.neighbourhood,
                subgraph: &state.subgraph,
                filter,
            };
            let mut find = retrieve_gap(self, gap, &known_ids, &how).await?;
            state.record_traversed(std::mem::take(&mut find.traversed));
            finds.push((gap, find));
        }
        let definitions: Vec<Artifact> = finds
            .iter()
            .flat_map(|(_, f)| f.found.iter().cloned())
            .collect();
        let (room, mut taken) =
            state.room(&definitions, config.context_chunks, config.context_tokens);
        let candidates = finds
            .iter_mut()
            .map(|(_, f)| std::mem::take(&mut f.neighbours))
            .collect();
        let neighbours = fit(candidates, &mut taken, room);
        for ((gap, find), kept) in finds.iter().zip(&neighbours) {
            state.record_gap(gap, find.lookup, &find.found, kept);
        }
        state
            .unresolved
            .extend(pending.iter().skip(config.max_gaps_per_pass).cloned());
        state.next_context(
            definitions,
            neighbours.into_iter().flatten().collect(),
            config.context_chunks,
            config.context_tokens,
        );
        state.retrieve_time = started.elapsed();
        Ok(())
    }

    /// The outcome of the loop that stopped for `stop`: the answer's citations cleaned, the
    /// session told what this request used and failed to find.
    async fn finish(
        &self,
        request: &AskRequest,
        mut state: AskState,
        stop: StopReason,
        first: QueryOutcome,
        cached_ids: &HashSet<String>,
    ) -> Result<AskOutcome> {
        let parts = &self.cgrag;
        let context = std::mem::take(&mut state.context);
        let mut citations_removed = 0;
        let answer = state.answer.take().map(|text| {
            let (clean, removed) = clean_citations(&text, context.len());
            citations_removed = removed;
            clean
        });
        let context_from_cache = context
            .iter()
            .filter(|a| cached_ids.contains(a.chunk.id.as_str()))
            .count();
        if let (Some(id), Some(store)) = (request.session, &parts.sessions) {
            let update = SessionUpdate {
                nodes: context
                    .iter()
                    // Turns are kept as turns, not as cached context.
                    .filter(|a| a.origin != ArtifactOrigin::History)
                    .map(|a| CachedNode {
                        chunk_id: a.chunk.id.as_str().to_owned(),
                        source: a.chunk.source.clone(),
                        text: a.chunk.text.clone(),
                    })
                    .collect(),
                not_found: std::mem::take(&mut state.new_not_found),
                symbols: std::mem::take(&mut state.traversed),
                turn: Some(ChatTurn {
                    question: request.question.as_str().to_owned(),
                    answer: answer.clone(),
                    model: parts
                        .detector
                        .answers()
                        .then(|| parts.detector.name().to_owned()),
                    tokens: state.model_tokens,
                    at_ms: now_ms(),
                }),
            };
            store
                .save(id, &update, parts.config.max_cached_nodes, now_ms())
                .await?;
        }
        Ok(AskOutcome {
            session_id: request.session,
            answer,
            detector: parts.detector.name().to_owned(),
            tokens_used: context.iter().map(|a| a.tokens).sum(),
            artifacts: context,
            first,
            passes: state.passes,
            stop,
            gaps_identified: state.identified.len(),
            gaps_resolved: state.resolved.len(),
            gaps_unresolved: state.unresolved.len(),
            identified_gaps: state.identified_names,
            resolved_gaps: state.resolved,
            unresolved_gaps: state.unresolved,
            context_from_cache,
            citations_removed,
            model_tokens: state.model_tokens,
            warnings: state.warnings,
            total: Duration::ZERO,
        })
    }
}
