//! Named collections: each its own keyword index, vector table, symbol graph, term graph and
//! namespace of the session store, under `<data_dir>/collections/<name>/` (the graphs, with
//! `[storage] graphs = "postgres"`, in the schema `<postgres_schema>/<name>`), with the server's
//! configuration plus the overrides it was created with. The data directory itself is the
//! `default` collection, so an index written before collections existed opens as it is.
//!
//! Collections open on first use and stay open; creating and deleting are serialised.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crag_config::error_chain;

use crate::compose::{ComposeError, Context as _};
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

/// The collections of one data directory.
pub struct Collections {
    base: Config,
    default: Engine,
    open: RwLock<BTreeMap<String, Engine>>,
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

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Collections {
    /// The collections of `base.data_dir`, whose default collection is `default` (the engine
    /// [`crate::compose::engine`] opened on it).
    pub fn new(default: Engine, base: &Config) -> Self {
        Self {
            base: base.clone(),
            default,
            open: RwLock::new(BTreeMap::new()),
            changes: Mutex::new(()),
        }
    }

    /// The default collection's engine.
    pub fn default_engine(&self) -> &Engine {
        &self.default
    }

    fn root(&self) -> PathBuf {
        self.base.data_dir.join(COLLECTIONS_DIR)
    }

    fn dir(&self, name: &str) -> PathBuf {
        dir_of(&self.base, name)
    }

    /// The configuration `descriptor`'s collection runs with ([`config_for`]).
    pub fn config_of(&self, descriptor: &Descriptor) -> Result<Config, AppError> {
        config_for(&self.base, descriptor)
    }

    /// The names of every collection, `default` first, then the others sorted.
    pub fn names(&self) -> Result<Vec<String>, AppError> {
        let mut names = vec![DEFAULT_COLLECTION.to_owned()];
        let entries = match std::fs::read_dir(self.root()) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
            Err(e) => return Err(AppError::internal(format!("cannot list collections: {e}"))),
        };
        let mut named: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(DESCRIPTOR_FILE).is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| check_collection_name(name).is_ok())
            .collect();
        named.sort();
        names.extend(named);
        Ok(names)
    }

    fn read_descriptor(&self, name: &str) -> Result<Option<Descriptor>, AppError> {
        read_descriptor(&self.base, name)
    }

    /// The engine of collection `name`, opened on first use; not found when it does not exist.
    pub async fn get(&self, name: &str) -> Result<Engine, AppError> {
        if name == DEFAULT_COLLECTION {
            return Ok(self.default.clone());
        }
        check_collection_name(name).map_err(invalid)?;
        if let Some(engine) = self.open.read().await.get(name) {
            return Ok(engine.clone());
        }
        let _changing = self.changes.lock().await;
        if let Some(engine) = self.open.read().await.get(name) {
            return Ok(engine.clone());
        }
        let descriptor = self.read_descriptor(name)?.ok_or_else(|| not_found(name))?;
        let engine = self.open_engine(&descriptor).await?;
        self.open
            .write()
            .await
            .insert(name.to_owned(), engine.clone());
        Ok(engine)
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
        if name == DEFAULT_COLLECTION || self.read_descriptor(name)?.is_some() {
            return Err(AppError::new(
                Code::AlreadyExists,
                format!("collection `{name}` exists already"),
            ));
        }
        fix_precision(&self.base, &mut overrides)?;
        let mut descriptor = Descriptor {
            name: name.to_owned(),
            created_ms: now_ms(),
            embedding_model: String::new(),
            overrides,
        };
        self.config_of(&descriptor)?;
        let dir = self.dir(name);
        // What an earlier, interrupted creation may have left.
        remove_dir(&dir).await?;
        drop_graphs(&self.base, name).await?;
        let engine = match self.open_new(&mut descriptor, &dir).await {
            Ok(engine) => engine,
            Err(e) => {
                if let Err(cleanup) = remove_dir(&dir).await {
                    tracing::warn!(error = %cleanup, "cannot remove a collection that failed to open");
                }
                return Err(e);
            }
        };
        self.open
            .write()
            .await
            .insert(name.to_owned(), engine.clone());
        tracing::info!(collection = name, model = %descriptor.embedding_model, "collection created");
        info(&descriptor, &engine).await
    }

    async fn open_new(&self, descriptor: &mut Descriptor, dir: &Path) -> Result<Engine, AppError> {
        let engine = self.build(descriptor).await?;
        descriptor.embedding_model = engine.embedder().model_id().to_owned();
        write_descriptor(dir, descriptor).map_err(|e| AppError::internal(error_chain(&e)))?;
        Ok(engine)
    }

    /// Describes collection `name`.
    pub async fn describe(&self, name: &str) -> Result<CollectionInfo, AppError> {
        let engine = self.get(name).await?;
        match self.read_descriptor(name)? {
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
        // Out of sight at once (a rename), then removed.
        let dir = self.dir(name);
        let doomed = self.root().join(format!(".deleted-{name}-{}", now_ms()));
        std::fs::rename(&dir, &doomed)
            .map_err(|e| AppError::internal(format!("cannot delete {}: {e}", dir.display())))?;
        remove_dir(&doomed).await?;
        drop_graphs(&self.base, name).await?;
        if let Some(uri) = &self.base.vectors_uri {
            let vectors = format!("{}/{COLLECTIONS_DIR}/{name}", uri.trim_end_matches('/'));
            if uri.contains("://") {
                let options = crate::compose::store_options(&self.base)
                    .map_err(|e| AppError::internal(error_chain(&e)))?;
                crag_lancedb::drop_database(&vectors, &options)
                    .await
                    .map_err(|e| AppError::internal(format!("cannot drop {vectors}: {e}")))?;
            } else {
                remove_dir(Path::new(&vectors)).await?;
            }
        }
        tracing::info!(collection = name, "collection deleted");
        Ok(())
    }
}

fn dir_of(base: &Config, name: &str) -> PathBuf {
    base.data_dir.join(COLLECTIONS_DIR).join(name)
}

/// The configuration collection `descriptor` runs with: `base` (the server's) with its
/// overrides, its own data directory, and its vectors beside the server's.
pub fn config_for(base: &Config, descriptor: &Descriptor) -> Result<Config, AppError> {
    let mut config = base
        .with_overrides(&descriptor.overrides)
        .map_err(|e| invalid(format!("overrides: {}", error_chain(&e))))?;
    config.data_dir = dir_of(base, &descriptor.name);
    config.adapters.storage.postgres_schema =
        base.adapters.storage.collection_schema(&descriptor.name);
    config.vectors_uri = base.vectors_uri.as_ref().map(|uri| {
        format!(
            "{}/{COLLECTIONS_DIR}/{}",
            uri.trim_end_matches('/'),
            descriptor.name
        )
    });
    Ok(config)
}

/// The descriptor of collection `name` in `base.data_dir`, if it exists.
pub fn read_descriptor(base: &Config, name: &str) -> Result<Option<Descriptor>, AppError> {
    let path = dir_of(base, name).join(DESCRIPTOR_FILE);
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

/// The configuration collection `name` of `base.data_dir` runs with (`default`: `base`),
/// for a one-shot command that opens one collection; not found when it does not exist.
pub fn collection_config(base: &Config, name: &str) -> Result<Config, AppError> {
    if name == DEFAULT_COLLECTION {
        return Ok(base.clone());
    }
    check_collection_name(name).map_err(invalid)?;
    let descriptor = read_descriptor(base, name)?.ok_or_else(|| not_found(name))?;
    config_for(base, &descriptor)
}

/// The whole engine of collection `name` (every adapter wired, as [`crate::compose::engine`])
/// with `config` ([`collection_config`], perhaps adjusted), its sessions in its namespace of
/// `base`'s session store: what a one-shot command uses instead of a server's [`Collections`].
pub async fn open_collection(
    base: &Config,
    name: &str,
    config: &Config,
) -> Result<Engine, ComposeError> {
    if name == DEFAULT_COLLECTION {
        return crate::compose::engine(config).await;
    }
    let sessions = crate::compose::session_store(base)
        .await?
        .map(|store| store.in_namespace(name));
    crate::compose::engine_with(config, sessions, None).await
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

/// Sets `[embedder] precision` in `overrides` to the precision a new index gets (an explicit
/// one is kept), so a later change of the server's `auto` or default cannot change the
/// collection's model.
fn fix_precision(
    base: &Config,
    overrides: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), AppError> {
    let embedder = overrides
        .entry("embedder")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    let serde_json::Value::Object(embedder) = embedder else {
        return Err(invalid("overrides: `embedder` must be a table"));
    };
    if !embedder.contains_key("precision") {
        let precision = match base.embedder.precision {
            crag_config::EmbedderPrecision::Float32 => "float32",
            // A new index under "auto" is int8.
            crag_config::EmbedderPrecision::Int8 | crag_config::EmbedderPrecision::Auto => "int8",
        };
        embedder.insert("precision".into(), precision.into());
    }
    Ok(())
}

/// Writes `descriptor` into `dir` atomically (a temporary file renamed).
fn write_descriptor(dir: &Path, descriptor: &Descriptor) -> Result<(), ComposeError> {
    let text = serde_json::to_string_pretty(descriptor).map_err(ComposeError::other)?;
    let tmp = dir.join(format!("{DESCRIPTOR_FILE}.tmp"));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, dir.join(DESCRIPTOR_FILE))
        .with_context(|| format!("cannot write the descriptor in {}", dir.display()))
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
