use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, FusedHit, LegHit, Span};
use crag_ports::{RerankScore, WebResult};
use serde::Serialize;

/// Where an artifact comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactOrigin {
    /// The local indexes.
    Index,
    /// A web search.
    Web,
    /// A CGRAG pass retrieving a gap.
    Gap,
    /// A CGRAG session's cached context.
    Session,
    /// A definition a code result uses, reached through the symbol graph.
    Graph,
    /// A turn of the session's chat history (question and answer).
    History,
}

/// One piece of context returned by a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// The chunk (for web results: kind web, the URL as document id and source).
    pub chunk: Chunk,
    /// Where it comes from.
    pub origin: ArtifactOrigin,
    /// Rank-fusion score, for index artifacts.
    pub fused_score: Option<f32>,
    /// Fused score normalised to [0, 1], for index artifacts.
    pub normalized_score: Option<f32>,
    /// What the keyword leg said of it.
    pub keyword: Option<LegHit>,
    /// What the vector leg said of it.
    pub vector: Option<LegHit>,
    /// The relevance evaluator's score of this document, when it judged it.
    pub relevance: Option<f32>,
    /// The cross-encoder's score, when the candidates were reranked.
    pub rerank: Option<RerankScore>,
    /// 1-based rank in the web search answer, for web artifacts.
    pub web_rank: Option<usize>,
    /// The text was cut down to its relevant strips by knowledge refinement.
    pub refined: bool,
    /// Tokens of `chunk.text` by the embedder's tokenizer (counted at ingestion when stored).
    pub tokens: usize,
}

impl Artifact {
    /// An artifact of `origin` with no retrieval scores, judgement or refinement.
    pub(crate) fn unscored(chunk: Chunk, origin: ArtifactOrigin, tokens: usize) -> Self {
        Self {
            chunk,
            origin,
            fused_score: None,
            normalized_score: None,
            keyword: None,
            vector: None,
            relevance: None,
            rerank: None,
            web_rank: None,
            refined: false,
            tokens,
        }
    }

    /// A prose artifact of text not read from the indexes (a cached node, a chat turn): its
    /// span covers the whole text and its content hash is the text's; `None` when an id or
    /// the text is not valid.
    pub(crate) fn from_text(
        id: ChunkId,
        document: DocumentId,
        source: String,
        text: String,
        origin: ArtifactOrigin,
        tokens: usize,
    ) -> Option<Self> {
        let lines = u32::try_from(text.lines().count().max(1)).unwrap_or(u32::MAX);
        let span = Span::new(0, text.len() as u64, 1, lines).ok()?;
        let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        let chunk =
            Chunk::new(id, document, source, "", text, span, ChunkKind::Prose, hash).ok()?;
        Some(Self::unscored(chunk, origin, tokens))
    }

    pub(crate) fn from_hit(hit: FusedHit) -> Self {
        Self {
            fused_score: Some(hit.fused_score),
            normalized_score: Some(hit.normalized_score),
            keyword: hit.keyword,
            vector: hit.vector,
            ..Self::unscored(hit.chunk, ArtifactOrigin::Index, 0)
        }
    }

    /// Turns a web result into a chunk of kind web; `None` when it has no usable URL or text.
    pub(crate) fn from_web(result: &WebResult, rank: usize) -> Option<Self> {
        let text = if result.snippet.trim().is_empty() {
            result.title.trim()
        } else {
            result.snippet.trim()
        };
        let document_id = DocumentId::new(result.url.clone()).ok()?;
        let id = ChunkId::for_document(&document_id, 0);
        let span = Span::new(0, text.len() as u64, 1, 1).ok()?;
        let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        let chunk = Chunk::new(
            id,
            document_id,
            result.url.clone(),
            result.title.trim(),
            text,
            span,
            ChunkKind::Web,
            hash,
        )
        .ok()?;
        Some(Self {
            web_rank: Some(rank),
            ..Self::unscored(chunk, ArtifactOrigin::Web, 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_results_become_web_chunks() {
        let r = WebResult {
            title: " SpaceX launch ".into(),
            url: "https://example.org/spacex".into(),
            snippet: "Falcon 9 launched today.".into(),
        };
        let a = Artifact::from_web(&r, 2).unwrap();
        assert_eq!(a.chunk.kind, ChunkKind::Web);
        assert_eq!(a.chunk.source, "https://example.org/spacex");
        assert_eq!(a.chunk.title, "SpaceX launch");
        assert_eq!(a.chunk.text, "Falcon 9 launched today.");
        assert_eq!(a.web_rank, Some(2));
        let untitled = WebResult {
            snippet: String::new(),
            ..r.clone()
        };
        assert_eq!(
            Artifact::from_web(&untitled, 1).unwrap().chunk.text,
            "SpaceX launch"
        );
        let empty = WebResult {
            title: String::new(),
            url: "https://x".into(),
            snippet: " ".into(),
        };
        assert!(Artifact::from_web(&empty, 1).is_none());
        let no_url = WebResult {
            url: String::new(),
            ..r
        };
        assert!(Artifact::from_web(&no_url, 1).is_none());
    }
}
