//! [`TermGraph`] on Postgres: the SQLite adapter's tables and self-join, a whole replace in
//! four statements (documents locked, deleted, chunks upserted, terms inserted from arrays).

use std::collections::{BTreeSet, HashMap};

use async_trait::async_trait;
use crag_core::{ChunkTerms, DocumentId, TermNeighbour};
use crag_ports::{ErrorKind, PortError, PortResult, TermGraph};
use sqlx::{PgConnection, PgPool, Row};

use super::{refuse_nul, retried, storable};
use crate::{limit_param, store_error};

fn db_error(what: &str, e: sqlx::Error) -> PortError {
    store_error("term graph", what, e)
}

fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Locks the rows of the documents (`$1`, sorted and distinct) until commit, creating the
/// missing ones: writers of one document take turns.
const LOCK_DOCUMENTS: &str = "INSERT INTO term_documents (document_id) \
     SELECT d FROM UNNEST($1::text[]) AS d ORDER BY d \
     ON CONFLICT (document_id) DO UPDATE SET document_id = excluded.document_id";
/// Locks the existing rows of the documents, in order.
const LOCK_EXISTING: &str = "SELECT document_id FROM term_documents \
     WHERE document_id = ANY($1) ORDER BY document_id FOR UPDATE";
/// Their terms go with them (`ON DELETE CASCADE`).
const DELETE_CHUNKS: &str = "DELETE FROM term_chunks WHERE document_id = ANY($1)";
const UPSERT_CHUNKS: &str = "INSERT INTO term_chunks (chunk_id, document_id) \
     SELECT * FROM UNNEST($1::text[], $2::text[]) \
     ON CONFLICT (chunk_id) DO UPDATE SET document_id = excluded.document_id \
     RETURNING id, chunk_id";
const CLEAR_TERMS: &str = "DELETE FROM chunk_terms WHERE chunk = ANY($1)";
const INSERT_TERMS: &str = "INSERT INTO chunk_terms (chunk, term) \
     SELECT * FROM UNNEST($1::bigint[], $2::text[]) ON CONFLICT DO NOTHING";

const NEIGHBOURS: &str = "\
SELECT n.term, n.together, \
       (SELECT COUNT(*) FROM chunk_terms f WHERE f.term = n.term) AS frequency \
FROM (SELECT b.term AS term, COUNT(*) AS together \
      FROM chunk_terms a JOIN chunk_terms b ON b.chunk = a.chunk \
      WHERE a.term = $1 AND b.term <> $1 \
      GROUP BY b.term HAVING COUNT(*) >= $2 \
      ORDER BY together DESC, b.term LIMIT $3) n \
ORDER BY n.together DESC, n.term";

const FREQUENCIES: &str = "SELECT (SELECT COUNT(*) FROM chunk_terms c WHERE c.term = u.t) \
     FROM UNNEST($1::text[]) WITH ORDINALITY AS u (t, n) ORDER BY u.n";

/// The term graph in a Postgres schema (see [`super::PostgresGraphs`]).
#[derive(Debug, Clone)]
pub struct PostgresTermGraph {
    pool: PgPool,
}

/// Upserts `chunks` (distinct ids) and stores their distinct non-empty terms; a term holding
/// a NUL character, which Postgres text cannot store, is left out (no query can name it).
async fn insert(conn: &mut PgConnection, chunks: &[&ChunkTerms]) -> sqlx::Result<()> {
    if chunks.is_empty() {
        return Ok(());
    }
    let stored = sqlx::query(UPSERT_CHUNKS)
        .bind(chunks.iter().map(|c| c.chunk.as_str()).collect::<Vec<_>>())
        .bind(
            chunks
                .iter()
                .map(|c| c.document.as_str())
                .collect::<Vec<_>>(),
        )
        .fetch_all(&mut *conn)
        .await?;
    let mut ids = HashMap::with_capacity(stored.len());
    for row in &stored {
        ids.insert(row.try_get::<String, _>(1)?, row.try_get::<i64, _>(0)?);
    }
    let chunk_ids: Vec<i64> = ids.values().copied().collect();
    sqlx::query(CLEAR_TERMS)
        .bind(&chunk_ids)
        .execute(&mut *conn)
        .await?;
    let (mut owners, mut terms) = (Vec::new(), Vec::new());
    for chunk in chunks {
        let Some(&id) = ids.get(chunk.chunk.as_str()) else {
            continue;
        };
        let distinct: BTreeSet<&str> = chunk
            .terms
            .iter()
            .map(String::as_str)
            .filter(|t| !t.is_empty() && storable(t))
            .collect();
        for term in distinct {
            owners.push(id);
            terms.push(term);
        }
    }
    if !terms.is_empty() {
        sqlx::query(INSERT_TERMS)
            .bind(&owners)
            .bind(&terms)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

impl PostgresTermGraph {
    pub(super) fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    async fn replace_once(
        &self,
        documents: &[&str],
        replaced: &[&str],
        chunks: &[&ChunkTerms],
    ) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(LOCK_DOCUMENTS)
            .bind(documents)
            .execute(&mut *tx)
            .await?;
        sqlx::query(DELETE_CHUNKS)
            .bind(replaced)
            .execute(&mut *tx)
            .await?;
        insert(&mut tx, chunks).await?;
        tx.commit().await
    }

    async fn delete_once(&self, ids: &[&str]) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(LOCK_EXISTING)
            .bind(ids)
            .execute(&mut *tx)
            .await?;
        sqlx::query(DELETE_CHUNKS)
            .bind(ids)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM term_documents WHERE document_id = ANY($1)")
            .bind(ids)
            .execute(&mut *tx)
            .await?;
        tx.commit().await
    }
}

#[async_trait]
impl TermGraph for PostgresTermGraph {
    async fn replace_documents(
        &self,
        replaced: &[DocumentId],
        chunks: &[ChunkTerms],
    ) -> PortResult<()> {
        for chunk in chunks {
            let ids = [chunk.chunk.as_str(), chunk.document.as_str()];
            refuse_nul("term graph", chunk.document.as_str(), ids.into_iter())?;
        }
        // One chunk per id, the last given winning (as replacing them one by one would).
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, chunk) in chunks.iter().enumerate() {
            last.insert(chunk.chunk.as_str(), i);
        }
        let kept: Vec<&ChunkTerms> = chunks
            .iter()
            .enumerate()
            .filter(|(i, c)| last[c.chunk.as_str()] == *i)
            .map(|(_, c)| c)
            .collect();
        let replaced: Vec<&str> = replaced
            .iter()
            .map(DocumentId::as_str)
            .filter(|d| storable(d))
            .collect();
        let documents: Vec<&str> = replaced
            .iter()
            .copied()
            .chain(kept.iter().map(|c| c.document.as_str()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        retried(|| self.replace_once(&documents, &replaced, &kept))
            .await
            .map_err(|e| db_error("replace_documents", e))
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        let ids: Vec<&str> = ids
            .iter()
            .map(DocumentId::as_str)
            .filter(|d| storable(d))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        retried(|| self.delete_once(&ids))
            .await
            .map_err(|e| db_error("delete_documents", e))
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
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        // A term Postgres cannot hold is in no chunk: asked as the empty term, never stored.
        let asked: Vec<&str> = terms
            .iter()
            .map(|t| if storable(t) { t.as_str() } else { "" })
            .collect();
        let counts: Vec<i64> = sqlx::query_scalar(FREQUENCIES)
            .bind(&asked)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| db_error("frequencies", e))?;
        Ok(counts.into_iter().map(count).collect())
    }

    async fn neighbours(
        &self,
        term: &str,
        min_together: u64,
        limit: usize,
    ) -> PortResult<Vec<TermNeighbour>> {
        if limit == 0 || term.is_empty() || !storable(term) {
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
