//! Whole documents beside their chunks: one row per document, in a second Tantivy index in
//! the keyword index's `documents/` directory, ranked by BM25F over the document's title and
//! its whole text.
//!
//! A chunk-level BM25 sees a document's words split across its chunks, each chunk with its
//! own length, and a document's score as its best chunk's loses the rest of its term
//! frequencies; a title kept as a second field with its own saturation counts a title word
//! twice over. Here a document is one row: `title` (its title) and `text` (its title, then
//! its text rebuilt from its chunks' byte spans), each term's frequencies combined across the
//! two fields before one saturation (BM25F, Robertson et al. 2004), its document frequency and
//! the mean lengths over documents. The rows are written before the chunks they are built
//! from (the chunk index is the catalogue): a row whose chunks are missing is never returned.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Mutex;

use crag_core::{Chunk, DocumentId, Metadata, MetadataFilter};
use crag_ports::{ErrorKind, PortError, PortResult};
use tantivy::collector::DocSetCollector;
use tantivy::directory::MmapDirectory;
use tantivy::query::EnableScoring;
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, TantivyDocument,
    TantivyError, Term,
};

use crate::bm25f::{Bm25f, Bm25fTermQuery};
use crate::error::{io_error, port_error};
use crate::filter;
use crate::maxscore::Bm25fDisjunction;
use crate::schema::ANALYZER;
use crate::top::{top_with_ties, top_with_ties_of};

/// The documents index's directory inside the keyword index's.
pub(crate) const DIRECTORY: &str = "documents";

/// Memory the documents writer may buffer before flushing a segment.
const WRITER_MEMORY_BUDGET: usize = 15_000_000;

/// The fields of a document row.
#[derive(Debug, Clone, Copy)]
struct Fields {
    document_id: Field,
    title: Field,
    text: Field,
    /// The document's metadata, indexed ([`crate::filter`]).
    metadata: Field,
}

impl Fields {
    fn schema() -> (Schema, Self) {
        let analyzed = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let mut builder = Schema::builder();
        let fields = Self {
            document_id: builder.add_text_field("document_id", STRING | STORED),
            title: builder.add_text_field("title", analyzed.clone()),
            text: builder.add_text_field("text", analyzed),
            metadata: builder.add_json_field(filter::FIELD, filter::options()),
        };
        (builder.build(), fields)
    }
}

/// A document as indexed: its id, title and whole text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DocumentRow {
    pub(crate) id: DocumentId,
    pub(crate) title: String,
    pub(crate) text: String,
    pub(crate) metadata: Metadata,
}

/// Rebuilds each document of `chunks` from its chunks: the title of its first chunk, the text
/// of its chunks in byte order with what consecutive chunks share written once.
pub(crate) fn rows_of<'a>(chunks: impl IntoIterator<Item = &'a Chunk>) -> Vec<DocumentRow> {
    let mut by_document: BTreeMap<&DocumentId, Vec<&Chunk>> = BTreeMap::new();
    for chunk in chunks {
        by_document
            .entry(&chunk.document_id)
            .or_default()
            .push(chunk);
    }
    by_document
        .into_iter()
        .map(|(id, mut chunks)| {
            chunks.sort_by(|a, b| {
                (a.span.byte_start, a.span.byte_end, &a.id).cmp(&(
                    b.span.byte_start,
                    b.span.byte_end,
                    &b.id,
                ))
            });
            let mut text = String::new();
            let mut end = 0u64;
            for chunk in &chunks {
                let (start, stop) = (chunk.span.byte_start, chunk.span.byte_end);
                // What this chunk shares with the text written so far, when its span says it
                // overlaps and its text agrees (spans that do not describe the text, as in
                // hand-made chunks, write the whole chunk).
                let shared = (start < end && !text.is_empty())
                    .then(|| usize::try_from(end - start).ok())
                    .flatten()
                    .and_then(|n| chunk.text.get(..n))
                    .filter(|head| text.ends_with(head));
                match shared {
                    Some(head) => text.push_str(&chunk.text[head.len()..]),
                    None => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&chunk.text);
                    }
                }
                end = end.max(stop);
            }
            let title = chunks[0].title.clone();
            DocumentRow {
                id: id.clone(),
                metadata: chunks[0].metadata.clone(),
                text: if title.is_empty() {
                    text
                } else {
                    format!("{title}\n{text}")
                },
                title,
            }
        })
        .collect()
}

/// The documents index: one row per document, written through one writer.
pub(crate) struct DocumentIndex {
    fields: Fields,
    analyzer: TextAnalyzer,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
}

impl fmt::Debug for DocumentIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DocumentIndex").finish_non_exhaustive()
    }
}

impl DocumentIndex {
    /// Opens (or creates) the documents index in `keyword_dir`'s `documents/` directory.
    pub(crate) fn open(keyword_dir: &Path, analyzer: TextAnalyzer) -> PortResult<Self> {
        const MESSAGE: &str = "failed to open the keyword index's documents";
        let dir = keyword_dir.join(DIRECTORY);
        std::fs::create_dir_all(&dir).map_err(io_error(MESSAGE))?;
        let directory = MmapDirectory::open(&dir)
            .map_err(|err| PortError::with_source(ErrorKind::Unavailable, MESSAGE, err))?;
        let (schema, fields) = Fields::schema();
        let index = match Index::open_or_create(directory, schema.clone()) {
            // Rows written by an earlier release (without metadata): they are rebuilt from
            // the chunks, which the caller's writer lock keeps from changing meanwhile.
            Err(TantivyError::SchemaError(_)) => {
                tracing::info!(path = %dir.display(), "rebuilding the documents of a keyword index from an earlier release");
                std::fs::remove_dir_all(&dir).map_err(io_error(MESSAGE))?;
                std::fs::create_dir_all(&dir).map_err(io_error(MESSAGE))?;
                let directory = MmapDirectory::open(&dir)
                    .map_err(|err| PortError::with_source(ErrorKind::Unavailable, MESSAGE, err))?;
                Index::open_or_create(directory, schema).map_err(port_error(MESSAGE))?
            }
            index => index.map_err(port_error(MESSAGE))?,
        };
        index.tokenizers().register(ANALYZER, analyzer.clone());
        let writer = index
            .writer_with_num_threads(1, WRITER_MEMORY_BUDGET)
            .map_err(|err| PortError::with_source(ErrorKind::Unavailable, MESSAGE, err))?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(port_error(MESSAGE))?;
        Ok(Self {
            fields,
            analyzer,
            reader,
            writer: Mutex::new(writer),
        })
    }

    /// The number of live document rows.
    pub(crate) fn count(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Removes the rows of `removed` and of every document in `rows`, adds `rows`, commits.
    pub(crate) fn write(&self, removed: &[DocumentId], rows: &[DocumentRow]) -> PortResult<()> {
        const MESSAGE: &str = "failed to write the keyword index's documents";
        if removed.is_empty() && rows.is_empty() {
            return Ok(());
        }
        let mut writer = match self.writer.lock() {
            Ok(writer) => writer,
            Err(poisoned) => {
                let mut writer = poisoned.into_inner();
                writer.rollback().map_err(port_error(MESSAGE))?;
                self.writer.clear_poison();
                writer
            }
        };
        let term = |id: &DocumentId| Term::from_field_text(self.fields.document_id, id.as_str());
        let mut added = || -> tantivy::Result<()> {
            for id in removed {
                writer.delete_term(term(id));
            }
            for row in rows {
                writer.delete_term(term(&row.id));
                let mut doc = TantivyDocument::new();
                doc.add_text(self.fields.document_id, row.id.as_str());
                doc.add_text(self.fields.title, &row.title);
                doc.add_text(self.fields.text, &row.text);
                if !row.metadata.is_empty() {
                    doc.add_object(self.fields.metadata, filter::indexed(&row.metadata));
                }
                writer.add_document(doc)?;
            }
            writer.commit()?;
            Ok(())
        };
        if let Err(err) = added() {
            if let Err(rollback) = writer.rollback() {
                tracing::warn!(error = %rollback, "failed to roll back the documents writer");
            }
            return Err(port_error(MESSAGE)(err));
        }
        self.reader.reload().map_err(port_error(MESSAGE))
    }

    /// The analysed, deduplicated words of `text` with weight 1.
    pub(crate) fn query_words(&self, text: &str) -> Vec<(String, Score)> {
        let mut analyzer = self.analyzer.clone();
        let mut words = std::collections::BTreeSet::new();
        analyzer.token_stream(text).process(&mut |token| {
            words.insert(token.text.clone());
        });
        words.into_iter().map(|w| (w, 1.0)).collect()
    }

    /// The best `k` documents for weighted analysed words, best first (ties by id), among
    /// those `filter` passes.
    pub(crate) fn search(
        &self,
        words: &[(String, Score)],
        k: usize,
        params: Bm25f,
        filter: Option<&MetadataFilter>,
    ) -> PortResult<Vec<(DocumentId, Score)>> {
        const MESSAGE: &str = "failed to search the keyword index's documents";
        let words: Vec<Bm25fTermQuery> = words
            .iter()
            .filter(|(w, weight)| !w.is_empty() && weight.is_finite() && *weight > 0.0)
            .map(|(word, weight)| {
                Bm25fTermQuery::new(
                    Term::from_field_text(self.fields.title, word),
                    Term::from_field_text(self.fields.text, word),
                    params,
                    *weight,
                )
            })
            .collect();
        if words.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let disjunction = Bm25fDisjunction::new(words);
        let hits = match filter {
            // Unfiltered, a large index's segments are searched by ranges of documents too.
            None => disjunction
                .disjunction_weight(EnableScoring::enabled_from_searcher(&searcher))
                .and_then(|weight| top_with_ties_of(&searcher, &weight, k)),
            Some(_) => {
                let query = filter::restrict(Box::new(disjunction), self.fields.metadata, filter);
                top_with_ties(&searcher, query.as_ref(), k)
            }
        }
        .map_err(port_error(MESSAGE))?;
        let mut found = hits
            .into_iter()
            .map(|(score, address)| Ok((self.document_id(&searcher, address)?, score)))
            .collect::<PortResult<Vec<_>>>()?;
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        found.truncate(k);
        Ok(found)
    }
}

impl DocumentIndex {
    fn document_id(&self, searcher: &Searcher, address: DocAddress) -> PortResult<DocumentId> {
        const MESSAGE: &str = "failed to read the keyword index's documents";
        let doc: TantivyDocument = searcher.doc(address).map_err(port_error(MESSAGE))?;
        let id = doc
            .get_first(self.fields.document_id)
            .and_then(|v| v.as_str())
            .ok_or_else(|| PortError::new(ErrorKind::Internal, MESSAGE))?;
        DocumentId::new(id).map_err(|e| PortError::internal(MESSAGE, e))
    }

    /// Every document `filter` passes, ordered by id.
    pub(crate) fn filtered(&self, filter: &MetadataFilter) -> PortResult<Vec<DocumentId>> {
        const MESSAGE: &str = "failed to filter the keyword index's documents";
        let searcher = self.reader.searcher();
        let query = filter::query(self.fields.metadata, filter);
        let addresses = searcher
            .search(query.as_ref(), &DocSetCollector)
            .map_err(port_error(MESSAGE))?;
        let mut ids = addresses
            .into_iter()
            .map(|address| self.document_id(&searcher, address))
            .collect::<PortResult<Vec<_>>>()?;
        ids.sort();
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use crag_core::{ChunkId, ChunkKind, Span};

    use super::*;

    fn piece(document: &str, ordinal: usize, text: &str, start: u64) -> Chunk {
        let id = DocumentId::new(document).unwrap();
        let span = Span::new(start, start + text.len() as u64, 1, 1).unwrap();
        Chunk::new(
            ChunkId::for_document(&id, ordinal),
            id,
            document,
            "A title",
            text,
            span,
            ChunkKind::Prose,
            "hash",
        )
        .unwrap()
    }

    #[test]
    fn a_document_is_rebuilt_from_overlapping_chunks_in_byte_order() {
        // "one two three four five": chunks "one two three" (0..13) and "three four five"
        // (8..23) share "three".
        let whole = "one two three four five";
        let rows = rows_of(&[
            piece("d", 1, &whole[8..], 8),
            piece("d", 0, &whole[..13], 0),
        ]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].text, format!("A title\n{whole}"));
        assert_eq!(rows[0].title, "A title");
    }

    #[test]
    fn chunks_whose_spans_do_not_describe_their_text_are_written_whole() {
        let rows = rows_of(&[
            piece("d", 0, "alpha beta", 0),
            piece("d", 1, "gamma delta", 0),
        ]);
        assert_eq!(rows[0].text, "A title\nalpha beta\ngamma delta");
        let rows = rows_of(&[piece("a", 0, "x", 0), piece("b", 0, "y", 0)]);
        let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
    }
}
