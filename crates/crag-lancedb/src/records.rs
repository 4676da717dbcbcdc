//! Small named facts kept beside a database's tables (which embedding model built the
//! index), so every process that opens the database, wherever it runs, reads the same ones:
//! a local file would be one machine's.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use crag_ports::{ErrorKind, PortError, PortResult};
use futures::TryStreamExt;
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use crate::error::map_lance_error;
use crate::store::{self, StoreOptions};

/// The table of records.
pub const RECORDS_TABLE: &str = "crag_records";

const KEY: &str = "key";
const VALUE: &str = "value";

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(KEY, DataType::Utf8, false),
        Field::new(VALUE, DataType::Utf8, false),
    ]))
}

fn predicate(key: &str) -> String {
    format!("{KEY} = '{}'", key.replace('\'', "''"))
}

/// The record `key` of the database at `uri`, if there is one (no table yet: none).
pub async fn read_record(
    uri: &str,
    options: &StoreOptions,
    key: &str,
) -> PortResult<Option<String>> {
    let connection = store::connect(uri, options).await?;
    let table = match connection.open_table(RECORDS_TABLE).execute().await {
        Ok(table) => table,
        Err(lancedb::Error::TableNotFound { .. }) => return Ok(None),
        Err(e) => return Err(map_lance_error("failed to open the records")(e)),
    };
    let batches: Vec<RecordBatch> = table
        .query()
        .only_if(predicate(key))
        .select(Select::columns(&[VALUE]))
        .execute()
        .await
        .map_err(map_lance_error("failed to read a record"))?
        .try_collect()
        .await
        .map_err(map_lance_error("failed to read a record"))?;
    for batch in &batches {
        let Some(values) = batch.column(0).as_any().downcast_ref::<StringArray>() else {
            return Err(PortError::new(
                ErrorKind::Internal,
                "the records' value column is not text",
            ));
        };
        if let Some(value) = values.iter().flatten().next() {
            return Ok(Some(value.to_owned()));
        }
    }
    Ok(None)
}

/// Records `value` under `key` unless a record is there already, and returns the one kept:
/// the first writer's, when several processes record at once.
pub async fn record_once(
    uri: &str,
    options: &StoreOptions,
    key: &str,
    value: &str,
) -> PortResult<String> {
    let connection = store::connect(uri, options).await?;
    let table = store::open_or_create(&connection, RECORDS_TABLE, schema(), "records").await?;
    let batch = RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(StringArray::from(vec![key])),
            Arc::new(StringArray::from(vec![value])),
        ],
    )
    .map_err(|e| PortError::internal("failed to build a record", e))?;
    let reader = RecordBatchIterator::new([Ok(batch)], schema());
    let mut merge = table.merge_insert(&[KEY]);
    merge.when_not_matched_insert_all();
    merge
        .execute(Box::new(reader))
        .await
        .map_err(map_lance_error("failed to write a record"))?;
    read_record(uri, options, key).await?.ok_or_else(|| {
        PortError::new(
            ErrorKind::Internal,
            format!("the record `{key}` was written but is not found"),
        )
    })
}
