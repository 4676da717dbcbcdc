//! Upkeep of a [`LanceVectorIndex`] after writes: compaction, the ANN index, pruning old
//! versions, and the budget of LanceDB's caches.
//!
//! Every LanceDB write makes a new table version, with a manifest and new files; the caches
//! keep entries for each. Left alone, versions pile up on disk, every prune re-reads all the
//! versions it keeps, and the caches grow with every ingestion (a 5-minute load run:
//! docs/reliability.md). So versions are kept a bounded time, pruned on a clock rather than
//! on every write, and the caches get a budget. All of it runs in
//! [`VectorIndex::optimize`](crag_ports::VectorIndex::optimize).

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use crag_ports::PortResult;
use lance::io::ObjectStoreRegistry;
use lance::session::Session;
use lancedb::table::optimize::Duration;
use lancedb::table::{CompactionOptions, OptimizeAction};
use lancedb::Table;

use crate::error::map_lance_error;
use crate::{LanceVectorIndex, TableLayout};

/// Small fragments (LanceDB's: under 100k rows) tolerated before `optimize`
/// compacts. Every write leaves a fragment of its own (an ingestion writes one per batch of
/// documents) and a search pays per fragment: SciFact's 10192 chunks ingested in 84
/// fragments searched in 36 ms, compacted into one in 16 ms (docs/benchmarks.md). Compaction
/// rewrites the small fragments, so it is not run after every write.
pub(crate) const COMPACT_AT_SMALL_FRAGMENTS: usize = 8;

/// Rows a compaction makes its fragments up to; larger fragments are left alone. LanceDB's
/// default (about a million) rewrites the whole table at every compaction below that size.
pub(crate) const COMPACT_TARGET_ROWS: usize = 1 << 17;

/// Share of deleted rows (kept in deletion files until compaction) that triggers compaction.
pub(crate) const COMPACT_AT_DELETED_SHARE: f64 = 0.1;

/// Superseded table versions younger than this are kept by `optimize`: a
/// search that started on one may still be reading its files (a search takes milliseconds
/// to seconds). Older ones are removed with the files only they name, so repeated ingestion
/// does not grow the directory without bound; files no manifest names go once a week old
/// (LanceDB's rule: they may belong to a write in progress).
const KEEP_VERSIONS_FOR: Duration = Duration::minutes(10);

/// Least time between two prunes. A prune reads the manifest of every version it keeps, so
/// pruning after every write costs each write the number of versions of the last
/// [`KEEP_VERSIONS_FOR`]: a quadratic cost under steady ingestion.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Budgets of LanceDB's caches for one [`LanceVectorIndex`] (its own LanceDB session).
///
/// Budgets are LanceDB's weighted sizes in bytes, close to the memory the entries hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBudget {
    /// Manifests, file footers and deletion files. Each write adds entries for its version
    /// and files, so this is what grows under ingestion; LanceDB's default is 1 GiB.
    pub metadata_bytes: usize,
    /// Opened ANN index partitions; LanceDB's default is 6 GiB.
    pub index_bytes: usize,
}

impl Default for CacheBudget {
    /// 16 MiB of metadata (a compacted table needs a few MiB), 1 GiB of index (an IVF-HNSW-SQ
    /// index of about two million 384-dimension vectors).
    fn default() -> Self {
        Self {
            metadata_bytes: 16 << 20,
            index_bytes: 1 << 30,
        }
    }
}

impl CacheBudget {
    /// A LanceDB session with these budgets and the default object stores.
    pub(crate) fn session(&self) -> Session {
        Session::new(
            self.index_bytes,
            self.metadata_bytes,
            Arc::new(ObjectStoreRegistry::default()),
        )
    }
}

/// When the table was last pruned; shared by clones of one index.
#[derive(Debug, Default)]
pub(crate) struct PruneClock {
    last: Mutex<Option<Instant>>,
    /// Prunes run so far.
    runs: std::sync::atomic::AtomicUsize,
}

impl PruneClock {
    /// Whether a prune is due ([`PRUNE_EVERY`] since the last, or never pruned); if so, the
    /// clock is set to now, so concurrent callers do not prune twice.
    fn claim(&self, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let due = last.is_none_or(|at| now.duration_since(at) >= PRUNE_EVERY);
        if due {
            *last = Some(now);
        }
        due
    }
}

impl TableLayout {
    /// Whether `optimize` should compact: [`COMPACT_AT_SMALL_FRAGMENTS`] small
    /// fragments, or [`COMPACT_AT_DELETED_SHARE`] of the rows deleted.
    pub(crate) fn needs_compaction(&self) -> bool {
        let total = self.rows + self.deleted_rows;
        self.small_fragments >= COMPACT_AT_SMALL_FRAGMENTS
            || (total > 0 && self.deleted_rows as f64 / total as f64 >= COMPACT_AT_DELETED_SHARE)
    }
}

impl LanceVectorIndex {
    /// How many times this handle and its clones pruned old table versions.
    pub fn version_prunes(&self) -> usize {
        self.prune.runs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Compacts the table when it has [`COMPACT_AT_SMALL_FRAGMENTS`] small fragments or
    /// [`COMPACT_AT_DELETED_SHARE`] of its rows deleted (fragments up to
    /// [`COMPACT_TARGET_ROWS`] rows); builds or updates the
    /// chunk-id index, and the ANN index as
    /// [`AnnPolicy`](crate::AnnPolicy) says; at most once every [`PRUNE_EVERY`], removes
    /// versions superseded more than [`KEEP_VERSIONS_FOR`] ago.
    pub(crate) async fn tidy(&self) -> PortResult<()> {
        let layout = compact_if_needed(&self.table).await?;
        self.maintain_key_index().await?;
        self.maintain_ann(layout.rows).await?;
        prune_if_due(&self.table, &self.prune).await
    }
}

/// How `table` is stored: fragments and rows deleted but not yet compacted.
pub(crate) async fn layout_of(table: &Table) -> PortResult<TableLayout> {
    let stats = table
        .stats()
        .await
        .map_err(map_lance_error("failed to read table statistics"))?;
    Ok(TableLayout {
        fragments: stats.fragment_stats.num_fragments,
        small_fragments: stats.fragment_stats.num_small_fragments,
        rows: stats.num_rows,
        deleted_rows: stats.num_deleted_rows.unwrap_or(0),
    })
}

/// Compacts `table` when its layout [needs it](TableLayout::needs_compaction); its layout
/// before.
pub(crate) async fn compact_if_needed(table: &Table) -> PortResult<TableLayout> {
    let layout = layout_of(table).await?;
    if layout.needs_compaction() {
        tracing::debug!(table = %table.name(), "compacting table");
        let compacted = table
            .optimize(OptimizeAction::Compact {
                options: CompactionOptions {
                    target_rows_per_fragment: COMPACT_TARGET_ROWS,
                    ..CompactionOptions::default()
                },
                remap_options: None,
            })
            .await
            .map_err(map_lance_error("failed to compact table"))?;
        let metrics = compacted.compaction.unwrap_or_default();
        tracing::info!(
            table = %table.name(),
            small_fragments = layout.small_fragments,
            deleted_rows = layout.deleted_rows,
            fragments_removed = metrics.fragments_removed,
            fragments_added = metrics.fragments_added,
            "compacted table"
        );
    }
    Ok(layout)
}

/// When `clock` says a prune is due, removes versions of `table` superseded more than
/// [`KEEP_VERSIONS_FOR`] ago.
pub(crate) async fn prune_if_due(table: &Table, clock: &PruneClock) -> PortResult<()> {
    if !clock.claim(Instant::now()) {
        return Ok(());
    }
    let pruned = table
        .optimize(OptimizeAction::Prune {
            older_than: Some(KEEP_VERSIONS_FOR),
            delete_unverified: None,
            error_if_tagged_old_versions: None,
        })
        .await
        .map_err(map_lance_error("failed to prune table versions"))?;
    clock
        .runs
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let removal = pruned.prune.unwrap_or_default();
    tracing::debug!(
        table = %table.name(),
        versions_removed = removal.old_versions,
        bytes_removed = removal.bytes_removed,
        "pruned table versions"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prunes_once_per_period_whoever_asks() {
        let clock = PruneClock::default();
        let start = Instant::now();
        assert!(clock.claim(start), "never pruned: due");
        assert!(!clock.claim(start), "just pruned");
        assert!(!clock.claim(start + PRUNE_EVERY / 2));
        assert!(clock.claim(start + PRUNE_EVERY));
        assert!(!clock.claim(start + PRUNE_EVERY + PRUNE_EVERY / 2));
    }
}
