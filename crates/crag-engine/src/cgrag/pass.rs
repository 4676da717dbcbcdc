//! The state of a CGRAG request from pass to pass, and the pure steps on it: reading a
//! detector's report into the gaps to fetch ([`AskState::triage`]), recording each gap's
//! retrieval ([`AskState::record_gap`]) and building the next pass's context from pass 1's
//! and the gaps' finds ([`AskState::next_context`]). No IO: the loop in `ask.rs` calls the
//! detector and the retrievals and hands their results here.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crag_core::TraversedSymbol;
use crag_gaps::gap_key;
use crag_ports::{ContextItem, GapReport};

use super::neighbourhood::Room;
use super::plan::PassView;
use super::{GapResolution, PassReport};
use crate::crag::Artifact;

/// The context the detector reads: `artifacts` in order, without repeats, within the chunk and
/// token limits.
pub(crate) fn pack(
    artifacts: Vec<Artifact>,
    max_chunks: usize,
    max_tokens: usize,
) -> Vec<Artifact> {
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

/// The detector's view of `artifacts`.
pub(crate) fn items(artifacts: &[Artifact]) -> Vec<ContextItem> {
    artifacts
        .iter()
        .map(|a| ContextItem {
            id: a.chunk.id.as_str().to_owned(),
            source: a.chunk.source.clone(),
            text: a.chunk.text.clone(),
        })
        .collect()
}

/// What a CGRAG request carries from pass to pass.
#[derive(Debug, Default)]
pub(crate) struct AskState {
    /// Gap keys known not to exist: the session's, and those found missing since.
    pub not_found: HashSet<String>,
    /// Keys this request adds to the session's not-found set.
    pub new_not_found: Vec<String>,
    /// Distinct gap keys named over all passes.
    pub identified: HashSet<String>,
    /// The gaps named over all passes, each as first named, in order.
    pub identified_names: Vec<String>,
    /// Gaps whose retrieval added context.
    pub resolved: Vec<String>,
    /// Gaps that found nothing, were known missing, external, or left over.
    pub unresolved: Vec<String>,
    /// Tokens of the detector's model calls.
    pub model_tokens: u32,
    /// The last answer the detector wrote.
    pub answer: Option<String>,
    /// Things that went wrong without failing the request.
    pub warnings: Vec<String>,
    /// One report per pass run.
    pub passes: Vec<PassReport>,
    /// Pass 1's context.
    pub base: Vec<Artifact>,
    /// The definitions (and other finds) the gap passes fetched, in the order fetched.
    pub gathered: Vec<Artifact>,
    /// The neighbour chunks the gap passes fetched, in the order fetched: kept after every
    /// find of `gathered`, so a later pass's definitions never lose their place to them.
    pub neighbours: Vec<Artifact>,
    /// Ids of the gap passes' chunks in the order fetched (definitions and neighbours of each
    /// pass in turn): the order they are shown in.
    pub fetch_order: Vec<String>,
    /// The context the next detection reads.
    pub context: Vec<Artifact>,
    /// The gap retrievals that built `context` (reported with the pass that reads it).
    pub retrieved: Vec<GapResolution>,
    /// Time spent building `context`.
    pub retrieve_time: Duration,
    /// The session's traversed subgraph, by qualified path.
    pub subgraph: HashMap<String, TraversedSymbol>,
    /// The symbols whose neighbourhood this request took, in order.
    pub traversed: Vec<TraversedSymbol>,
}

impl AskState {
    /// The state before pass 1's detection: its context, the time it took, and the not-found
    /// keys of the session.
    pub(crate) fn new(
        context: Vec<Artifact>,
        retrieve_time: Duration,
        not_found: HashSet<String>,
    ) -> Self {
        Self {
            not_found,
            base: context.clone(),
            context,
            retrieve_time,
            ..Self::default()
        }
    }

    /// The not-found keys in a stable order, for the detector.
    pub(crate) fn known_missing(&self) -> Vec<String> {
        let mut known: Vec<String> = self.not_found.iter().cloned().collect();
        known.sort();
        known
    }

    /// The report of the pass that ran last.
    pub(crate) fn last_pass(&self) -> &PassReport {
        &self.passes[self.passes.len() - 1]
    }

    /// Records pass `pass` whose detector failed open after `detect` (`error` is its message).
    pub(crate) fn detector_failed(
        &mut self,
        pass: usize,
        error: &str,
        detect: Duration,
    ) -> PassView {
        self.warnings.push(format!(
            "gap detector failed, context returned as is: {error}"
        ));
        self.passes.push(PassReport {
            pass,
            retrieved: std::mem::take(&mut self.retrieved),
            context_chunks: self.context.len(),
            retrieve: self.retrieve_time,
            detect,
            ..PassReport::default()
        });
        PassView {
            pass,
            detector_failed: true,
            ..PassView::default()
        }
    }

    /// Reads pass `pass`'s detector `report` (which took `detect`): names external to the
    /// corpus and gaps known missing are skipped (and unresolved), the answer and token count
    /// are kept, the pass is recorded. Returns the gaps left to fetch, in the detector's order
    /// without repeats, and what the decision reads.
    pub(crate) fn triage(
        &mut self,
        pass: usize,
        report: GapReport,
        detect: Duration,
    ) -> (Vec<String>, PassView) {
        let GapReport {
            answer,
            gaps,
            parsed,
            warnings,
            tokens,
            external,
            ..
        } = report;
        // Names the corpus does not define: known missing from now on, never searched.
        let mut skipped = Vec::new();
        for name in external {
            let key = gap_key(&name);
            if key.is_empty() || !self.identified.insert(key.clone()) {
                continue;
            }
            self.identified_names.push(name.clone());
            self.unresolved.push(name.clone());
            if self.not_found.insert(key.clone()) {
                self.new_not_found.push(key);
            }
            skipped.push(name);
        }
        self.model_tokens = self.model_tokens.saturating_add(tokens);
        if answer.is_some() {
            self.answer = answer;
        }
        let mut pending = Vec::new();
        let mut keys = HashSet::new();
        for gap in &gaps {
            let key = gap_key(gap);
            if key.is_empty() || !keys.insert(key.clone()) {
                continue;
            }
            if self.identified.insert(key.clone()) {
                self.identified_names.push(gap.clone());
            }
            if self.not_found.contains(&key) {
                self.unresolved.push(gap.clone());
                skipped.push(gap.clone());
            } else {
                pending.push(gap.clone());
            }
        }
        let view = PassView {
            pass,
            detector_failed: false,
            named: gaps.len(),
            skipped: skipped.len(),
            pending: pending.len(),
        };
        self.passes.push(PassReport {
            pass,
            retrieved: std::mem::take(&mut self.retrieved),
            context_chunks: self.context.len(),
            gaps,
            skipped,
            parsed,
            warnings,
            retrieve: self.retrieve_time,
            detect,
        });
        (pending, view)
    }

    /// Ids of every chunk the request holds, which a gap's retrieval does not fetch again.
    pub(crate) fn known_ids(&self) -> HashSet<String> {
        self.context
            .iter()
            .chain(&self.gathered)
            .chain(&self.neighbours)
            .chain(&self.base)
            .map(|a| a.chunk.id.as_str().to_owned())
            .collect()
    }

    /// What the next context can still take after pass 1's best chunk, the earlier passes'
    /// finds (their neighbours too) and `definitions` (this pass's), within the limits; and the
    /// ids of all those.
    pub(crate) fn room(
        &self,
        definitions: &[Artifact],
        max_chunks: usize,
        max_tokens: usize,
    ) -> (Room, HashSet<String>) {
        let mut taken = HashSet::new();
        let (mut chunks, mut tokens) = (0, 0);
        let head = self.base.len().min(1);
        for a in self.base[..head]
            .iter()
            .chain(&self.gathered)
            .chain(definitions)
            .chain(&self.neighbours)
        {
            if taken.insert(a.chunk.id.as_str().to_owned()) {
                chunks += 1;
                tokens += a.tokens;
            }
        }
        let room = Room {
            chunks: max_chunks.saturating_sub(chunks),
            tokens: max_tokens.saturating_sub(tokens),
        };
        (room, taken)
    }

    /// Records the symbols whose neighbourhood a gap's retrieval took (one taken again replaces
    /// its earlier record).
    pub(crate) fn record_traversed(&mut self, traversed: Vec<TraversedSymbol>) {
        for t in traversed {
            self.traversed.retain(|old| old.symbol != t.symbol);
            self.subgraph.insert(t.symbol.clone(), t.clone());
            self.traversed.push(t);
        }
    }

    /// Records the retrieval of `gap` (looked up by `lookup`), which found `found` and, after
    /// it, the neighbour chunks `neighbours`: nothing found puts the gap in the not-found set.
    pub(crate) fn record_gap(
        &mut self,
        gap: &str,
        lookup: &'static str,
        found: &[Artifact],
        neighbours: &[Artifact],
    ) {
        let ids = |list: &[Artifact]| -> Vec<String> {
            list.iter()
                .map(|a| a.chunk.id.as_str().to_owned())
                .collect()
        };
        let chunk_ids = ids(found);
        if found.is_empty() {
            self.unresolved.push(gap.to_owned());
            let key = gap_key(gap);
            self.not_found.insert(key.clone());
            self.new_not_found.push(key);
        } else {
            self.resolved.push(gap.to_owned());
        }
        self.retrieved.push(GapResolution {
            gap: gap.to_owned(),
            lookup,
            chunk_ids,
            neighbour_ids: ids(neighbours),
        });
    }

    /// The next pass's context after the gaps fetched `fetched` and, after it, the neighbour
    /// chunks `neighbours`. Kept first: pass 1's best chunk (what the question is about), then
    /// everything the gap passes fetched, earliest first (a later pass never evicts an earlier
    /// find), then their neighbours, earliest first, then the rest of pass 1, within the
    /// limits. Shown in a stable order: pass 1's kept chunks as they were, then the gap passes'
    /// chunks in the order fetched, so each prompt starts as the last did.
    pub(crate) fn next_context(
        &mut self,
        mut fetched: Vec<Artifact>,
        mut neighbours: Vec<Artifact>,
        max_chunks: usize,
        max_tokens: usize,
    ) {
        self.fetch_order.extend(
            fetched
                .iter()
                .chain(&neighbours)
                .map(|a| a.chunk.id.as_str().to_owned()),
        );
        self.gathered.append(&mut fetched);
        self.neighbours.append(&mut neighbours);
        let head = self.base.len().min(1);
        let merged: Vec<Artifact> = self.base[..head]
            .iter()
            .chain(&self.gathered)
            .chain(&self.neighbours)
            .chain(&self.base[head..])
            .cloned()
            .collect();
        let mut context = pack(merged, max_chunks, max_tokens);
        let from_base: HashSet<&str> = self.base.iter().map(|a| a.chunk.id.as_str()).collect();
        let order: HashMap<&str, usize> = self
            .fetch_order
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        // Stable: pass 1's chunks keep their order, the others follow in the order fetched.
        context.sort_by_key(|a| {
            let id = a.chunk.id.as_str();
            if from_base.contains(id) {
                (false, 0)
            } else {
                (true, order.get(id).copied().unwrap_or(usize::MAX))
            }
        });
        self.context = context;
    }
}

#[cfg(test)]
mod tests {
    use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, Span};

    use super::*;
    use crate::crag::ArtifactOrigin;

    fn artifact(id: &str, tokens: usize) -> Artifact {
        let text = format!("text of {id}");
        let chunk = Chunk::new(
            ChunkId::new(id).unwrap(),
            DocumentId::new(id).unwrap(),
            id,
            "",
            text.clone(),
            Span::new(0, text.len() as u64, 1, 1).unwrap(),
            ChunkKind::Prose,
            "h",
        )
        .unwrap();
        Artifact::unscored(chunk, ArtifactOrigin::Index, tokens)
    }

    fn ids(list: &[Artifact]) -> Vec<&str> {
        list.iter().map(|a| a.chunk.id.as_str()).collect()
    }

    fn report(gaps: &[&str], external: &[&str]) -> GapReport {
        GapReport {
            gaps: gaps.iter().map(|g| (*g).to_owned()).collect(),
            external: external.iter().map(|g| (*g).to_owned()).collect(),
            parsed: true,
            tokens: 7,
            ..GapReport::default()
        }
    }

    #[test]
    fn pack_keeps_order_drops_repeats_and_respects_the_limits() {
        let list = vec![
            artifact("a", 5),
            artifact("a", 5),
            artifact("b", 50),
            artifact("c", 5),
        ];
        assert_eq!(ids(&pack(list.clone(), 10, 20)), ["a", "c"]);
        assert_eq!(ids(&pack(list.clone(), 1, 20)), ["a"]);
        // The first artifact is kept even over the token limit.
        assert_eq!(ids(&pack(vec![artifact("big", 99)], 10, 20)), ["big"]);
    }

    #[test]
    fn triage_skips_known_and_external_gaps_and_dedupes_the_rest() {
        let known: HashSet<String> = [gap_key("old_fn")].into_iter().collect();
        let mut state = AskState::new(vec![artifact("a", 5)], Duration::ZERO, known);
        let (pending, view) = state.triage(
            1,
            report(&["new_fn", "NEW_FN", "old_fn"], &["serde_json"]),
            Duration::ZERO,
        );
        assert_eq!(pending, ["new_fn"]);
        assert_eq!(
            view,
            PassView {
                pass: 1,
                detector_failed: false,
                named: 3,
                skipped: 2,
                pending: 1
            }
        );
        assert_eq!(state.unresolved.len(), 2);
        assert_eq!(state.identified.len(), 3);
        assert_eq!(state.new_not_found, [gap_key("serde_json")]);
        assert_eq!(state.model_tokens, 7);
        assert_eq!(state.last_pass().skipped, ["serde_json", "old_fn"]);
        assert_eq!(state.last_pass().context_chunks, 1);
    }

    #[test]
    fn a_gap_found_empty_joins_the_not_found_set() {
        let mut state = AskState::new(Vec::new(), Duration::ZERO, HashSet::new());
        state.record_gap("missing_fn", "symbol", &[], &[]);
        state.record_gap(
            "found_fn",
            "symbol",
            &[artifact("f", 5)],
            &[artifact("n", 3)],
        );
        assert_eq!((state.resolved.len(), state.unresolved.len()), (1, 1));
        assert!(state.not_found.contains(&gap_key("missing_fn")));
        assert_eq!(state.retrieved[1].chunk_ids, ["f"]);
        assert_eq!(state.retrieved[1].neighbour_ids, ["n"]);
        // The retrievals are reported with the next pass.
        state.triage(2, report(&[], &[]), Duration::ZERO);
        assert_eq!(state.last_pass().retrieved.len(), 2);
        assert_eq!(state.last_pass().neighbour_chunks(), 1);
        assert!(state.retrieved.is_empty());
    }

    #[test]
    fn the_next_context_keeps_the_best_first_chunk_and_every_find_in_a_stable_order() {
        let base = vec![artifact("b1", 5), artifact("b2", 5), artifact("b3", 5)];
        let mut state = AskState::new(base, Duration::ZERO, HashSet::new());
        state.next_context(vec![artifact("g1", 5)], Vec::new(), 3, 100);
        // Within 3 chunks: b1 (the best of pass 1), g1 (a find), b2; pass 1's first.
        assert_eq!(ids(&state.context), ["b1", "b2", "g1"]);
        state.next_context(vec![artifact("g2", 5)], Vec::new(), 3, 100);
        assert_eq!(ids(&state.context), ["b1", "g1", "g2"]);
        assert_eq!(
            state.known_ids(),
            ["b1", "b2", "b3", "g1", "g2"]
                .into_iter()
                .map(String::from)
                .collect()
        );
    }
}
