//! [`TermGraph`] adapter on sqlx SQLite: the key terms of each chunk in their own database
//! file (`migrations-terms/`), co-occurrences counted by an indexed self-join.

use std::collections::BTreeSet;
use std::path::Path;

use async_trait::async_trait;
use crag_core::{ChunkTerms, DocumentId, TermNeighbour};
use crag_ports::{ErrorKind, PortError, PortResult, TermGraph};
use sqlx::{Row, SqliteConnection, SqlitePool};

use crate::{file_pool, limit_param, memory_pool, store_error};

/// Terms bound per multi-row `INSERT`, well under SQLite's parameter limit.
const TERMS_PER_INSERT: usize = 400;

fn db_error(what: &str, e: sqlx::Error) -> PortError {
    store_error("term graph", what, e)
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

const DELETE_DOCUMENT: [&str; 2] = [
    "DELETE FROM chunk_terms WHERE chunk IN (SELECT id FROM term_chunks WHERE document_id = ?)",
    "DELETE FROM term_chunks WHERE document_id = ?",
];

const DELETE_CHUNK: [&str; 2] = [
    "DELETE FROM chunk_terms WHERE chunk IN (SELECT id FROM term_chunks WHERE chunk_id = ?)",
    "DELETE FROM term_chunks WHERE chunk_id = ?",
];

const NEIGHBOURS: &str = "\
SELECT n.term, n.together, \
       (SELECT COUNT(*) FROM chunk_terms f WHERE f.term = n.term) AS frequency \
FROM (SELECT b.term AS term, COUNT(*) AS together \
      FROM chunk_terms a JOIN chunk_terms b ON b.chunk = a.chunk \
      WHERE a.term = ?1 AND b.term <> ?1 \
      GROUP BY b.term HAVING COUNT(*) >= ?2 \
      ORDER BY together DESC, b.term LIMIT ?3) n \
ORDER BY n.together DESC, n.term";

/// The term graph in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteTermGraph {
    pool: SqlitePool,
}

impl SqliteTermGraph {
    /// Opens (creating it and its directory if needed) the database at `path` and migrates it.
    pub async fn open(path: &Path) -> PortResult<Self> {
        Self::migrated(file_pool(path, "term graph").await?).await
    }

    /// A private database in memory, gone when the graph is dropped; for tests.
    pub async fn in_memory() -> PortResult<Self> {
        Self::migrated(memory_pool("term graph").await?).await
    }

    async fn migrated(pool: SqlitePool) -> PortResult<Self> {
        sqlx::migrate!("./migrations-terms")
            .run(&pool)
            .await
            .map_err(|e| {
                PortError::with_source(ErrorKind::Internal, "term graph: migration failed", e)
            })?;
        Ok(Self { pool })
    }
}

async fn delete(
    conn: &mut SqliteConnection,
    statements: &[&str; 2],
    key: &str,
) -> Result<(), sqlx::Error> {
    for sql in statements {
        sqlx::query(sql).bind(key).execute(&mut *conn).await?;
    }
    Ok(())
}

async fn insert_chunk(conn: &mut SqliteConnection, chunk: &ChunkTerms) -> Result<(), sqlx::Error> {
    delete(conn, &DELETE_CHUNK, chunk.chunk.as_str()).await?;
    let id: i64 =
        sqlx::query("INSERT INTO term_chunks (chunk_id, document_id) VALUES (?, ?) RETURNING id")
            .bind(chunk.chunk.as_str())
            .bind(chunk.document.as_str())
            .fetch_one(&mut *conn)
            .await?
            .try_get(0)?;
    let terms: BTreeSet<&str> = chunk
        .terms
        .iter()
        .map(String::as_str)
        .filter(|t| !t.is_empty())
        .collect();
    let terms: Vec<&str> = terms.into_iter().collect();
    for batch in terms.chunks(TERMS_PER_INSERT) {
        let values = vec!["(?, ?)"; batch.len()].join(", ");
        let sql = format!("INSERT INTO chunk_terms (chunk, term) VALUES {values}");
        let mut query = sqlx::query(&sql);
        for term in batch {
            query = query.bind(id).bind(*term);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

#[async_trait]
impl TermGraph for SqliteTermGraph {
    async fn replace_documents(
        &self,
        replaced: &[DocumentId],
        chunks: &[ChunkTerms],
    ) -> PortResult<()> {
        let fail = |e| db_error("replace_documents", e);
        let mut tx = self.pool.begin().await.map_err(fail)?;
        for document in replaced {
            delete(&mut tx, &DELETE_DOCUMENT, document.as_str())
                .await
                .map_err(fail)?;
        }
        for chunk in chunks {
            insert_chunk(&mut tx, chunk).await.map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        let fail = |e| db_error("delete_documents", e);
        let mut tx = self.pool.begin().await.map_err(fail)?;
        for document in ids {
            delete(&mut tx, &DELETE_DOCUMENT, document.as_str())
                .await
                .map_err(fail)?;
        }
        tx.commit().await.map_err(fail)
    }

    async fn documents(&self) -> PortResult<Vec<DocumentId>> {
        let rows = sqlx::query("SELECT DISTINCT document_id FROM term_chunks ORDER BY document_id")
            .fetch_all(&self.pool)
            .await
            .map_err(|e| db_error("documents", e))?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(0).map_err(|e| db_error("documents", e))?;
                DocumentId::new(id).map_err(|e| {
                    PortError::new(ErrorKind::Internal, format!("term graph: stored id: {e}"))
                })
            })
            .collect()
    }

    async fn chunk_count(&self) -> PortResult<u64> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM term_chunks")
            .fetch_one(&self.pool)
            .await
            .map_err(|e| db_error("chunk_count", e))?;
        Ok(count(n))
    }

    async fn frequencies(&self, terms: &[String]) -> PortResult<Vec<u64>> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| db_error("frequencies", e))?;
        let mut out = Vec::with_capacity(terms.len());
        for term in terms {
            let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM chunk_terms WHERE term = ?")
                .bind(term)
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| db_error("frequencies", e))?;
            out.push(count(n));
        }
        Ok(out)
    }

    async fn neighbours(
        &self,
        term: &str,
        min_together: u64,
        limit: usize,
    ) -> PortResult<Vec<TermNeighbour>> {
        if limit == 0 || term.is_empty() {
            return Ok(Vec::new());
        }
        let fail = |e| db_error("neighbours", e);
        let rows = sqlx::query(NEIGHBOURS)
            .bind(term)
            .bind(i64::try_from(min_together.max(1)).unwrap_or(i64::MAX))
            .bind(limit_param(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(fail)?;
        rows.iter()
            .map(|row| {
                Ok(TermNeighbour {
                    term: row.try_get(0).map_err(fail)?,
                    together: count(row.try_get(1).map_err(fail)?),
                    frequency: count(row.try_get(2).map_err(fail)?),
                })
            })
            .collect()
    }
}
