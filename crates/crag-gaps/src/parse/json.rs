//! The JSON reply: `{"answer": str, "is_sufficient": bool, "missing": [str],
//! "useful_chunk_ids": [str]}`, wherever it sits in the reply.

use serde_json::{Map, Value};

/// `{` positions tried as the start of an embedded object.
const MAX_CANDIDATES: usize = 64;
/// Objects searched below the top level for the known fields.
const MAX_DEPTH: usize = 2;

const ANSWER_KEYS: &[&str] = &["answer", "finalanswer", "response"];
const MISSING_KEYS: &[&str] = &[
    "missing",
    "gaps",
    "missingcontext",
    "missingitems",
    "missinginformation",
];
const SUFFICIENT_KEYS: &[&str] = &["issufficient", "sufficient", "contextissufficient"];
const CHUNK_KEYS: &[&str] = &[
    "usefulchunkids",
    "usefulchunks",
    "chunkids",
    "usefulids",
    "citations",
];

/// What a JSON reply holds, before the gaps are cleaned and bounded.
#[derive(Debug, Default)]
pub(super) struct JsonReply {
    pub answer: Option<String>,
    pub missing: Vec<String>,
    pub is_sufficient: Option<bool>,
    pub chunk_ids: Vec<String>,
    pub warnings: Vec<String>,
}

/// Finds the reply's JSON object: the whole text, a fenced block, then the first balanced
/// object in the prose that has a known field; repairs trailing commas and a truncated end.
pub(super) fn parse(text: &str) -> Option<JsonReply> {
    let mut candidates: Vec<&str> = vec![text];
    candidates.extend(fenced_blocks(text));
    for candidate in &candidates {
        if let Ok(value) = serde_json::from_str::<Value>(candidate.trim()) {
            if let Some(map) = known_object(&value, 0) {
                return Some(read(map));
            }
        }
    }
    let mut repaired: Option<(Value, &'static str)> = None;
    let mut starts = text
        .char_indices()
        .filter(|&(i, c)| c == '{' && text[i + 1..].trim_start().starts_with(['"', '}']))
        .map(|(i, _)| i);
    for start in starts.by_ref().take(MAX_CANDIDATES) {
        let tail = &text[start..];
        let attempt = match scan(tail) {
            Scan::Balanced(end) => {
                let span = &tail[..end];
                match serde_json::from_str::<Value>(span) {
                    Ok(value) => Some((value, None)),
                    Err(_) => serde_json::from_str::<Value>(&drop_trailing_commas(span))
                        .ok()
                        .map(|v| (v, Some("trailing commas in the JSON reply ignored"))),
                }
            }
            Scan::Open(closers) => {
                let closed = close_truncated(tail, &closers);
                serde_json::from_str::<Value>(&drop_trailing_commas(&closed))
                    .ok()
                    .map(|v| (v, Some("the JSON reply was cut short; it was closed")))
            }
            Scan::Broken => None,
        };
        match attempt {
            Some((value, None)) if known_object(&value, 0).is_some() => {
                return known_object(&value, 0).map(read);
            }
            Some((value, Some(note)))
                if repaired.is_none() && known_object(&value, 0).is_some() =>
            {
                repaired = Some((value, note));
            }
            _ => {}
        }
    }
    let (value, note) = repaired?;
    let mut reply = read(known_object(&value, 0)?);
    reply.warnings.insert(0, note.to_owned());
    Some(reply)
}

/// The object holding a known field: `value` itself or one nested in it.
fn known_object(value: &Value, depth: usize) -> Option<&Map<String, Value>> {
    let map = value.as_object()?;
    let known = map.keys().any(|k| {
        let k = normalise_key(k);
        [ANSWER_KEYS, MISSING_KEYS, SUFFICIENT_KEYS, CHUNK_KEYS]
            .iter()
            .any(|keys| keys.contains(&k.as_str()))
    });
    if known {
        return Some(map);
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    map.values().find_map(|v| known_object(v, depth + 1))
}

fn normalise_key(key: &str) -> String {
    key.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn field<'a>(map: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    map.iter()
        .find(|(k, _)| keys.contains(&normalise_key(k).as_str()))
        .map(|(_, v)| v)
}

fn read(map: &Map<String, Value>) -> JsonReply {
    let mut reply = JsonReply {
        answer: field(map, ANSWER_KEYS).and_then(value_text),
        ..JsonReply::default()
    };
    let missing = field(map, MISSING_KEYS);
    if missing.is_none() {
        reply
            .warnings
            .push("the JSON reply has no \"missing\" field; read as no gaps".to_owned());
    }
    let mut skipped = 0usize;
    match missing {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::String(s)) => reply.missing.extend(s.lines().map(str::to_owned)),
        Some(Value::Array(items)) => {
            for item in items {
                match item_text(item) {
                    Some(text) => reply.missing.push(text),
                    None if item.is_null() => {}
                    None => skipped += 1,
                }
            }
        }
        Some(Value::Object(object)) => match item_text(&Value::Object(object.clone())) {
            Some(text) => reply.missing.push(text),
            None => skipped += 1,
        },
        Some(_) => skipped += 1,
    }
    if skipped > 0 {
        reply.warnings.push(format!(
            "{skipped} \"missing\" entr(y/ies) that are not text ignored"
        ));
    }
    reply.is_sufficient = match field(map, SUFFICIENT_KEYS) {
        Some(Value::Bool(b)) => Some(*b),
        Some(Value::String(s)) => match s.trim().to_lowercase().as_str() {
            "true" | "yes" => Some(true),
            "false" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    };
    match field(map, CHUNK_KEYS) {
        Some(Value::Array(ids)) => reply.chunk_ids.extend(ids.iter().filter_map(scalar_text)),
        Some(other) => reply.chunk_ids.extend(scalar_text(other)),
        None => {}
    }
    reply
}

/// Text of an answer: a string, or any other non-null value as JSON.
fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A missing item: a string, or an object naming a symbol and a file
/// (`{"symbol": "verify_user", "file": "auth.py"}` -> "verify_user in auth.py").
fn item_text(item: &Value) -> Option<String> {
    match item {
        Value::String(s) => Some(s.clone()),
        Value::Object(map) => {
            let name = field(map, &["symbol", "name", "item", "description", "what"])
                .and_then(Value::as_str);
            let path = field(map, &["file", "path", "location", "module"]).and_then(Value::as_str);
            match (name, path) {
                (Some(name), Some(path)) => Some(format!("{name} in {path}")),
                (Some(only), None) | (None, Some(only)) => Some(only.to_owned()),
                (None, None) => None,
            }
        }
        _ => None,
    }
}

/// The bodies of ```` ``` ```` fenced blocks (the language tag dropped); an unclosed fence
/// runs to the end.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_start = match after.find('\n') {
            Some(newline) if !after[..newline].contains(['{', '[']) => newline + 1,
            _ => 0,
        };
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                blocks.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                blocks.push(body);
                break;
            }
        }
    }
    blocks
}

/// How a scan from a `{` ended.
#[derive(Debug, PartialEq)]
enum Scan {
    /// Balanced: the byte length of the object.
    Balanced(usize),
    /// The text ended inside the object: the closers still expected (innermost last), and a
    /// `"` first when it ended inside a string.
    Open(Vec<char>),
    /// A closer that does not match.
    Broken,
}

/// Scans `text` (starting with `{`) for the end of its object, minding strings and escapes.
fn scan(text: &str) -> Scan {
    let mut stack: Vec<char> = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                if stack.pop() != Some(c) {
                    return Scan::Broken;
                }
                if stack.is_empty() {
                    return Scan::Balanced(i + 1);
                }
            }
            _ => {}
        }
    }
    if in_string {
        stack.push('"');
    }
    Scan::Open(stack)
}

/// Closes a truncated object: ends an open string, drops a dangling `,` or `:` tail, then
/// appends the expected closers.
fn close_truncated(text: &str, closers: &[char]) -> String {
    let mut out = text.to_owned();
    let mut closers = closers.to_vec();
    if closers.last() == Some(&'"') {
        if out.ends_with('\\') {
            out.pop();
        }
        out.push('"');
        closers.pop();
    }
    let kept = out.trim_end().trim_end_matches([',', ':']).len();
    out.truncate(kept);
    // A key without a value (`{"answer": "x", "missing"`) cannot be closed; give it one.
    if out.ends_with('"') && closers.last() == Some(&'}') && dangling_key(&out) {
        out.push_str(": null");
    }
    out.extend(closers.iter().rev());
    out
}

/// Whether the last string of `text` sits where an object key goes (after `{` or `,` inside
/// an object).
fn dangling_key(text: &str) -> bool {
    let Some(open) = text[..text.len() - 1].rfind('"') else {
        return false;
    };
    let before = text[..open].trim_end();
    before.ends_with('{') || (before.ends_with(',') && !text[..open].contains('['))
}

/// Removes commas directly before `}` or `]` outside strings.
fn drop_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    let mut pending_comma: Option<usize> = None;
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        match c {
            '}' | ']' => {
                if let Some(at) = pending_comma.take() {
                    out.remove(at);
                }
            }
            ',' => {
                pending_comma = Some(out.len());
            }
            c if c.is_whitespace() => {}
            _ => pending_comma = None,
        }
        if c == '"' {
            in_string = true;
            pending_comma = None;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_balance_strings_and_escapes() {
        assert_eq!(scan(r#"{"a": "}"} tail"#), Scan::Balanced(10));
        assert_eq!(scan(r#"{"a": "\"}"}"#), Scan::Balanced(12));
        assert_eq!(scan(r#"{"a": [1, 2"#), Scan::Open(vec!['}', ']']));
        assert_eq!(scan(r#"{"a": "x"#), Scan::Open(vec!['}', '"']));
        assert_eq!(scan(r#"{"a": ]"#), Scan::Broken);
    }

    #[test]
    fn truncated_objects_are_closed() {
        let closed = |t: &str| match scan(t) {
            Scan::Open(c) => close_truncated(t, &c),
            other => panic!("{other:?}"),
        };
        for text in [
            r#"{"answer": "it works", "missing": ["a", "b"#,
            r#"{"answer": "it works", "missing": ["a", "#,
            r#"{"answer": "it works", "missing""#,
            r#"{"answer": "it wo"#,
            r#"{"answer": "x\"#,
        ] {
            let fixed = closed(text);
            assert!(
                serde_json::from_str::<Value>(&fixed).is_ok(),
                "{text} -> {fixed}"
            );
        }
    }

    #[test]
    fn trailing_commas_are_dropped_outside_strings() {
        assert_eq!(
            drop_trailing_commas(r#"{"a": [1, 2,], "b": ",]",}"#),
            r#"{"a": [1, 2], "b": ",]"}"#
        );
    }
}
