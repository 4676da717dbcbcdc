//! The table's Arrow schema and the conversions between chunks and record batches.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, Float32Array, LargeStringArray, RecordBatch, StringArray,
    StringViewArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use crag_core::{Chunk, ChunkId, DocumentId, Span};
use crag_ports::{EmbeddedChunk, ErrorKind, PortError, PortResult};

/// Column of the chunk id, the key of upserts.
pub(crate) const CHUNK_ID: &str = "chunk_id";
/// Column of the document id, the key of deletes.
pub(crate) const DOCUMENT_ID: &str = "document_id";
const SOURCE: &str = "source";
const TITLE: &str = "title";
const TEXT: &str = "text";
const KIND: &str = "kind";
const BYTE_START: &str = "byte_start";
const BYTE_END: &str = "byte_end";
const LINE_START: &str = "line_start";
const LINE_END: &str = "line_end";
/// Column of the content hash of the chunk's document.
pub(crate) const CONTENT_HASH: &str = "content_hash";
/// Column of the embeddings.
pub(crate) const VECTOR: &str = "vector";
/// Column LanceDB adds to vector search results.
const DISTANCE: &str = "_distance";

/// The columns [`read_document_rows`] reads.
pub(crate) const DOCUMENT_COLUMNS: &[&str] = &[DOCUMENT_ID, CHUNK_ID, CONTENT_HASH];

/// Every column but the vector, and the distance: what a search reads back. Naming `_distance`
/// explicitly keeps LanceDB from warning that it will stop adding it on its own.
pub(crate) const SEARCH_COLUMNS: &[&str] = &[
    CHUNK_ID,
    DOCUMENT_ID,
    SOURCE,
    TITLE,
    TEXT,
    KIND,
    BYTE_START,
    BYTE_END,
    LINE_START,
    LINE_END,
    CONTENT_HASH,
    DISTANCE,
];

/// The schema of a table of chunks with vectors of one dimension.
#[derive(Debug)]
pub(crate) struct ChunkSchema {
    dimension: usize,
    /// Arrow length of the vectors (Arrow sizes lists with `i32`).
    list_size: i32,
    item: FieldRef,
    arrow: SchemaRef,
}

impl ChunkSchema {
    /// Builds the schema for vectors of `dimension`, which must be positive.
    pub(crate) fn new(dimension: usize) -> PortResult<Self> {
        let list_size = i32::try_from(dimension)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                PortError::invalid_input(format!(
                    "vector dimension must be between 1 and {}, got {dimension}",
                    i32::MAX
                ))
            })?;
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let string = |name: &str| Field::new(name, DataType::Utf8, false);
        let arrow = Arc::new(Schema::new(vec![
            string(CHUNK_ID),
            string(DOCUMENT_ID),
            string(SOURCE),
            string(TITLE),
            string(TEXT),
            string(KIND),
            Field::new(BYTE_START, DataType::UInt64, false),
            Field::new(BYTE_END, DataType::UInt64, false),
            Field::new(LINE_START, DataType::UInt32, false),
            Field::new(LINE_END, DataType::UInt32, false),
            string(CONTENT_HASH),
            Field::new(
                VECTOR,
                DataType::FixedSizeList(item.clone(), list_size),
                false,
            ),
        ]));
        Ok(Self {
            dimension,
            list_size,
            item,
            arrow,
        })
    }

    /// Returns the dimension of the vectors.
    pub(crate) fn dimension(&self) -> usize {
        self.dimension
    }

    /// Returns the Arrow schema.
    pub(crate) fn arrow(&self) -> SchemaRef {
        self.arrow.clone()
    }

    /// Checks that the schema of the existing table `table` is this one (nullability aside).
    pub(crate) fn check_compatible(&self, table: &str, stored: &Schema) -> PortResult<()> {
        let vector = stored.field_with_name(VECTOR).map_err(|_| {
            PortError::invalid_input(format!("vector table `{table}` has no `{VECTOR}` column"))
        })?;
        match vector.data_type() {
            DataType::FixedSizeList(item, size) if item.data_type() == &DataType::Float32 => {
                if *size != self.list_size {
                    return Err(PortError::invalid_input(format!(
                        "vector table `{table}` stores vectors of dimension {size}, expected {}",
                        self.dimension
                    )));
                }
            }
            other => {
                return Err(PortError::invalid_input(format!(
                    "vector table `{table}` has a `{VECTOR}` column of type {other}, expected \
                     fixed-size lists of float32"
                )));
            }
        }
        for expected in self.arrow.fields() {
            match stored.field_with_name(expected.name()) {
                Ok(found) if found.data_type() == expected.data_type() => {}
                Ok(found) => {
                    return Err(PortError::invalid_input(format!(
                        "vector table `{table}` has a `{}` column of type {}, expected {}",
                        expected.name(),
                        found.data_type(),
                        expected.data_type()
                    )));
                }
                Err(_) => {
                    return Err(PortError::invalid_input(format!(
                        "vector table `{table}` has no `{}` column",
                        expected.name()
                    )));
                }
            }
        }
        Ok(())
    }

    /// Builds one record batch of `records`, whose vectors have been validated.
    pub(crate) fn to_batch(&self, records: &[&EmbeddedChunk]) -> PortResult<RecordBatch> {
        let strings = |get: fn(&Chunk) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(
                records.iter().map(|r| get(&r.chunk)),
            ))
        };
        let u64s = |get: fn(&Span) -> u64| -> ArrayRef {
            Arc::new(UInt64Array::from_iter_values(
                records.iter().map(|r| get(&r.chunk.span)),
            ))
        };
        let u32s = |get: fn(&Span) -> u32| -> ArrayRef {
            Arc::new(UInt32Array::from_iter_values(
                records.iter().map(|r| get(&r.chunk.span)),
            ))
        };
        let values =
            Float32Array::from_iter_values(records.iter().flat_map(|r| r.vector.iter().copied()));
        let vectors =
            FixedSizeListArray::try_new(self.item.clone(), self.list_size, Arc::new(values), None)
                .map_err(|e| PortError::internal("failed to build vector column", e))?;
        let columns: Vec<ArrayRef> = vec![
            strings(|c| c.id.as_str()),
            strings(|c| c.document_id.as_str()),
            strings(|c| &c.source),
            strings(|c| &c.title),
            strings(|c| &c.text),
            strings(|c| c.kind.as_str()),
            u64s(|s| s.byte_start),
            u64s(|s| s.byte_end),
            u32s(|s| s.line_start),
            u32s(|s| s.line_end),
            strings(|c| &c.content_hash),
            Arc::new(vectors),
        ];
        RecordBatch::try_new(self.arrow(), columns)
            .map_err(|e| PortError::internal("failed to build record batch", e))
    }
}

fn corrupt(message: impl Into<String>) -> PortError {
    PortError::new(ErrorKind::Internal, message)
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> PortResult<&'a T> {
    batch
        .column_by_name(name)
        .ok_or_else(|| corrupt(format!("search result lacks column `{name}`")))?
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| corrupt(format!("column `{name}` has an unexpected type")))
}

/// A string column in any of Arrow's string layouts.
enum Strings<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl<'a> Strings<'a> {
    fn of(batch: &'a RecordBatch, name: &'static str) -> PortResult<Self> {
        let array = batch
            .column_by_name(name)
            .ok_or_else(|| corrupt(format!("search result lacks column `{name}`")))?;
        let any = array.as_any();
        if let Some(a) = any.downcast_ref::<StringArray>() {
            Ok(Self::Utf8(a))
        } else if let Some(a) = any.downcast_ref::<LargeStringArray>() {
            Ok(Self::Large(a))
        } else if let Some(a) = any.downcast_ref::<StringViewArray>() {
            Ok(Self::View(a))
        } else {
            Err(corrupt(format!("column `{name}` is not a string column")))
        }
    }

    fn get(&self, row: usize) -> Option<&'a str> {
        match self {
            Self::Utf8(a) => a.is_valid(row).then(|| a.value(row)),
            Self::Large(a) => a.is_valid(row).then(|| a.value(row)),
            Self::View(a) => a.is_valid(row).then(|| a.value(row)),
        }
    }
}

fn not_null<T>(value: Option<T>, name: &str) -> PortResult<T> {
    value.ok_or_else(|| corrupt(format!("null in column `{name}`")))
}

fn primitive<A, T>(array: &A, row: usize, name: &str, value: fn(&A, usize) -> T) -> PortResult<T>
where
    A: Array,
{
    not_null(array.is_valid(row).then(|| value(array, row)), name)
}

/// Reads `(document id, chunk id, content hash)` of each row of a batch of the
/// [`DOCUMENT_COLUMNS`].
pub(crate) fn read_document_rows(
    batch: &RecordBatch,
) -> PortResult<Vec<(DocumentId, ChunkId, String)>> {
    let document_ids = Strings::of(batch, DOCUMENT_ID)?;
    let chunk_ids = Strings::of(batch, CHUNK_ID)?;
    let hashes = Strings::of(batch, CONTENT_HASH)?;
    (0..batch.num_rows())
        .map(|row| {
            let document = not_null(document_ids.get(row), DOCUMENT_ID)?;
            let chunk = not_null(chunk_ids.get(row), CHUNK_ID)?;
            let hash = not_null(hashes.get(row), CONTENT_HASH)?;
            Ok((
                DocumentId::new(document).map_err(|e| corrupt(format!("bad document id: {e}")))?,
                ChunkId::new(chunk).map_err(|e| corrupt(format!("bad chunk id: {e}")))?,
                hash.to_owned(),
            ))
        })
        .collect()
}

/// Reads the chunk ids and stored vectors of a batch of `chunk_id` and `vector` columns.
/// The columns [`read_ids`] reads: a search that leaves the chunks unread.
pub(crate) const ID_COLUMNS: &[&str] = &[CHUNK_ID, DISTANCE];

/// Chunk ids and distances of a search's batch of [`ID_COLUMNS`].
pub(crate) fn read_ids(batch: &RecordBatch) -> PortResult<Vec<(ChunkId, f32)>> {
    let chunk_ids = Strings::of(batch, CHUNK_ID)?;
    let distances = column::<Float32Array>(batch, DISTANCE)?;
    (0..batch.num_rows())
        .map(|row| {
            let id = not_null(chunk_ids.get(row), CHUNK_ID)?;
            let id = ChunkId::new(id).map_err(|e| corrupt(format!("bad chunk id: {e}")))?;
            Ok((id, distances.value(row)))
        })
        .collect()
}

/// Hands `each` the chunk id, document id and vector of every row of a batch of those three
/// columns, in order (the vector borrowed from the batch: nothing copied per row).
pub(crate) fn read_vector_rows(
    batch: &RecordBatch,
    mut each: impl FnMut(ChunkId, DocumentId, &[f32]),
) -> PortResult<()> {
    let chunk_ids = Strings::of(batch, CHUNK_ID)?;
    let document_ids = Strings::of(batch, DOCUMENT_ID)?;
    let vectors = column::<FixedSizeListArray>(batch, VECTOR)?;
    for row in 0..batch.num_rows() {
        let id = not_null(chunk_ids.get(row), CHUNK_ID)?;
        let id = ChunkId::new(id).map_err(|e| corrupt(format!("bad chunk id: {e}")))?;
        let document = not_null(document_ids.get(row), DOCUMENT_ID)?;
        let document =
            DocumentId::new(document).map_err(|e| corrupt(format!("bad document id: {e}")))?;
        let values = vectors.value(row);
        let floats = values
            .as_any()
            .downcast_ref::<Float32Array>()
            .ok_or_else(|| corrupt(format!("column `{VECTOR}` is not of f32")))?;
        each(id, document, floats.values());
    }
    Ok(())
}

pub(crate) fn read_vectors(batch: &RecordBatch) -> PortResult<Vec<(ChunkId, Vec<f32>)>> {
    let chunk_ids = Strings::of(batch, CHUNK_ID)?;
    let vectors = column::<FixedSizeListArray>(batch, VECTOR)?;
    (0..batch.num_rows())
        .map(|row| {
            let id = not_null(chunk_ids.get(row), CHUNK_ID)?;
            let id = ChunkId::new(id).map_err(|e| corrupt(format!("bad chunk id: {e}")))?;
            let values = vectors.value(row);
            let floats = values
                .as_any()
                .downcast_ref::<Float32Array>()
                .ok_or_else(|| corrupt(format!("column `{VECTOR}` is not of f32")))?;
            Ok((id, floats.values().to_vec()))
        })
        .collect()
}

/// Reads the chunks and cosine distances of a vector search result batch.
pub(crate) fn read_rows(batch: &RecordBatch) -> PortResult<Vec<(Chunk, f32)>> {
    let chunk_ids = Strings::of(batch, CHUNK_ID)?;
    let document_ids = Strings::of(batch, DOCUMENT_ID)?;
    let sources = Strings::of(batch, SOURCE)?;
    let titles = Strings::of(batch, TITLE)?;
    let texts = Strings::of(batch, TEXT)?;
    let kinds = Strings::of(batch, KIND)?;
    let hashes = Strings::of(batch, CONTENT_HASH)?;
    let byte_starts = column::<UInt64Array>(batch, BYTE_START)?;
    let byte_ends = column::<UInt64Array>(batch, BYTE_END)?;
    let line_starts = column::<UInt32Array>(batch, LINE_START)?;
    let line_ends = column::<UInt32Array>(batch, LINE_END)?;
    let distances = column::<Float32Array>(batch, DISTANCE)?;

    let mut rows = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let chunk_id = not_null(chunk_ids.get(row), CHUNK_ID)?;
        let document_id = not_null(document_ids.get(row), DOCUMENT_ID)?;
        let kind = not_null(kinds.get(row), KIND)?;
        let chunk = Chunk {
            id: ChunkId::new(chunk_id)
                .map_err(|e| PortError::internal("stored chunk id is invalid", e))?,
            document_id: DocumentId::new(document_id)
                .map_err(|e| PortError::internal("stored document id is invalid", e))?,
            source: not_null(sources.get(row), SOURCE)?.to_owned(),
            title: not_null(titles.get(row), TITLE)?.to_owned(),
            text: not_null(texts.get(row), TEXT)?.to_owned(),
            span: Span {
                byte_start: primitive(byte_starts, row, BYTE_START, UInt64Array::value)?,
                byte_end: primitive(byte_ends, row, BYTE_END, UInt64Array::value)?,
                line_start: primitive(line_starts, row, LINE_START, UInt32Array::value)?,
                line_end: primitive(line_ends, row, LINE_END, UInt32Array::value)?,
            },
            kind: kind
                .parse()
                .map_err(|e| PortError::internal("stored chunk kind is invalid", e))?,
            content_hash: not_null(hashes.get(row), CONTENT_HASH)?.to_owned(),
            code: None,
            // Not stored in the vector table: the keyword catalogue keeps them.
            tokens: None,
            metadata: crag_core::Metadata::new(),
        };
        let distance = primitive(distances, row, DISTANCE, Float32Array::value)?;
        rows.push((chunk, distance));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_dimension_is_rejected() {
        let err = ChunkSchema::new(0).expect_err("zero dimension");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn a_schema_is_compatible_with_itself_only() {
        let four = ChunkSchema::new(4).expect("schema");
        let eight = ChunkSchema::new(8).expect("schema");
        four.check_compatible("t", &four.arrow())
            .expect("same schema");
        let err = four
            .check_compatible("t", &eight.arrow())
            .expect_err("other dimension");
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains('8') && err.to_string().contains('4'));
    }
}
