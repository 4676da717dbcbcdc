//! The JSON form of [`MetadataFilter`]: reading it, with a message for each mistake, and
//! writing it back.

use std::ops::Bound;

use serde_json::{Map, Value};

use super::{FilterValue, MetadataFilter, ValueKind, MAX_DEPTH, MAX_FILTER_CLAUSES};
use crate::error::{CoreError, Result};

fn invalid(reason: impl Into<String>) -> CoreError {
    CoreError::invalid("filter", reason)
}

/// Checks one metadata key: letters, digits, `_` and `-`, 1 to 64 bytes.
pub(super) fn check_key(key: &str) -> std::result::Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 64
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "key `{key}`: keys are 1 to 64 letters, digits, `_` or `-`"
        ))
    }
}

fn field(path: &str) -> Result<String> {
    for key in path.split('.') {
        check_key(key).map_err(|reason| invalid(format!("field `{path}`: {reason}")))?;
    }
    if path.split('.').count() > MAX_DEPTH {
        return Err(invalid(format!(
            "field `{path}` is deeper than {MAX_DEPTH} keys"
        )));
    }
    Ok(path.to_owned())
}

fn scalar(path: &str, value: &Value) -> Result<FilterValue> {
    FilterValue::of(value).ok_or_else(|| {
        invalid(format!(
            "field `{path}`: compared with {value}, not a string, number or boolean"
        ))
    })
}

fn count(clauses: &mut usize) -> Result<()> {
    *clauses += 1;
    if *clauses > MAX_FILTER_CLAUSES {
        return Err(invalid(format!(
            "more than {MAX_FILTER_CLAUSES} comparisons"
        )));
    }
    Ok(())
}

/// Reads a filter object nested `depth` deep, counting comparisons in `clauses`.
pub(super) fn filter(value: &Value, depth: usize, clauses: &mut usize) -> Result<MetadataFilter> {
    if depth > MAX_DEPTH {
        return Err(invalid(format!("nested deeper than {MAX_DEPTH} levels")));
    }
    let Value::Object(object) = value else {
        return Err(invalid(format!("expected a JSON object, got {value}")));
    };
    let mut all = Vec::with_capacity(object.len());
    for (key, value) in object {
        all.push(match key.as_str() {
            "$and" | "$or" => {
                let Value::Array(items) = value else {
                    return Err(invalid(format!("`{key}` takes an array of filters")));
                };
                let inner = items
                    .iter()
                    .map(|item| filter(item, depth + 1, clauses))
                    .collect::<Result<Vec<_>>>()?;
                if key == "$and" {
                    MetadataFilter::And(inner)
                } else {
                    MetadataFilter::Or(inner)
                }
            }
            "$not" => MetadataFilter::Not(Box::new(filter(value, depth + 1, clauses)?)),
            op if op.starts_with('$') => {
                return Err(invalid(format!(
                    "unknown operator `{op}` (at the top: $and, $or, $not)"
                )))
            }
            path => condition(&field(path)?, value, clauses)?,
        });
    }
    Ok(match all.len() {
        1 => all.remove(0),
        _ => MetadataFilter::And(all),
    })
}

/// Reads the condition on one field: a scalar (equality) or an object of operators.
fn condition(path: &str, value: &Value, clauses: &mut usize) -> Result<MetadataFilter> {
    let operators = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Err(invalid(format!(
                "field `{path}`: an array is not a value; use {{\"$in\": [...]}}"
            )))
        }
        scalar_value => {
            count(clauses)?;
            return Ok(MetadataFilter::Eq(
                path.to_owned(),
                scalar(path, scalar_value)?,
            ));
        }
    };
    if operators.is_empty() {
        return Err(invalid(format!("field `{path}`: no operator given")));
    }
    let mut all = Vec::new();
    let mut bounds = (Bound::Unbounded, Bound::Unbounded);
    for (op, operand) in operators {
        count(clauses)?;
        all.extend(operator(path, op, operand, &mut bounds)?);
    }
    let (lower, upper) = bounds;
    if !(matches!(lower, Bound::Unbounded) && matches!(upper, Bound::Unbounded)) {
        let kind = |b: &Bound<FilterValue>| match b {
            Bound::Included(v) | Bound::Excluded(v) => Some(v.kind()),
            Bound::Unbounded => None,
        };
        if let (Some(l), Some(u)) = (kind(&lower), kind(&upper)) {
            if l != u {
                return Err(invalid(format!(
                    "field `{path}`: a {l} lower bound with a {u} upper bound"
                )));
            }
        }
        all.push(MetadataFilter::Range {
            field: path.to_owned(),
            lower,
            upper,
        });
    }
    Ok(match all.len() {
        1 => all.remove(0),
        _ => MetadataFilter::And(all),
    })
}

/// One operator of a field's condition: the filter it adds, or `None` for a range bound,
/// which it puts in `bounds` (lower, upper).
fn operator(
    path: &str,
    op: &str,
    operand: &Value,
    bounds: &mut (Bound<FilterValue>, Bound<FilterValue>),
) -> Result<Option<MetadataFilter>> {
    let owned = || path.to_owned();
    let not = |filter| MetadataFilter::Not(Box::new(filter));
    Ok(Some(match op {
        "$eq" => MetadataFilter::Eq(owned(), scalar(path, operand)?),
        "$ne" => not(MetadataFilter::Eq(owned(), scalar(path, operand)?)),
        "$in" | "$nin" => {
            let Value::Array(items) = operand else {
                return Err(invalid(format!("field `{path}`: `{op}` takes an array")));
            };
            let values = items
                .iter()
                .map(|v| scalar(path, v))
                .collect::<Result<Vec<_>>>()?;
            let within = MetadataFilter::In(owned(), values);
            if op == "$in" {
                within
            } else {
                not(within)
            }
        }
        "$exists" => {
            let Value::Bool(exists) = operand else {
                return Err(invalid(format!(
                    "field `{path}`: `$exists` takes true or false"
                )));
            };
            let filter = MetadataFilter::Exists(owned());
            if *exists {
                filter
            } else {
                not(filter)
            }
        }
        "$gt" | "$gte" | "$lt" | "$lte" => {
            let value = scalar(path, operand)?;
            if !matches!(value.kind(), ValueKind::Number | ValueKind::Time) {
                return Err(invalid(format!(
                    "field `{path}`: `{op}` takes a number or an RFC 3339 timestamp, got {operand}"
                )));
            }
            let slot = if op.starts_with("$g") {
                &mut bounds.0
            } else {
                &mut bounds.1
            };
            if !matches!(slot, Bound::Unbounded) {
                return Err(invalid(format!("field `{path}`: two bounds on one side")));
            }
            *slot = if op.ends_with('e') {
                Bound::Included(value)
            } else {
                Bound::Excluded(value)
            };
            return Ok(None);
        }
        other => {
            return Err(invalid(format!(
                "field `{path}`: unknown operator `{other}` (known: $eq, $ne, $in, $nin, \
                 $gt, $gte, $lt, $lte, $exists)"
            )))
        }
    }))
}

fn object(key: &str, value: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_owned(), value);
    Value::Object(map)
}

/// Writes the filter's JSON form.
pub(super) fn to_json(filter: &MetadataFilter) -> Value {
    match filter {
        MetadataFilter::Eq(field, value) => object(field, object("$eq", value.to_json())),
        MetadataFilter::In(field, values) => object(
            field,
            object("$in", values.iter().map(FilterValue::to_json).collect()),
        ),
        MetadataFilter::Range {
            field,
            lower,
            upper,
        } => {
            let mut ops = Map::new();
            match lower {
                Bound::Included(v) => ops.insert("$gte".into(), v.to_json()),
                Bound::Excluded(v) => ops.insert("$gt".into(), v.to_json()),
                Bound::Unbounded => None,
            };
            match upper {
                Bound::Included(v) => ops.insert("$lte".into(), v.to_json()),
                Bound::Excluded(v) => ops.insert("$lt".into(), v.to_json()),
                Bound::Unbounded => None,
            };
            object(field, Value::Object(ops))
        }
        MetadataFilter::Exists(field) => object(field, object("$exists", Value::Bool(true))),
        MetadataFilter::Not(inner) => object("$not", to_json(inner)),
        MetadataFilter::And(all) => object("$and", all.iter().map(to_json).collect()),
        MetadataFilter::Or(any) => object("$or", any.iter().map(to_json).collect()),
    }
}
