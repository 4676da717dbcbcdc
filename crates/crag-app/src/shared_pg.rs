//! The shared Postgres database of a deployment on several machines (`[storage]
//! postgres_url`): a connection pool made without connecting, and tables created once by
//! whichever replica comes first.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::compose::{ComposeError, Context as _};

/// How long a statement or a connection may take before the store is unavailable.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// `name` as a quoted Postgres identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A small pool on `url` (no connection made before the first use), each statement bounded
/// by [`TIMEOUT`].
pub(crate) fn lazy_pool(url: &str) -> Result<PgPool, ComposeError> {
    let ms = TIMEOUT.as_millis().to_string();
    let options: PgConnectOptions = url
        .parse::<PgConnectOptions>()
        .context("storage.postgres_url is not a Postgres URL")?
        .options([("statement_timeout", ms.as_str())]);
    Ok(PgPoolOptions::new()
        .max_connections(2)
        .acquire_timeout(TIMEOUT)
        .connect_lazy_with(options))
}

/// Creates `schema` (quoted) and runs `create_table` under an advisory lock named `lock`, so
/// that replicas starting together do not race: one creates, the others wait and find it.
pub(crate) async fn create_once(
    pool: &PgPool,
    lock: &str,
    schema: &str,
    create_table: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
        .bind(lock)
        .execute(&mut *tx)
        .await?;
    sqlx::query(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .execute(&mut *tx)
        .await?;
    sqlx::query(create_table).execute(&mut *tx).await?;
    tx.commit().await
}
