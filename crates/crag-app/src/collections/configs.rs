//! The configuration a collection runs with, and opening one for a one-shot command.

use std::path::PathBuf;

use crag_config::{check_collection_name, error_chain, DEFAULT_COLLECTION};
use crag_engine::Engine;

use super::{catalog, invalid, not_found, Descriptor, COLLECTIONS_DIR};
use crate::compose::ComposeError;
use crate::error::AppError;
use crate::Config;

pub(super) fn dir_of(base: &Config, name: &str) -> PathBuf {
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

/// The configuration collection `name` runs with (`default`: `base`), for a one-shot command
/// that opens one collection; not found when it does not exist.
pub async fn collection_config(base: &Config, name: &str) -> Result<Config, AppError> {
    if name == DEFAULT_COLLECTION {
        return Ok(base.clone());
    }
    check_collection_name(name).map_err(invalid)?;
    let descriptor = catalog::Catalog::of(base)
        .get(name)
        .await?
        .ok_or_else(|| not_found(name))?;
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

/// Sets `[embedder] precision` in `overrides` to the precision a new index gets (an explicit
/// one is kept), so a later change of the server's `auto` or default cannot change the
/// collection's model.
pub(super) fn fix_precision(
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
