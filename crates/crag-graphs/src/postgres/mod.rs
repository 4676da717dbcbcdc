//! The graphs on Postgres: one schema holding the symbol index and the term graph, shared by
//! every process connected to it. Migrations are embedded (`migrations-postgres/`, the same
//! tables as SQLite's) and run in the schema when it is opened; each schema keeps its own
//! migration history, so several (a collection each) live in one database beside the
//! session store's tables.

mod symbols;
mod terms;

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use crag_ports::{ErrorKind, PortError, PortResult};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection as _, Executor as _, PgConnection, PgPool};

use crate::store_error;

pub use symbols::PostgresSymbolIndex;
pub use terms::PostgresTermGraph;

/// Longest Postgres identifier, in bytes (longer ones are cut by the server).
const MAX_SCHEMA_LEN: usize = 63;

/// Connection settings of [`PostgresGraphs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresGraphsConfig {
    /// The schema holding the tables; created when missing.
    pub schema: String,
    /// Connections of the pool.
    pub max_connections: u32,
    /// Longest wait for a connection.
    pub acquire_timeout: Duration,
}

impl Default for PostgresGraphsConfig {
    fn default() -> Self {
        Self {
            schema: "crag".into(),
            max_connections: 8,
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

/// A schema of a Postgres database holding the symbol index and the term graph, with a pool
/// of connections to it: [`symbol_index`](Self::symbol_index) and
/// [`term_graph`](Self::term_graph) share the pool.
#[derive(Debug, Clone)]
pub struct PostgresGraphs {
    pool: PgPool,
    schema: String,
}

impl PostgresGraphs {
    /// Connects to `url` (`postgres://user@host/db`; a unix socket: `?host=/dir`), creates
    /// the schema `config.schema` when missing and migrates it.
    pub async fn connect(url: &str, config: &PostgresGraphsConfig) -> PortResult<Self> {
        check_schema(&config.schema)?;
        let options = connect_options(url)?;
        let set_path = format!("SET search_path TO {}", quote_ident(&config.schema));
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .acquire_timeout(config.acquire_timeout)
            .after_connect(move |conn, _meta| {
                let set_path = set_path.clone();
                Box::pin(async move {
                    conn.execute(set_path.as_str()).await?;
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| graphs_error("connecting to Postgres", e))?;
        create_schema(&pool, &config.schema).await?;
        sqlx::migrate!("./migrations-postgres")
            .run(&pool)
            .await
            .map_err(|e| {
                PortError::with_source(
                    ErrorKind::Internal,
                    format!("Postgres graphs: migrating schema {} failed", config.schema),
                    e,
                )
            })?;
        Ok(Self {
            pool,
            schema: config.schema.clone(),
        })
    }

    /// The schema holding the tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The symbol index in this schema.
    pub fn symbol_index(&self) -> PostgresSymbolIndex {
        PostgresSymbolIndex::new(self.pool.clone())
    }

    /// The term graph in this schema.
    pub fn term_graph(&self) -> PostgresTermGraph {
        PostgresTermGraph::new(self.pool.clone())
    }
}

/// Drops the schema `schema` of the database at `url` with everything in it (a deleted
/// collection's graphs); whether it existed.
pub async fn drop_schema(url: &str, schema: &str) -> PortResult<bool> {
    check_schema(schema)?;
    let fail = |e| graphs_error("dropping a schema", e);
    let mut conn = PgConnection::connect_with(&connect_options(url)?)
        .await
        .map_err(|e| graphs_error("connecting to Postgres", e))?;
    let mut tx = conn.begin().await.map_err(fail)?;
    let existed = schema_exists(&mut tx, schema).await.map_err(fail)?;
    if existed {
        let sql = format!("DROP SCHEMA {} CASCADE", quote_ident(schema));
        sqlx::query(&sql).execute(&mut *tx).await.map_err(fail)?;
    }
    tx.commit().await.map_err(fail)?;
    conn.close().await.map_err(fail)?;
    Ok(existed)
}

fn graphs_error(what: &str, e: sqlx::Error) -> PortError {
    store_error("Postgres graphs", what, e)
}

fn connect_options(url: &str) -> PortResult<PgConnectOptions> {
    PgConnectOptions::from_str(url)
        .map_err(|e| PortError::with_source(ErrorKind::InvalidInput, "invalid Postgres URL", e))
}

/// A schema name Postgres keeps as it is: 1 to 63 bytes, no NUL, not `pg_`-prefixed (those
/// are the server's).
fn check_schema(schema: &str) -> PortResult<()> {
    if schema.is_empty()
        || schema.len() > MAX_SCHEMA_LEN
        || schema.contains('\0')
        || schema.starts_with("pg_")
    {
        return Err(PortError::new(
            ErrorKind::InvalidInput,
            format!(
                "invalid Postgres schema name `{}`: 1 to {MAX_SCHEMA_LEN} bytes, no NUL, not \
                 starting with `pg_`",
                schema.escape_debug()
            ),
        ));
    }
    Ok(())
}

/// `name` as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

async fn schema_exists(conn: &mut PgConnection, schema: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
        .bind(schema)
        .fetch_one(conn)
        .await
}

/// Creates `schema` unless it exists (then no privilege to create one is needed); processes
/// starting together take turns on an advisory lock.
async fn create_schema(pool: &PgPool, schema: &str) -> PortResult<()> {
    let fail = |e| graphs_error("creating the schema", e);
    let mut tx = pool.begin().await.map_err(fail)?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext('crag-graphs: create schema'))")
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    if !schema_exists(&mut tx, schema).await.map_err(fail)? {
        let sql = format!("CREATE SCHEMA {}", quote_ident(schema));
        sqlx::query(&sql).execute(&mut *tx).await.map_err(fail)?;
    }
    tx.commit().await.map_err(fail)
}

/// Runs `attempt` again, up to 4 times in all, when Postgres aborted it to break a deadlock
/// or for a serialization failure; any other outcome is returned.
pub(crate) async fn retried<T, F, Fut>(mut attempt: F) -> Result<T, sqlx::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    let mut left = 3;
    loop {
        match attempt().await {
            Err(sqlx::Error::Database(d))
                if left > 0 && matches!(d.code().as_deref(), Some("40P01" | "40001")) =>
            {
                left -= 1;
            }
            other => return other,
        }
    }
}

/// Whether Postgres can store `text`: its text type holds no NUL character.
pub(crate) fn storable(text: &str) -> bool {
    !text.contains('\0')
}

/// Refuses to write `document` when one of `texts` holds a NUL character.
pub(crate) fn refuse_nul<'a>(
    store: &str,
    document: &str,
    mut texts: impl Iterator<Item = &'a str>,
) -> PortResult<()> {
    if texts.all(storable) {
        return Ok(());
    }
    Err(PortError::new(
        ErrorKind::InvalidInput,
        format!(
            "{store}: `{}` holds a NUL character, which Postgres text cannot store",
            document.escape_debug()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_checked_and_quoted() {
        for good in ["crag", "crag/docs", "a\"b", &"x".repeat(63)] {
            assert!(check_schema(good).is_ok(), "{good}");
        }
        for bad in ["", "pg_crag", "a\0b", &"x".repeat(64)] {
            let err = check_schema(bad).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad:?}");
        }
        assert_eq!(quote_ident("crag/a\"b"), "\"crag/a\"\"b\"");
    }

    #[test]
    fn nul_characters_are_refused_by_name() {
        assert!(refuse_nul("s", "a.rs", ["x", "y"].into_iter()).is_ok());
        let err = refuse_nul("s", "a.rs", ["x", "y\0"].into_iter()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.to_string().contains("a.rs"), "{err}");
    }
}
