//! The keyword table's columns: each chunk whole (JSON), its keys, and its title's and
//! text's index terms as crag analyses them, which LanceDB's full-text index splits on
//! whitespace and nothing more.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use crag_core::Chunk;
use crag_ports::{ErrorKind, PortError, PortResult};

pub(crate) use crate::schema::{CHUNK_ID, CONTENT_HASH, DOCUMENT_ID};
pub(crate) const BYTE_START: &str = "byte_start";
/// The chunk as JSON, every field.
pub(crate) const CHUNK: &str = "chunk";
/// The title's index terms, space-separated.
pub(crate) const TITLE_TERMS: &str = "title_terms";
/// The text's index terms, space-separated.
pub(crate) const TEXT_TERMS: &str = "text_terms";
/// Column LanceDB adds to full-text search results: the BM25 score.
pub(crate) const SCORE: &str = "_score";

/// The table's Arrow schema.
pub(crate) fn arrow() -> SchemaRef {
    let string = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        string(CHUNK_ID),
        string(DOCUMENT_ID),
        string(CONTENT_HASH),
        Field::new(BYTE_START, DataType::UInt64, false),
        string(CHUNK),
        string(TITLE_TERMS),
        string(TEXT_TERMS),
    ]))
}

/// Checks that an existing table has this schema's columns and types.
pub(crate) fn check_compatible(table: &str, stored: &Schema) -> PortResult<()> {
    for expected in arrow().fields() {
        match stored.field_with_name(expected.name()) {
            Ok(found) if found.data_type() == expected.data_type() => {}
            _ => {
                return Err(PortError::invalid_input(format!(
                    "`{table}` is not a keyword table: column `{}` missing or of another type",
                    expected.name()
                )))
            }
        }
    }
    Ok(())
}

/// One record batch of `chunks`, with their terms analysed by `analyze`.
pub(crate) fn to_batch(
    chunks: &[&Chunk],
    analyze: impl Fn(&str) -> Vec<String>,
) -> PortResult<RecordBatch> {
    let strings = |get: &dyn Fn(&Chunk) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(chunks.iter().map(|c| get(c))))
    };
    let json = chunks
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PortError::internal("failed to encode a chunk", e))?;
    let columns: Vec<ArrayRef> = vec![
        strings(&|c| c.id.as_str().to_owned()),
        strings(&|c| c.document_id.as_str().to_owned()),
        strings(&|c| c.content_hash.clone()),
        Arc::new(UInt64Array::from_iter_values(
            chunks.iter().map(|c| c.span.byte_start),
        )),
        Arc::new(StringArray::from_iter_values(json)),
        strings(&|c| analyze(&c.title).join(" ")),
        strings(&|c| analyze(&c.text).join(" ")),
    ];
    RecordBatch::try_new(arrow(), columns)
        .map_err(|e| PortError::internal("failed to build record batch", e))
}

fn corrupt(message: impl Into<String>) -> PortError {
    PortError::new(ErrorKind::Internal, message)
}

/// The string column `name` of `batch`.
pub(crate) fn strings<'a>(batch: &'a RecordBatch, name: &str) -> PortResult<&'a StringArray> {
    batch
        .column_by_name(name)
        .ok_or_else(|| corrupt(format!("keyword table result lacks column `{name}`")))?
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or_else(|| {
            corrupt(format!(
                "keyword table column `{name}` is not a string column"
            ))
        })
}

/// The chunks of `batch`'s `chunk` column, with the `_score` column's scores when asked.
pub(crate) fn read_chunks(batch: &RecordBatch, scored: bool) -> PortResult<Vec<(Chunk, f32)>> {
    let json = strings(batch, CHUNK)?;
    let scores = if scored {
        Some(
            batch
                .column_by_name(SCORE)
                .and_then(|c| c.as_any().downcast_ref::<Float32Array>())
                .ok_or_else(|| corrupt("full-text search result lacks a float32 `_score`"))?,
        )
    } else {
        None
    };
    (0..batch.num_rows())
        .map(|row| {
            if json.is_null(row) {
                return Err(corrupt("keyword table row without its chunk"));
            }
            let chunk: Chunk = serde_json::from_str(json.value(row)).map_err(|e| {
                PortError::with_source(ErrorKind::Internal, "stored chunk is not valid JSON", e)
            })?;
            let score = scores.map_or(0.0, |s| s.value(row));
            Ok((chunk, score))
        })
        .collect()
}
