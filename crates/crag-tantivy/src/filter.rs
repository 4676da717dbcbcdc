//! Document metadata in a Tantivy index: the JSON field that holds it, and a
//! [`MetadataFilter`] as query clauses over that field.
//!
//! Strings are indexed whole (the `raw` tokenizer), RFC 3339 timestamps as dates (to the
//! second), numbers as numbers; every path is also a fast field, which range and `$exists`
//! clauses read. An equality on a number is a range of one value, so that `2` finds `2.0`
//! whatever column type Tantivy chose for the path.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use crag_core::{parse_time, FilterValue, Metadata, MetadataFilter, ValueKind};
use serde_json::Value;
use tantivy::query::{
    AllQuery, BooleanQuery, ConstScoreQuery, EmptyQuery, ExistsQuery, Occur, Query, RangeQuery,
    TermQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, JsonObjectOptions, OwnedValue, TextFieldIndexing, Type,
};
use tantivy::{DateTime, Searcher, Term};

/// The name of the metadata field, in both the chunk and the document index.
pub(crate) const FIELD: &str = "metadata";

/// The options of the metadata field: indexed whole, fast, not stored (the chunk index
/// stores the metadata's JSON text beside it, as given).
pub(crate) fn options() -> JsonObjectOptions {
    JsonObjectOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("raw")
                .set_index_option(IndexRecordOption::Basic),
        )
        .set_fast("raw")
}

/// The metadata as the field indexes it: timestamps as dates, the rest as in JSON.
pub(crate) fn indexed(metadata: &Metadata) -> BTreeMap<String, OwnedValue> {
    fn value(v: &Value) -> OwnedValue {
        match v {
            Value::String(s) => match parse_time(s) {
                Some(t) => OwnedValue::Date(DateTime::from_timestamp_secs(t)),
                None => OwnedValue::Str(s.clone()),
            },
            Value::Array(items) => OwnedValue::Array(items.iter().map(value).collect()),
            Value::Object(o) => {
                OwnedValue::Object(o.iter().map(|(k, v)| (k.clone(), value(v))).collect())
            }
            other => OwnedValue::from(other.clone()),
        }
    }
    metadata
        .iter()
        .map(|(k, v)| (k.clone(), value(v)))
        .collect()
}

/// The filter as a query over the metadata field `field`, matching with score 0.
pub(crate) fn query(field: Field, filter: &MetadataFilter) -> Box<dyn Query> {
    Box::new(ConstScoreQuery::new(clause(field, filter), 0.0))
}

/// `scoring` restricted to the documents `filter` passes, scored as `scoring` alone.
pub(crate) fn restrict(
    scoring: Box<dyn Query>,
    field: Field,
    filter: Option<&MetadataFilter>,
) -> Box<dyn Query> {
    match filter {
        None => scoring,
        Some(filter) => within(scoring, clause(field, filter)),
    }
}

/// `scoring` among the documents `allowed` matches, scored as `scoring` alone.
pub(crate) fn within(scoring: Box<dyn Query>, allowed: Box<dyn Query>) -> Box<dyn Query> {
    Box::new(BooleanQuery::new(vec![
        (Occur::Must, scoring),
        (Occur::Must, Box::new(ConstScoreQuery::new(allowed, 0.0))),
    ]))
}

fn json_term(field: Field, path: &str) -> Term {
    Term::from_field_json_path(field, path, false)
}

/// The term of `value` at `path`; a number as an `f64` when `fractional`, else as Tantivy
/// normalises a whole number (an `i64`). The bounds of one range must share a type:
/// Tantivy reads both as the type of the first.
fn value_term(field: Field, path: &str, value: &FilterValue, fractional: bool) -> Term {
    let mut term = json_term(field, path);
    match value {
        FilterValue::Text(s) => term.append_type_and_str(s),
        FilterValue::Number(n) if fractional => term.append_type_and_fast_value(*n),
        FilterValue::Number(n) => append_number(&mut term, *n),
        FilterValue::Bool(b) => term.append_type_and_fast_value(*b),
        FilterValue::Time(t) => term.append_type_and_fast_value(DateTime::from_timestamp_secs(*t)),
    }
    term
}

/// A number as Tantivy normalises JSON numbers: a whole number as an `i64`.
fn append_number(term: &mut Term, n: f64) {
    if is_fractional(n) {
        term.append_type_and_fast_value(n);
    } else {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "a whole number an i64 holds"
        )]
        term.append_type_and_fast_value(n as i64);
    }
}

/// Whether `n` is not a whole number that an `i64` holds.
fn is_fractional(n: f64) -> bool {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the cast is checked to give back the same number"
    )]
    let whole = n as i64;
    #[expect(clippy::cast_precision_loss, reason = "compared with the original")]
    let back = whole as f64;
    back != n
}

fn equals(field: Field, path: &str, value: &FilterValue) -> Box<dyn Query> {
    let term = value_term(field, path, value, false);
    match value {
        // Through the fast field: the column may hold the number as another type.
        FilterValue::Number(_) => Box::new(RangeQuery::new(
            Bound::Included(term.clone()),
            Bound::Included(term),
        )),
        _ => Box::new(TermQuery::new(term, IndexRecordOption::Basic)),
    }
}

fn bound(field: Field, path: &str, bound: &Bound<FilterValue>, fractional: bool) -> Bound<Term> {
    match bound {
        Bound::Included(v) => Bound::Included(value_term(field, path, v, fractional)),
        Bound::Excluded(v) => Bound::Excluded(value_term(field, path, v, fractional)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn range(
    field: Field,
    path: &str,
    lower: &Bound<FilterValue>,
    upper: &Bound<FilterValue>,
) -> Box<dyn Query> {
    let fractional = [lower, upper].into_iter().any(|b| {
        matches!(b, Bound::Included(FilterValue::Number(n)) | Bound::Excluded(FilterValue::Number(n)) if is_fractional(*n))
    });
    Box::new(RangeQuery::new(
        bound(field, path, lower, fractional),
        bound(field, path, upper, fractional),
    ))
}

fn clause(field: Field, filter: &MetadataFilter) -> Box<dyn Query> {
    match filter {
        MetadataFilter::Eq(path, value) => equals(field, path, value),
        MetadataFilter::In(path, values) => any(values.iter().map(|v| equals(field, path, v))),
        MetadataFilter::Range {
            field: path,
            lower,
            upper,
        } => range(field, path, lower, upper),
        MetadataFilter::Exists(path) => Box::new(ExistsQuery::new(format!("{FIELD}.{path}"), true)),
        MetadataFilter::Not(inner) => Box::new(BooleanQuery::new(vec![
            (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
            (Occur::MustNot, clause(field, inner)),
        ])),
        MetadataFilter::And(all) if all.is_empty() => Box::new(AllQuery),
        MetadataFilter::And(all) => Box::new(BooleanQuery::new(
            all.iter()
                .map(|f| (Occur::Must, clause(field, f)))
                .collect(),
        )),
        MetadataFilter::Or(any_of) => any(any_of.iter().map(|f| clause(field, f))),
    }
}

fn any(clauses: impl Iterator<Item = Box<dyn Query>>) -> Box<dyn Query> {
    let clauses: Vec<(Occur, Box<dyn Query>)> = clauses.map(|q| (Occur::Should, q)).collect();
    if clauses.is_empty() {
        Box::new(EmptyQuery)
    } else {
        Box::new(BooleanQuery::new(clauses))
    }
}

/// The metadata fields the searcher's segments hold, each with the kinds of its values, and
/// the paths of the objects above them (with no kind of their own).
pub(crate) fn fields(searcher: &Searcher) -> tantivy::Result<BTreeMap<String, Vec<ValueKind>>> {
    let prefix = format!("{FIELD}.");
    let mut kinds: BTreeMap<String, BTreeSet<ValueKind>> = BTreeMap::new();
    for segment in searcher.segment_readers() {
        for field in segment.fields_metadata()? {
            let Some(path) = field.field_name.strip_prefix(&prefix) else {
                continue;
            };
            let kind = match field.typ {
                Type::Str => ValueKind::Text,
                Type::U64 | Type::I64 | Type::F64 => ValueKind::Number,
                Type::Bool => ValueKind::Bool,
                Type::Date => ValueKind::Time,
                _ => continue,
            };
            kinds.entry(path.to_owned()).or_default().insert(kind);
            let mut above = path;
            while let Some((parent, _)) = above.rsplit_once('.') {
                kinds.entry(parent.to_owned()).or_default();
                above = parent;
            }
        }
    }
    Ok(kinds
        .into_iter()
        .map(|(path, kinds)| (path, kinds.into_iter().collect()))
        .collect())
}
