//! Finding the JSON in a model's answer: fenced blocks and objects embedded in prose.

use serde_json::Value;

/// Embedded JSON parse attempts before giving up on prose.
const MAX_PARSE_ATTEMPTS: usize = 256;

/// Returns the bodies of the fenced blocks of `text` (an unclosed fence runs to the end).
pub(super) fn fenced_blocks(text: &str) -> Vec<&str> {
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

/// Parses the JSON objects embedded in `text`, left to right, without overlap.
pub(super) fn embedded_objects(text: &str) -> Vec<Value> {
    let mut objects = Vec::new();
    let mut position = 0;
    for _ in 0..MAX_PARSE_ATTEMPTS {
        let Some(offset) = text[position..].find('{') else {
            break;
        };
        let start = position + offset;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                objects.push(value);
                position = start + stream.byte_offset().max(1);
            }
            _ => position = start + 1,
        }
        if position >= text.len() {
            break;
        }
    }
    objects
}

/// Returns at most `max` bytes of `text`, cut on a character boundary.
pub(super) fn byte_prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
