//! [`SessionStore`] adapters on sqlx, one schema for both: [`SqliteSessionStore`] (a file next
//! to the indexes, WAL journal, one writer connection) and [`PostgresSessionStore`] (a pool).
//! Migrations are embedded (`migrations/<backend>/`) and run when a store opens. Every `save`
//! is one transaction that first upserts the session row, which serialises concurrent saves of
//! one session (Postgres row lock, SQLite's single connection), so none is lost.

mod sql;
mod store;
mod sweeper;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use store::{PostgresSessionStore, SessionStoreConfig, SqliteSessionStore};
pub use sweeper::spawn_sweeper;

/// Sessions idle this long (30 minutes) are expired by default.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A fresh random session id: 128 bits from the operating system's generator.
pub fn new_session_id() -> std::io::Result<crag_core::SessionId> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(crag_core::SessionId::from_bits(u128::from_le_bytes(bytes)))
}
