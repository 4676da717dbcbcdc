//! The ANN index of the vector table: reading it and keeping it up to date.

use crag_ports::PortResult;
use lancedb::index::vector::IvfHnswSqIndexBuilder;
use lancedb::index::Index;
use lancedb::table::{OptimizeAction, OptimizeOptions};
use lancedb::DistanceType;

use crate::error::map_lance_error;
use crate::schema::VECTOR;
use crate::{AnnIndex, AnnPolicy, LanceVectorIndex, ROWS_PER_PARTITION};

impl LanceVectorIndex {
    /// Returns the ANN index on the vector column, if there is one.
    pub async fn ann_index(&self) -> PortResult<Option<AnnIndex>> {
        self.index_on(VECTOR).await
    }

    /// Returns the index covering `column` (the ANN index, the chunk-id index), if any.
    pub(crate) async fn index_on(&self, column: &str) -> PortResult<Option<AnnIndex>> {
        let indices = self
            .table
            .list_indices()
            .await
            .map_err(map_lance_error("failed to list vector table indexes"))?;
        let Some(name) = indices
            .into_iter()
            .find(|i| i.columns.iter().any(|c| c == column))
            .map(|i| i.name)
        else {
            return Ok(None);
        };
        let stats = self
            .table
            .index_stats(&name)
            .await
            .map_err(map_lance_error(
                "failed to read vector table index statistics",
            ))?;
        Ok(Some(AnnIndex {
            indexed_rows: stats.as_ref().map_or(0, |s| s.num_indexed_rows),
            unindexed_rows: stats.as_ref().map_or(0, |s| s.num_unindexed_rows),
            segments: stats
                .as_ref()
                .and_then(|s| s.num_indices)
                .map_or(1, |n| n as usize),
            name,
        }))
    }

    /// Builds the ANN index once the table holds enough rows, or adds unindexed rows to it.
    pub(crate) async fn maintain_ann(&self, rows: usize) -> PortResult<()> {
        let AnnPolicy::FromRows(min_rows) = self.ann else {
            return Ok(());
        };
        let started = std::time::Instant::now();
        match self.ann_index().await? {
            None if rows >= min_rows.max(1) => {
                let partitions = rows.div_ceil(ROWS_PER_PARTITION).max(1);
                let builder = IvfHnswSqIndexBuilder::default()
                    .distance_type(DistanceType::Cosine)
                    .num_partitions(u32::try_from(partitions).unwrap_or(u32::MAX));
                self.table
                    .create_index(&[VECTOR], Index::IvfHnswSq(builder))
                    .execute()
                    .await
                    .map_err(map_lance_error("failed to build the vector ANN index"))?;
                tracing::info!(
                    table = %self.table_name,
                    rows,
                    partitions,
                    seconds = started.elapsed().as_secs_f64(),
                    "built vector ANN index"
                );
            }
            Some(index) if index.unindexed_rows > 0 => {
                self.table
                    .optimize(OptimizeAction::Index(OptimizeOptions::default()))
                    .await
                    .map_err(map_lance_error("failed to update the vector ANN index"))?;
                tracing::info!(
                    table = %self.table_name,
                    rows = index.unindexed_rows,
                    seconds = started.elapsed().as_secs_f64(),
                    "added rows to vector ANN index"
                );
            }
            _ => {}
        }
        Ok(())
    }
}
