//! Request checks shared by the HTTP and gRPC apps: wire values (already decoded into plain
//! Rust values by each app) become domain requests, or an [`Invalid`] naming the field.

use crag_core::{
    check_metadata, ChunkFilter, ChunkKind, Document, DocumentId, Metadata, MetadataFilter, Query,
    SymbolKind, TopK,
};
use crag_engine::QueryRequest;

use crag_config::LimitsSection;

mod fusion;
mod languages;

pub use fusion::FusionParams;
pub use languages::code_languages;

/// Results returned when the caller does not say.
pub const DEFAULT_TOP_K: usize = 10;

/// A rejected request; the message names the field (in the wire's camelCase spelling).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

fn invalid<T>(message: impl Into<String>) -> Result<T, Invalid> {
    Err(Invalid(message.into()))
}

/// A query as a caller sent it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryParams {
    /// The question or keywords.
    pub query: String,
    /// Results wanted; default [`DEFAULT_TOP_K`].
    pub top_k: Option<i64>,
    /// Token budget of the context; default: the configured one.
    pub token_budget: Option<i64>,
    /// Judge and correct (default true).
    pub use_crag: Option<bool>,
    /// Allow web search (default true; it also needs a configured provider).
    pub use_web_search: Option<bool>,
    /// Rerank (default true; it also needs a configured reranker).
    pub use_rerank: Option<bool>,
    /// Keep only sources starting with this prefix.
    pub source_prefix: Option<String>,
    /// Keep only these kinds (`prose`, `code`, `web`).
    pub kinds: Vec<String>,
    /// Keep only code chunks in these languages (`rust`, `python`, `typescript`, `tsx`,
    /// `javascript`, `go`).
    pub languages: Vec<String>,
    /// Keep only code chunks defining these kinds of symbol (`function`, `method`, `struct`...).
    pub symbol_kinds: Vec<String>,
    /// Keep only documents whose metadata passes this filter (its JSON form, see
    /// [`crag_core::MetadataFilter`]).
    pub metadata: Option<serde_json::Value>,
    /// The caller's scope (its token's filter), set by the transport, never read from the
    /// wire: ANDed into every retrieval, not checked against the stored fields.
    pub scope: Option<MetadataFilter>,
    /// Caller's session, echoed back.
    pub session_id: Option<String>,
    /// How this query's retrievals fuse their legs; unset: the configured fusion.
    pub fusion: FusionParams,
}

/// A document as a caller sent it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentParams {
    /// Stable id.
    pub id: String,
    /// Full text.
    pub text: String,
    /// Title; default: empty.
    pub title: Option<String>,
    /// Path or URL shown to users; default: the id.
    pub source: Option<String>,
    /// `prose` (default) or `code`.
    pub kind: Option<String>,
    /// The document's metadata: a JSON object.
    pub metadata: Option<serde_json::Value>,
}

const MAX_SESSION_ID_BYTES: usize = 128;
const MAX_TITLE_BYTES: usize = 1024;

/// The request bounds of `[limits]`, checking what callers send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits(pub LimitsSection);

impl From<LimitsSection> for Limits {
    fn from(section: LimitsSection) -> Self {
        Self(section)
    }
}

impl std::ops::Deref for Limits {
    type Target = LimitsSection;
    fn deref(&self) -> &LimitsSection {
        &self.0
    }
}

impl Limits {
    /// Checks a document's text: not blank, at most `max_document_bytes` bytes.
    pub fn document_text(&self, text: &str) -> Result<(), Invalid> {
        if text.trim().is_empty() {
            return invalid("text must not be empty or whitespace");
        }
        if text.len() > self.max_document_bytes {
            return invalid(format!(
                "text is {} bytes long; the limit is {}",
                text.len(),
                self.max_document_bytes
            ));
        }
        Ok(())
    }

    /// Checks a query's text: not blank, at most `max_query_chars` characters.
    pub fn query(&self, raw: &str) -> Result<Query, Invalid> {
        if raw.trim().is_empty() {
            return invalid("query must not be empty or whitespace");
        }
        let chars = raw.chars().count();
        if chars > self.max_query_chars {
            return invalid(format!(
                "query is {chars} characters long; the limit is {}",
                self.max_query_chars
            ));
        }
        Query::new(raw).map_err(|e| Invalid(format!("query: {e}")))
    }

    /// Checks a query against the limits and builds the engine request.
    pub fn query_request(&self, p: &QueryParams) -> Result<QueryRequest, Invalid> {
        let query = self.query(&p.query)?;
        let top_k = match p.top_k {
            None => DEFAULT_TOP_K.min(self.max_top_k),
            Some(k) if k >= 1 && k as u64 <= self.max_top_k as u64 => k as usize,
            Some(k) => {
                return invalid(format!(
                    "topK must be between 1 and {}, got {k}",
                    self.max_top_k
                ))
            }
        };
        let token_budget = match p.token_budget {
            None => None,
            Some(b) if b >= 1 && b as u64 <= self.max_token_budget as u64 => Some(b as usize),
            Some(b) => {
                return invalid(format!(
                    "tokenBudget must be between 1 and {}, got {b}",
                    self.max_token_budget
                ))
            }
        };
        if let Some(prefix) = &p.source_prefix {
            if prefix.len() > self.max_document_id_bytes || prefix.chars().any(char::is_control) {
                return invalid(format!(
                    "filters.sourcePrefix must be at most {} bytes without control characters",
                    self.max_document_id_bytes
                ));
            }
        }
        let kinds = p
            .kinds
            .iter()
            .map(|k| {
                k.parse::<ChunkKind>().map_err(|_| {
                    Invalid(format!(
                        "filters.kinds: unknown kind `{}` (expected prose, code or web)",
                        k.escape_debug()
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let languages = p
            .languages
            .iter()
            .map(|l| {
                if crag_syntax::Language::from_name(l).is_some() {
                    Ok(l.clone())
                } else {
                    Err(Invalid(format!(
                        "filters.languages: unknown language `{}` (expected one of {})",
                        l.escape_debug(),
                        code_languages().join(", ")
                    )))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let symbol_kinds = p
            .symbol_kinds
            .iter()
            .map(|k| {
                k.parse::<SymbolKind>().map_err(|_| {
                    let known: Vec<&str> = SymbolKind::ALL.iter().map(|k| k.as_str()).collect();
                    Invalid(format!(
                        "filters.symbolKinds: unknown kind `{}` (expected one of {})",
                        k.escape_debug(),
                        known.join(", ")
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(session) = &p.session_id {
            check_session_id(session)?;
        }
        let metadata = p
            .metadata
            .as_ref()
            .map(|filter| {
                MetadataFilter::from_json(filter)
                    .map_err(|e| Invalid(format!("filters.metadata: {e}")))
            })
            .transpose()?;
        let top_k = TopK::new(top_k).map_err(|e| Invalid(format!("topK: {e}")))?;
        let mut request = QueryRequest::new(query, top_k);
        request.token_budget = token_budget;
        request.use_crag = p.use_crag.unwrap_or(true);
        request.use_web_search = p.use_web_search.unwrap_or(true);
        request.use_rerank = p.use_rerank.unwrap_or(true);
        request.fusion = p.fusion.resolve()?;
        request.filter = ChunkFilter {
            source_prefix: p.source_prefix.clone().filter(|s| !s.is_empty()),
            kinds,
            languages,
            symbol_kinds,
            metadata,
            scope: p.scope.clone(),
            ..Default::default()
        };
        Ok(request)
    }

    /// Checks a document id: at most `max_document_id_bytes`, no control characters, no
    /// surrounding whitespace, no backslashes, no `.` or `..` path segments.
    pub fn document_id(&self, raw: &str) -> Result<DocumentId, Invalid> {
        if raw.trim().is_empty() {
            return invalid("document id must not be empty");
        }
        if raw.len() > self.max_document_id_bytes {
            return invalid(format!(
                "document id is {} bytes long; the limit is {}",
                raw.len(),
                self.max_document_id_bytes
            ));
        }
        if raw.trim() != raw {
            return invalid("document id must not start or end with whitespace");
        }
        if raw.chars().any(char::is_control) {
            return invalid("document id must not contain control characters");
        }
        if raw.contains('\\') {
            return invalid("document id must not contain backslashes");
        }
        if raw.split('/').any(|s| s == "." || s == "..") {
            return invalid("document id must not contain `.` or `..` path segments");
        }
        DocumentId::new(raw).map_err(|e| Invalid(e.to_string()))
    }

    /// Checks a document and builds it.
    pub fn document(&self, p: &DocumentParams) -> Result<Document, Invalid> {
        let id = self.document_id(&p.id)?;
        self.document_text(&p.text)?;
        let title = p.title.clone().unwrap_or_default();
        if title.len() > MAX_TITLE_BYTES {
            return invalid(format!("title is longer than {MAX_TITLE_BYTES} bytes"));
        }
        let source = p.source.clone().unwrap_or_else(|| p.id.clone());
        if source.len() > self.max_document_id_bytes || source.chars().any(char::is_control) {
            return invalid(format!(
                "source must be at most {} bytes without control characters",
                self.max_document_id_bytes
            ));
        }
        let kind = match p.kind.as_deref() {
            None | Some("prose") => ChunkKind::Prose,
            Some("code") => ChunkKind::Code,
            Some(other) => {
                return invalid(format!(
                    "kind: unknown kind `{}` (expected prose or code)",
                    other.escape_debug()
                ))
            }
        };
        let metadata = match &p.metadata {
            None | Some(serde_json::Value::Null) => Metadata::new(),
            Some(serde_json::Value::Object(object)) => object.clone(),
            Some(other) => {
                return invalid(format!("metadata must be a JSON object, got {other}"));
            }
        };
        check_metadata(&metadata, self.max_metadata_bytes).map_err(|e| Invalid(e.to_string()))?;
        Document::new(id, source, title, p.text.clone(), kind)
            .map(|d| d.with_metadata(metadata))
            .map_err(|e| Invalid(e.to_string()))
    }

    /// Checks the number of documents of one ingest request.
    pub fn ingest_batch(&self, documents: usize) -> Result<(), Invalid> {
        if documents == 0 {
            return invalid("documents must not be empty");
        }
        if documents > self.max_ingest_batch {
            return invalid(format!(
                "{documents} documents in one request; the limit is {}",
                self.max_ingest_batch
            ));
        }
        Ok(())
    }
}

fn check_session_id(raw: &str) -> Result<(), Invalid> {
    let ok = !raw.is_empty()
        && raw.len() <= MAX_SESSION_ID_BYTES
        && raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        invalid(format!(
            "sessionId must be 1 to {MAX_SESSION_ID_BYTES} characters of A-Z a-z 0-9 - _ . :"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(text: &str) -> QueryParams {
        QueryParams {
            query: text.into(),
            ..QueryParams::default()
        }
    }

    #[test]
    fn good_queries_become_requests() {
        let l = Limits(LimitsSection::default());
        let r = l
            .query_request(&QueryParams {
                top_k: Some(5),
                token_budget: Some(100),
                use_crag: Some(false),
                source_prefix: Some("src/".into()),
                kinds: vec!["code".into()],
                languages: vec!["rust".into()],
                symbol_kinds: vec!["method".into()],
                session_id: Some("abc-1".into()),
                ..q("  how are results fused?  ")
            })
            .unwrap();
        assert_eq!(r.filter.languages, vec!["rust".to_owned()]);
        assert_eq!(r.filter.symbol_kinds, vec![SymbolKind::Method]);
        assert_eq!(r.query.as_str(), "how are results fused?");
        assert_eq!(r.top_k.get(), 5);
        assert_eq!(r.token_budget, Some(100));
        assert!(!r.use_crag && r.use_web_search && r.use_rerank);
        assert_eq!(r.filter.kinds, vec![ChunkKind::Code]);
        assert_eq!(l.query_request(&q("x")).unwrap().top_k.get(), DEFAULT_TOP_K);
    }

    #[test]
    fn bad_queries_name_the_field() {
        let l = Limits(LimitsSection::default());
        let cases: Vec<(QueryParams, &str)> = vec![
            (q(""), "query must not be empty"),
            (q(" \t\n "), "query must not be empty"),
            (q(&"a".repeat(2001)), "limit is 2000"),
            (
                QueryParams {
                    top_k: Some(0),
                    ..q("x")
                },
                "topK",
            ),
            (
                QueryParams {
                    top_k: Some(-3),
                    ..q("x")
                },
                "topK",
            ),
            (
                QueryParams {
                    top_k: Some(i64::MAX),
                    ..q("x")
                },
                "topK",
            ),
            (
                QueryParams {
                    token_budget: Some(0),
                    ..q("x")
                },
                "tokenBudget",
            ),
            (
                QueryParams {
                    languages: vec!["cobol".into()],
                    ..q("x")
                },
                "filters.languages: unknown language `cobol`",
            ),
            (
                QueryParams {
                    symbol_kinds: vec!["lambda".into()],
                    ..q("x")
                },
                "filters.symbolKinds: unknown kind `lambda`",
            ),
            (
                QueryParams {
                    kinds: vec!["pdf".into()],
                    ..q("x")
                },
                "filters.kinds",
            ),
            (
                QueryParams {
                    session_id: Some("a b".into()),
                    ..q("x")
                },
                "sessionId",
            ),
            (
                QueryParams {
                    source_prefix: Some("a\u{0}".into()),
                    ..q("x")
                },
                "filters.sourcePrefix",
            ),
        ];
        for (p, expected) in cases {
            let err = l.query_request(&p).unwrap_err();
            assert!(err.0.contains(expected), "{p:?}: {err}");
        }
    }

    #[test]
    fn document_ids_reject_path_tricks() {
        let l = Limits(LimitsSection::default());
        for good in ["a", "docs/a.md", "/work/src/lib.rs", "scifact:123", "a..b"] {
            l.document_id(good).unwrap();
        }
        for bad in [
            "",
            " ",
            "../etc/passwd",
            "a/../b",
            "./a",
            "a\\b",
            " a",
            "a\u{7}",
            "a/./b",
        ] {
            assert!(l.document_id(bad).is_err(), "{bad:?}");
        }
        assert!(l.document_id(&"x".repeat(513)).is_err());
    }

    #[test]
    fn documents_are_checked() {
        let l = Limits(LimitsSection::default());
        let d = |id: &str, text: &str, kind: Option<&str>| DocumentParams {
            id: id.into(),
            text: text.into(),
            kind: kind.map(String::from),
            ..DocumentParams::default()
        };
        let doc = l.document(&d("a", "hello", Some("code"))).unwrap();
        assert_eq!(doc.kind, ChunkKind::Code);
        assert_eq!(doc.source, "a");
        assert!(l.document(&d("a", "  ", None)).is_err());
        assert!(l.document(&d("a", "x", Some("web"))).is_err());
        assert!(l
            .document(&d("a", &"x".repeat(1024 * 1024 + 1), None))
            .is_err());
        assert!(l.ingest_batch(0).is_err());
        assert!(l.ingest_batch(257).is_err());
        l.ingest_batch(256).unwrap();
    }
}
