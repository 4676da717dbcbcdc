//! Metadata helpers shared by the ports' default methods.

use std::collections::BTreeMap;

use crag_core::{FilterValue, Metadata, ValueKind};
use serde_json::Value;

/// The first depth the default searches read, as a multiple of `k`.
pub(crate) const FIRST_DEPTH: usize = 4;

/// Adds the fields `metadata` holds to `fields`: each path to a value that is not null (an
/// array's elements read as values of its path), with the kinds of its values, and the paths
/// of the objects above such a value, with the kinds of values they hold themselves (none
/// when they only hold objects). Empty objects and arrays hold no field. Kinds are sorted.
pub fn metadata_fields_of(metadata: &Metadata, fields: &mut BTreeMap<String, Vec<ValueKind>>) {
    fn walk(path: &str, value: &Value, fields: &mut BTreeMap<String, Vec<ValueKind>>) {
        match value {
            Value::Object(object) => {
                for (key, value) in object {
                    walk(&format!("{path}.{key}"), value, fields);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(path, v, fields)),
            scalar => {
                let Some(kind) = FilterValue::of(scalar).map(|v| v.kind()) else {
                    return;
                };
                let kinds = fields.entry(path.to_owned()).or_default();
                if let Err(at) = kinds.binary_search(&kind) {
                    kinds.insert(at, kind);
                }
                let mut prefix = path;
                while let Some((parent, _)) = prefix.rsplit_once('.') {
                    fields.entry(parent.to_owned()).or_default();
                    prefix = parent;
                }
            }
        }
    }
    for (key, value) in metadata {
        walk(key, value, fields);
    }
}
