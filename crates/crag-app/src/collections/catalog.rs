//! Where the collections' descriptors are kept: a file in each collection's directory (one
//! machine's list), or, with `[storage] graphs = "postgres"`, a table of the shared Postgres
//! database, where every replica reads the same list.

use std::path::{Path, PathBuf};

use crag_config::{check_collection_name, error_chain};
use sqlx::postgres::PgPool;
use sqlx::Row as _;
use tokio::sync::OnceCell;

use super::{Descriptor, COLLECTIONS_DIR, DESCRIPTOR_FILE};
use crate::compose::{ComposeError, Context as _, GraphStore};
use crate::error::{AppError, Code};
use crate::shared_pg::{create_once, lazy_pool, quote_ident};
use crate::Config;

/// The table of descriptors, in `[storage] postgres_schema`.
const TABLE: &str = "crag_collections";

/// How old an unfinished creation's claim may grow before another creation of the name
/// takes it over (its process died before it finished), in milliseconds.
const ABANDONED_MS: i64 = 10 * 60 * 1000;

/// The collections' descriptors.
pub(crate) enum Catalog {
    /// `<data_dir>/collections/<name>/collection.json`.
    Files { root: PathBuf },
    /// A catalogue in Postgres that cannot be reached as configured (every use fails so).
    Misconfigured(String),
    /// The table `crag_collections` of a Postgres schema.
    Postgres {
        pool: PgPool,
        /// The table, schema-qualified and quoted.
        table: String,
        /// Created (when missing) on first use.
        ready: OnceCell<()>,
    },
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Files { root } => write!(f, "Catalog::Files({})", root.display()),
            Self::Misconfigured(why) => write!(f, "Catalog::Misconfigured({why})"),
            Self::Postgres { table, .. } => write!(f, "Catalog::Postgres({table})"),
        }
    }
}

/// Where a catalogue's descriptors are, ready to use.
enum Place<'a> {
    Files(&'a Path),
    Table(&'a PgPool, &'a str),
}

fn unavailable(what: &str, e: &sqlx::Error) -> AppError {
    AppError::new(
        Code::Unavailable,
        format!("the collections' catalogue in Postgres: {what}: {e}"),
    )
}

impl Catalog {
    /// The catalogue `base` names (no connection is made before the first use).
    pub(crate) fn of(base: &Config) -> Self {
        let storage = &base.adapters.storage;
        if storage.graphs != GraphStore::Postgres {
            return Self::Files {
                root: base.data_dir.join(COLLECTIONS_DIR),
            };
        }
        let open = || -> Result<Self, ComposeError> {
            let pool = lazy_pool(&storage.graphs_url()?)?;
            let schema = storage.graphs_schema()?;
            Ok(Self::Postgres {
                pool,
                table: format!("{}.{TABLE}", quote_ident(schema)),
                ready: OnceCell::new(),
            })
        };
        open().unwrap_or_else(|e| Self::Misconfigured(error_chain(&e)))
    }

    /// Whether other processes share this catalogue (and may change it).
    pub(crate) fn is_shared(&self) -> bool {
        !matches!(self, Self::Files { .. })
    }

    /// Where the descriptors are: the files' root, or the pool once the table exists.
    async fn place(&self) -> Result<Place<'_>, AppError> {
        let (pool, table, ready) = match self {
            Self::Files { root } => return Ok(Place::Files(root)),
            Self::Misconfigured(why) => {
                return Err(AppError::new(
                    Code::Unavailable,
                    format!("the collections' catalogue in Postgres: {why}"),
                ))
            }
            Self::Postgres { pool, table, ready } => (pool, table, ready),
        };
        ready
            .get_or_try_init(|| async {
                let schema = table.rsplit_once('.').map_or("", |(s, _)| s);
                let create = format!(
                    "CREATE TABLE IF NOT EXISTS {table} (name TEXT PRIMARY KEY, \
                     created_ms BIGINT NOT NULL, embedding_model TEXT NOT NULL, \
                     overrides TEXT NOT NULL)"
                );
                create_once(pool, TABLE, schema, &create)
                    .await
                    .map_err(|e| unavailable("creating its table", &e))
            })
            .await?;
        Ok(Place::Table(pool, table.as_str()))
    }

    /// The named collections (not `default`), sorted.
    pub(crate) async fn names(&self) -> Result<Vec<String>, AppError> {
        let (pool, table) = match self.place().await? {
            Place::Files(root) => return file_names(root),
            Place::Table(pool, table) => (pool, table),
        };
        let sql = format!("SELECT name FROM {table} WHERE embedding_model <> '' ORDER BY name");
        let rows = sqlx::query(&sql)
            .fetch_all(pool)
            .await
            .map_err(|e| unavailable("listing", &e))?;
        Ok(rows
            .iter()
            .map(|row| row.get::<String, _>(0))
            .filter(|name| check_collection_name(name).is_ok())
            .collect())
    }

    /// The descriptor of collection `name`, if it exists (and its creation has finished).
    pub(crate) async fn get(&self, name: &str) -> Result<Option<Descriptor>, AppError> {
        let (pool, table) = match self.place().await? {
            Place::Files(root) => return read_file(&root.join(name)),
            Place::Table(pool, table) => (pool, table),
        };
        let sql = format!(
            "SELECT created_ms, embedding_model, overrides FROM {table} \
             WHERE name = $1 AND embedding_model <> ''"
        );
        let Some(row) = sqlx::query(&sql)
            .bind(name)
            .fetch_optional(pool)
            .await
            .map_err(|e| unavailable("reading", &e))?
        else {
            return Ok(None);
        };
        let overrides: String = row.get(2);
        Ok(Some(Descriptor {
            name: name.to_owned(),
            created_ms: row.get(0),
            embedding_model: row.get(1),
            overrides: serde_json::from_str(&overrides).map_err(|e| {
                AppError::internal(format!("unreadable overrides of collection `{name}`: {e}"))
            })?,
        }))
    }

    /// Takes the name of `descriptor` for a creation about to start; `false` when another
    /// creation (here or in another process) holds it already.
    pub(crate) async fn claim(&self, descriptor: &Descriptor) -> Result<bool, AppError> {
        let Place::Table(pool, table) = self.place().await? else {
            // One process owns the files, and creations are serialised.
            return Ok(true);
        };
        let sql = format!(
            "INSERT INTO {table} (name, created_ms, embedding_model, overrides) \
             VALUES ($1, $2, '', '{{}}') ON CONFLICT (name) DO UPDATE \
             SET created_ms = excluded.created_ms \
             WHERE {table}.embedding_model = '' \
             AND {table}.created_ms < excluded.created_ms - {ABANDONED_MS}"
        );
        let done = sqlx::query(&sql)
            .bind(&descriptor.name)
            .bind(descriptor.created_ms)
            .execute(pool)
            .await
            .map_err(|e| unavailable("creating", &e))?;
        Ok(done.rows_affected() == 1)
    }

    /// Records `descriptor` (in `dir` for the files): the collection exists from now on.
    pub(crate) async fn commit(&self, descriptor: &Descriptor, dir: &Path) -> Result<(), AppError> {
        let Place::Table(pool, table) = self.place().await? else {
            return write_file(dir, descriptor).map_err(|e| AppError::internal(error_chain(&e)));
        };
        let overrides = serde_json::Value::Object(descriptor.overrides.clone()).to_string();
        let sql =
            format!("UPDATE {table} SET embedding_model = $2, overrides = $3 WHERE name = $1");
        sqlx::query(&sql)
            .bind(&descriptor.name)
            .bind(&descriptor.embedding_model)
            .bind(overrides)
            .execute(pool)
            .await
            .map_err(|e| unavailable("creating", &e))?;
        Ok(())
    }

    /// Forgets collection `name` (the files: its directory's removal does).
    pub(crate) async fn release(&self, name: &str) -> Result<(), AppError> {
        let Place::Table(pool, table) = self.place().await? else {
            return Ok(());
        };
        let sql = format!("DELETE FROM {table} WHERE name = $1");
        sqlx::query(&sql)
            .bind(name)
            .execute(pool)
            .await
            .map_err(|e| unavailable("deleting", &e))?;
        Ok(())
    }
}

fn file_names(root: &Path) -> Result<Vec<String>, AppError> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(AppError::internal(format!("cannot list collections: {e}"))),
    };
    let mut named: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().join(DESCRIPTOR_FILE).is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| check_collection_name(name).is_ok())
        .collect();
    named.sort();
    Ok(named)
}

/// The descriptor in the collection directory `dir`, if there is one.
fn read_file(dir: &Path) -> Result<Option<Descriptor>, AppError> {
    let path = dir.join(DESCRIPTOR_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| AppError::internal(format!("unreadable {}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AppError::internal(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Writes `descriptor` into `dir` atomically (a temporary file renamed).
fn write_file(dir: &Path, descriptor: &Descriptor) -> Result<(), ComposeError> {
    let text = serde_json::to_string_pretty(descriptor).map_err(ComposeError::other)?;
    let tmp = dir.join(format!("{DESCRIPTOR_FILE}.tmp"));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(DESCRIPTOR_FILE))
        .with_context(|| format!("cannot write the descriptor in {}", dir.display()))
}
