//! [`SymbolIndex`] adapter on sqlx SQLite: [`SqliteSymbolIndex`] keeps the definitions and
//! references of source files and the code metadata of their chunks in one database file
//! (WAL journal, one connection, so writes never contend). Migrations are embedded
//! (`migrations/`) and run when the index opens. Each `replace_document` is one transaction.
//!
//! Lookups and neighbourhood walks are indexed: by name, qualified path (and its reverse, for
//! suffix lookups), document, chunk, reference name and the definition holding a reference.
//!
//! [`SqliteTermGraph`] keeps the knowledge graph of prose (the key terms of each chunk, see
//! `TermGraph`) in a database file of its own, the same way.
//!
//! [`PostgresGraphs`] keeps both in a Postgres schema that several processes share:
//! [`PostgresSymbolIndex`] and [`PostgresTermGraph`] (`migrations-postgres/`, the same tables
//! with byte-order text, so both backends answer in one order).

mod neighbours;
mod postgres;
mod rows;
mod terms;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use crag_core::{ChunkId, CodeMeta, DocumentId, FileSymbols, StoredReference, StoredSymbol};
use crag_ports::{ErrorKind, Neighbour, PortError, PortResult, SymbolIndex, SymbolLookup};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use sqlx::SqlitePool;

pub use postgres::{
    drop_schema, PostgresGraphs, PostgresGraphsConfig, PostgresSymbolIndex, PostgresTermGraph,
};
use rows::{DEF_COLUMNS, LOOKUP_ORDER};
pub use terms::SqliteTermGraph;

/// Chunk ids bound per `IN (…)` query, well under SQLite's parameter limit.
const BATCH: usize = 500;

/// How long to wait for the connection (and SQLite's busy timeout).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

fn db_error(what: &str, e: sqlx::Error) -> PortError {
    store_error("symbol index", what, e)
}

/// A failed database call of `store` as a port error: a full pool or a cancelled statement
/// is a timeout, a lost database unavailable, anything else internal.
fn store_error(store: &str, what: &str, e: sqlx::Error) -> PortError {
    let kind = match &e {
        sqlx::Error::PoolTimedOut => ErrorKind::Timeout,
        sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::Tls(_) => {
            ErrorKind::Unavailable
        }
        sqlx::Error::Database(d) if d.code().as_deref() == Some("57014") => ErrorKind::Timeout,
        _ => ErrorKind::Internal,
    };
    PortError::with_source(kind, format!("{store}: {what} failed"), e)
}

fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

/// One connection to the database file at `path` (created with its directory if needed), WAL
/// journal: writes never contend.
async fn file_pool(path: &Path, store: &str) -> PortResult<SqlitePool> {
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
        .busy_timeout(ACQUIRE_TIMEOUT);
    connect(options, SqlitePoolOptions::new(), store).await
}

/// A private database in memory, kept as long as the pool.
async fn memory_pool(store: &str) -> PortResult<SqlitePool> {
    let options = SqliteConnectOptions::new().in_memory(true);
    // Each connection to `:memory:` is its own database: keep the one connection forever.
    let pool = SqlitePoolOptions::new()
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None);
    connect(options, pool, store).await
}

async fn connect(
    options: SqliteConnectOptions,
    pool: SqlitePoolOptions,
    store: &str,
) -> PortResult<SqlitePool> {
    pool.max_connections(1)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|e| store_error(store, "opening the SQLite database", e))
}

/// The symbol index in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteSymbolIndex {
    pool: SqlitePool,
}

impl SqliteSymbolIndex {
    /// Opens (creating it and its directory if needed) the database at `path` and migrates it.
    pub async fn open(path: &Path) -> PortResult<Self> {
        let pool = file_pool(path, "symbol index").await?;
        Self::migrated(pool).await
    }

    /// A private database in memory, gone when the index is dropped; for tests.
    pub async fn in_memory() -> PortResult<Self> {
        Self::migrated(memory_pool("symbol index").await?).await
    }

    async fn migrated(pool: SqlitePool) -> PortResult<Self> {
        sqlx::migrate!("./migrations")
            .run(&pool)
            .await
            .map_err(|e| {
                PortError::with_source(ErrorKind::Internal, "symbol index: migration failed", e)
            })?;
        Ok(Self { pool })
    }

    /// Runs `sql` (ending in `IN (` + placeholders + `)`) once per batch of distinct `chunks`.
    async fn by_chunks(
        &self,
        what: &str,
        sql: impl Fn(&str) -> String,
        chunks: &[ChunkId],
    ) -> PortResult<Vec<sqlx::sqlite::SqliteRow>> {
        let mut seen = std::collections::HashSet::new();
        let distinct: Vec<&str> = chunks
            .iter()
            .map(ChunkId::as_str)
            .filter(|c| seen.insert(*c))
            .collect();
        let mut out = Vec::new();
        for batch in distinct.chunks(BATCH) {
            let sql = sql(&rows::placeholders(batch.len()));
            let mut query = sqlx::query(&sql);
            for chunk in batch {
                query = query.bind(*chunk);
            }
            out.extend(
                query
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| db_error(what, e))?,
            );
        }
        Ok(out)
    }
}

#[async_trait]
impl SymbolIndex for SqliteSymbolIndex {
    async fn replace_document(
        &self,
        document: &DocumentId,
        symbols: &FileSymbols,
    ) -> PortResult<()> {
        let fail = |e| db_error("replace_document", e);
        let doc = document.as_str();
        let mut tx = self.pool.begin().await.map_err(fail)?;
        for sql in rows::DELETE_DOCUMENT {
            sqlx::query(sql)
                .bind(doc)
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
        }
        for s in &symbols.definitions {
            sqlx::query(rows::INSERT_DEF)
                .bind(doc)
                .bind(&s.path)
                .bind(s.chunk_id.as_str())
                .bind(&s.def.name)
                .bind(&s.def.qualified)
                .bind(rows::reversed(&s.def.qualified))
                .bind(s.def.kind.as_str())
                .bind(&s.def.language)
                .bind(i64::from(s.def.line_start))
                .bind(i64::from(s.def.line_end))
                .bind(&s.def.signature)
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
        }
        for r in &symbols.references {
            sqlx::query(rows::INSERT_REF)
                .bind(doc)
                .bind(r.chunk_id.as_str())
                .bind(&r.reference.name)
                .bind(&r.reference.qualifier)
                .bind(&r.reference.from)
                .bind(r.reference.kind.as_str())
                .bind(i64::from(r.reference.line))
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
        }
        for (chunk, meta) in &symbols.chunks {
            sqlx::query(rows::UPSERT_META)
                .bind(chunk.as_str())
                .bind(doc)
                .bind(&meta.language)
                .bind(&meta.symbol)
                .bind(meta.symbol_kind.as_str())
                .bind(&meta.qualified)
                .bind(&meta.signature)
                .bind(i64::from(meta.part))
                .bind(i64::from(meta.parts))
                .execute(&mut *tx)
                .await
                .map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let fail = |e| db_error("delete_documents", e);
        let mut tx = self.pool.begin().await.map_err(fail)?;
        for id in ids {
            for sql in rows::DELETE_DOCUMENT {
                sqlx::query(sql)
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(fail)?;
            }
        }
        tx.commit().await.map_err(fail)
    }

    async fn lookup(&self, lookup: &SymbolLookup, limit: usize) -> PortResult<Vec<StoredSymbol>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (filter, binds) = match lookup {
            SymbolLookup::Name(name) => ("name = ?2", vec![name.clone()]),
            SymbolLookup::Qualified(q) => {
                // A `::`-aligned suffix of `qualified` is a prefix of its reverse.
                let (low, high) = rows::prefix_range(&rows::reversed(&format!("::{q}")));
                (
                    "(qualified = ?2 OR (qualified_rev >= ?3 AND qualified_rev < ?4))",
                    vec![q.clone(), low, high],
                )
            }
            SymbolLookup::NameInPath { name, path } => (
                "name = ?2 AND instr(path, ?3) > 0",
                vec![name.clone(), path.clone()],
            ),
        };
        let sql =
            format!("SELECT {DEF_COLUMNS} FROM symbol_defs WHERE {filter} {LOOKUP_ORDER} LIMIT ?1");
        let mut query = sqlx::query(&sql).bind(limit_param(limit));
        for b in binds {
            query = query.bind(b);
        }
        query
            .fetch_all(&self.pool)
            .await
            .map_err(|e| db_error("lookup", e))?
            .iter()
            .map(|r| rows::symbol(r).map(|(_, s)| s))
            .collect()
    }

    async fn definitions_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredSymbol>> {
        let rows = self
            .by_chunks(
                "definitions_in",
                |p| {
                    format!(
                        "SELECT {DEF_COLUMNS} FROM symbol_defs WHERE chunk_id IN ({p}) ORDER BY id"
                    )
                },
                chunks,
            )
            .await?;
        let mut found = rows
            .iter()
            .map(rows::symbol)
            .collect::<PortResult<Vec<_>>>()?;
        found.sort_by(|(ia, a), (ib, b)| {
            (&a.path, a.def.line_start, &a.def.qualified, &a.chunk_id, ia).cmp(&(
                &b.path,
                b.def.line_start,
                &b.def.qualified,
                &b.chunk_id,
                ib,
            ))
        });
        Ok(found.into_iter().map(|(_, s)| s).collect())
    }

    async fn references_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredReference>> {
        let rows = self
            .by_chunks(
                "references_in",
                |p| {
                    format!(
                        "SELECT document_id, chunk_id, name, qualifier, from_qualified, kind, \
                         line FROM symbol_refs WHERE chunk_id IN ({p}) ORDER BY id"
                    )
                },
                chunks,
            )
            .await?;
        let mut found = rows
            .iter()
            .map(rows::reference)
            .collect::<PortResult<Vec<_>>>()?;
        // Stable: insertion order breaks the last ties, as in the fake.
        found.sort_by(|a, b| {
            (
                &a.document_id,
                a.reference.line,
                &a.reference.name,
                &a.chunk_id,
            )
                .cmp(&(
                    &b.document_id,
                    b.reference.line,
                    &b.reference.name,
                    &b.chunk_id,
                ))
        });
        Ok(found)
    }

    async fn neighbours(
        &self,
        qualified: &str,
        hops: u8,
        limit: usize,
    ) -> PortResult<Vec<Neighbour>> {
        let hops = hops.min(2);
        if hops == 0 || limit == 0 {
            return Ok(Vec::new());
        }
        let fail = |e| db_error("neighbours", e);
        // One transaction: the walk sees one snapshot.
        let mut tx = self.pool.begin().await.map_err(fail)?;
        let found = neighbours::walk(&mut *tx, qualified, hops, limit).await?;
        tx.commit().await.map_err(fail)?;
        Ok(found)
    }

    async fn chunk_meta(&self, chunks: &[ChunkId]) -> PortResult<HashMap<ChunkId, CodeMeta>> {
        let rows = self
            .by_chunks(
                "chunk_meta",
                |p| {
                    format!(
                        "SELECT chunk_id, language, symbol, symbol_kind, qualified, signature, \
                         part, parts FROM chunk_meta WHERE chunk_id IN ({p})"
                    )
                },
                chunks,
            )
            .await?;
        rows.iter().map(rows::chunk_meta).collect()
    }

    async fn count(&self) -> PortResult<usize> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM symbol_defs")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| db_error("count", e))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}
