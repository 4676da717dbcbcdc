//! The tools' arguments and answers: MCP's wire types, their JSON schemas derived from these
//! types, and the conversions from the engine's.

use crag_app::{AskParams, QueryParams, SymbolHit};
use crag_core::Chunk;
use crag_engine::{Artifact, AskOutcome, QueryOutcome};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `search`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to find: a question in natural language or keywords.
    pub query: String,
    /// How many passages to return (1 to the server's limit; default 10).
    pub top_k: Option<u32>,
    /// The collection to search (default: the `default` collection; `collections` lists them).
    pub collection: Option<String>,
    /// Keep only documents whose metadata passes this MongoDB-style filter, e.g.
    /// `{"source": {"$in": ["docs/a.md"]}}` or `{"year": {"$gte": 2020}}`.
    pub filter: Option<serde_json::Value>,
    /// Judge the passages and correct the retrieval when they look poor (Corrective RAG:
    /// filter, expand, rewrite, web search). Default true; false is plain hybrid retrieval,
    /// faster.
    pub use_crag: Option<bool>,
    /// Keep only passages whose source (path or URL) starts with this prefix.
    pub source_prefix: Option<String>,
    /// Keep only these kinds of passage: `prose`, `code`, `web`.
    pub kinds: Option<Vec<String>>,
}

impl SearchArgs {
    /// The query as the use case takes it, within the caller's `scope`.
    pub fn into_params(self, scope: Option<crag_core::MetadataFilter>) -> QueryParams {
        QueryParams {
            query: self.query,
            top_k: self.top_k.map(i64::from),
            use_crag: self.use_crag,
            source_prefix: self.source_prefix,
            kinds: self.kinds.unwrap_or_default(),
            metadata: self.filter,
            scope,
            ..QueryParams::default()
        }
    }
}

/// A collection to use; absent or empty: the `default` collection.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CollectionArgs {
    /// The collection (default: `default`).
    pub collection: Option<String>,
}

/// `ask`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskArgs {
    /// The question; for code, name what you want to understand or change.
    pub question: String,
    /// Continue this session (32 hexadecimal digits, from a previous answer): context already
    /// fetched is reused and not fetched again.
    pub session_id: Option<String>,
    /// Start a new session and return its id (ignored when `session_id` is given).
    pub new_session: Option<bool>,
    /// Passages retrieved per pass (default 10).
    pub top_k: Option<u32>,
    /// The collection (default: `default`).
    pub collection: Option<String>,
}

impl AskArgs {
    /// The question as the use case takes it, within the caller's `scope`.
    pub fn into_params(self, scope: Option<crag_core::MetadataFilter>) -> AskParams {
        AskParams {
            query: QueryParams {
                query: self.question,
                top_k: self.top_k.map(i64::from),
                session_id: self.session_id,
                scope,
                ..QueryParams::default()
            },
            new_session: self.new_session.unwrap_or(false),
        }
    }
}

/// `get_chunk`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChunkArgs {
    /// The passage's id as `search` returned it (`<document id>#<ordinal>`).
    pub chunk_id: String,
    /// The collection (default: `default`).
    pub collection: Option<String>,
}

/// `get_document`'s and `delete`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentArgs {
    /// The document's id as `search` returned it.
    pub document_id: String,
    /// The collection (default: `default`).
    pub collection: Option<String>,
}

/// `find_symbol`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SymbolArgs {
    /// A function, method, type or constant: its name (`verify_user`) or qualified path, whole
    /// or its last segments (`Session::verify_user`).
    pub name: String,
    /// Only definitions in files whose path contains this text (`src/auth`).
    pub path: Option<String>,
    /// The collection (default: `default`).
    pub collection: Option<String>,
}

/// A document for `ingest`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentInput {
    /// Stable id: ingesting the same id again replaces the document.
    pub id: String,
    /// The full text.
    pub text: String,
    /// Its title.
    pub title: Option<String>,
    /// Path or URL shown with its passages (default: the id).
    pub source: Option<String>,
    /// `prose` (default) or `code`.
    pub kind: Option<String>,
    /// Metadata: a JSON object of strings, numbers, booleans, RFC 3339 times or lists.
    pub metadata: Option<serde_json::Value>,
}

/// `ingest`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IngestArgs {
    /// The documents to add or replace.
    pub documents: Vec<DocumentInput>,
    /// The collection (default: `default`).
    pub collection: Option<String>,
}

/// First and last line of a passage in its document (1-based, inclusive).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Lines {
    /// First line.
    pub start: u32,
    /// Last line.
    pub end: u32,
}

/// A stored passage.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ChunkOutput {
    /// Its id, for `get_chunk`.
    pub chunk_id: String,
    /// Its document's id, for `get_document`.
    pub document_id: String,
    /// Path or URL of the document.
    pub source: String,
    /// The document's title.
    pub title: String,
    /// `prose`, `code` or `web`.
    pub kind: String,
    /// Where it is in the document.
    pub lines: Lines,
    /// For code: the qualified path of the symbol it defines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
    /// The document's metadata.
    pub metadata: serde_json::Value,
    /// The text.
    pub text: String,
}

impl From<&Chunk> for ChunkOutput {
    fn from(c: &Chunk) -> Self {
        Self {
            chunk_id: c.id.as_str().to_owned(),
            document_id: c.document_id.as_str().to_owned(),
            source: c.source.clone(),
            title: c.title.clone(),
            kind: c.kind.as_str().to_owned(),
            lines: Lines {
                start: c.span.line_start,
                end: c.span.line_end,
            },
            symbol: c.code.as_ref().map(|m| m.qualified.clone()),
            metadata: serde_json::to_value(&c.metadata).unwrap_or_default(),
            text: c.text.clone(),
        }
    }
}

/// A passage of an answer, with how it was found.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Passage {
    /// 1-based rank in the answer.
    pub rank: usize,
    /// `index` (the collection), `web`, `gap` (an `ask` pass), `session`, `graph`, `history`.
    pub origin: String,
    /// Fused score normalised to [0, 1] (passages from the collection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// Rank in the keyword (BM25) list, when that leg found it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword_rank: Option<usize>,
    /// Rank in the vector (embedding) list, when that leg found it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<usize>,
    /// The passage.
    #[serde(flatten)]
    pub chunk: ChunkOutput,
}

fn passages(artifacts: &[Artifact]) -> Vec<Passage> {
    artifacts
        .iter()
        .enumerate()
        .map(|(i, a)| Passage {
            rank: i + 1,
            origin: serde_json::to_value(a.origin)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            score: a.normalized_score,
            keyword_rank: a.keyword.as_ref().map(|h| h.rank),
            vector_rank: a.vector.as_ref().map(|h| h.rank),
            chunk: ChunkOutput::from(&a.chunk),
        })
        .collect()
}

/// `search`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// The query as run.
    pub query: String,
    /// The judge's verdict on the first retrieval: `correct`, `ambiguous` or `incorrect`
    /// (absent when Corrective RAG was off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The judge's confidence that the passages answer the query, in [0, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    /// What the correction did: `none`, `filter`, `expand`, `rewrite`, `web_search`...
    pub correction: String,
    /// Whether web results were added.
    pub web_search_used: bool,
    /// The passages, best first.
    pub results: Vec<Passage>,
    /// What degraded the answer (a service that failed open), if anything.
    pub warnings: Vec<String>,
}

impl From<&QueryOutcome> for SearchOutput {
    fn from(o: &QueryOutcome) -> Self {
        Self {
            query: o.query.as_str().to_owned(),
            verdict: o.verdict().map(|v| v.as_str().to_owned()),
            confidence: o.evaluation.as_ref().map(|e| e.score),
            correction: o.correction_strategy().to_owned(),
            web_search_used: o.web_search_used,
            results: passages(&o.artifacts),
            warnings: o.warnings.clone(),
        }
    }
}

/// A gap an `ask` pass looked up.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GapOutput {
    /// The gap as the detector named it.
    pub gap: String,
    /// How it was looked up: `symbol`, `path`, `vector`...
    pub lookup: String,
    /// The passages it added (empty: not found).
    pub chunk_ids: Vec<String>,
    /// Passages of its definitions' one-hop neighbourhood (callees, owning type, members,
    /// callers) added after them.
    pub neighbour_ids: Vec<String>,
}

/// One pass of `ask`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PassOutput {
    /// 1-based.
    pub pass: usize,
    /// Gaps fetched in this pass (pass 1 is the first retrieval).
    pub fetched: Vec<GapOutput>,
    /// Gaps the detector named after reading the context.
    pub gaps: Vec<String>,
    /// Named gaps skipped because they were already known not to exist.
    pub skipped: Vec<String>,
}

/// `ask`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AskOutput {
    /// The session to pass to the next `ask` (when one is used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model's answer, when the server has an LLM configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Why the passes stopped: `no_gaps`, `max_passes`, `budget`...
    pub stop: String,
    /// Each pass: the gaps named and what was fetched for each.
    pub passes: Vec<PassOutput>,
    /// Gaps named, found and not found over all passes.
    pub gaps_identified: usize,
    /// Gaps found.
    pub gaps_resolved: usize,
    /// Gaps not found.
    pub gaps_unresolved: usize,
    /// The gaps named, each as first named.
    pub identified_gaps: Vec<String>,
    /// The gaps found.
    pub resolved_gaps: Vec<String>,
    /// The gaps not found, known missing, or left when the passes ran out.
    pub unresolved_gaps: Vec<String>,
    /// The context assembled, best first.
    pub context: Vec<Passage>,
    /// What degraded the answer, if anything.
    pub warnings: Vec<String>,
}

impl From<&AskOutcome> for AskOutput {
    fn from(o: &AskOutcome) -> Self {
        Self {
            session_id: o.session_id.map(|id| id.to_string()),
            answer: o.answer.clone(),
            stop: o.stop.as_str().to_owned(),
            passes: o
                .passes
                .iter()
                .map(|p| PassOutput {
                    pass: p.pass,
                    fetched: p
                        .retrieved
                        .iter()
                        .map(|g| GapOutput {
                            gap: g.gap.clone(),
                            lookup: g.lookup.to_owned(),
                            chunk_ids: g.chunk_ids.clone(),
                            neighbour_ids: g.neighbour_ids.clone(),
                        })
                        .collect(),
                    gaps: p.gaps.clone(),
                    skipped: p.skipped.clone(),
                })
                .collect(),
            gaps_identified: o.gaps_identified,
            gaps_resolved: o.gaps_resolved,
            gaps_unresolved: o.gaps_unresolved,
            identified_gaps: o.identified_gaps.clone(),
            resolved_gaps: o.resolved_gaps.clone(),
            unresolved_gaps: o.unresolved_gaps.clone(),
            context: passages(&o.artifacts),
            warnings: o.warnings.clone(),
        }
    }
}

/// `get_document`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DocumentOutput {
    /// The document's id.
    pub document_id: String,
    /// Its passages in order (they may overlap a little).
    pub chunks: Vec<ChunkOutput>,
}

/// A code definition.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolOutput {
    /// Qualified path (`auth::Session::verify_user`).
    pub qualified: String,
    /// `function`, `method`, `struct`...
    pub kind: String,
    /// Language.
    pub language: String,
    /// Its file.
    pub path: String,
    /// Where it is in the file.
    pub lines: Lines,
    /// Its signature.
    pub signature: String,
    /// The passage holding it, for `get_chunk`.
    pub chunk_id: String,
    /// The passage's text (definitions only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl SymbolOutput {
    pub(crate) fn of(hit: &SymbolHit, with_text: bool) -> Self {
        let s = &hit.symbol;
        Self {
            qualified: s.def.qualified.clone(),
            kind: s.def.kind.as_str().to_owned(),
            language: s.def.language.clone(),
            path: s.path.clone(),
            lines: Lines {
                start: s.def.line_start,
                end: s.def.line_end,
            },
            signature: s.def.signature.clone(),
            chunk_id: s.chunk_id.as_str().to_owned(),
            text: with_text.then(|| hit.chunk.text.clone()),
        }
    }
}

/// `find_symbol`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SymbolsOutput {
    /// The definitions matching the name, with their text.
    pub definitions: Vec<SymbolOutput>,
    /// Definitions that call, use or import one of them.
    pub callers: Vec<SymbolOutput>,
    /// Definitions one of them calls, uses or imports.
    pub callees: Vec<SymbolOutput>,
}

/// `collections`' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CollectionsOutput {
    /// The collections this caller may use, `default` first.
    pub collections: Vec<String>,
}

/// `stats`' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatsOutput {
    /// The collection.
    pub collection: String,
    /// Documents stored.
    pub documents: usize,
    /// Passages (chunks) in the keyword index.
    pub chunks: usize,
    /// Passages in the vector index (equal to `chunks` when the indexes agree).
    pub vector_chunks: usize,
    /// The embedding model.
    pub embedding_model: String,
}

/// A document `ingest` refused.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IngestError {
    /// Its position in the request.
    pub index: usize,
    /// Its id as sent.
    pub id: String,
    /// Why.
    pub message: String,
}

/// `ingest`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IngestOutput {
    /// Documents received.
    pub received: usize,
    /// Documents new to the collection.
    pub added: usize,
    /// Documents replaced.
    pub updated: usize,
    /// Documents whose text had not changed.
    pub unchanged: usize,
    /// Passages written.
    pub chunks_written: usize,
    /// Documents refused, with the reason (the others were ingested).
    pub errors: Vec<IngestError>,
}

/// `delete`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DeleteOutput {
    /// The document deleted.
    pub document_id: String,
}
