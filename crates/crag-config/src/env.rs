//! `CRAG_` environment overrides.
//!
//! `CRAG_<SECTION>__<KEY>` (double underscore between levels, any case) sets `section.key`,
//! e.g. `CRAG_SERVER__HTTP_ADDR=0.0.0.0:8080` or `CRAG_CRAG__RERANK__ENABLED=false`; such a
//! variable must name a key, or loading fails. The top-level keys are set without `__`:
//! `CRAG_DATA_DIR`, `CRAG_VECTORS_URI`, `CRAG_ASSETS_DIR`, `CRAG_SYNONYMS_FILE`. Other `CRAG_`
//! variables without `__` (`CRAG_CONFIG`, `CRAG_LOG`, secrets named by `*_env` keys) are not
//! configuration keys and are left alone.

use crate::error::{bail, ConfigError, Result};

use crate::{AdapterSections, Config};

/// Prefix of the environment overrides.
pub const ENV_PREFIX: &str = "CRAG_";

const TOP_LEVEL: [&str; 4] = ["data_dir", "vectors_uri", "assets_dir", "synonyms_file"];

/// The overrides among `vars`, as (variable, dotted key path, raw value), in name order.
pub fn env_overrides(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, Vec<String>, String)> {
    let mut found: Vec<_> = vars
        .into_iter()
        .filter_map(|(name, value)| {
            let rest = name.strip_prefix(ENV_PREFIX)?.to_ascii_lowercase();
            let path: Vec<String> = if rest.contains("__") {
                rest.split("__").map(String::from).collect()
            } else if TOP_LEVEL.contains(&rest.as_str()) {
                vec![rest]
            } else {
                return None;
            };
            Some((name, path, value))
        })
        .collect();
    found.sort();
    found
}

/// Applies the overrides among `vars` to the parsed file.
pub(crate) fn apply<A: AdapterSections>(
    table: &mut toml::Table,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<()> {
    let defaults = toml::Table::try_from(Config::<A>::default()).map_err(|e| {
        ConfigError::invalid(format!("cannot render the default configuration: {e}"))
    })?;
    for (name, path, raw) in env_overrides(vars) {
        if path.iter().any(String::is_empty) {
            bail!("{name}: empty key segment (use one `__` between levels)");
        }
        let value = typed(&defaults, &path, &raw).map_err(|why| {
            ConfigError::invalid(format!("{name}: `{raw}` {why} for {}", path.join(".")))
        })?;
        let (last, parents) = path.split_last().expect("paths are non-empty");
        let mut node = &mut *table;
        for (depth, key) in parents.iter().enumerate() {
            let entry = node
                .entry(key.clone())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            node = entry.as_table_mut().ok_or_else(|| {
                ConfigError::invalid(format!(
                    "{name}: {} is a value, not a section",
                    path[..=depth].join(".")
                ))
            })?;
        }
        node.insert(last.clone(), value);
    }
    Ok(())
}

/// The raw string as the type the default configuration has at `path`: strings stay strings,
/// numbers, booleans and arrays are read as TOML literals. Keys without a default (optional
/// sections) take a TOML literal when the text is one, else the string.
fn typed(defaults: &toml::Table, path: &[String], raw: &str) -> Result<toml::Value, String> {
    let mut node = Some(defaults);
    let mut default = None;
    for (i, key) in path.iter().enumerate() {
        let Some(table) = node else { break };
        match table.get(key) {
            Some(toml::Value::Table(t)) if i + 1 < path.len() => node = Some(t),
            Some(v) if i + 1 == path.len() => default = Some(v),
            _ => node = None,
        }
    }
    let literal = || {
        format!("v = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
    };
    match default {
        Some(toml::Value::String(_)) => Ok(toml::Value::String(raw.to_string())),
        Some(toml::Value::Array(_)) => match literal() {
            Some(v @ toml::Value::Array(_)) => Ok(v),
            _ => Ok(toml::Value::Array(
                raw.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| toml::Value::String(s.to_string()))
                    .collect(),
            )),
        },
        Some(d) => match literal() {
            Some(v) if v.type_str() == d.type_str() => Ok(v),
            Some(toml::Value::Integer(i)) if d.is_float() => Ok(toml::Value::Float(i as f64)),
            _ => Err(format!("is not a valid {}", d.type_str())),
        },
        None => Ok(literal().unwrap_or_else(|| toml::Value::String(raw.to_string()))),
    }
}
