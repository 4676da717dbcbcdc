//! Schema, analyzer and conversions between chunks and Tantivy documents.

use std::collections::BTreeSet;
use std::path::Path;

use crag_core::{Chunk, ChunkId, ChunkKind, DocumentId, Metadata, Span};
use crag_ports::{ErrorKind, PortError};
use tantivy::directory::MmapDirectory;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{Index, TantivyError};

use crate::analysis::CragTextTokenizer;
use crate::error::port_error;
use crate::filter;
use tantivy::{TantivyDocument, Term};

/// Name under which the English analyzer is registered on the index.
pub(crate) const ANALYZER: &str = "crag_en";

/// Builds the analyzer of titles, texts and queries: `crag-text`'s analysis (the same terms
/// as Tantivy's English chain of simple tokenizer, 40-byte limit, lowercasing, ASCII folding,
/// Lucene's stop words and the Snowball stemmer; tested token for token).
pub(crate) fn analyzer() -> Result<TextAnalyzer, PortError> {
    Ok(TextAnalyzer::builder(CragTextTokenizer::default()).build())
}

/// Opens the index in the existing directory `dir`, creating it when there is none: with the
/// current schema, or with the one before token counts were stored when it was written with
/// that one (it opens and takes writes as it is; its chunks carry no count).
pub(crate) fn open_index(dir: &Path) -> Result<(Index, Fields), PortError> {
    const MESSAGE: &str = "failed to open keyword index";
    let directory = MmapDirectory::open(dir)
        .map_err(|err| PortError::with_source(ErrorKind::Unavailable, MESSAGE, err))?;
    open_in(directory, dir).map_err(port_error(MESSAGE))
}

fn open_in(directory: MmapDirectory, path: &Path) -> tantivy::Result<(Index, Fields)> {
    let mut last = None;
    for version in [
        Version::Current,
        Version::WithoutMetadata,
        Version::WithoutTokens,
    ] {
        let (schema, fields) = Fields::schema_of(version);
        match Index::open_or_create(directory.clone(), schema) {
            Err(err @ TantivyError::SchemaError(_)) => last = Some(err),
            index => {
                if version != Version::Current {
                    tracing::info!(
                        path = %path.display(),
                        ?version,
                        "keyword index from an earlier release: metadata filters are refused \
                         (and results counted at query time when it stores no token counts) \
                         until `crag reconcile` (or a server's start) upgrades it"
                    );
                }
                return Ok((index?, fields));
            }
        }
    }
    Err(last.unwrap_or_else(|| TantivyError::SchemaError("no schema matched".into())))
}

/// The versions of the schema an index may have been written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// Chunks stored without their token count (before 2026-11-26): read, and written to,
    /// as they are.
    WithoutTokens,
    /// Chunks stored with their token count but without metadata (before 2026-11-27): read,
    /// and written to, as they are; their metadata is derived from their source and kind.
    WithoutMetadata,
    /// The schema of new indexes.
    Current,
}

/// The fields of the index schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    chunk_id: Field,
    document_id: Field,
    source: Field,
    pub(crate) title: Field,
    body: Field,
    kind: Field,
    byte_start: Field,
    byte_end: Field,
    line_start: Field,
    line_end: Field,
    content_hash: Field,
    /// The chunk's token count; absent from indexes written before it was stored.
    tokens: Option<Field>,
    /// The document's metadata, indexed ([`crate::filter`]); absent from indexes written
    /// before metadata was stored.
    pub(crate) metadata: Option<Field>,
    /// The document's metadata as JSON text, as given.
    metadata_json: Option<Field>,
}

impl Fields {
    /// Builds the schema of `version` and the handles of its fields.
    pub(crate) fn schema_of(version: Version) -> (Schema, Self) {
        let analyzed = TextOptions::default().set_stored().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let mut builder = Schema::builder();
        let fields = Self {
            chunk_id: builder.add_text_field("chunk_id", STRING | STORED),
            document_id: builder.add_text_field("document_id", STRING | STORED),
            source: builder.add_text_field("source", STORED),
            title: builder.add_text_field("title", analyzed.clone()),
            body: builder.add_text_field("body", analyzed),
            kind: builder.add_text_field("kind", STRING | STORED),
            byte_start: builder.add_u64_field("byte_start", STORED),
            byte_end: builder.add_u64_field("byte_end", STORED),
            line_start: builder.add_u64_field("line_start", STORED),
            line_end: builder.add_u64_field("line_end", STORED),
            content_hash: builder.add_text_field("content_hash", STORED),
            tokens: (version != Version::WithoutTokens)
                .then(|| builder.add_u64_field("tokens", STORED)),
            metadata: (version == Version::Current)
                .then(|| builder.add_json_field(filter::FIELD, filter::options())),
            metadata_json: (version == Version::Current)
                .then(|| builder.add_text_field("metadata_json", STORED)),
        };
        (builder.build(), fields)
    }

    /// Whether the index has the current schema (token counts and metadata stored).
    pub(crate) fn is_current(&self) -> bool {
        self.tokens.is_some() && self.metadata.is_some()
    }

    /// Returns the term identifying a chunk.
    pub(crate) fn chunk_term(&self, id: &ChunkId) -> Term {
        Term::from_field_text(self.chunk_id, id.as_str())
    }

    /// Returns the term shared by every chunk of a document.
    pub(crate) fn document_term(&self, id: &DocumentId) -> Term {
        Term::from_field_text(self.document_id, id.as_str())
    }

    /// Returns the deduplicated terms of `text` in the title and body fields.
    pub(crate) fn query_terms(&self, analyzer: &TextAnalyzer, text: &str) -> Vec<Term> {
        let mut analyzer = analyzer.clone();
        let mut words = BTreeSet::new();
        analyzer.token_stream(text).process(&mut |token| {
            words.insert(token.text.clone());
        });
        words
            .iter()
            .flat_map(|word| self.field_terms(word))
            .collect()
    }

    /// An analysed word as a term of the title and of the body.
    pub(crate) fn field_terms(&self, word: &str) -> [Term; 2] {
        [
            Term::from_field_text(self.title, word),
            Term::from_field_text(self.body, word),
        ]
    }

    /// Converts a chunk into the document stored for it.
    pub(crate) fn document_of(&self, chunk: &Chunk) -> TantivyDocument {
        let mut doc = TantivyDocument::new();
        doc.add_text(self.chunk_id, chunk.id.as_str());
        doc.add_text(self.document_id, chunk.document_id.as_str());
        doc.add_text(self.source, &chunk.source);
        doc.add_text(self.title, &chunk.title);
        doc.add_text(self.body, &chunk.text);
        doc.add_text(self.kind, chunk.kind.as_str());
        doc.add_u64(self.byte_start, chunk.span.byte_start);
        doc.add_u64(self.byte_end, chunk.span.byte_end);
        doc.add_u64(self.line_start, u64::from(chunk.span.line_start));
        doc.add_u64(self.line_end, u64::from(chunk.span.line_end));
        doc.add_text(self.content_hash, &chunk.content_hash);
        if let (Some(field), Some(tokens)) = (self.tokens, chunk.tokens) {
            doc.add_u64(field, u64::from(tokens));
        }
        if let (Some(field), Some(json)) = (self.metadata, self.metadata_json) {
            if !chunk.metadata.is_empty() {
                doc.add_object(field, filter::indexed(&chunk.metadata));
                doc.add_text(
                    json,
                    serde_json::Value::Object(chunk.metadata.clone()).to_string(),
                );
            }
        }
        doc
    }

    /// Rebuilds the chunk stored in `doc`.
    pub(crate) fn chunk_of(&self, doc: &TantivyDocument) -> Result<Chunk, PortError> {
        let kind: ChunkKind = text(doc, self.kind)?.parse().map_err(corrupt)?;
        Ok(Chunk {
            id: self.chunk_id(doc)?,
            document_id: self.document_id(doc)?,
            source: text(doc, self.source)?.to_owned(),
            title: text(doc, self.title)?.to_owned(),
            text: text(doc, self.body)?.to_owned(),
            span: Span {
                byte_start: number(doc, self.byte_start)?,
                byte_end: number(doc, self.byte_end)?,
                line_start: line(doc, self.line_start)?,
                line_end: line(doc, self.line_end)?,
            },
            kind,
            content_hash: self.content_hash(doc)?.to_owned(),
            code: None,
            tokens: self
                .tokens
                .and_then(|field| doc.get_first(field))
                .and_then(|value| value.as_u64())
                .and_then(|tokens| u32::try_from(tokens).ok()),
            metadata: Metadata::new(),
        }
        .with_metadata(self.metadata_of(doc, kind)?))
    }

    /// The metadata stored in `doc`; for an index written before metadata was stored, the
    /// fields derived from the chunk's source and kind.
    fn metadata_of(&self, doc: &TantivyDocument, kind: ChunkKind) -> Result<Metadata, PortError> {
        match self.metadata_json {
            Some(field) => match doc.get_first(field).and_then(|v| v.as_str()) {
                Some(json) => {
                    serde_json::from_str(json).map_err(|e| PortError::internal(CORRUPT, e))
                }
                None => Ok(Metadata::new()),
            },
            None => {
                let mut derived = Metadata::new();
                derived.insert("source".into(), text(doc, self.source)?.into());
                derived.insert("kind".into(), kind.as_str().into());
                Ok(derived)
            }
        }
    }

    /// Reads the chunk id stored in `doc`.
    pub(crate) fn chunk_id(&self, doc: &TantivyDocument) -> Result<ChunkId, PortError> {
        ChunkId::new(text(doc, self.chunk_id)?).map_err(corrupt)
    }

    /// Reads the document id stored in `doc`.
    pub(crate) fn document_id(&self, doc: &TantivyDocument) -> Result<DocumentId, PortError> {
        DocumentId::new(text(doc, self.document_id)?).map_err(corrupt)
    }

    /// Reads the content hash stored in `doc`.
    pub(crate) fn content_hash<'a>(&self, doc: &'a TantivyDocument) -> Result<&'a str, PortError> {
        text(doc, self.content_hash)
    }
}

const CORRUPT: &str = "corrupt keyword index document";

fn corrupt(err: crag_core::CoreError) -> PortError {
    PortError::internal(CORRUPT, err)
}

fn missing() -> PortError {
    PortError::new(crag_ports::ErrorKind::Internal, CORRUPT)
}

fn text(doc: &TantivyDocument, field: Field) -> Result<&str, PortError> {
    doc.get_first(field)
        .and_then(|value| value.as_str())
        .ok_or_else(missing)
}

fn number(doc: &TantivyDocument, field: Field) -> Result<u64, PortError> {
    doc.get_first(field)
        .and_then(|value| value.as_u64())
        .ok_or_else(missing)
}

fn line(doc: &TantivyDocument, field: Field) -> Result<u32, PortError> {
    u32::try_from(number(doc, field)?).map_err(|_| missing())
}
