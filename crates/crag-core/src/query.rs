use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};

/// Longest accepted query text, in bytes.
pub const MAX_QUERY_BYTES: usize = 8 * 1024;
/// Largest accepted `top_k`.
pub const MAX_TOP_K: usize = 1000;

/// A user query: trimmed, non-empty, at most [`MAX_QUERY_BYTES`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Query(String);

impl Query {
    /// Validates and trims `raw`.
    pub fn new(raw: impl AsRef<str>) -> Result<Self> {
        let text = raw.as_ref().trim();
        if text.is_empty() {
            return Err(CoreError::invalid("query", "must not be empty"));
        }
        if text.len() > MAX_QUERY_BYTES {
            return Err(CoreError::invalid(
                "query",
                format!("longer than {MAX_QUERY_BYTES} bytes"),
            ));
        }
        if text.chars().any(|c| c.is_control() && !c.is_whitespace()) {
            return Err(CoreError::invalid("query", "contains control characters"));
        }
        Ok(Self(text.to_owned()))
    }

    /// Returns the query text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Query {
    type Error = CoreError;
    fn try_from(raw: String) -> Result<Self> {
        Self::new(raw)
    }
}

impl From<Query> for String {
    fn from(q: Query) -> String {
        q.0
    }
}

/// Number of results asked for: between 1 and [`MAX_TOP_K`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "usize", into = "usize")]
pub struct TopK(usize);

impl TopK {
    /// Validates `k`.
    pub fn new(k: usize) -> Result<Self> {
        if k == 0 || k > MAX_TOP_K {
            return Err(CoreError::invalid(
                "top_k",
                format!("must be between 1 and {MAX_TOP_K}, got {k}"),
            ));
        }
        Ok(Self(k))
    }

    /// Returns k.
    pub fn get(self) -> usize {
        self.0
    }
}

impl Default for TopK {
    fn default() -> Self {
        Self(10)
    }
}

impl TryFrom<usize> for TopK {
    type Error = CoreError;
    fn try_from(k: usize) -> Result<Self> {
        Self::new(k)
    }
}

impl From<TopK> for usize {
    fn from(k: TopK) -> usize {
        k.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_is_trimmed_and_validated() {
        assert_eq!(
            Query::new("  what is rrf? \n").unwrap().as_str(),
            "what is rrf?"
        );
        assert!(Query::new("").is_err());
        assert!(Query::new(" \t\n ").is_err());
        assert!(Query::new("a\u{7}b").is_err());
        assert!(Query::new("x".repeat(MAX_QUERY_BYTES + 1)).is_err());
        assert!(Query::new("x".repeat(MAX_QUERY_BYTES)).is_ok());
    }

    #[test]
    fn top_k_bounds() {
        assert!(TopK::new(0).is_err());
        assert!(TopK::new(MAX_TOP_K + 1).is_err());
        assert_eq!(TopK::new(MAX_TOP_K).unwrap().get(), MAX_TOP_K);
        assert_eq!(TopK::default().get(), 10);
    }
}

/// Restricts retrieval to some of the indexed chunks. The empty filter keeps everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkFilter {
    /// Keep chunks whose source (path or URL) starts with this prefix.
    pub source_prefix: Option<String>,
    /// Keep chunks of these kinds; empty: every kind.
    pub kinds: Vec<crate::ChunkKind>,
    /// Leave out the chunks of these documents (self-calibration retrieves as if a document
    /// were not indexed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_documents: Vec<crate::DocumentId>,
    /// Keep code chunks in these languages (`rust`, `python`...); empty: every language.
    /// Chunks without code metadata (prose, code cut into windows) do not pass a non-empty list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub languages: Vec<String>,
    /// Keep code chunks defining these kinds of symbol; empty: every kind. Chunks without code
    /// metadata do not pass a non-empty list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbol_kinds: Vec<crate::SymbolKind>,
    /// Keep chunks whose document's metadata passes this filter. Unlike the other fields,
    /// which are applied to each leg's candidates, it is applied inside both legs' searches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<crate::MetadataFilter>,
    /// The caller's scope: a metadata filter its token carries, ANDed with `metadata` inside
    /// both legs' searches. Unlike `metadata` it is not checked against the stored fields (a
    /// scope naming a field no document has yet passes nothing) and a request cannot widen it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::MetadataFilter>,
}

impl ChunkFilter {
    /// Whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        !self.filters_candidates() && self.metadata.is_none() && self.scope.is_none()
    }

    /// The metadata filter the searches apply: the scope and the request's filter, ANDed.
    pub fn search_metadata(&self) -> Option<crate::MetadataFilter> {
        match (&self.scope, &self.metadata) {
            (Some(scope), Some(metadata)) => Some(scope.clone().and(metadata.clone())),
            (Some(only), None) | (None, Some(only)) => Some(only.clone()),
            (None, None) => None,
        }
    }

    /// Whether the filter has conditions beyond its metadata filter and scope: those applied
    /// to each leg's candidates after the search.
    pub fn filters_candidates(&self) -> bool {
        self.source_prefix.as_deref().is_some_and(|p| !p.is_empty())
            || !self.kinds.is_empty()
            || !self.exclude_documents.is_empty()
            || self.needs_code()
    }

    /// Whether the filter reads code metadata (languages or symbol kinds), which the symbol
    /// index puts on chunks.
    pub fn needs_code(&self) -> bool {
        !self.languages.is_empty() || !self.symbol_kinds.is_empty()
    }

    /// Whether `chunk` passes the filter.
    pub fn matches(&self, chunk: &crate::Chunk) -> bool {
        self.source_prefix
            .as_deref()
            .is_none_or(|p| chunk.source.starts_with(p))
            && (self.kinds.is_empty() || self.kinds.contains(&chunk.kind))
            && !self.exclude_documents.contains(&chunk.document_id)
            && (self.languages.is_empty()
                || chunk
                    .code
                    .as_ref()
                    .is_some_and(|c| self.languages.contains(&c.language)))
            && (self.symbol_kinds.is_empty()
                || chunk
                    .code
                    .as_ref()
                    .is_some_and(|c| self.symbol_kinds.contains(&c.symbol_kind)))
            && [&self.metadata, &self.scope]
                .into_iter()
                .flatten()
                .all(|f| f.matches(&chunk.metadata))
    }
}

#[cfg(test)]
mod filter_tests {
    use super::*;
    use crate::{Chunk, ChunkId, ChunkKind, DocumentId, Span};

    fn chunk(source: &str, kind: ChunkKind) -> Chunk {
        let doc = DocumentId::new(source).unwrap();
        Chunk::new(
            ChunkId::for_document(&doc, 0),
            doc,
            source,
            "t",
            "text",
            Span::new(0, 4, 1, 1).unwrap(),
            kind,
            "h",
        )
        .unwrap()
    }

    #[test]
    fn filters_by_prefix_and_kind() {
        let code = chunk("src/lib.rs", ChunkKind::Code);
        let doc = chunk("docs/a.md", ChunkKind::Prose);
        assert!(ChunkFilter::default().is_empty());
        assert!(ChunkFilter::default().matches(&code));
        let src = ChunkFilter {
            source_prefix: Some("src/".into()),
            kinds: vec![],
            ..Default::default()
        };
        assert!(src.matches(&code) && !src.matches(&doc));
        let prose = ChunkFilter {
            source_prefix: None,
            kinds: vec![ChunkKind::Prose],
            ..Default::default()
        };
        assert!(!prose.matches(&code) && prose.matches(&doc));
        let both = ChunkFilter {
            source_prefix: Some("docs".into()),
            kinds: vec![ChunkKind::Code],
            ..Default::default()
        };
        assert!(!both.is_empty() && !both.matches(&doc) && !both.matches(&code));
        let without = ChunkFilter {
            exclude_documents: vec![doc.document_id.clone()],
            ..ChunkFilter::default()
        };
        assert!(!without.is_empty() && !without.matches(&doc) && without.matches(&code));
        let rust_fns = ChunkFilter {
            languages: vec!["rust".into()],
            symbol_kinds: vec![crate::SymbolKind::Function],
            ..ChunkFilter::default()
        };
        assert!(rust_fns.needs_code() && !rust_fns.is_empty());
        assert!(!rust_fns.matches(&code), "no code metadata: left out");
        let meta = crate::CodeMeta {
            language: "rust".into(),
            symbol: "main".into(),
            symbol_kind: crate::SymbolKind::Function,
            qualified: "app::main".into(),
            signature: "fn main()".into(),
            part: 0,
            parts: 1,
        };
        let typed = code.clone().with_code(meta.clone());
        assert!(rust_fns.matches(&typed));
        let python = code.clone().with_code(crate::CodeMeta {
            language: "python".into(),
            ..meta.clone()
        });
        assert!(!rust_fns.matches(&python));
        let method = code.with_code(crate::CodeMeta {
            symbol_kind: crate::SymbolKind::Method,
            ..meta
        });
        assert!(!rust_fns.matches(&method));
    }
}

/// An index term with a weight: one clause of a weighted keyword query (pseudo-relevance
/// feedback). The term is in the keyword index's analysed form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WeightedTerm {
    /// The term as the index stores it (analysed: lowercased, stemmed).
    pub term: String,
    /// Its weight (the boost of its clause), positive and finite.
    pub weight: f32,
}
