//! The chunk-id index, and the upkeep that keeps a long ingestion's writes steady.
//!
//! Every write is a merge insert on the chunk id. Without an index on that column LanceDB
//! joins each batch against the whole table (its chunk ids read every time), and every write
//! leaves a fragment of its own until `optimize`: a batch's write cost grows with the table, so
//! an ingestion's cost grows with its square (docs/benchmarks.md, "A million chunks"). With a
//! BTREE index on the chunk id LanceDB looks the batch's ids up instead, and every
//! [`WRITES_PER_UPKEEP`] writes the small fragments are compacted (into fragments of at most
//! [`COMPACT_TARGET_ROWS`](crate::tidy::COMPACT_TARGET_ROWS) rows, so a compaction rewrites a
//! bounded share of the table) and the index takes in the new rows.
//!
//! Each upkeep adds the new rows to the index as a segment of its own (a delta index) until
//! that would make more than [`KEY_INDEX_SEGMENTS`]; then all are merged into one. Segments
//! matter twice over: a lookup by chunk id searches every one (a million chunks ingested in
//! 245 segments read 30 stored vectors in 31-57 ms, in one segment 4.5-6 ms), and LanceDB's
//! compaction only joins fragments covered by the same segments, so without the merge each
//! upkeep's fragment stays apart for good (245 fragments of 4k rows at a million chunks, 7
//! once merged).

use std::sync::atomic::Ordering;

use crag_ports::PortResult;
use lancedb::index::scalar::BTreeIndexBuilder;
use lancedb::index::Index;
use lancedb::table::{OptimizeAction, OptimizeOptions};

use crate::error::map_lance_error;
use crate::schema::CHUNK_ID;
use crate::LanceVectorIndex;

/// Writes between two upkeeps (each write is one batch of an ingestion: 64 documents).
pub const WRITES_PER_UPKEEP: usize = 64;

/// Most segments the chunk-id index is left in: an upkeep that would add one more merges
/// them all with the new rows instead. A merge rewrites the whole index (about a second for
/// a million chunk ids), so it is not done at every upkeep.
pub const KEY_INDEX_SEGMENTS: usize = 4;

impl LanceVectorIndex {
    /// Counts a write; every [`WRITES_PER_UPKEEP`]th compacts small fragments, brings the
    /// chunk-id index up to date and, when one is due, prunes old versions: without it a long
    /// ingestion keeps every file its compactions superseded until its final `optimize` (a
    /// million chunks: 15 GiB of vectors on disk instead of about 3).
    pub(crate) async fn after_write(&self) -> PortResult<()> {
        let writes = self.writes.fetch_add(1, Ordering::Relaxed) + 1;
        if !writes.is_multiple_of(WRITES_PER_UPKEEP) {
            return Ok(());
        }
        crate::tidy::compact_if_needed(&self.table).await?;
        self.maintain_key_index().await?;
        crate::tidy::prune_if_due(&self.table, &self.prune).await
    }

    /// Rows in the chunk-id index and rows written since (not in it yet), if there is one.
    pub async fn key_index_rows(&self) -> PortResult<Option<(usize, usize)>> {
        Ok(self
            .index_on(CHUNK_ID)
            .await?
            .map(|i| (i.indexed_rows, i.unindexed_rows)))
    }

    /// Segments the chunk-id index is stored in, if there is one.
    pub async fn key_index_segments(&self) -> PortResult<Option<usize>> {
        Ok(self.index_on(CHUNK_ID).await?.map(|i| i.segments))
    }

    /// Builds the chunk-id index when the table has rows and no such index, else adds the
    /// rows written since to it: as a new segment, or merged with all the others when that
    /// would make more than [`KEY_INDEX_SEGMENTS`] (or there already are); after a merge,
    /// compacts the fragments it joined.
    pub(crate) async fn maintain_key_index(&self) -> PortResult<()> {
        let Some(index) = self.index_on(CHUNK_ID).await? else {
            let rows = self
                .table
                .count_rows(None)
                .await
                .map_err(map_lance_error("failed to count vector table rows"))?;
            if rows > 0 {
                self.table
                    .create_index(&[CHUNK_ID], Index::BTree(BTreeIndexBuilder::default()))
                    .execute()
                    .await
                    .map_err(map_lance_error("failed to build the chunk id index"))?;
                tracing::debug!(table = %self.table_name, rows, "built chunk id index");
            }
            return Ok(());
        };
        let merge = index.segments + usize::from(index.unindexed_rows > 0) > KEY_INDEX_SEGMENTS;
        if index.unindexed_rows > 0 || merge {
            let mut options = match merge {
                true => OptimizeOptions::merge(index.segments),
                false => OptimizeOptions::append(),
            };
            options.index_names = Some(vec![index.name]);
            self.table
                .optimize(OptimizeAction::Index(options))
                .await
                .map_err(map_lance_error("failed to update the chunk id index"))?;
            if merge {
                tracing::debug!(
                    table = %self.table_name,
                    segments = index.segments,
                    "merged chunk id index segments"
                );
                crate::tidy::compact_if_needed(&self.table).await?;
            }
        }
        Ok(())
    }
}
