//! The two stores, written once: the SQL is Postgres-style (`$n`) and SQLite receives it with
//! `?n`, which SQLite reads as the same numbered parameters.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use crag_core::{
    CachedNode, ChatTurn, Session, SessionId, SessionSummary, SessionUpdate, TraversedSymbol,
};
use crag_ports::{ErrorKind, PortError, PortResult, SessionStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::Row as _;

/// Connection settings of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionStoreConfig {
    /// Connections of the Postgres pool (SQLite uses one).
    pub max_connections: u32,
    /// Waiting for a connection, and SQLite's busy timeout.
    pub acquire_timeout: Duration,
    /// Longest a statement may run (Postgres `statement_timeout`).
    pub statement_timeout: Duration,
}

impl Default for SessionStoreConfig {
    fn default() -> Self {
        Self {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
        }
    }
}

fn db_error(what: &str, e: sqlx::Error) -> PortError {
    let kind = match &e {
        sqlx::Error::PoolTimedOut => ErrorKind::Timeout,
        sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) => {
            ErrorKind::Unavailable
        }
        sqlx::Error::Database(d) if d.code().as_deref() == Some("57014") => ErrorKind::Timeout,
        _ => ErrorKind::Internal,
    };
    PortError::with_source(kind, format!("session store: {what} failed"), e)
}

use crate::sql::*;

/// Chunk ids in one column, separated by newlines (chunk ids hold no control characters; an
/// id that does is left out).
fn join_ids(ids: &[String]) -> String {
    ids.iter()
        .filter(|id| !id.contains('\n'))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

fn split_ids(column: &str) -> Vec<String> {
    column
        .split('\n')
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The key prefix of `namespace`: none for the default one, `<namespace>/` otherwise.
fn prefix_of(namespace: &str) -> String {
    if namespace.is_empty() {
        String::new()
    } else {
        format!("{namespace}/")
    }
}

/// Writes one store type over one sqlx database; `$sql` turns a statement into its dialect.
macro_rules! sql_session_store {
    ($store:ident, $db:ty, $backend:literal, $sql:expr) => {
        #[async_trait]
        impl SessionStore for $store {
            fn backend(&self) -> &str {
                $backend
            }

            async fn load(&self, id: SessionId) -> PortResult<Option<Session>> {
                let key = self.key(id);
                let sql = $sql;
                let mut tx = self.pool.begin().await.map_err(|e| db_error("load", e))?;
                let Some(row) = sqlx::query(&sql(SELECT_SESSION))
                    .bind(&key)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(|e| db_error("load", e))?
                else {
                    return Ok(None);
                };
                let (created_ms, last_used_ms): (i64, i64) = (row.get(0), row.get(1));
                let nodes = sqlx::query(&sql(SELECT_NODES))
                    .bind(&key)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| db_error("load", e))?
                    .into_iter()
                    .map(|r| CachedNode {
                        chunk_id: r.get(0),
                        source: r.get(1),
                        text: r.get(2),
                    })
                    .collect();
                let mut not_found: Vec<String> = sqlx::query(&sql(SELECT_NOT_FOUND))
                    .bind(&key)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| db_error("load", e))?
                    .into_iter()
                    .map(|r| r.get(0))
                    .collect();
                not_found.sort();
                let symbols = sqlx::query(&sql(SELECT_SYMBOLS))
                    .bind(&key)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| db_error("load", e))?
                    .into_iter()
                    .map(|r| TraversedSymbol {
                        symbol: r.get(0),
                        definition: split_ids(r.get(1)),
                        neighbours: split_ids(r.get(2)),
                    })
                    .collect();
                let turns = sqlx::query(&sql(SELECT_TURNS))
                    .bind(&key)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| db_error("load", e))?
                    .into_iter()
                    .map(|r| ChatTurn {
                        question: r.get(0),
                        answer: r.get(1),
                        model: r.get(2),
                        tokens: u32::try_from(r.get::<i64, _>(3)).unwrap_or(u32::MAX),
                        at_ms: r.get(4),
                    })
                    .collect();
                tx.commit().await.map_err(|e| db_error("load", e))?;
                Ok(Some(Session {
                    id,
                    nodes,
                    not_found,
                    symbols,
                    turns,
                    created_ms,
                    last_used_ms,
                }))
            }

            async fn save(
                &self,
                id: SessionId,
                update: &SessionUpdate,
                max_nodes: usize,
                now_ms: i64,
            ) -> PortResult<()> {
                let key = self.key(id);
                let sql = $sql;
                let fail = |e| db_error("save", e);
                let mut tx = self.pool.begin().await.map_err(fail)?;
                // The upsert comes first: it locks the session row until commit.
                let clock: i64 = sqlx::query(&sql(UPSERT_SESSION))
                    .bind(&key)
                    .bind(now_ms)
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(fail)?
                    .get(0);
                let mut seen = std::collections::HashSet::new();
                let nodes: Vec<&CachedNode> = update
                    .nodes
                    .iter()
                    .filter(|n| seen.insert(n.chunk_id.as_str()))
                    .collect();
                let n = nodes.len() as i64;
                for (i, node) in nodes.iter().enumerate() {
                    // The first node gets the newest stamp.
                    sqlx::query(&sql(UPSERT_NODE))
                        .bind(&key)
                        .bind(&node.chunk_id)
                        .bind(&node.source)
                        .bind(&node.text)
                        .bind(clock + n - i as i64)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                let m = Self::save_symbols(&mut tx, &key, &update.symbols, clock + n, max_nodes)
                    .await
                    .map_err(fail)?;
                if n > 0 {
                    sqlx::query(&sql(EVICT_NODES))
                        .bind(&key)
                        .bind(i64::try_from(max_nodes).unwrap_or(i64::MAX))
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                if n + m > 0 {
                    sqlx::query(&sql(SET_CLOCK))
                        .bind(&key)
                        .bind(clock + n + m)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                for item in &update.not_found {
                    sqlx::query(&sql(ADD_NOT_FOUND))
                        .bind(&key)
                        .bind(item)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                if let Some(turn) = &update.turn {
                    sqlx::query(&sql(ADD_TURN))
                        .bind(&key)
                        .bind(&turn.question)
                        .bind(&turn.answer)
                        .bind(&turn.model)
                        .bind(i64::from(turn.tokens))
                        .bind(turn.at_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(fail)?;
                }
                tx.commit().await.map_err(fail)
            }

            async fn list(&self, limit: usize) -> PortResult<Vec<SessionSummary>> {
                let rows = sqlx::query(&($sql)(LIST))
                    .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                    .bind(self.prefix.as_ref())
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| db_error("list", e))?;
                let mut out = Vec::with_capacity(rows.len());
                for r in rows {
                    let raw: String = r.get(0);
                    let parsed = raw.get(self.prefix.len()..).map(str::parse::<SessionId>);
                    let Some(Ok(id)) = parsed else {
                        tracing::warn!(id = %raw, "skipping a session row with a malformed id");
                        continue;
                    };
                    out.push(SessionSummary {
                        id,
                        created_ms: r.get(1),
                        last_used_ms: r.get(2),
                        nodes: usize::try_from(r.get::<i64, _>(3)).unwrap_or(0),
                        turns: usize::try_from(r.get::<i64, _>(4)).unwrap_or(0),
                    });
                }
                Ok(out)
            }

            async fn delete(&self, id: SessionId) -> PortResult<bool> {
                let done = sqlx::query(&($sql)(DELETE))
                    .bind(self.key(id))
                    .execute(&self.pool)
                    .await
                    .map_err(|e| db_error("delete", e))?;
                Ok(done.rows_affected() > 0)
            }

            async fn expire(&self, idle_before_ms: i64) -> PortResult<usize> {
                let done = sqlx::query(&($sql)(EXPIRE))
                    .bind(idle_before_ms)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| db_error("expire", e))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
            }

            fn in_namespace(&self, namespace: &str) -> std::sync::Arc<dyn SessionStore> {
                std::sync::Arc::new(Self {
                    pool: self.pool.clone(),
                    prefix: prefix_of(namespace).into(),
                })
            }

            async fn clear(&self) -> PortResult<usize> {
                let done = sqlx::query(&($sql)(CLEAR))
                    .bind(self.prefix.as_ref())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| db_error("clear", e))?;
                Ok(usize::try_from(done.rows_affected()).unwrap_or(usize::MAX))
            }
        }

        impl $store {
            /// The row key of `id` in this store's namespace.
            fn key(&self, id: SessionId) -> String {
                format!("{}{id}", self.prefix)
            }

            /// Moves `symbols` to the front of the session's subgraph (stamps above `clock`,
            /// the first newest), keeping the `max` most recently traversed; the clock ticks
            /// it used.
            async fn save_symbols(
                tx: &mut sqlx::Transaction<'_, $db>,
                key: &str,
                symbols: &[TraversedSymbol],
                clock: i64,
                max: usize,
            ) -> Result<i64, sqlx::Error> {
                let sql = $sql;
                let mut seen = std::collections::HashSet::new();
                let symbols: Vec<&TraversedSymbol> = symbols
                    .iter()
                    .filter(|t| seen.insert(t.symbol.as_str()))
                    .collect();
                let m = symbols.len() as i64;
                for (i, t) in symbols.iter().enumerate() {
                    sqlx::query(&sql(UPSERT_SYMBOL))
                        .bind(key)
                        .bind(&t.symbol)
                        .bind(join_ids(&t.definition))
                        .bind(join_ids(&t.neighbours))
                        .bind(clock + m - i as i64)
                        .execute(&mut **tx)
                        .await?;
                }
                if m > 0 {
                    sqlx::query(&sql(EVICT_SYMBOLS))
                        .bind(key)
                        .bind(i64::try_from(max).unwrap_or(i64::MAX))
                        .execute(&mut **tx)
                        .await?;
                }
                Ok(m)
            }
        }
    };
}

/// Sessions in a SQLite file (WAL journal; one connection, so writes never contend).
#[derive(Debug, Clone)]
pub struct SqliteSessionStore {
    pool: sqlx::SqlitePool,
    /// Key prefix of the namespace ([`SessionStore::in_namespace`]).
    prefix: std::sync::Arc<str>,
}

impl SqliteSessionStore {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub async fn open(path: &Path, config: SessionStoreConfig) -> PortResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                PortError::with_source(
                    ErrorKind::Unavailable,
                    format!("cannot create {}", dir.display()),
                    e,
                )
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(config.acquire_timeout);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options)
            .await
            .map_err(|e| db_error("opening the SQLite database", e))?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&pool)
            .await
            .map_err(|e| {
                PortError::with_source(ErrorKind::Internal, "session store: migration failed", e)
            })?;
        Ok(Self {
            pool,
            prefix: "".into(),
        })
    }
}

fn sqlite_dialect(statement: &str) -> String {
    statement.replace('$', "?")
}

sql_session_store!(SqliteSessionStore, sqlx::Sqlite, "sqlite", |s: &str| {
    sqlite_dialect(s)
});

/// Sessions in a Postgres database (a pool; saves of one session serialise on its row lock).
#[derive(Debug, Clone)]
pub struct PostgresSessionStore {
    pool: sqlx::PgPool,
    /// Key prefix of the namespace ([`SessionStore::in_namespace`]).
    prefix: std::sync::Arc<str>,
}

impl PostgresSessionStore {
    /// Connects to `url` (`postgres://user@host/db`, a unix socket with `?host=/dir`) and
    /// migrates the database.
    pub async fn connect(url: &str, config: SessionStoreConfig) -> PortResult<Self> {
        let ms = config.statement_timeout.as_millis().to_string();
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| {
                PortError::with_source(ErrorKind::InvalidInput, "invalid Postgres URL", e)
            })?
            .options([("statement_timeout", ms.as_str())]);
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options)
            .await
            .map_err(|e| db_error("connecting to Postgres", e))?;
        sqlx::migrate!("./migrations/postgres")
            .run(&pool)
            .await
            .map_err(|e| {
                PortError::with_source(ErrorKind::Internal, "session store: migration failed", e)
            })?;
        Ok(Self {
            pool,
            prefix: "".into(),
        })
    }
}

sql_session_store!(
    PostgresSessionStore,
    sqlx::Postgres,
    "postgres",
    |s: &str| s.to_owned()
);
