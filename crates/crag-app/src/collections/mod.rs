//! Named collections: each its own keyword index, vector table, symbol graph, term graph and
//! namespace of the session store, under `<data_dir>/collections/<name>/` (the graphs, with
//! `[storage] graphs = "postgres"`, in the schema `<postgres_schema>/<name>`), with the server's
//! configuration plus the overrides it was created with. The data directory itself is the
//! `default` collection, so an index written before collections existed opens as it is.
//!
//! The descriptors are files in each collection's directory, or with `[storage] graphs =
//! "postgres"` rows of a table in the shared schema, which every replica reads ([`catalog`]).
//! Collections open on first use and stay open; a replica checks a shared catalogue again
//! at most every `[storage] read_consistency_ms` (1 s when unset), so a collection created
//! or deleted through another replica is seen within that. Creating and deleting are
//! serialised within a process; across processes, by the catalogue's row.

mod catalog;
mod configs;

pub use configs::{collection_config, config_for, open_collection};
use configs::{dir_of, fix_precision};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crag_config::error_chain;

use crag_config::{check_collection_name, DEFAULT_COLLECTION};
use crag_engine::{Engine, EngineStats};
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, RwLock};

use crate::error::{AppError, Code};
use crate::Config;

/// Directory of the named collections, in the data directory.
pub const COLLECTIONS_DIR: &str = "collections";

/// A collection's description, in its directory.
pub const DESCRIPTOR_FILE: &str = "collection.json";

/// What a collection records of itself at creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Descriptor {
    /// Its name.
    pub name: String,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_ms: i64,
    /// The embedding model its vectors are made with, fixed at creation.
    pub embedding_model: String,
    /// Configuration tables merged over the server's (`[embedder] precision` always set, so
    /// the model stays the one it was created with).
    pub overrides: serde_json::Map<String, serde_json::Value>,
}

/// A collection as `describe` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CollectionInfo {
    /// Its name.
    pub name: String,
    /// Creation time (ms since the epoch); `None` for `default`, which predates records.
    pub created_ms: Option<i64>,
    /// The embedding model.
    pub embedding_model: String,
    /// Its configuration overrides (empty for `default`).
    pub overrides: serde_json::Map<String, serde_json::Value>,
    /// Its index statistics.
    pub stats: EngineStats,
}

/// An open collection.
#[derive(Clone)]
struct Opened {
    engine: Engine,
    /// Its creation time, which tells it from a collection of the same name created later.
    created_ms: i64,
    /// When the catalogue last said it exists.
    checked: Instant,
}

/// How long an open collection is served without asking a shared catalogue again, when
/// `[storage] read_consistency_ms` is unset.
const DEFAULT_RECHECK: Duration = Duration::from_secs(1);

/// The collections of one data directory (or of the shared catalogue).
pub struct Collections {
    base: Config,
    default: Engine,
    catalog: catalog::Catalog,
    recheck: Duration,
    open: RwLock<BTreeMap<String, Opened>>,
    /// Serialises opening, creating and deleting.
    changes: Mutex<()>,
}

impl std::fmt::Debug for Collections {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collections")
            .field("data_dir", &self.base.data_dir)
            .finish_non_exhaustive()
    }
}

/// The answer for a collection that does not exist, and (so that its existence is not
/// revealed) for one the caller may not use.
pub(crate) fn not_found(name: &str) -> AppError {
    AppError::new(
        Code::NotFound,
        format!("no collection `{}`", name.escape_debug()),
    )
}

fn invalid(message: impl Into<String>) -> AppError {
    AppError::new(Code::InvalidArgument, message)
}

/// How long what other processes share (open collections, stored tokens) is used before it
/// is read again: `[storage] read_consistency_ms`, 1 s when unset.
pub(crate) fn recheck_interval(base: &Config) -> Duration {
    base.adapters
        .storage
        .read_consistency_ms
        .map_or(DEFAULT_RECHECK, Duration::from_millis)
}

impl Collections {
    /// The collections of `base.data_dir`, whose default collection is `default` (the engine
    /// [`crate::compose::engine`] opened on it).
    pub fn new(default: Engine, base: &Config) -> Self {
        let recheck = recheck_interval(base);
        Self {
            base: base.clone(),
            default,
            catalog: catalog::Catalog::of(base),
            recheck,
            open: RwLock::new(BTreeMap::new()),
            changes: Mutex::new(()),
        }
    }

    /// The default collection's engine.
    pub fn default_engine(&self) -> &Engine {
        &self.default
    }

    /// The engines open now, `default` first, then the others by name: what is served
    /// without opening anything.
    pub async fn open_engines(&self) -> Vec<(String, Engine)> {
        let mut engines = vec![(DEFAULT_COLLECTION.to_owned(), self.default.clone())];
        let open = self.open.read().await;
        engines.extend(
            open.iter()
                .map(|(name, opened)| (name.clone(), opened.engine.clone())),
        );
        engines
    }

    fn root(&self) -> PathBuf {
        self.base.data_dir.join(COLLECTIONS_DIR)
    }

    /// Whether other processes share the list of collections.
    pub fn is_shared(&self) -> bool {
        self.catalog.is_shared()
    }

    fn dir(&self, name: &str) -> PathBuf {
        dir_of(&self.base, name)
    }

    /// The configuration `descriptor`'s collection runs with ([`config_for`]).
    pub fn config_of(&self, descriptor: &Descriptor) -> Result<Config, AppError> {
        config_for(&self.base, descriptor)
    }

    /// The names of every collection, `default` first, then the others sorted.
    pub async fn names(&self) -> Result<Vec<String>, AppError> {
        let mut names = vec![DEFAULT_COLLECTION.to_owned()];
        names.extend(self.catalog.names().await?);
        Ok(names)
    }

    async fn read_descriptor(&self, name: &str) -> Result<Option<Descriptor>, AppError> {
        self.catalog.get(name).await
    }

    /// The open engine of `name` while it may be served without asking the catalogue.
    async fn cached(&self, name: &str) -> Option<Engine> {
        let open = self.open.read().await;
        let opened = open.get(name)?;
        (!self.catalog.is_shared() || opened.checked.elapsed() < self.recheck)
            .then(|| opened.engine.clone())
    }

    /// The engine of collection `name`, opened on first use; not found when it does not exist.
    pub async fn get(&self, name: &str) -> Result<Engine, AppError> {
        if name == DEFAULT_COLLECTION {
            return Ok(self.default.clone());
        }
        check_collection_name(name).map_err(invalid)?;
        if let Some(engine) = self.cached(name).await {
            return Ok(engine);
        }
        let _changing = self.changes.lock().await;
        if let Some(engine) = self.cached(name).await {
            return Ok(engine);
        }
        let held = self.open.read().await.get(name).cloned();
        let descriptor = match (self.read_descriptor(name).await, &held) {
            (Ok(found), _) => found,
            // A shared catalogue out of reach: what is open goes on being served.
            (Err(e), Some(held)) => {
                tracing::warn!(
                    collection = name,
                    error = %e.message,
                    "collections' catalogue unavailable; serving the open collection"
                );
                return Ok(held.engine.clone());
            }
            (Err(e), None) => return Err(e),
        };
        let Some(descriptor) = descriptor else {
            if held.is_some() {
                tracing::info!(collection = name, "collection deleted elsewhere; closed");
                self.open.write().await.remove(name);
            }
            return Err(not_found(name));
        };
        let engine = match held {
            Some(h) if h.created_ms == descriptor.created_ms => h.engine,
            _ => self.open_engine(&descriptor).await?,
        };
        self.remember(&descriptor, &engine).await;
        Ok(engine)
    }

    async fn remember(&self, descriptor: &Descriptor, engine: &Engine) {
        self.open.write().await.insert(
            descriptor.name.clone(),
            Opened {
                engine: engine.clone(),
                created_ms: descriptor.created_ms,
                checked: Instant::now(),
            },
        );
    }

    /// The engine of `descriptor`'s collection: sessions in its namespace of the default
    /// collection's store, the default collection's metrics, and its embedder when the model
    /// is the same.
    async fn build(&self, descriptor: &Descriptor) -> Result<Engine, AppError> {
        let config = self.config_of(descriptor)?;
        let sessions = self
            .default
            .cgrag()
            .sessions
            .as_ref()
            .map(|store| store.in_namespace(&descriptor.name));
        crate::compose::engine_with(&config, sessions, Some(&self.default))
            .await
            .map_err(|e| {
                AppError::new(
                    Code::Unavailable,
                    format!(
                        "collection `{}` cannot be opened: {}",
                        descriptor.name,
                        error_chain(&e)
                    ),
                )
            })
    }

    async fn open_engine(&self, descriptor: &Descriptor) -> Result<Engine, AppError> {
        let engine = self.build(descriptor).await?;
        let model = engine.embedder().model_id();
        if model != descriptor.embedding_model {
            return Err(AppError::new(
                Code::Unavailable,
                format!(
                    "collection `{}` was created with the embedding model {}, but {model} is \
                     configured for it",
                    descriptor.name, descriptor.embedding_model
                ),
            ));
        }
        Ok(engine)
    }

    /// Creates collection `name` with `overrides` (configuration tables as in the file);
    /// its embedding model is fixed now. Refused when it exists, when the name is invalid or
    /// an override is (nothing is left behind).
    pub async fn create(
        &self,
        name: &str,
        mut overrides: serde_json::Map<String, serde_json::Value>,
    ) -> Result<CollectionInfo, AppError> {
        check_collection_name(name).map_err(invalid)?;
        let _changing = self.changes.lock().await;
        let exists = || {
            AppError::new(
                Code::AlreadyExists,
                format!("collection `{name}` exists already"),
            )
        };
        if name == DEFAULT_COLLECTION || self.read_descriptor(name).await?.is_some() {
            return Err(exists());
        }
        fix_precision(&self.base, &mut overrides)?;
        let mut descriptor = Descriptor {
            name: name.to_owned(),
            created_ms: crag_sessions::now_ms(),
            embedding_model: String::new(),
            overrides,
        };
        self.config_of(&descriptor)?;
        if !self.catalog.claim(&descriptor).await? {
            return Err(exists());
        }
        let dir = self.dir(name);
        let engine = match self.open_new(&mut descriptor, &dir).await {
            Ok(engine) => engine,
            Err(e) => {
                if let Err(cleanup) = remove_dir(&dir).await {
                    tracing::warn!(error = %cleanup, "cannot remove a collection that failed to open");
                }
                if let Err(cleanup) = self.catalog.release(name).await {
                    tracing::warn!(error = %cleanup, "cannot forget a collection that failed to open");
                }
                return Err(e);
            }
        };
        self.remember(&descriptor, &engine).await;
        tracing::info!(collection = name, model = %descriptor.embedding_model, "collection created");
        info(&descriptor, &engine).await
    }

    /// Opens a new collection's engine on what an earlier, interrupted creation of the name
    /// may have left removed, and records its descriptor.
    async fn open_new(&self, descriptor: &mut Descriptor, dir: &Path) -> Result<Engine, AppError> {
        remove_dir(dir).await?;
        drop_graphs(&self.base, &descriptor.name).await?;
        self.drop_vectors(&descriptor.name).await?;
        let engine = self.build(descriptor).await?;
        descriptor.embedding_model = engine.embedder().model_id().to_owned();
        self.catalog.commit(descriptor, dir).await?;
        Ok(engine)
    }

    /// Drops collection `name`'s tables under `vectors_uri`, if any.
    async fn drop_vectors(&self, name: &str) -> Result<(), AppError> {
        let Some(uri) = &self.base.vectors_uri else {
            return Ok(());
        };
        let vectors = format!("{}/{COLLECTIONS_DIR}/{name}", uri.trim_end_matches('/'));
        if uri.contains("://") {
            let options = crate::compose::store_options(&self.base)
                .map_err(|e| AppError::internal(error_chain(&e)))?;
            crag_lancedb::drop_database(&vectors, &options)
                .await
                .map_err(|e| AppError::internal(format!("cannot drop {vectors}: {e}")))
        } else {
            remove_dir(Path::new(&vectors)).await
        }
    }

    /// Describes collection `name`.
    pub async fn describe(&self, name: &str) -> Result<CollectionInfo, AppError> {
        let engine = self.get(name).await?;
        match self.read_descriptor(name).await? {
            Some(descriptor) => info(&descriptor, &engine).await,
            None => {
                let stats = engine.stats().await?;
                Ok(CollectionInfo {
                    name: DEFAULT_COLLECTION.to_owned(),
                    created_ms: None,
                    embedding_model: stats.embedding_model.clone(),
                    overrides: serde_json::Map::new(),
                    stats,
                })
            }
        }
    }

    /// Deletes collection `name`: its indexes, its sessions, its directory. The default
    /// collection cannot be deleted. Requests running on it finish on what they hold.
    pub async fn delete(&self, name: &str) -> Result<(), AppError> {
        if name == DEFAULT_COLLECTION {
            return Err(invalid("the default collection cannot be deleted"));
        }
        let engine = self.get(name).await?;
        let _changing = self.changes.lock().await;
        self.open.write().await.remove(name);
        if let Some(store) = &engine.cgrag().sessions {
            let cleared = store.clear().await.map_err(|e| {
                AppError::new(
                    Code::Unavailable,
                    format!("cannot delete the collection's sessions: {e}"),
                )
            })?;
            tracing::info!(collection = name, sessions = cleared, "sessions deleted");
        }
        drop(engine);
        // Out of sight at once (the catalogue's row; the files': a rename), then removed.
        self.catalog.release(name).await?;
        let dir = self.dir(name);
        let doomed = self
            .root()
            .join(format!(".deleted-{name}-{}", crag_sessions::now_ms()));
        match std::fs::rename(&dir, &doomed) {
            Ok(()) => remove_dir(&doomed).await?,
            // A shared catalogue's collection this replica never opened has no directory here.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.catalog.is_shared() => {}
            Err(e) => {
                return Err(AppError::internal(format!(
                    "cannot delete {}: {e}",
                    dir.display()
                )))
            }
        }
        drop_graphs(&self.base, name).await?;
        self.drop_vectors(name).await?;
        tracing::info!(collection = name, "collection deleted");
        Ok(())
    }
}

async fn info(descriptor: &Descriptor, engine: &Engine) -> Result<CollectionInfo, AppError> {
    Ok(CollectionInfo {
        name: descriptor.name.clone(),
        created_ms: Some(descriptor.created_ms),
        embedding_model: descriptor.embedding_model.clone(),
        overrides: descriptor.overrides.clone(),
        stats: engine.stats().await?,
    })
}

/// Drops collection `name`'s graphs kept in Postgres, if any.
async fn drop_graphs(base: &Config, name: &str) -> Result<(), AppError> {
    crate::compose::drop_collection_graphs(base, name)
        .await
        .map(|_| ())
        .map_err(|e| AppError::new(Code::Unavailable, error_chain(&e)))
}

/// Removes `dir` and everything in it, if it exists.
async fn remove_dir(dir: &Path) -> Result<(), AppError> {
    let dir = dir.to_owned();
    tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AppError::internal(format!(
            "cannot remove {}: {e}",
            dir.display()
        ))),
    })
    .await
    .map_err(|e| AppError::internal(format!("removal task failed: {e}")))?
}
