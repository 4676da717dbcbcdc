//! Reading stored embeddings back by chunk id (pseudo-relevance feedback's Rocchio step), and
//! the stored documents (reconciliation with the keyword index).

use arrow_array::RecordBatch;
use crag_core::ChunkId;
use crag_ports::{DocumentEntries, DocumentEntry, PortResult};
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use lancedb::query::{ExecutableQuery, QueryBase, Select};

use crate::error::map_lance_error;
use crate::{in_predicate, schema, LanceVectorIndex};

/// Ids per `IN (...)` predicate.
const IDS_PER_QUERY: usize = 256;

impl LanceVectorIndex {
    /// The stored vectors of `ids`, in the order asked; unknown ids are left out.
    pub(crate) async fn read_vectors(
        &self,
        ids: &[ChunkId],
    ) -> PortResult<Vec<(ChunkId, Vec<f32>)>> {
        let mut found = Vec::with_capacity(ids.len());
        for group in ids.chunks(IDS_PER_QUERY) {
            let stream = self
                .table
                .query()
                .only_if(chunk_predicate(group))
                .select(Select::columns(&[schema::CHUNK_ID, schema::VECTOR]))
                .execute()
                .await
                .map_err(map_lance_error("failed to read stored vectors"))?;
            let batches: Vec<RecordBatch> = stream
                .try_collect()
                .await
                .map_err(map_lance_error("failed to read stored vectors"))?;
            for batch in &batches {
                found.extend(schema::read_vectors(batch)?);
            }
        }
        let mut ordered = Vec::with_capacity(found.len());
        for id in ids {
            if let Some(at) = found.iter().position(|(f, _)| f == id) {
                ordered.push(found.swap_remove(at));
            }
        }
        Ok(ordered)
    }

    /// Every row's `columns`, in storage order; `message` names the failure.
    pub(crate) async fn scan_columns(
        &self,
        columns: &[&str],
        message: &'static str,
    ) -> PortResult<Vec<RecordBatch>> {
        self.scan_batches(columns, message)
            .await?
            .try_collect()
            .await
    }

    /// [`LanceVectorIndex::scan_columns`] a batch at a time, for scans too large to hold twice.
    pub(crate) async fn scan_batches(
        &self,
        columns: &[&str],
        message: &'static str,
    ) -> PortResult<BoxStream<'static, PortResult<RecordBatch>>> {
        Ok(self
            .table
            .query()
            .select(Select::columns(columns))
            .execute()
            .await
            .map_err(map_lance_error(message))?
            .map_err(move |e| map_lance_error(message)(e))
            .boxed())
    }

    /// Every stored document with its number of rows and the content hash of its first chunk
    /// by id, by document id: one scan of three small columns.
    pub(crate) async fn read_documents(&self) -> PortResult<Vec<DocumentEntry>> {
        let batches = self
            .scan_columns(
                schema::DOCUMENT_COLUMNS,
                "failed to list vector index documents",
            )
            .await?;
        let mut entries = DocumentEntries::default();
        for batch in &batches {
            for (document, chunk, hash) in schema::read_document_rows(batch)? {
                entries.add(&document, &chunk, &hash);
            }
        }
        Ok(entries.into_entries())
    }
}

/// `chunk_id IN (...)`.
fn chunk_predicate(ids: &[ChunkId]) -> String {
    in_predicate(schema::CHUNK_ID, ids.iter().map(ChunkId::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicate_quotes_ids() {
        let ids = [ChunkId::new("a'b#0").unwrap(), ChunkId::new("c#1").unwrap()];
        assert_eq!(chunk_predicate(&ids), "chunk_id IN ('a''b#0', 'c#1')");
    }
}
