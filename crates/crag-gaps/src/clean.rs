//! Small text helpers shared by the parser and the classifier: list markers, wrapping quotes,
//! whitespace and length caps. All of them are total (no panics) on any input.

/// Bullet characters a list item may start with.
const BULLETS: &[char] = &[
    '-', '*', '•', '+', '·', '▪', '◦', '‣', '–', '—', '○', '●', '►', '→',
];

/// Pairs of wrapping characters removed around a whole item.
const WRAPPERS: &[(char, char)] = &[
    ('`', '`'),
    ('"', '"'),
    ('\'', '\''),
    ('“', '”'),
    ('‘', '’'),
    ('«', '»'),
    ('„', '“'),
];

/// Returns whether `c` is a quote or a backtick.
pub(crate) fn is_quote(c: char) -> bool {
    matches!(
        c,
        '`' | '"' | '\'' | '“' | '”' | '‘' | '’' | '«' | '»' | '„'
    )
}

/// Returns `line` without its leading list marker (bullet, `1.`, `1)`, `(1)`, `[1]`,
/// checkbox), or `None` when it does not start with one.
pub(crate) fn strip_list_marker(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let mut chars = t.chars();
    let first = chars.next()?;
    if BULLETS.contains(&first) {
        let rest = chars.as_str();
        // `**bold**` and `*emphasis*` are not bullets: a bullet is followed by a space.
        if rest.is_empty() || rest.starts_with(char::is_whitespace) || first == '•' {
            return Some(rest.trim_start());
        }
        return None;
    }
    let (open, close) = match first {
        '(' => (1, ')'),
        '[' => (1, ']'),
        _ => (0, '.'),
    };
    let body = &t[open..];
    let digits = body.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 && open == 1 && close == ']' {
        // A checkbox: `[ ]`, `[x]`.
        for checkbox in ["[ ]", "[x]", "[X]"] {
            if let Some(rest) = t.strip_prefix(checkbox) {
                return Some(rest.trim_start());
            }
        }
        return None;
    }
    if digits == 0 || digits > 3 {
        return None;
    }
    let after = &body[digits..];
    let rest = if open == 1 {
        after.strip_prefix(close)?
    } else {
        after
            .strip_prefix('.')
            .or_else(|| after.strip_prefix(')'))
            .or_else(|| after.strip_prefix(':'))?
    };
    if rest.is_empty() || rest.starts_with(char::is_whitespace) {
        Some(rest.trim_start())
    } else {
        None
    }
}

/// Returns whether `line` starts with a list marker.
pub(crate) fn is_list_item(line: &str) -> bool {
    strip_list_marker(line).is_some()
}

/// Removes wrapping quotes, backticks and `**bold**` markers around the whole of `text`, as
/// long as the inner text does not itself contain the wrapping character (so `'a' in 'b'` is
/// kept whole).
pub(crate) fn strip_wrapping(text: &str) -> &str {
    let mut t = text.trim();
    loop {
        let before = t.len();
        if let Some(inner) = t.strip_prefix("**").and_then(|s| s.strip_suffix("**")) {
            if !inner.contains("**") {
                t = inner.trim();
            }
        }
        // A run of backticks on both ends (```x```).
        if t.starts_with('`') && t.ends_with('`') {
            let inner = t.trim_matches('`');
            if !inner.is_empty() && !inner.contains('`') {
                t = inner.trim();
            }
        }
        for &(open, close) in WRAPPERS {
            if let Some(inner) = t.strip_prefix(open).and_then(|s| s.strip_suffix(close)) {
                if !inner.contains(open) && !inner.contains(close) {
                    t = inner.trim();
                    break;
                }
            }
        }
        if t.len() == before {
            return t;
        }
    }
}

/// Collapses every run of whitespace to one space and trims the ends.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Returns the first `max` characters of `text` and whether it was cut.
pub(crate) fn char_prefix(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((end, _)) => (&text[..end], true),
        None => (text, false),
    }
}

/// Returns the longest prefix of `text` of at most `max` bytes that ends on a character
/// boundary.
pub(crate) fn byte_prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Cleans one list item: list markers, wrapping quotes and bold, trailing `.,;:` and
/// whitespace runs, repeated until nothing changes.
pub(crate) fn clean_item(raw: &str) -> String {
    let mut t = raw.trim();
    loop {
        let before = t.len();
        if let Some(rest) = strip_list_marker(t) {
            t = rest;
        }
        t = strip_wrapping(t);
        t = t.trim_end_matches(|c: char| {
            matches!(c, '.' | ',' | ';' | ':' | '…') || c.is_whitespace()
        });
        if t.len() == before {
            break;
        }
    }
    collapse_whitespace(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_markers_are_recognised() {
        for (line, rest) in [
            ("- a", "a"),
            ("* a", "a"),
            ("• a", "a"),
            ("•a", "a"),
            ("+ a", "a"),
            ("1. a", "a"),
            ("12) a", "a"),
            ("(3) a", "a"),
            ("[4] a", "a"),
            ("[ ] a", "a"),
            ("  - a", "a"),
            ("2: a", "a"),
        ] {
            assert_eq!(strip_list_marker(line), Some(rest), "{line}");
        }
        for line in [
            "**bold**",
            "*em*",
            "1.5 seconds",
            "-v flag",
            "a - b",
            "",
            "1234. a",
        ] {
            assert_eq!(strip_list_marker(line), None, "{line}");
        }
    }

    #[test]
    fn wrapping_is_removed_only_around_the_whole_text() {
        assert_eq!(strip_wrapping("`foo`"), "foo");
        assert_eq!(strip_wrapping("\"`foo`\""), "foo");
        assert_eq!(strip_wrapping("**foo**"), "foo");
        assert_eq!(strip_wrapping("“foo”"), "foo");
        assert_eq!(strip_wrapping("'a' in 'b'"), "'a' in 'b'");
        assert_eq!(strip_wrapping("`a` in `b`"), "`a` in `b`");
        assert_eq!(strip_wrapping("\""), "\"");
        assert_eq!(strip_wrapping("__init__"), "__init__");
    }

    #[test]
    fn items_are_cleaned() {
        assert_eq!(
            clean_item("  1. `verify_user` in auth.py. "),
            "`verify_user` in auth.py"
        );
        assert_eq!(clean_item("- **\"foo\"**,"), "foo");
        assert_eq!(clean_item("-   a    b  "), "a b");
        assert_eq!(clean_item("- "), "");
    }

    #[test]
    fn prefixes_stay_on_character_boundaries() {
        assert_eq!(char_prefix("héllo", 2), ("hé", true));
        assert_eq!(char_prefix("hé", 2), ("hé", false));
        assert_eq!(byte_prefix("hé", 2), "h");
    }
}
