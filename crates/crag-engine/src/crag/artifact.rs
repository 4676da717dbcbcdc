use std::time::Duration;

use crag_core::{
    Chunk, ChunkId, ChunkKind, Correction, CorrectionKind, DocumentId, Evaluation, FusedHit,
    LegHit, Query, Span, Verdict,
};
use crag_ports::{RerankScore, WebResult};
use crag_routing::RoutingDecision;
use serde::Serialize;

use super::rerank::RerankOutcome;
use crate::retrieval::RetrievalTimings;

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

/// A query with what the caller wants done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryRequest {
    /// The query.
    pub query: Query,
    /// Results retrieved (before corrections and packing).
    pub top_k: crag_core::TopK,
    /// Judge and correct the retrieval (Corrective RAG); off: plain hybrid retrieval.
    pub use_crag: bool,
    /// Allow web search (it also needs a configured provider).
    pub use_web_search: bool,
    /// Token budget of the returned context; `None`: the configured default.
    pub token_budget: Option<usize>,
    /// Rerank the candidates (it also needs a configured reranker and `crag.rerank.enabled`).
    pub use_rerank: bool,
    /// Only indexed chunks passing this filter are retrieved (web results are not filtered).
    pub filter: crag_core::ChunkFilter,
}

impl QueryRequest {
    /// A request with Corrective RAG and web search on and the default budget.
    pub fn new(query: Query, top_k: crag_core::TopK) -> Self {
        Self {
            query,
            top_k,
            use_crag: true,
            use_web_search: true,
            token_budget: None,
            use_rerank: true,
            filter: crag_core::ChunkFilter::default(),
        }
    }
}

/// A query's first retrieval as the relevance evaluator is shown it, not yet judged
/// ([`crate::Engine::evaluation_input`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluationInput {
    /// How the query was routed, and why.
    pub route: RoutingDecision,
    /// The first retrieval (after reranking), best first.
    pub artifacts: Vec<Artifact>,
    /// What the evaluator judges: one document per artifact, in the same order.
    pub documents: Vec<crag_core::EvalDocument>,
    /// Things that went wrong without failing the retrieval (a leg or the reranker failing
    /// open).
    pub warnings: Vec<String>,
}

/// Time spent in each stage of a query.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueryTimings {
    /// Routing.
    pub route: Duration,
    /// The first retrieval (all legs and sub-queries).
    pub retrieve: Duration,
    /// Stages of the first retrieval.
    pub retrieval: RetrievalTimings,
    /// Cross-encoder reranking (zero when skipped or served from the cache).
    pub rerank: Duration,
    /// Relevance evaluation (all rounds).
    pub evaluate: Duration,
    /// Query expansion and the expanded retrieval.
    pub expand: Duration,
    /// Query rewriting and the retrieval with the rewritten query.
    pub rewrite: Duration,
    /// Web search.
    pub web_search: Duration,
    /// Knowledge refinement.
    pub refine: Duration,
    /// Token counting and packing to the budget.
    pub pack: Duration,
    /// The whole query.
    pub total: Duration,
}

/// A stage of a query whose time is recorded in [`QueryTimings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Routing.
    Route,
    /// The first retrieval.
    Retrieve,
    /// Reranking: the cross-encoder, or the feedback rerank when none is configured.
    Rerank,
    /// Relevance evaluation.
    Evaluate,
    /// Query expansion and its retrieval.
    Expand,
    /// Query rewriting and its retrieval.
    Rewrite,
    /// Web search.
    WebSearch,
    /// Knowledge refinement.
    Refine,
    /// Token counting and packing.
    Pack,
}

impl QueryTimings {
    /// Adds `elapsed` to `stage`'s time (stages may run several times: evaluation rounds).
    pub fn add(&mut self, stage: Stage, elapsed: Duration) {
        *self.slot(stage) += elapsed;
    }

    /// The time spent in `stage`.
    pub fn get(&self, stage: Stage) -> Duration {
        let mut copy = *self;
        *copy.slot(stage)
    }

    fn slot(&mut self, stage: Stage) -> &mut Duration {
        match stage {
            Stage::Route => &mut self.route,
            Stage::Retrieve => &mut self.retrieve,
            Stage::Rerank => &mut self.rerank,
            Stage::Evaluate => &mut self.evaluate,
            Stage::Expand => &mut self.expand,
            Stage::Rewrite => &mut self.rewrite,
            Stage::WebSearch => &mut self.web_search,
            Stage::Refine => &mut self.refine,
            Stage::Pack => &mut self.pack,
        }
    }
}

/// What a query returns: the context and how it was judged and corrected.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOutcome {
    /// The query as asked.
    pub query: Query,
    /// How the query was routed, and why.
    pub route: RoutingDecision,
    /// Final context, best first, within the token budget.
    pub artifacts: Vec<Artifact>,
    /// The relevance evaluation of the first retrieval (`None`: CRAG off, no retrieval, or the
    /// evaluator failed open).
    pub evaluation: Option<Evaluation>,
    /// Name of the evaluator that judged.
    pub evaluator: Option<String>,
    /// Corrective actions taken, in order.
    pub corrections: Vec<Correction>,
    /// Whether web results were added.
    pub web_search_used: bool,
    /// Results of the first retrieval (after reranking), before corrections.
    pub original_count: usize,
    /// What the rerank stage did; `None` when no reranker is configured or it is off.
    pub rerank: Option<RerankOutcome>,
    /// Tokens of the returned artifacts.
    pub tokens_used: usize,
    /// The token budget applied.
    pub token_budget: usize,
    /// Per-stage timings.
    pub timings: QueryTimings,
    /// Things that went wrong without failing the query (a leg, the evaluator or web search
    /// failing open).
    pub warnings: Vec<String>,
}

impl QueryOutcome {
    /// The verdict, when the retrieval was judged.
    pub fn verdict(&self) -> Option<Verdict> {
        self.evaluation.as_ref().map(|e| e.verdict)
    }

    /// The decision as counted in metrics and summaries: the verdict's name, `no_retrieval`
    /// when routing skipped retrieval, or `unjudged` (CRAG off, or the evaluator failed open).
    pub fn decision(&self) -> &'static str {
        match (&self.evaluation, self.route.route) {
            (Some(e), _) => e.verdict.as_str(),
            (None, crag_routing::Route::NoRetrieval) => "no_retrieval",
            (None, _) => "unjudged",
        }
    }

    /// The main correction applied, for summaries and metric labels: `web_search`, `expand`,
    /// `rewrite`, `refine`, `discard`, or `none` (kept as retrieved).
    pub fn correction_strategy(&self) -> &'static str {
        correction_strategy(&self.corrections)
    }
}

pub(crate) fn correction_strategy(corrections: &[Correction]) -> &'static str {
    [
        CorrectionKind::WebSearch,
        CorrectionKind::Expand,
        CorrectionKind::Rewrite,
        CorrectionKind::Refine,
        CorrectionKind::Discard,
    ]
    .into_iter()
    .find(|k| corrections.iter().any(|c| c.kind == *k))
    .map_or("none", CorrectionKind::as_str)
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

    #[test]
    fn strategy_prefers_the_strongest_correction() {
        let c = |k| Correction::new(k, "r");
        assert_eq!(correction_strategy(&[c(CorrectionKind::Keep)]), "none");
        assert_eq!(
            correction_strategy(&[c(CorrectionKind::Discard), c(CorrectionKind::Expand)]),
            "expand"
        );
        assert_eq!(
            correction_strategy(&[
                c(CorrectionKind::Discard),
                c(CorrectionKind::Rewrite),
                c(CorrectionKind::WebSearch)
            ]),
            "web_search"
        );
    }
}
