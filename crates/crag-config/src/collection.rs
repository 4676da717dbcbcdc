//! What the configuration knows of collections: their names, and the configuration a
//! collection runs with (the server's, with the collection's overrides on top).

use crate::error::{bail, ConfigError, Result};

use crate::{AdapterSections, Config};

/// The collection a request names when it names none: the data directory itself.
pub const DEFAULT_COLLECTION: &str = "default";

/// Longest collection name.
pub const MAX_NAME_LEN: usize = 64;

/// Top-level keys a collection may not override: where data lives, how the server runs and
/// who may call it are the server's, shared by every collection.
pub const FIXED_KEYS: [&str; 10] = [
    "data_dir",
    "vectors_uri",
    "assets_dir",
    "sessions",
    "server",
    "limits",
    "auth",
    "vector_index",
    "mcp",
    "storage",
];

/// Checks a collection name: 1 to [`MAX_NAME_LEN`] lowercase ASCII letters, digits, `_` and
/// `-`, starting with a letter or digit (it names a directory and a URL path segment).
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    let ok_start = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok_rest = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok_start || !ok_rest || name.len() > MAX_NAME_LEN {
        return Err(format!(
            "invalid collection name `{}`: 1 to {MAX_NAME_LEN} lowercase letters, digits, `_` \
             and `-`, starting with a letter or a digit",
            name.escape_debug()
        ));
    }
    Ok(())
}

impl<A: AdapterSections> Config<A> {
    /// This configuration with a collection's `overrides` (top-level tables as in the
    /// configuration file, e.g. `{"retrieval": {"fusion": "rrf"}}`) merged on top, table by
    /// table, and validated. Keys of [`FIXED_KEYS`] are refused.
    pub fn with_overrides(
        &self,
        overrides: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self> {
        let overrides: toml::Table =
            serde_json::from_value(serde_json::Value::Object(overrides.clone()))
                .map_err(|e| ConfigError::invalid(e.to_string()))?;
        if let Some(key) = overrides.keys().find(|k| FIXED_KEYS.contains(&k.as_str())) {
            bail!("`{key}` is the server's and cannot be set per collection");
        }
        let mut table = toml::Table::try_from(self).map_err(|e| {
            ConfigError::invalid(format!("cannot represent the configuration: {e}"))
        })?;
        merge(&mut table, &overrides);
        Self::from_table(table)
    }
}

/// Merges `over` into `base`: tables key by key, any other value replaced.
fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (key, value) in over {
        match (base.get_mut(key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(over_inner)) => {
                merge(inner, over_inner)
            }
            _ => {
                base.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(
        Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
    )]
    #[serde(default, deny_unknown_fields)]
    struct NoAdapters {}

    #[test]
    fn names_are_checked() {
        for good in ["default", "docs", "team-a_2", "0abc"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in ["", "Docs", "a/b", "-x", "_x", "a b", "é", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    fn json(text: &str) -> serde_json::Map<String, serde_json::Value> {
        let table: toml::Table = text.parse().unwrap();
        serde_json::to_value(table)
            .unwrap()
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn overrides_merge_table_by_table_and_fixed_keys_are_refused() {
        let base = Config::<NoAdapters>::parse("[retrieval]\nbm25_k1 = 1.1\n").unwrap();
        let over = json("[retrieval]\nbm25_b = 0.5\n[crag]\njudge_depth = 7\n");
        let merged = base.with_overrides(&over).unwrap();
        assert_eq!(merged.retrieval.bm25_k1, 1.1, "kept from the base");
        assert_eq!(merged.retrieval.bm25_b, 0.5, "overridden");
        assert_eq!(merged.crag.judge_depth, 7);
        for fixed in ["data_dir = \"x\"", "[server]\nhttp_addr = \"0.0.0.0:1\""] {
            let over = json(fixed);
            let err = base.with_overrides(&over).unwrap_err().to_string();
            assert!(err.contains("cannot be set per collection"), "{err}");
        }
        let bad = json("[retrieval]\nbm25_b = 7.0\n");
        assert!(base.with_overrides(&bad).is_err(), "validated");
        let unknown = json("[retrieval]\nbm25_z = 1\n");
        assert!(
            base.with_overrides(&unknown).is_err(),
            "unknown keys refused"
        );
        let null = serde_json::json!({"retrieval": null});
        assert!(
            base.with_overrides(null.as_object().unwrap()).is_err(),
            "null refused"
        );
    }
}
