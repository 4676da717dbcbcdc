use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::ids::{ChunkId, DocumentId};
use crate::metadata::Metadata;

/// What a chunk holds, which decides how it is chunked and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkKind {
    /// Natural-language text (Markdown, plain text, abstracts).
    Prose,
    /// Source code.
    Code,
    /// A web search result.
    Web,
}

impl ChunkKind {
    /// Returns the lowercase name used in indexes and wire formats.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prose => "prose",
            Self::Code => "code",
            Self::Web => "web",
        }
    }
}

impl fmt::Display for ChunkKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ChunkKind {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "prose" => Ok(Self::Prose),
            "code" => Ok(Self::Code),
            "web" => Ok(Self::Web),
            other => Err(CoreError::invalid(
                "chunk kind",
                format!("unknown kind `{other}`"),
            )),
        }
    }
}

/// Where a chunk sits in its document: byte range `[byte_start, byte_end)` and the 1-based,
/// inclusive line range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First byte of the chunk.
    pub byte_start: u64,
    /// One past the last byte of the chunk.
    pub byte_end: u64,
    /// First line (1-based).
    pub line_start: u32,
    /// Last line (1-based, inclusive).
    pub line_end: u32,
}

impl Span {
    /// Validates that the ranges are ordered and lines are 1-based.
    pub fn new(byte_start: u64, byte_end: u64, line_start: u32, line_end: u32) -> Result<Self> {
        if byte_end < byte_start {
            return Err(CoreError::invalid("span", "byte end before byte start"));
        }
        if line_start == 0 || line_end < line_start {
            return Err(CoreError::invalid(
                "span",
                "lines must be 1-based and ordered",
            ));
        }
        Ok(Self {
            byte_start,
            byte_end,
            line_start,
            line_end,
        })
    }
}

/// A whole document before chunking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Stable identifier.
    pub id: DocumentId,
    /// Path or URL shown to users.
    pub source: String,
    /// Title (file name, front-matter title or corpus title).
    pub title: String,
    /// Full text.
    pub text: String,
    /// Prose, code or web.
    pub kind: ChunkKind,
    /// The document's metadata: its own fields and those crag derives
    /// ([`crate::DERIVED_FIELDS`]); every chunk of the document carries it.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Document {
    /// Builds a document, rejecting empty text.
    pub fn new(
        id: DocumentId,
        source: impl Into<String>,
        title: impl Into<String>,
        text: impl Into<String>,
        kind: ChunkKind,
    ) -> Result<Self> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(CoreError::invalid("document", "text is empty"));
        }
        Ok(Self {
            id,
            source: source.into(),
            title: title.into(),
            text,
            kind,
            metadata: Metadata::new(),
        })
    }

    /// Returns the document with `metadata` merged into its metadata (keys given replace).
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata.extend(metadata);
        self
    }

    /// Returns the BLAKE3 hash of everything that affects indexing (title, kind, text, and the
    /// document's own metadata, in a canonical form; the derived fields are left out, so a
    /// file touched but unchanged is not ingested again).
    pub fn content_hash(&self) -> String {
        let mut hasher = blake3::Hasher::new();
        hasher.update(self.kind.as_str().as_bytes());
        hasher.update(&[0]);
        hasher.update(self.title.as_bytes());
        hasher.update(&[0]);
        hasher.update(self.text.as_bytes());
        let own = crate::metadata::canonical_own(&self.metadata);
        if !own.is_empty() {
            hasher.update(&[0]);
            hasher.update(own.as_bytes());
        }
        hasher.finalize().to_hex().to_string()
    }
}

/// A retrievable piece of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Unique chunk id.
    pub id: ChunkId,
    /// Document the chunk belongs to.
    pub document_id: DocumentId,
    /// Path or URL of the document.
    pub source: String,
    /// Title of the document.
    pub title: String,
    /// The chunk's text.
    pub text: String,
    /// Position in the document.
    pub span: Span,
    /// Prose, code or web.
    pub kind: ChunkKind,
    /// Content hash of the whole document at ingestion time.
    pub content_hash: String,
    /// What the chunk's code defines, for syntax-aware code chunks (kept by the symbol index,
    /// not by the keyword and vector indexes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<crate::CodeMeta>,
    /// Tokens of `text` as the embedder's tokenizer counted them when the chunk was cut (the
    /// chunk's token window), so that a query need not tokenise it again; `None` when unknown.
    /// Whoever changes `text` clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u32>,
    /// The metadata of the chunk's document (see [`Document::metadata`]).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Chunk {
    /// Builds a chunk, rejecting empty text.
    #[expect(clippy::too_many_arguments, reason = "a plain record of eight fields")]
    pub fn new(
        id: ChunkId,
        document_id: DocumentId,
        source: impl Into<String>,
        title: impl Into<String>,
        text: impl Into<String>,
        span: Span,
        kind: ChunkKind,
        content_hash: impl Into<String>,
    ) -> Result<Self> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(CoreError::invalid("chunk", "text is empty"));
        }
        Ok(Self {
            id,
            document_id,
            source: source.into(),
            title: title.into(),
            text,
            span,
            kind,
            content_hash: content_hash.into(),
            code: None,
            tokens: None,
            metadata: Metadata::new(),
        })
    }

    /// Returns the chunk with its document's metadata set.
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// Returns the chunk with its token count set (see [`Chunk::tokens`]).
    pub fn with_tokens(mut self, tokens: usize) -> Self {
        self.tokens = u32::try_from(tokens).ok();
        self
    }

    /// Returns the chunk with its code metadata set.
    pub fn with_code(mut self, code: crate::CodeMeta) -> Self {
        self.code = Some(code);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_reject_blank_and_control_characters() {
        assert!(DocumentId::new("").is_err());
        assert!(DocumentId::new("  ").is_err());
        assert!(DocumentId::new("a\nb").is_err());
        assert!(DocumentId::new("x".repeat(crate::ids::MAX_ID_BYTES + 1)).is_err());
        assert!(DocumentId::new("docs/README.md").is_ok());
        assert!(ChunkId::new("\u{0}").is_err());
    }

    #[test]
    fn chunk_id_is_document_and_ordinal() {
        let doc = DocumentId::new("a/b.md").unwrap();
        assert_eq!(ChunkId::for_document(&doc, 3).as_str(), "a/b.md#3");
    }

    #[test]
    fn span_validation() {
        assert!(Span::new(5, 4, 1, 1).is_err());
        assert!(Span::new(0, 4, 0, 1).is_err());
        assert!(Span::new(0, 4, 2, 1).is_err());
        assert!(Span::new(0, 4, 1, 3).is_ok());
    }

    #[test]
    fn kind_round_trips() {
        for kind in [ChunkKind::Prose, ChunkKind::Code, ChunkKind::Web] {
            assert_eq!(kind.as_str().parse::<ChunkKind>().unwrap(), kind);
        }
        assert!("pdf".parse::<ChunkKind>().is_err());
    }

    #[test]
    fn content_hash_changes_with_text_and_title() {
        let id = DocumentId::new("d").unwrap();
        let a = Document::new(id.clone(), "s", "t", "hello", ChunkKind::Prose).unwrap();
        let b = Document::new(id.clone(), "s", "t", "hello!", ChunkKind::Prose).unwrap();
        let c = Document::new(id, "s", "T", "hello", ChunkKind::Prose).unwrap();
        assert_ne!(a.content_hash(), b.content_hash());
        assert_ne!(a.content_hash(), c.content_hash());
        assert_eq!(a.content_hash(), a.clone().content_hash());
    }

    #[test]
    fn empty_documents_are_rejected() {
        let id = DocumentId::new("d").unwrap();
        assert!(Document::new(id, "s", "t", " \n", ChunkKind::Prose).is_err());
    }
}
