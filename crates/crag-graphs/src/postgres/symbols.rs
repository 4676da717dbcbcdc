//! [`SymbolIndex`] on Postgres: the SQLite adapter's statements with `$n` parameters, whole
//! files written with one `INSERT ... SELECT FROM UNNEST` per table, chunk lists bound as
//! arrays.

use std::collections::HashMap;

use async_trait::async_trait;
use crag_core::{ChunkId, CodeMeta, DocumentId, FileSymbols, StoredReference, StoredSymbol};
use crag_ports::{Neighbour, PortResult, SymbolIndex, SymbolLookup};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgPool};

use super::{refuse_nul, retried, storable};
use crate::rows::{self, DEF_COLUMNS, LOOKUP_ORDER};
use crate::{db_error, limit_param, neighbours};

/// Locks the document's row until commit (see `symbol_documents`).
const LOCK_DOCUMENT: &str = "INSERT INTO symbol_documents (document_id) VALUES ($1) \
     ON CONFLICT (document_id) DO UPDATE SET document_id = excluded.document_id";
/// Locks the rows of the listed documents that have one, in order (no deadlock between two
/// deletes).
const LOCK_DOCUMENTS: &str = "SELECT document_id FROM symbol_documents \
     WHERE document_id = ANY($1) ORDER BY document_id FOR UPDATE";
const DELETE_DOCUMENTS: [&str; 4] = [
    "DELETE FROM symbol_defs WHERE document_id = ANY($1)",
    "DELETE FROM symbol_refs WHERE document_id = ANY($1)",
    "DELETE FROM chunk_meta WHERE document_id = ANY($1)",
    "DELETE FROM symbol_documents WHERE document_id = ANY($1)",
];
/// Definitions in the order given (ids are insertion order, the last tie-break of lookups).
const INSERT_DEFS: &str = "INSERT INTO symbol_defs (document_id, path, chunk_id, name, \
     qualified, qualified_rev, kind, language, line_start, line_end, signature) \
     SELECT $1, path, chunk_id, name, qualified, qualified_rev, kind, language, line_start, \
     line_end, signature FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], \
     $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::text[]) \
     WITH ORDINALITY AS u (path, chunk_id, name, qualified, qualified_rev, kind, language, \
     line_start, line_end, signature, n) ORDER BY n";
const INSERT_REFS: &str = "INSERT INTO symbol_refs (document_id, chunk_id, name, qualifier, \
     from_qualified, kind, line) \
     SELECT $1, chunk_id, name, qualifier, from_qualified, kind, line FROM UNNEST($2::text[], \
     $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[]) \
     WITH ORDINALITY AS u (chunk_id, name, qualifier, from_qualified, kind, line, n) ORDER BY n";
const UPSERT_META: &str = "INSERT INTO chunk_meta (chunk_id, document_id, language, symbol, \
     symbol_kind, qualified, signature, part, parts) \
     SELECT chunk_id, $1, language, symbol, symbol_kind, qualified, signature, part, parts \
     FROM UNNEST($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
     $8::bigint[], $9::bigint[]) \
     AS u (chunk_id, language, symbol, symbol_kind, qualified, signature, part, parts) \
     ON CONFLICT (chunk_id) DO UPDATE SET document_id = excluded.document_id, \
     language = excluded.language, symbol = excluded.symbol, \
     symbol_kind = excluded.symbol_kind, qualified = excluded.qualified, \
     signature = excluded.signature, part = excluded.part, parts = excluded.parts";

/// The symbol index in a Postgres schema (see [`super::PostgresGraphs`]): writers of one
/// document take turns on its row lock, so concurrent writes from several processes all land
/// whole.
#[derive(Debug, Clone)]
pub struct PostgresSymbolIndex {
    pool: PgPool,
}

/// Every text of `symbols`, for the NUL check.
fn texts(symbols: &FileSymbols) -> impl Iterator<Item = &str> {
    let defs = symbols.definitions.iter().flat_map(|s| {
        [
            &s.path,
            &s.def.name,
            &s.def.qualified,
            &s.def.language,
            &s.def.signature,
        ]
        .into_iter()
        .map(String::as_str)
        .chain([s.chunk_id.as_str()])
    });
    let refs = symbols.references.iter().flat_map(|r| {
        [&r.reference.name]
            .into_iter()
            .chain(&r.reference.qualifier)
            .chain(&r.reference.from)
            .map(String::as_str)
            .chain([r.chunk_id.as_str()])
    });
    let metas = symbols.chunks.iter().flat_map(|(chunk, m)| {
        [&m.language, &m.symbol, &m.qualified, &m.signature]
            .into_iter()
            .map(String::as_str)
            .chain([chunk.as_str()])
    });
    defs.chain(refs).chain(metas)
}

async fn insert(conn: &mut PgConnection, doc: &str, symbols: &FileSymbols) -> sqlx::Result<()> {
    let d = &symbols.definitions;
    if !d.is_empty() {
        sqlx::query(INSERT_DEFS)
            .bind(doc)
            .bind(d.iter().map(|s| s.path.as_str()).collect::<Vec<_>>())
            .bind(d.iter().map(|s| s.chunk_id.as_str()).collect::<Vec<_>>())
            .bind(d.iter().map(|s| s.def.name.as_str()).collect::<Vec<_>>())
            .bind(
                d.iter()
                    .map(|s| s.def.qualified.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                d.iter()
                    .map(|s| rows::reversed(&s.def.qualified))
                    .collect::<Vec<_>>(),
            )
            .bind(d.iter().map(|s| s.def.kind.as_str()).collect::<Vec<_>>())
            .bind(
                d.iter()
                    .map(|s| s.def.language.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                d.iter()
                    .map(|s| i64::from(s.def.line_start))
                    .collect::<Vec<_>>(),
            )
            .bind(
                d.iter()
                    .map(|s| i64::from(s.def.line_end))
                    .collect::<Vec<_>>(),
            )
            .bind(
                d.iter()
                    .map(|s| s.def.signature.as_str())
                    .collect::<Vec<_>>(),
            )
            .execute(&mut *conn)
            .await?;
    }
    let r = &symbols.references;
    if !r.is_empty() {
        sqlx::query(INSERT_REFS)
            .bind(doc)
            .bind(r.iter().map(|r| r.chunk_id.as_str()).collect::<Vec<_>>())
            .bind(
                r.iter()
                    .map(|r| r.reference.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                r.iter()
                    .map(|r| r.reference.qualifier.as_deref())
                    .collect::<Vec<_>>(),
            )
            .bind(
                r.iter()
                    .map(|r| r.reference.from.as_deref())
                    .collect::<Vec<_>>(),
            )
            .bind(
                r.iter()
                    .map(|r| r.reference.kind.as_str())
                    .collect::<Vec<_>>(),
            )
            .bind(
                r.iter()
                    .map(|r| i64::from(r.reference.line))
                    .collect::<Vec<_>>(),
            )
            .execute(&mut *conn)
            .await?;
    }
    // One row per chunk, the last given winning (as upserting them one by one would).
    let mut last: HashMap<&str, &CodeMeta> = HashMap::new();
    let mut order = Vec::new();
    for (chunk, meta) in &symbols.chunks {
        if last.insert(chunk.as_str(), meta).is_none() {
            order.push(chunk.as_str());
        }
    }
    if !order.is_empty() {
        let m: Vec<&CodeMeta> = order.iter().map(|c| last[c]).collect();
        sqlx::query(UPSERT_META)
            .bind(doc)
            .bind(&order)
            .bind(m.iter().map(|m| m.language.as_str()).collect::<Vec<_>>())
            .bind(m.iter().map(|m| m.symbol.as_str()).collect::<Vec<_>>())
            .bind(m.iter().map(|m| m.symbol_kind.as_str()).collect::<Vec<_>>())
            .bind(m.iter().map(|m| m.qualified.as_str()).collect::<Vec<_>>())
            .bind(m.iter().map(|m| m.signature.as_str()).collect::<Vec<_>>())
            .bind(m.iter().map(|m| i64::from(m.part)).collect::<Vec<_>>())
            .bind(m.iter().map(|m| i64::from(m.parts)).collect::<Vec<_>>())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

impl PostgresSymbolIndex {
    pub(super) fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    async fn replace_once(&self, doc: &str, symbols: &FileSymbols) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(LOCK_DOCUMENT)
            .bind(doc)
            .execute(&mut *tx)
            .await?;
        for sql in &DELETE_DOCUMENTS[..3] {
            sqlx::query(sql).bind(&[doc][..]).execute(&mut *tx).await?;
        }
        insert(&mut tx, doc, symbols).await?;
        tx.commit().await
    }

    async fn delete_once(&self, ids: &[&str]) -> sqlx::Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(LOCK_DOCUMENTS)
            .bind(ids)
            .execute(&mut *tx)
            .await?;
        for sql in DELETE_DOCUMENTS {
            sqlx::query(sql).bind(ids).execute(&mut *tx).await?;
        }
        tx.commit().await
    }

    /// `sql` (one `$1` array of chunk ids) on the distinct storable `chunks`.
    async fn by_chunks(&self, what: &str, sql: &str, chunks: &[ChunkId]) -> PortResult<Vec<PgRow>> {
        let mut ids: Vec<&str> = chunks
            .iter()
            .map(ChunkId::as_str)
            .filter(|c| storable(c))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        sqlx::query(sql)
            .bind(&ids)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| db_error(what, e))
    }
}

#[async_trait]
impl SymbolIndex for PostgresSymbolIndex {
    async fn replace_document(
        &self,
        document: &DocumentId,
        symbols: &FileSymbols,
    ) -> PortResult<()> {
        let doc = document.as_str();
        refuse_nul("symbol index", doc, [doc].into_iter().chain(texts(symbols)))?;
        retried(|| self.replace_once(doc, symbols))
            .await
            .map_err(|e| db_error("replace_document", e))
    }

    async fn delete_documents(&self, ids: &[DocumentId]) -> PortResult<()> {
        let mut ids: Vec<&str> = ids
            .iter()
            .map(DocumentId::as_str)
            .filter(|d| storable(d))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(());
        }
        retried(|| self.delete_once(&ids))
            .await
            .map_err(|e| db_error("delete_documents", e))
    }

    async fn lookup(&self, lookup: &SymbolLookup, limit: usize) -> PortResult<Vec<StoredSymbol>> {
        let (filter, binds) = match lookup {
            SymbolLookup::Name(name) => ("name = $2", vec![name.clone()]),
            SymbolLookup::Qualified(q) => {
                // A `::`-aligned suffix of `qualified` is a prefix of its reverse.
                let (low, high) = rows::prefix_range(&rows::reversed(&format!("::{q}")));
                (
                    "(qualified = $2 OR (qualified_rev >= $3 AND qualified_rev < $4))",
                    vec![q.clone(), low, high],
                )
            }
            SymbolLookup::NameInPath { name, path } => (
                "name = $2 AND strpos(path, $3) > 0",
                vec![name.clone(), path.clone()],
            ),
        };
        if limit == 0 || !binds.iter().all(|b| storable(b)) {
            return Ok(Vec::new());
        }
        let sql =
            format!("SELECT {DEF_COLUMNS} FROM symbol_defs WHERE {filter} {LOOKUP_ORDER} LIMIT $1");
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
        let sql = format!(
            "SELECT {DEF_COLUMNS} FROM symbol_defs WHERE chunk_id = ANY($1) \
             ORDER BY path, line_start, qualified, chunk_id, id"
        );
        let rows = self.by_chunks("definitions_in", &sql, chunks).await?;
        rows.iter()
            .map(|r| rows::symbol(r).map(|(_, s)| s))
            .collect()
    }

    async fn references_in(&self, chunks: &[ChunkId]) -> PortResult<Vec<StoredReference>> {
        let rows = self
            .by_chunks(
                "references_in",
                "SELECT document_id, chunk_id, name, qualifier, from_qualified, kind, line \
                 FROM symbol_refs WHERE chunk_id = ANY($1) \
                 ORDER BY document_id, line, name, chunk_id, id",
                chunks,
            )
            .await?;
        rows.iter().map(rows::reference).collect()
    }

    async fn neighbours(
        &self,
        qualified: &str,
        hops: u8,
        limit: usize,
    ) -> PortResult<Vec<Neighbour>> {
        let hops = hops.min(2);
        if hops == 0 || limit == 0 || !storable(qualified) {
            return Ok(Vec::new());
        }
        let fail = |e| db_error("neighbours", e);
        // One snapshot for the whole walk.
        let mut tx = self.pool.begin().await.map_err(fail)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        let found = neighbours::walk(&mut *tx, qualified, hops, limit).await?;
        tx.commit().await.map_err(fail)?;
        Ok(found)
    }

    async fn chunk_meta(&self, chunks: &[ChunkId]) -> PortResult<HashMap<ChunkId, CodeMeta>> {
        let rows = self
            .by_chunks(
                "chunk_meta",
                "SELECT chunk_id, language, symbol, symbol_kind, qualified, signature, part, \
                 parts FROM chunk_meta WHERE chunk_id = ANY($1)",
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
