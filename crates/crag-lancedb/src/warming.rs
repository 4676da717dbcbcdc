//! Warming the in-memory copy ([`crate::flat`]): before the handle is used when the table is
//! small, in the background when it is large.
//!
//! A copy of 100k MiniLM rows loads in well under a second; a million rows take about 8 s on
//! the 2-core benchmark machine (reading 1.5 GiB of vectors and coding them). A server that
//! waited for that at start, or at the end of each ingestion, would answer nothing meanwhile;
//! a one-shot `crag query` would wait 8 s for an answer LanceDB gives in about 100 ms. So a
//! large copy loads in a task of its own, and searches go to LanceDB until it is there.

use std::sync::Arc;

use crag_ports::{PortResult, VectorIndex};

use crate::flat::Loading;
use crate::LanceVectorIndex;

/// Default most rows [`LanceVectorIndex::start_warm`] loads before it returns; a larger copy
/// loads in the background.
pub const DEFAULT_WARM_WAIT_ROWS: usize = 100_000;

/// What [`LanceVectorIndex::start_warm`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Warming {
    /// Nothing to load: memory scans are off, or the table holds more rows than they allow.
    Off,
    /// The copy of the current table version is loaded, of this many rows.
    Loaded(usize),
    /// The copy loads in the background (or was loading already); searches go to LanceDB
    /// until it is there.
    Background,
}

impl LanceVectorIndex {
    /// Sets the most rows [`LanceVectorIndex::start_warm`] loads before it returns (default
    /// [`DEFAULT_WARM_WAIT_ROWS`]); a larger copy loads in the background.
    pub fn with_warm_wait_rows(mut self, rows: usize) -> Self {
        self.warm_wait_rows = rows;
        self
    }

    /// Loads the in-memory copy of the current table version now, waiting for a load in
    /// progress, so that the next search does not load it. Returns the rows copied, or `None`
    /// when memory scans are off or the table is too large.
    pub async fn warm(&self) -> PortResult<Option<usize>> {
        Ok(self.flat_matrix(Loading::Wait).await?.map(|m| m.rows()))
    }

    /// Whether a task is loading the in-memory copy now.
    pub fn memory_loading(&self) -> bool {
        self.flat.loading.try_lock().is_err()
    }

    /// Starts loading the in-memory copy (at start, and after each
    /// [`VectorIndex::optimize`]): a table of at most the warm-wait rows is loaded before this
    /// returns, as [`LanceVectorIndex::warm`]; a larger one in a task of its own, which holds
    /// the loading lock from before this returns, so that no search loads a copy of its own
    /// meanwhile (they go to LanceDB).
    ///
    /// [`VectorIndex::optimize`]: crag_ports::VectorIndex::optimize
    pub async fn start_warm(&self) -> PortResult<Warming> {
        if self.memory_scan_rows == 0 {
            return Ok(Warming::Off);
        }
        if let Some(rows) = self.memory_rows().await? {
            return Ok(Warming::Loaded(rows));
        }
        let rows = self.count().await?;
        if rows > self.memory_scan_rows {
            return Ok(Warming::Off);
        }
        if rows <= self.warm_wait_rows {
            return Ok(self.warm().await?.map_or(Warming::Off, Warming::Loaded));
        }
        let Ok(guard) = Arc::clone(&self.flat.loading).try_lock_owned() else {
            return Ok(Warming::Background);
        };
        let version = self.table_version().await?;
        let index = self.clone();
        tokio::spawn(async move {
            let _loading = guard;
            match index.load_locked(version).await {
                Ok(matrix) => tracing::info!(
                    rows = matrix.map_or(0, |m| m.rows()),
                    "vectors copied into memory in the background"
                ),
                Err(error) => tracing::warn!(
                    %error,
                    "vectors not copied into memory in the background; the next search will try"
                ),
            }
        });
        Ok(Warming::Background)
    }
}
