//! Document metadata and the filter language over it.
//!
//! A document carries a JSON object of metadata (from its corpus, front matter or the ingest
//! request) beside the fields crag derives ([`DERIVED_FIELDS`]); every chunk of the document
//! carries the same object. A [`MetadataFilter`] selects documents by it, in the JSON syntax
//! of MongoDB's query documents (the one Chroma and Pinecone filters take):
//!
//! ```json
//! {"team": "billing", "year": {"$gte": 2020}, "$or": [{"tag": {"$in": ["a", "b"]}},
//!  {"draft": {"$exists": false}}]}
//! ```
//!
//! Fields name a path of keys joined by `.`; a field holding an array matches when any of
//! its elements does. Strings written as RFC 3339 timestamps compare as times (to the
//! second), numbers as numbers whatever their JSON form (`2` equals `2.0`).

use std::fmt;
use std::ops::Bound;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::error::{CoreError, Result};

mod parse;

/// A document's metadata: a JSON object.
pub type Metadata = Map<String, Value>;

/// The fields crag writes itself on every document's metadata: its source (path or URL),
/// kind (`prose`, `code`, `web`), language (code files) and modification time (files, RFC
/// 3339). A document's own metadata may not use these names.
pub const DERIVED_FIELDS: [&str; 4] = ["source", "kind", "language", "modified"];

/// Deepest nesting of metadata objects and arrays, and of filter clauses.
pub const MAX_DEPTH: usize = 8;

/// Most comparisons in one filter.
pub const MAX_FILTER_CLAUSES: usize = 256;

/// A value a filter compares with, as the filter and the indexes read metadata values.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterValue {
    /// A string that is not an RFC 3339 timestamp.
    Text(String),
    /// A number.
    Number(f64),
    /// `true` or `false`.
    Bool(bool),
    /// An RFC 3339 timestamp, in whole seconds since the Unix epoch.
    Time(i64),
}

// Filters compare like JSON values: numbers read from JSON are never NaN.
impl Eq for FilterValue {}
impl Eq for MetadataFilter {}

/// The kinds of [`FilterValue`]: what a field may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueKind {
    /// Strings.
    Text,
    /// Numbers.
    Number,
    /// Booleans.
    Bool,
    /// Timestamps.
    Time,
}

impl fmt::Display for ValueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Text => "string",
            Self::Number => "number",
            Self::Bool => "boolean",
            Self::Time => "timestamp",
        })
    }
}

/// Parses an RFC 3339 timestamp into whole seconds since the Unix epoch.
pub fn parse_time(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339)
        .ok()
        .map(OffsetDateTime::unix_timestamp)
}

/// Formats seconds since the Unix epoch as an RFC 3339 timestamp in UTC.
pub fn format_time(seconds: i64) -> Option<String> {
    OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
}

impl FilterValue {
    /// Reads a JSON scalar; `None` for null, arrays and objects.
    pub fn of(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(match parse_time(s) {
                Some(t) => Self::Time(t),
                None => Self::Text(s.clone()),
            }),
            Value::Number(n) => n.as_f64().map(Self::Number),
            Value::Bool(b) => Some(Self::Bool(*b)),
            Value::Null | Value::Array(_) | Value::Object(_) => None,
        }
    }

    /// The value's kind.
    pub fn kind(&self) -> ValueKind {
        match self {
            Self::Text(_) => ValueKind::Text,
            Self::Number(_) => ValueKind::Number,
            Self::Bool(_) => ValueKind::Bool,
            Self::Time(_) => ValueKind::Time,
        }
    }

    /// Orders two values of one kind (`None` across kinds).
    fn compare(&self, other: &Self) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Self::Text(a), Self::Text(b)) => Some(a.cmp(b)),
            (Self::Number(a), Self::Number(b)) => a.partial_cmp(b),
            (Self::Bool(a), Self::Bool(b)) => Some(a.cmp(b)),
            (Self::Time(a), Self::Time(b)) => Some(a.cmp(b)),
            _ => None,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Text(s) => Value::String(s.clone()),
            Self::Number(n) => Number::from_f64(*n).map_or(Value::Null, Value::Number),
            Self::Bool(b) => Value::Bool(*b),
            Self::Time(t) => format_time(*t).map_or(Value::Null, Value::String),
        }
    }
}

/// A predicate over a document's metadata.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataFilter {
    /// The field holds the value (`{"f": v}`, `{"f": {"$eq": v}}`).
    Eq(String, FilterValue),
    /// The field holds one of the values (`{"f": {"$in": [...]}}`).
    In(String, Vec<FilterValue>),
    /// The field holds a number or timestamp within the bounds (`$gt`, `$gte`, `$lt`, `$lte`).
    Range {
        /// The field.
        field: String,
        /// Lower bound.
        lower: Bound<FilterValue>,
        /// Upper bound.
        upper: Bound<FilterValue>,
    },
    /// The field holds some value, or is an object holding one (`{"f": {"$exists": true}}`).
    Exists(String),
    /// The inner filter does not match (`$not`, `$ne`, `$nin`, `{"$exists": false}`).
    Not(Box<MetadataFilter>),
    /// Every inner filter matches (`$and`, or several keys in one object); none: everything.
    And(Vec<MetadataFilter>),
    /// Some inner filter matches (`$or`); none: nothing.
    Or(Vec<MetadataFilter>),
}

impl MetadataFilter {
    /// Reads a filter from its JSON form, refusing unknown operators, malformed fields and
    /// values with a message naming the problem.
    pub fn from_json(value: &Value) -> Result<Self> {
        parse::filter(value, 0, &mut 0)
    }

    /// The filter's JSON form, which [`MetadataFilter::from_json`] reads back to an equal
    /// filter.
    pub fn to_json(&self) -> Value {
        parse::to_json(self)
    }

    /// Whether `metadata` passes.
    pub fn matches(&self, metadata: &Metadata) -> bool {
        match self {
            Self::Eq(field, value) => values_at(metadata, field).any(|v| &v == value),
            Self::In(field, values) => values_at(metadata, field).any(|v| values.contains(&v)),
            Self::Range {
                field,
                lower,
                upper,
            } => values_at(metadata, field).any(|v| within(&v, lower, upper)),
            Self::Exists(field) => nodes_at(metadata, field).iter().any(|v| holds_leaf(v)),
            Self::Not(inner) => !inner.matches(metadata),
            Self::And(all) => all.iter().all(|f| f.matches(metadata)),
            Self::Or(any) => any.iter().any(|f| f.matches(metadata)),
        }
    }

    /// Calls `visit` with each field the filter reads and the kind of value it compares the
    /// field with (`None` for `$exists`).
    pub fn visit_fields(&self, visit: &mut dyn FnMut(&str, Option<ValueKind>)) {
        match self {
            Self::Eq(field, value) => visit(field, Some(value.kind())),
            Self::In(field, values) => values.iter().for_each(|v| visit(field, Some(v.kind()))),
            Self::Range {
                field,
                lower,
                upper,
            } => {
                let kind = bound_value(lower)
                    .or(bound_value(upper))
                    .map(FilterValue::kind);
                visit(field, kind);
            }
            Self::Exists(field) => visit(field, None),
            Self::Not(inner) => inner.visit_fields(visit),
            Self::And(all) | Self::Or(all) => all.iter().for_each(|f| f.visit_fields(visit)),
        }
    }

    /// Checks each field the filter reads against the fields stored (`kinds` gives the kinds
    /// of values a field holds, `None` when no document has it, none when it only holds
    /// objects): an unknown field, or a comparison with a kind of value the field never
    /// holds, is refused with a message.
    pub fn check(&self, kinds: &dyn Fn(&str) -> Option<Vec<ValueKind>>) -> Result<()> {
        let mut problem = None;
        self.visit_fields(&mut |field, kind| {
            if problem.is_some() {
                return;
            }
            match kinds(field) {
                None => {
                    problem = Some(format!(
                        "unknown metadata field `{field}`: no document has it"
                    ));
                }
                Some(held) => {
                    if let Some(kind) = kind.filter(|k| !held.contains(k)) {
                        let held: Vec<String> = held.iter().map(ToString::to_string).collect();
                        let held = if held.is_empty() {
                            "only objects".to_owned()
                        } else {
                            held.join(" and ")
                        };
                        problem = Some(format!(
                            "metadata field `{field}` holds {held}, compared with a {kind}"
                        ));
                    }
                }
            }
        });
        problem.map_or(Ok(()), |reason| Err(CoreError::invalid("filter", reason)))
    }

    /// ANDs two filters (a token's forced filter with a request's).
    pub fn and(self, other: Self) -> Self {
        match self {
            Self::And(mut all) => {
                all.push(other);
                Self::And(all)
            }
            first => Self::And(vec![first, other]),
        }
    }
}

fn bound_value(bound: &Bound<FilterValue>) -> Option<&FilterValue> {
    match bound {
        Bound::Included(v) | Bound::Excluded(v) => Some(v),
        Bound::Unbounded => None,
    }
}

fn within(value: &FilterValue, lower: &Bound<FilterValue>, upper: &Bound<FilterValue>) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let above = match lower {
        Bound::Unbounded => true,
        Bound::Included(l) => matches!(value.compare(l), Some(Greater | Equal)),
        Bound::Excluded(l) => matches!(value.compare(l), Some(Greater)),
    };
    let below = match upper {
        Bound::Unbounded => bound_value(lower).is_some_and(|l| l.kind() == value.kind()),
        Bound::Included(u) => matches!(value.compare(u), Some(Less | Equal)),
        Bound::Excluded(u) => matches!(value.compare(u), Some(Less)),
    };
    above && below
}

/// The values at `path` (keys joined by `.`), arrays flattened at every level but the last.
fn nodes_at<'a>(metadata: &'a Metadata, path: &str) -> Vec<&'a Value> {
    let mut current: Vec<&Value> = Vec::new();
    let mut keys = path.split('.');
    if let Some(first) = keys.next() {
        current.extend(metadata.get(first));
    }
    for key in keys {
        current = current
            .into_iter()
            .flat_map(flatten)
            .filter_map(|v| v.as_object().and_then(|o| o.get(key)))
            .collect();
    }
    current
}

/// Whether `value` is, or holds at some depth, a value that is not null (what `$exists`
/// asks of a field: an object field exists when something under it does).
fn holds_leaf(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Array(items) => items.iter().any(holds_leaf),
        Value::Object(o) => o.values().any(holds_leaf),
        _ => true,
    }
}

/// The scalar values at `path` (keys joined by `.`), arrays flattened at every level.
fn values_at<'a>(metadata: &'a Metadata, path: &str) -> impl Iterator<Item = FilterValue> + 'a {
    nodes_at(metadata, path)
        .into_iter()
        .flat_map(flatten)
        .filter_map(FilterValue::of)
}

fn flatten(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().flat_map(flatten).collect(),
        other => vec![other],
    }
}

/// Checks a document's own metadata: keys of letters, digits, `_` and `-` (no `.`, which
/// filters read as a path), none of [`DERIVED_FIELDS`] at the top, nesting at most
/// [`MAX_DEPTH`], and at most `max_bytes` of JSON.
pub fn check_metadata(metadata: &Metadata, max_bytes: usize) -> Result<()> {
    if let Some(key) = metadata
        .keys()
        .find(|k| DERIVED_FIELDS.contains(&k.as_str()))
    {
        return Err(CoreError::invalid(
            "metadata",
            format!("`{key}` is a field crag derives and cannot be set"),
        ));
    }
    check_object(metadata, 0)?;
    let size = serde_json::to_vec(metadata).map_or(usize::MAX, |b| b.len());
    if size > max_bytes {
        return Err(CoreError::invalid(
            "metadata",
            format!("{size} bytes of JSON, more than the {max_bytes} allowed"),
        ));
    }
    Ok(())
}

fn check_object(object: &Metadata, depth: usize) -> Result<()> {
    for (key, value) in object {
        parse::check_key(key).map_err(|reason| CoreError::invalid("metadata", reason))?;
        check_value(value, depth + 1)?;
    }
    Ok(())
}

fn check_value(value: &Value, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(CoreError::invalid(
            "metadata",
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    match value {
        Value::Object(o) => check_object(o, depth),
        Value::Array(items) => items.iter().try_for_each(|v| check_value(v, depth + 1)),
        _ => Ok(()),
    }
}

/// The document's own metadata (derived fields left out) as JSON with every object's keys
/// sorted: the same text whatever order the keys came in. Empty when there is none.
pub(crate) fn canonical_own(metadata: &Metadata) -> String {
    fn canonical(value: &Value) -> Value {
        match value {
            Value::Object(o) => {
                let mut keys: Vec<&String> = o.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), canonical(&o[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    let own: Metadata = metadata
        .iter()
        .filter(|(k, _)| !DERIVED_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if own.is_empty() {
        return String::new();
    }
    canonical(&Value::Object(own)).to_string()
}

impl Serialize for MetadataFilter {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MetadataFilter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
