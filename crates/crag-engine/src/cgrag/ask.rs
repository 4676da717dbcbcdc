//! [`Engine::ask`]: the CGRAG loop.

use std::collections::HashSet;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crag_core::{CachedNode, ChatTurn, Session, SessionUpdate};
use crag_gaps::gap_key;
use crag_ports::{ContextItem, GapReport};

use super::citations::clean_citations;
use super::targeted::retrieve_gap;
use super::{AskOutcome, AskRequest, CgragComponents, GapResolution, PassReport, StopReason};
use crate::crag::guard::{guarded, Guarded};
use crate::crag::{Artifact, ArtifactOrigin, QueryRequest};
use crate::engine::Engine;
use crate::error::{EngineError, Result};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The context the detector reads: `artifacts` in order, without repeats, within the chunk and
/// token limits.
fn pack(artifacts: Vec<Artifact>, max_chunks: usize, max_tokens: usize) -> Vec<Artifact> {
    let mut seen = HashSet::new();
    let mut tokens = 0;
    let mut out = Vec::new();
    for a in artifacts {
        if out.len() == max_chunks {
            break;
        }
        if !seen.insert(a.chunk.id.as_str().to_owned()) {
            continue;
        }
        if tokens + a.tokens > max_tokens && !out.is_empty() {
            continue;
        }
        tokens += a.tokens;
        out.push(a);
    }
    out
}

fn items(artifacts: &[Artifact]) -> Vec<ContextItem> {
    artifacts
        .iter()
        .map(|a| ContextItem {
            id: a.chunk.id.as_str().to_owned(),
            source: a.chunk.source.clone(),
            text: a.chunk.text.clone(),
        })
        .collect()
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
        let parts = &self.cgrag;
        let config = &parts.config;
        let mut warnings = Vec::new();

        let session: Option<Session> = match (request.session, &parts.sessions) {
            (None, _) => None,
            (Some(_), None) => {
                return Err(EngineError::InvalidInput(
                    "sessions are not configured on this server ([sessions] backend)".into(),
                ))
            }
            (Some(id), Some(store)) => store.load(id).await?,
        };
        let mut not_found: HashSet<String> = session
            .as_ref()
            .map(|s| s.not_found.iter().map(|k| gap_key(k)).collect())
            .unwrap_or_default();
        let mut new_not_found: Vec<String> = Vec::new();

        // Pass 1: the session's cached context first (a follow-up starts from it, and its
        // prompt from the last one's prefix), then the full retrieval merged with the turns.
        let retrieve_started = Instant::now();
        let first = self
            .query(&QueryRequest {
                use_crag: request.use_crag,
                use_web_search: request.use_web_search,
                filter: request.filter.clone(),
                ..QueryRequest::new(request.question.clone(), request.top_k)
            })
            .await?;
        // The registry of sources: the retrieval by kind, and the session's turns.
        let turns = session.as_ref().map_or(&[][..], |s| s.turns.as_slice());
        let history =
            super::sources::history(turns, &config.sources.history, |t| self.count_tokens(t));
        let nodes = session.as_ref().map_or(&[][..], |s| s.nodes.as_slice());
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
        let cached_ids: HashSet<&str> = nodes.iter().map(|n| n.chunk_id.as_str()).collect();
        let mut context = pack(candidates, config.context_chunks, config.context_tokens);
        // Pass 1's context, and what the gap passes fetched since (in the order fetched).
        let base = context.clone();
        let mut gathered: Vec<Artifact> = Vec::new();
        let mut retrieve_time = retrieve_started.elapsed();
        let mut retrieved: Vec<GapResolution> = Vec::new();

        let mut passes = Vec::new();
        let mut identified: HashSet<String> = HashSet::new();
        let (mut resolved, mut unresolved) = (0usize, 0usize);
        let mut model_tokens = 0u32;
        let mut answer: Option<String> = None;
        let stop = loop {
            let pass = passes.len() + 1;
            let known: Vec<String> = {
                let mut k: Vec<String> = not_found.iter().cloned().collect();
                k.sort();
                k
            };
            let detect_started = Instant::now();
            let report = match guarded(
                "the gap detector",
                config.detector_timeout,
                config.detector_fail_mode,
                parts
                    .detector
                    .detect(request.question.as_str(), &items(&context), &known),
            )
            .await?
            {
                Guarded::Done(report) => report,
                Guarded::FailedOpen(e) => {
                    warnings.push(format!("gap detector failed, context returned as is: {e}"));
                    passes.push(PassReport {
                        pass,
                        retrieved: std::mem::take(&mut retrieved),
                        context_chunks: context.len(),
                        retrieve: retrieve_time,
                        detect: detect_started.elapsed(),
                        ..PassReport::default()
                    });
                    observer(&passes[passes.len() - 1]);
                    break StopReason::DetectorFailed;
                }
            };
            let detect = detect_started.elapsed();
            let GapReport {
                answer: written,
                gaps,
                parsed,
                warnings: detector_warnings,
                tokens,
                external,
                ..
            } = report;
            // Names the corpus does not define: known missing from now on, never searched.
            let mut skipped = Vec::new();
            for name in external {
                let key = gap_key(&name);
                if key.is_empty() || !identified.insert(key.clone()) {
                    continue;
                }
                unresolved += 1;
                if not_found.insert(key.clone()) {
                    new_not_found.push(key);
                }
                skipped.push(name);
            }
            model_tokens = model_tokens.saturating_add(tokens);
            if written.is_some() {
                answer = written;
            }
            let mut pending = Vec::new();
            let mut keys = HashSet::new();
            for gap in &gaps {
                let key = gap_key(gap);
                if key.is_empty() || !keys.insert(key.clone()) {
                    continue;
                }
                identified.insert(key.clone());
                if not_found.contains(&key) {
                    unresolved += 1;
                    skipped.push(gap.clone());
                } else {
                    pending.push(gap.clone());
                }
            }
            passes.push(PassReport {
                pass,
                retrieved: std::mem::take(&mut retrieved),
                context_chunks: context.len(),
                gaps: gaps.clone(),
                skipped: skipped.clone(),
                parsed,
                warnings: detector_warnings,
                retrieve: retrieve_time,
                detect,
            });
            observer(&passes[passes.len() - 1]);
            if gaps.is_empty() && passes[passes.len() - 1].skipped.is_empty() {
                break StopReason::NoGaps;
            }
            if pending.is_empty() {
                break StopReason::AllNotFound;
            }
            if pass >= config.max_passes {
                unresolved += pending.len();
                break StopReason::MaxPasses;
            }

            // The next pass's context: each gap's retrieval, then what the context held.
            let retrieve_started = Instant::now();
            let known_ids: HashSet<String> = context
                .iter()
                .chain(&gathered)
                .chain(&base)
                .map(|a| a.chunk.id.as_str().to_owned())
                .collect();
            let mut fetched = Vec::new();
            for gap in pending.iter().take(config.max_gaps_per_pass) {
                let (lookup, found) =
                    retrieve_gap(self, gap, &known_ids, config.targeted_top_k).await?;
                let chunk_ids: Vec<String> = found
                    .iter()
                    .map(|a| a.chunk.id.as_str().to_owned())
                    .collect();
                if found.is_empty() {
                    unresolved += 1;
                    let key = gap_key(gap);
                    not_found.insert(key.clone());
                    new_not_found.push(key);
                } else {
                    resolved += 1;
                }
                retrieved.push(GapResolution {
                    gap: gap.clone(),
                    lookup,
                    chunk_ids,
                });
                fetched.extend(found);
            }
            unresolved += pending.len().saturating_sub(config.max_gaps_per_pass);
            // Kept first: pass 1's best chunk (what the question is about), then everything the
            // gap passes fetched, earliest first (a later pass never evicts an earlier find),
            // then the rest of pass 1, within the limits. Shown in a stable order: pass 1's
            // kept chunks as they were, then the finds, so each prompt starts as the last did.
            gathered.append(&mut fetched);
            let head = base.len().min(1);
            let merged: Vec<Artifact> = base[..head]
                .iter()
                .chain(&gathered)
                .chain(&base[head..])
                .cloned()
                .collect();
            context = pack(merged, config.context_chunks, config.context_tokens);
            let from_base: HashSet<&str> = base.iter().map(|a| a.chunk.id.as_str()).collect();
            context.sort_by_key(|a| !from_base.contains(a.chunk.id.as_str()));
            retrieve_time = retrieve_started.elapsed();
        };

        let mut citations_removed = 0;
        if let Some(text) = answer.take() {
            let (clean, removed) = clean_citations(&text, context.len());
            citations_removed = removed;
            answer = Some(clean);
        }
        let context_from_cache = context
            .iter()
            .filter(|a| cached_ids.contains(a.chunk.id.as_str()))
            .count();

        // Remember what this request used and failed to find.
        let session_id = request.session;
        if let (Some(id), Some(store)) = (session_id, &parts.sessions) {
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
                not_found: new_not_found,
                turn: Some(ChatTurn {
                    question: request.question.as_str().to_owned(),
                    answer: answer.clone(),
                    model: parts
                        .detector
                        .answers()
                        .then(|| parts.detector.name().to_owned()),
                    tokens: model_tokens,
                    at_ms: now_ms(),
                }),
            };
            store
                .save(id, &update, config.max_cached_nodes, now_ms())
                .await?;
        }
        let tokens_used = context.iter().map(|a| a.tokens).sum();
        Ok(AskOutcome {
            session_id,
            answer,
            detector: parts.detector.name().to_owned(),
            artifacts: context,
            first,
            passes,
            stop,
            gaps_identified: identified.len(),
            gaps_resolved: resolved,
            gaps_unresolved: unresolved,
            context_from_cache,
            citations_removed,
            tokens_used,
            model_tokens,
            warnings,
            total: started.elapsed(),
        })
    }
}
