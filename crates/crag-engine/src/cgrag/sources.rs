//! The registry of context sources: where pass 1's context comes from.
//!
//! Each source is enabled or not, has a weight and a cap. The retrieval's artifacts belong to
//! `documents` (indexed prose), `code` (indexed code, and definitions reached through the symbol
//! graph) or `web` (Corrective RAG's web results) by their chunk's kind; `history` is the session's
//! last turns; `session` is the context the session's earlier requests used (a follow-up starts
//! from it), placed first as one block in the order the last request used it, so the model's prompt
//! starts as that request's last prompt did and a model server reuses it. Among the others, an
//! artifact's relevance is `1 / rank` within its list (the retrieval's final order, or recency for
//! turns), so with equal weights the retrieval's order is kept, and a weight `w` makes an item
//! count as if it ranked `w` times higher. The merged list is sorted by weight x relevance, ties
//! keeping the retrieval first.

use std::cmp::Ordering;

use crag_core::{CachedNode, ChatTurn, ChunkId, ChunkKind, DocumentId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::crag::{Artifact, ArtifactOrigin};
use crate::error::{EngineError, Result};

/// One source: on or off, its weight and how many of its chunks pass 1 takes at most.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SourceConfig {
    /// Use the source's results.
    pub enabled: bool,
    /// Multiplies their relevance, within (0, 100]: weight 2 counts a result as if it ranked twice
    /// as high.
    pub weight: f32,
    /// The source's results kept at most (1..=1000).
    pub max_chunks: usize,
}

impl Default for SourceConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            weight: 1.0,
            max_chunks: 10,
        }
    }
}

/// The chat-history source: the session's most recent turns as context.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryConfig {
    /// Use the session's turns.
    pub enabled: bool,
    /// The most recent turn's relevance is `weight`, the next `weight / 2`, ...: by default the
    /// last turn ranks like the second result.
    pub weight: f32,
    /// Most recent turns taken at most (1..=1000).
    pub max_turns: usize,
    /// Tokens of turns taken at most, most recent first.
    pub max_tokens: usize,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            weight: 0.5,
            max_turns: 10,
            max_tokens: 2000,
        }
    }
}

/// The session source: the context a session's earlier requests used.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSourceConfig {
    /// Start a follow-up from the session's cached context.
    pub enabled: bool,
    /// Cached chunks placed first at most (1..=1000), and never more than half of `context_chunks`,
    /// so the new question's retrieval keeps the other half.
    pub max_chunks: usize,
}

impl Default for SessionSourceConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_chunks: 4,
        }
    }
}

/// `[cgrag.sources]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SourcesConfig {
    /// Indexed prose.
    pub documents: SourceConfig,
    /// Indexed code.
    pub code: SourceConfig,
    /// Web results of the first retrieval.
    pub web: SourceConfig,
    /// The session's turns.
    pub history: HistoryConfig,
    /// The session's cached context.
    pub session: SessionSourceConfig,
}

impl SourcesConfig {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<()> {
        let weights = [
            ("documents", self.documents.weight),
            ("code", self.code.weight),
            ("web", self.web.weight),
            ("history", self.history.weight),
        ];
        for (name, weight) in weights {
            if !(weight.is_finite() && weight > 0.0 && weight <= 100.0) {
                return Err(EngineError::InvalidInput(format!(
                    "cgrag.sources.{name}.weight must be within (0, 100], got {weight}"
                )));
            }
        }
        for (name, cap) in [
            ("documents.max_chunks", self.documents.max_chunks),
            ("code.max_chunks", self.code.max_chunks),
            ("web.max_chunks", self.web.max_chunks),
            ("history.max_turns", self.history.max_turns),
            ("session.max_chunks", self.session.max_chunks),
        ] {
            if !(1..=1000).contains(&cap) {
                return Err(EngineError::InvalidInput(format!(
                    "cgrag.sources.{name} must be within 1..=1000, got {cap}"
                )));
            }
        }
        Ok(())
    }

    fn source(&self, kind: ChunkKind) -> &SourceConfig {
        match kind {
            ChunkKind::Prose => &self.documents,
            ChunkKind::Code => &self.code,
            ChunkKind::Web => &self.web,
        }
    }
}

/// The session's cached context as artifacts, most recently used first: at most `max_chunks`
/// and half of `context_chunks` (none when disabled). `count` counts tokens.
pub(crate) fn session_nodes(
    nodes: &[CachedNode],
    config: &SessionSourceConfig,
    context_chunks: usize,
    count: impl Fn(&str) -> usize,
) -> Vec<Artifact> {
    if !config.enabled {
        return Vec::new();
    }
    nodes
        .iter()
        .filter_map(|node| cached_artifact(node, count(&node.text)))
        .take(config.max_chunks.min(context_chunks / 2))
        .collect()
}

fn cached_artifact(node: &CachedNode, tokens: usize) -> Option<Artifact> {
    let document = node
        .chunk_id
        .rsplit_once('#')
        .map_or(node.chunk_id.as_str(), |(d, _)| d);
    Artifact::from_text(
        ChunkId::new(node.chunk_id.clone()).ok()?,
        DocumentId::new(document).ok()?,
        node.source.clone(),
        node.text.clone(),
        ArtifactOrigin::Session,
        tokens,
    )
}

/// The turns of a session as artifacts, most recent first: at most `max_turns`, within
/// `max_tokens` (a turn that does not fit ends the list). `count` counts tokens.
pub(crate) fn history(
    turns: &[ChatTurn],
    config: &HistoryConfig,
    count: impl Fn(&str) -> usize,
) -> Vec<Artifact> {
    if !config.enabled {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut tokens = 0;
    for turn in turns.iter().rev().take(config.max_turns) {
        let text = match &turn.answer {
            Some(answer) => format!("User: {}\nAssistant: {}", turn.question, answer),
            None => format!("User: {}", turn.question),
        };
        let n = count(&text);
        if tokens + n > config.max_tokens {
            break;
        }
        let Some(artifact) = turn_artifact(turn, text, n) else {
            continue;
        };
        tokens += n;
        out.push(artifact);
    }
    out
}

fn turn_artifact(turn: &ChatTurn, text: String, tokens: usize) -> Option<Artifact> {
    Artifact::from_text(
        ChunkId::new(format!("chat-history#{}", turn.at_ms)).ok()?,
        DocumentId::new("chat-history").ok()?,
        "chat history".into(),
        text,
        ArtifactOrigin::History,
        tokens,
    )
}

/// Merges the first retrieval (in its final order) and the history turns (most recent first)
/// by weight x relevance, each source within its cap; disabled sources are left out.
pub(crate) fn merge(
    retrieved: &[Artifact],
    history: Vec<Artifact>,
    config: &SourcesConfig,
) -> Vec<Artifact> {
    let mut taken = [0usize; 3];
    let mut scored: Vec<(f32, usize, Artifact)> = Vec::new();
    for (i, a) in retrieved.iter().enumerate() {
        let source = config.source(a.chunk.kind);
        let slot = match a.chunk.kind {
            ChunkKind::Prose => 0,
            ChunkKind::Code => 1,
            ChunkKind::Web => 2,
        };
        if !source.enabled || taken[slot] >= source.max_chunks {
            continue;
        }
        taken[slot] += 1;
        scored.push((source.weight / (i + 1) as f32, scored.len(), a.clone()));
    }
    for (i, a) in history.into_iter().enumerate() {
        scored.push((config.history.weight / (i + 1) as f32, scored.len(), a));
    }
    scored.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    scored.into_iter().map(|(_, _, a)| a).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crag_core::{Chunk, Span};

    fn artifact(id: &str, kind: ChunkKind) -> Artifact {
        let text = format!("text of {id}");
        let chunk = Chunk::new(
            ChunkId::new(id).unwrap(),
            DocumentId::new(id).unwrap(),
            id,
            "",
            text.clone(),
            Span::new(0, text.len() as u64, 1, 1).unwrap(),
            kind,
            "h",
        )
        .unwrap();
        Artifact::unscored(chunk, ArtifactOrigin::Index, 3)
    }

    fn turn(question: &str, answer: Option<&str>, at_ms: i64) -> ChatTurn {
        ChatTurn {
            question: question.into(),
            answer: answer.map(Into::into),
            model: None,
            tokens: 0,
            at_ms,
        }
    }

    fn ids(list: &[Artifact]) -> Vec<&str> {
        list.iter().map(|a| a.chunk.id.as_str()).collect()
    }

    fn retrieved() -> Vec<Artifact> {
        vec![
            artifact("d1", ChunkKind::Prose),
            artifact("c1", ChunkKind::Code),
            artifact("d2", ChunkKind::Prose),
            artifact("w1", ChunkKind::Web),
            artifact("c2", ChunkKind::Code),
        ]
    }

    #[test]
    fn equal_weights_keep_the_retrieval_order() {
        let merged = merge(&retrieved(), Vec::new(), &SourcesConfig::default());
        assert_eq!(ids(&merged), ["d1", "c1", "d2", "w1", "c2"]);
    }

    #[test]
    fn weights_reorder_caps_cut_and_disabled_sources_leave() {
        let mut config = SourcesConfig::default();
        config.code.weight = 3.0;
        config.documents.max_chunks = 1;
        config.web.enabled = false;
        let merged = merge(&retrieved(), Vec::new(), &config);
        // c1: 3/2, c2: 3/5, d1: 1/1; d2 over the documents cap; w1 disabled.
        assert_eq!(ids(&merged), ["c1", "d1", "c2"]);
    }

    #[test]
    fn history_turns_are_recent_first_within_their_budget() {
        let turns = [
            turn("oldest question", Some("oldest answer"), 1),
            turn("middle question", None, 2),
            turn("latest question", Some("latest answer"), 3),
        ];
        let words = |t: &str| t.split_whitespace().count();
        let all = history(&turns, &HistoryConfig::default(), words);
        assert_eq!(
            ids(&all),
            ["chat-history#3", "chat-history#2", "chat-history#1"]
        );
        assert_eq!(
            all[0].chunk.text,
            "User: latest question\nAssistant: latest answer"
        );
        assert_eq!(all[1].chunk.text, "User: middle question");
        assert!(all.iter().all(|a| a.origin == ArtifactOrigin::History));

        let budget = HistoryConfig {
            max_tokens: 7,
            ..HistoryConfig::default()
        };
        assert_eq!(ids(&history(&turns, &budget, words)), ["chat-history#3"]);
        let few = HistoryConfig {
            max_turns: 2,
            ..HistoryConfig::default()
        };
        assert_eq!(history(&turns, &few, words).len(), 2);
        let off = HistoryConfig {
            enabled: false,
            ..HistoryConfig::default()
        };
        assert!(history(&turns, &off, words).is_empty());

        // Weight 0.5: the latest turn counts as a second-ranked result, after ties.
        let merged = merge(&retrieved()[..3], all, &SourcesConfig::default());
        assert_eq!(
            ids(&merged),
            [
                "d1",
                "c1",
                "chat-history#3",
                "d2",
                "chat-history#2",
                "chat-history#1"
            ]
        );
    }

    #[test]
    fn the_session_source_takes_the_most_recent_nodes_up_to_its_cap() {
        let nodes: Vec<CachedNode> = ["src/a.rs#0", "src/b.rs#1", "src/c.rs#2"]
            .iter()
            .map(|id| CachedNode {
                chunk_id: (*id).into(),
                source: "src".into(),
                text: format!("text of {id}"),
            })
            .collect();
        let words = |t: &str| t.split_whitespace().count();
        let config = SessionSourceConfig {
            max_chunks: 2,
            ..SessionSourceConfig::default()
        };
        let taken = session_nodes(&nodes, &config, 8, words);
        assert_eq!(ids(&taken), ["src/a.rs#0", "src/b.rs#1"]);
        assert_eq!(taken[0].chunk.document_id.as_str(), "src/a.rs");
        assert_eq!(taken[0].tokens, 3);
        assert!(taken.iter().all(|a| a.origin == ArtifactOrigin::Session));
        // Half of a 3-chunk context at most.
        assert_eq!(
            ids(&session_nodes(&nodes, &config, 3, words)),
            ["src/a.rs#0"]
        );
        let off = SessionSourceConfig {
            enabled: false,
            ..config
        };
        assert!(session_nodes(&nodes, &off, 8, words).is_empty());
    }

    #[test]
    fn bad_weights_and_caps_are_refused() {
        let mut config = SourcesConfig::default();
        config.web.weight = 0.0;
        assert!(config.validate().is_err());
        let mut config = SourcesConfig::default();
        config.history.max_turns = 0;
        assert!(config.validate().is_err());
        let mut config = SourcesConfig::default();
        config.session.max_chunks = 0;
        assert!(config.validate().is_err());
        assert!(SourcesConfig::default().validate().is_ok());
    }
}
